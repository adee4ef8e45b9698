// An all-pairs stage (flowd::AllPairs; issue 15): when its inputs have
// closed, the items it holds (one set, or two) are numbered in key order, the
// pair matrix is split into Hilbert-ordered leaves (sched/allpairs_plan.hpp),
// and lanes on the run's workers compute every pair through a cache of
// preprocessed items (sched/allpairs_run.hpp); lanes on GPUs through a cache
// in their GPU's memory above it (allpairs_gpu.hpp). The stage emits one table:
// a, b (indices) and one f64 column per score, sorted by (a, b). In a
// cluster run the leaves run on the worker nodes instead
// (cluster_allpairs.cpp).
#include <algorithm>
#include <cstdio>
#include <numeric>

#include "runtime/allpairs_gpu.hpp"
#include "runtime/allpairs_pairs.hpp"
#include "runtime/remote.hpp"
#include "runtime/run_state.hpp"

namespace flowd::runtime::detail {

void RunState::run_allpairs(StageState& s, sched::TaskEnv& env) {
  std::vector<CarriedPtr> rows, cols;
  {
    std::lock_guard lk(m_);
    for (const auto& [key, c] : s.held[0]) rows.push_back(c);
    if (s.held.size() > 1)
      for (const auto& [key, c] : s.held[1]) cols.push_back(c);
  }
  const auto& cfg = s.node->allpairs;
  const bool two_sets = cfg.shape == sched::PairShape::rectangle;
  const auto& op = static_cast<const AllPairs&>(*s.node->op);
  const std::vector<std::string> names = op.scores();
  const std::size_t nscores = names.size();
  const std::size_t ncols = two_sets ? cols.size() : rows.size();
  auto key_of = [&](std::uint64_t item) -> const std::string& {
    return item < rows.size() ? rows[item]->item.meta.key : cols[item - rows.size()]->item.meta.key;
  };

  Outcome o{true, {}, {}};
  const bool keep_going = opts().keep_going;
  FailedLoads failed;  // --keep-going: the items that could not be loaded
  sched::AllPairsStats stats;
  std::optional<sched::PairPlan> plan;
  const std::uint64_t n_items = rows.size() + (two_sets ? cols.size() : 0);
  const std::size_t host_slots = static_cast<std::size_t>(
      cfg.cache_items && cfg.cache_items < n_items ? cfg.cache_items : n_items);
  AllPairsGpuLanes gpus(*s.node, runner_.workers(), static_cast<std::size_t>(cfg.gpu_cache_items), host_slots);
  const int lanes = scan_lanes(runner_, gpus.kinds());
  std::vector<LaneRows> by_lane(static_cast<std::size_t>(lanes));
  std::optional<Table> table;
  std::vector<RemoteNode> nodes;
  if (opts().remote) nodes = opts().remote->nodes_for(s.node->index);
  if (rows.empty() || (two_sets && cols.empty())) {
    log().warn("[" + s.name() + "] received no items" + std::string(two_sets ? " on one of its sets" : "") +
               ", so there are no pairs");
  } else if (!runner_.stopping()) {
    o.start_ns = runner_.trace().now();
    try {
      if (nscores == 0) throw Error("operator '" + s.op() + "' names no scores (AllPairs::scores())");
      const std::uint64_t total = sched::pairs_in(cfg.shape, 0, static_cast<std::uint32_t>(rows.size()), 0,
                                                  static_cast<std::uint32_t>(ncols));
      const std::uint64_t leaf = cfg.leaf_pairs ? cfg.leaf_pairs : default_leaf_pairs(total, lanes);
      const std::uint64_t items = rows.size() + (two_sets ? cols.size() : 0);
      const auto nr = static_cast<std::uint32_t>(rows.size()), nc = static_cast<std::uint32_t>(ncols);
      // A cache that holds every item: Rocket's Hilbert tree (each item is
      // loaded once whatever the order). A smaller one: bands of rows it
      // holds, less the two slots each lane pins (sched/allpairs_plan.hpp).
      const std::uint64_t pinned = 2 * static_cast<std::uint64_t>(lanes);
      s.begin_steps(total, "pairs");
      if (!nodes.empty()) {
        table = cluster_allpairs(s, rows, cols, nodes, env, stats, plan, keep_going ? &failed : nullptr);
      } else {
        if (cfg.cache_items == 0 || cfg.cache_items >= items || cfg.cache_items <= pinned)
          plan = hilbert_plan(cfg.shape, nr, nc, cfg.leaf_pairs, lanes);
        else
          plan = sched::plan_strips(cfg.shape, nr, nc, static_cast<std::uint32_t>(cfg.cache_items - pinned), leaf);
        sched::AllPairsOptions so;
        so.lanes = static_cast<std::size_t>(lanes);
        so.cache_slots = static_cast<std::size_t>(cfg.cache_items);
        so.max_loads = static_cast<std::size_t>(cfg.max_loads);
        so.prefetch = cfg.load_ahead;
        so.runs_on = gpus.kinds();

        // ℓ = preprocess(load(x)), traced as a span of its own per item.
        auto load = [&](const sched::WorkerInfo& w, std::uint64_t item, bool on_lane) {
          const CarriedPtr& c = item < rows.size() ? rows[item] : cols[item - rows.size()];
          const std::string& key = c->item.meta.key;
          if (keep_going && failed.contains(item)) return failed_load_marker(key);
          Item result;
          const Outcome lo = s.call(runner_.trace(), key, [&] {
            if (runner_.stopping()) throw Error("the run is stopping");
            Item scratch;
            const Item& in = c->remote ? (scratch = c->remote->fetch()) : runner_.on_host(*c, scratch);
            result = gpus.load(w, in, on_lane, runner_.log(), runner_.stop_flag());
          });
          runner_.trace_task(s.op(), s.name(), w, key, "load", lo);
          if (!lo.ok && keep_going && !runner_.stopping()) {
            failed.add(item, {key, lo.error});
            return failed_load_marker(key);
          }
          if (!lo.ok) throw ItemError(lo.key, lo.error);
          return result;
        };
        auto compare = [&](const sched::WorkerInfo& w, std::size_t lane, std::uint32_t i, std::uint32_t j,
                           const Item& a, const Item& b) {
          s.steps_done.fetch_add(1, std::memory_order_relaxed);
          if (is_failed_load(a) || is_failed_load(b)) return;
          gpus.compare(w, runner_.log(), runner_.stop_flag(), nscores, by_lane[lane], i, j, a, b, key_of(i),
                       key_of(two_sets ? rows.size() + j : j));
        };
        HelpingPool pool(runner_, env.worker());
        sched::run_allpairs<Item>(*plan, so, load, compare, pool, stats, nullptr, gpus.near());
        table = pair_table(by_lane, names);
      }
    } catch (const std::exception& e) {
      o = {false, e.what(), failed_key(e, s.name()), o.start_ns, 0};
    }
    o.end_ns = runner_.trace().now();
  }
  if (!table) table = pair_table(by_lane, names);  // no pairs: the columns alone
  if (!o.ok) table.reset();
  std::vector<std::string> row_keys, col_keys;
  for (const auto& c : rows) row_keys.push_back(c->item.meta.key);
  for (const auto& c : two_sets ? cols : rows) col_keys.push_back(c->item.meta.key);
  const auto left_out = failed.all();
  if (table) drop_failed(*table, row_keys, col_keys, left_out, rows.size(), two_sets);

  if (o.ok && plan) {
    char line[360];
    std::snprintf(line, sizeof line,
                  "all-pairs of %llu items (%s, %s order): %llu pairs in %llu leaves on %zu lanes, %.3f s; R = %.2f (%llu loads, "
                  "%llu of them ahead of the lanes, hit rate %.1f%%, %llu evictions, %zu cache slots), efficiency %.0f%% of "
                  "T_min = %.3f s",
                  static_cast<unsigned long long>(stats.items), shape_name(cfg.shape),
                  plan->order == sched::PairPlan::Order::strips ? "bands" : "Hilbert",
                  static_cast<unsigned long long>(stats.pairs), static_cast<unsigned long long>(stats.leaves),
                  stats.lane_pairs.size(), stats.seconds, stats.load_ratio(),
                  static_cast<unsigned long long>(stats.loads), static_cast<unsigned long long>(stats.prefetched),
                  100.0 * stats.hit_rate(),
                  static_cast<unsigned long long>(stats.evictions), stats.cache_slots, 100.0 * stats.efficiency(),
                  stats.t_min());
    std::string where;
    if (stats.device_slots > 0) {
      char gpu[200];
      std::snprintf(gpu, sizeof gpu, "; GPU caches (%zu slots): hit rate %.1f%%, %llu copies up from the host cache, "
                    "%llu evictions", stats.device_slots, 100.0 * stats.device_hit_rate(),
                    static_cast<unsigned long long>(stats.device_loads),
                    static_cast<unsigned long long>(stats.device_evictions));
      where += gpu;
    }
    if (stats.nodes > 0) {
      char peers[200];
      std::snprintf(peers, sizeof peers, "; on %u worker nodes: %llu items from the peer cache (%.1f%% of the misses; "
                    "those ahead of the lanes count them too), %llu peers asked did not hold theirs yet or any more",
                    stats.nodes, static_cast<unsigned long long>(stats.peer_hits), 100.0 * stats.peer_hit_rate(),
                    static_cast<unsigned long long>(stats.peer_misses));
      where += peers;
      if (stats.nodes_lost > 0)
        where += "; " + std::to_string(stats.nodes_lost) + " node(s) lost during a job: their leaves ran again elsewhere, "
                 "and the loads of their last jobs are not in R";
    }
    log().info("[" + s.name() + "] " + line + where);
    // Each leaf as a span on its lane's worker: the trace shows who
    // computed which tile, and when.
    for (const auto& run : stats.leaf_runs) {
      const auto& b = plan->leaves[run.leaf];
      const std::string& lane = stats.lane_names[run.lane];
      const auto& ws = runner_.workers().workers;
      const auto w = std::find_if(ws.begin(), ws.end(), [&](const sched::WorkerInfo& x) { return x.name == lane; });
      if (w == ws.end()) continue;
      const Outcome span{true, {}, {}, o.start_ns + static_cast<std::int64_t>(run.start * 1e9),
                         o.start_ns + static_cast<std::int64_t>(run.end * 1e9)};
      runner_.trace_task(s.op(), s.name(), *w,
                         "pairs " + std::to_string(b.row_begin) + ".." + std::to_string(b.row_end) + " x " +
                             std::to_string(b.col_begin) + ".." + std::to_string(b.col_end),
                         AllPairsGpuLanes::kind_name(*w), span);
    }
  }

  std::lock_guard lk(m_);
  if (o.ok) {
    ItemMeta meta;
    meta.key = s.name();
    meta.attrs = {{"rows", std::move(row_keys)},
                  {"cols", std::move(col_keys)},
                  {"pairs", shape_name(cfg.shape)},
                  {"scores", names}};
    if (!left_out.empty()) {
      // Each one a failed item of the run (exit 4, listed at the end), and
      // named with the matrix, whose rows and columns it is absent from.
      Json keys = Json::array();
      std::string list;
      for (const auto& [item, f] : left_out) {
        fail_locked(s, f.key, f.error);
        keys.push_back(f.key);
        if (keys.size() <= 5) list += (list.empty() ? "'" : ", '") + f.key + "'";
      }
      if (keys.size() > 5) list += " and " + std::to_string(keys.size() - 5) + " more";
      log().warn("[" + s.name() + "] " + std::to_string(keys.size()) + " of " + std::to_string(n_items) +
                 " items could not be loaded (" + list + "): the pairs are those of the other " +
                 std::to_string(n_items - keys.size()) + ", and these are absent from the rows and columns");
      meta.attrs["left_out"] = std::move(keys);
    }
    const PortSpec& out = s.node->spec().outputs[0];
    Value v(std::move(*table));
    if (!out.type.accepts(v)) {
      fail_locked(s, s.name(), "the score table does not fit output '" + out.name + "', declared " + out.type.str());
    } else {
      route_one_locked(s, 0, runner_.carry(Item{std::move(meta), std::move(v)}, {}, nullptr), &env);
    }
    if (plan) {
      s.allpairs_stats = std::move(stats);
      s.allpairs_plan = std::move(plan);
    }
  }
  s.held.clear();
  end_task_locked(s, nullptr, o, &env);
}

Json RunState::allpairs_json() const {
  Json all = Json::array();
  for (const auto& s : stages_) {
    if (!s.allpairs_stats || !s.allpairs_plan) continue;
    const auto& st = *s.allpairs_stats;
    const auto& plan = *s.allpairs_plan;
    Json lanes = Json::array();
    for (std::size_t i = 0; i < st.lane_names.size(); ++i)
      lanes.push_back(
          {{"name", st.lane_names[i]}, {"busy_seconds", st.lane_busy_seconds[i]}, {"pairs", st.lane_pairs[i]}});
    // The picture: each leaf's block, lane and time span.
    Json leaves = Json::array();
    for (const auto& r : st.leaf_runs) {
      const auto& b = plan.leaves[r.leaf];
      leaves.push_back({b.row_begin, b.row_end, b.col_begin, b.col_end, r.lane, r.start, r.end});
    }
    all.push_back({{"stage", s.name()},
                   {"operator", s.op()},
                   {"pairs_shape", shape_name(plan.shape)},
                   {"order", plan.order == sched::PairPlan::Order::strips ? "bands" : "hilbert"},
                   {"rows", plan.rows},
                   {"cols", plan.cols},
                   {"items", st.items},
                   {"pairs", st.pairs},
                   {"leaves", st.leaves},
                   {"cache_slots", st.cache_slots},
                   {"loads", st.loads},
                   {"loaded_ahead", st.prefetched},
                   {"load_ratio", st.load_ratio()},
                   {"host_cache", {{"lookups_hit", st.hits}, {"loads", st.loads}, {"hit_rate", st.hit_rate()}, {"evictions", st.evictions}}},
                   {"device_cache",
                    {{"slots", st.device_slots},
                     {"hits", st.device_hits},
                     {"loads", st.device_loads},
                     {"hit_rate", st.device_hit_rate()},
                     {"evictions", st.device_evictions}}},
                   {"peer_cache", {{"hits", st.peer_hits}, {"misses", st.peer_misses}, {"hit_rate", st.peer_hit_rate()}}},
                   {"nodes", st.nodes},
                   {"nodes_lost", st.nodes_lost},
                   {"steals", st.steals},
                   {"load_seconds", st.load_seconds},
                   {"load_wall_seconds", st.load_wall_seconds},
                   {"compare_seconds", st.compare_seconds},
                   {"t_min_seconds", st.t_min()},
                   {"efficiency", st.efficiency()},
                   {"seconds", st.seconds},
                   {"lanes", std::move(lanes)},
                   {"leaf_runs", std::move(leaves)}});
  }
  return all;
}

}  // namespace flowd::runtime::detail
