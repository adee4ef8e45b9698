#include "util/temp_files.hpp"

#include <cerrno>
#include <charconv>
#include <fstream>
#include <random>
#include <signal.h>
#include <sstream>
#include <unistd.h>

namespace flowd {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view work_tag = ".flowd-tmp-";
constexpr std::string_view previous_tag = ".flowd-old-";
constexpr std::size_t random_digits = 16;
constexpr std::size_t max_stem = 80;  // names stay far below NAME_MAX whatever the target's

std::string encode_host(std::string_view h) {
  std::string out(h.substr(0, 64));
  for (char& c : out)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) c = '_';
  return out.empty() ? "_" : out;
}

// Field 22 of /proc/<pid>/stat; 0 when it cannot be read.
std::uint64_t start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return 0;
  const auto paren = line.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return 0;
  std::istringstream fields(line.substr(paren + 1));
  std::string f;
  for (int i = 3; i <= 22 && fields >> f; ++i)
    if (i == 22) return std::strtoull(f.c_str(), nullptr, 10);
  return 0;
}

// Parses an unsigned decimal or hex number that ends at `end` or at `stop`.
template <class T>
std::optional<T> number(std::string_view& s, char stop, int base, std::size_t exact_digits = 0) {
  const auto end = s.find(stop);
  const std::string_view digits = s.substr(0, end);
  if (digits.empty() || (exact_digits && digits.size() != exact_digits)) return std::nullopt;
  T v{};
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) return std::nullopt;
  s.remove_prefix(end == std::string_view::npos ? s.size() : end + 1);
  return v;
}

}  // namespace

TempOwner TempOwner::self() {
  // Computed per call: cheap next to the file creation it names, and no
  // process-wide state to keep right across fork().
  TempOwner o;
  o.pid = ::getpid();
  o.start = start_time(o.pid);
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  o.host = encode_host(host);
  return o;
}

fs::path owned_temp_name(const fs::path& target, TempKind kind, const TempOwner& owner) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  char suffix[random_digits + 1];
  std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(random()));
  std::string stem = target.stem().string().substr(0, max_stem);
  const std::string name = "." + stem + std::string(kind == TempKind::work ? work_tag : previous_tag) +
                           std::to_string(owner.pid) + "-" + std::to_string(owner.start) + "-" + suffix + "-" +
                           encode_host(owner.host) + target.extension().string();
  return target.parent_path() / name;
}

std::optional<TempOwner> temp_owner(std::string_view name) {
  if (!name.starts_with('.')) return std::nullopt;
  auto at = name.find(work_tag);
  if (at == std::string_view::npos) at = name.find(previous_tag);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view s = name.substr(at + work_tag.size());
  TempOwner o;
  const auto pid = number<pid_t>(s, '-', 10);
  const auto start = pid ? number<std::uint64_t>(s, '-', 10) : std::nullopt;
  const auto random = start ? number<std::uint64_t>(s, '-', 16, random_digits) : std::nullopt;
  if (!random || s.empty()) return std::nullopt;
  const auto dot = s.find('.');  // the host is [A-Za-z0-9_]; the extension starts at the next dot
  o.pid = *pid;
  o.start = *start;
  o.host = std::string(s.substr(0, dot));
  if (o.host.empty() || o.host != encode_host(o.host)) return std::nullopt;
  return o;
}

bool is_flowd_temp(std::string_view name) {
  return name.starts_with('.') &&
         (name.find(work_tag) != std::string_view::npos || name.find(previous_tag) != std::string_view::npos);
}

bool owner_alive(const TempOwner& owner) {
  const TempOwner me = TempOwner::self();
  if (owner.host != me.host) return true;
  if (owner.pid <= 0) return false;
  if (::kill(owner.pid, 0) != 0 && errno == ESRCH) return false;
  // A pid in use may belong to another process now: compare start times
  // when both are known.
  const std::uint64_t now = start_time(owner.pid);
  return owner.start == 0 || now == 0 || now == owner.start;
}

std::vector<fs::path> stale_temps(const fs::path& dir, bool recursive, TempKind kind) {
  std::vector<fs::path> found;
  const std::string_view tag = kind == TempKind::work ? work_tag : previous_tag;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code e;
    const auto status = it->symlink_status(e);
    if (e) continue;
    if (recursive && fs::is_directory(status)) {
      auto sub = stale_temps(it->path(), true, kind);
      found.insert(found.end(), sub.begin(), sub.end());
      continue;
    }
    const std::string name = it->path().filename().string();
    if (!fs::is_regular_file(status) || name.find(tag) == std::string::npos) continue;
    const auto owner = temp_owner(name);
    if (owner && !owner_alive(*owner)) found.push_back(it->path());
  }
  return found;
}

std::vector<fs::path> remove_stale_temps(const fs::path& dir, bool recursive) {
  std::vector<fs::path> removed;
  for (const auto& p : stale_temps(dir, recursive, TempKind::work)) {
    std::error_code ec;
    if (fs::remove(p, ec)) removed.push_back(p);
  }
  return removed;
}

}  // namespace flowd
