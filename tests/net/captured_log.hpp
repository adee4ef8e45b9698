#pragma once
// Shared by the network tests: a log sink that keeps every line, for tests
// that check what a server or handler said. Thread-safe: server, ZAP and
// monitor threads log while the test reads.
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "flowd/operator.hpp"

namespace flowd::nettest {

struct CapturedLog {
  std::mutex m;
  std::vector<std::string> lines;
  std::function<void(LogLevel, std::string_view)> sink() {
    return [this](LogLevel, std::string_view msg) {
      std::lock_guard lock(m);
      lines.emplace_back(msg);
    };
  }
  std::size_t count(const std::string& needle) {
    std::lock_guard lock(m);
    std::size_t n = 0;
    for (const auto& l : lines) n += l.find(needle) != std::string::npos;
    return n;
  }
  // Waits up to `timeout` for a line containing `needle`.
  bool wait_for(const std::string& needle, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      if (count(needle) > 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  std::string all() {
    std::lock_guard lock(m);
    std::string s;
    for (const auto& l : lines) s += l + "\n";
    return s;
  }
};

}  // namespace flowd::nettest
