#pragma once
// Thread-safe logging to stderr. On a terminal the logger also owns a status
// line (progress) kept below the log: it is cleared before each message and
// redrawn after, so the two never interleave.
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

#include "flowd/operator.hpp"

namespace flowd {

class Logger {
public:
  // `out` is usually stderr; `tty` decides between a redrawn status line and
  // plain timestamped lines.
  Logger(std::FILE* out, bool tty, LogLevel min_level = LogLevel::info);
  static Logger to_stderr(LogLevel min_level = LogLevel::info);

  void log(LogLevel level, std::string_view message);
  void debug(std::string_view m) { log(LogLevel::debug, m); }
  void info(std::string_view m) { log(LogLevel::info, m); }
  void warn(std::string_view m) { log(LogLevel::warning, m); }
  void error(std::string_view m) { log(LogLevel::error, m); }

  void set_level(LogLevel l);
  bool enabled(LogLevel l) const;
  bool tty() const noexcept { return tty_; }

  // Terminal only: replaces the status block below the log ("" removes it).
  // It may hold several lines; each is cut to the terminal's width.
  void status(std::string block);
  // Terminal rows, or 0 when unknown.
  std::size_t rows() const;

private:
  void clear_status_locked();
  void draw_status_locked();

  std::FILE* out_;
  bool tty_;
  LogLevel min_;
  mutable std::mutex m_;
  std::string status_;
  std::size_t status_lines_ = 0;  // lines the drawn status occupies
  std::chrono::steady_clock::time_point start_;
};

}  // namespace flowd
