#include "memory/cuda_device.hpp"

#include <cuda_runtime_api.h>

#include <cstring>

#include "flowd/error.hpp"

namespace flowd::memory {

namespace {

void check(cudaError_t e, const char* what, int ordinal) {
  if (e != cudaSuccess)
    throw Error(std::string("GPU ") + std::to_string(ordinal) + ": " + what + " failed: " + cudaGetErrorString(e));
}

std::size_t size_class_of(std::size_t bytes) {
  std::size_t c = 256;
  while (c < bytes) c <<= 1;
  return c;
}

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace

BlockPool::~BlockPool() {
  reclaim();
  for (auto& [size, blocks] : free_)
    for (void* p : blocks) {
      if (kind_ == Kind::device) cudaFree(p);
      else cudaFreeHost(p);
    }
}

void BlockPool::reclaim() noexcept {
  std::lock_guard lk(m_);
  for (auto& [p, c] : pending_) free_[c].push_back(p);
  pending_.clear();
}

std::shared_ptr<void> BlockPool::get(std::size_t bytes) {
  const std::size_t c = size_class_of(std::max<std::size_t>(bytes, 1));
  void* p = nullptr;
  {
    std::lock_guard lk(m_);
    auto& list = free_[c];
    if (!list.empty()) {
      p = list.back();
      list.pop_back();
    }
  }
  if (!p) {
    check(cudaSetDevice(ordinal_), "cudaSetDevice", ordinal_);
    if (kind_ == Kind::device) check(cudaMalloc(&p, c), "cudaMalloc", ordinal_);
    else check(cudaMallocHost(&p, c), "cudaMallocHost", ordinal_);
  }
  // The deleter holds the pool alive as long as any of its blocks is in use.
  return std::shared_ptr<void>(p, [pool = shared_from_this(), c](void* q) { pool->put(q, c); });
}

void BlockPool::put(void* p, std::size_t size_class) noexcept {
  std::lock_guard lk(m_);
  // A device block freed while its GPU task runs (a variant's scratch) may
  // still be read by kernels queued on the compute stream: it becomes
  // reusable once that stream has been synchronised (reclaim()). Pinned
  // blocks are only used by synchronous copies.
  if (kind_ == Kind::device) pending_.emplace_back(p, size_class);
  else free_[size_class].push_back(p);
}

CudaDevice::CudaDevice(int ordinal, std::string name)
    : ordinal_(ordinal),
      name_("gpu" + std::to_string(ordinal) + " (" + std::move(name) + ")"),
      device_pool_(std::make_shared<BlockPool>(BlockPool::Kind::device, ordinal)),
      pinned_pool_(std::make_shared<BlockPool>(BlockPool::Kind::pinned, ordinal)) {
  check(cudaSetDevice(ordinal_), "cudaSetDevice", ordinal_);
  cudaStream_t s[3];
  for (auto& x : s) check(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking), "cudaStreamCreate", ordinal_);
  upload_ = s[0], compute_ = s[1], download_ = s[2];
}

CudaDevice::~CudaDevice() {
  cudaSetDevice(ordinal_);
  for (void* s : {upload_, compute_, download_}) cudaStreamDestroy(as_stream(s));
}

Array CudaDevice::allocate(DType dtype, std::span<const std::int64_t> shape) {
  std::size_t bytes = size_of(dtype);
  for (auto d : shape) bytes *= static_cast<std::size_t>(d);
  auto block = device_pool_->get(bytes);
  void* p = block.get();
  return Array::adopt(std::move(block), p, dtype, shape, {}, Placement{Residency::device, ordinal_});
}

Array CudaDevice::upload(const Array& host_array) {
  if (host_array.placement().residency == Residency::device)
    throw Error("GPU " + std::to_string(ordinal_) + ": upload of an array that is already in GPU memory");
  const Array host = host_array.contiguous();
  Array dev = allocate(host.dtype(), host.shape());
  const std::size_t bytes = host.nbytes();
  if (bytes == 0) return dev;
  check(cudaSetDevice(ordinal_), "cudaSetDevice", ordinal_);
  if (host.placement().residency == Residency::pinned_host) {
    check(cudaMemcpyAsync(dev.raw(), host.raw(), bytes, cudaMemcpyHostToDevice, as_stream(upload_)), "upload", ordinal_);
    check(cudaStreamSynchronize(as_stream(upload_)), "upload", ordinal_);
    return dev;
  }
  // Through a pinned buffer: only page-locked memory copies asynchronously
  // at full bandwidth.
  auto staging = pinned_pool_->get(bytes);
  std::memcpy(staging.get(), host.raw(), bytes);
  check(cudaMemcpyAsync(dev.raw(), staging.get(), bytes, cudaMemcpyHostToDevice, as_stream(upload_)), "upload", ordinal_);
  check(cudaStreamSynchronize(as_stream(upload_)), "upload", ordinal_);
  return dev;
}

Array CudaDevice::download(const Array& on_device) {
  if (on_device.placement().residency != Residency::device || on_device.placement().device != ordinal_)
    throw Error("GPU " + std::to_string(ordinal_) + ": download of an array that is not in its memory");
  if (!on_device.is_contiguous())
    throw Error("GPU " + std::to_string(ordinal_) +
                ": download of a strided device array (GPU variants must emit contiguous arrays)");
  Array host = Array::uninitialized(on_device.dtype(), on_device.shape());
  const std::size_t bytes = host.nbytes();
  if (bytes == 0) return host;
  check(cudaSetDevice(ordinal_), "cudaSetDevice", ordinal_);
  auto staging = pinned_pool_->get(bytes);
  check(cudaMemcpyAsync(staging.get(), on_device.raw(), bytes, cudaMemcpyDeviceToHost, as_stream(download_)), "download",
        ordinal_);
  check(cudaStreamSynchronize(as_stream(download_)), "download", ordinal_);
  std::memcpy(host.raw(), staging.get(), bytes);
  return host;
}

Array CudaDevice::pin(const Array& host_array) {
  if (!host_array.placement().host_accessible())
    throw Error("GPU " + std::to_string(ordinal_) + ": pinning an array that is in GPU memory");
  if (host_array.placement().residency == Residency::pinned_host && host_array.is_contiguous()) return host_array;
  const Array host = host_array.contiguous();
  const std::size_t bytes = host.nbytes();
  auto block = pinned_pool_->get(std::max<std::size_t>(bytes, 1));
  void* p = block.get();
  std::memcpy(p, host.raw(), bytes);
  return Array::adopt(std::move(block), p, host.dtype(), host.shape(), {}, Placement{Residency::pinned_host, -1});
}

void CudaDevice::synchronize() {
  check(cudaSetDevice(ordinal_), "cudaSetDevice", ordinal_);
  check(cudaStreamSynchronize(as_stream(compute_)), "the GPU variant's stream", ordinal_);
  device_pool_->reclaim();
}

}  // namespace flowd::memory
