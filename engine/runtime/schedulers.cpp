#include "runtime/schedulers.hpp"

#include <array>

#include "flowd/error.hpp"
#include "sched/fcfs_queue.hpp"
#include "sched/heft_queue.hpp"
#include "sched/pats_queue.hpp"

namespace flowd::runtime {

namespace {

using QueuePtr = std::unique_ptr<sched::ReadyQueue>;

struct Policy {
  std::string_view name;
  QueuePtr (*make)(bool locality, double transfer_impact);
};

constexpr std::array<Policy, 3> policies{{
    {"pats", [](bool locality, double transfer_impact) -> QueuePtr {
       return std::make_unique<sched::PatsQueue>(sched::PatsOptions{locality, transfer_impact});
     }},
    {"fcfs", [](bool, double) -> QueuePtr { return std::make_unique<sched::FcfsQueue>(); }},
    {"heft", [](bool, double) -> QueuePtr { return std::make_unique<sched::HeftQueue>(); }},
}};

constexpr auto names = [] {
  std::array<std::string_view, policies.size()> n{};
  for (std::size_t i = 0; i < policies.size(); ++i) n[i] = policies[i].name;
  return n;
}();

}  // namespace

std::span<const std::string_view> schedulers() noexcept { return names; }

std::optional<std::string> scheduler_problem(std::string_view name) {
  for (const auto& p : policies)
    if (p.name == name) return std::nullopt;
  std::string available;
  for (const auto& n : names) available += (available.empty() ? "" : ", ") + std::string(n);
  return "unknown scheduler '" + std::string(name) + "'; available: " + available;
}

QueuePtr make_queue(std::string_view name, bool locality, double transfer_impact) {
  for (const auto& p : policies)
    if (p.name == name) return p.make(locality, transfer_impact);
  throw Error(*scheduler_problem(name));
}

}  // namespace flowd::runtime
