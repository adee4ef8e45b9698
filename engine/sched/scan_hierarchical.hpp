#pragma once
// The hierarchical prefix scan over P ranks × T lanes (the work-stealing
// prefix scan paper, §4.2–4.3), static or work-stealing:
//
//  1. each lane reduces a consecutive range of its rank's segment. Static:
//     the lane's equal share, left to right. Work stealing (Algorithm 1):
//     lane 0 starts at the segment's left end, lane T−1 at its right end,
//     the others in the middle of their share; each grows its range by one
//     element at a time, claimed atomically, to the left (res = x[pl] ⊙ res)
//     or the right (res = res ⊙ x[pr]), toward the slower neighbour when
//     both sides have unclaimed elements (rate = busy time / combines), so a
//     fast lane takes elements a slow neighbour has not reached. Two
//     refinements (docs/architecture.md, "Scan"): a lane first finishes its
//     own share (only one side of it open: that side), so with equal speeds
//     the ranges stay the static shares and the final local scans stay
//     balanced; beyond its share, "slower" is weighed by what is left — the
//     side whose neighbour alone would need longer to finish the unclaimed
//     elements between them (gap × its rate), the paper's rule when both
//     gaps are equal;
//  2. an inclusive scan of the T lane partials (a static plan, dissemination
//     by default as in the paper);
//  3. the global scan across ranks (ScanRankLink): a rank receives the
//     prefix of the ranks before it and passes on its own;
//  4. every lane applies the received prefix to its partial prefix, in
//     parallel, and scans its range; the last element of the range is that
//     value, already known.
//
// Reduce-then-scan is what makes stealing possible: phase 1 only needs the
// range's total, which any order of growth gives, by associativity.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "sched/scan_combine.hpp"
#include "sched/scan_plan.hpp"
#include "sched/task_graph.hpp"

namespace flowd::sched {

// The global step's view of the other ranks. A rank calls receive_prefix()
// once, then send_prefix() once, in that order. The in-process link below
// serves ranks that are groups of lanes in one process (tests, benchmarks);
// a cluster's link carries the values between worker processes.
template <class T>
class ScanRankLink {
public:
  virtual ~ScanRankLink() = default;
  virtual int rank() const noexcept = 0;
  virtual int ranks() const noexcept = 0;
  // The inclusive scan of every element of the ranks before this one;
  // nullopt for rank 0 or when they had no elements. Blocks until it came.
  virtual std::optional<T> receive_prefix() = 0;
  // The inclusive scan up to this rank's last element, for the ranks after.
  virtual void send_prefix(std::optional<T> prefix) = 0;
};

// P ranks in one process: rank r's prefix is what rank r − 1 sent (a chain;
// a handful of ranks makes a tree not worth it).
template <class T>
class InProcessRanks {
public:
  explicit InProcessRanks(int ranks) {
    if (ranks < 1) throw std::invalid_argument("a scan needs at least one rank");
    for (int r = 0; r < ranks; ++r)
      links_.emplace_back(*this, r);
  }
  ScanRankLink<T>& link(int rank) { return links_.at(static_cast<std::size_t>(rank)); }
  int ranks() const noexcept { return static_cast<int>(links_.size()); }

private:
  class Link final : public ScanRankLink<T> {
  public:
    Link(InProcessRanks& g, int r) : g_(g), r_(r) {}
    int rank() const noexcept override { return r_; }
    int ranks() const noexcept override { return g_.ranks(); }
    std::optional<T> receive_prefix() override {
      if (r_ == 0) return std::nullopt;
      auto& prev = g_.links_[static_cast<std::size_t>(r_ - 1)];
      std::unique_lock lk(g_.m_);
      g_.cv_.wait(lk, [&] { return prev.sent_; });
      return prev.prefix_;
    }
    void send_prefix(std::optional<T> prefix) override {
      std::lock_guard lk(g_.m_);
      prefix_ = std::move(prefix);
      sent_ = true;
      g_.cv_.notify_all();
    }

  private:
    friend class InProcessRanks;
    InProcessRanks& g_;
    int r_;
    bool sent_ = false;
    std::optional<T> prefix_;
  };

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Link> links_;  // deque: links refer to the group and never move
};

struct HierarchicalOptions {
  int ranks = 1;      // in-process ranks (hierarchical_scan); a cluster's rank scans its own segment
  int lanes = 1;      // lanes (threads) per rank
  bool steal = true;  // work stealing (Algorithm 1), or static equal shares
  ScanStrategy partials = ScanStrategy::dissemination;  // the scan of a rank's T lane partials
  KindMask runs_on = cpu_only;
};

namespace detail {

// One rank's lanes, partial scan, global step and local scans, added to a
// task graph. Lives until the graph has run.
template <class T, class C>
class RankScan {
public:
  using V = Tracked<T>;
  using OptV = std::optional<V>;
  using Clock = std::chrono::steady_clock;

  // Elements [a, b) of x; y receives their results. Lanes are numbered from
  // `first_lane` in the meter.
  RankScan(std::span<const T> x, std::size_t a, std::size_t b, std::vector<std::optional<T>>& y, C& combine,
           ScanMeter& meter, const HierarchicalOptions& o, std::size_t first_lane, ScanRankLink<T>& link)
      : x_(x),
        a_(a),
        b_(b),
        y_(y),
        combine_(combine),
        meter_(meter),
        o_(o),
        first_lane_(first_lane),
        link_(link),
        lanes_(static_cast<std::size_t>(o.lanes)),
        owner_(std::make_unique<std::atomic<int>[]>(b - a)),
        partial_plan_(make_scan_plan(o.partials, static_cast<std::size_t>(o.lanes))),
        partial_values_(partial_plan_.steps.size()),
        applied_(static_cast<std::size_t>(o.lanes)) {
    for (std::size_t i = 0; i < b - a; ++i)
      owner_[i].store(-1, std::memory_order_relaxed);
  }

  // Adds this rank's nodes; `global_after`: a node the global step must
  // follow (the previous in-process rank's). Returns the global step's node.
  TaskGraph::NodeId add_to(TaskGraph& g, std::optional<TaskGraph::NodeId> global_after) {
    const std::size_t nl = lanes_.size();
    std::vector<TaskGraph::NodeId> lane_node(nl), partial_node(partial_plan_.steps.size());
    t0_ = Clock::now();
    for (std::size_t l = 0; l < nl; ++l) {
      lanes_[l].left_end = lanes_[l].right_end = static_cast<std::int64_t>(start_of(l));
    }
    for (std::size_t l = 0; l < nl; ++l)
      lane_node[l] = g.add_on_worker([this, l](const WorkerInfo& w) { reduce_range(l, w); }, o_.runs_on);
    auto node_of = [&](ScanPlan::Ref r) {
      return partial_plan_.is_input(r) ? lane_node[r] : partial_node[partial_plan_.step_of(r)];
    };
    for (std::size_t i = 0; i < partial_plan_.steps.size(); ++i) {
      const auto step = partial_plan_.steps[i];
      partial_node[i] = g.add_on_worker(
          [this, i, step](const WorkerInfo& w) {
            partial_values_[i] =
                meter_.apply(first_lane_ + slot_of(step.right), combine_, w, partial(step.left), partial(step.right));
          },
          o_.runs_on);
      g.precede(node_of(step.left), partial_node[i]);
      g.precede(node_of(step.right), partial_node[i]);
    }
    const auto global = g.add_on_worker([this](const WorkerInfo& w) { global_step(w); }, o_.runs_on);
    g.precede(node_of(partial_plan_.result[nl - 1]), global);
    if (global_after) g.precede(*global_after, global);
    std::vector<TaskGraph::NodeId> apply_node(nl);
    for (std::size_t l = 0; l + 1 < nl; ++l) {
      apply_node[l] = g.add_on_worker([this, l](const WorkerInfo& w) { apply_prefix(l, w); }, o_.runs_on);
      g.precede(global, apply_node[l]);
      g.precede(node_of(partial_plan_.result[l]), apply_node[l]);
    }
    apply_node[nl - 1] = global;
    for (std::size_t l = 0; l < nl; ++l) {
      const auto fin = g.add_on_worker([this, l](const WorkerInfo& w) { scan_range(l, w); }, o_.runs_on);
      g.precede(apply_node[l], fin);
      if (l) g.precede(apply_node[l - 1], fin);
    }
    return global;
  }

  std::uint64_t steals() const noexcept {
    std::uint64_t s = 0;
    for (const auto& l : lanes_)
      s += l.steals;
    return s;
  }
  std::uint32_t depth() const noexcept { return depth_; }

private:
  struct Lane {
    // Read by neighbours deciding where to grow (Algorithm 1's rates).
    std::atomic<bool> started{false};
    std::atomic<std::int64_t> busy_ns{0};
    std::atomic<std::int64_t> ops{0};
    std::atomic<std::int64_t> op_since_ns{0};  // start of the combine under way, 0 when none
    // The ends of its range so far (its start until it claimed one).
    std::atomic<std::int64_t> left_end{0}, right_end{0};
    // The lane's own: its range [pl, pr] (pl > pr: empty) and reduction.
    std::size_t pl = 1, pr = 0;
    OptV res;
    std::uint64_t steals = 0;
  };

  std::size_t share_begin(std::size_t l) const noexcept { return a_ + (b_ - a_) * l / lanes_.size(); }
  std::size_t share_end(std::size_t l) const noexcept { return share_begin(l + 1); }
  // Where lane l starts stealing: the left end, the right end, or the middle
  // of its share.
  std::size_t start_of(std::size_t l) const noexcept {
    const std::size_t lo = share_begin(l), hi = share_end(l);
    if (lo == hi) return lo;
    return l == 0 ? lo : l == lanes_.size() - 1 ? hi - 1 : lo + (hi - lo - 1) / 2;
  }
  std::size_t slot_of(ScanPlan::Ref r) const noexcept {
    // The lane a partial-scan value belongs to: its rightmost input.
    while (!partial_plan_.is_input(r))
      r = partial_plan_.steps[partial_plan_.step_of(r)].right;
    return r;
  }
  OptV partial(ScanPlan::Ref r) const {
    return partial_plan_.is_input(r) ? lanes_[r].res : partial_values_[partial_plan_.step_of(r)];
  }
  std::int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0_).count() + 1;
  }
  bool claim(std::size_t i, int lane) {
    int free = -1;
    return owner_[i - a_].compare_exchange_strong(free, lane, std::memory_order_acq_rel);
  }
  bool unclaimed(std::size_t i) const { return owner_[i - a_].load(std::memory_order_acquire) < 0; }

  // Seconds per combine of lane j so far, counting the combine under way; a
  // lane not started yet is the slowest of all.
  double rate(std::size_t j) const {
    const Lane& n = lanes_[j];
    if (!n.started.load(std::memory_order_acquire)) return std::numeric_limits<double>::infinity();
    const std::int64_t since = n.op_since_ns.load(std::memory_order_acquire);
    const std::int64_t busy = n.busy_ns.load(std::memory_order_acquire) + (since ? now_ns() - since : 0);
    return static_cast<double>(busy) /
           static_cast<double>(std::max<std::int64_t>(1, n.ops.load(std::memory_order_acquire)));
  }

  // Phase 1.
  void reduce_range(std::size_t l, const WorkerInfo& w) {
    Lane& me = lanes_[l];
    me.started.store(true, std::memory_order_release);
    const std::size_t lo = share_begin(l), hi = share_end(l);
    if (lo == hi) return;
    auto grow = [&](std::size_t i, bool left) {
      const V xi{x_[i], 0};
      me.op_since_ns.store(now_ns(), std::memory_order_release);
      const auto t = Clock::now();
      me.res = left ? meter_.apply(first_lane_ + l, combine_, w, xi, *me.res)
                    : meter_.apply(first_lane_ + l, combine_, w, *me.res, xi);
      me.busy_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count(),
                           std::memory_order_acq_rel);
      me.ops.fetch_add(1, std::memory_order_acq_rel);
      me.op_since_ns.store(0, std::memory_order_release);
      if (i < lo || i >= hi) ++me.steals;
    };
    if (!o_.steal) {
      for (std::size_t i = lo; i < hi; ++i)
        owner_[i - a_].store(static_cast<int>(l), std::memory_order_relaxed);
      me.pl = lo;
      me.pr = hi - 1;
      me.res = V{x_[lo], 0};
      for (std::size_t i = lo + 1; i < hi; ++i)
        grow(i, false);
      return;
    }
    const std::size_t start = start_of(l);
    if (!claim(start, static_cast<int>(l))) return;  // a neighbour got here first: this lane has no range
    me.pl = me.pr = start;
    me.res = V{x_[start], 0};
    while (true) {
      const bool left = me.pl > a_ && unclaimed(me.pl - 1);
      const bool right = me.pr + 1 < b_ && unclaimed(me.pr + 1);
      if (!left && !right) break;
      // Algorithm 1: the own share first; then toward the slower neighbour
      // when both sides are open, weighed by the unclaimed elements on each
      // side; ties (no rates yet) go right, the paper's initial step.
      bool go_left = left;
      const bool own_left = left && me.pl - 1 >= lo, own_right = right && me.pr + 1 < hi;
      if (own_left != own_right) {
        go_left = own_left;
      } else if (left && right) {
        const auto gap_left = std::max<std::int64_t>(
            1, static_cast<std::int64_t>(me.pl) - 1 - lanes_[l - 1].right_end.load(std::memory_order_acquire));
        const auto gap_right = std::max<std::int64_t>(
            1, lanes_[l + 1].left_end.load(std::memory_order_acquire) - 1 - static_cast<std::int64_t>(me.pr));
        go_left = static_cast<double>(gap_left) * rate(l - 1) > static_cast<double>(gap_right) * rate(l + 1);
      }
      const std::size_t i = go_left ? me.pl - 1 : me.pr + 1;
      if (!claim(i, static_cast<int>(l))) continue;
      (go_left ? me.pl : me.pr) = i;
      (go_left ? me.left_end : me.right_end).store(static_cast<std::int64_t>(i), std::memory_order_release);
      grow(i, go_left);
    }
  }

  // Phase 3: the prefix of every element before this rank, then this rank's
  // total (its last lane's prefix), passed on.
  void global_step(const WorkerInfo& w) {
    received_ = link_.receive_prefix();
    const std::size_t last = lanes_.size() - 1;
    applied_[last] = received_ ? meter_.apply(first_lane_ + last, combine_, w, OptV{V{*received_, 0}},
                                              partial(partial_plan_.result[last]))
                               : partial(partial_plan_.result[last]);
    link_.send_prefix(applied_[last] ? std::optional<T>(applied_[last]->value) : std::nullopt);
  }

  // Phase 4a: lane l's inclusive prefix over everything up to its range's end.
  void apply_prefix(std::size_t l, const WorkerInfo& w) {
    OptV mine = partial(partial_plan_.result[l]);
    applied_[l] = received_ ? meter_.apply(first_lane_ + l, combine_, w, OptV{V{*received_, 0}}, mine) : mine;
  }

  // Phase 4b: the lane's range, from the prefix before it (the previous
  // lane's applied value, or what the rank received); its last element is
  // applied_[l], already known.
  void scan_range(std::size_t l, const WorkerInfo& w) {
    const Lane& me = lanes_[l];
    if (me.pl > me.pr) return;
    OptV before = l ? applied_[l - 1] : (received_ ? OptV{V{*received_, 0}} : OptV{});
    std::uint32_t deepest = applied_[l]->depth;
    for (std::size_t i = me.pl; i < me.pr; ++i) {
      before = meter_.apply(first_lane_ + l, combine_, w, before, OptV{V{x_[i], 0}});
      deepest = std::max(deepest, before->depth);
      y_[i] = before->value;
    }
    y_[me.pr] = applied_[l]->value;
    std::lock_guard lk(depth_m_);
    depth_ = std::max(depth_, deepest);
  }

  std::span<const T> x_;
  std::size_t a_, b_;
  std::vector<std::optional<T>>& y_;
  C& combine_;
  ScanMeter& meter_;
  const HierarchicalOptions& o_;
  std::size_t first_lane_;
  ScanRankLink<T>& link_;
  std::deque<Lane> lanes_;                     // deque: atomics do not move
  std::unique_ptr<std::atomic<int>[]> owner_;  // per element of [a, b): the lane that claimed it, −1 none
  ScanPlan partial_plan_;
  std::vector<OptV> partial_values_;
  std::optional<T> received_;
  std::vector<OptV> applied_;
  Clock::time_point t0_;
  std::mutex depth_m_;
  std::uint32_t depth_ = 0;
};

}  // namespace detail

// The hierarchical scan of x over o.ranks in-process ranks of o.lanes lanes
// each (rank r takes the r-th of o.ranks equal segments), on `pool`. Fills
// `stats` (lanes named "r<rank>.t<lane>"). Rethrows the first exception a
// combine threw.
template <class T, class C, TaskSubmitter P>
requires ScanCombine<C, T> std::vector<T> hierarchical_scan(std::span<const T> x, C& combine,
                                                            const HierarchicalOptions& o, P& pool, ScanStats& stats) {
  if (o.ranks < 1 || o.lanes < 1)
    throw std::invalid_argument("a hierarchical scan needs at least one rank and one lane");
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = x.size(), P_ = static_cast<std::size_t>(o.ranks);
  std::vector<std::optional<T>> y(n);
  ScanMeter meter(P_ * static_cast<std::size_t>(o.lanes));  // every lane reported, idle ones too
  InProcessRanks<T> links(o.ranks);
  std::deque<detail::RankScan<T, C>> ranks;
  TaskGraph g;
  std::optional<TaskGraph::NodeId> previous;
  for (std::size_t r = 0; r < P_; ++r) {
    auto& rs = ranks.emplace_back(x, n * r / P_, n * (r + 1) / P_, y, combine, meter, o,
                                  r * static_cast<std::size_t>(o.lanes), links.link(static_cast<int>(r)));
    previous = rs.add_to(g, previous);
  }
  g.run(pool);

  stats = ScanStats{};
  stats.strategy = ScanStrategy::work_stealing;
  stats.hierarchical = true;
  stats.stealing = o.steal;
  stats.elements = n;
  stats.ranks = static_cast<std::uint32_t>(o.ranks);
  for (const auto& rs : ranks) {
    stats.steals += rs.steals();
    stats.depth = std::max(stats.depth, rs.depth());
  }
  meter.report(stats, [&o](std::size_t i) {
    return "r" + std::to_string(i / static_cast<std::size_t>(o.lanes)) + ".t" +
           std::to_string(i % static_cast<std::size_t>(o.lanes));
  });
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<T> out;
  out.reserve(n);
  for (auto& v : y)
    out.push_back(std::move(*v));
  return out;
}

}  // namespace flowd::sched
