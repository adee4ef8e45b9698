// The host side of the GPU variant (what runs where: features_gpu.hpp).
#include "features_gpu.hpp"

#include <stdexcept>
#include <vector>

#include <opencv2/imgproc.hpp>

namespace flowd::nuclei::features {

int gpu_count(std::string* why) { return gpu::device_count(why); }

Result compute_gpu(const gpu::TileView& tile, const Options& options, void* stream, const DeviceAllocate& allocate) {
  const int R = options.ring_px(), L = options.glcm_levels;
  Result res;
  if (tile.rows <= 0 || tile.cols <= 0) return res;
  const int dev = tile.device;
  const std::size_t pixels = static_cast<std::size_t>(tile.rows) * static_cast<std::size_t>(tile.cols);
  const auto alloc = [&](std::size_t bytes) {
    void* p = allocate(bytes == 0 ? 1 : bytes);
    if (!p) throw std::runtime_error("nuclei features (gpu): out of device memory");
    return p;
  };

  gpu::Derived d;
  auto* tables = static_cast<double*>(alloc(sizeof(StainTables)));
  gpu::copy_to_device(dev, tables, &stain_tables(), sizeof(StainTables), stream);  // static: outlives the copy
  d.tables = tables;
  d.grey = static_cast<std::uint8_t*>(alloc(pixels));
  d.h = static_cast<std::uint8_t*>(alloc(pixels));
  d.e = static_cast<std::uint8_t*>(alloc(pixels));
  d.labels = static_cast<std::int32_t*>(alloc(pixels * sizeof(std::int32_t)));
  gpu::derive(tile, d, stream);

  cv::Mat labels(tile.rows, tile.cols, CV_32S), grey(tile.rows, tile.cols, CV_8U);
  gpu::copy_to_host(dev, labels.data, d.labels, pixels * sizeof(std::int32_t), stream);
  gpu::copy_to_host(dev, grey.data, d.grey, pixels, stream);
  res.nuclei = find_nuclei(labels, options.min_area);
  const std::size_t N = res.nuclei.size();
  if (N == 0) return res;
  if (N > static_cast<std::size_t>(INT32_MAX)) throw std::runtime_error("nuclei features (gpu): too many nuclei");

  cv::Mat edges;
  cv::Canny(grey, edges, kCannyLow, kCannyHigh, 3, true);
  std::vector<gpu::Box> boxes(N);
  for (std::size_t i = 0; i < N; ++i) {
    const Nucleus& n = res.nuclei[i];
    boxes[i] = gpu::Box{n.label, n.bbox_row, n.bbox_col, n.bbox_height, n.bbox_width};
  }
  const std::vector<int> disc = disc_half_widths(R);

  gpu::NucleiJob j;
  j.device = dev;
  j.rows = tile.rows, j.cols = tile.cols;
  j.count = static_cast<int>(N);
  j.levels = L;
  j.ring = R;
  j.grey = d.grey, j.h = d.h, j.e = d.e, j.labels = d.labels;
  auto* dedges = static_cast<std::uint8_t*>(alloc(pixels));
  gpu::copy_to_device(dev, dedges, edges.data, pixels, stream);  // pageable: staged before the call returns
  j.edges = dedges;
  auto* dboxes = static_cast<gpu::Box*>(alloc(N * sizeof(gpu::Box)));
  gpu::copy_to_device(dev, dboxes, boxes.data(), N * sizeof(gpu::Box), stream);
  j.boxes = dboxes;
  auto* ddisc = static_cast<std::int32_t*>(alloc(disc.size() * sizeof(std::int32_t)));
  gpu::copy_to_device(dev, ddisc, disc.data(), disc.size() * sizeof(std::int32_t), stream);
  j.disc = ddisc;
  j.sums = static_cast<NucleusSums*>(alloc(N * sizeof(NucleusSums)));
  j.hist = static_cast<std::uint32_t*>(alloc(static_cast<std::size_t>(kHistCount) * kBins * N * sizeof(std::uint32_t)));
  j.grad = static_cast<std::uint32_t*>(alloc(static_cast<std::size_t>(kGradBins) * N * sizeof(std::uint32_t)));
  j.glcm = static_cast<std::uint32_t*>(alloc(gpu::glcm_elements(L, j.count) * sizeof(std::uint32_t)));
  j.values = static_cast<double*>(alloc(N * kFeatureCount * sizeof(double)));
  gpu::nuclei(j, stream);

  // Contours on the host while the kernels run.
  std::vector<double> perimeter(N), solidity(N);
  for (std::size_t i = 0; i < N; ++i) contour_shape(labels, res.nuclei[i], &perimeter[i], &solidity[i]);

  res.values.resize(N * kFeatureCount);
  gpu::copy_to_host(dev, res.values.data(), j.values, res.values.size() * sizeof(double), stream);
  for (std::size_t i = 0; i < N; ++i) {
    double* row = res.values.data() + i * kFeatureCount;
    row[kPerimeter] = perimeter[i];
    row[kSolidity] = solidity[i];
    row[kCircularity] = circularity(row[kArea], perimeter[i]);
  }
  return res;
}

namespace {

// cudaMalloc'd buffers and a stream, released (after the stream) on exit.
class Scratch {
public:
  explicit Scratch(int device) : device_(device), stream_(gpu::stream_create(device)) {}
  ~Scratch() {
    try {
      gpu::synchronize(device_, stream_);
    } catch (...) {  // freeing memory a kernel may still use would be worse; nothing else to do
    }
    for (void* p : blocks_) gpu::device_free(device_, p);
    gpu::stream_destroy(device_, stream_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* allocate(std::size_t bytes) {
    blocks_.push_back(nullptr);
    blocks_.back() = gpu::device_malloc(device_, bytes);
    return blocks_.back();
  }
  void* stream() const { return stream_; }

private:
  int device_;
  void* stream_;
  std::vector<void*> blocks_;
};

}  // namespace

Result compute_gpu(const cv::Mat& rgb, const cv::Mat& labels, const Options& options, int device) {
  if (rgb.type() != CV_8UC3 || labels.type() != CV_32S || rgb.size() != labels.size())
    throw std::invalid_argument("nuclei features (gpu): expects CV_8UC3 RGB and CV_32S labels of the same size");
  Scratch s(device);
  const cv::Mat rgbc = rgb.isContinuous() ? rgb : rgb.clone();
  const cv::Mat labc = labels.isContinuous() ? labels : labels.clone();
  gpu::TileView t;
  t.device = device;
  t.rows = rgb.rows, t.cols = rgb.cols;
  if (rgb.empty()) return {};
  auto* drgb = static_cast<std::uint8_t*>(s.allocate(rgbc.total() * 3));
  auto* dlab = static_cast<std::int32_t*>(s.allocate(labc.total() * sizeof(std::int32_t)));
  gpu::copy_to_device(device, drgb, rgbc.data, rgbc.total() * 3, s.stream());
  gpu::copy_to_device(device, dlab, labc.data, labc.total() * sizeof(std::int32_t), s.stream());
  t.rgb = drgb;
  t.rgb_stride[0] = 3LL * rgb.cols, t.rgb_stride[1] = 3, t.rgb_stride[2] = 1;
  t.labels = dlab;
  t.label_stride[0] = rgb.cols, t.label_stride[1] = 1;
  return compute_gpu(t, options, s.stream(), [&](std::size_t bytes) { return s.allocate(bytes); });
}

}  // namespace flowd::nuclei::features
