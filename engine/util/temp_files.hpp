#pragma once
// Temporary files that name their owner. Every temporary flowd makes next to
// an output (".<stem>.flowd-tmp-<pid>-<start>-<random>-<host><ext>") carries
// the process that made it: its pid, the pid's start time (so a reused pid is
// told apart) and the host (so a shared folder's other machines are left
// alone). A later run can then remove the temporaries of runs that were
// killed before they could clean up, and keep those of runs still going.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

namespace flowd {

// Who made a temporary file.
struct TempOwner {
  pid_t pid = 0;
  std::uint64_t start = 0;  // the process's start time in clock ticks after boot (/proc); 0 when unknown
  std::string host;         // the host name, with every character but [A-Za-z0-9] as '_'

  static TempOwner self();
  bool operator==(const TempOwner&) const = default;
};

// What a temporary is for: output being written, or a replaced output kept
// until a commit has succeeded (so it can be put back).
enum class TempKind : std::uint8_t { work, previous };

// A new temporary name next to `target` (same folder, so a rename is atomic),
// keeping its extension for encoders that look at it.
std::filesystem::path owned_temp_name(const std::filesystem::path& target, TempKind kind = TempKind::work,
                                      const TempOwner& owner = TempOwner::self());

// The owner encoded in a file name made by owned_temp_name; nullopt for any
// other name.
std::optional<TempOwner> temp_owner(std::string_view file_name);

// Whether a name is a flowd temporary of either form, including the
// unowned ".<stem>.flowd-tmp-<pid>-<random>" of flowd before 0.12.
bool is_flowd_temp(std::string_view file_name);

// Whether `owner` may still be running: true for this process, for another
// host (nothing can be known about it) and for a live pid of this host that
// started at the recorded time; false once that process is gone.
bool owner_alive(const TempOwner& owner);

// The temporaries of `kind` directly in `dir` (with `recursive`, in its
// sub-folders too) whose owner is gone. Never follows symbolic links;
// errors (a vanished file, no permission) skip the file.
std::vector<std::filesystem::path> stale_temps(const std::filesystem::path& dir, bool recursive, TempKind kind);

// Removes the stale work temporaries (stale_temps); returns what it removed.
// Earlier outputs set aside by a commit that never finished (TempKind::previous)
// are never removed: they may be the only copy of a result.
std::vector<std::filesystem::path> remove_stale_temps(const std::filesystem::path& dir, bool recursive = false);

}  // namespace flowd
