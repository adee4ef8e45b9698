#pragma once
// The scan's operands as items, and its combine (registration.compose) as a
// function of items: what the engine's scan pattern calls.
//
// An operand is the JSON value {"from": KEY_I, "to": KEY_K, "tx", "ty",
// "angle" (degrees), "ncc", "overlap"}: phi_{i,k} of docs/plugins/registration.md,
// keyed by KEY_K. from == to is the identity element.
#include <functional>
#include <string>

#include "flowd/flowd.hpp"
#include "frames.hpp"
#include "rigid.hpp"

namespace flowd::registration {

struct KeyedStep {
  std::string from;
  std::string to;
  Rigid phi{};
  double ncc = 1.0;      // of the registration behind phi, at its finest level
  double overlap = 1.0;  // the share of the reference the NCC covered there

  bool is_identity() const noexcept { return from == to; }
};

// Below this NCC a registration has not found its frame (a blank frame gets
// 0, detector noise a few hundredths; matching frames of the shipped
// generator 0.5 and more, docs/plugins/registration.md): compose does not
// extend the chain's guess by such a step, and registration.write's default
// min_ncc marks such frames unreliable.
inline constexpr double weak_match = 0.1;

Item step_item(const KeyedStep& step);
// Throws flowd::Error naming the item's key for a value that is not an
// operand.
KeyedStep step_of(const Item& item);

// The frame behind a key; throws flowd::Error when there is none.
using FrameByKey = std::function<const Item&(const std::string& key)>;

// A(f_from, f_to, initial): the registration behind a compose, on the CPU or
// the GPU; throws flowd::Error when the frames differ in size.
using RegisterKeys = std::function<Result(const std::string& from, const std::string& to, const Rigid& initial)>;

// compose((i,j,phi_ij), (j,k,phi_jk)) = (i, k, A(f_i, f_k, phi_jk o phi_ij));
// an identity operand returns the other one without registering. Throws
// flowd::Error when the inner keys differ.
Item compose_steps(const Item& left, const Item& right, const RegisterKeys& registration);

// compose_steps with A on the CPU, frames read by key.
Item compose_items(const Item& left, const Item& right, const FrameByKey& frame, const OperatorOptions& options);

}  // namespace flowd::registration
