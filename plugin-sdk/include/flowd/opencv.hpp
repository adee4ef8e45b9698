#pragma once
// Zero-copy bridges between flowd::Array and cv::Mat for plugins that use
// OpenCV. Arrays are (rows, cols) or (rows, cols, channels), channels <= 4.
#include <mutex>

#include <opencv2/core.hpp>

#include "flowd/array.hpp"

namespace flowd {

// flowd runs one task per worker and owns the cores. OpenCV's own thread pool
// inside a task would start workers x OpenCV-threads threads and slow the run
// (measured in docs/benchmarks.md), so operators that call OpenCV call this
// from their constructor.
inline void use_one_opencv_thread() {
  static std::once_flag once;
  std::call_once(once, [] { cv::setNumThreads(1); });
}

inline int cv_depth(DType t) {
  switch (t) {
    case DType::u8: return CV_8U;
    case DType::i8: return CV_8S;
    case DType::u16: return CV_16U;
    case DType::i16: return CV_16S;
    case DType::i32: return CV_32S;
    case DType::f32: return CV_32F;
    case DType::f64: return CV_64F;
    default: throw Error("OpenCV has no matrix type for " + std::string(name_of(t)));
  }
}

inline DType dtype_from_cv_depth(int depth) {
  switch (depth) {
    case CV_8U: return DType::u8;
    case CV_8S: return DType::i8;
    case CV_16U: return DType::u16;
    case CV_16S: return DType::i16;
    case CV_32S: return DType::i32;
    case CV_32F: return DType::f32;
    case CV_64F: return DType::f64;
    default: throw Error("unsupported OpenCV depth " + std::to_string(depth));
  }
}

namespace detail {
inline cv::Mat mat_header(const Array& a) {
  if (!a.placement().host_accessible()) throw Error("as_mat: array is on a device");
  if (a.ndim() != 2 && a.ndim() != 3) throw Error("as_mat: needs a 2-d or 3-d array, got " + a.describe());
  const int channels = a.ndim() == 3 ? static_cast<int>(a.shape(2)) : 1;
  if (channels < 1 || channels > 4) throw Error("as_mat: " + std::to_string(channels) + " channels (at most 4)");
  if (a.ndim() == 3 && a.stride(2) != 1) throw Error("as_mat: channels must be interleaved");
  if (a.stride(1) != channels) throw Error("as_mat: columns must be contiguous");
  const std::size_t step = static_cast<std::size_t>(a.stride(0)) * a.itemsize();
  return cv::Mat(static_cast<int>(a.shape(0)), static_cast<int>(a.shape(1)), CV_MAKETYPE(cv_depth(a.dtype()), channels),
                 const_cast<void*>(a.raw()), step);
}
}  // namespace detail

// A read-only view of the array's bytes; keep the array alive while using it.
inline const cv::Mat as_mat(const Array& a) { return detail::mat_header(a); }
// A writable view, for arrays the operator allocated itself.
inline cv::Mat as_mat(Array& a) { return detail::mat_header(a); }

// Adopts a Mat's bytes without copying; the Array keeps the Mat's buffer alive.
inline Array from_mat(const cv::Mat& m) {
  if (m.dims != 2) throw Error("from_mat: only 2-d matrices");
  const std::int64_t rows = m.rows, cols = m.cols, ch = m.channels();
  const std::int64_t row_stride = static_cast<std::int64_t>(m.step[0] / m.elemSize1());
  auto keep = std::make_shared<cv::Mat>(m);
  if (ch == 1)
    return Array::adopt(keep, keep->data, dtype_from_cv_depth(m.depth()), std::array<std::int64_t, 2>{rows, cols},
                        std::array<std::int64_t, 2>{row_stride, 1});
  return Array::adopt(keep, keep->data, dtype_from_cv_depth(m.depth()), std::array<std::int64_t, 3>{rows, cols, ch},
                      std::array<std::int64_t, 3>{row_stride, ch, 1});
}

}  // namespace flowd
