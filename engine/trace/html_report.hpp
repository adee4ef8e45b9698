#pragma once
// The HTML run report: one self-contained page (no network, works from
// file://) that shows a run at a glance, in the spirit of Nextflow's
// -with-report and -with-timeline: a header with the run's facts, a Gantt
// timeline per worker drawn on a canvas, per-operator statistics with the
// measured (or simulated) GPU speedup, utilization per track, data movement,
// queue counters and the configuration.
//
// The numbers in the tables are computed here (summarize), so they are tested
// in C++ and the page only formats them; the page's JavaScript draws the
// timeline and the charts from the spans and counters embedded as JSON.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trace/trace.hpp"

namespace flowd::trace {

struct VariantStats {
  std::int64_t count = 0;
  std::int64_t total_ns = 0;
  double mean_ns() const noexcept { return count ? static_cast<double>(total_ns) / static_cast<double>(count) : 0.0; }
};

// One operator's spans, split by variant ("cpu", "gpu", "sim", or whatever a
// span names). Sub-tasks (spans with a parent) are a row of their own so a
// stage task and the finer tasks it spawned are never added together.
struct OperatorStats {
  std::string name;
  bool subtasks = false;
  std::map<std::string, VariantStats> variants;
  std::int64_t failed = 0;
  std::int64_t total_ns() const noexcept;
  // mean cpu / mean gpu: measured. nullopt unless both variants ran.
  std::optional<double> speedup_gpu() const;
  // mean cpu / mean sim: what the simulated GPU was charged, not a measurement.
  std::optional<double> speedup_sim() const;
};

// Busy time is the union of a track's spans, so nested or overlapping spans
// are counted once.
struct TrackUsage {
  int track = 0;  // Track::id
  std::int64_t spans = 0;
  std::int64_t busy_ns = 0;
  double utilization = 0;  // busy_ns / ReportSummary::duration_ns
};

// Copies on one copy track in one direction ("upload" = host to device,
// "download" = device to host).
struct TransferStats {
  int track = 0;  // Track::id of the copy track
  std::string direction;
  std::int64_t count = 0;
  std::uint64_t bytes = 0;
  std::int64_t busy_ns = 0;  // union of the copies' intervals
  // bytes per second while copying; 0 when no time was measured.
  double bandwidth() const noexcept;
};

struct ReportSummary {
  // RunTrace::duration_ns, or the last span's end if that is later.
  std::int64_t duration_ns = 0;
  std::int64_t tasks = 0, copies = 0, failed = 0;  // spans that are not copies, copies, failed spans
  std::vector<OperatorStats> operators;  // by name, tasks before sub-tasks
  std::vector<TrackUsage> tracks;        // in display order (see report_tracks)
  std::vector<TransferStats> transfers;  // by track, then direction
};

// The tracks in the order the report shows them: as recorded, except that a
// copy track follows the device it serves ("sim0 copy" after "sim0"), plus a
// track named "track N" for any id a span uses that no Track declares.
std::vector<Track> report_tracks(const RunTrace& t);

ReportSummary summarize(const RunTrace& t);

// Everything the page needs, as the JSON embedded in it: the config, the
// tracks, the spans in columns (strings interned per column), the counters
// per name and the summary.
Json report_data(const RunTrace& t);

// The whole page.
std::string html_report(const RunTrace& t);

// Writes html_report(t) atomically, creating parent directories; throws
// flowd::Error naming the file.
void write_html_report(const RunTrace& t, const std::filesystem::path& file);

}  // namespace flowd::trace
