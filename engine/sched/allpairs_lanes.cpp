#include "sched/allpairs_lanes.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace flowd::sched {

PairLanes::PairLanes(const PairPlan& plan, std::size_t lanes) {
  if (lanes == 0) throw std::invalid_argument("all-pairs lanes: at least one lane");
  shared_ = plan.order == PairPlan::Order::strips;
  prefix_.assign(plan.leaves.size() + 1, 0);
  for (std::size_t i = 0; i < plan.leaves.size(); ++i)
    prefix_[i + 1] = prefix_[i] + plan.leaves[i].pairs;
  ranges_.resize(lanes);
  const std::uint64_t total = prefix_.back();
  std::size_t at = 0;
  for (std::size_t k = 0; k < lanes; ++k) {
    // The first leaf whose start reaches k+1 shares of the pairs.
    const std::uint64_t goal = total * (k + 1) / lanes;
    std::size_t end = k + 1 == lanes ? plan.leaves.size()
                                     : static_cast<std::size_t>(std::lower_bound(prefix_.begin() + at, prefix_.end(), goal) -
                                                                prefix_.begin());
    end = std::clamp(end, at, plan.leaves.size());
    ranges_[k] = {at, end};
    at = end;
  }
}

std::optional<std::size_t> PairLanes::next(std::size_t lane) {
  std::lock_guard lk(m_);
  if (shared_) {
    if (lane >= ranges_.size()) throw std::out_of_range("all-pairs lanes: no lane " + std::to_string(lane));
    if (cursor_ + 1 >= prefix_.size()) return std::nullopt;
    return cursor_++;
  }
  Range& own = ranges_.at(lane);
  if (own.begin < own.end) return own.begin++;
  // The victim: the range with the most pairs not yet begun.
  Range* victim = nullptr;
  for (auto& r : ranges_)
    if (r.begin < r.end && (!victim || pairs(r) > pairs(*victim))) victim = &r;
  if (!victim) return std::nullopt;
  // Its back half by pairs; at least one leaf, and the victim keeps its
  // front one unless that is all there is.
  const std::uint64_t half = prefix_[victim->begin] + (pairs(*victim) + 1) / 2;
  std::size_t cut = static_cast<std::size_t>(std::lower_bound(prefix_.begin() + victim->begin, prefix_.begin() + victim->end, half) -
                                             prefix_.begin());
  cut = std::clamp(cut, victim->begin + (victim->end - victim->begin > 1 ? 1 : 0), victim->end - 1);
  own = {cut, victim->end};
  victim->end = cut;
  ++steals_;
  return own.begin++;
}

std::optional<std::size_t> PairLanes::peek(std::size_t lane) const {
  std::lock_guard lk(m_);
  if (shared_) {
    if (cursor_ + 1 >= prefix_.size()) return std::nullopt;
    return cursor_;
  }
  const Range& own = ranges_.at(lane);
  if (own.begin < own.end) return own.begin;
  return std::nullopt;
}

std::uint64_t PairLanes::steals() const {
  std::lock_guard lk(m_);
  return steals_;
}

}  // namespace flowd::sched
