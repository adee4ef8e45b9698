#pragma once
// The coordinator's RemoteItem (runtime/carried.hpp): an output of a task
// that ran on a worker node, known here by its metadata, its location and
// how it was made (lineage). docs/cluster.md "Runtime protocol" 7 and 9.
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "flowd/item.hpp"
#include "wire/messages.hpp"
#include "runtime/carried.hpp"

namespace flowd::net::node {

// Where the value is now. A recompute moves it (relocate); `failed` says
// why it can no longer be had.
struct ItemLocation {
  std::uint32_t holder = 0;     // worker id
  std::string holder_name;      // "worker 3 (host:pid)", for messages
  wire::ItemId id{};            // its name in the holder's store
  std::uint64_t bytes = 0;
  std::string failed{};         // non-empty: lost for good, and why
};

// The task that made it: re-running it (same stage, same inputs, same key)
// makes the item again; `emission` is its index among that task's outputs.
struct Lineage {
  std::size_t stage = 0;
  std::string key;
  std::vector<runtime::CarriedPtr> inputs;  // by input port; null for unconnected ports
  std::uint32_t emission = 0;
  // False for what a scan rank's job made: the job's lanes stole by timing,
  // so a re-run need not emit the same items in the same order.
  bool remakeable = true;
};

class ClusterItem;

// What an item needs from the coordinator. The coordinator's shared state
// implements it and outlives every item (items hold it); once the
// coordinator is gone, fetch throws and release does nothing.
class ItemHost {
public:
  virtual ~ItemHost() = default;
  // The value, recomputed first when its holder is gone. Blocking.
  virtual Item fetch(const ClusterItem& item) = 0;
  // fetch(item) started on a thread of the host's; invalid when the host
  // pulls nothing ahead (then fetch() does the work when called).
  virtual std::shared_future<Item> fetch_ahead(const ClusterItem&) { return {}; }
  // The last reference is gone: the holder may drop it. Never throws, never
  // blocks on the network, takes no lock that is held while items die.
  virtual void release(std::uint32_t holder, const wire::ItemId& id) noexcept = 0;
};

class ClusterItem final : public runtime::RemoteItem, public std::enable_shared_from_this<ClusterItem> {
public:
  ClusterItem(std::shared_ptr<ItemHost> host, ItemLocation where, Lineage lineage);
  // Releases the value on its holder.
  ~ClusterItem() override;
  ClusterItem(const ClusterItem&) = delete;
  ClusterItem& operator=(const ClusterItem&) = delete;

  // The value pulled ahead, if fetch_ahead() started it (taken: a second
  // fetch pulls again, so no value outlives its first use here), else
  // pulled now.
  Item fetch() const override;
  void fetch_ahead() const override;
  std::string holder() const override;

  ItemLocation location() const;
  const Lineage& lineage() const noexcept { return lineage_; }
  // A recompute made it again elsewhere (items are shared as const, and the
  // location is a cache of where the value is, hence const).
  void relocate(ItemLocation where) const;
  void fail(std::string why) const;

private:
  std::shared_ptr<ItemHost> host_;
  Lineage lineage_;
  mutable std::mutex m_;  // guards where_ and ahead_: a recompute moves it while others read it
  mutable ItemLocation where_;
  mutable std::shared_future<Item> ahead_;  // a pull started by fetch_ahead(), not yet taken
};

}  // namespace flowd::net::node
