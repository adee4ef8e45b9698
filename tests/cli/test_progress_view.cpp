// What a person sees of a run (cli/progress_view.cpp, issue 38): a scan's
// or all-pairs stage's own progress and ETA once every item is in, a line as
// each stage finishes when stderr is no terminal, a summary whose columns
// hold for long names, and the last lines saying where the outputs went.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "cli/progress_view.hpp"

using namespace flowd;

namespace {

// A Logger writing into memory.
struct Captured {
  char* buf = nullptr;
  std::size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  ~Captured() {
    std::fclose(f);
    std::free(buf);
  }
  std::string text() {
    std::fflush(f);
    return std::string(buf, size);
  }
};

runtime::StageProgress stage(const std::string& name, const std::string& op, bool closed) {
  runtime::StageProgress s;
  s.name = name;
  s.op = op;
  s.tasks_done = 96;
  s.closed = closed;
  return s;
}

runtime::Progress registration_tail() {
  runtime::Progress p;
  p.elapsed = std::chrono::seconds(10);
  p.retired_items = p.source_items = 96;
  p.expected_items = 96;
  p.stages = {stage("frames", "io.read_images", true), stage("pairwise", "registration.pairwise", true),
              stage("align", "registration.compose", false), stage("write", "registration.write", false)};
  p.stages[2].steps_done = 40;
  p.stages[2].steps_expected = 95;
  p.stages[2].steps_seconds = 4.0;
  p.stages[2].step_name = "combines";
  return p;
}

}  // namespace

// The registration's last seconds read "96/96 items" and nothing more.
TEST(ProgressView, AScanSaysItsCombinesAndItsOwnEtaOnceEveryItemIsIn) {
  Captured out;
  Logger log(out.f, true);
  cli::ProgressView view(log, true);
  view.update(registration_tail());
  const std::string shown = out.text();
  // 55 combines left at 10 per second.
  EXPECT_NE(shown.find("96/96 items"), std::string::npos) << shown;
  EXPECT_NE(shown.find("align: 40/95 combines, ETA 5.5s"), std::string::npos) << shown;
}

TEST(ProgressView, WithoutATerminalEachStageSaysWhenItFinishes) {
  Captured out;
  Logger log(out.f, false);
  cli::ProgressView view(log, true, std::chrono::seconds(3600));
  auto p = registration_tail();
  view.update(p);
  view.update(p);  // once each
  p.stages[2].closed = true;
  view.update(p);
  const std::string text = out.text();
  for (const char* s : {"stage frames finished: 96 tasks", "stage pairwise finished", "stage align finished"}) {
    const auto at = text.find(s);
    EXPECT_NE(at, std::string::npos) << s << "\n" << text;
    EXPECT_EQ(text.find(s, at + 1), std::string::npos) << s << " twice\n" << text;
  }
  EXPECT_EQ(text.find("stage write finished"), std::string::npos) << text;
}

TEST(ProgressView, TheSummarysColumnsHoldForLongNames) {
  Captured out;
  Logger log(out.f, false);
  cli::ProgressView view(log, true);
  runtime::RunReport r;
  r.final = registration_tail();
  r.final.stages[1].name = "a_stage_with_a_name_longer_than_sixteen";
  r.final.stages[2].op = "registration.compose_with_a_long_operator_name";
  view.finish(r);
  const std::string text = out.text();
  // Every row's "tasks" and "busy" at the same column (the lines share a
  // timestamp's width).
  std::size_t tasks_at = std::string::npos, busy_at = std::string::npos, rows = 0;
  for (std::size_t at = 0; (at = text.find(" tasks ", at)) != std::string::npos; ++at) {
    const std::size_t line = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
    const std::size_t busy = text.find(" s busy", at) - line;
    if (rows++ == 0) tasks_at = at - line, busy_at = busy;
    EXPECT_EQ(at - line, tasks_at) << text;
    EXPECT_EQ(busy, busy_at) << text;
  }
  EXPECT_EQ(rows, 4u) << text;
}

TEST(ProgressView, TheLastLinesSayWhereTheOutputsWent) {
  Captured out;
  Logger log(out.f, false);
  cli::ProgressView view(log, true);
  runtime::RunReport r;
  r.outputs = {{"out/nuclei", {"features.h5", "labels/a.png", "labels/b.png", "overlay/a.png", "overlay/b.png"}}};
  view.outputs(r);
  EXPECT_NE(out.text().find("outputs in out/nuclei/: features.h5, labels/ (2 files), overlay/ (2 files)"),
            std::string::npos)
      << out.text();
  r.status = runtime::RunStatus::failed;
  Captured none;
  Logger quiet(none.f, false);
  cli::ProgressView(quiet, true).outputs(r);
  EXPECT_EQ(none.text(), "");
}
