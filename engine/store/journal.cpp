#include "store/journal.hpp"
#include "store/durable.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <span>
#include <string_view>

#include "flowd/error.hpp"
#include "store/item_store.hpp"
#include "wire/xxhash64.hpp"

namespace flowd::store {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view header_type = "journal";
constexpr std::string_view done_type = "done";
constexpr std::string_view format_version = "flowd-journal/1";
constexpr std::size_t field_count = 8;  // type hash stage key version timestamp digest checksum

std::string where(const fs::path& path) { return "journal '" + path.string() + "'"; }

std::string sys_error(const std::string& what) { return what + ": " + std::strerror(errno); }

// Fields are separated by single spaces, so anything that could split or
// end a line is percent-encoded; an empty field is written as "~".
std::string encode(std::string_view s) {
  if (s.empty()) return "~";
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (u <= 0x20 || u == 0x7f || ch == '%' || ch == '~') {
      out += '%';
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

std::optional<std::string> decode(std::string_view s) {
  if (s == "~") return std::string();
  std::string out;
  out.reserve(s.size());
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = nibble(s[i + 1]), lo = nibble(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::string checksum(std::string_view body) {
  const std::uint64_t h =
      wire::xxh64(std::span<const std::byte>(reinterpret_cast<const std::byte*>(body.data()), body.size()));
  static constexpr char hex[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i) s[static_cast<std::size_t>(15 - i)] = hex[(h >> (4 * i)) & 15];
  return s;
}

std::optional<std::int64_t> parse_int(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return std::nullopt;
  std::int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    if (v > (INT64_MAX - (s[i] - '0')) / 10) return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return s[0] == '-' ? -v : v;
}

struct Parsed {
  std::string type, hash;
  Journal::Record record;
};

// nullopt with `why` set when the line is not a well-formed record.
std::optional<Parsed> parse_line(std::string_view line, std::string& why) {
  std::vector<std::string_view> f;
  std::size_t start = 0;
  while (true) {
    const auto sp = line.find(' ', start);
    f.push_back(line.substr(start, sp == std::string_view::npos ? std::string_view::npos : sp - start));
    if (sp == std::string_view::npos) break;
    start = sp + 1;
  }
  if (f.size() != field_count) {
    why = std::to_string(f.size()) + " fields, expected " + std::to_string(field_count);
    return std::nullopt;
  }
  const std::string_view body = line.substr(0, line.size() - f.back().size() - 1);
  if (checksum(body) != f.back()) {
    why = "checksum mismatch";
    return std::nullopt;
  }
  Parsed p;
  const auto type = decode(f[0]), hash = decode(f[1]), stage = decode(f[2]), key = decode(f[3]), digest = decode(f[6]);
  const auto version = parse_int(f[4]), timestamp = parse_int(f[5]);
  if (!type || !hash || !stage || !key || !digest || !version || !timestamp) {
    why = "malformed field";
    return std::nullopt;
  }
  p.type = *type;
  p.hash = *hash;
  p.record = Journal::Record{*stage, wire::ItemId{*key, *version, *timestamp}, *digest};
  return p;
}

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(sys_error("write failed"));
    }
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

std::string Journal::format_line(const std::string& type, const std::string& workflow_hash, const std::string& stage,
                                 const wire::ItemId& item, const std::string& digest) {
  const std::string body = encode(type) + ' ' + encode(workflow_hash) + ' ' + encode(stage) + ' ' + encode(item.key) +
                           ' ' + std::to_string(item.version) + ' ' + std::to_string(item.timestamp) + ' ' +
                           encode(digest);
  return body + ' ' + checksum(body) + '\n';
}

Journal::Journal(fs::path path, std::string hash, int fd) : path_(std::move(path)), hash_(std::move(hash)), fd_(fd) {}

Journal::Journal(Journal&& o) noexcept
    : path_(std::move(o.path_)),
      hash_(std::move(o.hash_)),
      fd_(o.fd_),
      index_(std::move(o.index_)),
      records_(std::move(o.records_)),
      warnings_(std::move(o.warnings_)) {
  o.fd_ = -1;
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);  // also releases the flock
}

Journal Journal::open(const fs::path& path, const std::string& workflow_hash) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(where(path) + ": " + sys_error("cannot open"));
  Journal j(path, workflow_hash, fd);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0)
    throw Error(where(path) + ": " +
                (errno == EWOULDBLOCK ? std::string("in use by another coordinator (it is locked)") : sys_error("cannot lock")));

  std::string content;
  {
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw Error(where(path) + ": " + sys_error("cannot stat"));
    content.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < content.size()) {
      const ssize_t n = ::pread(fd, content.data() + got, content.size() - got, static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw Error(where(path) + ": " + sys_error("cannot read"));
      got += static_cast<std::size_t>(n);
    }
  }

  // Lines are complete when newline-terminated; each is written by one
  // write() of the whole line, so a crash can only tear the last one.
  std::vector<std::string_view> lines;
  std::size_t pos = 0;
  while (pos < content.size()) {
    const auto nl = content.find('\n', pos);
    if (nl == std::string::npos) break;
    lines.emplace_back(content.data() + pos, nl - pos);
    pos = nl + 1;
  }
  std::size_t keep = pos;  // bytes of the file that stay
  if (pos < content.size())
    j.warnings_.push_back(where(path) + ": dropped a torn last line (" + std::to_string(content.size() - pos) +
                          " bytes without a newline): the run was interrupted while recording; that work is redone");

  std::size_t offset = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string at = where(path) + ", line " + std::to_string(i + 1);
    std::string why;
    auto p = parse_line(lines[i], why);
    const bool last = i + 1 == lines.size() && keep == content.size();
    if (!p && last) {
      // The final record may be damaged by the same crash that interrupted
      // the run; it was the newest, so dropping it only redoes its work.
      j.warnings_.push_back(at + ": dropped a damaged last line (" + why + "): that work is redone");
      keep = offset;
      break;
    }
    if (!p)
      throw Error(at + ": " + why + "; the journal is corrupt before its end (not a torn write): "
                  "inspect it, or remove it to run from scratch");
    if (i == 0) {
      if (p->type != header_type || p->record.digest != format_version)
        throw Error(at + ": not a flowd journal header (expected '" + std::string(header_type) + " ... " +
                    std::string(format_version) + "')");
      if (p->hash != workflow_hash)
        throw Error(where(path) + " belongs to workflow " + p->hash + " but this run is workflow " + workflow_hash +
                    ": --resume continues the same workflow only; remove the journal to run from scratch");
    } else {
      if (p->type != done_type) throw Error(at + ": unknown record type '" + p->type + "'");
      if (p->hash != workflow_hash)
        throw Error(at + ": record of workflow " + p->hash + " in the journal of workflow " + workflow_hash);
      j.remember(std::move(p->record));
    }
    offset += lines[i].size() + 1;
  }

  if (keep != content.size()) {
    if (::ftruncate(fd, static_cast<off_t>(keep)) != 0 || ::fdatasync(fd) != 0)
      throw Error(where(path) + ": " + sys_error("cannot cut off the torn last line"));
  }
  if (keep == 0) {
    std::lock_guard lock(j.m_);
    j.append_locked(format_line(std::string(header_type), workflow_hash, "", wire::ItemId{}, std::string(format_version)));
    sync_dir(path);
  }
  return j;
}

void Journal::append_locked(const std::string& line) {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw Error(where(path_) + ": " + sys_error("cannot stat"));
  try {
    write_all(fd_, line);
    if (::fdatasync(fd_) != 0) throw Error(sys_error("fdatasync failed"));
  } catch (const Error& e) {
    // A partial line left behind would be glued to the next record and turn
    // into corruption in the middle of the journal: cut it off.
    if (::ftruncate(fd_, st.st_size) != 0) {
      // Nothing more can be done; the next open() drops the torn tail.
    }
    throw Error(where(path_) + ": " + e.what());
  }
}

void Journal::remember(Record r) {
  Key k{r.stage, r.item.key, r.item.version, r.item.timestamp};
  if (auto it = index_.find(k); it != index_.end()) {
    records_[it->second] = std::move(r);
    return;
  }
  index_.emplace(std::move(k), records_.size());
  records_.push_back(std::move(r));
}

void Journal::record(const std::string& stage, const wire::ItemId& item, const std::string& digest) {
  const std::string line = format_line(std::string(done_type), hash_, stage, item, digest);
  std::lock_guard lock(m_);
  if (fd_ < 0) throw Error(where(path_) + ": journal was moved from");
  append_locked(line);
  remember(Record{stage, item, digest});
}

bool Journal::done(const std::string& stage, const wire::ItemId& item) const {
  std::lock_guard lock(m_);
  return index_.contains(Key{stage, item.key, item.version, item.timestamp});
}

std::optional<std::string> Journal::digest(const std::string& stage, const wire::ItemId& item) const {
  std::lock_guard lock(m_);
  const auto it = index_.find(Key{stage, item.key, item.version, item.timestamp});
  if (it == index_.end()) return std::nullopt;
  return records_[it->second].digest;
}

std::vector<Journal::Record> Journal::records() const {
  std::lock_guard lock(m_);
  return records_;
}

std::size_t Journal::size() const {
  std::lock_guard lock(m_);
  return records_.size();
}

}  // namespace flowd::store
