// The coordinator's shared state as the ItemHost of the run's items: a value
// is fetched from the node that holds it (after a recompute when that node
// is gone), and an item that dies is released on its holder by the socket
// thread.
#include <cerrno>
#include <cstring>
#include <unistd.h>

#include <sys/eventfd.h>

#include "flowd/error.hpp"
#include "net/node/coordinator_state.hpp"

namespace flowd::net::node {

Coordinator::Core::Core(CoordinatorOptions o) : options(std::move(o)) {
  if (!options.log) options.log = [](LogLevel, std::string_view) {};
  wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) throw Error("coordinator: eventfd failed: " + std::string(std::strerror(errno)));
}

Coordinator::Core::~Core() {
  if (wake_fd >= 0) ::close(wake_fd);
}

void Coordinator::Core::wake() noexcept {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wake_fd, &one, sizeof one);
}

void Coordinator::Core::release(std::uint32_t holder, const wire::ItemId& id) noexcept {
  if (closed) return;
  try {
    std::lock_guard lock(release_m);
    releases[holder].push_back(id);
  } catch (...) {
    return;  // out of memory: the holder keeps the item until the run ends
  }
  wake();
}

std::unique_ptr<transport::ItemClient> Coordinator::Core::acquire_client() {
  {
    std::lock_guard lock(pool_m);
    if (!pool.empty()) {
      auto c = std::move(pool.back());
      pool.pop_back();
      return c;
    }
  }
  transport::ClientOptions o;
  if (options.curve) o.curve = security::ClientCredentials{options.curve->server.public_key, options.curve->server};
  o.log = options.log;
  // A holder declared gone while we wait for it: stop at once.
  o.abandon = [this](const std::string& endpoint) -> std::optional<std::string> {
    if (closed) return "the coordinator has finished";
    std::lock_guard lock(m);
    for (const auto& [id, w] : workers)
      if (!w.live && w.data_endpoint == endpoint) return w.label() + " is gone";
    return std::nullopt;
  };
  return std::make_unique<transport::ItemClient>(std::move(o));
}

void Coordinator::Core::return_client(std::unique_ptr<transport::ItemClient> c) {
  std::lock_guard lock(pool_m);
  pool.push_back(std::move(c));
}

std::shared_future<Item> Coordinator::Core::fetch_ahead(const ClusterItem& item) {
  std::lock_guard lock(ahead_m);
  if (!puller || closed) return {};
  auto done = std::make_shared<std::promise<Item>>();
  std::shared_future<Item> value = done->get_future().share();
  puller->post([this, done, weak = item.weak_from_this()] {
    const auto it = weak.lock();
    try {
      if (!it) throw Error("the item was dropped before it was pulled");
      done->set_value(fetch(*it));
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  });
  return value;
}

Item Coordinator::Core::fetch(const ClusterItem& item) {
  const std::string& key = item.lineage().key;
  // A holder that does not answer is waited for while it stays a member
  // (a link down for less than the loss bound), and cut off past that
  // bound (pull_failed): the item is then made again from its lineage.
  int recomputes = 0;
  for (;;) {
    ItemLocation where;
    transport::Peer peer;
    {
      std::unique_lock lock(m);
      for (;;) {
        if (closed) throw Error("fetching item '" + key + "': the coordinator has finished");
        where = item.location();
        if (!where.failed.empty()) throw Error("item '" + key + "' is lost: " + where.failed);
        if (!gone.contains(where.holder)) break;
        if (recomputes++ > static_cast<int>(options.max_attempts))
          throw Error("fetching item '" + key + "': made again " + std::to_string(recomputes - 1) +
                      " times, and its holder was lost each time");
        if (drained)
          throw Error("fetching item '" + key + "': its holder " + where.holder_name +
                      " is gone and the run is over, so it cannot be recomputed");
        request_recompute(item.shared_from_this());
        wake();
        cv.wait(lock);
      }
      const auto it = workers.find(where.holder);
      if (it == workers.end()) throw Error("fetching item '" + key + "': unknown holder " + where.holder_name);
      peer = transport::Peer{it->second.data_endpoint, it->second.public_key};
    }
    auto client = acquire_client();
    try {
      Item value = client->fetch(peer, where.id, options.fetch_timeout);
      return_client(std::move(client));
      std::lock_guard lock(m);
      pulled_from(where.holder);
      ++st.fetched_by_coordinator;
      st.bytes_fetched += where.bytes;
      return value;
    } catch (const transport::FetchError& e) {
      return_client(std::move(client));
      std::unique_lock lock(m);
      const bool no_answer = e.kind() == transport::FetchError::Kind::timed_out ||
                             e.kind() == transport::FetchError::Kind::abandoned;
      if (closed || !no_answer || !pull_failed(where.holder)) {
        if (gone.contains(where.holder) && !closed) continue;  // made again on the next round
        throw Error("fetching item '" + key + "' (" + wire::describe(where.id) + ") from " + where.holder_name + ": " +
                    e.what());
      }
      // A member that does not answer: wait a heartbeat period (it may be
      // declared lost or cut off meanwhile), then ask again.
      cv.wait_for(lock, options.heartbeat_period, [&] { return gone.contains(where.holder) || closed.load(); });
    }
  }
}

}  // namespace flowd::net::node
