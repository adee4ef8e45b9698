#pragma once
// The checkpoint of a resumable run (flowd run --journal DIR [--resume]):
// runtime::Checkpoint kept in DIR/journal.log (a Journal: which source items
// finished, which sink inputs were kept) and DIR/items.h5 (an
// Hdf5ItemStore: the kept sink inputs themselves). docs/stores.md, section
// "Resuming a run".
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "store/hdf5_store.hpp"
#include "store/journal.hpp"
#include "runtime/checkpoint.hpp"

namespace flowd::store {

// Each open starts a new epoch (1 + the highest epoch in the journal). A
// sink input kept in epoch E counts only when every source item it derives
// from was finished in the same epoch E: in a later epoch those items are
// skipped, so nothing else can finish them, and a sink input of an item
// that did not finish in its epoch is computed and kept again by the epoch
// that finishes it. That rule makes replay exactly-once without rewriting
// the journal; the store's copies of discarded inputs are erased at open.
//
// Thread-safe: keep_sink_input() and finish() may be called from any thread
// at once (Journal and Hdf5ItemStore order their own calls); finished() only
// reads what open found; replay() hands each sink's inputs out once.
class JournalCheckpoint final : public runtime::Checkpoint {
public:
  // Opens (resume) or creates (not resume) the checkpoint in `dir` for the
  // workflow `workflow_hash` (its SHA-256). Throws flowd::Error naming the
  // file when: not resume and `dir` already holds a journal or a store (it
  // is never overwritten); resume and there is no journal; the journal
  // belongs to another workflow, is corrupt, or is in use; a sink input the
  // journal kept is missing from the store.
  JournalCheckpoint(const std::filesystem::path& dir, const std::string& workflow_hash, bool resume);
  ~JournalCheckpoint() override;
  JournalCheckpoint(const JournalCheckpoint&) = delete;
  JournalCheckpoint& operator=(const JournalCheckpoint&) = delete;

  bool finished(std::string_view source_stage, std::string_view key) const override;
  std::vector<std::vector<std::optional<Item>>> replay(std::string_view sink_stage) override;
  void keep_sink_input(std::string_view sink_stage, const std::vector<const Item*>& inputs,
                       const std::vector<runtime::SourceRef>& sources) override;
  void finish(const runtime::SourceRef& item) override;

  std::int64_t epoch() const noexcept { return epoch_; }
  // Source items finished by earlier epochs (what finished() says yes to).
  std::size_t finished_count() const noexcept { return finished_.size(); }
  // Sink inputs replay() will hand out (all sinks, before any was asked).
  std::size_t replay_count() const noexcept { return replay_total_; }
  // Sink inputs the previous run kept but that this open dropped (their
  // source items did not finish; they are computed again).
  std::size_t discarded_count() const noexcept { return discarded_; }
  // What open tolerated but the user should hear about (a torn journal line).
  const std::vector<std::string>& warnings() const noexcept { return journal_.warnings(); }
  const std::filesystem::path& journal_path() const noexcept { return journal_.path(); }
  const std::filesystem::path& store_path() const noexcept { return store_.path(); }

  static constexpr const char* journal_file = "journal.log";
  static constexpr const char* store_file = "items.h5";

private:
  // One port of a kept sink input: where the store holds it and the id it
  // had (the store holds it under its own name, see store_id()).
  struct Port {
    wire::ItemId stored, original;
  };
  using Tuple = std::vector<std::optional<Port>>;

  static Journal open_journal(const std::filesystem::path& dir, const std::string& workflow_hash, bool resume);
  void load();

  Journal journal_;
  Hdf5ItemStore store_;
  std::int64_t epoch_ = 1;
  // Source items finished by earlier epochs, as source_id(stage, key); fixed
  // after open, so finished() reads it without a lock.
  std::set<std::string, std::less<>> finished_;
  std::atomic<std::int64_t> next_seq_{0};  // numbers this epoch's kept sink inputs

  std::mutex m_;  // guards pending_
  std::map<std::string, std::vector<Tuple>, std::less<>> pending_;  // by sink: not yet replayed
  std::size_t replay_total_ = 0, discarded_ = 0;
};

}  // namespace flowd::store
