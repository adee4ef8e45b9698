#include "cli/progress_view.hpp"

#include <algorithm>
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

// "[7.8s] 92/96 items, 11.84 items/s, ETA 0.3s": items are source items whose
// whole lineage has finished.
std::string ProgressView::headline(const runtime::Progress& p) const {
  const double t = p.elapsed.count();
  std::string s = "[" + seconds(t) + "] ";
  if (p.expected_items) s += std::to_string(p.retired_items) + "/" + std::to_string(*p.expected_items) + " items";
  else s += std::to_string(p.retired_items) + " items";
  const bool items_left = !p.expected_items || *p.expected_items > p.retired_items;
  if (t > 0.5 && p.retired_items > 0) {
    char rate[48];
    std::snprintf(rate, sizeof rate, ", %.2f items/s", static_cast<double>(p.retired_items) / t);
    s += rate;
    if (p.expected_items && items_left) {
      const double eta = t * static_cast<double>(*p.expected_items - p.retired_items) / static_cast<double>(p.retired_items);
      s += ", ETA " + seconds(eta);
    }
  }
  // A stage that is one long task of many steps (a scan, an all-pairs
  // stage): how far it is, and its own ETA once the items say nothing more.
  for (const auto& st : p.stages) {
    if (st.steps_expected == 0 || st.closed || st.steps_done >= st.steps_expected) continue;
    s += "; " + st.name + ": " + std::to_string(st.steps_done) + "/" + std::to_string(st.steps_expected) + " " +
         st.step_name;
    if (!items_left && st.steps_done > 0 && st.steps_seconds > 0.5)
      s += ", ETA " + seconds(st.steps_seconds * static_cast<double>(st.steps_expected - st.steps_done) /
                              static_cast<double>(st.steps_done));
  }
  return s;
}

// One row per stage: tasks finished, running, failed, and done once closed.
std::string ProgressView::table(const runtime::Progress& p) const {
  std::size_t name_w = 5, op_w = 2;
  for (const auto& st : p.stages) name_w = std::max(name_w, st.name.size()), op_w = std::max(op_w, st.op.size());
  std::string s;
  for (const auto& st : p.stages) {
    char row[256];
    std::snprintf(row, sizeof row, "  %-*s %-*s %8llu done", static_cast<int>(name_w), st.name.c_str(),
                  static_cast<int>(op_w), st.op.c_str(), static_cast<unsigned long long>(st.tasks_done));
    s += "\n" + std::string(row);
    if (st.running) s += ", " + std::to_string(st.running) + " running";
    if (st.failures) s += ", " + std::to_string(st.failures) + " failed";
    if (st.closed) s += " (finished)";
  }
  return s;
}

void ProgressView::update(const runtime::Progress& p) {
  if (!enabled_) return;
  if (log_.tty()) {
    // The per-stage table when the terminal has room for it and the log.
    const std::size_t rows = log_.rows();
    if (rows == 0 || p.stages.size() + 4 <= rows) log_.status(headline(p) + table(p));
    else log_.status(headline(p));
    return;
  }
  // Without a terminal, a line as each stage finishes, so that a short run
  // says something too and a long one shows where it is between the
  // periodic lines.
  finished_.resize(p.stages.size(), false);
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    const auto& st = p.stages[i];
    if (!st.closed || finished_[i]) continue;
    finished_[i] = true;
    char line[200];
    std::snprintf(line, sizeof line, "[%s] stage %s finished: %llu tasks, %.2f s busy%s", seconds(p.elapsed.count()).c_str(),
                  st.name.c_str(), static_cast<unsigned long long>(st.tasks_done), st.busy_seconds,
                  st.failures ? (", " + std::to_string(st.failures) + " failed").c_str() : "");
    log_.info(line);
  }
  const auto now = std::chrono::steady_clock::now();
  if (now - last_plain_ >= plain_interval_) {
    last_plain_ = now;
    std::string stages;
    for (const auto& st : p.stages) stages += " " + st.name + "=" + std::to_string(st.tasks_done);
    log_.info("progress " + headline(p) + "; tasks done:" + stages);
  }
}

void ProgressView::finish(const runtime::RunReport& r) {
  log_.status("");
  const auto& p = r.final;
  const char* outcome = "";
  switch (r.status) {
    case runtime::RunStatus::succeeded: outcome = "finished; outputs written"; break;
    case runtime::RunStatus::completed_with_failures: outcome = "finished with failed items; outputs written for the rest"; break;
    case runtime::RunStatus::failed:
      outcome = r.outputs_mixed ? "failed; some outputs were written (listed above)" : "failed; no output was written";
      break;
    case runtime::RunStatus::interrupted: outcome = "interrupted; no output was written"; break;
  }
  char head[160];
  std::snprintf(head, sizeof head, "%s in %s (%llu source items)", outcome, seconds(p.elapsed.count()).c_str(),
                static_cast<unsigned long long>(p.source_items));
  log_.info(head);
  bool any_gpu = false;
  for (const auto& w : r.workers) any_gpu |= sched::is_gpu_like(w.kind);
  if (r.status == runtime::RunStatus::succeeded || r.status == runtime::RunStatus::completed_with_failures) {
    // Columns as wide as their longest entry (operator names run long).
    std::size_t name_w = 5, op_w = 8;
    for (const auto& st : p.stages) name_w = std::max(name_w, st.name.size()), op_w = std::max(op_w, st.op.size());
    for (const auto& st : p.stages) {
      char row[512];
      std::string extra;
      if (any_gpu && st.on_gpu) extra += ", " + std::to_string(st.on_gpu) + " on GPUs";
      if (st.failures) extra += ", " + std::to_string(st.failures) + " failed";
      std::snprintf(row, sizeof row, "  %-*s %-*s %8llu tasks %9.2f s busy%s", static_cast<int>(name_w), st.name.c_str(),
                    static_cast<int>(op_w), st.op.c_str(), static_cast<unsigned long long>(st.tasks_done),
                    st.busy_seconds, extra.c_str());
      log_.info(row);
    }
    if (any_gpu) {
      char moved[160];
      std::snprintf(moved, sizeof moved, "  moved %.1f MB to GPUs, %.1f MB back (%s)",
                    static_cast<double>(r.bytes_to_devices) / 1e6, static_cast<double>(r.bytes_to_host) / 1e6,
                    r.gpu_note.c_str());
      log_.info(moved);
    }
  }
  if (r.status == runtime::RunStatus::completed_with_failures) {
    log_.warn(std::to_string(r.failures.size()) + " failed item(s):");
    for (const auto& f : r.failures) log_.warn("  " + f.describe());
  }
}

void ProgressView::outputs(const runtime::RunReport& r) const {
  if (r.status != runtime::RunStatus::succeeded && r.status != runtime::RunStatus::completed_with_failures) return;
  for (const auto& f : r.outputs) {
    // Files directly in the folder by name, those in sub-folders counted
    // per sub-folder: "features.h5, labels/ (4 files), overlay/ (4 files)".
    std::vector<std::string> parts;
    std::vector<std::pair<std::string, std::size_t>> folders;
    for (const auto& file : f.files) {
      const auto slash = file.find('/');
      if (slash == std::string::npos) {
        parts.push_back(file);
        continue;
      }
      const std::string sub = file.substr(0, slash);
      if (folders.empty() || folders.back().first != sub) folders.emplace_back(sub, 0);
      ++folders.back().second;
    }
    for (const auto& [sub, n] : folders) parts.push_back(sub + "/ (" + std::to_string(n) + (n == 1 ? " file)" : " files)"));
    std::string list;
    for (std::size_t i = 0; i < parts.size() && i < 6; ++i) list += (i ? ", " : "") + parts[i];
    if (parts.size() > 6) list += " and " + std::to_string(parts.size() - 6) + " more";
    log_.info("outputs in " + f.folder + "/: " + (f.files.empty() ? std::string("none (no sink wrote a file)") : list));
  }
}

}  // namespace flowd::cli
