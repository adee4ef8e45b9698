// The HTML run report (engine/trace/html_report) and the Chrome trace: the
// numbers the report computes, the page's safety with hostile names, and,
// where Chromium is installed, what the page's JavaScript actually draws.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>

#include "flowd/error.hpp"
#include "support/helpers.hpp"
#include "trace/chrome_trace.hpp"
#include "trace/html_report.hpp"
#include "trace/recorder.hpp"

namespace flowd::trace {
namespace {

namespace fs = std::filesystem;
using test::scratch;
using test::slurp;

constexpr std::int64_t ms = 1'000'000;

Span task(int track, std::string op, std::string stage, std::string key, std::string variant, std::int64_t t0,
          std::int64_t t1) {
  Span s;
  s.track = track;
  s.name = std::move(op);
  s.stage = std::move(stage);
  s.key = std::move(key);
  s.variant = std::move(variant);
  s.start_ns = t0;
  s.end_ns = t1;
  return s;
}

Span copy(int track, bool upload, std::string key, std::int64_t t0, std::int64_t t1, std::uint64_t bytes) {
  Span s = task(track, upload ? "upload" : "download", "", std::move(key), "copy", t0, t1);
  s.bytes = bytes;
  return s;
}

// The JSON between <script type="application/json" id="flowd-data"> and the
// first </script> after it: exactly what a browser hands to JSON.parse.
Json embedded_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"flowd-data\">";
  const auto a = html.find(open);
  EXPECT_NE(a, std::string::npos);
  if (a == std::string::npos) return nullptr;
  const auto b = html.find("</script>", a + open.size());
  EXPECT_NE(b, std::string::npos);
  return Json::parse(html.substr(a + open.size(), b - a - open.size()));
}

// A small run by hand: two CPU workers, a simulated GPU with its copy track,
// and a span on a track nobody declared.
RunTrace small_trace() {
  RunTrace t;
  t.tracks = {{0, "cpu0", "cpu", false}, {1003, "sim0 copy", "copy", true}, {1, "cpu1", "cpu", false}, {3, "sim0", "sim_gpu", true}};
  // image.blur: cpu 10, 20, 30 ms (mean 20); sim 5, 5 ms (mean 5) -> simulated speedup 4.
  t.spans.push_back(task(0, "image.blur", "blur", "a", "cpu", 0, 10 * ms));
  t.spans.push_back(task(0, "image.blur", "blur", "b", "cpu", 5 * ms, 25 * ms));  // overlaps the first
  t.spans.push_back(task(1, "image.blur", "blur", "c", "cpu", 40 * ms, 70 * ms));
  t.spans.push_back(task(3, "image.blur", "blur", "d", "sim", 10 * ms, 15 * ms));
  t.spans.push_back(task(3, "image.blur", "blur", "e", "sim", 20 * ms, 25 * ms));
  // nuclei.segment: cpu 8 ms; gpu 4, 4 ms -> measured speedup 2; one failed.
  t.spans.push_back(task(1, "nuclei.segment", "seg", "a", "cpu", 0, 8 * ms));
  t.spans.push_back(task(3, "nuclei.segment", "seg", "b", "gpu", 30 * ms, 34 * ms));
  t.spans.push_back(task(3, "nuclei.segment", "seg", "c", "gpu", 34 * ms, 38 * ms));
  t.spans.back().failed = true;
  // Sub-tasks of a stage task: their own row, never added to the task's.
  Span sub = task(0, "nuclei.segment", "seg", "a/0", "cpu", 80 * ms, 82 * ms);
  sub.parent = 7;
  t.spans.push_back(sub);
  // Copies: two 1 MiB uploads overlapping (busy 1.5 ms), one 2 MiB download.
  t.spans.push_back(copy(1003, true, "d", 9 * ms, 10 * ms, 1 << 20));
  t.spans.push_back(copy(1003, true, "e", 9 * ms + ms / 2, 10 * ms + ms / 2, 1 << 20));
  t.spans.push_back(copy(1003, false, "d", 15 * ms, 17 * ms, 2 << 20));
  // A track that was never declared.
  t.spans.push_back(task(7, "io.write", "out", "a", "cpu", 90 * ms, 91 * ms));
  t.counters = {{"ready tasks", 0, 1}, {"ready tasks", 10 * ms, 3}, {"items in flight", 0, 2}};
  t.duration_ns = 100 * ms;
  t.config = {{"workflow", "small.json"}, {"flowd_version", "0.1.0"}, {"simulated_gpus", true}};
  return t;
}

TEST(Recorder, AWorkerNodesTasksGetItsTrackAndALaneMoreWhileTheyOverlap) {
  trace::Recorder rec(true);
  auto span = [](std::int64_t a, std::int64_t b) { return trace::Span{7, "op", "st", "k", "node", a, b}; };
  rec.node_span("data-0", span(0, 10));
  rec.node_span("data-0", span(10, 20));  // after the first: the same row
  rec.node_span("data-0", span(15, 30));  // overlaps the second: a lane more
  rec.node_span("client-0", span(5, 8));
  rec.node_span("data-0", span(25, 40));  // the first lane is free again at 20
  const auto t = rec.snapshot(Json::object());
  std::map<int, std::string> names;
  for (const auto& tr : t.tracks) {
    names[tr.id] = tr.name;
    EXPECT_EQ(tr.kind, "node");
    EXPECT_GE(tr.id, 100000) << "clashes with a worker's or copy engine's id";
  }
  ASSERT_EQ(names.size(), 3u);
  std::vector<std::pair<std::int64_t, std::string>> placed;
  for (const auto& s : t.spans) placed.emplace_back(s.start_ns, names.at(s.track));
  EXPECT_EQ(placed, (std::vector<std::pair<std::int64_t, std::string>>{
                        {0, "node data-0"}, {5, "node client-0"}, {10, "node data-0"}, {15, "node data-0 #2"},
                        {25, "node data-0"}}));
  trace::Recorder off;
  off.node_span("x", span(0, 1));
  EXPECT_TRUE(off.snapshot(Json::object()).spans.empty());
}

TEST(Report, TracksAreOrderedWithCopiesAfterTheirDevice) {
  const auto order = report_tracks(small_trace());
  std::vector<std::string> names;
  for (const auto& tr : order) names.push_back(tr.name);
  EXPECT_EQ(names, (std::vector<std::string>{"cpu0", "cpu1", "sim0", "sim0 copy", "track 7"}));
}

TEST(Report, SummaryNumbers) {
  const ReportSummary s = summarize(small_trace());
  EXPECT_EQ(s.duration_ns, 100 * ms);
  EXPECT_EQ(s.tasks, 10);
  EXPECT_EQ(s.copies, 3);
  EXPECT_EQ(s.failed, 1);

  ASSERT_EQ(s.operators.size(), 4u);  // image.blur, io.write, nuclei.segment, nuclei.segment (sub-tasks)
  const OperatorStats& blur = s.operators[0];
  EXPECT_EQ(blur.name, "image.blur");
  EXPECT_FALSE(blur.subtasks);
  EXPECT_EQ(blur.variants.at("cpu").count, 3);
  EXPECT_EQ(blur.variants.at("cpu").total_ns, 60 * ms);
  EXPECT_DOUBLE_EQ(blur.variants.at("cpu").mean_ns(), 20.0 * ms);
  EXPECT_DOUBLE_EQ(blur.variants.at("sim").mean_ns(), 5.0 * ms);
  ASSERT_TRUE(blur.speedup_sim());
  EXPECT_DOUBLE_EQ(*blur.speedup_sim(), 4.0);
  EXPECT_FALSE(blur.speedup_gpu());
  EXPECT_EQ(blur.total_ns(), 70 * ms);

  const OperatorStats& seg = s.operators[2];
  EXPECT_EQ(seg.name, "nuclei.segment");
  EXPECT_FALSE(seg.subtasks);
  ASSERT_TRUE(seg.speedup_gpu());
  EXPECT_DOUBLE_EQ(*seg.speedup_gpu(), 2.0);
  EXPECT_FALSE(seg.speedup_sim());
  EXPECT_EQ(seg.failed, 1);
  EXPECT_EQ(seg.variants.at("cpu").count, 1);  // the sub-task is not counted here

  const OperatorStats& sub = s.operators[3];
  EXPECT_EQ(sub.name, "nuclei.segment");
  EXPECT_TRUE(sub.subtasks);
  EXPECT_EQ(sub.variants.at("cpu").count, 1);
  EXPECT_EQ(sub.variants.at("cpu").total_ns, 2 * ms);

  // cpu0: [0,10] and [5,25] merge to 25 ms, plus the 2 ms sub-task.
  ASSERT_EQ(s.tracks.size(), 5u);
  EXPECT_EQ(s.tracks[0].track, 0);
  EXPECT_EQ(s.tracks[0].spans, 3);
  EXPECT_EQ(s.tracks[0].busy_ns, 27 * ms);
  EXPECT_DOUBLE_EQ(s.tracks[0].utilization, 0.27);
  EXPECT_EQ(s.tracks[1].busy_ns, 38 * ms);  // cpu1: 8 + 30
  EXPECT_EQ(s.tracks[2].busy_ns, 18 * ms);  // sim0: 5 + 5 + 8
  EXPECT_EQ(s.tracks[3].track, 1003);
  EXPECT_EQ(s.tracks[3].busy_ns, 3 * ms + ms / 2);
  EXPECT_EQ(s.tracks[4].track, 7);

  ASSERT_EQ(s.transfers.size(), 2u);
  EXPECT_EQ(s.transfers[0].direction, "upload");
  EXPECT_EQ(s.transfers[0].count, 2);
  EXPECT_EQ(s.transfers[0].bytes, 2u << 20);
  EXPECT_EQ(s.transfers[0].busy_ns, ms + ms / 2);
  EXPECT_NEAR(s.transfers[0].bandwidth(), (2 << 20) / 1.5e-3, 1e-3);
  EXPECT_EQ(s.transfers[1].direction, "download");
  EXPECT_EQ(s.transfers[1].bytes, 2u << 20);
  EXPECT_NEAR(s.transfers[1].bandwidth(), (2 << 20) / 2e-3, 1e-3);
}

TEST(Report, EmbedsTheDataAndNeedsNoNetwork) {
  const RunTrace t = small_trace();
  const std::string html = html_report(t);
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);

  const Json d = embedded_data(html);
  EXPECT_EQ(d.at("config").at("workflow"), "small.json");
  EXPECT_EQ(d.at("spans").at("start").size(), t.spans.size());
  EXPECT_EQ(d.at("tracks").size(), 5u);
  EXPECT_EQ(d.at("counters").size(), 2u);
  EXPECT_EQ(d.at("counters").at(0).at("name"), "ready tasks");
  EXPECT_EQ(d.at("counters").at(0).at("v"), Json::parse("[1.0, 3.0]"));
  const Json& ops = d.at("summary").at("operators");
  EXPECT_EQ(ops.at(0).at("name"), "image.blur");
  EXPECT_DOUBLE_EQ(ops.at(0).at("speedup_sim").get<double>(), 4.0);
  EXPECT_TRUE(ops.at(0).at("speedup_gpu").is_null());
  EXPECT_EQ(d.at("summary").at("totals").at("failed"), 1);
}

TEST(Report, SurvivesHostileStrings) {
  RunTrace t = small_trace();
  const std::string stage = "</script><script>alert(1)</script>";
  const std::string key = "quote\" 'single' back\\slash\nnew line <!--<script> \xE2\x80\xA8 \xE2\x80\xA9 \xC3\xA9\xE6\xBC\xA2 \xF0\x9F\x94\xAC";
  t.spans.push_back(task(0, "evil</SCRIPT>op", stage, key, "cpu", 1 * ms, 2 * ms));
  t.config["command"] = Json::array({"flowd", "run", "</script>", "a b"});
  t.config["workflow"] = "</script><b>x</b>";
  const std::string html = html_report(t);

  // The data block ends where it should: what follows is the page's own script.
  const std::string open = "<script type=\"application/json\" id=\"flowd-data\">";
  const auto end = html.find("</script>", html.find(open));
  EXPECT_EQ(html.compare(end, 18, "</script>\n<script>"), 0);
  EXPECT_EQ(html.find("\xE2\x80\xA8"), std::string::npos);
  EXPECT_EQ(html.find("\xE2\x80\xA9"), std::string::npos);
  EXPECT_EQ(html.find("<!--"), std::string::npos);

  const Json d = embedded_data(html);
  const Json& spans = d.at("spans");
  const std::size_t last = t.spans.size() - 1;
  EXPECT_EQ(spans.at("stages").at(spans.at("stage").at(last).get<int>()), stage);
  EXPECT_EQ(spans.at("names").at(spans.at("name").at(last).get<int>()), "evil</SCRIPT>op");
  EXPECT_EQ(spans.at("key").at(last), key);
  EXPECT_EQ(d.at("config").at("workflow"), "</script><b>x</b>");

  // Bytes that are not UTF-8 are replaced, not thrown about.
  t.spans.back().key = "bad \xFF\xFE utf-8";
  EXPECT_NO_THROW(embedded_data(html_report(t)));
}

TEST(Report, WritesAtomicallyAndNamesTheFileOnFailure) {
  const fs::path dir = scratch();
  const RunTrace t = small_trace();
  const fs::path file = dir / "nested" / "deeper" / "report.html";
  write_html_report(t, file);
  EXPECT_EQ(slurp(file), html_report(t));
  for (const auto& e : fs::directory_iterator(file.parent_path()))
    EXPECT_EQ(e.path().filename(), "report.html") << "a temporary file was left behind";

  std::ofstream(dir / "plain-file") << "x";
  const fs::path bad = dir / "plain-file" / "report.html";
  try {
    write_html_report(t, bad);
    FAIL() << "writing under a regular file succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
  }
}

TEST(ChromeTrace, ThreadNamePerTrackAndOneCompleteEventPerSpan) {
  const RunTrace t = small_trace();
  const Json j = Json::parse(chrome_trace(t).dump());
  ASSERT_TRUE(j.at("traceEvents").is_array());
  std::map<int, std::string> thread_names;
  std::size_t complete = 0, counters = 0;
  for (const auto& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "thread_name") thread_names[e.at("tid").get<int>()] = e.at("args").at("name");
    if (ph == "X") {
      ++complete;
      EXPECT_TRUE(e.contains("ts") && e.contains("dur") && e.contains("tid"));
      if (e.at("cat") == "copy") {
        EXPECT_GT(e.at("args").at("bytes").get<std::uint64_t>(), 0u);
      }
    }
    if (ph == "C") ++counters;
  }
  EXPECT_EQ(thread_names.size(), t.tracks.size());
  EXPECT_EQ(thread_names.at(0), "cpu0");
  EXPECT_EQ(thread_names.at(3), "sim0 (simulated)");
  EXPECT_EQ(complete, t.spans.size());
  EXPECT_EQ(counters, t.counters.size());
  EXPECT_EQ(j.at("otherData").at("workflow"), "small.json");
}

// A run as flowd records it: 4 CPU workers and one simulated GPU with its
// copy engine, items flowing read -> blur -> segment -> features -> write,
// the GPU taking blur and segment when it would finish them first.
RunTrace realistic_trace(int items) {
  RunTrace t;
  for (int w = 0; w < 4; ++w) t.tracks.push_back({w, "cpu" + std::to_string(w), "cpu", false});
  t.tracks.push_back({4, "sim0", "sim_gpu", true});
  t.tracks.push_back({1004, "sim0 copy", "copy", true});
  std::mt19937 rng(7);
  auto jitter = [&](double lo, double hi) {
    return static_cast<std::int64_t>(std::uniform_real_distribution<double>(lo, hi)(rng) * static_cast<double>(ms));
  };
  std::array<std::int64_t, 5> free_at{};  // per worker; 4 is the GPU
  std::int64_t copy_free = 0, id = 0;
  const std::uint64_t tile_bytes = 4u << 20;
  auto earliest_cpu = [&](std::int64_t ready) {
    int best = 0;
    for (int w = 1; w < 4; ++w)
      if (std::max(free_at[w], ready) < std::max(free_at[best], ready)) best = w;
    return best;
  };
  auto run_cpu = [&](const char* op, const char* stage, const std::string& key, std::int64_t ready, std::int64_t d) {
    const int w = earliest_cpu(ready);
    const std::int64_t t0 = std::max(free_at[w], ready);
    Span s = task(w, op, stage, key, "cpu", t0, t0 + d);
    s.id = id++;
    t.spans.push_back(s);
    free_at[w] = t0 + d;
    return s;
  };
  // GPU-capable stages go to the simulated GPU when, copies included, it finishes first.
  auto run_either = [&](const char* op, const char* stage, const std::string& key, std::int64_t ready, std::int64_t cpu_d,
                        double speedup) {
    const std::int64_t sim_d = static_cast<std::int64_t>(static_cast<double>(cpu_d) / speedup);
    const std::int64_t up = std::max(copy_free, ready), up_d = 400'000;
    const std::int64_t gpu_t0 = std::max(free_at[4], up + up_d);
    const int w = earliest_cpu(ready);
    if (gpu_t0 + sim_d + 400'000 < std::max(free_at[w], ready) + cpu_d) {
      t.spans.push_back(copy(1004, true, key, up, up + up_d, tile_bytes));
      Span s = task(4, op, stage, key, "sim", gpu_t0, gpu_t0 + sim_d);
      s.id = id++;
      t.spans.push_back(s);
      free_at[4] = gpu_t0 + sim_d;
      const std::int64_t down = std::max(up + up_d, gpu_t0 + sim_d);
      t.spans.push_back(copy(1004, false, key, down, down + 350'000, tile_bytes));
      copy_free = down + 350'000;
      return s;
    }
    return run_cpu(op, stage, key, ready, cpu_d);
  };
  std::int64_t source_free = 0;
  for (int i = 0; i < items; ++i) {
    const std::string key = "slide" + std::to_string(i / 64) + "/tile/" + std::to_string(i % 64);
    Span r = run_cpu("io.read_tiles", "read", key, source_free, jitter(0.3, 0.7));
    source_free = r.end_ns;
    Span b = run_either("image.gaussian", "blur", key, r.end_ns, jitter(5, 8), 4.0);
    Span s = run_either("nuclei.segment", "segment", key, b.end_ns, jitter(9, 15), 2.5);
    if (i % 9 == 0 && s.variant == "cpu") {  // a large tile split into sub-tasks
      for (int k = 0; k < 2; ++k) {
        Span sub = task(s.track, "nuclei.segment", "segment", key + "/part" + std::to_string(k), "cpu",
                        s.start_ns + (s.end_ns - s.start_ns) * k / 2 + ms / 5, s.start_ns + (s.end_ns - s.start_ns) * (k + 1) / 2 - ms / 5);
        sub.parent = s.id;
        t.spans.push_back(sub);
      }
    }
    Span f = run_cpu("nuclei.features", "features", key, s.end_ns, jitter(3, 5));
    if (i == 17) t.spans.back().failed = true;
    run_cpu("io.write_hdf5", "write", key, f.end_ns, jitter(0.5, 1.0));
  }
  // Hostile names ride along: the page must still render everything.
  t.spans.push_back(task(0, "nuclei.features", "</script><script>alert(1)</script>", "k\"\n\xE2\x80\xA8</script>", "cpu",
                         free_at[0], free_at[0] + ms));
  std::sort(t.spans.begin(), t.spans.end(), [](const Span& a, const Span& b) { return a.start_ns < b.start_ns; });
  for (const auto& s : t.spans) t.duration_ns = std::max(t.duration_ns, s.end_ns);
  // Queue counters sampled as tasks start: items between read and write, and
  // a ready queue that wanders with them.
  int in_flight = 0, ready = 0;
  for (std::size_t k = 0; k < t.spans.size(); k += 3) {
    const auto& s = t.spans[k];
    if (s.name == "io.read_tiles") in_flight = std::min(in_flight + 1, 8);
    if (s.name == "io.write_hdf5") in_flight = std::max(in_flight - 1, 0);
    ready = std::clamp(ready + static_cast<int>(rng() % 3) - 1 + (in_flight > 4 ? 1 : 0) - (ready > 6 ? 1 : 0), 0, 12);
    t.counters.push_back({"ready tasks", s.start_ns, static_cast<double>(ready)});
    t.counters.push_back({"items in flight", s.start_ns, static_cast<double>(in_flight)});
  }
  t.config = {{"workflow", "workflows/nuclei.json"},
              {"workflow_sha256", "3f5a9c0e1b7d42a8e6c1f0b9d8a7e6c5b4a392817f6e5d4c3b2a19081726354f"},
              {"flowd_version", "0.1.0"},
              {"scheduler", "pats"},
              {"locality", true},
              {"prefetch", true},
              {"workers", Json::array({{{"name", "cpu0"}, {"kind", "cpu"}}, {{"name", "cpu1"}, {"kind", "cpu"}},
                                       {{"name", "cpu2"}, {"kind", "cpu"}}, {{"name", "cpu3"}, {"kind", "cpu"}},
                                       {{"name", "sim0"}, {"kind", "sim_gpu"}}})},
              {"simulated_gpus", true},
              {"command", Json::array({"flowd", "run", "workflows/nuclei.json", "--cpu", "4", "--gpu", "sim:1", "--report",
                                       "out/report.html", "--trace", "out/trace.json"})},
              {"started", "2025-01-12T10:31:07Z"}};
  return t;
}

bool chromium_installed() { return fs::exists("/usr/bin/chromium") || std::getenv("CHROMIUM") != nullptr; }

// Runs a shell command; returns its exit status.
int shell(const std::string& cmd) { return std::system(cmd.c_str()); }
std::string quoted(const fs::path& p) {
  std::string out = "'";
  for (char c : p.string()) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
const std::string render_script = quoted(fs::path(FLOWD_SOURCE_DIR) / "tools" / "render-report.sh");

// The DOM after the page's JavaScript ran (empty when Chromium failed).
std::string rendered_dom(const fs::path& html) {
  const fs::path dom = html.parent_path() / (html.stem().string() + ".dom.html");
  if (shell(render_script + " --dom " + quoted(html) + " > " + quoted(dom)) != 0) return {};
  return slurp(dom);
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(Report, RendersInChromium) {
  if (!chromium_installed())
    GTEST_SKIP() << "chromium not installed: the report's rendering is not checked (tools/install-deps.sh --report)";
  const fs::path dir = scratch();
  const RunTrace t = realistic_trace(290);
  ASSERT_GT(t.spans.size(), 1800u);
  ASSERT_LT(t.spans.size(), 2400u);
  const fs::path html = dir / "report.html", png = dir / "report.png";
  write_html_report(t, html);

  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(shell(render_script + " " + quoted(html) + " " + quoted(png) + " >/dev/null"), 0);
  const auto t1 = std::chrono::steady_clock::now();
  const std::string d = rendered_dom(html);
  const auto t2 = std::chrono::steady_clock::now();
  ASSERT_FALSE(d.empty()) << "chromium failed to dump the DOM";
  using std::chrono::duration;
  std::cout << "[ report   ] " << t.spans.size() << " spans: screenshot " << duration<double>(t1 - t0).count()
            << " s, DOM " << duration<double>(t2 - t1).count() << " s\n";

  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 20u * 1024u);
  EXPECT_NE(d.find("data-rendered-spans=\"" + std::to_string(t.spans.size()) + "\""), std::string::npos)
      << "the timeline did not draw every span";
  // The element the script built (the script's own source names it too, in quotes).
  EXPECT_NE(d.find("id=\"simulated-banner\""), std::string::npos);
  EXPECT_NE(d.find("<strong>Simulated GPUs</strong>"), std::string::npos);
  // The tables were built from the summary: a simulated speedup for the
  // GPU-capable operators and a utilization per track.
  int speedups = 0;
  for (const auto& op : summarize(t).operators)
    if (op.speedup_sim()) {
      char expected[64];
      std::snprintf(expected, sizeof expected, "data-speedup=\"%.4f\"", *op.speedup_sim());
      EXPECT_NE(d.find(expected), std::string::npos) << expected;
      ++speedups;
    }
  EXPECT_EQ(speedups, 2) << "image.gaussian and nuclei.segment ran on both the CPUs and the simulated GPU";
  EXPECT_EQ(occurrences(d, "data-utilization="), t.tracks.size());
  EXPECT_EQ(d.find("alert(1)</script><script>"), std::string::npos) << "a stage name escaped into the page";
}

TEST(Report, RendersMeasuredSpeedupsAndNoBannerForRealGpus) {
  if (!chromium_installed())
    GTEST_SKIP() << "chromium not installed: the report's rendering is not checked (tools/install-deps.sh --report)";
  RunTrace t = small_trace();
  t.config["simulated_gpus"] = false;
  const fs::path html = scratch() / "report.html";
  write_html_report(t, html);
  const std::string d = rendered_dom(html);
  ASSERT_FALSE(d.empty()) << "chromium failed to dump the DOM";
  EXPECT_NE(d.find("data-rendered-spans=\"" + std::to_string(t.spans.size()) + "\""), std::string::npos);
  EXPECT_EQ(d.find("id=\"simulated-banner\""), std::string::npos);
  EXPECT_NE(d.find("data-speedup=\"2.0000\""), std::string::npos) << "nuclei.segment: 8 ms on the CPU, 4 ms on the GPU";
  EXPECT_NE(d.find("data-speedup=\"4.0000\""), std::string::npos) << "image.blur: 20 ms on the CPU, 5 ms simulated";
  EXPECT_NE(d.find("data-mean-ns=\"20000000\""), std::string::npos);
  EXPECT_NE(d.find("data-total-bytes=\"4194304\""), std::string::npos);
  EXPECT_EQ(occurrences(d, "data-utilization="), 5u);
}

// 100 000 spans: the page stays a few megabytes.
TEST(Report, LargeTraceStaysCompact) {
  const RunTrace t = realistic_trace(17'000);
  ASSERT_GT(t.spans.size(), 100'000u);
  const std::string html = html_report(t);
  EXPECT_LT(html.size(), 80u * t.spans.size()) << "more than 80 bytes per span";
  EXPECT_EQ(embedded_data(html).at("spans").at("key").size(), t.spans.size());
}
// A run's scans (RunReport::config "scans") get a section of their own.
TEST(Report, RendersEachScansStrategyCombinesAndLanes) {
  if (!chromium_installed())
    GTEST_SKIP() << "chromium not installed: the report's rendering is not checked (tools/install-deps.sh --report)";
  RunTrace t = small_trace();
  t.config["scans"] =
      Json::array({Json{{"stage", "align"},
                        {"operator", "test.matmul2"},
                        {"strategy", "work-stealing"},
                        {"elements", 64},
                        {"combines", 131},
                        {"depth", 23},
                        {"steals", 9},
                        {"ranks", 1},
                        {"seconds", 0.5},
                        {"lanes", Json::array({Json{{"name", "r0.t0"}, {"busy_seconds", 0.25}, {"combines", 70}},
                                               Json{{"name", "r0.t1"}, {"busy_seconds", 0.2}, {"combines", 61}}})}}});
  const fs::path html = scratch() / "report.html";
  write_html_report(t, html);
  const std::string d = rendered_dom(html);
  ASSERT_FALSE(d.empty()) << "chromium failed to dump the DOM";
  EXPECT_NE(d.find("data-scan-combines=\"131\""), std::string::npos);
  EXPECT_NE(d.find("data-scan-depth=\"23\""), std::string::npos);
  EXPECT_NE(d.find("r0.t1 200"), std::string::npos) << "lane r0.t1's busy time";
  EXPECT_EQ(d.find("<td class=\"k\">scans</td>"), std::string::npos) << "scans belong in their own section";
}

// A run's all-pairs stages (RunReport::config "allpairs") get a section of
// their own: the figures (the GPU lanes' caches and a cluster run's peer
// cache too) and a picture of the pair matrix.
TEST(Report, RendersEachAllPairsStageAndItsPairMatrix) {
  if (!chromium_installed())
    GTEST_SKIP() << "chromium not installed: the report's rendering is not checked (tools/install-deps.sh --report)";
  RunTrace t = small_trace();
  t.config["allpairs"] = Json::array(
      {Json{{"stage", "compare"}, {"operator", "prnu.compare"}, {"pairs_shape", "triangle"}, {"order", "bands"},
            {"rows", 40}, {"cols", 40}, {"items", 40}, {"pairs", 780}, {"leaves", 2}, {"cache_slots", 20},
            {"loads", 83}, {"load_ratio", 2.075},
            {"host_cache", {{"lookups_hit", 10}, {"loads", 83}, {"hit_rate", 0.1}, {"evictions", 63}}}, {"steals", 0},
            {"nodes", 2}, {"peer_cache", {{"hits", 64}, {"misses", 3}, {"hit_rate", 0.4355}}},
            {"device_cache", {{"slots", 20}, {"hits", 750}, {"loads", 50}, {"hit_rate", 0.9375}, {"evictions", 30}}},
            {"load_seconds", 1.0}, {"compare_seconds", 2.0}, {"t_min_seconds", 2.5}, {"efficiency", 0.91},
            {"seconds", 1.4},
            {"lanes", Json::array({Json{{"name", "cpu0"}, {"busy_seconds", 1.3}, {"pairs", 400}},
                                   Json{{"name", "cpu1"}, {"busy_seconds", 1.2}, {"pairs", 380}}})},
            {"leaf_runs", Json::array({Json::array({0, 16, 0, 40, 0, 0.0, 0.7}),
                                       Json::array({16, 40, 16, 40, 1, 0.1, 1.3})})}}});
  const fs::path html = scratch() / "report.html";
  write_html_report(t, html);
  const std::string d = rendered_dom(html);
  ASSERT_FALSE(d.empty()) << "chromium failed to dump the DOM";
  EXPECT_NE(d.find("data-allpairs-load-ratio=\"2.075\""), std::string::npos);
  EXPECT_NE(d.find("91.0 %"), std::string::npos) << "the efficiency";
  EXPECT_NE(d.find("cpu1: 380 pairs"), std::string::npos);
  EXPECT_NE(d.find("64 (43.5 % of misses; 3 asked in vain)"), std::string::npos) << "the peer cache of a cluster run";
  EXPECT_NE(d.find("93.8 % hits (50 copies up, 30 evictions, 20 slots)"), std::string::npos) << "the GPU caches";
  EXPECT_NE(d.find("class=\"pair-matrix\""), std::string::npos) << "the picture";
  EXPECT_EQ(d.find("<td class=\"k\">allpairs</td>"), std::string::npos) << "all-pairs stages have their own section";
}

}  // namespace
}  // namespace flowd::trace
