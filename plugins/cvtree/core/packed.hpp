#pragma once
// A composition vector to and from its bytes (layout.hpp): what a flowd
// item carries (ops/vectors.hpp) and a GPU reads in place.
#include <cstddef>
#include <span>
#include <string>

#include "layout.hpp"
#include "vector.hpp"

namespace flowd::cvtree {

std::size_t packed_size(const CompositionVector& v) noexcept;

// Writes `v` into out (packed_size(v) bytes, 8-byte aligned), padding zeroed.
void pack(const CompositionVector& v, std::span<std::byte> out);

// The vector in `bytes` (8-byte aligned), whose header must say k, middles
// and seen. `check_all` also checks that the middles ascend and each
// middle's range of seen k-mers is in order (linear in the middles), else
// only the header and the ends of the ranges. Throws std::invalid_argument
// saying what does not fit.
VectorView unpack(std::span<const std::byte> bytes, int k, std::size_t middles, std::size_t seen,
                  bool check_all = false);

}  // namespace flowd::cvtree
