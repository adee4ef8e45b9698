#include "cli/progress_view.hpp"

#include <cmath>
#include <cstdio>

namespace flowd::cli {

namespace {
std::string seconds(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.1fs", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600, (static_cast<int>(s) / 60) % 60);
  return buf;
}
}  // namespace

ProgressView::ProgressView(Logger& log, bool enabled, std::chrono::seconds plain_interval)
    : log_(log), enabled_(enabled), plain_interval_(plain_interval), last_plain_(std::chrono::steady_clock::now()) {}

std::string ProgressView::line(const runtime::Progress& p) const {
  const double t = p.elapsed.count();
  std::string s = "[" + seconds(t) + "] ";
  if (p.expected_items) s += std::to_string(p.retired_items) + "/" + std::to_string(*p.expected_items) + " items";
  else s += std::to_string(p.retired_items) + " items";
  if (t > 0.5 && p.retired_items > 0) {
    char rate[48];
    std::snprintf(rate, sizeof rate, ", %.2f items/s", static_cast<double>(p.retired_items) / t);
    s += rate;
    if (p.expected_items && *p.expected_items > p.retired_items) {
      const double eta = t * static_cast<double>(*p.expected_items - p.retired_items) / static_cast<double>(p.retired_items);
      s += ", ETA " + seconds(eta);
    }
  }
  // Only the stages doing something: what is running now, and failures.
  std::string running, failed;
  for (const auto& st : p.stages) {
    if (st.running) running += (running.empty() ? "" : ", ") + st.name + " " + std::to_string(st.running);
    if (st.failures) failed += (failed.empty() ? "" : ", ") + st.name + " " + std::to_string(st.failures);
  }
  if (!running.empty()) s += " | running: " + running;
  if (!failed.empty()) s += " | failed: " + failed;
  return s;
}

void ProgressView::update(const runtime::Progress& p) {
  if (!enabled_) return;
  if (log_.tty()) {
    log_.status(line(p));
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (now - last_plain_ >= plain_interval_) {
    last_plain_ = now;
    log_.info("progress " + line(p));
  }
}

void ProgressView::finish(const runtime::RunReport& r) {
  log_.status("");
  const auto& p = r.final;
  const char* outcome = "";
  switch (r.status) {
    case runtime::RunStatus::succeeded: outcome = "finished; outputs written"; break;
    case runtime::RunStatus::completed_with_failures: outcome = "finished with failed items; outputs written for the rest"; break;
    case runtime::RunStatus::failed: outcome = "failed; no output was written"; break;
    case runtime::RunStatus::interrupted: outcome = "interrupted; no output was written"; break;
  }
  char head[160];
  std::snprintf(head, sizeof head, "%s in %s (%llu source items)", outcome, seconds(p.elapsed.count()).c_str(),
                static_cast<unsigned long long>(p.source_items));
  log_.info(head);
  if (r.status == runtime::RunStatus::succeeded || r.status == runtime::RunStatus::completed_with_failures) {
    for (const auto& st : p.stages) {
      char row[256];
      std::snprintf(row, sizeof row, "  %-16s %-22s %8llu tasks %9.2f s busy%s", st.name.c_str(), st.op.c_str(),
                    static_cast<unsigned long long>(st.tasks_done), st.busy_seconds,
                    st.failures ? (" " + std::to_string(st.failures) + " failed").c_str() : "");
      log_.info(row);
    }
  }
  if (r.status == runtime::RunStatus::completed_with_failures) {
    log_.warn(std::to_string(r.failures.size()) + " failed item(s):");
    for (const auto& f : r.failures) log_.warn("  " + f.describe());
  }
}

}  // namespace flowd::cli
