#include "net/security/policy.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

#include "flowd/error.hpp"

namespace flowd::net::security {

namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

}  // namespace

bool is_loopback_host(std::string_view host) noexcept {
  if (host == "localhost") return true;
  const std::string h(host);
  in_addr v4{};
  if (::inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    // ::ffff:127.x.y.z: what ZeroMQ reports for 127.0.0.1 on a ZMQ_IPV6 socket.
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

Endpoint parse_endpoint(std::string_view endpoint) {
  const auto sep = endpoint.find("://");
  if (sep == std::string_view::npos)
    throw Error("endpoint " + quoted(endpoint) + " has no transport (expected tcp://HOST:PORT, ipc://PATH or inproc://NAME)");
  const auto transport = endpoint.substr(0, sep);
  const auto rest = endpoint.substr(sep + 3);
  Endpoint e;
  if (transport == "ipc" || transport == "inproc") {
    if (rest.empty()) throw Error("endpoint " + quoted(endpoint) + " has an empty " + std::string(transport) + " name");
    e.transport = transport == "ipc" ? Transport::ipc : Transport::inproc;
    e.address = rest;
    e.loopback = true;
    return e;
  }
  if (transport != "tcp")
    throw Error("endpoint " + quoted(endpoint) + ": transport '" + std::string(transport) +
                "' is not supported (flowd uses tcp://, ipc:// and inproc://)");
  e.transport = Transport::tcp;
  const auto colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == rest.size())
    throw Error("endpoint " + quoted(endpoint) + " has no port (expected tcp://HOST:PORT; '*' for any free port)");
  auto host = rest.substr(0, colon);
  const auto port = rest.substr(colon + 1);
  if (port != "*") {
    if (!all_digits(port) || port.size() > 5 || std::stoul(std::string(port)) > 65535)
      throw Error("endpoint " + quoted(endpoint) + ": port '" + std::string(port) + "' is not 0-65535 or '*'");
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  // tcp://SOURCE;HOST:PORT (a connect's source address) or a bare IPv6
  // address without brackets: neither is worth accepting, so say so.
  if (host.find(';') != std::string_view::npos)
    throw Error("endpoint " + quoted(endpoint) + ": source addresses ('SRC;HOST') are not supported");
  if (host.empty()) throw Error("endpoint " + quoted(endpoint) + " has no host");
  e.address = host;
  e.port = port;
  e.loopback = is_loopback_host(host);
  return e;
}

bool is_local_endpoint(std::string_view endpoint) { return parse_endpoint(endpoint).loopback; }

namespace {
void check_endpoint(std::string_view endpoint, bool keys_configured, bool bind) {
  const auto e = parse_endpoint(endpoint);
  if (!bind && e.transport == Transport::tcp && e.port == "*")
    throw Error("endpoint " + quoted(endpoint) + ": cannot connect to port '*'");
  if (keys_configured || e.loopback) return;
  if (bind)
    throw Error("refusing to bind " + quoted(endpoint) +
                " without CURVE keys: traffic on it could come from other machines and would be neither "
                "authenticated nor encrypted. Bind a loopback address (the default, tcp://127.0.0.1:PORT), or "
                "create keys with `flowd keygen` and give the coordinator its secret key and the workers' "
                "authorised keys (see docs/security.md)");
  throw Error("refusing to connect to " + quoted(endpoint) +
              " without CURVE keys: the traffic would leave this machine unauthenticated and unencrypted. Give "
              "the worker its key pair and the coordinator's public key (see docs/security.md)");
}
}  // namespace

void check_bind_endpoint(std::string_view endpoint, bool keys_configured) { check_endpoint(endpoint, keys_configured, true); }

void check_connect_endpoint(std::string_view endpoint, bool keys_configured) {
  check_endpoint(endpoint, keys_configured, false);
}

std::string default_bind_endpoint(std::uint16_t port) {
  return "tcp://127.0.0.1:" + (port == 0 ? std::string("*") : std::to_string(port));
}

std::string normalise_bind_endpoint(std::string_view endpoint) {
  constexpr std::string_view prefix = "tcp://localhost:";
  if (endpoint.substr(0, prefix.size()) == prefix) return "tcp://127.0.0.1:" + std::string(endpoint.substr(prefix.size()));
  return std::string(endpoint);
}

}  // namespace flowd::net::security
