#pragma once
// The ready-queue policies a run can use (RunOptions::scheduler). The runtime
// owns the list and the command line asks it, so a policy is added here only.
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "sched/ready_queue.hpp"

namespace flowd::runtime {

// Their names, the default first: pats, fcfs, heft.
std::span<const std::string_view> schedulers() noexcept;

// Why `name` names no policy ("unknown scheduler 'x'; available: pats, fcfs,
// heft"), or nothing when it names one.
std::optional<std::string> scheduler_problem(std::string_view name);

// The queue of policy `name`. `locality` and `transfer_impact` tune PATS's
// data-locality rule. Throws flowd::Error with scheduler_problem's message.
std::unique_ptr<sched::ReadyQueue> make_queue(std::string_view name, bool locality, double transfer_impact);

}  // namespace flowd::runtime
