// Engine-managed transfers on (simulated) GPUs: an item moves to a device once
// and back to the host once, whatever the number of consumers.
#include <gtest/gtest.h>

#include "support/helpers.hpp"

using namespace flowd;
using runtime::RunStatus;

namespace {

constexpr std::uint64_t bytes = 65536;
constexpr std::uint64_t items = 10;

// src -> a -> {b, c}; b -> two sinks, c -> one sink. Every relay runs on the
// simulated GPU (prefer_gpu), so: src items go up once (a), a's outputs stay
// there (b and c read them in place), b's and c's outputs come down once each
// (b's two sinks share the host copy).
std::string fork(const std::filesystem::path& dir) {
  auto sink = [&](const char* name, const char* from) {
    return std::string(R"(")") + name + R"(": {"op": "test.record", "inputs": {"in": ")" + from +
           R"("}, "params": {"path": ")" + (dir / name).string() + R"(.txt"}})";
  };
  return R"({"version": 1, "stages": {
    "src": {"op": "test.count", "params": {"count": )" + std::to_string(items) + R"(, "bytes": )" + std::to_string(bytes) + R"(}},
    "a":   {"op": "test.relay", "inputs": {"in": "src.out"}},
    "b":   {"op": "test.relay", "inputs": {"in": "a.out"}},
    "c":   {"op": "test.relay", "inputs": {"in": "a.out"}},
    )" + sink("s1", "b.out") + ",\n" + sink("s2", "b.out") + ",\n" + sink("s3", "c.out") + R"(
  }})";
}

runtime::RunOptions sim_gpu_only(bool prefetch) {
  runtime::RunOptions o;
  o.cpu_workers = 1;
  o.gpus = runtime::GpuSpec::parse("sim:1");
  o.prefer_gpu = true;
  o.prefetch = prefetch;
  return o;
}

}  // namespace

TEST(Transfers, AnItemIsNeverCopiedTwice) {
  for (const bool prefetch : {false, true}) {
    const auto dir = test::scratch();
    trace::Recorder rec(true);
    auto o = sim_gpu_only(prefetch);
    o.recorder = &rec;
    const auto r = test::run(fork(dir), o);
    ASSERT_EQ(r.status, RunStatus::succeeded);
    EXPECT_EQ(r.bytes_to_devices, items * bytes) << "prefetch " << prefetch;
    EXPECT_EQ(r.bytes_to_host, 2 * items * bytes) << "prefetch " << prefetch;
    for (const char* s : {"s1", "s2", "s3"}) EXPECT_EQ(test::lines(dir / (std::string(s) + ".txt")).size(), items);
    // The copies are in the trace, on the GPU's copy track, with their bytes.
    std::uint64_t up = 0, down = 0;
    for (const auto& s : rec.snapshot(Json::object()).spans) {
      if (s.name == "upload") up += s.bytes;
      if (s.name == "download") down += s.bytes;
      if (s.variant == "copy") {
        EXPECT_GE(s.track, 1000);
      }
    }
    EXPECT_EQ(up, items * bytes);
    EXPECT_EQ(down, 2 * items * bytes);
  }
}

TEST(Transfers, CpuOnlyRunsMoveNothing) {
  const auto dir = test::scratch();
  runtime::RunOptions o;
  o.cpu_workers = 2;
  const auto r = test::run(fork(dir), o);
  ASSERT_EQ(r.status, RunStatus::succeeded);
  EXPECT_EQ(r.bytes_to_devices, 0u);
  EXPECT_EQ(r.bytes_to_host, 0u);
}
