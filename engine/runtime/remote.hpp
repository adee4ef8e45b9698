#pragma once
// The seam between a run and a cluster (issue 5, docs/cluster.md "Runtime").
//
// A coordinator runs the workflow with runtime::Run as usual: sources, routing,
// joins, reduces and sinks stay in its process, except the sources and sinks
// a placement moved to worker nodes (takes_source, takes_sink). Map stages the cluster
// takes (RemoteExecutor::takes) are not queued locally; their tasks go to
// the executor, which runs them on worker nodes and answers with references
// to outputs that stay on the node that made them (RemoteItem). The run
// routes those references like any item; whoever needs a value (a worker's
// next task, or a sink here) pulls it from its holder.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flowd/item.hpp"
#include "runtime/carried.hpp"

namespace flowd::runtime {

struct RemoteOutput {
  std::size_t port = 0;
  ItemMeta meta;                           // key, attrs... of the item as made
  std::shared_ptr<const RemoteItem> item;  // where it lives
};

struct RemoteResult {
  bool ok = false;
  std::string error;  // when not ok: what happened
  std::string key;    // when not ok: the item it failed on
  std::vector<RemoteOutput> outputs;
  std::string node;   // which node ran it ("" when it never ran)
  // A job pinned to a node (RemoteTask::node) that could not run because
  // that node was lost: the caller may give its work to other nodes.
  bool node_lost = false;
  double seconds = 0; // the operator's time there
};

// An output made on another node, as this process routes it: its metadata,
// no value, and where the value is.
inline CarriedPtr carried_from(RemoteOutput& o, std::vector<CreditPtr> credits = {}) {
  auto c = std::make_shared<Carried>(Carried{Item{std::move(o.meta), {}}, std::move(credits)});
  c->remote = std::move(o.item);
  return c;
}

struct RemoteTask {
  std::size_t stage = 0;  // index into the graph's stages
  std::string key;
  std::vector<CarriedPtr> inputs;  // by input port; null for an unconnected optional port
  // Called exactly once (until drain()), from any thread but never with a
  // lock of the executor held, so it may submit new tasks.
  std::function<void(RemoteResult)> done;
  // A scan rank's job (runtime/cluster_scan.cpp) takes many items per port:
  // then `ports` gives each input's port (empty: input i is port i), `scan`
  // says what the job is (null for a map task), and `node` is the worker
  // node that must run it.
  std::vector<std::uint32_t> ports;
  Json scan;
  std::optional<std::uint32_t> node;
};

// A worker node, as a scan's rank.
struct RemoteNode {
  std::uint32_t id = 0;
  std::string name;
  int slots = 1;  // tasks it runs at once: its lanes
};

class RemoteExecutor {
public:
  virtual ~RemoteExecutor() = default;
  // Whether map stage `stage` runs on the cluster rather than in this process.
  virtual bool takes(std::size_t stage) const = 0;
  // Whether source stage `stage` runs on one of the cluster's worker nodes
  // (a placement moved it there): each next() is then a RemoteTask pinned to
  // that node, with `scan` {"phase": "source"}; its outputs are what next()
  // emitted, then an empty item whose attrs["flowd.source"] says
  // {"more", "expected"} (runtime::TaskHost::submit_source).
  virtual bool takes_source(std::size_t) const { return false; }
  // Whether sink stage `stage` runs on one of the cluster's worker nodes (a
  // placement moved it there): each of its steps (runtime/node_sinks.hpp) is
  // then a RemoteTask pinned to that node, with `scan` {"phase": "sink",
  // "step": ...}, and no outputs; its files are written on that node.
  virtual bool takes_sink(std::size_t) const { return false; }
  virtual void submit(RemoteTask task) = 0;
  // The live worker nodes that have stage `stage` open, by id: a scan
  // stage's ranks. Empty when none (the scan then runs in this process).
  virtual std::vector<RemoteNode> nodes_for(std::size_t stage) const = 0;
  // The run is ending (finished, failed or interrupted): no done() is called
  // after this returns; tasks still out are abandoned.
  virtual void drain() = 0;
  // After drain(): tasks submitted from now on run again (the steps that
  // end a placed sink: commit or abort). Nothing drained comes back.
  virtual void resume() {}
};

}  // namespace flowd::runtime
