#pragma once
// The open (JSON) parts of a cluster run's messages, shared by the
// coordinator (coordinator.hpp) and worker nodes (worker_node.hpp); the
// exchange itself is in docs/cluster.md "Runtime protocol". Every from_json
// throws flowd::Error naming the field, so a malformed message is rejected
// with a reason, never half-read.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "flowd/item.hpp"
#include "wire/messages.hpp"

namespace flowd::net::node {

// The task channel's bye at the normal end of a run. Any other reason
// (refused, cut off, declared lost) ends a worker with exit 3.
inline constexpr std::string_view bye_run_over = "the run is over";

// What a worker needs to know of the run: Welcome::config.
struct RunConfig {
  Json workflow = Json::object();  // workflow::Workflow::resolved: the document after substitution and --set
  std::string workflow_name;       // for messages
  std::string base_dir;            // the workflow file's directory: relative paths resolve against it
  std::vector<std::string> plugin_path;  // the coordinator's -P entries, searched after the worker's own
  std::string task_endpoint;       // the coordinator's task channel (ROUTER)
  std::string data_endpoint;       // the coordinator's item server: holder 0
  std::string server_public_key;   // Z85 of the coordinator's key (all three sockets); "" without CURVE
  // Public keys allowed to fetch from a worker's item server (the workers'
  // and the coordinator's); empty without CURVE.
  std::vector<std::string> peer_public_keys;
  Json run = Json::object();       // node defaults: {"scheduler", "locality", "prefetch"}
  Json to_json() const;
  static RunConfig from_json(const Json& j);
};

// A worker's first message on the task channel: Hello::info.
struct Registration {
  std::uint32_t worker_id = 0;     // from the membership welcome
  std::string server_public_key;   // Z85 of the worker's item-server key; "" without CURVE
  Json labels = Json::object();    // the node's labels (workflow/labels.hpp node form)
  std::map<std::string, std::string> unavailable;  // stage -> why this node cannot run it
  Json to_json() const;
  static Registration from_json(const Json& j);
};

// Where a holder serves its items.
struct PeerAddress {
  std::string endpoint;
  std::string public_key;  // Z85; "" without CURVE
};

// AssignTask::spec.
struct TaskSpec {
  std::string key;                   // the tuple's key
  std::vector<std::uint32_t> ports;  // input port of each AssignTask::inputs entry
  std::map<std::uint32_t, PeerAddress> peers;  // holder id -> address, for every holder of an input
  std::uint32_t attempt = 0;         // 0 first; a re-run after a lost worker counts up
  // False for a task stolen once already: the node never gives it up to a
  // steal_request, so no task moves back and forth. Absent in the JSON
  // means true (the field is only written when false).
  bool stealable = true;
  // A scan rank's job (runtime/cluster_scan.cpp): what the job is; null for
  // a map task. Its inputs may share a port.
  Json scan = nullptr;
  Json to_json() const;
  static TaskSpec from_json(const Json& j);
};

// The store name of the `index`-th item task `task_id` emitted: unique per
// task attempt (task ids are never reused), so a re-run never collides with
// what an earlier attempt left.
wire::ItemId output_id(const std::string& key, std::uint64_t task_id, std::uint32_t index);

}  // namespace flowd::net::node
