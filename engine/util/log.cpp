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

void Logger::status(std::string block) {
  if (!tty_) return;
  std::lock_guard lk(m_);
  clear_status_locked();
  status_ = std::move(block);
  draw_status_locked();
  std::fflush(out_);
}

std::size_t Logger::rows() const {
  winsize ws{};
  return ::ioctl(::fileno(out_), TIOCGWINSZ, &ws) == 0 ? ws.ws_row : 0;
}

// Back to the start of the block's first line, then clear to the end of the
// screen.
void Logger::clear_status_locked() {
  if (!tty_ || status_lines_ == 0) return;
  std::fputs("\r", out_);
  if (status_lines_ > 1) std::fprintf(out_, "\033[%zuA", status_lines_ - 1);
  std::fputs("\033[J", out_);
  status_lines_ = 0;
}

// Lines longer than the terminal would wrap and break the redraw, so each is
// cut to the terminal's width.
void Logger::draw_status_locked() {
  if (!tty_ || status_.empty()) return;
  winsize ws{};
  std::size_t width = 0;
  if (::ioctl(::fileno(out_), TIOCGWINSZ, &ws) == 0) width = ws.ws_col;
  std::size_t start = 0;
  while (start <= status_.size()) {
    const std::size_t end = std::min(status_.find('\n', start), status_.size());
    const std::size_t len = end - start;
    if (status_lines_ > 0) std::fputs("\n", out_);
    const std::size_t shown = width > 1 ? std::min(len, width - 1) : len;
    std::fprintf(out_, "%.*s", static_cast<int>(shown), status_.c_str() + start);
    ++status_lines_;
    start = end + 1;
  }
}

}  // namespace flowd
