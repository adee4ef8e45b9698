#pragma once
// The files one sink writes. Each is written under a hidden temporary name
// next to its target (.<stem>.flowd-tmp-<pid>-<random><ext>) and renamed
// into place by commit(); abort() removes every temporary and every folder
// this object created that is still empty. Not thread-safe: the engine
// serialises the calls of one sink.
#include <cstdint>
#include <filesystem>
#include <random>
#include <span>
#include <vector>

namespace flowd::io {

class OutputFiles {
public:
  OutputFiles();
  // Aborts unless commit() succeeded: output that was never committed must
  // not outlive its sink.
  ~OutputFiles();
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;

  // Creates `dir` and its missing parents, remembering which it created.
  void make_dirs(const std::filesystem::path& dir);
  // Creates a new, empty temporary for `target` (its folder must exist) and
  // returns its path; commit() renames it to `target`.
  std::filesystem::path reserve(const std::filesystem::path& target);
  // Writes `bytes` to a new temporary for `target`, creating folders, and
  // flushes it to disk.
  void write(const std::filesystem::path& target, std::span<const std::uint8_t> bytes);
  // Deletes a reserved temporary now; it will not be renamed.
  void discard(const std::filesystem::path& temp);

  // Renames every temporary to its target, in the order reserved. Throws
  // flowd::Error naming the file; targets renamed before the failure stay.
  void commit();
  void abort() noexcept;

private:
  struct Pending {
    std::filesystem::path temp, target;
  };

  std::vector<Pending> pending_;
  std::vector<std::filesystem::path> created_dirs_;  // in creation order
  std::mt19937_64 random_;
  bool committed_ = false;
};

// Flushes a closed file's bytes to disk (fsync), so a rename that makes it
// visible can never expose an empty file after a crash.
void sync_file(const std::filesystem::path& file);

}  // namespace flowd::io
