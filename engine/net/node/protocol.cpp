#include "net/node/protocol.hpp"

#include "flowd/error.hpp"

namespace flowd::net::node {

namespace {

const Json& field(const Json& j, const char* what, const char* name) {
  if (!j.is_object()) throw Error(std::string(what) + ": expected a JSON object");
  const auto it = j.find(name);
  if (it == j.end()) throw Error(std::string(what) + ": missing field '" + name + "'");
  return *it;
}

std::string text(const Json& j, const char* what, const char* name) {
  const Json& v = field(j, what, name);
  if (!v.is_string()) throw Error(std::string(what) + ": field '" + name + "' must be a string");
  return v.get<std::string>();
}

std::vector<std::string> texts(const Json& j, const char* what, const char* name) {
  const Json& v = field(j, what, name);
  if (!v.is_array()) throw Error(std::string(what) + ": field '" + name + "' must be an array of strings");
  std::vector<std::string> out;
  for (const auto& e : v) {
    if (!e.is_string()) throw Error(std::string(what) + ": field '" + name + "' must be an array of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::uint32_t u32(const Json& v, const std::string& what) {
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > 0xFFFFFFFFull)
    throw Error(what + " must be an unsigned 32-bit number");
  return v.get<std::uint32_t>();
}

}  // namespace

Json RunConfig::to_json() const {
  return {{"workflow", workflow},         {"workflow_name", workflow_name},
          {"base_dir", base_dir},         {"plugin_path", plugin_path},
          {"task_endpoint", task_endpoint}, {"data_endpoint", data_endpoint},
          {"server_public_key", server_public_key}, {"peer_public_keys", peer_public_keys},
          {"run", run}};
}

RunConfig RunConfig::from_json(const Json& j) {
  const char* what = "run config";
  RunConfig c;
  c.workflow = field(j, what, "workflow");
  if (!c.workflow.is_object()) throw Error("run config: field 'workflow' must be an object");
  c.workflow_name = text(j, what, "workflow_name");
  c.base_dir = text(j, what, "base_dir");
  c.plugin_path = texts(j, what, "plugin_path");
  c.task_endpoint = text(j, what, "task_endpoint");
  c.data_endpoint = text(j, what, "data_endpoint");
  c.server_public_key = text(j, what, "server_public_key");
  c.peer_public_keys = texts(j, what, "peer_public_keys");
  c.run = field(j, what, "run");
  if (!c.run.is_object()) throw Error("run config: field 'run' must be an object");
  return c;
}

Json Registration::to_json() const {
  return {{"worker_id", worker_id}, {"server_public_key", server_public_key}, {"labels", labels}, {"unavailable", unavailable}};
}

Registration Registration::from_json(const Json& j) {
  const char* what = "registration";
  Registration r;
  r.worker_id = u32(field(j, what, "worker_id"), "registration: field 'worker_id'");
  r.server_public_key = text(j, what, "server_public_key");
  r.labels = field(j, what, "labels");
  const Json& u = field(j, what, "unavailable");
  if (!u.is_object()) throw Error("registration: field 'unavailable' must be an object of stage: reason");
  for (const auto& [stage, why] : u.items()) {
    if (!why.is_string()) throw Error("registration: unavailable['" + stage + "'] must be a string");
    r.unavailable[stage] = why.get<std::string>();
  }
  return r;
}

Json TaskSpec::to_json() const {
  Json p = Json::object();
  for (const auto& [id, a] : peers) p[std::to_string(id)] = {{"endpoint", a.endpoint}, {"public_key", a.public_key}};
  Json j = {{"key", key}, {"ports", ports}, {"peers", std::move(p)}, {"attempt", attempt}};
  if (!stealable) j["stealable"] = false;
  if (!scan.is_null()) j["scan"] = scan;
  return j;
}

TaskSpec TaskSpec::from_json(const Json& j) {
  const char* what = "task spec";
  TaskSpec s;
  s.key = text(j, what, "key");
  const Json& ports = field(j, what, "ports");
  if (!ports.is_array()) throw Error("task spec: field 'ports' must be an array");
  for (const auto& p : ports) s.ports.push_back(u32(p, "task spec: a port"));
  const Json& peers = field(j, what, "peers");
  if (!peers.is_object()) throw Error("task spec: field 'peers' must be an object");
  for (const auto& [id, a] : peers.items()) {
    std::uint32_t holder = 0;
    try {
      std::size_t used = 0;
      const unsigned long v = std::stoul(id, &used);
      if (used != id.size() || v > 0xFFFFFFFFul) throw std::invalid_argument(id);
      holder = static_cast<std::uint32_t>(v);
    } catch (const std::exception&) {
      throw Error("task spec: peer id '" + id + "' is not a number");
    }
    s.peers[holder] = PeerAddress{text(a, "task spec peer", "endpoint"), text(a, "task spec peer", "public_key")};
  }
  s.attempt = u32(field(j, what, "attempt"), "task spec: field 'attempt'");
  if (const auto it = j.find("stealable"); it != j.end()) {
    if (!it->is_boolean()) throw Error("task spec: field 'stealable' must be true or false");
    s.stealable = it->get<bool>();
  }
  if (const auto it = j.find("scan"); it != j.end()) {
    if (!it->is_object()) throw Error("task spec: field 'scan' must be an object");
    s.scan = *it;
  }
  return s;
}

wire::ItemId output_id(const std::string& key, std::uint64_t task_id, std::uint32_t index) {
  return wire::ItemId{key, static_cast<std::int64_t>(task_id), static_cast<std::int64_t>(index)};
}

}  // namespace flowd::net::node
