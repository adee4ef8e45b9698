#pragma once
// Per-nucleus features on a CUDA GPU: the CPU variant's results
// (features.hpp) within floating-point rounding, relative 1e-4 in the tests.
//
// What runs where, and why:
//  - device: grey, H, E (bit-identical to the CPU's: integer and tabulated
//    double arithmetic); kernel 1, one block per nucleus box: histograms of
//    H, E, grey, floor(gradient) and of the ring's H, E, grey, the four
//    co-occurrence matrices, moment sums, gradient moments (two passes),
//    Canny edge counts and the ring itself; kernel 2, one thread per
//    nucleus: every feature from those (feature_math.hpp, shared with the
//    CPU).
//  - host: the labels and grey are downloaded once per tile. The host finds
//    the nuclei and their boxes (the launch needs them), runs cv::Canny on
//    grey (hysteresis is a sequential flood fill; an exact GPU twin of
//    OpenCV's Canny is not worth its risk here) and uploads the edge map;
//    and, while the kernels run, traces each nucleus's contour for
//    perimeter, solidity and circularity (cv::findContours / convexHull on
//    the box: the same code as the CPU variant, so these match exactly).
#include <functional>
#include <string>

#include "features.hpp"
#include "gpu/features_kernels.hpp"

namespace flowd::nuclei::features {

// Device memory for one call's buffers: valid until the call's work on the
// stream is done (flowd's pool: GpuContext::allocate).
using DeviceAllocate = std::function<void*(std::size_t bytes)>;

// Inputs are device arrays (TileView); work goes on `stream` of tile.device;
// returns after the stream has finished this call's work.
Result compute_gpu(const gpu::TileView& tile, const Options& options, void* stream, const DeviceAllocate& allocate);

// For tests and measurements: uploads host images to `device`, with its own
// stream and cudaMalloc'd buffers.
Result compute_gpu(const cv::Mat& rgb, const cv::Mat& labels, const Options& options, int device = 0);

// Number of CUDA devices; 0 with the reason in *why.
int gpu_count(std::string* why);

}  // namespace flowd::nuclei::features
