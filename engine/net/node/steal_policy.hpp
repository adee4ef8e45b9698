#pragma once
// Whether a steal pays, and how many tasks it takes (docs/cluster.md
// "Runtime protocol", step 8). Pure arithmetic on what the coordinator
// knows, tested without a network; coordinator_scheduling.cpp applies it.
//
// A steal pays when an idle node can start a task sooner than its holder
// would, by more than moving it costs:
//   - the thief has an idle slot: it holds fewer tasks than it runs at
//     once. A node with every slot busy gains nothing from holding more
//     (the steals that only filled busy nodes' lookahead bounced tasks
//     between them: hundreds of steals for 64 tasks);
//   - the victim's queued tasks start one per freed slot: queued task k
//     waits for half of what runs there now plus every queued task before
//     it, spread over its slots. Moving it pays when that wait exceeds the
//     steal's round trip plus the time to pull the inputs the thief lacks
//     (and the victim holds);
//   - the thief asks for half of the tasks that pay (the victim keeps the
//     other half), and no more than it can start at once: a stolen task
//     that waited on the thief would only move the imbalance there, and it
//     could not move on (next point). A thief with several idle slots takes
//     several tasks in one steal;
//   - a task moves once: a stolen task is not stealable again, so no task
//     goes back and forth.
#include <cstdint>
#include <optional>
#include <span>

namespace flowd::net::node {

// One task a victim holds, as the coordinator sees it.
struct HeldTask {
  // Expected run time (its stage's mean so far); nullopt before a task of
  // its stage has ended.
  std::optional<double> seconds;
  // Input bytes the thief would pull beyond what the victim would: negative
  // when the thief holds more of them.
  std::int64_t extra_bytes = 0;
  // False when it moved once already or the thief cannot run it.
  bool stealable = true;
};

struct StealCosts {
  // Request, reply and the new assignment: three messages through the
  // coordinator (0.5-1 ms on loopback, measured); twice that as margin.
  double round_trip_seconds = 0.002;
  // What one pull between nodes moves per second when nothing better is
  // known: a 1 GbE link's worth, below loopback (about 1.2 GB/s,
  // benchmarks.md §6.1).
  double link_bytes_per_second = 100e6;
};

// Slots of a node holding `held` tasks that have nothing to run.
constexpr std::uint64_t idle_slots(std::uint64_t held, std::uint32_t slots) noexcept {
  return held < slots ? slots - held : 0;
}

// How many of the victim's queued tasks would start sooner on an idle node,
// by more than the move costs, and may move. `victim_tasks` are in the
// order the victim starts them (its queue is FIFO), the first
// `victim_slots` taken as running. A task without an estimate is costed at
// the mean of those with one; with no estimate at all, every queued
// stealable task counts (nothing known says otherwise, and stealing then is
// what balanced the slow-first run of benchmarks.md §7.2).
std::uint32_t tasks_that_pay(std::span<const HeldTask> victim_tasks, std::uint32_t victim_slots,
                             const StealCosts& costs = {});

// What the thief asks for: half of what pays (rounded up), at most its idle
// slots and what it asked the coordinator for (`thief_credit`).
std::uint32_t tasks_to_ask(std::uint32_t pays, std::uint64_t thief_idle_slots, std::uint64_t thief_credit);

}  // namespace flowd::net::node
