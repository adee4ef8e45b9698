#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "flowd/error.hpp"
#include "net/cluster/rendezvous.hpp"

namespace cl = flowd::net::cluster;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

const std::string key(40, 'k');

class Rendezvous : public ::testing::Test {
protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(FLOWD_TEST_TMP) / "cluster" / info->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const flowd::Error& e) {
    return e.what();
  }
  return "no error";
}

cl::LaunchInfo worker(std::string job = "4711.0") { return {"slurm", 2, 4, "node2", std::move(job)}; }

}  // namespace

TEST_F(Rendezvous, WriteThenRead) {
  const auto path = dir_ / "rv.json";
  cl::write_rendezvous(path, {"tcp://node017:40123", key, "4711.0"});
  const auto r = cl::read_rendezvous(path);
  EXPECT_EQ(r.endpoint, "tcp://node017:40123");
  EXPECT_EQ(r.server_public_key, key);
  EXPECT_EQ(r.job_id, "4711.0");
  // Only the file itself: the temp file was renamed, not left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);

  cl::write_rendezvous(path, {"tcp://[fe80::1]:1", "", ""});  // replaces
  EXPECT_EQ(cl::read_rendezvous(path).endpoint, "tcp://[fe80::1]:1");
  EXPECT_EQ(cl::read_rendezvous(path).server_public_key, "");
}

TEST_F(Rendezvous, RefusesUnconnectableEndpoints) {
  for (const char* ep : {"tcp://0.0.0.0:5555", "tcp://node:*", "ipc:///tmp/x", "tcp://node", "tcp://:5", "tcp://n:70000"}) {
    EXPECT_NE(error_of([&] { cl::write_rendezvous(dir_ / "rv.json", {ep, "", ""}); }).find("is not a coordinator address"),
              std::string::npos)
        << ep;
  }
  EXPECT_FALSE(fs::exists(dir_ / "rv.json"));
}

TEST_F(Rendezvous, MalformedFilesNameThePath) {
  const auto path = dir_ / "rv.json";
  const auto check = [&](const std::string& text, const std::string& expected) {
    std::ofstream(path) << text;
    const auto msg = error_of([&] { (void)cl::read_rendezvous(path); });
    EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find(expected), std::string::npos) << msg;
  };
  check("{", "not JSON");
  check("[]", "not a JSON object");
  check(R"({"format":"other","version":1,"endpoint":"tcp://a:1"})", "\"format\"");
  check(R"({"format":"flowd-rendezvous","version":2,"endpoint":"tcp://a:1"})", "\"version\"");
  check(R"({"format":"flowd-rendezvous","version":1})", "\"endpoint\" is missing");
  check(R"({"format":"flowd-rendezvous","version":1,"endpoint":5})", "\"endpoint\" is not a string");
  check(R"({"format":"flowd-rendezvous","version":1,"endpoint":"tcp://a:1","server_public_key":"short"})",
        "40-character");
  EXPECT_NE(error_of([&] { (void)cl::read_rendezvous(dir_ / "missing.json"); }).find("cannot open"),
            std::string::npos);
}

TEST_F(Rendezvous, WaitSeesALateWriter) {
  const auto path = dir_ / "rv.json";
  std::thread writer([&] {
    std::this_thread::sleep_for(150ms);
    cl::write_rendezvous(path, {"tcp://node1:5000", key, "4711.0"});
  });
  const auto r = cl::wait_for_rendezvous(path, {5s, 10ms, "4711.0"});
  writer.join();
  EXPECT_EQ(r.endpoint, "tcp://node1:5000");
}

TEST_F(Rendezvous, TimeoutNamesFileAndWait) {
  const auto path = dir_ / "never.json";
  const auto start = std::chrono::steady_clock::now();
  const auto msg = error_of([&] { (void)cl::wait_for_rendezvous(path, {200ms, 20ms, ""}); });
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
  EXPECT_NE(msg.find("rendezvous file " + path.string() + " did not appear within"), std::string::npos) << msg;
  EXPECT_NE(msg.find(" ms"), std::string::npos) << msg;
}

TEST_F(Rendezvous, StaleFileFromAnotherJobIsIgnored) {
  const auto path = dir_ / "rv.json";
  cl::write_rendezvous(path, {"tcp://old:1", "", "4000.0"});
  const auto msg = error_of([&] { (void)cl::wait_for_rendezvous(path, {100ms, 10ms, "4711.0"}); });
  EXPECT_NE(msg.find("still holds job 4000.0, not this job 4711.0"), std::string::npos) << msg;

  std::thread writer([&] {
    std::this_thread::sleep_for(100ms);
    cl::write_rendezvous(path, {"tcp://new:2", "", "4711.0"});
  });
  const auto r = cl::wait_for_rendezvous(path, {5s, 10ms, "4711.0"});
  writer.join();
  EXPECT_EQ(r.endpoint, "tcp://new:2");
}

TEST_F(Rendezvous, ResolveCoordinator) {
  const auto path = dir_ / "rv.json";
  cl::write_rendezvous(path, {"tcp://node1:5000", key, "4711.0"});

  // FLOWD_COORDINATOR wins over the file.
  auto r = cl::resolve_coordinator(
      cl::map_env({{"FLOWD_COORDINATOR", "tcp://head:6000"}, {"FLOWD_RENDEZVOUS", path.string()}}), worker());
  EXPECT_EQ(r.endpoint, "tcp://head:6000");
  EXPECT_EQ(r.server_public_key, "");

  r = cl::resolve_coordinator(cl::map_env({{"FLOWD_RENDEZVOUS", path.string()}}), worker());
  EXPECT_EQ(r.endpoint, "tcp://node1:5000");
  EXPECT_EQ(r.server_public_key, key);
  EXPECT_EQ(cl::rendezvous_path(cl::map_env({{"FLOWD_RENDEZVOUS", path.string()}})), path);

  // The job id comes from the worker's own launch.
  EXPECT_NE(error_of([&] {
              (void)cl::resolve_coordinator(cl::map_env({{"FLOWD_RENDEZVOUS", path.string()}}), worker("5000.0"),
                                            {50ms, 10ms, ""});
            }).find("still holds job 4711.0"),
            std::string::npos);

  EXPECT_NE(error_of([&] { (void)cl::resolve_coordinator(cl::map_env({{"FLOWD_COORDINATOR", "head:6000"}}), worker()); })
                .find("FLOWD_COORDINATOR='head:6000' is not a coordinator address"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)cl::resolve_coordinator(cl::map_env({}), worker()); })
                .find("rank 2 of 4 (slurm) is a worker but does not know where the coordinator is"),
            std::string::npos);
  EXPECT_FALSE(cl::rendezvous_path(cl::map_env({})));
}
