#include "pairwise.hpp"

#include "operand.hpp"

namespace flowd::registration {

OperatorSpec Pairwise::spec() {
  OperatorSpec s;
  s.name = "registration.pairwise";
  s.doc =
      "Registers a frame (template) to the frame before it (reference): the rigid motion between them, from the "
      "identity, by NCC on a dyadic pyramid";
  PortSpec reference{"reference", "array<u8|u16|f32,2>", "frame i; absent for the first frame of the series"};
  reference.optional = true;
  // In the order of a consecutive pair (x_i, x_i+1): the reference first.
  s.inputs = {reference, {"template", "array<u8|u16|f32,2>", "frame i+1"}};
  s.outputs = {{"deformation", "json",
                "{from, to, tx, ty, angle, ncc}: the motion from frame i to frame i+1 (identity for the first frame), "
                "keyed by frame i+1"}};
  s.params = registration_params();
  return s;
}

Pairwise::Pairwise(const Params& params) : options_(OperatorOptions::from(params)) {}

void Pairwise::cpu(MapContext& ctx) const {
  const Item& tmpl = ctx.input("template");
  const Item* ref = ctx.has_input("reference") ? &ctx.input("reference") : nullptr;
  if (!ref) {
    // The first frame: the scan's identity element for it.
    ctx.emit("deformation", step_item({tmpl.meta.key, tmpl.meta.key, Rigid::identity(), 1.0}));
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
