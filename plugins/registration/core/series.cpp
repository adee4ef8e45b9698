#include "series.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace flowd::registration {

Step pairwise(const FrameLookup& frames, std::int64_t i, std::int64_t k, const Options& options) {
  if (i == k) return {i, k, Rigid::identity()};
  return {i, k, register_pair(frames(i), frames(k), Rigid::identity(), options).phi};
}

Step compose(const FrameLookup& frames, const Step& left, const Step& right, const Options& options) {
  if (left.is_identity()) return right;
  if (right.is_identity()) return left;
  if (left.to != right.from)
    throw std::invalid_argument("cannot compose phi_" + std::to_string(left.from) + "," + std::to_string(left.to) +
                                " with phi_" + std::to_string(right.from) + "," + std::to_string(right.to) +
                                ": the inner frames differ");
  const Rigid guess = then(left.phi, right.phi);
  if (left.from == right.to) return {left.from, right.to, Rigid::identity()};
  return {left.from, right.to, register_pair(frames(left.from), frames(right.to), guess, options).phi};
}

Step refine(const FrameLookup& frames, const Step& step, const Options& options) {
  if (step.is_identity()) return step;
  return {step.from, step.to, register_pair(frames(step.from), frames(step.to), step.phi, options).phi};
}

std::vector<Rigid> register_series(const FrameLookup& frames, std::int64_t count, const SeriesOptions& options) {
  std::vector<Rigid> out;
  if (count <= 0) return out;
  // The map (pairwise), the scan (compose), the map (refine), each done in
  // order here; flowd's workflow runs the same three stages in parallel.
  std::vector<Step> pairs;
  for (std::int64_t k = 1; k < count; ++k)
    pairs.push_back(pairwise(frames, k - 1, k, options.pairwise));
  std::vector<Step> prefixes{{0, 0, Rigid::identity()}};
  for (const Step& pair : pairs)
    prefixes.push_back(compose(frames, prefixes.back(), pair, options.compose));
  out.reserve(prefixes.size());
  for (const Step& prefix : prefixes)
    out.push_back(options.refine ? refine(frames, prefix, options.refinement).phi : prefix.phi);
  return out;
}

SeriesError evaluate(const std::vector<Rigid>& estimate, const std::vector<Rigid>& truth, int width, int height,
                     double period) {
  if (estimate.size() != truth.size())
    throw std::invalid_argument("evaluate: " + std::to_string(estimate.size()) + " estimated motions for " +
                                std::to_string(truth.size()) + " true ones");
  SeriesError e;
  for (std::size_t i = 0; i < truth.size(); ++i) {
    const double d = Rigid::distance(estimate[i], truth[i], width, height);
    e.per_frame.push_back(d);
    if (i == 0) continue;
    e.mean += d;
    e.max = std::max(e.max, d);
    if (d >= 0.5 * period) ++e.off_by_period;
  }
  if (truth.size() > 1) e.mean /= static_cast<double>(truth.size() - 1);
  return e;
}

}  // namespace flowd::registration
