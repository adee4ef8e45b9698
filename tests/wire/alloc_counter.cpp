// Replaces the global operator new of the test binary. A separate
// translation unit so the compiler never pairs an inlined malloc with a
// delete elsewhere.
#include "alloc_counter.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define FLOWD_WIRE_COUNT_ALLOCS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FLOWD_WIRE_COUNT_ALLOCS 0
#endif
#endif
#ifndef FLOWD_WIRE_COUNT_ALLOCS
#define FLOWD_WIRE_COUNT_ALLOCS 1
#endif

namespace {

std::atomic<bool> counting{false};
std::atomic<std::size_t> total{0};
std::atomic<std::size_t> largest{0};

[[maybe_unused]] void note(std::size_t n) noexcept {
  if (!counting.load(std::memory_order_relaxed)) return;
  total += n;
  std::size_t l = largest.load();
  while (n > l && !largest.compare_exchange_weak(l, n)) {
  }
}

}  // namespace

namespace flowd::wire::testing {

bool alloc_counter_active() noexcept { return FLOWD_WIRE_COUNT_ALLOCS != 0; }
void alloc_counting(bool on) noexcept {
  if (on) {
    total = 0;
    largest = 0;
  }
  counting = on;
}
std::size_t alloc_total() noexcept { return total; }
std::size_t alloc_largest() noexcept { return largest; }

}  // namespace flowd::wire::testing

#if FLOWD_WIRE_COUNT_ALLOCS
void* operator new(std::size_t n) {
  note(n);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
  note(n);
  const auto al = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(al, (std::max<std::size_t>(n, 1) + al - 1) / al * al)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
#endif
