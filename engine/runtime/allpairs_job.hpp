#pragma once
// An all-pairs stage's job on a cluster worker node (the node's side of
// runtime/cluster_allpairs.cpp): a stretch of the stage's Hilbert leaves run
// on this node's lanes through a cache that lasts across the stage's jobs.
// A miss asks the peer the coordinator's directory named, then loads.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/task_host.hpp"
#include "runtime/task_runner.hpp"
#include "sched/allpairs_run.hpp"

namespace flowd::runtime::detail {

// One all-pairs stage's preprocessed items on this node, made by its first
// job and kept until the node leaves the run.
class AllPairsNodeCache {
public:
  using Share = std::function<void(const std::string&, std::shared_ptr<const Item>)>;
  // The cache (made with `slots` slots on first use; later jobs get the same).
  sched::ItemCache<Item>& get(std::size_t slots);
  // Item `item` is being loaded here: peers asking for it are told so (a
  // marker item), and wait for it rather than load it too.
  void loading(std::uint64_t item, const std::string& name, const Share& share);
  // Serves ℓ(item) to peers under `name`, and stops serving the items the
  // cache no longer holds (so what peers may fetch stays within the cache's
  // slots, plus this one).
  void serve(std::uint64_t item, const std::string& name, const Item& value, const Share& share);
  // The load of `item` failed: its marker goes.
  void abandon(std::uint64_t item, const std::string& name, const Share& share);

private:
  std::mutex m_;
  std::unique_ptr<sched::ItemCache<Item>> cache_;
  std::map<std::uint64_t, std::string> served_;  // item -> name it is served under
  std::map<std::uint64_t, std::string> loading_;  // items whose marker is served
};

// What a node serves for an item it is loading: an empty item whose attrs
// carry this key.
inline constexpr const char* peer_loading_attr = "flowd.allpairs.loading";
inline bool is_loading_marker(const Item& item) { return item.meta.attrs.contains(peer_loading_attr); }

// The name peers fetch ℓ(item) under.
std::string peer_cache_name(const std::string& stage, std::uint64_t item);

sched::TaskPtr make_allpairs_job(TaskRunner& runner, Stage& s, AllPairsNodeCache& cache, std::string key,
                                 AllPairsJob job, std::function<void(HostedResult)> done);

}  // namespace flowd::runtime::detail
