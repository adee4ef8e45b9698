// flowd-bench-array-copy: Array::clone() of strided windows (what
// contiguous() costs before an upload to a GPU, a PNG or HDF5 write of a
// tile) beside the element-by-element copy it used until 2026-11-27 and a
// plain memcpy of the same bytes (the floor). The nuclei job's tiles are
// windows of the whole image (io.read_tiles: a cv::Mat ROI, rows strided).
//
//   flowd-bench-array-copy [--repeat R]
//
// Prints per case the median ms of R runs (default 21) of each copy, the
// speedup of clone() over the per-element copy, and checks that both copies
// are equal (exit 2 if not). Exit 1 on a bad argument.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "flowd/array.hpp"

using namespace flowd;

namespace {

// The copy clone() did before: one memcpy per element, in C order.
void per_element(const Array& a, std::byte* out) {
  const std::size_t isz = a.itemsize();
  const auto* base = static_cast<const std::byte*>(a.raw());
  std::int64_t cursor = 0;
  const auto rec = [&](const auto& self, int dim, std::int64_t off) -> void {
    for (std::int64_t i = 0; i < a.shape(dim); ++i) {
      const std::int64_t o = off + i * a.stride(dim);
      if (dim + 1 == a.ndim())
        std::memcpy(out + static_cast<std::size_t>(cursor++) * isz, base + static_cast<std::size_t>(o) * isz, isz);
      else
        self(self, dim + 1, o);
    }
  };
  rec(rec, 0, 0);
}

template <class F> double median_ms(int repeat, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) t.push_back(1e3 * bench::measure(f).wall);
  return bench::median(t);
}

struct Case {
  const char* name;
  DType dtype;
  std::vector<std::int64_t> whole;               // the image the window is cut from
  std::vector<std::int64_t> begin, end;          // the window, per dimension
};

}  // namespace

int main(int argc, char** argv) {
  int repeat = 21;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) {
      char* e = nullptr;
      const long r = std::strtol(argv[++i], &e, 10);
      if (*e != '\0' || r < 1 || r > 1000) {
        std::fprintf(stderr, "flowd-bench-array-copy: --repeat must be an integer from 1 to 1000, got '%s'\n", argv[i]);
        return 1;
      }
      repeat = static_cast<int>(r);
    } else {
      std::fprintf(stderr, "flowd-bench-array-copy: unknown argument '%s'\nusage: %s [--repeat R]\n", argv[i], argv[0]);
      return 1;
    }
  }
  const std::vector<Case> cases = {
      {"u8 RGB tile 1152x1152 of 4096x4096", DType::u8, {4096, 4096, 3}, {1000, 900, 0}, {2152, 2052, 3}},
      {"u8 grey tile 1152x1152 of 4096x4096", DType::u8, {4096, 4096}, {1000, 900}, {2152, 2052}},
      {"f32 frame 512x512 of 2048x2048", DType::f32, {2048, 2048}, {100, 300}, {612, 812}},
      {"u8 RGB green channel 1024x1024", DType::u8, {1024, 1024, 3}, {0, 0, 1}, {1024, 1024, 2}},
  };
  std::printf("# Array::clone() of a window against the per-element copy it replaced and a memcpy of as many bytes;\n"
              "# median of %d runs, ms\n%-40s %10s %10s %10s %8s\n",
              repeat, "case", "memcpy", "clone", "per-elem", "speedup");
  for (const Case& c : cases) {
    Array whole = Array::uninitialized(c.dtype, c.whole);
    auto* p = static_cast<unsigned char*>(whole.raw());
    for (std::size_t i = 0; i < whole.nbytes(); ++i) p[i] = static_cast<unsigned char>(i * 2654435761u >> 24);
    Array v = whole;
    for (std::size_t d = 0; d < c.begin.size(); ++d) v = v.slice(static_cast<int>(d), c.begin[d], c.end[d]);
    std::vector<std::byte> out(v.nbytes()), ref(v.nbytes()), flat(v.nbytes());
    per_element(v, ref.data());
    if (std::memcmp(v.clone().raw(), ref.data(), ref.size()) != 0) {
      std::fprintf(stderr, "flowd-bench-array-copy: clone() and the per-element copy differ on '%s'\n", c.name);
      return 2;
    }
    const double floor = median_ms(repeat, [&] { std::memcpy(flat.data(), whole.raw(), flat.size()); });
    const double now = median_ms(repeat, [&] { (void)v.clone(); });
    const double before = median_ms(repeat, [&] { per_element(v, out.data()); });
    std::printf("%-40s %10.3f %10.3f %10.3f %7.1fx\n", c.name, floor, now, before, before / now);
  }
  return 0;
}
