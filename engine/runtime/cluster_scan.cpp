// The hierarchical scan (stealing or static) of a cluster run: worker nodes are the ranks, their
// threads the lanes (docs/architecture.md "Scan", docs/workflow-format.md
// "Cluster runs"). Each rank runs its half of the hierarchical scan as two jobs on
// its node, and the global step between them runs here:
//
//  1. reduce job on rank r's segment: the lanes' ranges grown by stealing and
//     the scan of their partials (sched::reduce_rank); its outputs, the lane
//     prefixes and each lane's x[start..k] (k > start), stay on the node; the
//     lanes' ranges come back in the last output's metadata;
//  2. here: G_r = G_{r-1} ⊙ (rank r's last lane prefix), r = 1 … R−1, the
//     chain of the paper's global scan across ranks;
//  3. finish job on rank r: every lane's prefix with G_{r-1} applied, then
//     its range's results (sched::finish_rank); y_i stays on the node.
//
// Besides the elements, only references to the lane and right prefixes and
// the R totals travel. A node pulls an element of its segment (usually from
// itself: the map before made it there) and an item a combine reads by key
// when a combine first needs it.
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "runtime/remote.hpp"
#include "runtime/run_state.hpp"
#include "sched/scan.hpp"

namespace flowd::runtime::detail {

namespace {

// The answers of one round of jobs, filled from the executor's threads.
struct Round {
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::optional<RemoteResult>> results;
  std::size_t pending = 0;
  std::optional<std::size_t> failed;  // the first rank whose job failed
  bool over() const { return pending == 0 || failed; }
};

// A job's record: the last output's attrs["flowd.scan"].
const Json& record_of(const RemoteResult& r, const std::string& node) {
  if (r.outputs.empty() || !r.outputs.back().meta.attrs.contains("flowd.scan"))
    throw Error("the scan job on " + node + " answered without its record");
  return r.outputs.back().meta.attrs["flowd.scan"];
}

}  // namespace

std::vector<CarriedPtr> RunState::cluster_scan(StageState& s, const std::vector<CarriedPtr>& series,
                                               ScanCombiner& combine, const std::vector<RemoteNode>& nodes,
                                               sched::TaskEnv& env, sched::ScanStats& stats) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = series.size();
  const std::size_t R = std::min(nodes.size(), n);
  // Segments in proportion to the nodes' lanes, none empty.
  std::vector<std::size_t> bound(R + 1, 0);
  {
    double total = 0;
    for (std::size_t r = 0; r < R; ++r) total += std::max(1, nodes[r].slots);
    double cum = 0;
    for (std::size_t r = 1; r < R; ++r) {
      cum += std::max(1, nodes[r - 1].slots);
      const auto want = static_cast<std::size_t>(static_cast<double>(n) * cum / total + 0.5);
      bound[r] = std::clamp(want, bound[r - 1] + 1, n - (R - r));
    }
    bound[R] = n;
  }

  // What a combine may read by key: every item of the other inputs, as lazy
  // inputs of each job (pulled by the node when a combine asks).
  std::vector<CarriedPtr> lookups;
  std::vector<std::uint32_t> lookup_ports;
  Json lookup_keys = Json::array();
  for (std::size_t p = 1; p < s.held.size(); ++p)
    for (const auto& [key, c] : s.held[p]) {
      lookups.push_back(c);
      lookup_ports.push_back(static_cast<std::uint32_t>(p));
      lookup_keys.push_back(key);
    }

  auto run_round = [&](const char* phase, auto&& inputs_of) {
    auto round = std::make_shared<Round>();
    round->results.resize(R);
    round->pending = R;
    for (std::size_t r = 0; r < R; ++r) {
      RemoteTask t;
      t.stage = s.node->index;
      t.key = series[bound[r]]->item.meta.key;
      t.node = nodes[r].id;
      Json keys = Json::array();
      for (std::size_t i = bound[r]; i < bound[r + 1]; ++i) keys.push_back(series[i]->item.meta.key);
      Json spec = {{"phase", phase},
                   {"elements", bound[r + 1] - bound[r]},
                   {"keys", std::move(keys)},
                   {"steal", s.node->strategy == sched::ScanStrategy::work_stealing},
                   {"lookup_keys", lookup_keys}};
      for (std::size_t i = bound[r]; i < bound[r + 1]; ++i) {
        t.inputs.push_back(series[i]);
        t.ports.push_back(0);
      }
      inputs_of(r, t, spec);
      t.inputs.insert(t.inputs.end(), lookups.begin(), lookups.end());
      t.ports.insert(t.ports.end(), lookup_ports.begin(), lookup_ports.end());
      t.scan = std::move(spec);
      t.done = [round, r](RemoteResult res) {
        std::lock_guard lk(round->m);
        if (!res.ok && !round->failed) round->failed = r;
        round->results[r] = std::move(res);
        --round->pending;
        round->cv.notify_all();
      };
      opts().remote->submit(std::move(t));
    }
    // Wait, running this process's ready tasks meanwhile; the first failure
    // ends the scan (the other ranks' answers are dropped when they come).
    while (true) {
      {
        std::unique_lock lk(round->m);
        if (round->over()) break;
      }
      if (runner_.stopping()) throw Error("the run is stopping");
      if (!runner_.run_one(env.worker())) {
        std::unique_lock lk(round->m);
        round->cv.wait_for(lk, std::chrono::milliseconds(2), [&] { return round->over(); });
      }
    }
    std::lock_guard lk(round->m);
    if (round->failed) {
      const std::size_t r = *round->failed;
      const RemoteResult& res = *round->results[r];
      throw ItemError(res.key, "the scan's " + std::string(phase) + " job of rank " + std::to_string(r) + " on " +
                                   nodes[r].name + " failed: " + res.error);
    }
    std::vector<RemoteResult> out;
    for (std::size_t r = 0; r < R; ++r) out.push_back(std::move(*round->results[r]));
    return out;
  };

  stats = sched::ScanStats{};
  stats.strategy = sched::ScanStrategy::work_stealing;
  stats.hierarchical = true;
  stats.stealing = s.node->strategy == sched::ScanStrategy::work_stealing;
  stats.elements = n;
  stats.ranks = static_cast<std::uint32_t>(R);
  // Lanes: each node's, then this process's for the global step.
  std::vector<std::size_t> first_lane(R + 1, 0);
  auto add_lanes = [&](std::size_t r, const Json& rec) {
    const auto& names = rec.at("lane_names");
    for (std::size_t l = 0; l < names.size(); ++l) {
      const std::size_t i = first_lane[r] + l;
      if (i >= stats.lane_names.size()) {
        stats.lane_names.resize(i + 1);
        stats.lane_busy_seconds.resize(i + 1, 0);
        stats.lane_ops.resize(i + 1, 0);
      }
      stats.lane_names[i] = nodes[r].name + "." + names[l].get<std::string>();
      stats.lane_busy_seconds[i] += rec.at("lane_busy_seconds")[l].get<double>();
      stats.lane_ops[i] += rec.at("lane_ops")[l].get<std::uint64_t>();
    }
    stats.combines += rec.at("combines").get<std::uint64_t>();
    stats.steals += rec.at("steals").get<std::uint64_t>();
    stats.depth = std::max(stats.depth, rec.at("depth").get<std::uint32_t>());
  };

  // 1. The ranks' first halves.
  auto reduced = run_round("reduce", [](std::size_t, RemoteTask&, Json&) {});
  std::vector<Json> lanes_of(R);
  std::vector<std::vector<CarriedPtr>> prefixes(R);  // per rank: the lane prefixes, in lane order (present ones)
  std::vector<std::vector<CarriedPtr>> rights(R);    // per rank: every lane's right prefixes, in lane order
  for (std::size_t r = 0; r < R; ++r) {
    const Json& rec = record_of(reduced[r], nodes[r].name);
    lanes_of[r] = rec.at("lanes");
    first_lane[r + 1] = first_lane[r] + lanes_of[r].size();
    add_lanes(r, rec);
    std::size_t present = 0, right = 0;
    for (const auto& l : lanes_of[r]) {
      present += l.at("prefix").get<bool>();
      // x[start] itself is not sent back: the finish has the elements.
      if (const auto n_r = l.at("rights").get<std::size_t>(); n_r > 0) right += n_r - 1;
    }
    auto& outs = reduced[r].outputs;
    if (present == 0 || outs.size() != present + right + 1)
      throw Error("the scan's reduce job on " + nodes[r].name + " returned " + std::to_string(outs.size() - 1) +
                  " items for " + std::to_string(present) + " lane prefixes and " + std::to_string(right) +
                  " right prefixes");
    for (std::size_t i = 0; i < present; ++i) prefixes[r].push_back(carried_from(outs[i]));
    for (std::size_t i = present; i + 1 < outs.size(); ++i) rights[r].push_back(carried_from(outs[i]));
  }

  // 2. The global step: every rank's total, from the ranks before it.
  std::vector<CarriedPtr> total(R);
  const auto g0 = std::chrono::steady_clock::now();
  std::uint64_t global_combines = 0;
  total[0] = prefixes[0].back();
  for (std::size_t r = 1; r < R; ++r) {
    total[r] = combine(env.worker(), total[r - 1], prefixes[r].back());
    ++global_combines;
  }
  stats.lane_names.push_back("coordinator");
  stats.lane_busy_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count());
  stats.lane_ops.push_back(global_combines);
  stats.combines += global_combines;

  // 3. The ranks' second halves.
  auto finished = run_round("finish", [&](std::size_t r, RemoteTask& t, Json& spec) {
    spec["lanes"] = lanes_of[r];
    spec["received"] = r > 0;
    if (r > 0) {
      t.inputs.push_back(total[r - 1]);
      t.ports.push_back(0);
    }
    t.inputs.push_back(total[r]);
    t.ports.push_back(0);
    for (const auto* group : {&prefixes[r], &rights[r]})
      for (const auto& p : *group) {
        t.inputs.push_back(p);
        t.ports.push_back(0);
      }
  });
  std::vector<CarriedPtr> y;
  y.reserve(n);
  for (std::size_t r = 0; r < R; ++r) {
    add_lanes(r, record_of(finished[r], nodes[r].name));
    auto& outs = finished[r].outputs;
    if (outs.size() != bound[r + 1] - bound[r] + 1)
      throw Error("the scan's finish job on " + nodes[r].name + " returned " + std::to_string(outs.size() - 1) +
                  " results for " + std::to_string(bound[r + 1] - bound[r]) + " elements");
    for (std::size_t i = 0; i + 1 < outs.size(); ++i)
      y.push_back(carried_from(outs[i]));
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return y;
}

}  // namespace flowd::runtime::detail
