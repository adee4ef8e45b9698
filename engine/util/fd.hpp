#pragma once
// A file descriptor that closes on scope exit; close() reports what a
// deferred close would hide (the last write-back error of some filesystems).
#include <unistd.h>

namespace flowd {

class Fd {
public:
  explicit Fd(int fd) noexcept : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const noexcept { return fd_; }
  int close() noexcept {
    const int r = ::close(fd_);
    fd_ = -1;
    return r;
  }

private:
  int fd_;
};

}  // namespace flowd
