#include "net/node/steal_policy.hpp"

#include <algorithm>

namespace flowd::net::node {

std::uint32_t tasks_that_pay(std::span<const HeldTask> victim_tasks, std::uint32_t victim_slots,
                             const StealCosts& costs) {
  if (victim_slots == 0 || victim_tasks.size() <= victim_slots) return 0;
  double known = 0;
  std::size_t n_known = 0;
  for (const auto& t : victim_tasks)
    if (t.seconds) {
      known += *t.seconds;
      ++n_known;
    }
  const bool blind = n_known == 0;
  const double fallback = blind ? 0.0 : known / static_cast<double>(n_known);
  const auto seconds = [&](const HeldTask& t) { return t.seconds.value_or(fallback); };

  // Work ahead of the next queued task: half of what runs now (it is, on
  // average, half done), then each queued task in turn; over the slots.
  double ahead = 0;
  for (std::size_t i = 0; i < victim_slots; ++i)
    ahead += seconds(victim_tasks[i]) / 2;
  std::uint32_t pays = 0;
  for (std::size_t k = victim_slots; k < victim_tasks.size(); ++k) {
    const auto& t = victim_tasks[k];
    const double wait = ahead / victim_slots;
    const double cost = costs.round_trip_seconds + static_cast<double>(t.extra_bytes) / costs.link_bytes_per_second;
    if (t.stealable && (blind || wait > cost)) ++pays;
    ahead += seconds(t);
  }
  return pays;
}

std::uint32_t tasks_to_ask(std::uint32_t pays, std::uint64_t thief_idle_slots, std::uint64_t thief_credit) {
  const std::uint64_t half = (static_cast<std::uint64_t>(pays) + 1) / 2;
  return static_cast<std::uint32_t>(std::min({half, thief_idle_slots, thief_credit}));
}

}  // namespace flowd::net::node
