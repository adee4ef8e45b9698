#include "util/log.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <ctime>

namespace flowd {

namespace {
const char* label(LogLevel l) {
  switch (l) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warning: return "warning";
    case LogLevel::error: return "error";
  }
  return "?";
}
}  // namespace

Logger::Logger(std::FILE* out, bool tty, LogLevel min_level)
    : out_(out), tty_(tty), min_(min_level), start_(std::chrono::steady_clock::now()) {}

Logger Logger::to_stderr(LogLevel min_level) { return Logger(stderr, ::isatty(STDERR_FILENO) == 1, min_level); }

void Logger::set_level(LogLevel l) {
  std::lock_guard lk(m_);
  min_ = l;
}

bool Logger::enabled(LogLevel l) const {
  std::lock_guard lk(m_);
  return l >= min_;
}

void Logger::log(LogLevel level, std::string_view message) {
  std::lock_guard lk(m_);
  if (level < min_) return;
  clear_status_locked();
  if (tty_) {
    std::fprintf(out_, "%s: %.*s\n", label(level), static_cast<int>(message.size()), message.data());
  } else {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    ::localtime_r(&now, &tm);
    char ts[32];
    std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    std::fprintf(out_, "%s %s: %.*s\n", ts, label(level), static_cast<int>(message.size()), message.data());
  }
  draw_status_locked();
  std::fflush(out_);
}

void Logger::status(std::string line) {
  if (!tty_) return;
  std::lock_guard lk(m_);
  clear_status_locked();
  status_ = std::move(line);
  draw_status_locked();
  std::fflush(out_);
}

void Logger::clear_status_locked() {
  if (tty_ && !status_.empty()) std::fputs("\r\033[K", out_);
}

// A status line longer than the terminal would wrap, and "\r, clear line"
// would then leave its first part behind: it is cut to the terminal's width.
void Logger::draw_status_locked() {
  if (!tty_ || status_.empty()) return;
  winsize ws{};
  std::size_t width = 0;
  if (::ioctl(::fileno(out_), TIOCGWINSZ, &ws) == 0) width = ws.ws_col;
  if (width > 1 && status_.size() >= width) std::fprintf(out_, "%.*s", static_cast<int>(width - 1), status_.c_str());
  else std::fputs(status_.c_str(), out_);
}

}  // namespace flowd
