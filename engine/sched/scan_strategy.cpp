#include "sched/scan_strategy.hpp"

namespace flowd::sched {

std::optional<ScanStrategy> parse_scan_strategy(std::string_view name) noexcept {
  if (name == "sequential") return ScanStrategy::sequential;
  if (name == "dissemination") return ScanStrategy::dissemination;
  if (name == "blelloch") return ScanStrategy::blelloch;
  if (name == "ladner-fischer") return ScanStrategy::ladner_fischer;
  if (name == "work-stealing" || name == "auto") return ScanStrategy::work_stealing;
  if (name == "static-hierarchical") return ScanStrategy::static_hierarchical;
  return std::nullopt;
}

std::string_view name_of(ScanStrategy s) noexcept {
  switch (s) {
    case ScanStrategy::sequential: return "sequential";
    case ScanStrategy::dissemination: return "dissemination";
    case ScanStrategy::blelloch: return "blelloch";
    case ScanStrategy::ladner_fischer: return "ladner-fischer";
    case ScanStrategy::work_stealing: return "work-stealing";
    case ScanStrategy::static_hierarchical: return "static-hierarchical";
  }
  return "?";
}

std::string_view label_of(const ScanStats& stats) noexcept {
  if (stats.hierarchical) return stats.stealing ? "work-stealing" : "static-hierarchical";
  return name_of(stats.strategy);
}

std::string_view scan_strategy_names() noexcept {
  return "sequential, dissemination, blelloch, ladner-fischer, work-stealing, static-hierarchical, auto";
}

}  // namespace flowd::sched
