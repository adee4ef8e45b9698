#include <cstdlib>
#include <unistd.h>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include "support/helpers.hpp"
#include "util/fs.hpp"
#include "util/job_thread.hpp"
#include "util/malloc_tuning.hpp"
#include "util/sha256.hpp"
#include "util/text.hpp"

using namespace flowd;

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256::hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256::hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256::hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256::hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Text, SuggestsCloseNames) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(did_you_mean("min_aera", {"min_area", "max_area"}), " (did you mean 'min_area'?)");
  EXPECT_EQ(did_you_mean("zzzzzz", {"min_area"}), "");
}

// drop_all() destroys what is queued and posted after it uncalled, until
// resume(): jobs posted after that run again, in order.
TEST(JobThread, DropAllHoldsUntilResume) {
  JobThread t;
  std::vector<int> ran;
  t.submit([&] { ran.push_back(1); }).get();
  t.drop_all();
  auto dropped = t.submit([&] { ran.push_back(2); });
  EXPECT_THROW(dropped.get(), std::future_error);
  t.drop_all();  // so that a job posted now is surely still queued at resume()
  t.post([&] { ran.push_back(3); });
  t.resume();
  t.submit([&] { ran.push_back(4); }).get();
  EXPECT_EQ(ran, (std::vector<int>{1, 4}));
}

TEST(Fs, AtomicWriteLeavesNoTemporary) {
  const auto dir = test::scratch();
  write_file_atomic(dir / "a.txt", "hello");
  EXPECT_EQ(read_file(dir / "a.txt"), "hello");
  write_file_atomic(dir / "a.txt", "again");
  EXPECT_EQ(read_file(dir / "a.txt"), "again");
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir))
    ++files;
  EXPECT_EQ(files, 1u);
  EXPECT_THROW(write_file_atomic(dir / "missing-dir" / "b.txt", "x"), Error);
  EXPECT_THROW(read_file(dir / "nope"), Error);
  const auto tmp = temp_path_for(dir / "x.png");
  EXPECT_EQ(tmp.extension(), ".png");
  EXPECT_EQ(tmp.filename().string().rfind(".x.flowd-tmp-", 0), 0u);
}

namespace {

// In a child process (malloc settings are the process's): the exit status
// of `f`.
template <class F>
int in_child(F&& f) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(f());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

long minor_faults() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Page faults of touching `count` blocks of `bytes` for the third time, each
// round freed before the next: what a tile job's buffers cost tile after
// tile (13 of 3 MiB), or the messages of items moving between nodes.
long faults_of_reused_blocks(int count = 13, std::size_t bytes = 3u << 20) {
  long faults = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<char*> blocks;
    const long before = minor_faults();
    for (int i = 0; i < count; ++i) {
      blocks.push_back(static_cast<char*>(std::malloc(bytes)));
      for (std::size_t b = 0; b < bytes; b += 4096)
        blocks.back()[b] = 1;
    }
    faults = minor_faults() - before;
    for (char* b : blocks)
      std::free(b);
  }
  return faults;
}

}  // namespace

TEST(MallocTuning, FreedTileBuffersAreReusedWithoutNewPageFaults) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator replaces glibc malloc, whose settings this tests (mallopt fails)";
#endif
  EXPECT_EQ(in_child([] {
              if (!flowd::tune_malloc_for_tiles()) return 1;
              const long faults = faults_of_reused_blocks();  // 9,984 pages each round when returned to the kernel
              return faults < 1000 ? 0 : 2;
            }),
            0);
}

TEST(MallocTuning, MessagesOfItemsAboveFourMiBAreReusedToo) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator replaces glibc malloc, whose settings this tests (mallopt fails)";
#endif
  // Three 8 MiB blocks a round, as a CURVE message of a 4.7 MB label image
  // takes at its two ends: with the old 4 MiB threshold each was mmap'ed and
  // faulted in again (6,144 pages a round).
  EXPECT_EQ(in_child([] {
              if (!flowd::tune_malloc_for_tiles()) return 1;
              return faults_of_reused_blocks(3, 8u << 20) < 600 ? 0 : 2;
            }),
            0);
}

TEST(MallocTuning, SettingsTheUserChoseAreLeftAlone) {
  EXPECT_EQ(in_child([] {
              ::setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1000", 1);
              return flowd::tune_malloc_for_tiles() ? 1 : 0;
            }),
            0);
  EXPECT_EQ(in_child([] {
              ::unsetenv("GLIBC_TUNABLES");
              ::setenv("MALLOC_TRIM_THRESHOLD_", "1000", 1);
              return flowd::tune_malloc_for_tiles() ? 1 : 0;
            }),
            0);
}
