// The performance model: statistics, estimates and persistence.
#include <gtest/gtest.h>

#include <fstream>

#include "sched/perf_model.hpp"
#include "support/helpers.hpp"

using namespace flowd;
using sched::Direction;
using sched::PerfModel;
using sched::Variant;

TEST(PerfModel, RunningStatsAreWelford) {
  sched::RunningStats s;
  for (double x : {2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0}) s.add(x);
  EXPECT_EQ(s.n, 8u);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_NEAR(s.variance(), 32.0 / 7.0, 1e-12);
}

TEST(PerfModel, SizeClassesAreLog2OfBytes) {
  EXPECT_EQ(PerfModel::size_class(0), 0);
  EXPECT_EQ(PerfModel::size_class(1), 0);
  EXPECT_EQ(PerfModel::size_class(1024), 10);
  EXPECT_EQ(PerfModel::size_class(1500), 10);
  EXPECT_EQ(PerfModel::size_class(std::uint64_t{48} << 20), 25);
}

TEST(PerfModel, SpeedupIsMeasuredThenHintedThenOne) {
  PerfModel m;
  EXPECT_DOUBLE_EQ(m.speedup("a.op", 20), 1.0);
  EXPECT_FALSE(m.has_gpu_estimate("a.op"));
  m.hint("a.op", 8);
  EXPECT_DOUBLE_EQ(m.speedup("a.op", 20), 8.0);
  EXPECT_TRUE(m.has_gpu_estimate("a.op"));
  m.record("a.op", Variant::cpu, 20, 0.5);
  EXPECT_DOUBLE_EQ(m.speedup("a.op", 20), 8.0);  // one side only: still the hint
  m.record("a.op", Variant::gpu, 20, 0.05);
  EXPECT_NEAR(m.speedup("a.op", 20), 10.0, 1e-12);
  m.record("a.op", Variant::sim, 20, 0.001);  // simulated runs never pose as a GPU
  EXPECT_NEAR(m.speedup("a.op", 20), 10.0, 1e-12);
}

TEST(PerfModel, NearestSizeClassIsScaledBySize) {
  PerfModel m;
  m.record("a.op", Variant::cpu, 20, 1.0);
  m.record("a.op", Variant::cpu, 20, 3.0);
  EXPECT_DOUBLE_EQ(*m.seconds("a.op", Variant::cpu, 20), 2.0);
  EXPECT_DOUBLE_EQ(*m.seconds("a.op", Variant::cpu, 22), 8.0);  // 4x the bytes
  EXPECT_DOUBLE_EQ(*m.seconds("a.op", Variant::cpu, 19), 1.0);
  EXPECT_FALSE(m.seconds("a.op", Variant::gpu, 20));
  EXPECT_FALSE(m.seconds("other", Variant::cpu, 20));
}

TEST(PerfModel, BandwidthAndTransferImpact) {
  PerfModel m;
  EXPECT_FALSE(m.bandwidth(0, Direction::to_device));
  EXPECT_DOUBLE_EQ(m.transfer_impact(), 0.2);
  m.record_transfer(0, Direction::to_device, 1000000, 0.001);
  m.record_transfer(0, Direction::to_device, 3000000, 0.001);
  EXPECT_DOUBLE_EQ(*m.bandwidth(0, Direction::to_device), 2e9);
  EXPECT_FALSE(m.bandwidth(0, Direction::to_host));
  m.record_gpu_task(0.01, 0.03);
  EXPECT_DOUBLE_EQ(m.transfer_impact(), 0.25);
}

TEST(PerfModel, SurvivesAJsonRoundTripAndAFile) {
  const auto dir = test::scratch();
  PerfModel m;
  m.hint("a.op", 4);
  m.record("a.op", Variant::cpu, 12, 0.2);
  m.record("a.op", Variant::gpu, 12, 0.05);
  m.record("b.op", Variant::sim, 3, 0.1);
  m.record_transfer(1, Direction::to_host, 1 << 20, 0.002);
  m.record_gpu_task(0.002, 0.05);
  m.save(dir / "sub" / "model.json");
  const PerfModel back = PerfModel::load(dir / "sub" / "model.json");
  EXPECT_EQ(back.to_json(), m.to_json());
  EXPECT_NEAR(back.speedup("a.op", 12), 4.0, 1e-12);
  const auto s = back.summary();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].op, "a.op");
  EXPECT_TRUE(s[0].measured);
  EXPECT_EQ(s[1].sim_runs, 1u);
  EXPECT_TRUE(PerfModel::load(dir / "none.json").summary().empty());
}

TEST(PerfModel, ACorruptFileIsNamed) {
  const auto dir = test::scratch();
  std::ofstream(dir / "bad.json") << "{ not json";
  try {
    PerfModel::load(dir / "bad.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("flowd calibrate"), std::string::npos) << e.what();
  }
}
