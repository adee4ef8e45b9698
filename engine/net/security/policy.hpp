#pragma once
// Which endpoints flowd may bind or connect without CURVE keys.
//
// Without keys, traffic is neither authenticated nor encrypted, so it must
// not leave the machine: loopback TCP, ipc:// and inproc:// are allowed,
// every other TCP address (0.0.0.0, *, a LAN address, an interface name, a
// host name) is refused. With keys any TCP address is allowed. Other ZeroMQ
// transports (pgm, udp, ws, ...) are refused: flowd does not use them.
#include <cstdint>
#include <string>
#include <string_view>

namespace flowd::net::security {

enum class Transport { tcp, ipc, inproc };

struct Endpoint {
  Transport transport = Transport::tcp;
  std::string address;  // tcp: host or interface (IPv6 without brackets); ipc/inproc: the path or name
  std::string port;     // tcp: digits or "*" (ephemeral, bind only)
  bool loopback = false;  // tcp on a loopback address; ipc and inproc count as local too
};

// Throws flowd::Error naming the endpoint when it is malformed or uses a
// transport flowd does not support.
Endpoint parse_endpoint(std::string_view endpoint);

// 127.0.0.0/8, ::1, IPv4-mapped loopback, "localhost".
bool is_loopback_host(std::string_view host) noexcept;

// Whether traffic on this endpoint stays on this machine.
bool is_local_endpoint(std::string_view endpoint);

// Throws flowd::Error with an explanation when `endpoint` may not be bound
// (or connected to) given whether CURVE keys are configured.
void check_bind_endpoint(std::string_view endpoint, bool keys_configured);
void check_connect_endpoint(std::string_view endpoint, bool keys_configured);

// The coordinator's default: loopback only. Port 0 means an ephemeral port
// ("*"; read ZMQ_LAST_ENDPOINT after binding).
std::string default_bind_endpoint(std::uint16_t port = 0);

// ZeroMQ binds to addresses and interface names, not host names, so
// "tcp://localhost:P" becomes "tcp://127.0.0.1:P"; other endpoints are
// returned unchanged.
std::string normalise_bind_endpoint(std::string_view endpoint);

}  // namespace flowd::net::security
