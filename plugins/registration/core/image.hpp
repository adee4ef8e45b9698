#pragma once
// Grey images as plain float arrays: what the registration kernels read and
// write, so that their CUDA twins can mirror them one for one.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace flowd::registration {

// A read-only window onto row-major floats; stride in elements.
struct ImageView {
  const float* data = nullptr;
  int width = 0;
  int height = 0;
  std::ptrdiff_t stride = 0;

  const float* row(int y) const noexcept { return data + static_cast<std::ptrdiff_t>(y) * stride; }
  float at(int x, int y) const noexcept { return row(y)[x]; }
};

// An owning, contiguous image.
class Image {
public:
  Image() = default;
  Image(int width, int height) : width_(width), height_(height), pixels_(checked_size(width, height), 0.0f) {}

  int width() const noexcept { return width_; }
  int height() const noexcept { return height_; }
  bool empty() const noexcept { return pixels_.empty(); }
  float* data() noexcept { return pixels_.data(); }
  const float* data() const noexcept { return pixels_.data(); }
  float* row(int y) noexcept { return pixels_.data() + static_cast<std::ptrdiff_t>(y) * width_; }
  const float* row(int y) const noexcept { return pixels_.data() + static_cast<std::ptrdiff_t>(y) * width_; }
  ImageView view() const noexcept { return {pixels_.data(), width_, height_, width_}; }

private:
  static std::size_t checked_size(int width, int height) {
    if (width < 1 || height < 1)
      throw std::invalid_argument("image size " + std::to_string(width) + "x" + std::to_string(height));
    return static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
  }

  int width_ = 0;
  int height_ = 0;
  std::vector<float> pixels_;
};

}  // namespace flowd::registration
