#pragma once
// ZeroMQ I/O shared by the item transport and the membership protocol:
// between wire::OutMessage / wire::FrameView and ZeroMQ messages, printable
// peer names, and rate-limited rejection logs.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "flowd/operator.hpp"  // LogLevel
#include "wire/wire.hpp"

namespace flowd::net::zio {

// Where a network component's log lines go (the engine's Logger, or a test's).
using NetLog = std::function<void(LogLevel, std::string_view)>;

// A frame that ZeroMQ sends straight from the bytes the OutFrame views: a
// heap copy of the OutFrame's owner rides along as the hint and is released
// by ZeroMQ's free function once the I/O thread is done with the bytes, so
// an item's array stays alive exactly as long as some frame still needs it.
zmq::message_t zero_copy(const wire::OutFrame& frame);

enum class SendResult { sent, would_block, unreachable };

// Sends `message`, preceded by `routing_id` when it is not empty (ROUTER).
// With `dontwait` a full pipe (high-water mark, or a ROUTER_MANDATORY peer
// over its HWM) gives would_block and sends nothing: ZeroMQ checks the HWM
// on the first frame and then accepts the whole multipart message, so a
// message is never cut in half. A peer that is gone (EHOSTUNREACH) gives
// unreachable. Other errors throw zmq::error_t.
SendResult send(zmq::socket_t& socket, const std::string& routing_id, const wire::OutMessage& message, bool dontwait);

// The frames of a received multipart message as the codec's views.
std::vector<wire::FrameView> views(const std::vector<zmq::message_t>& frames, std::size_t first = 0);

// A printable name for a ROUTER routing id (binary, 5 bytes by default).
std::string hex_id(const std::string& routing_id);

// One multipart message if one is waiting; empty otherwise.
std::vector<zmq::message_t> receive(zmq::socket_t& socket);

// "peer <hex id> at <address> (<CURVE user id>)" for a message received on a
// ROUTER (frames[0] is the routing id); the address and user id are
// properties of the connection, absent on inproc.
std::string peer_name(std::vector<zmq::message_t>& frames, bool curve);

// Rejection lines per second are capped: a peer spraying garbage must not
// flood the log; the count held back is reported with the next line.
class RateLimitedLog {
public:
  void operator()(const NetLog& log, const std::string& line);

private:
  std::chrono::steady_clock::time_point window_{};
  int lines_ = 0;
  std::uint64_t suppressed_ = 0;
};

}  // namespace flowd::net::zio
