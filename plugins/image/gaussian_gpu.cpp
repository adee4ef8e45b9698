// image.gaussian's GPU variant; compiled only in a build with CUDA
// (plugins/image/CMakeLists.txt), like the kernels in gaussian_gpu.cu.
#include <string>

#include "gaussian.hpp"
#include "gaussian_gpu.hpp"

namespace flowd::image {

// The CPU variant's result computed on the GPU: bit-identical for u8 and u16
// (OpenCV's fixed-point arithmetic, gaussian_gpu.hpp), within float rounding
// for f32. The input is a device array of this GPU, possibly strided; the
// output is a new contiguous device array.
void Gaussian::gpu(GpuContext& ctx) const {
  const Array& in = ctx.input(0).array();
  if (in.placement().residency != Residency::device || in.placement().device != ctx.gpu())
    throw Error("image.gaussian (gpu): the input " + in.describe() + " is not in the memory of GPU " +
                std::to_string(ctx.gpu()));
  const std::int64_t rows = in.shape(0), cols = in.shape(1), channels = in.ndim() == 3 ? in.shape(2) : 1;
  // As the CPU variant (cv::GaussianBlur refuses an empty Mat, as_mat more than 4 channels).
  if (rows == 0 || cols == 0 || channels == 0) throw Error("image.gaussian: empty image " + in.describe());
  if (channels > 4) throw Error("image.gaussian: " + in.describe() + " has " + std::to_string(channels) +
                                " channels (at most 4)");

  std::size_t which = 0;  // index into half_ and unit
  switch (in.dtype()) {
    case DType::u8: which = 0; break;
    case DType::u16: which = 1; break;
    case DType::f32: which = 2; break;
    default: throw Error("image.gaussian (gpu): unsupported element type in " + in.describe());
  }
  static constexpr gpu::Pixel pixels[3] = {gpu::Pixel::u8, gpu::Pixel::u16, gpu::Pixel::f32};
  const gpu::Pixel pixel = pixels[which];
  // OpenCV blurs an image of one row (column) with a kernel of size 1 along
  // that axis: the weight "one" in the pixel type's arithmetic.
  static constexpr double unit[3] = {256.0, 65536.0, 1.0};
  const gpu::HalfKernel full{half_[which].data(), static_cast<int>(half_[which].size()) - 1};
  const gpu::HalfKernel identity{&unit[which], 0};

  Array out = ctx.allocate(in.dtype(), in.shape());
  const auto scratch_bytes = static_cast<std::int64_t>(gpu::scratch_bytes(pixel, rows, cols, channels));
  Array scratch = ctx.allocate(DType::u8, {scratch_bytes});

  gpu::BlurJob job;
  job.device = ctx.gpu();
  job.pixel = pixel;
  job.rows = rows, job.cols = cols, job.channels = channels;
  job.src = in.raw();
  job.src_stride[0] = in.stride(0);
  job.src_stride[1] = in.stride(1);
  job.src_stride[2] = in.ndim() == 3 ? in.stride(2) : 1;
  job.dst = out.raw();
  job.scratch = scratch.raw();
  job.along_cols = cols == 1 ? identity : full;
  job.along_rows = rows == 1 ? identity : full;
  gpu::gaussian_blur(job, ctx.stream());
  // Waiting here reports a failed kernel as this operator's error, with its
  // name; the engine waits for the stream right after gpu() anyway, so it
  // costs nothing. (`scratch` may be dropped before its kernels run: the
  // pool reuses a block only after the stream has been waited for.)
  gpu::synchronize(ctx.gpu(), ctx.stream());
  ctx.emit("image", Value(std::move(out)));
}

}  // namespace flowd::image
