#pragma once
// The prefix-scan strategies a scan stage can use (docs/workflow-format.md,
// "Scan stages"), their workflow names, and what a scan reports.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flowd::sched {

// sequential: one chain. dissemination (Hillis–Steele), blelloch (up and
// down sweep), ladner_fischer (P_0): static plans of combines run as a task
// DAG. work_stealing: the hierarchical scan whose lanes grow their ranges
// toward slower neighbours (the paper's Algorithm 1). static_hierarchical:
// the same hierarchy with equal shares and no stealing, the baseline the
// paper measures stealing against.
enum class ScanStrategy : std::uint8_t {
  sequential,
  dissemination,
  blelloch,
  ladner_fischer,
  work_stealing,
  static_hierarchical
};
// The strategies run as a hierarchy of ranks and lanes.
constexpr bool is_hierarchical(ScanStrategy s) noexcept {
  return s == ScanStrategy::work_stealing || s == ScanStrategy::static_hierarchical;
}

// The workflow's names: sequential | dissemination | blelloch | ladner-fischer
// | work-stealing | static-hierarchical | auto (= work-stealing). nullopt for anything else.
std::optional<ScanStrategy> parse_scan_strategy(std::string_view name) noexcept;
std::string_view name_of(ScanStrategy s) noexcept;
// Every name parse_scan_strategy accepts, for messages and `flowd inspect`.
std::string_view scan_strategy_names() noexcept;

// What one scan did. Lanes are the threads (hierarchical scans) or the
// workers (static plans) that ran combines, in lane order; steals counts
// elements a work-stealing lane took from a neighbour's static segment.
struct ScanStats {
  ScanStrategy strategy = ScanStrategy::sequential;
  bool hierarchical = false;  // per-lane ranges, partial scan, global scan, local scans
  bool stealing = false;      // hierarchical: lanes grew their ranges (false: the static baseline)
  std::uint64_t elements = 0;
  std::uint64_t combines = 0;
  std::uint32_t depth = 0;  // longest chain of combines the result depends on
  std::uint64_t steals = 0;
  std::uint32_t ranks = 1;
  std::vector<double> lane_busy_seconds;
  std::vector<std::uint64_t> lane_ops;
  std::vector<std::string> lane_names;  // "cpu0", "r1.t3"
  double seconds = 0;                   // wall time of the whole scan
};

// What a report calls the scan that made `stats`: the strategy's name, or
// "static-hierarchical" for the hierarchical scan without stealing.
std::string_view label_of(const ScanStats& stats) noexcept;

}  // namespace flowd::sched
