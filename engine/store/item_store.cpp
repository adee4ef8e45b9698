#include "store/item_store.hpp"

#include "flowd/error.hpp"

namespace flowd::store {

void MemoryItemStore::put(std::shared_ptr<const Item> item) {
  if (!item) throw Error("MemoryItemStore::put: null item");
  const auto name = wire::id_of(item->meta);
  put(name, std::move(item));
}

void MemoryItemStore::put(const wire::ItemId& name, std::shared_ptr<const Item> item) {
  if (!item) throw Error("MemoryItemStore::put: null item");
  std::lock_guard lock(m_);
  items_[key_of(name)] = std::move(item);
}

std::shared_ptr<const Item> MemoryItemStore::take(const wire::ItemId& id) {
  std::lock_guard lock(m_);
  const auto it = items_.find(key_of(id));
  if (it == items_.end()) return nullptr;
  auto item = std::move(it->second);
  items_.erase(it);
  return item;
}

std::size_t MemoryItemStore::size() const {
  std::lock_guard lock(m_);
  return items_.size();
}

std::shared_ptr<const Item> MemoryItemStore::find(const wire::ItemId& id) const {
  std::lock_guard lock(m_);
  const auto it = items_.find(key_of(id));
  return it == items_.end() ? nullptr : it->second;
}

}  // namespace flowd::store
