#pragma once
// Shared by server.cpp and client.cpp; not part of the API.
#include <cstdint>
#include <string>

#include <zmq.hpp>

#include "net/membership/membership.hpp"

namespace flowd::net::membership::detail {

// Encodes and sends a control message, preceded by `routing_id` when not
// empty (ROUTER). Never blocks: control messages are small and periodic, so
// one that meets a full pipe or a vanished peer is dropped (false) and the
// heartbeat timeout decides what that means.
bool send(zmq::socket_t& socket, const std::string& routing_id, std::uint64_t seq, const wire::Body& body,
          const wire::Limits& limits, const MembershipLog& log);

}  // namespace flowd::net::membership::detail
