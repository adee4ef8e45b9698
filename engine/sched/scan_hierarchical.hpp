#pragma once
// The hierarchical prefix scan over P ranks × T lanes (the work-stealing
// prefix scan paper, §4.2–4.3), static or work-stealing:
//
//  1. each lane reduces a consecutive range of its rank's segment. Static:
//     the lane's equal share, left to right. Work stealing (Algorithm 1):
//     each lane starts at the left end of its share (the paper's start
//     positions — lane 0 at the left end, lane T−1 at the right end, the
//     others in the middle of their share — with paper_start); each grows
//     its range by one element at a time, claimed atomically, to the left
//     (res = x[pl] ⊙ res) or the right (res = res ⊙ x[pr]), toward the
//     slower neighbour when both sides have unclaimed elements (rate = busy
//     time / combines), so a fast lane takes elements a slow neighbour has
//     not reached. Refinements (docs/architecture.md, "Scan"): a lane first
//     finishes its own share, its right part first, so with equal speeds the
//     ranges stay the static shares; beyond its share, "slower" is weighed by
//     what is left — the side whose neighbour alone would need longer to
//     finish the unclaimed elements between them (gap × its rate), the
//     paper's rule when both gaps are equal;
//  2. an inclusive scan of the T lane partials (a static plan, dissemination
//     by default as in the paper);
//  3. the global scan across ranks (ScanRankLink): a rank receives the
//     prefix of the ranks before it and passes on its own;
//  4. every lane applies the received prefix to its partial prefix, in
//     parallel, and its range's results are made; the last element of the
//     range is that value, already known. Static: each lane scans its range
//     in a chain. Work stealing: the elements a lane reached growing only
//     rightwards from its start are each one independent combine that any
//     free worker takes (add_final_to), so the final phase is balanced too.
//     The first rank's lanes start as soon as their own prefix is known,
//     while the scan of the partials goes on.
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
#include <type_traits>
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
  // Where stealing lanes start. false (flowd's): every lane at the left end
  // of its share, so it takes its whole share growing rightwards and the
  // final phase makes each of those elements by one independent combine
  // (add_final_to); it steals leftwards, into its left neighbour's unclaimed
  // tail. true: the paper's — lane 0 at the left end, the last lane at the
  // right end, the others in the middle of their share, so both neighbours
  // can take from a slow lane, but the elements left of a lane's start are a
  // chain in the final phase. docs/benchmarks.md §11.3 compares them.
  bool paper_start = false;
};

// What the first half of a rank's scan leaves for the second when the two
// run as separate jobs (a cluster's rank, runtime/cluster_scan.cpp): each
// lane's range of the segment and the inclusive scan of the lane partials.
template <class T>
struct RankPartials {
  struct Lane {
    std::size_t first = 1, last = 0;  // the lane's range [first, last] of the segment; first > last: empty
    std::optional<T> prefix;          // partials of lanes 0..l combined; nullopt while all of them are empty
    std::uint32_t depth = 0;          // of prefix
    // Work stealing: where the lane started and x[start..k] for the
    // elements it reached growing only rightwards (the second half makes
    // their results independently).
    std::size_t start = 0;
    std::vector<T> right_prefix;
  };
  std::vector<Lane> lanes;
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
    const std::vector<TaskGraph::NodeId> prefix_node = add_reduce_to(g);
    const auto global = g.add_on_worker([this](const WorkerInfo& w) { global_step(w); }, o_.runs_on);
    g.precede(prefix_node[nl - 1], global);
    if (global_after) g.precede(*global_after, global);
    // The first rank receives nothing: its lanes need not wait for the
    // global step, only for their own prefix (lane l's after ⌈log2(l + 1)⌉
    // rounds of dissemination), so the lanes on the left start their final
    // phase while the partial scan goes on.
    const bool first = link_.rank() == 0;
    std::vector<TaskGraph::NodeId> apply_node(nl);
    for (std::size_t l = 0; l + 1 < nl; ++l) {
      apply_node[l] = g.add_on_worker([this, l](const WorkerInfo& w) { apply_prefix(l, w); }, o_.runs_on);
      if (!first) g.precede(global, apply_node[l]);
      g.precede(prefix_node[l], apply_node[l]);
    }
    apply_node[nl - 1] = global;
    for (std::size_t l = 0; l < nl; ++l)
      add_final_to(g, l, apply_node);
    return global;
  }

  // Phases 1 and 2. Returns, per lane, the node after which its prefix
  // (lane_prefix) is known. A rank run as two jobs runs only these in its
  // first; once the graph ran, partials() is what the second half needs.
  std::vector<TaskGraph::NodeId> add_reduce_to(TaskGraph& g) {
    const std::size_t nl = lanes_.size();
    std::vector<TaskGraph::NodeId> lane_node(nl), partial_node(partial_plan_.steps.size());
    t0_ = Clock::now();
    for (std::size_t l = 0; l < nl; ++l)
      lanes_[l].left_end = lanes_[l].right_end = static_cast<std::int64_t>(start_of(l));
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
    std::vector<TaskGraph::NodeId> prefix_node(nl);
    for (std::size_t l = 0; l < nl; ++l) prefix_node[l] = node_of(partial_plan_.result[l]);
    return prefix_node;
  }
  RankPartials<T> partials() const {
    RankPartials<T> p;
    for (std::size_t l = 0; l < lanes_.size(); ++l) {
      const OptV v = lane_prefix(l);
      const bool empty = lanes_[l].pl > lanes_[l].pr;
      typename RankPartials<T>::Lane lane{empty ? 1 : lanes_[l].pl - a_, empty ? 0 : lanes_[l].pr - a_,
                                          v ? std::optional<T>(v->value) : std::nullopt, v ? v->depth : 0, 0, {}};
      if (!empty) {
        lane.start = lanes_[l].start - a_;
        for (const auto& r : lanes_[l].right_prefix) lane.right_prefix.push_back(r.value);
      }
      p.lanes.push_back(std::move(lane));
    }
    return p;
  }
  // Second half, from what the first left (`p`, lanes as this rank's), the
  // prefix of the ranks before (`received`) and of this rank's last element
  // (`total`: received ⊙ the last lane's prefix, which the global step
  // computed): phase 4 as in one process.
  void add_finish_to(TaskGraph& g, const RankPartials<T>& p, std::optional<T> received, std::optional<T> total) {
    const std::size_t nl = lanes_.size();
    if (p.lanes.size() != nl) throw std::invalid_argument("the first half had another number of lanes");
    restored_.assign(nl, std::nullopt);
    for (std::size_t l = 0; l < nl; ++l) {
      const auto& in = p.lanes[l];
      if (in.first <= in.last && (in.last >= b_ - a_)) throw std::invalid_argument("a lane's range is outside the segment");
      lanes_[l].pl = in.first + a_;
      lanes_[l].pr = in.last + a_;
      if (in.prefix) restored_[l] = V{*in.prefix, in.depth};
      if (in.first > in.last) continue;
      if (in.start < in.first || in.start > in.last || in.right_prefix.empty() ||
          in.right_prefix.size() > in.last - in.start + 1)
        throw std::invalid_argument("a lane's start or right prefixes do not fit its range");
      lanes_[l].start = in.start + a_;
      lanes_[l].right_prefix.clear();
      for (std::size_t k = 0; k < in.right_prefix.size(); ++k)
        lanes_[l].right_prefix.push_back(V{in.right_prefix[k], static_cast<std::uint32_t>(k)});
    }
    received_ = std::move(received);
    const std::uint32_t d = restored_[nl - 1] ? restored_[nl - 1]->depth + (received_ ? 1 : 0) : 0;
    applied_[nl - 1] = total ? OptV{V{*total, d}} : OptV{};
    std::vector<TaskGraph::NodeId> apply_node(nl);
    for (std::size_t l = 0; l + 1 < nl; ++l)
      apply_node[l] = g.add_on_worker([this, l](const WorkerInfo& w) { apply_prefix(l, w); }, o_.runs_on);
    apply_node[nl - 1] = g.add_on_worker([](const WorkerInfo&) {}, o_.runs_on);
    for (std::size_t l = 0; l < nl; ++l)
      add_final_to(g, l, apply_node);
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
    // Work stealing: where the lane started, and x[start..k] for k = start,
    // start + 1, … as long as it grew only to the right: the final phase
    // makes y_k of these independently, any worker taking any (see
    // add_final_to). Elements it took after growing left are scanned in a
    // chain.
    std::size_t start = 0;
    std::vector<V> right_prefix;
    // The final phase's: y_{start-1} (nullopt: nothing before), and the next
    // element a helper takes.
    OptV before_start;
    std::atomic<std::size_t> next{0};
  };

  // Lane l's partial combined with those of the lanes before it: from phase
  // 2, or from the first half when this is the second (add_finish_to).
  OptV lane_prefix(std::size_t l) const {
    return restored_.empty() ? partial(partial_plan_.result[l]) : restored_[l];
  }

  std::size_t share_begin(std::size_t l) const noexcept { return a_ + (b_ - a_) * l / lanes_.size(); }
  std::size_t share_end(std::size_t l) const noexcept { return share_begin(l + 1); }
  // Where lane l starts stealing: the left end, the right end, or the middle
  // of its share.
  std::size_t start_of(std::size_t l) const noexcept {
    const std::size_t lo = share_begin(l), hi = share_end(l);
    if (lo == hi) return lo;
    if (!o_.paper_start) return lo;
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
      // Only while res is x[start..i]: no element left of start taken yet.
      if (!left && me.pl == me.start && i == me.start + me.right_prefix.size())
        me.right_prefix.push_back(*me.res);
    };
    if (!o_.steal) {
      for (std::size_t i = lo; i < hi; ++i)
        owner_[i - a_].store(static_cast<int>(l), std::memory_order_relaxed);
      me.pl = me.start = lo;
      me.pr = hi - 1;
      me.res = V{x_[lo], 0};
      me.right_prefix.assign(1, *me.res);
      for (std::size_t i = lo + 1; i < hi; ++i)
        grow(i, false);
      return;
    }
    const std::size_t start = start_of(l);
    if (!claim(start, static_cast<int>(l))) return;  // a neighbour got here first: this lane has no range
    me.pl = me.pr = me.start = start;
    me.res = V{x_[start], 0};
    me.right_prefix.assign(1, *me.res);
    while (true) {
      const bool left = me.pl > a_ && unclaimed(me.pl - 1);
      const bool right = me.pr + 1 < b_ && unclaimed(me.pr + 1);
      if (!left && !right) break;
      // Algorithm 1: the own share first; then toward the slower neighbour
      // when both sides are open, weighed by the unclaimed elements on each
      // side; ties (no rates yet) go right, the paper's initial step.
      bool go_left = left;
      const bool own_left = left && me.pl - 1 >= lo, own_right = right && me.pr + 1 < hi;
      if (own_left || own_right) {
        // The own share's right part first: its prefixes from the start are
        // what the final phase spreads over every worker.
        go_left = !own_right;
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

  // Phase 4. Lane l's elements left of its start are scanned in a chain
  // from the prefix before the lane; those it reached growing only
  // rightwards, x[start..k] known from phase 1, are each one independent
  // combine y_k = y_{start-1} ⊙ x[start..k] (none at all when nothing is
  // before the lane: the first lane's x[start..k] are its results); the rest
  // (taken after growing left) are a chain from the last of those. As many
  // combines as the lane's chain would take. Static: the lane makes them all
  // itself (its range is its share, all reached rightwards). Stealing: the
  // independent ones are taken by whichever workers are free (helper nodes,
  // one per element of the share, drawing from the lane's counter), so the
  // slowest lanes' final phase is spread over every worker.
  void add_final_to(TaskGraph& g, std::size_t l, const std::vector<TaskGraph::NodeId>& apply_node) {
    if (!o_.steal) {  // static: the lane makes all of its range's results itself
      const auto fin = g.add_on_worker(
          [this, l](const WorkerInfo& w) {
            scan_left(l, w);
            scan_independent(l, w);
            scan_tail(l, w);
          },
          o_.runs_on);
      g.precede(apply_node[l], fin);
      if (l) g.precede(apply_node[l - 1], fin);
      return;
    }
    const auto chain = g.add_on_worker([this, l](const WorkerInfo& w) { scan_left(l, w); }, o_.runs_on);
    g.precede(apply_node[l], chain);
    if (l) g.precede(apply_node[l - 1], chain);
    const std::size_t helpers = std::max<std::size_t>(1, share_end(l) - share_begin(l));
    for (std::size_t h = 0; h < helpers; ++h) {
      const auto help = g.add_on_worker([this, l](const WorkerInfo& w) { scan_independent(l, w); }, o_.runs_on);
      g.precede(chain, help);
    }
    const auto tail = g.add_on_worker([this, l](const WorkerInfo& w) { scan_tail(l, w); }, o_.runs_on);
    g.precede(chain, tail);
  }

  // The prefix before lane l's range: the previous lane's applied value, or
  // what the rank received.
  OptV before_lane(std::size_t l) const {
    return l ? applied_[l - 1] : (received_ ? OptV{V{*received_, 0}} : OptV{});
  }
  // y_i = before ⊙ x_i, then each next from the last, for i in [from, to);
  // returns the last value.
  OptV chain(std::size_t l, OptV before, std::size_t from, std::size_t to, const WorkerInfo& w) {
    std::uint32_t deepest = 0;
    for (std::size_t i = from; i < to; ++i) {
      before = meter_.apply(first_lane_ + l, combine_, w, before, OptV{V{x_[i], 0}});
      deepest = std::max(deepest, before->depth);
      y_[i] = before->value;
    }
    note_depth(deepest);
    return before;
  }

  void scan_left(std::size_t l, const WorkerInfo& w) {
    Lane& me = lanes_[l];
    if (me.pl > me.pr) return;
    me.before_start = chain(l, before_lane(l), me.pl, me.start, w);
    y_[me.pr] = applied_[l]->value;
    note_depth(applied_[l]->depth);
    me.next.store(me.start, std::memory_order_relaxed);
  }
  OptV independent(std::size_t l, std::size_t k, const WorkerInfo& w) {
    const Lane& me = lanes_[l];
    return meter_.apply(first_lane_ + l, combine_, w, me.before_start, OptV{me.right_prefix[k - me.start]});
  }
  void scan_independent(std::size_t l, const WorkerInfo& w) {
    Lane& me = lanes_[l];
    if (me.pl > me.pr) return;
    const std::size_t last = me.start + me.right_prefix.size() - 1;  // y_last: the tail's (or y_pr, known)
    std::uint32_t deepest = 0;
    for (std::size_t k; (k = me.next.fetch_add(1, std::memory_order_relaxed)) < last;) {
      const OptV yk = independent(l, k, w);
      deepest = std::max(deepest, yk->depth);
      y_[k] = yk->value;
    }
    note_depth(deepest);
  }
  void scan_tail(std::size_t l, const WorkerInfo& w) {
    const Lane& me = lanes_[l];
    if (me.pl > me.pr) return;
    const std::size_t last = me.start + me.right_prefix.size() - 1;
    if (last == me.pr) return;  // y_pr is known
    const OptV y_last = independent(l, last, w);
    y_[last] = y_last->value;
    note_depth(y_last->depth);
    chain(l, y_last, last + 1, me.pr, w);
  }
  void note_depth(std::uint32_t d) {
    std::lock_guard lk(depth_m_);
    depth_ = std::max(depth_, d);
  }

  // Phase 3: the prefix of every element before this rank, then this rank's
  // total (its last lane's prefix), passed on.
  void global_step(const WorkerInfo& w) {
    // The first rank's lanes read received_ meanwhile (add_to): it stays empty.
    if (link_.rank() != 0) received_ = link_.receive_prefix();
    const std::size_t last = lanes_.size() - 1;
    applied_[last] = received_ ? meter_.apply(first_lane_ + last, combine_, w, OptV{V{*received_, 0}}, lane_prefix(last))
                               : lane_prefix(last);
    link_.send_prefix(applied_[last] ? std::optional<T>(applied_[last]->value) : std::nullopt);
  }

  // Phase 4a: lane l's inclusive prefix over everything up to its range's end.
  void apply_prefix(std::size_t l, const WorkerInfo& w) {
    OptV mine = lane_prefix(l);
    applied_[l] = received_ ? meter_.apply(first_lane_ + l, combine_, w, OptV{V{*received_, 0}}, mine) : mine;
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
  std::vector<OptV> restored_;  // the second half of a rank run as two jobs: each lane's prefix
  std::vector<OptV> applied_;
  Clock::time_point t0_;
  std::mutex depth_m_;
  std::uint32_t depth_ = 0;
};

// The link of a rank run as two jobs: its global step is not in its graph.
template <class T>
class NoRanks final : public ScanRankLink<T> {
public:
  int rank() const noexcept override { return 0; }
  int ranks() const noexcept override { return 1; }
  std::optional<T> receive_prefix() override { throw std::logic_error("a rank run as two jobs has no global step"); }
  void send_prefix(std::optional<T>) override { throw std::logic_error("a rank run as two jobs has no global step"); }
};

template <class T, class C>
void fill_rank_stats(ScanStats& stats, const ScanMeter& meter, const HierarchicalOptions& o, const RankScan<T, C>& rs,
                     std::size_t n, std::chrono::steady_clock::time_point t0) {
  stats = ScanStats{};
  stats.strategy = o.steal ? ScanStrategy::work_stealing : ScanStrategy::static_hierarchical;
  stats.hierarchical = true;
  stats.stealing = o.steal;
  stats.elements = n;
  stats.steals = rs.steals();
  stats.depth = rs.depth();
  meter.report(stats, [](std::size_t i) { return "t" + std::to_string(i); });
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

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
  stats.strategy = o.steal ? ScanStrategy::work_stealing : ScanStrategy::static_hierarchical;
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

// One rank of a scan whose ranks are separate processes, as two jobs with
// the global step between them done elsewhere (runtime/cluster_scan.cpp).
// First half: the lanes' ranges over x (the rank's segment) and the scan of
// their partials. `stats` gets this half's combines and lanes ("t<lane>").
template <class T, class C, TaskSubmitter P>
requires ScanCombine<C, T> RankPartials<T> reduce_rank(std::span<const T> x, C& combine, const HierarchicalOptions& o,
                                                       P& pool, ScanStats& stats) {
  if (o.lanes < 1) throw std::invalid_argument("a rank needs at least one lane");
  if (x.empty()) throw std::invalid_argument("a rank's segment has no element");
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::optional<T>> unused;
  ScanMeter meter(static_cast<std::size_t>(o.lanes));
  detail::NoRanks<T> link;
  detail::RankScan<T, C> rs(x, 0, x.size(), unused, combine, meter, o, 0, link);
  TaskGraph g;
  rs.add_reduce_to(g);
  g.run(pool);
  detail::fill_rank_stats(stats, meter, o, rs, x.size(), t0);
  return rs.partials();
}

// Second half: y_i for every element of the segment, given the first half's
// `partials`, the prefix of every element before the segment (`received`,
// nullopt for the first rank) and of its last element (`total`).
template <class T, class C, TaskSubmitter P>
requires ScanCombine<C, T> std::vector<T> finish_rank(std::span<const T> x, const RankPartials<T>& partials,
                                                      std::type_identity_t<std::optional<T>> received,
                                                      std::type_identity_t<std::optional<T>> total, C& combine,
                                                      const HierarchicalOptions& o, P& pool, ScanStats& stats) {
  if (o.lanes < 1) throw std::invalid_argument("a rank needs at least one lane");
  if (x.empty()) throw std::invalid_argument("a rank's segment has no element");
  if (!total) throw std::invalid_argument("the prefix of a rank's last element is missing");
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::optional<T>> y(x.size());
  ScanMeter meter(static_cast<std::size_t>(o.lanes));
  detail::NoRanks<T> link;
  detail::RankScan<T, C> rs(x, 0, x.size(), y, combine, meter, o, 0, link);
  TaskGraph g;
  rs.add_finish_to(g, partials, std::move(received), std::move(total));
  g.run(pool);
  detail::fill_rank_stats(stats, meter, o, rs, x.size(), t0);
  std::vector<T> out;
  out.reserve(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!y[i]) throw std::invalid_argument("the first half's lanes do not cover element " + std::to_string(i));
    out.push_back(std::move(*y[i]));
  }
  return out;
}

}  // namespace flowd::sched
