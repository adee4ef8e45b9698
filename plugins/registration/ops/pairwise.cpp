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
  return s;
}

Pairwise::Pairwise(const Params& params) : options_(OperatorOptions::from(params)) {}

void Pairwise::cpu(MapContext& ctx) const {
  const Item& tmpl = ctx.input("template");
  const Item* ref = &ctx.input("reference");
  if (ref->meta.key == tmpl.meta.key) {
    // The first frame paired with itself: the scan's identity element.
    Item out = step_item({tmpl.meta.key, tmpl.meta.key, Rigid::identity(), 1.0});
    out.meta.attrs = tmpl.meta.attrs;
    out.meta.timestamp = tmpl.meta.timestamp;
    ctx.emit("deformation", std::move(out));
    return;
  }
  const Image ri = frame_image(*ref), ti = frame_image(tmpl);
  check_same_size(ref->meta, ri, tmpl.meta, ti);
  const Pyramid pr(ri.view(), options_.pyramid), pt(ti.view(), options_.pyramid);
  const Result r = register_pair(pr, pt, Rigid::identity(), options_.options);
  Item out = step_item({ref->meta.key, tmpl.meta.key, r.phi, r.ncc});
  out.meta.attrs = tmpl.meta.attrs;
  out.meta.timestamp = tmpl.meta.timestamp;
  ctx.emit("deformation", std::move(out));
}

}  // namespace flowd::registration
