#pragma once
// A path under the tests' scratch folder for a store file, removed if an
// earlier run left it: NAME-PID.EXTENSION.
#include <unistd.h>

#include <filesystem>
#include <string>

namespace flowd::store::test {

inline std::filesystem::path fresh_path(const std::string& name, const std::string& extension) {
  const std::filesystem::path dir = std::filesystem::path(FLOWD_TEST_TMP) / "store";
  std::filesystem::create_directories(dir);
  const std::filesystem::path p = dir / (name + "-" + std::to_string(::getpid()) + extension);
  std::filesystem::remove(p);
  return p;
}

}  // namespace flowd::store::test
