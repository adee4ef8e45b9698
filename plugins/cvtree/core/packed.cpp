#include "packed.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace flowd::cvtree {

std::size_t packed_size(const CompositionVector& v) noexcept {
  return layout::offsets(v.middles.size(), v.ends.size()).end;
}

void pack(const CompositionVector& v, std::span<std::byte> out) {
  const layout::Offsets o = layout::offsets(v.middles.size(), v.ends.size());
  if (out.size() != o.end)
    throw std::invalid_argument("pack: " + std::to_string(out.size()) + " bytes for a vector of " +
                                std::to_string(o.end));
  std::byte* at = out.data();
  const layout::Header h{static_cast<std::uint64_t>(v.k), v.middles.size(), v.ends.size(), v.unseen};
  std::memset(at, 0, o.end);  // the padding too: the bytes travel and are hashed
  std::memcpy(at, &h, sizeof h);
  std::memcpy(at + o.middles, v.middles.data(), v.middles.size() * sizeof(std::uint64_t));
  std::memcpy(at + o.masks, v.masks.data(), v.masks.size() * sizeof(std::uint64_t));
  std::memcpy(at + o.starts, v.starts.data(), v.starts.size() * sizeof(std::uint32_t));
  std::memcpy(at + o.ends, v.ends.data(), v.ends.size() * sizeof(std::uint16_t));
  std::memcpy(at + o.values, v.values.data(), v.values.size() * sizeof(double));
}

VectorView unpack(std::span<const std::byte> bytes, int k, std::size_t middles, std::size_t seen, bool check_all) {
  const layout::Offsets o = layout::offsets(middles, seen);
  if (bytes.size() != o.end || reinterpret_cast<std::uintptr_t>(bytes.data()) % 8 != 0)
    throw std::invalid_argument("its " + std::to_string(bytes.size()) + " bytes do not hold " +
                                std::to_string(middles) + " middles and " + std::to_string(seen) + " seen k-mers");
  layout::Header h{};
  std::memcpy(&h, bytes.data(), sizeof h);
  if (h.k != static_cast<std::uint64_t>(k) || h.middles != middles || h.seen != seen)
    throw std::invalid_argument("its header says k = " + std::to_string(h.k) + ", " + std::to_string(h.middles) +
                                " middles, " + std::to_string(h.seen) + " seen k-mers");
  // The bytes were written by pack (a memcpy into storage allocated as
  // bytes), so the arrays are there to be read in place.
  const std::byte* at = bytes.data();
  VectorView v;
  v.middles = {reinterpret_cast<const std::uint64_t*>(at + o.middles), middles};
  v.masks = {reinterpret_cast<const std::uint64_t*>(at + o.masks), middles};
  v.starts = {reinterpret_cast<const std::uint32_t*>(at + o.starts), middles + 1};
  v.ends = {reinterpret_cast<const std::uint16_t*>(at + o.ends), seen};
  v.values = {reinterpret_cast<const double*>(at + o.values), seen};
  v.unseen = h.unseen;
  if (v.starts.front() != 0 || v.starts.back() != seen)
    throw std::invalid_argument("its seen k-mers do not fill their ranges");
  if (check_all)
    for (std::size_t i = 0; i < middles; ++i) {
      if (v.starts[i] > v.starts[i + 1] || (i > 0 && v.middles[i - 1] >= v.middles[i]))
        throw std::invalid_argument("it is not sorted by middle (at middle " + std::to_string(i) + ")");
      for (std::size_t s = v.starts[i] + 1; s < v.starts[i + 1]; ++s)
        if (v.ends[s - 1] >= v.ends[s])
          throw std::invalid_argument("its seen k-mers are not in order (middle " + std::to_string(i) + ")");
    }
  return v;
}

}  // namespace flowd::cvtree
