#include "memory/slot_cache.hpp"

#include <limits>
#include <stdexcept>

namespace flowd::memory {

SlotCache::SlotCache(std::size_t slots) : slots_(slots) {}

std::optional<SlotCache::Lease> SlotCache::try_locked(std::uint64_t key) {
  if (slots_.empty()) throw std::logic_error("a slot cache needs at least one slot");
  if (const auto it = where_.find(key); it != where_.end()) {
    Slot& s = slots_[it->second];
    if (s.state == State::writing) return std::nullopt;  // its writer publishes or abandons it
    ++s.readers;
    s.used = ++tick_;
    ++stats_.hits;
    return Lease{it->second, true};
  }
  return reserve_locked(key);
}

std::optional<SlotCache::Lease> SlotCache::reserve_locked(std::uint64_t key) {
  // A free slot, else the least recently used one no reader holds.
  std::size_t pick = slots_.size();
  std::uint64_t oldest = std::numeric_limits<std::uint64_t>::max();
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.state == State::empty) {
      pick = i;
      break;
    }
    if (s.state == State::ready && s.readers == 0 && s.used < oldest) {
      oldest = s.used;
      pick = i;
    }
  }
  if (pick == slots_.size()) return std::nullopt;  // every slot pinned or being written
  Slot& s = slots_[pick];
  if (s.state == State::ready) {
    where_.erase(s.key);
    ++stats_.evictions;
  }
  s.state = State::writing;
  s.key = key;
  s.readers = 0;
  s.used = ++tick_;
  where_[key] = pick;
  ++stats_.loads;
  return Lease{pick, false};
}

SlotCache::Lease SlotCache::acquire(std::uint64_t key) {
  std::unique_lock lk(m_);
  bool waited = false;
  while (true) {
    if (auto lease = try_locked(key)) return *lease;
    if (!waited) ++stats_.waits;
    waited = true;
    changed_.wait(lk);
  }
}

std::optional<SlotCache::Lease> SlotCache::try_acquire(std::uint64_t key) {
  std::lock_guard lk(m_);
  return try_locked(key);
}

std::optional<SlotCache::Lease> SlotCache::try_acquire(std::uint64_t key, const std::function<bool()>& wanted) {
  std::lock_guard lk(m_);
  if (!where_.contains(key) && !wanted()) return std::nullopt;
  return try_locked(key);
}

std::optional<std::size_t> SlotCache::reserve_if_absent(std::uint64_t key) {
  std::lock_guard lk(m_);
  if (slots_.empty()) throw std::logic_error("a slot cache needs at least one slot");
  if (where_.contains(key)) return std::nullopt;
  const auto lease = reserve_locked(key);
  if (!lease) return std::nullopt;
  return lease->slot;
}

void SlotCache::publish(std::size_t slot) {
  {
    std::lock_guard lk(m_);
    Slot& s = slots_.at(slot);
    if (s.state != State::writing) throw std::logic_error("publish of a slot that is not being written");
    s.state = State::ready;
    s.readers = 1;  // the writer reads what it loaded
  }
  changed_.notify_all();
}

void SlotCache::abandon(std::size_t slot) {
  {
    std::lock_guard lk(m_);
    Slot& s = slots_.at(slot);
    if (s.state != State::writing) throw std::logic_error("abandon of a slot that is not being written");
    where_.erase(s.key);
    s = Slot{};
  }
  changed_.notify_all();
}

void SlotCache::release(std::size_t slot) {
  {
    std::lock_guard lk(m_);
    Slot& s = slots_.at(slot);
    if (s.state != State::ready || s.readers == 0) throw std::logic_error("release of a slot no one reads");
    --s.readers;
  }
  changed_.notify_all();
}

SlotCache::Stats SlotCache::stats() const {
  std::lock_guard lk(m_);
  return stats_;
}

std::optional<std::uint64_t> SlotCache::key_of(std::size_t slot) const {
  std::lock_guard lk(m_);
  const Slot& s = slots_.at(slot);
  if (s.state == State::empty) return std::nullopt;
  return s.key;
}

std::vector<std::uint64_t> SlotCache::ready_keys() const {
  std::lock_guard lk(m_);
  std::vector<std::uint64_t> keys;
  for (const Slot& s : slots_)
    if (s.state == State::ready) keys.push_back(s.key);
  return keys;
}

}  // namespace flowd::memory
