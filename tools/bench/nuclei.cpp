// The nuclei application's benchmarks (docs/benchmarks.md, issue 4):
//
//   flowd-bench-nuclei ops [--size N] [--repeat R]
//       one core: time of each segmentation operation and of the features on
//       a generated N x N tile (default 4096), medians of R runs
//   flowd-bench-nuclei quality [--size N] [--seeds S]
//       Dice, object F1 (IoU >= 0.5) and AJI of segment() against the
//       generator's truth: defaults at 40x and 20x, then density and noise
//       sweeps
//   flowd-bench-nuclei overhead [--size N] [--repeat R]
//       engine overhead: workflows' tiles -> nuclei.segment -> nuclei.features
//       through flowd with one worker versus the same functions called
//       directly on the same tiles, interleaved run by run
//   flowd-bench-nuclei overhead --tiles N [--size 512] [--workers W] [--repeat R] [--no-command]
//                               [--only direct|flowd|command]
//       engine overhead on a folder of N small tiles: the whole main job
//       (nuclei_folder.hpp)
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "bench_common.hpp"
#include "features/features.hpp"
#include "hne/generate.hpp"
#include "nuclei_folder.hpp"
#include "runtime/run.hpp"
#include "score/score.hpp"
#include "segment/pipeline.hpp"
#include "workflow/validate.hpp"

using namespace flowd;

namespace {

hne::Sample generate(int size, std::uint64_t seed, double mpp = 0.25, double density = 1, double noise = 1) {
  hne::Params p;
  p.width = p.height = size;
  p.seed = seed;
  p.mpp = mpp;
  p.density = density;
  p.noise = noise;
  return hne::generate(p);
}

template <class F>
double median_of(int repeat, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r)
    t.push_back(bench::measure(f).wall);
  return bench::median(t);
}

int ops(int size, int repeat) {
  cv::setNumThreads(1);
  const hne::Sample s = generate(size, 1);
  nuclei::SegmentParams p;
  p.mpp = 0.25;
  nuclei::Stages st;
  nuclei::segment(s.rgb, p, &st);  // the inputs of every step
  const nuclei::Derived d = nuclei::derive(s.rgb, p);
  std::printf(
      "# one core, %dx%d generated H&E tile (40x), %d nuclei found; median of %d runs, seconds\n", size, size,
      [&] {
        double m = 0;
        cv::minMaxLoc(st.labels, nullptr, &m);
        return static_cast<int>(m);
      }(),
      repeat);
  struct Step {
    const char* name;
    std::function<void()> run;
  };
  const std::vector<Step> steps = {
      {"estimate_mpp", [&] { nuclei::estimate_mpp(s.rgb, p); }},
      {"derive (threshold)", [&] { nuclei::derive(s.rgb, p); }},
      {"tissue", [&] { nuclei::tissue_mask(s.rgb, d.tissue_level); }},
      {"rbc", [&] { nuclei::rbc_mask(s.rgb, d.rbc_rg_q8, d.rbc_rb_q8, d.tissue_level); }},
      {"deconvolve",
       [&] { nuclei::mask_haem(nuclei::deconvolve(s.rgb, nuclei::stain_weights(0, d.od_max)), st.tissue, st.rbc); }},
      {"open", [&] { nuclei::open(st.haem, d.open_radius); }},
      {"reconstruct", [&] { nuclei::threshold_mask(nuclei::reconstruct(st.opened, st.haem), d.threshold); }},
      {"area_threshold", [&] { nuclei::area_threshold(st.candidates, d.min_area, 0); }},
      {"fill_holes", [&] { nuclei::fill_small_holes(st.area, d.max_hole_area); }},
      {"distance", [&] { nuclei::distance_transform(st.filled); }},
      {"markers", [&] { nuclei::watershed_markers(st.dist, d.h); }},
      {"watershed", [&] { nuclei::watershed(st.dist, st.markers, st.filled); }},
      {"relabel", [&] { nuclei::relabel(st.watershed, d.min_area); }},
      {"label (CCL)", [&] { nuclei::label(st.filled); }},
      {"segment (whole)", [&] { nuclei::segment(s.rgb, p); }},
      {"features", [&] { nuclei::features::compute(s.rgb, st.labels, {}); }},
  };
  for (const auto& step : steps)
    std::printf("%-20s %8.3f\n", step.name, median_of(repeat, step.run));
  return 0;
}

int quality(int size, int seeds) {
  std::printf("# segment() against the generator's truth, %dx%d images, mean over %d seeds\n", size, size, seeds);
  std::printf("%-28s %6s %6s %6s %6s %6s\n", "case", "dice", "prec", "recall", "f1", "aji");
  const auto row = [&](const char* name, double mpp, double density, double noise) {
    double dice = 0, prec = 0, rec = 0, f1 = 0, aji = 0;
    for (int k = 0; k < seeds; ++k) {
      const hne::Sample s = generate(size, 100 + static_cast<std::uint64_t>(k), mpp, density, noise);
      const auto sc = score::score(nuclei::segment(s.rgb, {}), s.labels);  // default parameters: mpp estimated
      dice += sc.dice, prec += sc.precision, rec += sc.recall, f1 += sc.f1, aji += sc.aji;
    }
    const double n = seeds;
    std::printf("%-28s %6.3f %6.3f %6.3f %6.3f %6.3f\n", name, dice / n, prec / n, rec / n, f1 / n, aji / n);
    std::fflush(stdout);
  };
  row("defaults 40x (mpp 0.25)", 0.25, 1, 1);
  row("defaults 20x (mpp 0.5)", 0.5, 1, 1);
  for (double density : {0.5, 1.5, 2.0, 3.0}) {
    const std::string name = "40x density x" + std::to_string(density).substr(0, 3);
    row(name.c_str(), 0.25, density, 1);
  }
  for (double noise : {0.5, 2.0, 3.0, 4.0}) {
    const std::string name = "40x noise x" + std::to_string(noise).substr(0, 3);
    row(name.c_str(), 0.25, 1, noise);
  }
  return 0;
}

int overhead(int size, int repeat) {
  Logger log(stderr, false, LogLevel::warning);
  plugin::Registry reg({{FLOWD_SHIPPED_PLUGIN_DIR, "shipped", true}}, log);
  reg.scan();
  const bench::ScratchDir scratch("flowd-bench-nuclei");
  const auto& dir = scratch.path();
  const auto png = dir / "slide.png";
  {
    const hne::Sample s = generate(size, 7);
    cv::Mat bgr;
    cv::cvtColor(s.rgb, bgr, cv::COLOR_RGB2BGR);
    cv::imwrite(png.string(), bgr);
  }
  const int tile = 1024, halo = 64;
  const std::string json = R"({"version": 1, "stages": {
    "tiles":    {"op": "io.read_tiles", "params": {"path": ")" +
                           png.string() + R"(", "tile": 1024, "halo": 64}},
    "segment":  {"op": "nuclei.segment", "inputs": {"image": "tiles.tile"}, "params": {"method": "classical", "mpp": 0.25}},
    "features": {"op": "nuclei.features", "inputs": {"image": "tiles.tile", "labels": "segment.labels"}}
  }})";
  const auto direct = [&] {
    cv::setNumThreads(1);
    cv::Mat bgr = cv::imread(png.string(), cv::IMREAD_COLOR), rgb;
    cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
    nuclei::SegmentParams p;
    p.mpp = 0.25;
    std::size_t rows = 0;
    for (int r0 = 0; r0 < rgb.rows; r0 += tile)
      for (int c0 = 0; c0 < rgb.cols; c0 += tile) {
        const int r1 = std::max(0, r0 - halo), c1 = std::max(0, c0 - halo);
        const cv::Rect box(c1, r1, std::min(rgb.cols, c0 + tile + halo) - c1,
                           std::min(rgb.rows, r0 + tile + halo) - r1);
        const cv::Mat t = rgb(box);
        const cv::Mat labels = nuclei::segment(t, p);
        rows += nuclei::features::compute(t, labels, {}).nuclei.size();
      }
    return rows;
  };
  std::printf(
      "# engine overhead on the nuclei workflow: %dx%d image, 1024 tiles + 64 halo, segment + features;\n"
      "# flowd with 1 CPU worker (no GPU, no model file) vs direct calls on a thread; medians of %d interleaved runs\n",
      size, size, repeat);
  std::vector<double> dw, fw, dc, fc;
  for (int r = 0; r < repeat + 1; ++r) {
    bench::Timing a;
    std::thread t([&] { a = bench::measure([&] { direct(); }); });
    t.join();
    // A fresh graph each run: operators (the source's position) live in it.
    auto g = workflow::validate(workflow::parse_workflow(json, "nuclei-overhead.json"), reg);
    runtime::RunOptions o;
    o.cpu_workers = 1;
    o.gpus = runtime::GpuSpec::parse("none");
    runtime::Run run(g, o, log);
    runtime::RunReport rep;
    const auto b = bench::measure([&] { rep = run.execute(); });
    if (rep.status != runtime::RunStatus::succeeded) throw Error("the flowd run failed: " + rep.error);
    if (rep.final.retired_items == 0) throw Error("the flowd run processed nothing");
    if (r == 0) continue;
    dw.push_back(a.wall), dc.push_back(a.cpu), fw.push_back(b.wall), fc.push_back(b.cpu);
  }
  const double mdw = bench::median(dw), mfw = bench::median(fw), mdc = bench::median(dc), mfc = bench::median(fc);
  std::printf("direct  wall %.3f s  cpu %.3f s\nflowd   wall %.3f s  cpu %.3f s\noverhead wall %+.2f%%  cpu %+.2f%%\n",
              mdw, mdc, mfw, mfc, 100 * (mfw / mdw - 1), 100 * (mfc / mdc - 1));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s ops|quality|overhead [--size N] [--repeat R] [--seeds S] "
                 "[--tiles N [--workers W] [--no-command] [--only direct|flowd|command]]\n",
                 argv[0]);
    return 1;
  }
  const std::string what = argv[1];
  int size = 0, repeat = 3, seeds = 3;
  bench::FolderOptions folder;
  folder.tiles = 0;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--size") && i + 1 < argc)
      size = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc)
      repeat = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seeds") && i + 1 < argc)
      seeds = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--tiles") && i + 1 < argc)
      folder.tiles = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--workers") && i + 1 < argc)
      folder.workers = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--no-command"))
      folder.cli = false;
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc)
      folder.only = argv[++i];
    else {
      std::fprintf(stderr, "unknown argument '%s'\n", argv[i]);
      return 1;
    }
  }
  if (size == 0) size = what == "quality" ? 2048 : folder.tiles > 0 ? 512 : 4096;
  try {
    if (what == "overhead" && folder.tiles > 0) {
      folder.size = size;
      folder.repeat = repeat;
      return bench::nuclei_folder_overhead(folder);
    }
    if (what == "ops") return ops(size, repeat);
    if (what == "quality") return quality(size, seeds);
    if (what == "overhead") return overhead(size, repeat);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flowd-bench-nuclei: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "unknown benchmark '%s' (ops, quality, overhead)\n", what.c_str());
  return 1;
}
