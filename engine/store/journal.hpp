#pragma once
// The coordinator's journal of completed work, read back by `flowd run
// --resume` to skip what a crashed run already finished. Format and
// guarantees: docs/stores.md.
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "wire/messages.hpp"

namespace flowd::store {

// One writer: the coordinator. The file is locked (flock) while a Journal
// has it open, so a second coordinator resuming the same run fails at
// open() instead of interleaving records. Within the process every method
// may be called from any thread (a mutex orders them).
//
// Durability: record() returns once the record is on disk (fdatasync per
// record); a record whose write was cut short by a crash is dropped by the
// next open().
class Journal {
public:
  struct Record {
    std::string stage;
    wire::ItemId item;
    std::string digest;  // of the completed output, as the coordinator computed it
  };

  // Opens the journal at `path` for the workflow `workflow_hash` (the run's
  // identity, e.g. the workflow file's SHA-256), creating it if missing.
  // Throws flowd::Error naming the file (and line) if it belongs to another
  // workflow or a complete line is corrupt; a torn last line is cut off and
  // reported in warnings().
  static Journal open(const std::filesystem::path& path, const std::string& workflow_hash);

  Journal(Journal&& other) noexcept;
  Journal& operator=(Journal&&) = delete;
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;
  ~Journal();

  // Appends "stage finished item `item` with output `digest`", durably.
  void record(const std::string& stage, const wire::ItemId& item, const std::string& digest);

  bool done(const std::string& stage, const wire::ItemId& item) const;
  // The digest recorded for (stage, item), if done.
  std::optional<std::string> digest(const std::string& stage, const wire::ItemId& item) const;
  // Completed records, in the order they were written (replays keep the last).
  std::vector<Record> records() const;
  std::size_t size() const;

  // What open() tolerated but the user should hear about (a torn last line);
  // the coordinator logs them.
  const std::vector<std::string>& warnings() const noexcept { return warnings_; }
  const std::filesystem::path& path() const noexcept { return path_; }
  const std::string& workflow_hash() const noexcept { return hash_; }

  // The line a record is written as, checksum and newline included.
  static std::string format_line(const std::string& type, const std::string& workflow_hash, const std::string& stage,
                                 const wire::ItemId& item, const std::string& digest);

private:
  using Key = std::tuple<std::string, std::string, std::int64_t, std::int64_t>;
  Journal(std::filesystem::path path, std::string hash, int fd);
  void append_locked(const std::string& line);
  void remember(Record r);

  std::filesystem::path path_;
  std::string hash_;
  int fd_ = -1;
  mutable std::mutex m_;
  std::map<Key, std::size_t> index_;  // -> position in records_
  std::vector<Record> records_;
  std::vector<std::string> warnings_;
};

}  // namespace flowd::store
