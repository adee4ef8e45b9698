#include "util/malloc_tuning.hpp"

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <malloc.h>

namespace flowd {

namespace {

// glibc's largest (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit). Below it, blocks
// come from the heaps and are reused; a ZeroMQ message of a whole item (up
// to the 16 MiB chunks of net/transport) is one such block, at each end,
// and with CURVE a second one for its ciphertext. At 4 MiB every message of
// a 4.7 MB label image was mmap'ed, faulted in page by page and unmapped:
// 62 MB/s and 17.6 ms of CPU per MB over loopback, against 360 MB/s and
// 2.9 ms below the threshold (`flowd calibrate --transfer --transfer-mb 8`,
// docs/benchmarks.md §15.6).
constexpr int mmap_threshold = 32 << 20;
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
