#pragma once
// The output files of one run, for every sink together: where the sinks
// declared they write, the temporaries they fill (SinkContext::stage_output),
// and the two-phase commit that moves them into place.
//
// Phase one is the sinks' own commit(): each completes its temporaries.
// Phase two is commit() here: every temporary is flushed to disk (all at once,
// util/durable.hpp; SinkContext::write_output does not flush), then each
// target that exists is moved aside (".NAME.flowd-old-*") and the temporary
// renamed over it; the files the previous run listed in the folder's manifest
// and this run does not write are moved aside too, and the new manifest goes
// in last. If any step fails, every step done is undone in reverse order (the
// previous outputs are back where they were) and the error says so; only if
// undoing fails as well does it list exactly what is where. The files moved
// aside are deleted once everything is in place.
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include <sys/types.h>

#include "flowd/item.hpp"
#include "util/durable.hpp"
#include "util/log.hpp"

namespace flowd::runtime {

// A run whose outputs would mix with files flowd did not write (exit 2).
class OutputsRefused : public Error {
public:
  using Error::Error;
};

// A commit that failed and could not be undone either: some of the run's
// files are in place, some earlier outputs are not; the message lists them.
class OutputsMixed : public Error {
public:
  using Error::Error;
};

class OutputSet {
public:
  using Rename = std::function<std::error_code(const std::filesystem::path& from, const std::filesystem::path& to)>;
  using Sync = std::function<std::optional<SyncFailure>(std::span<const std::filesystem::path> files)>;

  struct Options {
    bool overwrite = false;            // --overwrite: files flowd did not write may be replaced
    // Folders below an output folder that check_existing() passes over (a
    // --journal folder kept inside it).
    std::vector<std::filesystem::path> not_outputs;
    Json provenance = Json::object();  // what the manifests say about the run
    bool manifests = true;             // false: no manifest is written (OperatorHarness, which runs one sink alone)
    Rename rename;  // every rename of the commit goes through it (tests inject failures); default ::rename
    Sync sync;      // makes the finished files durable before the first rename, in one call; default sync_files
  };

  OutputSet(Options options, Logger& log);
  // Removes every temporary unless commit() succeeded.
  ~OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // SinkContext's calls, for stage `stage`. Missing folders are created (and
  // removed by abort() while empty); temporaries left by killed runs in the
  // declared places are removed. Throw flowd::Error naming the path.
  void declare_folder(const std::string& stage, const std::filesystem::path& dir);
  void declare_file(const std::string& stage, const std::filesystem::path& file);
  std::filesystem::path stage(const std::string& stage, const std::filesystem::path& target);
  void write(const std::string& stage, const std::filesystem::path& target, std::span<const std::uint8_t> bytes);
  std::filesystem::path scratch(const std::string& stage, const std::filesystem::path& near);
  void discard(const std::filesystem::path& temp) noexcept;

  // After every sink declared its outputs, before any work: reads the
  // manifests of the output folders and throws OutputsRefused when an output
  // folder holds files no manifest lists (unless overwrite, which warns). An
  // output folder is the top folder of the run's outputs there (the one
  // that gets the manifest): a folder a sink declared, or the folder of the
  // single files it declared, checked with its sub-folders either way, so
  // that one rule holds whatever kind of sink writes there.
  void check_existing();

  // Phase two (above). Throws flowd::Error (nothing written, earlier outputs
  // as they were) or OutputsMixed.
  void commit();
  // The first half of commit(): the manifests are written and every file is
  // flushed to disk, nothing is renamed. A run whose sinks write on several
  // nodes prepares every node's set before any renames (the likely failures,
  // such as a full disk, come here), then commits them one by one. Throws
  // flowd::Error (every temporary removed, nothing written).
  void prepare();
  // After commit(): each output folder (as a sink named it) and the files
  // put in place below it, relative to it, in name order.
  std::vector<std::pair<std::filesystem::path, std::vector<std::filesystem::path>>> committed() const;
  // Removes every temporary and the folders created that are still empty.
  void abort() noexcept;
  // At an interrupt, before the running tasks end: removes every temporary
  // now, because a launcher may follow its SIGTERM with SIGKILL soon (Open
  // MPI after 1 s). The records stay, so abort() also removes what a sink
  // still running writes again.
  void withdraw() noexcept;

private:
  struct Place {
    std::string stage;
    std::filesystem::path shown;  // as the sink gave it, for messages
    std::filesystem::path abs;
    bool folder = false;
  };
  struct Staged {
    std::string stage;
    std::filesystem::path shown, target, temp;  // target: absolute
  };

  const Place* place_of(const std::filesystem::path& abs) const;
  void prepare_locked();
  void make_dirs(const std::filesystem::path& dir);
  std::filesystem::path new_temp(const std::filesystem::path& target);
  // `shown`: `dir` as the sink named it, for the log.
  void remove_stale(const std::filesystem::path& dir, const std::filesystem::path& shown, bool recursive);
  void unlink_temps() noexcept;  // the files only; the records stay
  void remove_temps() noexcept;

  Options options_;
  Logger& log_;
  mutable std::mutex m_;  // sinks of different stages run at once
  std::vector<Place> places_;
  std::vector<Staged> staged_;
  std::vector<std::filesystem::path> scratch_;
  std::vector<std::filesystem::path> created_dirs_;   // in creation order
  std::vector<std::filesystem::path> previous_;       // listed in the manifests found (absolute)
  std::vector<std::filesystem::path> old_manifests_;  // found where this run writes no manifest
  std::set<std::filesystem::path> targets_;  // prepare(): every file the commit puts in place, manifests too
  std::vector<std::filesystem::path> committed_files_;  // after commit(): what it put in place
  bool prepared_ = false;
  bool committed_ = false;
};

}  // namespace flowd::runtime
