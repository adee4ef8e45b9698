#include "runtime/allpairs_job.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include "runtime/allpairs_gpu.hpp"
#include "runtime/allpairs_pairs.hpp"
#include "runtime/hosted_job.hpp"
#include "runtime/scan_combiner.hpp"

namespace flowd::runtime::detail {

sched::ItemCache<Item>& AllPairsNodeCache::get(std::size_t slots) {
  std::lock_guard lk(m_);
  if (!cache_) cache_ = std::make_unique<sched::ItemCache<Item>>(std::max<std::size_t>(slots, 1));
  return *cache_;
}

void AllPairsNodeCache::loading(std::uint64_t item, const std::string& name, const Share& share) {
  if (!share) return;
  ItemMeta meta;
  meta.key = name;
  meta.attrs[peer_loading_attr] = true;
  std::lock_guard lk(m_);
  share(name, std::make_shared<const Item>(Item{std::move(meta), {}}));
  loading_[item] = name;
}

void AllPairsNodeCache::abandon(std::uint64_t item, const std::string& name, const Share& share) {
  if (!share) return;
  std::lock_guard lk(m_);
  if (loading_.erase(item) > 0) share(name, nullptr);
}

void AllPairsNodeCache::serve(std::uint64_t item, const std::string& name, const Item& value, const Share& share) {
  if (!share) return;
  std::lock_guard lk(m_);
  loading_.erase(item);
  auto held = cache_ ? cache_->index.ready_keys() : std::vector<std::uint64_t>{};
  std::sort(held.begin(), held.end());
  for (auto it = served_.begin(); it != served_.end();) {
    if (it->first != item && !std::binary_search(held.begin(), held.end(), it->first)) {
      share(it->second, nullptr);
      it = served_.erase(it);
    } else {
      ++it;
    }
  }
  share(name, std::make_shared<const Item>(value));
  served_[item] = name;
}

std::string peer_cache_name(const std::string& stage, std::uint64_t item) {
  return "flowd.allpairs/" + stage + "/" + std::to_string(item);
}

namespace {

sched::PairShape shape_of(const std::string& name) {
  if (name == "triangle") return sched::PairShape::triangle;
  if (name == "triangle-with-diagonal") return sched::PairShape::triangle_with_diagonal;
  if (name == "rectangle") return sched::PairShape::rectangle;
  throw Error("unknown pair shape '" + name + "'");
}

class AllPairsJobTask final : public HostedJob {
public:
  AllPairsJobTask(TaskRunner& runner, Stage& s, AllPairsNodeCache& cache, std::string key, AllPairsJob job,
                  std::function<void(HostedResult)> done)
      : HostedJob(runner, s, std::move(key), std::move(done)), cache_(cache), job_(std::move(job)) {}

private:
  Outputs compute(sched::TaskEnv& env) override {
    const Json& spec = job_.spec;
    sched::PairPlan plan;
    plan.shape = shape_of(spec.at("shape").get<std::string>());
    const std::string order = spec.value("order", "hilbert");
    if (order != "hilbert" && order != "bands") throw Error("the job names an unknown plan order '" + order + "'");
    plan.order = order == "bands" ? sched::PairPlan::Order::strips : sched::PairPlan::Order::hilbert;
    plan.rows = spec.at("rows").get<std::uint32_t>();
    plan.cols = spec.at("cols").get<std::uint32_t>();
    for (const auto& l : spec.at("leaves")) {
      sched::PairBlock b{l.at(0).get<std::uint32_t>(), l.at(1).get<std::uint32_t>(), l.at(2).get<std::uint32_t>(),
                         l.at(3).get<std::uint32_t>(), 0, 0};
      if (b.row_end > plan.rows || b.col_end > plan.cols || b.row_begin >= b.row_end || b.col_begin >= b.col_end)
        throw Error("the job names a leaf outside the " + std::to_string(plan.rows) + " x " + std::to_string(plan.cols) +
                    " matrix");
      b.pairs = sched::pairs_in(plan.shape, b.row_begin, b.row_end, b.col_begin, b.col_end);
      plan.total_pairs += b.pairs;
      plan.leaves.push_back(b);
    }
    const auto& items = spec.at("items");
    const auto& keys = spec.at("keys");
    if (keys.size() != items.size()) throw Error("the job names " + std::to_string(keys.size()) + " keys for " +
                                                 std::to_string(items.size()) + " items");
    std::unordered_map<std::uint64_t, std::size_t> local;
    for (std::size_t i = 0; i < items.size(); ++i) local[items[i].get<std::uint64_t>()] = i;
    std::unordered_set<std::size_t> hinted;  // items with peers to ask
    for (const auto& h : spec.value("peer_cache", Json::array())) hinted.insert(h.at(0).get<std::size_t>());
    const std::uint64_t col_base = plan.shape == sched::PairShape::rectangle ? plan.rows : 0;
    const std::uint64_t n_items = plan.shape == sched::PairShape::rectangle ? std::uint64_t{plan.rows} + plan.cols : plan.rows;
    auto local_of = [&](std::uint64_t item) {
      const auto it = local.find(item);
      if (it == local.end()) throw Error("the job's leaves need item " + std::to_string(item) + ", which it does not name");
      return it->second;
    };
    const std::string stage = s_.name();
    const auto& op = static_cast<const AllPairs&>(*s_.node->op);
    const std::vector<std::string> names = op.scores();

    // The node's GPUs run lanes with caches of their own (made per job: a
    // copy up from the kept host cache is cheap).
    const auto slots = spec.at("cache_items").get<std::size_t>();
    AllPairsGpuLanes gpus(*s_.node, runner_.workers(), spec.value("gpu_cache_items", std::size_t{0}),
                          slots ? slots : static_cast<std::size_t>(n_items));
    std::atomic<std::uint64_t> loads{0}, peer_hits{0}, peer_misses{0};
    // --keep-going: what cannot be loaded is recorded, not thrown, and what
    // failed on other nodes already is not tried again.
    const bool keep_going = spec.value("keep_going", false);
    FailedLoads failed, failed_here;
    for (const auto& f : spec.value("failed_items", Json::array())) failed.add(f.get<std::uint64_t>(), {});
    auto load = [&](const sched::WorkerInfo& w, std::uint64_t item, bool on_lane) {
      const std::size_t i = local_of(item);
      const std::string key = keys[i].get<std::string>();
      if (keep_going && (failed.contains(item) || failed_here.contains(item))) return failed_load_marker(key);
      const std::string served_as = peer_cache_name(stage, item);
      Item result;
      bool marked = false;
      const Outcome lo = s_.call(runner_.trace(), key, [&] {
        if (runner_.stopping()) throw Error("the node is stopping");
        if (job_.from_peer && hinted.contains(i)) {
          if (auto got = job_.from_peer(i)) {
            result = std::move(*got);
            ++peer_hits;
            return;
          }
          ++peer_misses;
        }
        cache_.loading(item, served_as, job_.share);
        marked = true;
        result = gpus.load(w, job_.element(i), on_lane, runner_.log(), runner_.stop_flag());
        ++loads;
      });
      runner_.trace_task(s_.op(), stage, w, key, "load", lo);
      if (!lo.ok) {
        if (marked) cache_.abandon(item, served_as, job_.share);
        if (keep_going && !runner_.stopping()) {
          failed_here.add(item, {key, lo.error});
          return failed_load_marker(key);
        }
        throw ItemError(lo.key, lo.error);
      }
      cache_.serve(item, served_as, result, job_.share);
      return result;
    };
    std::vector<LaneRows> by_lane;
    auto compare = [&](const sched::WorkerInfo& w, std::size_t lane, std::uint32_t i, std::uint32_t j,
                       const Item& a, const Item& b) {
      if (is_failed_load(a) || is_failed_load(b)) return;
      gpus.compare(w, runner_.log(), runner_.stop_flag(), names.size(), by_lane[lane], i, j, a, b,
                   keys[local_of(i)].get<std::string>(), keys[local_of(col_base + j)].get<std::string>());
    };

    sched::AllPairsOptions o;
    o.lanes = static_cast<std::size_t>(scan_lanes(runner_, gpus.kinds()));
    o.runs_on = gpus.kinds();
    o.max_loads = spec.at("max_loads").get<std::size_t>();
    o.prefetch = spec.at("load_ahead").get<bool>();
    by_lane.resize(o.lanes);
    // All items (0), but never fewer than the two each lane pins.
    auto& cache = cache_.get(slots ? slots : std::max(static_cast<std::size_t>(n_items), 2 * o.lanes));
    HelpingPool pool(runner_, env.worker());
    sched::AllPairsStats st;
    sched::run_allpairs<Item>(plan, o, load, compare, pool, st, &cache, gpus.near());

    Outputs out;
    Item scores{ItemMeta{}, Value(pair_table(by_lane, names))};
    scores.meta.key = key_;
    out.emplace_back(0, std::move(scores));
    Json leaf_runs = Json::array();
    for (const auto& run : st.leaf_runs) leaf_runs.push_back({run.leaf, run.lane, run.start, run.end});
    Json record = {{"loads", loads.load()},
                   {"peer_hits", peer_hits.load()},
                   {"peer_misses", peer_misses.load()},
                   {"hits", st.hits},
                   {"evictions", st.evictions},
                   {"device_hits", st.device_hits},
                   {"device_loads", st.device_loads},
                   {"device_evictions", st.device_evictions},
                   {"device_slots", st.device_slots},
                   {"prefetched", st.prefetched},
                   {"steals", st.steals},
                   {"cache_slots", cache.index.slots()},
                   {"load_seconds", st.load_seconds},
                   {"load_wall_seconds", st.load_wall_seconds},
                   {"compare_seconds", st.compare_seconds},
                   {"seconds", st.seconds},
                   {"lane_names", st.lane_names},
                   {"lane_pairs", st.lane_pairs},
                   {"lane_busy_seconds", st.lane_busy_seconds},
                   {"leaf_runs", std::move(leaf_runs)},
                   {"cached", cache.index.ready_keys()}};
    if (!failed_here.empty()) {
      Json list = Json::array();
      for (const auto& [item, f] : failed_here.all()) list.push_back({item, f.key, f.error});
      record["failed"] = std::move(list);
    }
    ItemMeta meta;
    meta.key = key_ + "/record";
    out.emplace_back(0, Item{std::move(meta), Value(std::move(record))});
    return out;
  }

  AllPairsNodeCache& cache_;
  AllPairsJob job_;
};

}  // namespace

sched::TaskPtr make_allpairs_job(TaskRunner& runner, Stage& s, AllPairsNodeCache& cache, std::string key,
                                 AllPairsJob job, std::function<void(HostedResult)> done) {
  return std::make_unique<AllPairsJobTask>(runner, s, cache, std::move(key), std::move(job), std::move(done));
}

}  // namespace flowd::runtime::detail
