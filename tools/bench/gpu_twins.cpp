// flowd-bench-gpu-twins: every GPU variant of flowd beside its CPU twin on the
// same generated inputs (issue 4's kernels, the registration's, image.gaussian's).
//
//   flowd-bench-gpu-twins [--size N] [--repeat R]
//
// CPU twins run on one thread (cv::setNumThreads(1)): a flowd CPU worker runs
// one task on one core, so "speedup" is what the PATS queue weighs, one GPU
// against one core. GPU times are host wall time around the call and a
// stream synchronisation, inputs already on the device (the engine moves a
// buffer once and keeps it there between sub-tasks); temporaries come from a
// preallocated device arena, as from the engine's pool. Features and the
// whole registration include their host<->device copies (their entry points
// take host images). Each figure is the median of R runs after one warm-up.
//
// Output: one line per operation, `op cpu_ms gpu_ms speedup`, then the same as
// CSV lines prefixed `csv,` for docs/benchmarks.md. Exit 1 on a bad argument,
// 2 when no CUDA GPU is present or a CUDA call fails.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "bench_common.hpp"
#include "features/features.hpp"
#include "features/features_gpu.hpp"
#include "gaussian_gpu.hpp"
#include "gaussian_kernel.hpp"
#include "hne/generate.hpp"
#include "ops/glue_gpu.hpp"
#include "register.hpp"
#include "register_gpu.hpp"
#include "segment/gpu/segment_gpu.hpp"
#include "segment/pipeline.hpp"
#include "segment/segment.hpp"
#include "tem/generate.hpp"

namespace nu = flowd::nuclei;
namespace ng = flowd::nuclei::gpu;
namespace ft = flowd::nuclei::features;
namespace reg = flowd::registration;
namespace rg = flowd::registration::gpu;
namespace ig = flowd::image::gpu;
using namespace flowd;

namespace {

void cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Device memory for the run: inputs uploaded once (owned), and an arena the
// twins' temporaries come from, reset after each synchronised call.
class Device {
public:
  explicit Device(std::size_t arena_bytes) : arena_size_(arena_bytes) {
    cuda(cudaSetDevice(0), "cudaSetDevice");
    cuda(cudaStreamCreate(&stream_), "cudaStreamCreate");
    cuda(cudaMalloc(&arena_, arena_size_), "cudaMalloc (arena)");
    launch_.device = 0;
    launch_.stream = stream_;
    launch_.alloc = [this](std::size_t bytes) { return take(bytes); };
  }
  ~Device() {
    static_cast<void>(cudaStreamSynchronize(stream_));
    for (void* p : owned_) static_cast<void>(cudaFree(p));
    static_cast<void>(cudaFree(arena_));
    static_cast<void>(cudaStreamDestroy(stream_));
  }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  void* take(std::size_t bytes) {
    const std::size_t at = (used_ + 255) / 256 * 256;
    if (at + bytes > arena_size_) throw std::runtime_error("bench arena exhausted");
    used_ = at + bytes;
    return static_cast<char*>(arena_) + at;
  }
  void sync() {
    cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    cuda(cudaGetLastError(), "kernel launch");
    used_ = 0;
  }
  const ng::Launch& launch() const { return launch_; }
  cudaStream_t stream() const { return stream_; }

  struct Mat {
    void* data = nullptr;
    int rows = 0, cols = 0, channels = 1;
    std::int64_t pitch = 0;  // elements
  };
  Mat upload(const cv::Mat& m) {
    Mat d{nullptr, m.rows, m.cols, m.channels(), static_cast<std::int64_t>(m.cols) * m.channels()};
    const std::size_t bytes = m.total() * m.elemSize();
    cuda(cudaMalloc(&d.data, bytes), "cudaMalloc");
    owned_.push_back(d.data);
    const cv::Mat c = m.isContinuous() ? m : m.clone();
    cuda(cudaMemcpy(d.data, c.data, bytes, cudaMemcpyHostToDevice), "cudaMemcpy up");
    return d;
  }
  Mat like(int rows, int cols, int type) { return upload(cv::Mat(rows, cols, type, cv::Scalar::all(77))); }

  template <class T> static ng::ConstImage<T> in(const Mat& d) {
    ng::ConstImage<T> v;
    v.data = static_cast<const T*>(d.data);
    v.rows = d.rows, v.cols = d.cols, v.pitch = d.pitch;
    v.channel_stride = 1, v.col_stride = d.channels;
    return v;
  }
  template <class T> static ng::Image<T> out(const Mat& d) {
    return ng::Image<T>{static_cast<T*>(d.data), d.rows, d.cols, d.pitch};
  }

private:
  cudaStream_t stream_ = nullptr;
  void* arena_ = nullptr;
  std::size_t arena_size_ = 0, used_ = 0;
  ng::Launch launch_;
  std::vector<void*> owned_;
};

struct Row {
  std::string op;
  double cpu_ms, gpu_ms;
};

template <class F> double median_ms(int repeat, F&& f) {
  f();  // warm-up: module load, first-touch pages, cached plans
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) t.push_back(1e3 * bench::measure(f).wall);
  return bench::median(t);
}

void segment_rows(Device& dev, int size, int repeat, std::vector<Row>& rows) {
  hne::Params hp;
  hp.width = hp.height = size;
  hp.seed = 7;
  const cv::Mat rgb = hne::generate(hp).rgb;
  const nu::SegmentParams p;
  nu::Stages st;
  nu::segment(rgb, p, &st);
  const nu::Derived d = nu::derive(rgb, p);

  const auto g_rgb = dev.upload(rgb), g_tissue = dev.upload(st.tissue), g_rbc = dev.upload(st.rbc),
             g_haem = dev.upload(st.haem), g_opened = dev.upload(st.opened), g_cand = dev.upload(st.candidates),
             g_area = dev.upload(st.area), g_filled = dev.upload(st.filled), g_dist = dev.upload(st.dist),
             g_markers = dev.upload(st.markers);
  const auto o8 = dev.like(size, size, CV_8U), o8b = dev.like(size, size, CV_8U), of = dev.like(size, size, CV_32F),
             oi = dev.like(size, size, CV_32S);
  const auto& l = dev.launch();
  using D = Device;
  const auto half_widths = nu::disk_half_widths(d.open_radius);
  const nu::StainWeights sw = nu::stain_weights(0, d.od_max);

  struct Op {
    const char* name;
    std::function<void()> cpu, gpu;
  };
  const std::vector<Op> ops = {
      {"nuclei.tissue", [&] { nu::tissue_mask(rgb, d.tissue_level); },
       [&] { ng::tissue_mask(l, D::in<std::uint8_t>(g_rgb), d.tissue_level, D::out<std::uint8_t>(o8)); }},
      {"nuclei.rbc", [&] { nu::rbc_mask(rgb, d.rbc_rg_q8, d.rbc_rb_q8, d.tissue_level); },
       [&] {
         ng::rbc_mask(l, D::in<std::uint8_t>(g_rgb), d.rbc_rg_q8, d.rbc_rb_q8, d.tissue_level, D::out<std::uint8_t>(o8));
       }},
      {"nuclei.deconvolve", [&] { nu::mask_haem(nu::deconvolve(rgb, sw), st.tissue, st.rbc); },
       [&] {
         ng::deconvolve(l, D::in<std::uint8_t>(g_rgb), sw, D::out<std::uint8_t>(o8));
         ng::mask_stain(l, D::in<std::uint8_t>(o8), static_cast<const std::uint8_t*>(g_tissue.data), g_tissue.pitch,
                        static_cast<const std::uint8_t*>(g_rbc.data), g_rbc.pitch, D::out<std::uint8_t>(o8));
       }},
      {"nuclei.open", [&] { nu::open(st.haem, d.open_radius); },
       [&] { ng::open(l, D::in<std::uint8_t>(g_haem), half_widths, D::out<std::uint8_t>(o8)); }},
      {"nuclei.reconstruct", [&] { nu::threshold_mask(nu::reconstruct(st.opened, st.haem), d.threshold); },
       [&] {
         ng::mask_stain(l, D::in<std::uint8_t>(g_opened), nullptr, 0, nullptr, 0, D::out<std::uint8_t>(o8));
         ng::reconstruct(l, D::out<std::uint8_t>(o8), D::in<std::uint8_t>(g_haem));
         ng::threshold(l, D::in<std::uint8_t>(o8), d.threshold, D::out<std::uint8_t>(o8));
       }},
      {"nuclei.area_threshold", [&] { nu::area_threshold(st.candidates, d.min_area, 0); },
       [&] { ng::area_threshold(l, D::in<std::uint8_t>(g_cand), d.min_area, 0, D::out<std::uint8_t>(o8)); }},
      {"nuclei.fill_holes", [&] { nu::fill_small_holes(st.area, d.max_hole_area); },
       [&] { ng::fill_small_holes(l, D::in<std::uint8_t>(g_area), d.max_hole_area, D::out<std::uint8_t>(o8)); }},
      {"nuclei.pre_watershed",
       [&] { nu::watershed_markers(nu::distance_transform(st.filled), d.h); },
       [&] {
         ng::distance_transform(l, D::in<std::uint8_t>(g_filled), D::out<float>(of));
         ng::watershed_markers(l, D::in<float>(of), d.h, D::out<std::int32_t>(oi));
       }},
      {"nuclei.watershed", [&] { nu::watershed(st.dist, st.markers, st.filled); },
       [&] {
         ng::watershed(l, D::in<float>(g_dist), D::in<std::int32_t>(g_markers), D::in<std::uint8_t>(g_filled),
                       D::out<std::int32_t>(oi));
       }},
      {"nuclei.label", [&] { nu::label(st.filled); },
       [&] { ng::label(l, D::in<std::uint8_t>(g_filled), D::out<std::int32_t>(oi)); }},
  };
  double cpu_sum = 0, gpu_sum = 0;
  for (const Op& op : ops) {
    const double c = median_ms(repeat, op.cpu);
    const double g = median_ms(repeat, [&] {
      op.gpu();
      dev.sync();
    });
    rows.push_back({op.name, c, g});
    cpu_sum += c, gpu_sum += g;
  }
  rows.push_back({"nuclei (sum of the ten)", cpu_sum, gpu_sum});
  static_cast<void>(o8b);

  // Features of the tile's nuclei: host images in, rows out (copies included).
  const cv::Mat labels = nu::segment(rgb, p);
  const ft::Options fo;
  rows.push_back({"nuclei.features", median_ms(repeat, [&] { ft::compute(rgb, labels, fo); }),
                  median_ms(repeat, [&] { ft::compute_gpu(rgb, labels, fo, 0); })});
}

void gaussian_rows(Device& dev, int size, int repeat, std::vector<Row>& rows) {
  cv::Mat img(size, size, CV_8UC3);
  cv::randu(img, cv::Scalar::all(0), cv::Scalar::all(256));
  const auto g_src = dev.upload(img), g_dst = dev.like(size, size, CV_8UC3);
  for (const double sigma : {2.0, 8.0}) {
    const int k = image::gaussian_kernel_size(sigma);
    const std::vector<double> half = image::gaussian_half_kernel(k, sigma, 8);
    ig::BlurJob j;
    j.pixel = ig::Pixel::u8;
    j.rows = size, j.cols = size, j.channels = 3;
    j.src = g_src.data;
    j.src_stride[0] = 3LL * size, j.src_stride[1] = 3, j.src_stride[2] = 1;
    j.dst = g_dst.data;
    j.along_cols = j.along_rows = ig::HalfKernel{half.data(), static_cast<int>(half.size()) - 1};
    const std::string name = "image.gaussian u8x3 sigma " + std::to_string(static_cast<int>(sigma));
    cv::Mat out;
    rows.push_back({name, median_ms(repeat, [&] { cv::GaussianBlur(img, out, cv::Size(k, k), sigma, sigma); }),
                    median_ms(repeat, [&] {
                      j.scratch = dev.take(ig::scratch_bytes(j.pixel, j.rows, j.cols, j.channels));
                      ig::gaussian_blur(j, dev.stream());
                      dev.sync();
                    })});
  }
}

void registration_rows(int size, int repeat, std::vector<Row>& rows) {
  tem::Params tp;
  tp.frames = 4;
  tp.width = tp.height = size;
  tp.seed = 17;
  cv::Mat a, b;
  tem::generate(tp, 0).convertTo(a, CV_32F);
  tem::generate(tp, 1).convertTo(b, CV_32F);
  const reg::ImageView va{a.ptr<float>(), a.cols, a.rows, static_cast<std::ptrdiff_t>(a.step1())};
  const reg::ImageView vb{b.ptr<float>(), b.cols, b.rows, static_cast<std::ptrdiff_t>(b.step1())};
  const std::string sz = " " + std::to_string(size) + "^2";
  rows.push_back({"registration pyramid (upload incl.)" + sz, median_ms(repeat, [&] { reg::Pyramid(va, {}); }),
                  median_ms(repeat, [&] { rg::DevicePyramid(va, {}); })});
  const reg::Pyramid ca(va, {}), cb(vb, {});
  const rg::DevicePyramid ga(va, {}), gb(vb, {});
  const reg::WarpParams wp = reg::level_params({0.002, 2.5, -1.75}, size, size, 0);
  rows.push_back({"registration ncc_sums level 0" + sz, median_ms(repeat, [&] {
                    reg::ncc_sums(ca.level(0).view(), cb.level(0).view(), cb.gx(0).view(), cb.gy(0).view(), wp, true);
                  }),
                  median_ms(repeat, [&] { rg::ncc_sums(ga, gb, 0, wp, true); })});
  const int r = std::max(1, repeat / 2);
  rows.push_back({"registration A (pair)" + sz,
                  median_ms(r, [&] { reg::register_pair(ca, cb, reg::Rigid::identity(), {}); }),
                  median_ms(r, [&] { rg::register_pair(ga, gb, reg::Rigid::identity(), {}); })});
}

int parse_int(const char* flag, const char* v, int lo, int hi) {
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < lo || x > hi) {
    std::fprintf(stderr, "flowd-bench-gpu-twins: %s must be an integer from %d to %d, got '%s'\n", flag, lo, hi, v);
    std::exit(1);
  }
  return static_cast<int>(x);
}

}  // namespace

int main(int argc, char** argv) {
  int size = 1152, repeat = 7;  // 1152: a 1024 tile with the nuclei job's 64-pixel halo
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--size") && i + 1 < argc) size = parse_int("--size", argv[++i], 64, 16384);
    else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = parse_int("--repeat", argv[++i], 1, 1000);
    else {
      std::fprintf(stderr, "flowd-bench-gpu-twins: unknown argument '%s'\nusage: %s [--size N] [--repeat R]\n", argv[i],
                   argv[0]);
      return 1;
    }
  }
  std::string why;
  if (ng::device_count(&why) == 0) {
    std::fprintf(stderr, "flowd-bench-gpu-twins: no CUDA GPU: %s\n", why.c_str());
    return 2;
  }
  try {
    cv::setNumThreads(1);
    cudaDeviceProp prop{};
    cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    std::printf("# %s (%d SMs); CPU twins on one thread; %dx%d inputs; medians of %d runs, ms\n", prop.name,
                prop.multiProcessorCount, size, size, repeat);
    std::vector<Row> rows;
    Device dev(std::size_t{1} << 30);
    segment_rows(dev, size, repeat, rows);
    gaussian_rows(dev, size, repeat, rows);
    registration_rows(size, repeat, rows);
    for (const Row& r : rows)
      std::printf("%-42s %10.3f %10.3f %8.2fx\n", r.op.c_str(), r.cpu_ms, r.gpu_ms, r.cpu_ms / r.gpu_ms);
    for (const Row& r : rows) std::printf("csv,%s,%d,%.4f,%.4f\n", r.op.c_str(), size, r.cpu_ms, r.gpu_ms);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flowd-bench-gpu-twins: %s\n", e.what());
    return 2;
  }
}
