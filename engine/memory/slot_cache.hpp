#pragma once
// A cache of fixed-size slots (the all-pairs pattern, issue 15; Rocket's
// three caches: device, pinned host, and the host cache peers serve from).
// It keeps only the bookkeeping — which key is in which slot and in what
// state; the caller owns the slots' memory (slot i of an array it made).
//
// A slot is empty, being written by one writer, or ready for any number of
// readers (write once, read many). A reader pins the slot until release();
// a slot is evicted only when no one has it pinned, least recently used
// first. A caller asking for a key being written waits for the writer, and
// one asking while every slot is pinned waits for a release.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace flowd::memory {

class SlotCache {
public:
  explicit SlotCache(std::size_t slots);

  // What acquire() gives: the slot holding `key`, pinned for reading (hit),
  // or a slot reserved for the caller to fill with `key` (load): the caller
  // writes it, then calls publish() (which pins it for its own reading) or
  // abandon() when the load failed.
  struct Lease {
    std::size_t slot = 0;
    bool hit = false;
  };
  // Blocks while `key` is being written by another caller or every slot is
  // pinned. Throws std::logic_error for a cache of no slots.
  Lease acquire(std::uint64_t key);
  // Non-blocking: nullopt where acquire() would wait.
  std::optional<Lease> try_acquire(std::uint64_t key);
  // The same, except that a miss reserves a slot only if `wanted` (asked
  // under the cache's lock, so that no acquire comes between) says the
  // load is still needed.
  std::optional<Lease> try_acquire(std::uint64_t key, const std::function<bool()>& wanted);
  // For loading ahead of need: a slot reserved for writing `key` (as a
  // miss of acquire() gives), or nullopt when `key` is already cached or
  // being written, or no slot is free to evict; never waits, and counts no
  // lookup. The writer publishes, then releases the slot it no longer reads.
  std::optional<std::size_t> reserve_if_absent(std::uint64_t key);
  void publish(std::size_t slot);
  void abandon(std::size_t slot);
  // One reader is done with the slot.
  void release(std::size_t slot);

  struct Stats {
    std::uint64_t hits = 0, loads = 0, evictions = 0, waits = 0;
  };
  Stats stats() const;
  std::size_t slots() const noexcept { return slots_.size(); }
  // The key a slot holds (ready or being written), for tests and reports.
  std::optional<std::uint64_t> key_of(std::size_t slot) const;
  // The keys of every ready slot, in slot order (what a peer may be served).
  std::vector<std::uint64_t> ready_keys() const;

private:
  enum class State : std::uint8_t { empty, writing, ready };
  struct Slot {
    State state = State::empty;
    std::uint64_t key = 0;
    std::uint32_t readers = 0;
    std::uint64_t used = 0;  // tick of the last acquire
  };
  // Under m_: a lease now, or nullopt (must wait).
  std::optional<Lease> try_locked(std::uint64_t key);
  // Under m_, `key` not cached: a slot to write it in, or nullopt.
  std::optional<Lease> reserve_locked(std::uint64_t key);

  mutable std::mutex m_;
  std::condition_variable changed_;
  std::vector<Slot> slots_;
  std::unordered_map<std::uint64_t, std::size_t> where_;  // key -> slot, writing or ready
  std::uint64_t tick_ = 0;
  Stats stats_;
};

}  // namespace flowd::memory
