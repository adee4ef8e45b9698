// The socket thread: one poll loop owns the task channel's socket and makes
// every placement decision. Each turn reads what arrived (messages, membership
// events, releases), schedules, then sends and hands callbacks to the
// dispatcher after letting go of Core::m.
#include <cerrno>
#include <unistd.h>
#include <utility>

#include "net/node/coordinator_state.hpp"

namespace flowd::net::node {

namespace {

// Longest sleep of the socket thread: bounds how late a membership event is
// acted on and how long stopping takes. Everything else wakes it at once.
constexpr auto loop_max_poll = std::chrono::milliseconds(20);
constexpr int max_receive_batch = 256;
constexpr std::size_t release_batch = 4096;

}  // namespace

Coordinator::Loop::~Loop() {
  {
    // No pull ahead starts from now; those queued run (and fail at once if
    // the coordinator has finished) when `puller` is destroyed.
    std::lock_guard lock(core.ahead_m);
    core.puller = nullptr;
  }
  stop = true;
  core.wake();
  if (thread.joinable()) thread.join();
}

void Coordinator::Loop::flush_releases(Turn& t) {
  std::map<std::uint32_t, std::vector<wire::ItemId>> batch;
  {
    std::lock_guard lock(core.release_m);
    batch.swap(core.releases);
  }
  if (batch.empty()) return;
  std::lock_guard lock(core.m);
  for (auto& [holder, ids] : batch) {
    const auto w = core.workers.find(holder);
    if (w == core.workers.end() || !w->second.live) continue;  // gone with its store
    for (std::size_t i = 0; i < ids.size(); i += release_batch) {
      wire::ReleaseItems rel;
      const auto end = std::min(ids.size(), i + release_batch);
      rel.ids.assign(std::make_move_iterator(ids.begin() + static_cast<std::ptrdiff_t>(i)),
                     std::make_move_iterator(ids.begin() + static_cast<std::ptrdiff_t>(end)));
      t.out.emplace_back(w->second.routing, std::move(rel));
    }
  }
}

void Coordinator::Loop::send_all() {
  std::set<std::string> blocked;
  std::deque<std::pair<std::string, wire::Body>> keep;
  while (!outbox.empty()) {
    auto [peer, body] = std::move(outbox.front());
    outbox.pop_front();
    if (blocked.contains(peer)) {
      keep.emplace_back(std::move(peer), std::move(body));
      continue;
    }
    const auto msg = wire::encode(++seq, body, limits);
    if (!msg) {
      core.log(LogLevel::error, "coordinator: cannot encode " + std::string(wire::to_string(wire::type_of(body))) +
                                    ": " + msg.error().describe());
      continue;
    }
    const auto r = zio::send(socket, peer, *msg, true);
    if (r == zio::SendResult::would_block) {
      blocked.insert(peer);
      keep.emplace_back(std::move(peer), std::move(body));
    }
    // unreachable: the peer is gone; membership declares the loss.
  }
  outbox.swap(keep);
}

void Coordinator::Loop::finish_turn(Turn& t) {
  for (auto& o : t.out)
    outbox.push_back(std::move(o));
  t.out.clear();
  send_all();
  dispatcher.post_all(std::move(t.calls));
  t.calls.clear();
}

void Coordinator::Loop::run() {
  while (!stop) {
    try {
      zmq::pollitem_t items[2] = {{socket.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, core.wake_fd, ZMQ_POLLIN, 0}};
      zmq::poll(items, 2, outbox.empty() ? loop_max_poll : std::chrono::milliseconds(2));
      if (items[1].revents & ZMQ_POLLIN) {
        std::uint64_t n = 0;
        [[maybe_unused]] const auto got = ::read(core.wake_fd, &n, sizeof n);
      }
      Turn t;
      for (int i = 0; i < max_receive_batch; ++i) {
        auto frames = zio::receive(socket);
        if (frames.empty()) break;
        std::lock_guard lock(core.m);
        on_message(frames, t);
      }
      while (auto e = membership->poll_event(std::chrono::milliseconds(0))) {
        if (e->kind == membership::MemberEventKind::joined) continue;
        std::lock_guard lock(core.m);
        core.worker_gone(e->worker.id,
                         {std::string(membership::to_string(e->kind)) + " (" + e->reason + ")",
                          e->kind == membership::MemberEventKind::lost},
                         t);
      }
      {
        std::lock_guard lock(core.m);
        for (auto& [name, loss] : std::exchange(core.ended, {}))
          for (const auto& [id, w] : core.workers)
            if (w.live && w.view.name == name) {
              core.worker_gone(id, loss, t);
              break;
            }
      }
      flush_releases(t);
      {
        std::lock_guard lock(core.m);
        core.cut_off_unreachable(t);
        schedule(t);
      }
      finish_turn(t);
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      if (e.num() == ETERM) return;
      core.log(LogLevel::error, std::string("coordinator task channel: ") + e.what());
    } catch (const std::exception& e) {
      core.log(LogLevel::error, std::string("coordinator task channel: ") + e.what());
    }
  }
  // Bye on the task channel; membership says its own in its destructor.
  {
    std::lock_guard lock(core.m);
    for (const auto& [id, w] : core.workers)
      if (w.live) outbox.emplace_back(w.routing, wire::Bye{std::string(bye_run_over)});
  }
  try {
    send_all();
    monitor.reset();
    socket.set(zmq::sockopt::linger, 250);
    socket.close();
  } catch (const std::exception&) {
  }
}

}  // namespace flowd::net::node
