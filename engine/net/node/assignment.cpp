#include "net/node/assignment.hpp"

#include <algorithm>
#include <tuple>

namespace flowd::net::node {

std::optional<int> placement_preference(const StagePlacement& stage, const NodeView& node) {
  if (node.unavailable.contains(stage.name)) return std::nullopt;
  return workflow::preference(stage.labels, node.labels);
}

namespace {
std::string join(const std::vector<std::string>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s + "]";
}
}  // namespace

std::string why_not(const StagePlacement& stage, const NodeView& node, const std::string& reason_unavailable) {
  if (node.unavailable.contains(stage.name))
    return "stage unavailable there" + (reason_unavailable.empty() ? std::string() : ": " + reason_unavailable);
  if (workflow::preference(stage.labels, node.labels)) return {};
  std::string why = "its labels " + join(node.labels.names) + " do not match the stage's";
  if (!stage.labels.all.empty()) why += " all " + join(stage.labels.all);
  if (!stage.labels.any.empty()) why += " any " + join(stage.labels.any);
  if (!stage.labels.prefer.empty() && !stage.labels.anywhere) why += " prefer " + join(stage.labels.prefer);
  return why;
}

std::vector<std::optional<int>> best_preferences(std::span<const StagePlacement> stages,
                                                 std::span<const NodeView> live) {
  std::vector<std::optional<int>> best(stages.size());
  for (std::size_t s = 0; s < stages.size(); ++s)
    for (const auto& n : live)
      if (const auto p = placement_preference(stages[s], n); p && (!best[s] || *p < *best[s])) best[s] = p;
  return best;
}

std::vector<std::optional<std::int64_t>> best_ranks(std::span<const StagePlacement> stages, std::span<const NodeView> nodes,
                                                    std::span<const std::optional<int>> best) {
  std::vector<std::optional<std::int64_t>> out(stages.size());
  for (std::size_t s = 0; s < stages.size() && s < best.size(); ++s) {
    const auto policy = stages[s].labels.rank;
    if (policy == workflow::RankPolicy::any || !best[s]) continue;
    for (const auto& n : nodes) {
      if (placement_preference(stages[s], n) != best[s]) continue;
      const auto r = n.labels.rank;
      if (!out[s] || (policy == workflow::RankPolicy::biggest ? r > *out[s] : r < *out[s])) out[s] = r;
    }
  }
  return out;
}

std::uint64_t local_bytes(const ReadyTask& task, std::uint32_t id) {
  std::uint64_t b = 0;
  for (const auto& [holder, bytes] : task.inputs)
    if (holder == id) b += bytes;
  return b;
}

std::optional<std::size_t> choose_task(std::span<const ReadyTask> ready, const NodeView& node,
                                       std::span<const StagePlacement> stages,
                                       std::span<const std::optional<int>> best, bool locality,
                                       std::span<const std::optional<std::int64_t>> ranks) {
  // Preferences per stage for this node, computed once per call.
  std::vector<std::optional<int>> mine(stages.size());
  for (std::size_t s = 0; s < stages.size(); ++s) mine[s] = placement_preference(stages[s], node);
  std::optional<std::size_t> chosen;
  // (preference, -local bytes, seq): smaller is better.
  std::tuple<int, std::uint64_t, std::uint64_t> best_key{};
  std::uint64_t best_local = 0;
  for (std::size_t i = 0; i < ready.size(); ++i) {
    const auto& t = ready[i];
    if (t.stage >= stages.size()) continue;
    const auto p = mine[t.stage];
    if (!p) continue;
    // A node that the stage prefers takes it when it asks at the same time.
    if (t.stage < best.size() && best[t.stage] && *best[t.stage] < *p) continue;
    // Among equally preferred nodes asking at once, the stage's rank policy
    // picks (e.g. "biggest": the node with the most cores or GPU memory).
    if (t.stage < ranks.size() && ranks[t.stage] && t.stage < best.size() && best[t.stage] == p &&
        node.labels.rank != *ranks[t.stage])
      continue;
    const std::uint64_t local = locality ? local_bytes(t, node.id) : 0;
    const auto key = std::tuple<int, std::uint64_t, std::uint64_t>{*p, 0, t.seq};
    const bool better = !chosen || std::get<0>(key) < std::get<0>(best_key) ||
                        (std::get<0>(key) == std::get<0>(best_key) &&
                         (local > best_local || (local == best_local && t.seq < std::get<2>(best_key))));
    if (better) {
      chosen = i;
      best_key = key;
      best_local = local;
    }
  }
  return chosen;
}

std::optional<std::size_t> choose_victim(const NodeView& thief, std::span<const NodeView> victims, std::uint64_t seed,
                                         std::span<const std::uint32_t> worth) {
  if (victims.empty()) return std::nullopt;
  std::vector<cluster::Executor> others;
  others.reserve(victims.size());
  for (const auto& v : victims) others.push_back(cluster::Executor{std::to_string(v.id), v.labels});
  const auto thief_site = workflow::site_of(thief.labels);
  const auto order = cluster::steal_victim_order(thief_site, others, seed);
  if (order.empty()) return std::nullopt;
  if (worth.size() != victims.size()) return order.front();
  // The order lists the thief's site first: stay in the group of its head.
  const auto site_of = [&](std::size_t i) { return workflow::site_of(victims[i].labels); };
  const bool local_first = thief_site && site_of(order.front()) == thief_site;
  std::size_t best = order.front();
  for (const auto i : order) {
    if (local_first && site_of(i) != thief_site) break;
    if (worth[i] > worth[best]) best = i;
  }
  return best;
}

}  // namespace flowd::net::node
