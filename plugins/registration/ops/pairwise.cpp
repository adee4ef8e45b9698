#include "pairwise.hpp"

#include "operand.hpp"

namespace flowd::registration {

OperatorSpec Pairwise::spec() {
  OperatorSpec s;
  s.name = "registration.pairwise";
  s.doc =
      "Registers a frame (template) to the frame before it (reference): the rigid motion between them, from the "
      "identity, by NCC on a dyadic pyramid";
  // In the order of a consecutive pair (x_i, x_i+1), "pairs":
  // "consecutive-with-first" in a workflow; the pair (x_0, x_0) gives frame
  // 0 its identity motion, the scan's first element.
  s.inputs = {{"reference", "array<u8|u16|f32,2>", "frame i (the template itself for the series' first frame)"},
              {"template", "array<u8|u16|f32,2>", "frame i+1"}};
  s.outputs = {{"deformation", "json",
                "{from, to, tx, ty, angle, ncc}: the motion from frame i to frame i+1 (identity for the first frame), "
                "keyed by frame i+1"}};
  s.params = registration_params();
  // The GPU variant against one CPU core inside the engine, 512² frames:
  // 44x and 52x on a lent H200 (flowd calibrate and a CPU+GPU run,
  // 2026-11-27, docs/benchmarks.md §12.3); seeds the performance model.
  s.speedup_hint = 40;
  return s;
}

Pairwise::Pairwise(const Params& params) : options_(OperatorOptions::from(params)) {}

void emit_pair_step(EmitContext& ctx, const std::function<Result(const Item& ref, const Item& tmpl)>& registration) {
  const Item& tmpl = ctx.input("template");
  const Item& ref = ctx.input("reference");
  // The first frame paired with itself: the scan's identity element.
  const KeyedStep step = ref.meta.key == tmpl.meta.key
                             ? KeyedStep{tmpl.meta.key, tmpl.meta.key, Rigid::identity(), 1.0, 1.0}
                             : [&] {
                                 const Result r = registration(ref, tmpl);
                                 return KeyedStep{ref.meta.key, tmpl.meta.key, r.phi, r.ncc, r.overlap};
                               }();
  Item out = step_item(step);
  out.meta.attrs = tmpl.meta.attrs;
  out.meta.timestamp = tmpl.meta.timestamp;
  ctx.emit("deformation", std::move(out));
}

void Pairwise::cpu(MapContext& ctx) const {
  emit_pair_step(ctx, [&](const Item& ref, const Item& tmpl) {
    const Image ri = frame_image(ref), ti = frame_image(tmpl);
    check_same_size(ref.meta, ri, tmpl.meta, ti);
    const Pyramid pr(ri.view(), options_.pyramid), pt(ti.view(), options_.pyramid);
    return register_pair(pr, pt, Rigid::identity(), options_.options);
  });
}

}  // namespace flowd::registration
