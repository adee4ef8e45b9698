#include <gtest/gtest.h>

#include <algorithm>

#include "flowd/error.hpp"
#include "net/cluster/advertise.hpp"
#include "net/cluster/launcher.hpp"

namespace cl = flowd::net::cluster;

namespace {

std::string error_of(const cl::Env& env) {
  try {
    (void)cl::detect_launcher(env);
  } catch (const flowd::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(Launcher, NoneWithoutLauncherVariables) {
  EXPECT_FALSE(cl::detect_launcher(cl::map_env({{"HOME", "/home/u"}})));
}

TEST(Launcher, SallocShellIsNotATask) {
  EXPECT_FALSE(cl::detect_launcher(cl::map_env({{"SLURM_NTASKS", "8"}, {"SLURM_JOB_ID", "4711"}})));
}

TEST(Launcher, Slurm) {
  const auto info = cl::detect_launcher(cl::map_env({{"SLURM_PROCID", "3"},
                                                     {"SLURM_NTASKS", "8"},
                                                     {"SLURM_STEP_NUM_TASKS", "4"},
                                                     {"SLURMD_NODENAME", "node017"},
                                                     {"SLURM_JOB_ID", "4711"},
                                                     {"SLURM_STEP_ID", "0"}}));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->launcher, "slurm");
  EXPECT_EQ(info->rank, 3);
  EXPECT_EQ(info->size, 4);  // the step's task count, not the job's
  EXPECT_EQ(info->node, "node017");
  EXPECT_EQ(info->job_id, "4711.0");
  EXPECT_FALSE(info->is_coordinator());
}

TEST(Launcher, SlurmFallsBackToNtasksAndHostname) {
  const auto info = cl::detect_launcher(cl::map_env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->size, 2);
  EXPECT_TRUE(info->is_coordinator());
  EXPECT_EQ(info->node, cl::local_hostname());
  EXPECT_FALSE(info->node.empty());
}

TEST(Launcher, OpenMpi) {
  const auto info = cl::detect_launcher(cl::map_env(
      {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "16"}, {"PMIX_NAMESPACE", "prterun-x-123@1"}}));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->launcher, "openmpi");
  EXPECT_EQ(info->rank, 0);
  EXPECT_EQ(info->size, 16);
  EXPECT_EQ(info->job_id, "prterun-x-123@1");
}

TEST(Launcher, Pmi) {
  const auto info = cl::detect_launcher(cl::map_env({{"PMI_RANK", "5"}, {"PMI_SIZE", "6"}}));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->launcher, "pmi");
  EXPECT_EQ(info->rank, 5);
  EXPECT_EQ(info->size, 6);
}

TEST(Launcher, MpirunInsideAllocationPrefersMpi) {
  // The batch step's SLURM_PROCID=0 is inherited by every mpirun rank.
  const auto info = cl::detect_launcher(cl::map_env({{"SLURM_PROCID", "0"},
                                                     {"SLURM_NTASKS", "32"},
                                                     {"SLURMD_NODENAME", "node001"},
                                                     {"OMPI_COMM_WORLD_RANK", "7"},
                                                     {"OMPI_COMM_WORLD_SIZE", "32"}}));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->launcher, "openmpi");
  EXPECT_EQ(info->rank, 7);
  EXPECT_EQ(info->node, "node001");  // the node name is still right
}

TEST(Launcher, HydraInsideAllocationPrefersPmi) {
  const auto info = cl::detect_launcher(
      cl::map_env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"PMI_RANK", "2"}, {"PMI_SIZE", "4"}}));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->launcher, "pmi");
  EXPECT_EQ(info->rank, 2);
}

TEST(Launcher, ForcedLauncher) {
  const std::map<std::string, std::string, std::less<>> both = {
      {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}};
  auto forced = both;
  forced["FLOWD_LAUNCHER"] = "slurm";
  const auto info = cl::detect_launcher(cl::map_env(forced));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->launcher, "slurm");
  EXPECT_EQ(info->rank, 1);

  forced["FLOWD_LAUNCHER"] = "none";
  EXPECT_FALSE(cl::detect_launcher(cl::map_env(forced)));

  forced["FLOWD_LAUNCHER"] = "pmi";
  EXPECT_NE(error_of(cl::map_env(forced)).find("FLOWD_LAUNCHER=pmi but PMI_RANK is not set"), std::string::npos);

  forced["FLOWD_LAUNCHER"] = "lsf";
  EXPECT_NE(error_of(cl::map_env(forced)).find("FLOWD_LAUNCHER='lsf'"), std::string::npos);
}

TEST(Launcher, BadValuesNameTheVariable) {
  EXPECT_NE(error_of(cl::map_env({{"SLURM_PROCID", "x1"}, {"SLURM_NTASKS", "4"}}))
                .find("SLURM_PROCID='x1' (set by slurm) is not a non-negative decimal number"),
            std::string::npos);
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "99999999999"}) {
    EXPECT_NE(error_of(cl::map_env({{"PMI_RANK", "0"}, {"PMI_SIZE", bad}})).find("PMI_SIZE='"), std::string::npos)
        << "'" << bad << "'";
  }
  EXPECT_NE(error_of(cl::map_env({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "0"}}))
                .find("OMPI_COMM_WORLD_SIZE=0"),
            std::string::npos);
  EXPECT_NE(error_of(cl::map_env({{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}}))
                .find("OMPI_COMM_WORLD_RANK=4 is not below OMPI_COMM_WORLD_SIZE=4"),
            std::string::npos);
  EXPECT_NE(error_of(cl::map_env({{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_NTASKS", "x"}}))
                .find("no error"),
            std::string::npos);  // the step's count wins; the job's is not read
}

TEST(Launcher, IncompleteEnvironment) {
  EXPECT_NE(error_of(cl::map_env({{"SLURM_PROCID", "0"}}))
                .find("SLURM_PROCID is set but SLURM_STEP_NUM_TASKS (or SLURM_NTASKS) is not"),
            std::string::npos);
  EXPECT_NE(error_of(cl::map_env({{"PMI_SIZE", "3"}})).find("PMI_SIZE is set but PMI_RANK is not"),
            std::string::npos);
}

TEST(Advertise, OverrideWins) {
  cl::AdvertiseContext ctx;
  ctx.override_host = "node017-ib";
  ctx.slurm_node = "node017";
  EXPECT_EQ(cl::advertised_endpoint("tcp://0.0.0.0:5555", ctx), "tcp://node017-ib:5555");
  ctx.override_host = "fe80::1";
  EXPECT_EQ(cl::advertised_endpoint("tcp://[::]:5555", ctx), "tcp://[fe80::1]:5555");
}

TEST(Advertise, WildcardUsesSlurmNodeThenInterface) {
  cl::AdvertiseContext ctx;
  ctx.interfaces = {{"lo", "127.0.0.1", true, true},
                    {"eth1", "10.9.9.9", false, false},
                    {"eth2", "169.254.1.1", true, false},
                    {"eth0", "10.0.0.17", true, false}};
  EXPECT_EQ(cl::advertised_endpoint("tcp://0.0.0.0:40123", ctx), "tcp://10.0.0.17:40123");
  EXPECT_EQ(cl::advertised_endpoint("tcp://*:40123", ctx), "tcp://10.0.0.17:40123");
  ctx.slurm_node = "node017";
  EXPECT_EQ(cl::advertised_endpoint("tcp://0.0.0.0:40123", ctx), "tcp://node017:40123");
  EXPECT_EQ(cl::advertised_endpoint("tcp://eth1:40123", ctx), "tcp://10.9.9.9:40123");
}

TEST(Advertise, ConcreteAndLocalEndpointsUnchanged) {
  cl::AdvertiseContext ctx;
  ctx.slurm_node = "node017";
  EXPECT_EQ(cl::advertised_endpoint("tcp://10.1.2.3:7000", ctx), "tcp://10.1.2.3:7000");
  EXPECT_EQ(cl::advertised_endpoint("tcp://127.0.0.1:7000", ctx), "tcp://127.0.0.1:7000");
  EXPECT_EQ(cl::advertised_endpoint("ipc:///tmp/flowd.sock", ctx), "ipc:///tmp/flowd.sock");
}

TEST(Advertise, NothingReachableIsAnError) {
  cl::AdvertiseContext ctx;
  ctx.interfaces = {{"lo", "127.0.0.1", true, true}};
  try {
    (void)cl::advertised_endpoint("tcp://0.0.0.0:1", ctx);
    FAIL() << "expected an error";
  } catch (const flowd::Error& e) {
    EXPECT_NE(std::string(e.what()).find("FLOWD_ADVERTISE"), std::string::npos);
  }
}

TEST(Advertise, ListsThisMachinesInterfaces) {
  for (const auto& i : cl::ipv4_interfaces()) {
    EXPECT_FALSE(i.name.empty());
    EXPECT_EQ(std::count(i.ipv4.begin(), i.ipv4.end(), '.'), 3) << i.ipv4;
  }
}
