// flowd-bench-image-decode: what plugins/imagefile costs and what it
// catches (docs/benchmarks.md §18, docs/reliability.md "Damaged inputs").
//
//   speed      median time to decode one file of each format from disk,
//              OpenCV's cv::imread beside imagefile (read into memory,
//              checked, decoded), the same files, alternating, N rounds
//   detection  for JPEG, PNG and TIFF (LZW, deflate), the share of damaged
//              files refused, decoded with a warning, or decoded silently,
//              for two damages: a lost 512-byte block (zeros) and 1-64
//              bytes flipped (XOR 0x5a), at positions across the file
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "decode.hpp"

namespace fs = std::filesystem;
namespace img = flowd::imagefile;

namespace {

struct Format {
  const char* name;
  const char* ext;
  std::vector<int> params;
  bool deep;  // 16-bit grey instead of 8-bit RGB
};

const Format formats[] = {
    {"JPEG q90", ".jpg", {cv::IMWRITE_JPEG_QUALITY, 90}, false},
    {"JPEG q90 progressive", ".jpg", {cv::IMWRITE_JPEG_QUALITY, 90, cv::IMWRITE_JPEG_PROGRESSIVE, 1}, false},
    {"PNG", ".png", {}, false},
    {"PNG 16-bit", ".png", {}, true},
    {"TIFF LZW", ".tif", {cv::IMWRITE_TIFF_COMPRESSION, 5}, false},
    {"TIFF deflate", ".tif", {cv::IMWRITE_TIFF_COMPRESSION, 8}, false},
    {"TIFF 16-bit none", ".tif", {cv::IMWRITE_TIFF_COMPRESSION, 1}, true},
};

cv::Mat picture(int side, bool deep) {
  cv::Mat m(side, side + side / 4, CV_8UC3);
  cv::theRNG().state = 424242;
  cv::randu(m, 0, 255);
  cv::GaussianBlur(m, m, {0, 0}, 2.0);
  if (!deep) return m;
  cv::Mat g;
  cv::cvtColor(m, g, cv::COLOR_BGR2GRAY);
  g.convertTo(g, CV_16U, 200);
  return g;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void speed(int side, int rounds, const fs::path& dir) {
  std::printf("decode time per file, %d x %d, median of %d (each round: imread, then imagefile)\n", side + side / 4, side,
              rounds);
  std::printf("%-22s %10s %12s %14s %7s\n", "format", "bytes", "imread ms", "imagefile ms", "ratio");
  for (const Format& f : formats) {
    const fs::path file = dir / (std::string("bench") + f.ext);
    cv::imwrite(file.string(), picture(side, f.deep), f.params);
    std::vector<double> a, b;
    for (int r = 0; r < rounds; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      const cv::Mat m = cv::imread(file.string(), cv::IMREAD_UNCHANGED);
      a.push_back(seconds_since(t0));
      t0 = std::chrono::steady_clock::now();
      const img::Decoded d = img::decode(img::read_file(file.string()), img::Channels::unchanged);
      b.push_back(seconds_since(t0));
      if (m.size() != d.pixels.size()) std::fprintf(stderr, "%s: sizes differ\n", f.name);
    }
    std::printf("%-22s %10ju %12.2f %14.2f %7.2f\n", f.name, static_cast<std::uintmax_t>(fs::file_size(file)),
                1e3 * median(a), 1e3 * median(b), median(b) / median(a));
  }
}

void detection(int side, int trials) {
  std::printf("\ndamaged files, %d x %d, %d positions each: refused / warned / silent\n", side + side / 4, side, trials);
  std::printf("%-22s %-24s %-24s\n", "format", "lost 512-byte block", "1-64 bytes flipped");
  for (const Format& f : formats) {
    if (std::string(f.name).find("none") != std::string::npos) continue;  // no checksum to find: always silent
    std::vector<std::uint8_t> good;
    cv::imencode(f.ext, picture(side, f.deep), good, f.params);
    std::string cells[2];
    for (int kind = 0; kind < 2; ++kind) {
      int refused = 0, warned = 0, silent = 0;
      for (int t = 0; t < trials; ++t) {
        std::vector<std::uint8_t> b = good;
        const std::size_t at = 256 + (b.size() - 1024) * static_cast<std::size_t>(t) / static_cast<std::size_t>(trials);
        const std::size_t len = kind == 0 ? 512 : 1 + static_cast<std::size_t>(t % 64);
        for (std::size_t i = at; i < at + len && i + 2 < b.size(); ++i) b[i] = kind == 0 ? 0 : b[i] ^ 0x5a;
        try {
          const img::Decoded d = img::decode(b, img::Channels::unchanged);
          (d.warnings.empty() ? silent : warned)++;
        } catch (const img::DecodeError&) {
          ++refused;
        }
      }
      char cell[64];
      std::snprintf(cell, sizeof cell, "%3d%% / %3d%% / %3d%%", 100 * refused / trials, 100 * warned / trials,
                    100 * silent / trials);
      cells[kind] = cell;
    }
    std::printf("%-22s %-24s %-24s\n", f.name, cells[0].c_str(), cells[1].c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  int side = 1024, rounds = 9, trials = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--side") side = std::atoi(argv[i + 1]);
    else if (a == "--rounds") rounds = std::atoi(argv[i + 1]);
    else if (a == "--trials") trials = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: flowd-bench-image-decode [--side N] [--rounds N] [--trials N]\n");
      return 1;
    }
  }
  if (side < 64 || rounds < 1 || trials < 1) {
    std::fprintf(stderr, "--side must be at least 64, --rounds and --trials at least 1\n");
    return 1;
  }
  cv::setNumThreads(1);
  const fs::path dir = fs::temp_directory_path() / ("flowd-bench-image-decode-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  speed(side, rounds, dir);
  detection(std::min(side, 512), trials);
  fs::remove_all(dir);
  return 0;
}
