#pragma once
// Where a node keeps the items it holds: its outputs until release_items,
// served to other nodes by the item server (net/transport), or replayed by a
// resumed run (store/checkpoint.hpp). Readers only find; the runtime decides
// what goes in. Free of any socket code, so a local --journal run links none.
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "flowd/item.hpp"
#include "wire/messages.hpp"

namespace flowd::store {

// Called from the server's thread while other threads may add and drop
// items: implementations must be thread-safe. The shared pointer keeps an
// item alive for as long as a transfer sends from it, even if the store
// drops it meanwhile (the payload frames are views of its memory).
class ItemStore {
public:
  virtual ~ItemStore() = default;
  virtual std::shared_ptr<const Item> find(const wire::ItemId& id) const = 0;
};

// A store the runtime writes: a node's outputs until release_items. Items
// go in under names the runtime chooses (node/protocol.hpp output_id) and
// come out exactly as made.
class NodeItemStore : public ItemStore {
public:
  virtual void put(const wire::ItemId& name, std::shared_ptr<const Item> item) = 0;
  virtual bool erase(const wire::ItemId& name) = 0;
};

class MemoryItemStore final : public NodeItemStore {
public:
  // Replaces an item stored under the same id. Without a name an item is
  // filed under its own metadata (wire::id_of); the runtime names items itself
  // (node/protocol.hpp output_id) so that two items with equal metadata do
  // not collide and each is served exactly as it was made.
  void put(std::shared_ptr<const Item> item);
  void put(Item item) { put(std::make_shared<const Item>(std::move(item))); }
  void put(const wire::ItemId& name, std::shared_ptr<const Item> item) override;
  bool erase(const wire::ItemId& id) override { return take(id) != nullptr; }
  // Removes and returns the item, so its last reference can be dropped
  // outside the caller's locks.
  std::shared_ptr<const Item> take(const wire::ItemId& id);
  std::size_t size() const;

  std::shared_ptr<const Item> find(const wire::ItemId& id) const override;

private:
  using Key = std::tuple<std::string, std::int64_t, std::int64_t>;
  static Key key_of(const wire::ItemId& id) { return {id.key, id.version, id.timestamp}; }

  mutable std::mutex m_;
  std::map<Key, std::shared_ptr<const Item>> items_;
};

}  // namespace flowd::store
