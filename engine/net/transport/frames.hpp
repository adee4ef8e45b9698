#pragma once
// Between wire::OutMessage / wire::FrameView and ZeroMQ messages; shared by
// the server and the client, not part of the transport's API.
#include <cstdint>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "net/wire/wire.hpp"

namespace flowd::net::transport::detail {

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

}  // namespace flowd::net::transport::detail
