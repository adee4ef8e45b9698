#include "net/zio/zio.hpp"

#include <zmq_addon.hpp>

#include <cerrno>
#include <memory>
#include <utility>

namespace flowd::net::zio {

namespace {
using Owner = std::shared_ptr<const void>;
void release_owner(void*, void* hint) noexcept { delete static_cast<Owner*>(hint); }
}  // namespace

zmq::message_t zero_copy(const wire::OutFrame& frame) {
  // zmq_msg_init_data() with no bytes never calls the free function, so an
  // empty frame must not carry a hint (it would leak).
  if (frame.bytes.empty()) return zmq::message_t();
  auto hint = std::make_unique<Owner>(frame.owner);
  zmq::message_t msg(const_cast<std::byte*>(frame.bytes.data()), frame.bytes.size(), release_owner, hint.get());
  hint.release();  // the message owns it now
  return msg;
}

SendResult send(zmq::socket_t& socket, const std::string& routing_id, const wire::OutMessage& message, bool dontwait) {
  const auto more = [&](bool last) {
    zmq::send_flags f = last ? zmq::send_flags::none : zmq::send_flags::sndmore;
    return dontwait ? f | zmq::send_flags::dontwait : f;
  };
  std::size_t i = 0;
  try {
    if (!routing_id.empty()) {
      zmq::message_t id(routing_id.data(), routing_id.size());
      if (!socket.send(id, more(message.empty()))) return SendResult::would_block;
    }
    for (; i < message.size(); ++i) {
      auto frame = zero_copy(message[i]);
      const auto sent = socket.send(frame, more(i + 1 == message.size()));
      // Only the first frame can meet a full pipe (see the header); a later
      // refusal would mean libzmq changed, and the message is lost either
      // way: report it as unreachable so the transfer is retried by the peer.
      if (!sent) return i == 0 && routing_id.empty() ? SendResult::would_block : SendResult::unreachable;
    }
  } catch (const zmq::error_t& e) {
    if (e.num() == EHOSTUNREACH) return SendResult::unreachable;
    throw;
  }
  return SendResult::sent;
}

std::vector<wire::FrameView> views(const std::vector<zmq::message_t>& frames, std::size_t first) {
  std::vector<wire::FrameView> out;
  out.reserve(frames.size() > first ? frames.size() - first : 0);
  for (std::size_t i = first; i < frames.size(); ++i)
    out.emplace_back(static_cast<const std::byte*>(frames[i].data()), frames[i].size());
  return out;
}

std::string hex_id(const std::string& routing_id) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s;
  for (unsigned char c : routing_id) {
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

std::vector<zmq::message_t> receive(zmq::socket_t& socket) {
  std::vector<zmq::message_t> frames;
  if (!zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait)) frames.clear();
  return frames;
}

std::string peer_name(std::vector<zmq::message_t>& frames, bool curve) {
  std::string s = "peer " + hex_id(frames[0].to_string());
  if (frames.size() > 1) {
    try {
      s += std::string(" at ") + frames[1].gets("Peer-Address");
    } catch (const zmq::error_t&) {
    }
    if (curve) try {
        s += std::string(" (") + frames[1].gets("User-Id") + ")";
      } catch (const zmq::error_t&) {
      }
  }
  return s;
}

void RateLimitedLog::operator()(const NetLog& log, const std::string& line) {
  const auto now = std::chrono::steady_clock::now();
  if (now - window_ >= std::chrono::seconds(1)) {
    window_ = now;
    lines_ = 0;
  }
  if (lines_ >= 10) {
    ++suppressed_;
    return;
  }
  ++lines_;
  std::string note;
  if (suppressed_) note = " (" + std::to_string(std::exchange(suppressed_, 0)) + " similar lines not logged)";
  log(LogLevel::warning, line + note);
}

}  // namespace flowd::net::zio
