// The fetcher threads: each pulls a started task's inputs (from this node's
// store or another holder's item server) and submits the task to the
// TaskHost. A client is single-threaded, so each thread has its own.
#include <chrono>

#include "net/node/worker_node_impl.hpp"

namespace flowd::net::node {

FetchPool::FetchPool(std::size_t threads, const transport::ClientOptions& client_options, Work work)
    : work_(std::move(work)) {
  std::vector<std::unique_ptr<transport::ItemClient>> clients;
  for (std::size_t i = 0; i < threads; ++i)
    clients.push_back(std::make_unique<transport::ItemClient>(client_options));
  try {
    for (auto& c : clients)
      threads_.emplace_back([this, client = std::move(c)] { loop(*client); });
  } catch (...) {
    stop();
    throw;
  }
}

void FetchPool::push(QueuedTask t) {
  {
    std::lock_guard lock(m_);
    q_.push_back(std::move(t));
  }
  cv_.notify_one();
}

void FetchPool::stop() {
  {
    std::lock_guard lock(m_);
    closed_ = true;
    q_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void FetchPool::loop(transport::ItemClient& client) {
  while (true) {
    QueuedTask t;
    {
      std::unique_lock lock(m_);
      cv_.wait(lock, [&] { return closed_ || !q_.empty(); });
      if (closed_) return;
      t = std::move(q_.front());
      q_.pop_front();
    }
    work_(client, std::move(t));  // never throws: failures become completions
  }
}

Item WorkerNode::Impl::pull(transport::ItemClient& client, const wire::ItemRef& ref, const TaskSpec& spec) {
  if (ref.holder == worker_id) {
    const auto held = store->find(ref.id);
    if (!held) throw Error("it is no longer held here");
    return *held;
  }
  const auto& peer = spec.peers.at(ref.holder);
  const auto t0 = std::chrono::steady_clock::now();
  Item item = client.fetch(transport::Peer{peer.endpoint, peer.public_key}, ref.id, options.fetch_timeout);
  const auto bytes = payload_bytes(item);
  if (options.emulate_link_mb_s > 0)
    std::this_thread::sleep_until(t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                           std::chrono::duration<double>(static_cast<double>(bytes) /
                                                                         (options.emulate_link_mb_s * 1e6))));
  ++items_fetched;
  bytes_fetched += bytes;
  return item;
}

// A scan rank's job: its port-0 inputs now, the items a combine reads by key
// when it asks (through a client of the job's own: fetchers go on).
void WorkerNode::Impl::fetch_and_submit_scan(transport::ItemClient& client, QueuedTask task) {
  const std::string what = "scan job " + std::to_string(task.task_id) + " of stage '" + task.stage + "'";
  std::vector<Item> operands;
  std::vector<wire::ItemRef> lazy;
  std::vector<std::uint32_t> lazy_ports;
  for (std::size_t i = 0; i < task.inputs.size(); ++i) {
    if (task.spec.ports[i] != 0) {
      lazy.push_back(task.inputs[i]);
      lazy_ports.push_back(task.spec.ports[i]);
      continue;
    }
    if (stopping) {
      complete({task.task_id, false, true, what + ": " + who() + " is shutting down", 0, {}});
      return;
    }
    try {
      operands.push_back(pull(client, task.inputs[i], task.spec));
    } catch (const std::exception& e) {
      complete({task.task_id, false, true,
                what + ": cannot pull operand " + wire::describe(task.inputs[i].id) + " from holder " +
                    std::to_string(task.inputs[i].holder) + ": " + e.what(),
                0,
                {}});
      return;
    }
  }
  struct Lookups {
    explicit Lookups(const transport::ClientOptions& o) : client(o) {}
    std::mutex m;  // a client is single-threaded; the job's lanes take turns
    transport::ItemClient client;
  };
  auto lookups = std::make_shared<Lookups>(client_options);
  auto lookup = [this, lookups, lazy = std::move(lazy), spec = task.spec](std::size_t i) -> Item {
    std::lock_guard lock(lookups->m);
    try {
      return pull(lookups->client, lazy.at(i), spec);
    } catch (const std::exception& e) {
      throw Error("cannot pull " + wire::describe(lazy.at(i).id) + " from holder " + std::to_string(lazy.at(i).holder) +
                  ": " + e.what());
    }
  };
  std::lock_guard lock(submit_m);
  host->submit_scan(task.stage, task.spec.key, task.spec.scan, std::move(operands), std::move(lazy_ports),
                    std::move(lookup),
                    [this, id = task.task_id, key = task.spec.key, stage_name = task.stage](runtime::HostedResult r) {
                      hosted(id, key, stage_name, std::move(r));
                    });
}

void WorkerNode::Impl::fetch_and_submit(transport::ItemClient& client, QueuedTask task) {
  const std::string what = "task " + std::to_string(task.task_id) + " of stage '" + task.stage + "'";
  try {
    const auto* stage = graph.find(task.stage);  // checked on assignment
    if (!stage) throw Error("stage '" + task.stage + "' is not open here");
    if (!task.spec.scan.is_null()) {
      fetch_and_submit_scan(client, std::move(task));
      return;
    }
    std::vector<std::optional<Item>> inputs(stage->spec().inputs.size());
    for (std::size_t i = 0; i < task.inputs.size(); ++i) {
      if (stopping) {
        complete({task.task_id, false, true, what + ": " + who() + " is shutting down", 0, {}});
        return;
      }
      const auto& ref = task.inputs[i];
      const auto port = task.spec.ports[i];
      try {
        inputs[port] = pull(client, ref, task.spec);
      } catch (const std::exception& e) {
        const auto it = task.spec.peers.find(ref.holder);
        complete({task.task_id,
                  false,
                  true,
                  what + ": cannot pull input '" + stage->spec().inputs[port].name + "' (" + wire::describe(ref.id) +
                      ") from holder " + std::to_string(ref.holder) +
                      (it != task.spec.peers.end() ? " at " + it->second.endpoint : std::string()) + ": " + e.what(),
                  0,
                  {}});
        return;
      }
    }
    std::lock_guard lock(submit_m);  // done() may run inside submit: hosted() takes no lock of ours but done_m
    host->submit(task.stage, task.spec.key, std::move(inputs),
                 [this, id = task.task_id, key = task.spec.key, stage_name = task.stage](runtime::HostedResult r) {
                   hosted(id, key, stage_name, std::move(r));
                 });
  } catch (const std::exception& e) {
    complete({task.task_id, false, false, what + " on item '" + task.spec.key + "': " + e.what(), 0, {}});
  }
}

}  // namespace flowd::net::node
