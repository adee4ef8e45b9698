#pragma once
// Counts bytes requested from operator new while armed, to show that
// reassembly allocates the destination once and nothing of its size again.
#include <cstddef>

namespace flowd::wire::testing {

// False in sanitizer builds, which keep their own operator new.
bool alloc_counter_active() noexcept;
// Arming resets the counters.
void alloc_counting(bool on) noexcept;
std::size_t alloc_total() noexcept;    // bytes requested while armed
std::size_t alloc_largest() noexcept;  // the largest single request while armed

}  // namespace flowd::wire::testing
