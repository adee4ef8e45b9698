#include "runtime/output_set.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <optional>
#include <set>
#include <unistd.h>

#include "runtime/output_manifest.hpp"
#include "util/durable.hpp"
#include "util/fd.hpp"
#include "util/temp_files.hpp"
#include "util/text.hpp"

namespace flowd::runtime {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }
std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

fs::path absolute_of(const fs::path& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec);
  return (ec ? p : a).lexically_normal();
}

bool lexists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec));
}

// Removes `dir` when it holds nothing but (nested) empty folders.
bool prune_if_empty(const fs::path& dir) noexcept {
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->is_symlink(ec) || !it->is_directory(ec) || !prune_if_empty(it->path())) return false;
  return !ec && fs::remove(dir, ec);
}

std::error_code system_rename(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  return ec;
}

}  // namespace

OutputSet::OutputSet(Options options, Logger& log) : options_(std::move(options)), log_(log) {
  if (!options_.rename) options_.rename = system_rename;
  if (!options_.sync) options_.sync = sync_files;
}

OutputSet::~OutputSet() {
  if (!committed_) abort();
}

const OutputSet::Place* OutputSet::place_of(const fs::path& abs) const {
  for (const auto& p : places_)
    if (p.folder ? is_within(abs, p.abs) && abs != p.abs : abs == p.abs) return &p;
  return nullptr;
}

void OutputSet::make_dirs(const fs::path& dir) {
  std::vector<fs::path> missing;
  for (fs::path p = dir; !p.empty() && !lexists(p); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    std::error_code ec;
    if (fs::create_directory(*it, ec))
      created_dirs_.push_back(*it);
    else if (ec)
      throw Error("cannot create folder " + quoted(*it) + ": " + ec.message());
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error("output folder " + quoted(dir) + " is not a folder");
}

void OutputSet::remove_stale(const fs::path& dir, const fs::path& shown, bool recursive) {
  const auto removed = remove_stale_temps(dir, recursive);
  if (!removed.empty())
    log_.info("removed " + std::to_string(removed.size()) + " temporary file(s) left in " + quoted(shown) +
              " by runs that ended without cleaning up (e.g. " + quoted(removed.front().filename()) + ")");
  for (const auto& p : stale_temps(dir, recursive, TempKind::previous))
    log_.warn(quoted(shown / p.lexically_relative(dir)) +
              " is an earlier output a commit that never finished set aside; flowd leaves it: move it "
              "back or delete it");
}

void OutputSet::declare_folder(const std::string& stage, const fs::path& dir) {
  if (dir.empty()) throw Error("stage '" + stage + "': an output folder must not be empty");
  std::lock_guard lk(m_);
  const fs::path abs = absolute_of(dir);
  make_dirs(abs);
  remove_stale(abs, dir, true);
  places_.push_back({stage, dir, abs, true});
}

void OutputSet::declare_file(const std::string& stage, const fs::path& file) {
  if (file.filename().empty()) throw Error("stage '" + stage + "': output " + quoted(file) + " does not name a file");
  std::lock_guard lk(m_);
  const fs::path abs = absolute_of(file);
  std::error_code ec;
  if (fs::is_directory(abs, ec)) throw Error("output " + quoted(file) + " is a folder; it must name a file");
  make_dirs(abs.parent_path());
  remove_stale(abs.parent_path(), file.parent_path().empty() ? fs::path(".") : file.parent_path(), false);
  places_.push_back({stage, file, abs, false});
}

fs::path OutputSet::new_temp(const fs::path& target) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const fs::path temp = owned_temp_name(target);
    Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    if (fd.get() >= 0) return temp;
    if (errno != EEXIST) throw Error("writing " + quoted(target) + ": " + errno_text(errno));
  }
  throw Error("writing " + quoted(target) + ": every temporary name tried exists");
}

fs::path OutputSet::stage(const std::string& stage, const fs::path& target) {
  std::lock_guard lk(m_);
  const fs::path abs = absolute_of(target);
  const Place* place = place_of(abs);
  if (!place)
    throw Error("stage '" + stage + "': " + quoted(target) +
                " is not in an output the sink declared (SinkContext::output_folder / output_file in open())");
  for (auto it = staged_.begin(); it != staged_.end(); ++it) {
    if (it->target != abs) continue;
    if (it->stage != stage) throw Error("stages '" + it->stage + "' and '" + stage + "' both write " + quoted(target));
    std::error_code ec;
    fs::remove(it->temp, ec);  // staged again: the newer content wins
    staged_.erase(it);
    break;
  }
  make_dirs(abs.parent_path());
  const fs::path temp = new_temp(target);
  staged_.push_back({stage, target, abs, temp});
  return temp;
}

void OutputSet::write(const std::string& stage, const fs::path& target, std::span<const std::uint8_t> bytes) {
  const fs::path temp = this->stage(stage, target);
  auto fail = [&](int e) {
    discard(temp);
    throw Error("writing " + quoted(target) + ": " + errno_text(e));
  };
  Fd fd(::open(temp.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  if (fd.get() < 0) fail(errno);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(errno);
    done += static_cast<std::size_t>(n);
  }
  // Not flushed here: commit() makes every staged file durable at once.
  if (fd.close() != 0) fail(errno);
}

fs::path OutputSet::scratch(const std::string& stage, const fs::path& near) {
  std::lock_guard lk(m_);
  const fs::path abs = absolute_of(near);
  if (!place_of(abs)) throw Error("stage '" + stage + "': " + quoted(near) + " is not in an output the sink declared");
  make_dirs(abs.parent_path());
  const fs::path temp = new_temp(near);
  scratch_.push_back(temp);
  return temp;
}

void OutputSet::discard(const fs::path& temp) noexcept {
  std::lock_guard lk(m_);
  std::error_code ec;
  const auto s = std::find_if(staged_.begin(), staged_.end(), [&](const Staged& x) { return x.temp == temp; });
  if (s != staged_.end()) {
    fs::remove(s->temp, ec);
    staged_.erase(s);
  }
  const auto t = std::find(scratch_.begin(), scratch_.end(), temp);
  if (t != scratch_.end()) {
    fs::remove(*t, ec);
    scratch_.erase(t);
  }
}

void OutputSet::check_existing() {
  std::lock_guard lk(m_);
  std::vector<fs::path> folders;
  for (const auto& p : places_)
    folders.push_back(p.folder ? p.abs : p.abs.parent_path());
  const auto roots = manifest_roots(folders);
  std::set<fs::path> owned;
  std::vector<std::string> unreadable;
  auto read = [&](const fs::path& folder, bool root) {
    try {
      if (auto m = OutputManifest::read(folder)) {
        for (const auto& f : m->files) {
          previous_.push_back((folder / f).lexically_normal());
          owned.insert(previous_.back());
        }
        if (!root) old_manifests_.push_back(m->path());
      }
    } catch (const Error& e) {
      unreadable.push_back(e.what());
    }
  };
  for (const auto& r : roots)
    read(r, true);
  for (const auto& p : places_)
    if (p.folder && std::find(roots.begin(), roots.end(), p.abs) == roots.end()) read(p.abs, false);

  // Every file below each root, sub-folders included, whether the root is a
  // folder a sink fills or the folder of single files (issue 38: the rule
  // was one for folder sinks and another for file sinks), with one
  // exception: the folder flowd was started in is not taken for an output
  // folder when only single files go there (a `path` of `result.h5`), and
  // then only those names are checked. Folders sinks declare are checked
  // whole wherever they are. Counting stops at a bound: a refusal needs a
  // count and an example, not a census.
  constexpr std::size_t enough = 1000;
  std::set<fs::path> skip;
  for (const auto& n : options_.not_outputs) skip.insert(absolute_of(n));
  std::vector<fs::path> foreign;
  std::size_t more = 0;
  auto add = [&](fs::path shown) {
    if (foreign.size() < enough)
      foreign.push_back(std::move(shown));
    else
      ++more;
  };
  std::error_code cwd_ec;
  const fs::path cwd = fs::current_path(cwd_ec).lexically_normal();
  std::vector<std::pair<fs::path, fs::path>> scanned;  // (absolute, as shown)
  for (const auto& root : roots) {
    const auto folder = std::find_if(places_.begin(), places_.end(), [&](const Place& p) { return p.folder && p.abs == root; });
    if (folder != places_.end()) {
      scanned.emplace_back(root, folder->shown);
      continue;
    }
    if (!cwd_ec && root == cwd) continue;  // single files in the working folder: their names only, below
    const auto file = std::find_if(places_.begin(), places_.end(), [&](const Place& p) { return !p.folder && p.abs.parent_path() == root; });
    scanned.emplace_back(root, file != places_.end() ? file->shown.parent_path() : root);
  }
  for (const auto& p : places_) {
    const bool covered = std::any_of(scanned.begin(), scanned.end(), [&](const auto& r) { return is_within(p.abs, r.first); });
    if (covered) continue;
    if (p.folder)
      scanned.emplace_back(p.abs, p.shown);
    else if (lexists(p.abs) && !owned.contains(p.abs))
      add(p.shown);
  }
  for (const auto& [root, shown] : scanned) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      std::error_code e;
      const fs::path path = it->path().lexically_normal();
      if (it->is_directory(e) && !it->is_symlink(e)) {
        if (skip.contains(path)) it.disable_recursion_pending();
        continue;
      }
      const std::string name = it->path().filename().string();
      if (name == manifest_file_name || is_flowd_temp(name) || owned.contains(path)) continue;
      add(shown / path.lexically_relative(root));
    }
  }
  if (foreign.empty() && unreadable.empty()) return;
  std::string what;
  if (!foreign.empty()) {
    what = std::to_string(foreign.size()) + (more ? "+" : "") + " file(s) that no earlier flowd run wrote there (" +
           quoted(foreign.front()) +
           (foreign.size() > 1 ? " and " + std::to_string(foreign.size() - 1) + " more" : std::string()) + ")";
  }
  for (const auto& u : unreadable)
    what += (what.empty() ? "" : "; ") + u;
  if (options_.overwrite) {
    log_.warn("--overwrite: the outputs hold " + what + "; those at names this run writes are replaced, the rest stay");
    return;
  }
  throw OutputsRefused("the outputs hold " + what +
                       "; flowd does not mix its outputs with other files: choose an empty or new output folder, "
                       "remove them, or pass --overwrite");
}

std::vector<std::pair<fs::path, std::vector<fs::path>>> OutputSet::committed() const {
  std::lock_guard lk(m_);
  std::vector<std::pair<fs::path, std::vector<fs::path>>> out;
  if (!committed_) return out;
  std::vector<fs::path> folders;
  for (const auto& p : places_) folders.push_back(p.folder ? p.abs : p.abs.parent_path());
  for (const auto& root : manifest_roots(folders)) {
    fs::path shown = root;
    for (const auto& p : places_)
      if (p.folder && p.abs == root) shown = p.shown;
      else if (!p.folder && p.abs.parent_path() == root)
        shown = p.shown.parent_path().empty() ? fs::path(".") : p.shown.parent_path();
    std::vector<fs::path> files;
    for (const auto& f : committed_files_)
      if (is_within(f, root)) files.push_back(f.lexically_relative(root));
    std::sort(files.begin(), files.end());
    out.emplace_back(shown, std::move(files));
  }
  return out;
}

void OutputSet::prepare() {
  std::lock_guard lk(m_);
  prepare_locked();
}

void OutputSet::prepare_locked() {
  if (prepared_) return;
  // The manifests: one per root folder, listing every file this run writes below it.
  std::vector<fs::path> folders;
  for (const auto& p : places_)
    folders.push_back(p.folder ? p.abs : p.abs.parent_path());
  std::vector<std::pair<fs::path, std::string>> manifests;
  for (const auto& root : options_.manifests ? manifest_roots(folders) : std::vector<fs::path>{}) {
    OutputManifest m{root, {}};
    for (const auto& s : staged_)
      if (is_within(s.target, root)) m.files.push_back(s.target.lexically_relative(root));
    manifests.emplace_back(m.path(), m.text(options_.provenance));
  }
  targets_.clear();
  for (const auto& s : staged_)
    targets_.insert(s.target);
  for (const auto& [path, _] : manifests)
    targets_.insert(path);

  auto fail = [&](const std::string& why) {
    remove_temps();
    throw Error(why);
  };
  for (const auto& [path, text] : manifests) {
    const fs::path t = owned_temp_name(path);
    Fd fd(::open(t.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    staged_.push_back({"", path, path, t});
    const bool ok = fd.get() >= 0 && ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                    fd.close() == 0;
    if (!ok) fail("writing " + quoted(path) + ": " + errno_text(errno) + "; nothing was written");
  }
  // Every file on disk before any takes its place, in one flush per
  // filesystem (util/durable.hpp says why not one per file).
  {
    std::vector<fs::path> temps;
    for (const auto& s : staged_)
      temps.push_back(s.temp);
    if (const auto f = options_.sync(temps)) {
      const auto s = std::find_if(staged_.begin(), staged_.end(), [&](const Staged& x) { return x.temp == f->file; });
      fail("writing " + quoted(s != staged_.end() ? s->shown : f->file) + ": " + errno_text(f->error) +
           "; nothing was written");
    }
  }
  prepared_ = true;
}

void OutputSet::commit() {
  std::lock_guard lk(m_);
  prepare_locked();
  const std::set<fs::path>& targets = targets_;

  // Apply, recording each step so that a failure can undo them.
  struct Step {
    fs::path from, to;      // renamed from -> to
    bool aside = false;     // an earlier output moved out of the way (undo: move it back)
    bool replaced = false;  // a new file that took an earlier one's place (undone by moving that back)
  };
  std::vector<Step> done;
  std::vector<fs::path> aside;  // earlier outputs moved out of the way
  auto move_aside = [&](const fs::path& p) -> std::error_code {
    if (!lexists(p)) return {};
    const fs::path old = owned_temp_name(p, TempKind::previous);
    const std::error_code ec = options_.rename(p, old);
    if (!ec) {
      done.push_back({p, old, true});
      aside.push_back(old);
    }
    return ec;
  };
  std::optional<std::string> failure;
  for (const auto& s : staged_) {
    const bool replaces = lexists(s.target);
    if (auto ec = move_aside(s.target)) {
      failure = "cannot move the earlier " + quoted(s.shown) + " aside: " + ec.message();
      break;
    }
    if (auto ec = options_.rename(s.temp, s.target)) {
      failure = "cannot move the finished " + quoted(s.shown) + " into place: " + ec.message();
      break;
    }
    done.push_back({s.temp, s.target, false, replaces});
  }
  std::vector<fs::path> removed;
  if (!failure) {
    std::vector<fs::path> gone = old_manifests_;
    for (const auto& p : previous_)
      if (!targets.contains(p)) gone.push_back(p);
    for (const auto& p : gone) {
      if (!lexists(p)) continue;
      if (auto ec = move_aside(p)) {
        failure = "cannot remove " + quoted(p) + ", which the earlier run wrote: " + ec.message();
        break;
      }
      removed.push_back(p);
    }
  }
  if (failure) {
    std::vector<std::string> stuck;
    for (auto it = done.rbegin(); it != done.rend(); ++it) {
      if (it->aside) {
        if (auto ec = options_.rename(it->to, it->from))
          stuck.push_back("the earlier " + quoted(it->from) + " is at " + quoted(it->to) + " (" + ec.message() + ")");
      } else if (!it->replaced) {
        std::error_code ec;
        if (!fs::remove(it->to, ec) && ec)
          stuck.push_back("the new " + quoted(it->to) + " stayed (" + ec.message() + ")");
      }
    }
    remove_temps();
    if (stuck.empty()) throw Error(*failure + "; nothing was written (earlier outputs are as they were)");
    throw OutputsMixed(*failure + "; undoing the commit failed too, so outputs are mixed: " + join(stuck, "; "));
  }

  committed_ = true;
  std::error_code ec;
  for (const auto& a : aside)
    fs::remove(a, ec);
  for (const auto& t : scratch_)
    fs::remove(t, ec);
  scratch_.clear();
  std::set<fs::path> dirs;
  for (const auto& s : staged_)
    dirs.insert(s.target.parent_path());
  // Folders the earlier run made that now hold nothing go too, up to an
  // output folder.
  auto folder_of = [](const Place& p) { return p.folder ? p.abs : p.abs.parent_path(); };
  auto prunable = [&](const fs::path& d) {
    return std::none_of(places_.begin(), places_.end(), [&](const Place& p) { return folder_of(p) == d; }) &&
           std::any_of(places_.begin(), places_.end(), [&](const Place& p) { return is_within(d, folder_of(p)); });
  };
  for (const auto& r : removed) {
    for (fs::path d = r.parent_path(); prunable(d) && prune_if_empty(d); d = d.parent_path()) {
    }
    dirs.insert(r.parent_path());
  }
  // Best effort: a rename is durable once its folder's entry is on disk.
  sync_dirs(std::vector<fs::path>(dirs.begin(), dirs.end()));
  for (const auto& st : staged_)
    if (!st.stage.empty()) committed_files_.push_back(st.target);  // not the manifests
  staged_.clear();
}

void OutputSet::unlink_temps() noexcept {
  std::error_code ec;
  for (const auto& s : staged_)
    fs::remove(s.temp, ec);
  for (const auto& t : scratch_)
    fs::remove(t, ec);
}

void OutputSet::remove_temps() noexcept {
  unlink_temps();
  staged_.clear();
  scratch_.clear();
}

void OutputSet::withdraw() noexcept {
  std::lock_guard lk(m_);
  if (!committed_) unlink_temps();
}

void OutputSet::abort() noexcept {
  std::lock_guard lk(m_);
  if (committed_) return;
  remove_temps();
  for (auto it = created_dirs_.rbegin(); it != created_dirs_.rend(); ++it)
    prune_if_empty(*it);
  created_dirs_.clear();
}

}  // namespace flowd::runtime
