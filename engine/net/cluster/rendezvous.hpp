#pragma once
// How workers find the coordinator when a launcher started them all at once.
//
// Rank 0 binds, then publishes its endpoint (and its CURVE public key when
// keys are used) in a small JSON file at FLOWD_RENDEZVOUS, a path on a
// filesystem every node sees. The file is written to a temporary name in
// the same directory and renamed, so a worker never reads half a file, even
// over NFS (close-to-open consistency covers a rename). Workers poll for it.
// FLOWD_COORDINATOR=tcp://host:port, when set, wins over the file: the
// coordinator was started some other way and its address is known.
//
// File format (version 1):
//   {"format": "flowd-rendezvous", "version": 1,
//    "endpoint": "tcp://node017:40123",
//    "server_public_key": "Z85 text, or empty without keys",
//    "job_id": "4711.0"}
// The public key is not a secret; the file may be world-readable. A worker
// that trusts the key from the file trusts whoever can write that
// directory: docs/cluster.md says when to pass the key file instead.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "flowd/error.hpp"
#include "net/cluster/launcher.hpp"

namespace flowd::net::cluster {

struct Rendezvous {
  std::string endpoint;           // tcp://host:port the workers connect to
  std::string server_public_key;  // Z85 (40 characters); empty without keys
  std::string job_id;             // LaunchInfo::job_id of the writer; may be empty
};

// Atomic: temp file in the same directory, fsync, rename, fsync of the
// directory. Replaces an older file. Throws flowd::Error naming the path.
void write_rendezvous(const std::filesystem::path& path, const Rendezvous& r);

// Throws flowd::Error naming the path when it is missing or malformed.
Rendezvous read_rendezvous(const std::filesystem::path& path);

// The rendezvous file did not appear (or stayed another job's) in time: the
// run failed, unlike a malformed file or a missing setting.
class RendezvousTimeout : public Error {
public:
  using Error::Error;
};

// The wait was interrupted (SIGINT/SIGTERM) before the file appeared.
class RendezvousInterrupted : public Error {
public:
  using Error::Error;
};

struct WaitOptions {
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  std::chrono::milliseconds poll_interval{std::chrono::milliseconds(200)};
  // When non-empty, a file whose job_id is set and differs is taken for a
  // leftover of an earlier run and ignored (the wait goes on).
  std::string expected_job_id;
  // When set and true, the wait ends with RendezvousInterrupted at its next
  // poll: a worker rank stopped by Ctrl-C or its launcher must not sit out
  // the timeout.
  const std::atomic<bool>* interrupt = nullptr;
};

// Polls until the file exists and belongs to this job. On timeout throws
// RendezvousTimeout naming the file and how long it waited (and the stale job id
// it saw, if any); when interrupted, RendezvousInterrupted. A malformed file fails at once: writes are atomic, so
// it is not a file still being written.
Rendezvous wait_for_rendezvous(const std::filesystem::path& path, const WaitOptions& options);

// What a worker rank connects to: FLOWD_COORDINATOR when set (validated as
// tcp://host:port; no key comes with it), else the FLOWD_RENDEZVOUS file
// waited for with `options` (expected_job_id taken from `self` when not
// given). Throws when neither variable is set, saying which to set.
Rendezvous resolve_coordinator(const Env& env, const LaunchInfo& self, WaitOptions options = {});

// The rendezvous path for the coordinator to write, from FLOWD_RENDEZVOUS;
// nullopt when unset.
std::optional<std::filesystem::path> rendezvous_path(const Env& env);

}  // namespace flowd::net::cluster
