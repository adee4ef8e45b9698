#include "compose.hpp"

#include "operand.hpp"

namespace flowd::registration {

OperatorSpec Compose::spec() {
  OperatorSpec s;
  s.name = "registration.compose";
  s.doc =
      "The prefix scan's combine: (i, j, phi_ij) and (j, k, phi_jk) give (i, k, A(f_i, f_k, phi_jk o phi_ij)), "
      "frames read by key from input 'frames'";
  s.inputs = {{"deformation", "json", "the series: the motion from each frame's predecessor (registration.pairwise)"},
              {"frames", "array<u8|u16|f32,2>", "the frames, read by key by the combines"}};
  s.outputs = {{"deformation", "json", "{from, to, tx, ty, angle, ncc}: the motion from the first frame, keyed by frame"}};
  s.params = registration_params();
  // The GPU variant against one CPU core inside the engine, 512² frames:
  // 44x and 52x on a lent H200 (flowd calibrate and a CPU+GPU run,
  // 2026-11-27, docs/benchmarks.md §12.3); seeds the performance model.
  s.speedup_hint = 40;
  return s;
}

Compose::Compose(const Params& params) : options_(OperatorOptions::from(params)) {}

Item Compose::combine(ScanContext& ctx, const Item& left, const Item& right) const {
  return compose_items(
      left, right, [&](const std::string& key) -> const Item& { return ctx.item("frames", key); }, options_);
}

std::optional<Item> Compose::shortcut(ScanContext&, const Item& left, const Item& right) const {
  if (step_of(left).is_identity()) return right;
  if (step_of(right).is_identity()) return left;
  return std::nullopt;
}

}  // namespace flowd::registration
