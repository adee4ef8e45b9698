// The worker node's public face and its teardown; joining and serving live
// in the files worker_node_impl.hpp lists.
#include "net/node/worker_node.hpp"

#include "net/node/worker_node_impl.hpp"

namespace flowd::net::node {

WorkerNode::Impl::~Impl() {
  stopping = true;
  // Fetchers first (they submit to the host), then the host (its running
  // operators finish; their completions are not reported any more).
  pool.reset();
  host.reset();
  // The item server reads the store: both go before the file.
  server.reset();
  store.reset();
  if (!store_file.empty()) {
    std::error_code ec;
    std::filesystem::remove(store_file, ec);
  }
}

void WorkerNode::Impl::shutdown() {
  stopping = true;
  queue->drop_waiting();
  pool.reset();
  host.reset();
  socket.close();
  membership.reset();  // says bye on the membership channel unless the coordinator is gone
}

WorkerNode::WorkerNode(WorkerNodeOptions options, Logger& log)
    : impl_(std::make_unique<Impl>(std::move(options), log)) {}

WorkerNode::~WorkerNode() = default;

int WorkerNode::run() {
  if (impl_->ran) throw Error("WorkerNode::run() may be called once");
  impl_->ran = true;
  const int rc = impl_->serve();
  impl_->shutdown();
  return rc;
}

std::uint32_t WorkerNode::id() const { return impl_->worker_id; }

const std::string& WorkerNode::data_endpoint() const { return impl_->data_endpoint; }

WorkerNodeStats WorkerNode::stats() const {
  WorkerNodeStats s;
  s.tasks_run = impl_->tasks_run;
  s.tasks_failed = impl_->tasks_failed;
  s.tasks_stolen_from_me = impl_->tasks_stolen;
  s.items_fetched = impl_->items_fetched;
  s.bytes_fetched = impl_->bytes_fetched;
  s.items_served = impl_->server ? impl_->server->stats().transfers_completed : 0;
  s.items_released = impl_->items_released;
  s.release_unknown = impl_->release_unknown;
  s.messages_rejected = impl_->rejected;
  return s;
}

}  // namespace flowd::net::node
