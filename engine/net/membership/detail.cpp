#include "net/membership/detail.hpp"

#include "net/zio/zio.hpp"

namespace flowd::net::membership::detail {

bool send(zmq::socket_t& socket, const std::string& routing_id, std::uint64_t seq, const wire::Body& body,
          const wire::Limits& limits, const MembershipLog& log) {
  auto msg = wire::encode(seq, body, limits);
  if (!msg) {
    // Our own message breaks the limits (say, a huge welcome config): a
    // configuration problem on this side, worth an error line.
    log(LogLevel::error, "membership: cannot encode " + std::string(wire::to_string(wire::type_of(body))) + ": " +
                             msg.error().describe());
    return false;
  }
  return zio::send(socket, routing_id, *msg, true) == zio::SendResult::sent;
}

}  // namespace flowd::net::membership::detail
