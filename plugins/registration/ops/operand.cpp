#include "operand.hpp"

#include <cmath>

namespace flowd::registration {

Item step_item(const KeyedStep& step) {
  Item item;
  item.meta.key = step.to;
  item.value = Json{{"from", step.from},           {"to", step.to},  {"tx", step.phi.tx}, {"ty", step.phi.ty},
                    {"angle", step.phi.degrees()}, {"ncc", step.ncc}, {"overlap", step.overlap}};
  return item;
}

KeyedStep step_of(const Item& item) {
  const auto* j = std::get_if<Json>(&item.value);
  auto bad = [&](const std::string& why) -> Error {
    return Error("item '" + item.meta.key + "' is not a registration operand: " + why);
  };
  if (!j || !j->is_object()) throw bad("expected a JSON object {from, to, tx, ty, angle}");
  KeyedStep s;
  for (const char* k : {"from", "to"}) {
    const auto it = j->find(k);
    if (it == j->end() || !it->is_string()) throw bad(std::string("'") + k + "' is missing or not a string");
  }
  s.from = (*j)["from"].get<std::string>();
  s.to = (*j)["to"].get<std::string>();
  double v[3];
  const char* names[3] = {"tx", "ty", "angle"};
  for (int i = 0; i < 3; ++i) {
    const auto it = j->find(names[i]);
    if (it == j->end() || !it->is_number() || !std::isfinite(it->get<double>()))
      throw bad(std::string("'") + names[i] + "' is missing or not a finite number");
    v[i] = it->get<double>();
  }
  s.phi = Rigid::from_degrees(v[2], v[0], v[1]);
  if (const auto it = j->find("ncc"); it != j->end() && it->is_number()) s.ncc = it->get<double>();
  if (const auto it = j->find("overlap"); it != j->end() && it->is_number()) s.overlap = it->get<double>();
  return s;
}

Item compose_steps(const Item& left, const Item& right, const RegisterKeys& registration) {
  const KeyedStep a = step_of(left), b = step_of(right);
  if (a.is_identity()) return right;
  if (b.is_identity()) return left;
  if (a.to != b.from)
    throw Error("cannot compose the motion from '" + a.from + "' to '" + a.to + "' with the one from '" + b.from +
                "' to '" + b.to + "': the inner frames differ");
  Result r = registration(a.from, b.to, then(a.phi, b.phi));
  // A right operand that did not match its own frames (a blank or noise
  // frame between them) predicts nothing: its motion is not added to the
  // chain's guess, so the frames after a bad one are registered from the
  // last good motion (issue 38). The better of the two matches is kept.
  if (b.ncc < weak_match && r.ncc < weak_match) {
    // From the left operand's motion where that one matched, else from no
    // motion at all (the left one came through a bad frame too).
    const Result again = registration(a.from, b.to, a.ncc >= weak_match ? a.phi : Rigid::identity());
    if (again.ncc > r.ncc) r = again;
  }
  return step_item({a.from, b.to, r.phi, r.ncc, r.overlap});
}

Item compose_items(const Item& left, const Item& right, const FrameByKey& frame, const OperatorOptions& options) {
  return compose_steps(left, right, [&](const std::string& from, const std::string& to, const Rigid& initial) {
    const Item& fi = frame(from);
    const Item& fk = frame(to);
    const Image ii = frame_image(fi), ik = frame_image(fk);
    check_same_size(fi.meta, ii, fk.meta, ik);
    const Pyramid pi(ii.view(), options.pyramid), pk(ik.view(), options.pyramid);
    return register_pair(pi, pk, initial, options.options);
  });
}

}  // namespace flowd::registration
