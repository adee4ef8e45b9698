// The worker node's socket thread: one poll loop over the task channel and
// the completion eventfd. It reads assign_task, steal_request, release_items
// and bye, starts tasks, and sends request_work, task_done, task_failed and
// steal_reply; it also watches the membership client's events.
#include <algorithm>
#include <chrono>

#include "net/node/worker_node_impl.hpp"

namespace flowd::net::node {

namespace {

// Short enough that an interrupt or a membership event is noticed at once,
// long enough not to spin; sockets and completions wake the poll anyway.
constexpr auto serve_max_poll = std::chrono::milliseconds(50);
// How long closing waits for a final bye (and the task_failed before it).
constexpr int bye_linger_ms = 250;

}  // namespace

int WorkerNode::Impl::serve() {
  using namespace std::chrono_literals;
  while (true) {
    try {
      if (options.interrupt && options.interrupt->load()) {
        leave_interrupted();
        return 130;
      }
      if (auto ev = membership->poll_event(0ms)) {
        if (ev->kind == membership::CoordinatorEventKind::lost) {
          log.error(who() + ": lost the coordinator at " + options.coordinator + ": " + ev->reason);
          return 3;
        }
        log.info(who() + ": the coordinator at " + options.coordinator + " left" +
                 (ev->reason.empty() ? "" : ": " + ev->reason));
        return 0;
      }
      drain_completions();
      start_tasks();
      ask_for_work();
      membership->set_load(static_cast<std::uint32_t>(queue->started()), static_cast<std::uint32_t>(queue->waiting()));
      flush();

      zmq::pollitem_t items[] = {{socket.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, wake.fd(), ZMQ_POLLIN, 0}};
      zmq::poll(items, 2, outbox.empty() ? serve_max_poll : std::chrono::milliseconds(5));
      for (auto frames = zio::receive(socket); !frames.empty(); frames = zio::receive(socket))
        if (const auto h = handle(frames); h != Handled::ok) return h == Handled::bye ? 0 : 3;
      wake.clear();
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      log.error(who() + ": task channel: " + e.what());
      return 3;
    } catch (const std::exception& e) {
      // A bug, not the peer's doing (its input is checked): keep serving.
      reject_log(netlog, who() + ": " + e.what());
    }
  }
}

WorkerNode::Impl::Handled WorkerNode::Impl::handle(std::vector<zmq::message_t>& frames) {
  const auto v = zio::views(frames, 0);
  const auto m = wire::decode(v, limits);
  if (!m) {
    reject("dropped a message from the coordinator at " + config.task_endpoint + ": " + m.error().describe());
    return Handled::ok;
  }
  if (const auto* a = std::get_if<wire::AssignTask>(&m->body))
    on_assign(*a);
  else if (const auto* s = std::get_if<wire::StealRequest>(&m->body))
    on_steal(*s);
  else if (const auto* r = std::get_if<wire::ReleaseItems>(&m->body))
    on_release(*r);
  else if (const auto* l = std::get_if<wire::HolderLost>(&m->body)) {
    log.info(who() + ": worker " + std::to_string(l->worker_id) + " at " + l->data_endpoint + " is gone (" + l->reason +
             "): pulls from it stop, and the coordinator has its items made again");
    std::lock_guard lock(lost_m);
    lost_holders[l->data_endpoint] = "worker " + std::to_string(l->worker_id) + " was declared gone: " + l->reason;
  }
  else if (const auto* b = std::get_if<wire::Bye>(&m->body)) {
    if (b->reason == bye_run_over) {
      log.info(who() + ": the coordinator at " + options.coordinator + " said bye: " + b->reason);
      return Handled::bye;
    }
    // Refused at registration, cut off, or no longer a member.
    log.error(who() + ": the coordinator at " + options.coordinator + " sent it away: " +
              (b->reason.empty() ? "no reason given" : b->reason));
    return Handled::sent_away;
  } else
    reject("ignored an unexpected " + std::string(wire::to_string(m->header.type)) + " on the task channel");
  return Handled::ok;
}

void WorkerNode::Impl::on_steal(const wire::StealRequest& s) {
  // While stopping nothing waits: the reply is empty.
  auto ids = queue->steal(s.max_tasks);
  tasks_stolen += ids.size();
  if (!ids.empty())
    log.debug(who() + ": gave " + std::to_string(ids.size()) + " unstarted task(s) up for worker " +
              std::to_string(s.for_worker));
  (void)post(wire::StealReply{std::move(ids)});
}

void WorkerNode::Impl::on_release(const wire::ReleaseItems& r) {
  for (const auto& id : r.ids) {
    if (store->erase(id))
      ++items_released;
    else
      ++release_unknown;  // released twice, or never made here: nothing to do
  }
}

bool WorkerNode::Impl::post(const wire::Body& body) {
  auto msg = wire::encode(++seq, body, limits);
  if (!msg) {
    log.error(who() + ": cannot encode " + std::string(wire::to_string(wire::type_of(body))) + ": " +
              msg.error().describe());
    return false;
  }
  outbox.push_back(std::move(*msg));
  return true;
}

void WorkerNode::Impl::flush() {
  while (!outbox.empty()) {
    if (zio::send(socket, {}, outbox.front(), true) != zio::SendResult::sent) return;
    outbox.pop_front();
  }
}

void WorkerNode::Impl::reject(const std::string& line) {
  ++rejected;
  reject_log(netlog, who() + ": " + line);
}

void WorkerNode::Impl::fail(std::uint64_t task_id, bool retryable, const std::string& message,
                            std::vector<std::uint32_t> unreachable) {
  ++tasks_failed;
  log.warn(who() + ": " + message + (retryable ? " (retryable)" : ""));
  wire::TaskFailed f{task_id, retryable, message, std::move(unreachable)};
  if (!post(f)) {
    // Only an over-long message can break the limits: send it cut.
    f.message = message.substr(0, std::min<std::size_t>(message.size(), limits.max_string_bytes / 2)) + "...";
    (void)post(f);
  }
}

void WorkerNode::Impl::ask_for_work() {
  if (const auto n = queue->take_demand(); n > 0) (void)post(wire::RequestWork{n, 0});
}

void WorkerNode::Impl::leave_interrupted() {
  stopping = true;
  log.info(who() + ": interrupted, leaving the coordinator at " + options.coordinator);
  std::vector<std::uint64_t> ids = queue->drop_waiting();
  for (auto id : queue->started_ids()) {
    queue->finish(id);
    ids.push_back(id);
  }
  for (auto id : ids)
    fail(id, true, "task " + std::to_string(id) + ": " + who() + " is shutting down");
  (void)post(wire::Bye{"worker interrupted"});
  flush();
  socket.set(zmq::sockopt::linger, bye_linger_ms);
}

}  // namespace flowd::net::node
