// An all-pairs stage of a cluster run (docs/cluster.md "All-pairs stages"):
// the leaves run on the worker nodes, each node's threads its lanes and its
// cache kept across the stage's jobs (runtime/allpairs_job.cpp).
//
// Distribution, as Rocket's across nodes: the Hilbert-ordered leaves (or,
// when a node's cache is smaller than the set, the bands plan's) are cut
// into one contiguous stretch per node, in proportion to its lanes. A
// node gets its stretch as jobs, each the first half of what is left of it
// (at least two leaves per lane), one job at a time: the cap on jobs in
// flight. A node whose stretch is done steals: it takes the back half of the
// largest stretch left, so both keep contiguous stretches of the curve. Inside
// a job the node's lanes steal from each other first (sched/allpairs_lanes).
// A node lost during a job leaves its job's leaves and the rest of its
// stretch to the others, as stretches to steal; its cache's items are loaded
// again where they are needed.
//
// The peer cache is the coordinator's item directory: each job's record says
// which items the node's cache holds at its end; a job is told, for each of
// its items, the other nodes that hold it and those whose work left needs
// it, to ask before loading the item itself. A node serves a marker for an
// item while it loads it, so that whoever asks then waits for that load
// rather than making its own.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <numeric>

#include "runtime/allpairs_pairs.hpp"
#include "runtime/remote.hpp"
#include "runtime/run_state.hpp"

namespace flowd::runtime::detail {

namespace {

// Jobs that ended, filled from the executor's threads.
struct Answers {
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::pair<std::size_t, RemoteResult>> done;  // (node, result)
};

struct Stretch {
  std::size_t begin = 0, end = 0;  // leaves not sent yet
  std::size_t size() const { return end - begin; }
};

}  // namespace

Table RunState::cluster_allpairs(StageState& s, const std::vector<CarriedPtr>& rows, const std::vector<CarriedPtr>& cols,
                                 const std::vector<RemoteNode>& nodes, sched::TaskEnv& env, sched::AllPairsStats& stats,
                                 std::optional<sched::PairPlan>& plan_out, FailedLoads* failed) {
  const auto t0 = Clock::now();
  auto since = [&](Clock::time_point t) { return std::chrono::duration<double>(t - t0).count(); };
  const auto& cfg = s.node->allpairs;
  const bool two_sets = cfg.shape == sched::PairShape::rectangle;
  const auto nr = static_cast<std::uint32_t>(rows.size());
  const auto nc = static_cast<std::uint32_t>(two_sets ? cols.size() : rows.size());
  const std::uint64_t n_items = rows.size() + (two_sets ? cols.size() : 0);
  const std::uint64_t col_base = two_sets ? nr : 0;
  auto carried_of = [&](std::uint64_t item) -> const CarriedPtr& {
    return item < rows.size() ? rows[item] : cols[item - rows.size()];
  };
  const auto& op = static_cast<const AllPairs&>(*s.node->op);
  const std::vector<std::string> names = op.scores();

  int lanes = 0, widest = 1;
  for (const auto& n : nodes) {
    lanes += std::max(1, n.slots);
    widest = std::max(widest, n.slots);
  }
  // A node's cache smaller than the set: bands it holds beside the two slots
  // each of its lanes pins, as in one process (allpairs_stage.cpp). The
  // bands' leaves, in order, are then cut into stretches like the curve's,
  // so each node holds a band's rows while the columns stream past, and a
  // band is split between nodes only at a stretch's ends.
  const std::uint64_t pinned = 2 * static_cast<std::uint64_t>(widest);
  const bool bands = cfg.cache_items != 0 && cfg.cache_items < n_items && cfg.cache_items > pinned;
  if (bands) {
    const std::uint64_t total = sched::pairs_in(cfg.shape, 0, nr, 0, nc);
    plan_out = sched::plan_strips(cfg.shape, nr, nc, static_cast<std::uint32_t>(cfg.cache_items - pinned),
                                  cfg.leaf_pairs ? cfg.leaf_pairs : default_leaf_pairs(total, lanes));
  } else {
    plan_out = hilbert_plan(cfg.shape, nr, nc, cfg.leaf_pairs, lanes);
  }
  const sched::PairPlan& plan = *plan_out;
  const std::size_t R = std::min(nodes.size(), plan.leaves.size());

  // 1. One stretch per node, by pairs in proportion to its lanes.
  std::vector<Stretch> stretch(R);
  {
    double lanes_before = 0, pairs_before = 0;
    const double total_lanes = std::accumulate(nodes.begin(), nodes.begin() + static_cast<std::ptrdiff_t>(R), 0.0,
                                               [](double a, const RemoteNode& n) { return a + std::max(1, n.slots); });
    std::size_t leaf = 0;
    for (std::size_t r = 0; r < R; ++r) {
      lanes_before += std::max(1, nodes[r].slots);
      const double until = static_cast<double>(plan.total_pairs) * lanes_before / total_lanes;
      stretch[r].begin = leaf;
      // Every node gets a leaf, and the last one the rest.
      while (leaf < plan.leaves.size() - (R - r - 1) &&
             (leaf == stretch[r].begin || r + 1 == R ||
              pairs_before + static_cast<double>(plan.leaves[leaf].pairs) / 2 <= until)) {
        pairs_before += static_cast<double>(plan.leaves[leaf].pairs);
        ++leaf;
      }
      stretch[r].end = leaf;
    }
  }

  // The directory: which nodes' caches hold ℓ(item), as their last record
  // said.
  std::vector<std::vector<std::uint32_t>> holders(n_items);

  auto answers = std::make_shared<Answers>();
  std::vector<bool> busy(R, false), live(R, true);
  std::vector<Stretch> job(R);  // the leaves of each node's job in flight
  std::vector<double> job_sent(R, 0);
  std::uint64_t jobs = 0, node_steals = 0;

  auto mark_items = [&](std::vector<bool>& seen, std::size_t leaf) {
    const auto& b = plan.leaves[leaf];
    for (std::uint32_t i = b.row_begin; i < b.row_end; ++i) seen[i] = true;
    for (std::uint32_t j = b.col_begin; j < b.col_end; ++j) seen[col_base + j] = true;
  };
  auto send = [&](std::size_t r, std::size_t first, std::size_t count) {
    std::vector<std::uint64_t> items;
    {
      std::vector<bool> seen(n_items, false);
      for (std::size_t l = first; l < first + count; ++l) mark_items(seen, l);
      for (std::uint64_t i = 0; i < n_items; ++i)
        if (seen[i]) items.push_back(i);
    }
    // The other nodes that will need each item (their stretch left and the
    // job they are running): whichever gets to it first loads it, and the
    // others fetch it or wait for it (allpairs_job.cpp).
    std::vector<std::vector<bool>> wants(R);
    if (cfg.peer_cache)
      for (std::size_t v = 0; v < R; ++v) {
        if (v == r || !live[v]) continue;
        wants[v].assign(n_items, false);
        for (std::size_t l = stretch[v].begin; l < stretch[v].end; ++l) mark_items(wants[v], l);
        if (busy[v])
          for (std::size_t l = job[v].begin; l < job[v].end; ++l) mark_items(wants[v], l);
      }
    Json leaf_list = Json::array(), keys = Json::array(), hints = Json::array();
    for (std::size_t l = first; l < first + count; ++l) {
      const auto& b = plan.leaves[l];
      leaf_list.push_back({b.row_begin, b.row_end, b.col_begin, b.col_end});
    }
    RemoteTask t;
    t.stage = s.node->index;
    t.key = s.name() + "/job/" + std::to_string(jobs++);
    t.node = nodes[r].id;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::uint64_t item = items[i];
      keys.push_back(carried_of(item)->item.meta.key);
      t.inputs.push_back(carried_of(item));
      t.ports.push_back(0);
      if (!cfg.peer_cache) continue;
      const auto& h = holders[item];
      if (std::find(h.begin(), h.end(), nodes[r].id) != h.end()) continue;  // its own cache has it
      // Holders first, starting at a different one per item to spread the
      // asking; then the nodes that will need it.
      Json candidates = Json::array();
      for (std::size_t k = 0; k < h.size(); ++k) candidates.push_back(h[(item + k) % h.size()]);
      for (std::size_t v = 0; v < R; ++v)
        if (v != r && live[v] && wants[v][item] && std::find(h.begin(), h.end(), nodes[v].id) == h.end())
          candidates.push_back(nodes[v].id);
      if (!candidates.empty()) hints.push_back({i, std::move(candidates)});
    }
    t.scan = {{"phase", "allpairs"},
              {"shape", shape_name(cfg.shape)},
              {"order", bands ? "bands" : "hilbert"},
              {"rows", nr},
              {"cols", nc},
              {"leaves", std::move(leaf_list)},
              {"items", items},
              {"keys", std::move(keys)},
              {"cache_items", cfg.cache_items},  // 0: every item
              {"gpu_cache_items", cfg.gpu_cache_items},
              {"max_loads", cfg.max_loads},
              {"load_ahead", cfg.load_ahead},
              {"peer_cache", std::move(hints)}};
    if (failed) {
      // --keep-going: the node records what it cannot load instead of
      // failing the job, and is told what failed elsewhere already.
      Json known = Json::array();
      for (const auto& [item, f] : failed->all()) known.push_back(item);
      t.scan["keep_going"] = true;
      t.scan["failed_items"] = std::move(known);
    }
    t.done = [answers, r](RemoteResult res) {
      std::lock_guard lk(answers->m);
      answers->done.emplace_back(r, std::move(res));
      answers->cv.notify_all();
    };
    busy[r] = true;
    job[r] = {first, first + count};
    job_sent[r] = since(Clock::now());
    opts().remote->submit(std::move(t));
  };
  // Node r's next job: the first half of its stretch, or of what it stole
  // (from another node's stretch or the leaves a lost node left, the
  // stretches past R).
  auto next_job = [&](std::size_t r) {
    if (stretch[r].size() == 0) {
      std::size_t victim = stretch.size();
      for (std::size_t v = 0; v < stretch.size(); ++v)
        if (v != r && stretch[v].size() > 0 && (victim == stretch.size() || stretch[v].size() > stretch[victim].size()))
          victim = v;
      if (victim == stretch.size()) return;
      const std::size_t take = (stretch[victim].size() + 1) / 2;
      stretch[r] = {stretch[victim].end - take, stretch[victim].end};
      stretch[victim].end -= take;
      ++node_steals;
    }
    const std::size_t floor = 2 * static_cast<std::size_t>(std::max(1, nodes[r].slots));
    const std::size_t count = std::min(stretch[r].size(), std::max(floor, (stretch[r].size() + 1) / 2));
    send(r, stretch[r].begin, count);
    stretch[r].begin += count;
  };

  stats = sched::AllPairsStats{};
  stats.items = n_items;
  stats.pairs = plan.total_pairs;
  stats.leaves = plan.leaves.size();
  stats.nodes = static_cast<std::uint32_t>(R);
  std::vector<std::size_t> first_lane(R, 0);
  std::vector<bool> lanes_named(R, false);
  LaneRows scores;
  const std::size_t nscores = names.size();

  // Node r was lost before it answered: the leaves of its job and the rest
  // of its stretch go to the others, as stretches any node may take; what
  // its cache held is no longer anywhere.
  std::uint64_t lost_nodes = 0;
  auto lost = [&](std::size_t r, const std::string& why) {
    live[r] = false;
    busy[r] = false;
    ++lost_nodes;
    const std::size_t redo = job[r].size() + stretch[r].size();
    if (job[r].size() > 0) stretch.push_back(job[r]);
    if (stretch[r].size() > 0) stretch.push_back(stretch[r]);
    stretch[r] = {};
    job[r] = {};
    for (auto& h : holders) std::erase(h, nodes[r].id);
    if (std::none_of(live.begin(), live.end(), [](bool b) { return b; }))
      throw Error("every worker node running all-pairs jobs was lost; the last: " + why);
    log().warn("[" + s.name() + "] " + nodes[r].name + " was lost during an all-pairs job (" + why + "); its " +
               std::to_string(redo) + " leaves go to the other nodes");
  };

  // Folds a node's answer in: its pairs, its record, the directory.
  auto take = [&](std::size_t r, RemoteResult& res) {
    if (!res.ok && res.node_lost) {
      lost(r, res.error);
      return;
    }
    if (!res.ok)
      throw ItemError(res.key, "the all-pairs job " + std::to_string(job[r].size()) + " leaves long on " +
                                   nodes[r].name + " failed: " + res.error);
    if (res.outputs.size() != 2 || !res.outputs[0].item || !res.outputs[1].item)
      throw Error("the all-pairs job on " + nodes[r].name + " answered with " + std::to_string(res.outputs.size()) +
                  " outputs, not its scores and its record");
    const Item table_item = res.outputs[0].item->fetch();
    const Item record_item = res.outputs[1].item->fetch();
    const Table& t = table_item.table();
    const auto& a = t.column<std::int64_t>("a");
    const auto& b = t.column<std::int64_t>("b");
    std::uint64_t job_pairs = 0;
    for (std::size_t l = job[r].begin; l < job[r].end; ++l) job_pairs += plan.leaves[l].pairs;
    s.steps_done.fetch_add(job_pairs, std::memory_order_relaxed);
    scores.a.insert(scores.a.end(), a.begin(), a.end());
    scores.b.insert(scores.b.end(), b.begin(), b.end());
    const std::size_t at = scores.scores.size();
    scores.scores.resize(at + a.size() * nscores);
    for (std::size_t k = 0; k < nscores; ++k) {
      const auto& c = t.column<double>(names[k]);
      for (std::size_t p = 0; p < c.size(); ++p) scores.scores[at + p * nscores + k] = c[p];
    }
    const Json& rec = record_item.json();
    if (failed)
      for (const auto& f : rec.value("failed", Json::array())) {
        const auto item = f.at(0).get<std::uint64_t>();
        if (item < n_items) failed->add(item, {f.at(1).get<std::string>(), f.at(2).get<std::string>()});
      }
    stats.loads += rec.at("loads").get<std::uint64_t>();
    stats.peer_hits += rec.at("peer_hits").get<std::uint64_t>();
    stats.peer_misses += rec.at("peer_misses").get<std::uint64_t>();
    stats.hits += rec.at("hits").get<std::uint64_t>();
    stats.evictions += rec.at("evictions").get<std::uint64_t>();
    stats.device_hits += rec.value("device_hits", std::uint64_t{0});
    stats.device_loads += rec.value("device_loads", std::uint64_t{0});
    stats.device_evictions += rec.value("device_evictions", std::uint64_t{0});
    // Each node's GPU caches, counted once.
    if (!lanes_named[r]) stats.device_slots += rec.value("device_slots", std::size_t{0});
    stats.prefetched += rec.at("prefetched").get<std::uint64_t>();
    stats.steals += rec.at("steals").get<std::uint64_t>();
    stats.cache_slots = rec.at("cache_slots").get<std::size_t>();
    stats.load_seconds += rec.at("load_seconds").get<double>();
    stats.load_wall_seconds += rec.at("load_wall_seconds").get<double>();
    stats.compare_seconds += rec.at("compare_seconds").get<double>();
    const auto& lane_names = rec.at("lane_names");
    if (!lanes_named[r]) {
      lanes_named[r] = true;
      first_lane[r] = stats.lane_names.size();
      for (const auto& n : lane_names) {
        stats.lane_names.push_back(nodes[r].name + "." + n.get<std::string>());
        stats.lane_pairs.push_back(0);
        stats.lane_busy_seconds.push_back(0);
      }
    }
    for (std::size_t l = 0; l < lane_names.size() && l < rec.at("lane_pairs").size(); ++l) {
      if (first_lane[r] + l >= stats.lane_names.size()) break;
      stats.lane_pairs[first_lane[r] + l] += rec.at("lane_pairs")[l].get<std::uint64_t>();
      stats.lane_busy_seconds[first_lane[r] + l] += rec.at("lane_busy_seconds")[l].get<double>();
    }
    for (const auto& run : rec.at("leaf_runs")) {
      const auto local = run.at(0).get<std::size_t>();
      const auto lane = run.at(1).get<std::uint32_t>();
      if (local >= job[r].size()) continue;
      stats.leaf_runs.push_back({static_cast<std::uint32_t>(job[r].begin + local),
                                 static_cast<std::uint32_t>(first_lane[r] + lane), job_sent[r] + run.at(2).get<double>(),
                                 job_sent[r] + run.at(3).get<double>()});
    }
    // The directory: this node now holds exactly what its cache holds.
    for (auto& h : holders) std::erase(h, nodes[r].id);
    for (const auto& item : rec.at("cached")) {
      const auto i = item.get<std::uint64_t>();
      if (i < n_items) holders[i].push_back(nodes[r].id);
    }
    busy[r] = false;
  };

  for (std::size_t r = 0; r < R; ++r) next_job(r);
  while (std::any_of(busy.begin(), busy.end(), [](bool b) { return b; })) {
    std::deque<std::pair<std::size_t, RemoteResult>> done;
    {
      std::lock_guard lk(answers->m);
      done.swap(answers->done);
    }
    if (done.empty()) {
      if (runner_.stopping()) throw Error("the run is stopping");
      // This process's own ready tasks meanwhile (e.g. another stage's).
      if (!runner_.run_one(env.worker())) {
        std::unique_lock lk(answers->m);
        answers->cv.wait_for(lk, std::chrono::milliseconds(2), [&] { return !answers->done.empty(); });
      }
      continue;
    }
    for (auto& [r, res] : done) take(r, res);
    for (std::size_t r = 0; r < R; ++r)
      if (live[r] && !busy[r]) next_job(r);
  }
  stats.steals += node_steals;
  stats.nodes_lost = static_cast<std::uint32_t>(lost_nodes);
  stats.seconds = since(Clock::now());
  std::sort(stats.leaf_runs.begin(), stats.leaf_runs.end(),
            [](const sched::LeafRun& x, const sched::LeafRun& y) { return x.start < y.start; });
  log().debug("[" + s.name() + "] " + std::to_string(jobs) + " all-pairs jobs on " + std::to_string(R) +
              " worker nodes, " + std::to_string(node_steals) + " stretches stolen between nodes, " +
              std::to_string(lost_nodes) + " nodes lost");
  std::vector<LaneRows> all(1);
  all[0] = std::move(scores);
  return pair_table(all, names);
}

}  // namespace flowd::runtime::detail
