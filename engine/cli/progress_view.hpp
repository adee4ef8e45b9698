#pragma once
// How a run looks to the person who started it: a redrawn status line on a
// terminal, periodic log lines otherwise, and a summary at the end.
#include <chrono>
#include <vector>

#include "runtime/run_types.hpp"
#include "util/log.hpp"

namespace flowd::cli {

class ProgressView {
public:
  ProgressView(Logger& log, bool enabled, std::chrono::seconds plain_interval = std::chrono::seconds(10));
  void update(const runtime::Progress& p);
  void finish(const runtime::RunReport& r);
  // Where the files went, one line per output folder: the run's last lines.
  void outputs(const runtime::RunReport& r) const;

private:
  std::string headline(const runtime::Progress& p) const;
  std::string table(const runtime::Progress& p) const;
  Logger& log_;
  bool enabled_;
  std::chrono::seconds plain_interval_;
  std::chrono::steady_clock::time_point last_plain_;
  std::vector<bool> finished_;  // stages whose finishing was logged
};

}  // namespace flowd::cli
