#include "util/malloc_tuning.hpp"

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <malloc.h>

namespace flowd {

namespace {

constexpr int mmap_threshold = 4 << 20;
constexpr int trim_threshold = 64 << 20;

bool user_chose() noexcept {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::strstr(tunables, "glibc.malloc.")) return true;
  for (const char* v : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"})
    if (std::getenv(v)) return true;
  return false;
}

}  // namespace

bool tune_malloc_for_tiles() noexcept {
  if (user_chose()) return false;
  // Setting either turns off glibc's own adjustment of both, so both are set.
  return ::mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1 && ::mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1;
}

}  // namespace flowd
