#include "output_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>
#include <system_error>

#include "flowd/error.hpp"

namespace flowd::io {

namespace fs = std::filesystem;

namespace {

std::string errno_text() { return std::error_code(errno, std::generic_category()).message(); }

class Fd {
public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const noexcept { return fd_; }
  // Closes now, reporting what a deferred close would swallow.
  int close() noexcept {
    const int r = ::close(fd_);
    fd_ = -1;
    return r;
  }

private:
  int fd_;
};

// Removes `dir` when it holds nothing but (nested) empty folders: folders
// this sink created may hold an empty folder another aborted sink created
// inside it, whatever order the sinks are aborted in. A folder with any
// file in it stays.
bool prune_if_empty(const fs::path& dir) noexcept {
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (it->is_symlink(ec) || !it->is_directory(ec) || !prune_if_empty(it->path())) return false;
  }
  return !ec && fs::remove(dir, ec);
}

}  // namespace

OutputFiles::OutputFiles() : random_(std::random_device{}()) {}

OutputFiles::~OutputFiles() {
  if (!committed_) abort();
}

void OutputFiles::make_dirs(const fs::path& dir) {
  if (dir.empty()) return;
  std::vector<fs::path> missing;
  for (fs::path p = dir; !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    if (fs::exists(p, ec)) break;
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    std::error_code ec;
    if (fs::create_directory(*it, ec)) {
      created_dirs_.push_back(*it);
    } else if (ec) {
      throw Error("cannot create folder '" + it->string() + "': " + ec.message());
    }
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error("output folder '" + dir.string() + "' is not a folder");
}

fs::path OutputFiles::reserve(const fs::path& target) {
  const std::string stem = target.stem().string(), ext = target.extension().string();
  for (int attempt = 0; attempt < 100; ++attempt) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, "%08llx", static_cast<unsigned long long>(random_() & 0xffffffffULL));
    const fs::path temp =
        target.parent_path() / ("." + stem + ".flowd-tmp-" + std::to_string(::getpid()) + "-" + suffix + ext);
    Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    if (fd.get() >= 0) {
      pending_.push_back({temp, target});
      return temp;
    }
    if (errno != EEXIST) throw Error("cannot create a temporary file for '" + target.string() + "': " + errno_text());
  }
  throw Error("cannot create a temporary file for '" + target.string() + "': every name tried exists");
}

void OutputFiles::write(const fs::path& target, std::span<const std::uint8_t> bytes) {
  make_dirs(target.parent_path());
  const fs::path temp = reserve(target);
  Fd fd(::open(temp.c_str(), O_WRONLY | O_CLOEXEC));
  auto fail = [&](const std::string& what) {
    const std::string why = errno_text();
    discard(temp);
    throw Error("cannot write '" + target.string() + "' (" + what + "): " + why);
  };
  if (fd.get() < 0) fail("open");
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("write");
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0) fail("fsync");
  if (fd.close() != 0) fail("close");
}

void OutputFiles::discard(const fs::path& temp) {
  const auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& p) { return p.temp == temp; });
  if (it == pending_.end()) return;
  std::error_code ec;
  fs::remove(it->temp, ec);
  pending_.erase(it);
}

void OutputFiles::commit() {
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    std::error_code ec;
    fs::rename(pending_[i].temp, pending_[i].target, ec);
    if (ec) {
      const std::string target = pending_[i].target.string();
      pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(i));
      throw Error("cannot move the finished '" + target + "' into place: " + ec.message());
    }
  }
  pending_.clear();
  committed_ = true;
}

void OutputFiles::abort() noexcept {
  if (committed_) return;
  for (const auto& p : pending_) {
    std::error_code ec;
    fs::remove(p.temp, ec);
  }
  pending_.clear();
  for (auto it = created_dirs_.rbegin(); it != created_dirs_.rend(); ++it) prune_if_empty(*it);
  created_dirs_.clear();
}

void sync_file(const fs::path& file) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0 || ::fsync(fd.get()) != 0)
    throw Error("cannot flush '" + file.string() + "' to disk: " + errno_text());
}

}  // namespace flowd::io
