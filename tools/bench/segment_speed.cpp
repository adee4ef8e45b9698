// flowd-bench-segment-speed: segment() on real or generated tiles, one core,
// the way the nuclei job runs it (default SegmentParams, mpp estimated), so
// its median can stand beside the scikit-image baseline's on the same files
// (tools/bench/nuclei_vs_baseline.sh, docs/benchmarks.md).
//
//   flowd-bench-segment-speed --images DIR [--repeat R]
//
// Per tile: the median of R runs of segment() and of each operation on the
// inputs segment() gave it; printed: per operation the median over tiles of
// those medians, then the median per tile of the whole segment(), last line
//   tile <name> <ms>          (one per tile: its median of segment())
//   segment_median_ms <value>
// for scripts. Exit 1 on a bad argument, 2 on a folder or image it cannot use.
// Runs with the allocator settings of the flowd command (util/malloc_tuning),
// so image-sized buffers are reused between tiles as in a flowd worker.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "bench_common.hpp"
#include "segment/pipeline.hpp"
#include "util/malloc_tuning.hpp"

namespace fs = std::filesystem;
using namespace flowd;

namespace {

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Tile {
  std::string name;
  cv::Mat rgb;
};

// Every PNG of `dir` with three (or four: alpha dropped) channels, by name;
// grey images (label files) are skipped, since only RGB tiles are segmented.
std::vector<Tile> load_tiles(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Failure("'" + dir.string() + "' is not a folder");
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (e.is_regular_file() && ext == ".png") paths.push_back(e.path());
  }
  if (ec) throw Failure("cannot list '" + dir.string() + "': " + ec.message());
  std::sort(paths.begin(), paths.end());
  std::vector<Tile> tiles;
  for (const auto& path : paths) {
    const cv::Mat raw = cv::imread(path.string(), cv::IMREAD_UNCHANGED);
    if (raw.empty()) throw Failure("cannot read '" + path.string() + "'");
    if (raw.depth() != CV_8U || (raw.channels() != 3 && raw.channels() != 4)) continue;
    Tile t{path.filename().string(), {}};
    cv::cvtColor(raw, t.rgb, raw.channels() == 4 ? cv::COLOR_BGRA2RGB : cv::COLOR_BGR2RGB);
    tiles.push_back(std::move(t));
  }
  if (tiles.empty()) throw Failure("no 8-bit RGB PNG tiles in '" + dir.string() + "'");
  return tiles;
}

template <class F>
double median_ms(int repeat, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r)
    t.push_back(1e3 * bench::measure(f).wall);
  return bench::median(t);
}

struct Step {
  const char* name;
  std::function<void()> run;
};

int run(const fs::path& dir, int repeat) {
  cv::setNumThreads(1);
  const std::vector<Tile> tiles = load_tiles(dir);
  const nuclei::SegmentParams p;  // the job's defaults: mpp estimated per tile
  std::vector<std::string> names;
  std::vector<std::vector<double>> per_step;  // [step][tile]
  std::vector<double> whole;
  for (const Tile& tile : tiles) {
    nuclei::Stages st;
    nuclei::segment(tile.rgb, p, &st);  // the inputs of every step (and a warm-up)
    const nuclei::Derived d = nuclei::derive(tile.rgb, p);
    nuclei::SegmentParams known = p;
    known.mpp = d.mpp;
    const std::vector<Step> steps = {
        {"estimate_mpp", [&] { nuclei::estimate_mpp(tile.rgb, p); }},
        {"derive (threshold)", [&] { nuclei::derive(tile.rgb, known); }},
        {"tissue", [&] { nuclei::tissue_mask(tile.rgb, d.tissue_level); }},
        {"rbc", [&] { nuclei::rbc_mask(tile.rgb, d.rbc_rg_q8, d.rbc_rb_q8, d.tissue_level); }},
        {"deconvolve",
         [&] {
           nuclei::mask_haem(nuclei::deconvolve(tile.rgb, nuclei::stain_weights(0, d.od_max)), st.tissue, st.rbc);
         }},
        {"open", [&] { nuclei::open(st.haem, d.open_radius); }},
        {"reconstruct", [&] { nuclei::threshold_mask(nuclei::reconstruct(st.opened, st.haem), d.threshold); }},
        {"area_threshold", [&] { nuclei::area_threshold(st.candidates, d.min_area, 0); }},
        {"fill_holes", [&] { nuclei::fill_small_holes(st.area, d.max_hole_area); }},
        {"distance", [&] { nuclei::distance_transform(st.filled); }},
        {"markers", [&] { nuclei::watershed_markers(st.dist, d.h); }},
        {"watershed", [&] { nuclei::watershed(st.dist, st.markers, st.filled); }},
        {"relabel", [&] { nuclei::relabel(st.watershed, d.min_area); }},
    };
    if (per_step.empty()) {
      per_step.resize(steps.size());
      for (const Step& s : steps)
        names.emplace_back(s.name);
    }
    for (std::size_t i = 0; i < steps.size(); ++i)
      per_step[i].push_back(median_ms(repeat, steps[i].run));
    whole.push_back(median_ms(repeat, [&] { nuclei::segment(tile.rgb, p); }));
  }
  const cv::Size size = tiles.front().rgb.size();
  std::printf(
      "# one core, %zu tiles of '%s' (first %dx%d), default SegmentParams (mpp estimated);\n"
      "# per tile the median of %d runs, then the median over tiles, ms\n",
      tiles.size(), dir.string().c_str(), size.width, size.height, repeat);
  for (std::size_t i = 0; i < tiles.size(); ++i)
    std::printf("tile %s %.3f\n", tiles[i].name.c_str(), whole[i]);
  double listed = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const double m = bench::median(per_step[i]);
    listed += m;
    std::printf("%-20s %8.3f\n", names[i].c_str(), m);
  }
  std::printf("%-20s %8.3f\n", "sum of the above", listed);
  const double m = bench::median(whole);
  std::printf("%-20s %8.3f\n", "segment (whole)", m);
  std::printf("segment_median_ms %.3f\n", m);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  flowd::tune_malloc_for_tiles();
  std::string images;
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--images") && i + 1 < argc) {
      images = argv[++i];
    } else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) {
      char* end = nullptr;
      const long r = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || r < 1 || r > 1000) {
        std::fprintf(stderr, "flowd-bench-segment-speed: --repeat must be an integer from 1 to 1000, got '%s'\n",
                     argv[i]);
        return 1;
      }
      repeat = static_cast<int>(r);
    } else {
      std::fprintf(stderr, "flowd-bench-segment-speed: unknown argument '%s'\nusage: %s --images DIR [--repeat R]\n",
                   argv[i], argv[0]);
      return 1;
    }
  }
  if (images.empty()) {
    std::fprintf(stderr, "usage: %s --images DIR [--repeat R]\n", argv[0]);
    return 1;
  }
  try {
    return run(images, repeat);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flowd-bench-segment-speed: %s\n", e.what());
    return 2;
  }
}
