// The engine's CUDA device (engine/memory/cuda_device.hpp): its caching
// pools and host <-> device copies. Needs a GPU; skips without one.
#include <cstring>
#include <set>

#include "gpu_support.hpp"

using namespace flowd;

namespace {

// The bytes of an array in C order.
std::vector<std::uint8_t> bytes_of(const Array& a) {
  const Array c = a.contiguous();
  const auto* p = static_cast<const std::uint8_t*>(c.raw());
  return {p, p + c.nbytes()};
}

}  // namespace

TEST(GpuCudaDevice, DiscoveryExplainsAnEmptyResult) {
  // Runs everywhere: zero GPUs is a normal outcome, with a reason.
  const auto d = memory::discover_gpus();
  if (d.gpus.empty()) {
    EXPECT_FALSE(d.why_none.empty());
  } else {
    EXPECT_TRUE(memory::built_with_cuda());
    for (const auto& g : d.gpus) EXPECT_FALSE(g.name.empty()) << "GPU " << g.ordinal;
  }
  if (!memory::built_with_cuda()) {
    EXPECT_TRUE(d.gpus.empty());
  }
}

TEST(GpuCudaDevice, PoolsReuseFreedBlocksBySizeClass) {
  FLOWD_REQUIRE_GPU(g);
#if FLOWD_HAVE_CUDA
  for (const auto kind : {memory::BlockPool::Kind::device, memory::BlockPool::Kind::pinned}) {
    SCOPED_TRACE(kind == memory::BlockPool::Kind::device ? "device pool" : "pinned pool");
    auto pool = std::make_shared<memory::BlockPool>(kind, g.ordinal);
    void* a = nullptr;
    void* b = nullptr;
    {
      auto x = pool->get(1000);
      auto y = pool->get(1000);  // while x is held: another block
      a = x.get(), b = y.get();
      ASSERT_NE(a, nullptr);
      ASSERT_NE(b, nullptr);
      EXPECT_NE(a, b);
      if (kind == memory::BlockPool::Kind::pinned) {  // host-accessible, the whole size class
        std::memset(a, 0x5a, 1024);
        EXPECT_EQ(static_cast<unsigned char*>(a)[1023], 0x5a);
      }
    }
    // Device blocks freed while a GPU task may still use them are reusable
    // only after reclaim() (called once the compute stream is synchronised).
    std::shared_ptr<void> fresh;  // held to the end, so it is not among the reused blocks
    if (kind == memory::BlockPool::Kind::device) {
      fresh = pool->get(1000);
      EXPECT_NE(fresh.get(), a);
      EXPECT_NE(fresh.get(), b);
      pool->reclaim();
    }
    // Both freed: the next two requests of the same size class (1024 bytes)
    // get them back; another size class gets a new block.
    auto c = pool->get(1024);
    auto d = pool->get(700);
    EXPECT_EQ((std::set<void*>{c.get(), d.get()}), (std::set<void*>{a, b}));
    auto e = pool->get(5000);
    EXPECT_NE(e.get(), a);
    EXPECT_NE(e.get(), b);
  }
#endif
}

TEST(GpuCudaDevice, AllocateGivesDeviceArraysFromThePool) {
  FLOWD_REQUIRE_GPU(g);
  auto dev = gputest::cuda_device(g);
  EXPECT_FALSE(dev->simulated());
  EXPECT_EQ(dev->ordinal(), g.ordinal);
  EXPECT_NE(dev->compute_stream(), nullptr);
  const void* first = nullptr;
  {
    const std::int64_t shape[] = {10, 100};
    Array a = dev->allocate(DType::u8, shape);
    EXPECT_EQ(a.placement(), (Placement{Residency::device, g.ordinal}));
    EXPECT_TRUE(a.is_contiguous());
    EXPECT_THROW(static_cast<void>(a.data<std::uint8_t>()), Error);  // no host access to device memory
    first = a.raw();
  }
  // A freed device block is reused once the stream it may still be read on
  // has been waited for (BlockPool::reclaim, PoolsReuseFreedBlocksBySizeClass).
  dev->synchronize();
  const std::int64_t shape[] = {250};
  Array b = dev->allocate(DType::f32, shape);  // 1000 bytes: the same 1024-byte class
  EXPECT_EQ(b.raw(), first);
  dev->synchronize();
}

TEST(GpuCudaDevice, StridedHostToDeviceToHostRoundTripIsByteIdentical) {
  FLOWD_REQUIRE_GPU(g);
  auto dev = gputest::cuda_device(g);
  std::uint32_t seed = 1;
  for (const DType t : {DType::u8, DType::u16, DType::i32, DType::f32, DType::f64}) {
    SCOPED_TRACE(std::string(name_of(t)));
    const Array big = gputest::random_array(t, {37, 53, 4}, seed++);
    // Rows, columns and channels all windowed: strided in every dimension.
    const Array view = big.slice(0, 3, 31).slice(1, 5, 50).slice(2, 1, 3);
    ASSERT_FALSE(view.is_contiguous());
    const Array on_dev = dev->upload(view);
    EXPECT_EQ(on_dev.placement().residency, Residency::device);
    EXPECT_EQ(on_dev.placement().device, g.ordinal);
    EXPECT_TRUE(on_dev.is_contiguous());
    EXPECT_EQ(std::vector<std::int64_t>(on_dev.shape().begin(), on_dev.shape().end()),
              (std::vector<std::int64_t>{28, 45, 2}));
    const Array back = dev->download(on_dev);
    EXPECT_TRUE(back.placement().host_accessible());
    EXPECT_EQ(back.dtype(), t);
    EXPECT_EQ(bytes_of(back), bytes_of(view));
    // A contiguous array and an empty one too.
    EXPECT_EQ(bytes_of(dev->download(dev->upload(big))), bytes_of(big));
    const Array none = big.slice(0, 5, 5);
    EXPECT_EQ(dev->download(dev->upload(none)).numel(), 0);
  }
  // Only device arrays of this GPU can be downloaded.
  EXPECT_THROW(dev->download(gputest::random_array(DType::u8, {4}, 9)), Error);
}
