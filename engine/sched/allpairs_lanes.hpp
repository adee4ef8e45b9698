#pragma once
// Who computes which leaf of an all-pairs plan (sched/allpairs_plan.hpp):
// Rocket's scheduler on the flattened task tree. A subtree of the recursive
// quadrant split is a contiguous stretch of the Hilbert-ordered leaves, so a
// lane owns a range [begin, end) of them. It runs its range from the front
// (depth-first: the deepest task first, each next leaf a neighbour of the
// last, so its cached items are reused); an idle lane steals the back half
// (by pairs) of the range with the most pairs left: the largest task not yet
// begun, a compact region of the matrix of its own.
//
// A strips plan (plan_strips) is shared instead: every lane takes the next
// leaf in order, so all lanes work on one band, whose rows the cache holds.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "sched/allpairs_plan.hpp"

namespace flowd::sched {

class PairLanes {
public:
  // Lane k starts with the k-th of `lanes` stretches of equal pairs (what the
  // first round of steals from the root would give). lanes >= 1.
  PairLanes(const PairPlan& plan, std::size_t lanes);

  // The next leaf (an index into plan.leaves) for `lane`: its own next, or
  // one it stole. nullopt when every leaf has been handed out.
  std::optional<std::size_t> next(std::size_t lane);
  // The leaf next(lane) would give next from the lane's own range, without
  // taking it (a steal is not foreseen); for loading its items ahead.
  std::optional<std::size_t> peek(std::size_t lane) const;

  std::size_t lanes() const noexcept { return ranges_.size(); }
  std::uint64_t steals() const;

private:
  struct Range {
    std::size_t begin = 0, end = 0;
  };
  std::uint64_t pairs(const Range& r) const noexcept { return prefix_[r.end] - prefix_[r.begin]; }

  mutable std::mutex m_;
  bool shared_ = false;
  std::size_t cursor_ = 0;  // shared: the next leaf
  std::vector<std::uint64_t> prefix_;  // pairs in leaves [0, i)
  std::vector<Range> ranges_;
  std::uint64_t steals_ = 0;
};

}  // namespace flowd::sched
