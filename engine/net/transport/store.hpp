#pragma once
// Where an ItemServer finds the items it serves. The server only reads: the
// runtime decides what a node holds (its outputs, until release_items), and
// the store is the one place both sides meet.
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "flowd/item.hpp"
#include "net/wire/messages.hpp"

namespace flowd::net::transport {

// "item 'slide3/tile/12/40' (version 2, timestamp 0)": every error about an
// item names it this way.
std::string describe(const wire::ItemId& id);

// The identity an item travels under.
wire::ItemId id_of(const ItemMeta& meta);

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
  // filed under its own metadata (id_of); the runtime names items itself
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

}  // namespace flowd::net::transport
