// The fetcher threads: each pulls a started task's inputs (from this node's
// store or another holder's item server) and submits the task to the
// TaskHost. A client is single-threaded, so each thread has its own.
#include <chrono>
#include <cstdio>

#include "net/node/worker_node_impl.hpp"
#include "runtime/allpairs_job.hpp"

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
  // Peer-to-peer traffic, visible with -v: which node fed which.
  if (log.enabled(LogLevel::debug)) {
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    char took[32];
    std::snprintf(took, sizeof took, "%.1f ms", ms);
    log.debug(who() + ": pulled " + wire::describe(ref.id) + " (" + std::to_string(bytes) + " bytes) from " +
              (ref.holder == 0 ? std::string("the coordinator") : "worker " + std::to_string(ref.holder)) + " at " +
              peer.endpoint + " in " + took);
  }
  return item;
}

// A scan rank's job: the operands of a finish now; the segment's elements
// and the items a combine reads by key when a combine needs them (through a
// client of the job's own, so fetchers go on; a finish needs only the
// elements it scans in a chain).
void WorkerNode::Impl::fetch_and_submit_scan(transport::ItemClient& client, QueuedTask task) {
  const std::string what = "scan job " + std::to_string(task.task_id) + " of stage '" + task.stage + "'";
  const auto elements = task.spec.scan.value("elements", std::size_t{0});
  runtime::ScanJob job;
  job.spec = task.spec.scan;
  std::vector<wire::ItemRef> element_refs, lookup_refs;
  for (std::size_t i = 0; i < task.inputs.size(); ++i) {
    const auto& ref = task.inputs[i];
    if (task.spec.ports[i] != 0) {
      lookup_refs.push_back(ref);
      job.lookup_ports.push_back(task.spec.ports[i]);
      continue;
    }
    if (element_refs.size() < elements) {
      element_refs.push_back(ref);
      job.element_holders.push_back(ref.holder == worker_id ? "this node" : "holder " + std::to_string(ref.holder));
      continue;
    }
    if (stopping) {
      complete({task.task_id, false, true, what + ": " + who() + " is shutting down", 0, {}, {}});
      return;
    }
    try {
      job.operands.push_back(pull(client, ref, task.spec));
    } catch (const std::exception& e) {
      complete({task.task_id, false, true,
                what + ": cannot pull operand " + wire::describe(ref.id) + " from holder " + std::to_string(ref.holder) +
                    ": " + e.what(),
                0,
                {},
                {}});
      return;
    }
  }
  auto pullers = std::make_shared<JobClients>(client_options);
  auto pull_one = [this, pullers, spec = task.spec](const wire::ItemRef& ref, std::size_t which) -> Item {
    return pullers->with(which, [&](transport::ItemClient& own) {
      try {
        return pull(own, ref, spec);
      } catch (const std::exception& e) {
        throw Error("cannot pull " + wire::describe(ref.id) + " from holder " + std::to_string(ref.holder) + ": " +
                    e.what());
      }
    });
  };
  job.element = [pull_one, refs = std::move(element_refs)](std::size_t i) { return pull_one(refs.at(i), i); };
  job.lookup = [pull_one, refs = std::move(lookup_refs)](std::size_t i) { return pull_one(refs.at(i), i); };
  std::lock_guard lock(submit_m);
  host->submit_scan(task.stage, task.spec.key, std::move(job),
                    [this, id = task.task_id, key = task.spec.key, stage_name = task.stage](runtime::HostedResult r) {
                      hosted(id, key, stage_name, std::move(r));
                    });
}

// The peer cache (docs/cluster.md "All-pairs stages"): a node serves the
// items it preprocessed from its store while its cache holds them; the
// coordinator's directory says which node to ask. A node that no longer holds
// the item, or does not answer, costs one round trip: the item is loaded
// here instead, never failed for it.
void WorkerNode::Impl::fetch_and_submit_allpairs(QueuedTask task) {
  runtime::AllPairsJob job;
  job.spec = task.spec.scan;
  const std::string stage = task.stage;
  // Lanes and loader threads missing different items pull them in parallel.
  auto pullers = std::make_shared<JobClients>(client_options);
  const auto refs = std::make_shared<const std::vector<wire::ItemRef>>(task.inputs);
  const auto spec = std::make_shared<const TaskSpec>(task.spec);
  job.element = [this, pullers, refs, spec](std::size_t i) -> Item {
    const auto& ref = refs->at(i);
    return pullers->with(i, [&](transport::ItemClient& client) {
      try {
        return pull(client, ref, *spec);
      } catch (const std::exception& e) {
        throw Error("cannot pull " + wire::describe(ref.id) + " from holder " + std::to_string(ref.holder) + ": " +
                    e.what());
      }
    });
  };
  // Only an in-memory store serves peers: one written to disk (--store)
  // would make every load a durable write.
  if (dynamic_cast<store::MemoryItemStore*>(store.get())) {
    // Item i's candidates: the nodes that hold it or will need it.
    auto hints = std::make_shared<std::map<std::size_t, std::vector<std::uint32_t>>>();
    for (const auto& h : job.spec.value("peer_cache", Json::array()))
      (*hints)[h.at(0).get<std::size_t>()] = h.at(1).get<std::vector<std::uint32_t>>();
    const auto items = job.spec.at("items");
    job.from_peer = [this, pullers, hints, spec, stage, items](std::size_t i) -> std::optional<Item> {
      const auto h = hints->find(i);
      if (h == hints->end()) return std::nullopt;
      const wire::ItemId id{runtime::detail::peer_cache_name(stage, items.at(i).get<std::uint64_t>()), 0, 0};
      // Asks one candidate: the item, a marker (it is loading it now), or
      // nothing (it never had it, evicted it, or did not answer).
      auto ask = [&](std::uint32_t holder) -> std::optional<Item> {
        if (holder == worker_id || !spec->peers.contains(holder)) return std::nullopt;
        return pullers->with(i, [&](transport::ItemClient& client) -> std::optional<Item> {
          try {
            return pull(client, wire::ItemRef{id, holder, 0}, *spec);
          } catch (const std::exception& e) {
            log.debug(who() + ": the peer cache of holder " + std::to_string(holder) + " did not give " +
                      wire::describe(id) + ": " + e.what());
            return std::nullopt;
          }
        });
      };
      std::optional<std::uint32_t> loading_at;
      for (const auto holder : h->second) {
        auto got = ask(holder);
        if (!got) continue;
        if (!runtime::detail::is_loading_marker(*got)) return got;
        if (!loading_at) loading_at = holder;
      }
      if (!loading_at) return std::nullopt;
      // A peer is loading it now: waiting for that costs less than loading
      // it again, within the bound of one pull; if the peer gives up (its
      // marker goes) or stops answering, it is loaded here.
      const auto give_up = std::chrono::steady_clock::now() + options.fetch_timeout;
      auto pause = std::chrono::milliseconds(5);
      while (!stopping && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(100));
        auto got = ask(*loading_at);
        if (!got) return std::nullopt;
        if (!runtime::detail::is_loading_marker(*got)) return got;
      }
      return std::nullopt;
    };
    job.share = [this](const std::string& served_as, std::shared_ptr<const Item> item) {
      const wire::ItemId id{served_as, 0, 0};
      if (item)
        store->put(id, std::move(item));
      else
        store->erase(id);
    };
  }
  std::lock_guard lock(submit_m);
  host->submit_allpairs(task.stage, task.spec.key, std::move(job),
                        [this, id = task.task_id, key = task.spec.key, stage_name = task.stage](runtime::HostedResult r) {
                          hosted(id, key, stage_name, std::move(r));
                        });
}

bool WorkerNode::Impl::pull_inputs(transport::ItemClient& client, const QueuedTask& task,
                                   const workflow::StageNode& stage, std::vector<std::optional<Item>>& inputs) {
  const std::string what = "task " + std::to_string(task.task_id) + " of stage '" + task.stage + "'";
  for (std::size_t i = 0; i < task.inputs.size(); ++i) {
    if (stopping) {
      complete({task.task_id, false, true, what + ": " + who() + " is shutting down", 0, {}, {}});
      return false;
    }
    const auto& ref = task.inputs[i];
    const auto port = task.spec.ports[i];
    try {
      inputs[port] = pull(client, ref, task.spec);
    } catch (const std::exception& e) {
      const auto it = task.spec.peers.find(ref.holder);
      Completion c{task.task_id,
                   false,
                   true,
                   what + ": cannot pull input '" + stage.spec().inputs[port].name + "' (" + wire::describe(ref.id) +
                       ") from holder " + std::to_string(ref.holder) +
                       (it != task.spec.peers.end() ? " at " + it->second.endpoint : std::string()) + ": " + e.what(),
                   0,
                   {},
                   {}};
      // A holder that did not answer (or was declared gone meanwhile): the
      // coordinator waits for it or has the item made again, rather than
      // counting this against the task.
      if (const auto* f = dynamic_cast<const transport::FetchError*>(&e);
          f && (f->kind() == transport::FetchError::Kind::timed_out ||
                f->kind() == transport::FetchError::Kind::abandoned))
        c.unreachable.push_back(ref.holder);
      complete(std::move(c));
      return false;
    }
  }
  return true;
}

void WorkerNode::Impl::fetch_and_submit(transport::ItemClient& client, QueuedTask task) {
  const std::string what = "task " + std::to_string(task.task_id) + " of stage '" + task.stage + "'";
  try {
    const auto* stage = graph.find(task.stage);  // checked on assignment
    if (!stage) throw Error("stage '" + task.stage + "' is not open here");
    if (!task.spec.scan.is_null() && task.spec.scan.value("phase", std::string()) == "source") {
      std::lock_guard lock(submit_m);
      host->submit_source(task.stage, task.spec.key,
                          [this, id = task.task_id, key = task.spec.key, stage_name = task.stage](runtime::HostedResult r) {
                            hosted(id, key, stage_name, std::move(r));
                          });
      return;
    }
    if (!task.spec.scan.is_null() && task.spec.scan.value("phase", std::string()) == "allpairs") {
      fetch_and_submit_allpairs(std::move(task));
      return;
    }
    const bool sink = !task.spec.scan.is_null() && task.spec.scan.value("phase", std::string()) == "sink";
    if (!task.spec.scan.is_null() && !sink) {
      fetch_and_submit_scan(client, std::move(task));
      return;
    }
    std::vector<std::optional<Item>> inputs(stage->spec().inputs.size());
    if (!pull_inputs(client, task, *stage, inputs)) return;
    auto answer = [this, id = task.task_id, key = task.spec.key, stage_name = task.stage](runtime::HostedResult r) {
      hosted(id, key, stage_name, std::move(r));
    };
    std::lock_guard lock(submit_m);  // done() may run inside submit: hosted() takes no lock of ours but done_m
    if (sink)
      host->submit_sink(task.stage, task.spec.key, task.spec.scan, std::move(inputs), std::move(answer));
    else
      host->submit(task.stage, task.spec.key, std::move(inputs), std::move(answer));
  } catch (const std::exception& e) {
    complete({task.task_id, false, false, what + " on item '" + task.spec.key + "': " + e.what(), 0, {}, {}});
  }
}

}  // namespace flowd::net::node
