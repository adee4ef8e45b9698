#include "net/cluster/advertise.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>

#include "flowd/error.hpp"

namespace flowd::net::cluster {

namespace {

bool is_loopback(std::string_view host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0 ||
         host.rfind("::ffff:127.", 0) == 0;
}

bool is_wildcard(std::string_view host) { return host == "*" || host == "0.0.0.0" || host == "::"; }

bool is_link_local(std::string_view ipv4) { return ipv4.rfind("169.254.", 0) == 0; }

std::string with_brackets(const std::string& host) {
  if (host.find(':') != std::string::npos && host.front() != '[') return "[" + host + "]";
  return host;
}

}  // namespace

std::vector<Interface> ipv4_interfaces() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    throw Error(std::string("cannot list network interfaces (getifaddrs): ") + std::strerror(errno));
  }
  std::vector<Interface> out;
  for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* sin = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if (inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text) == nullptr) continue;
    out.push_back({a->ifa_name, text, (a->ifa_flags & IFF_UP) != 0, (a->ifa_flags & IFF_LOOPBACK) != 0});
  }
  freeifaddrs(list);
  return out;
}

AdvertiseContext advertise_context(const Env& env) {
  AdvertiseContext ctx;
  if (auto v = env("FLOWD_ADVERTISE"); v && !v->empty()) ctx.override_host = std::move(v);
  if (auto v = env("SLURMD_NODENAME"); v && !v->empty()) ctx.slurm_node = std::move(v);
  ctx.interfaces = ipv4_interfaces();
  return ctx;
}

std::string advertised_endpoint(std::string_view bound, const AdvertiseContext& ctx) {
  if (bound.rfind("tcp://", 0) != 0) return std::string(bound);
  const std::string rest(bound.substr(6));
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos) {
    throw Error("cannot advertise '" + std::string(bound) + "': no port in the endpoint");
  }
  std::string host = rest.substr(0, colon);
  const std::string port = rest.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const auto make = [&](const std::string& h) { return "tcp://" + with_brackets(h) + ":" + port; };

  if (ctx.override_host) return make(*ctx.override_host);
  if (is_loopback(host)) return std::string(bound);
  for (const auto& i : ctx.interfaces) {
    if (i.name == host) return make(i.ipv4);
  }
  if (!is_wildcard(host)) return std::string(bound);
  if (ctx.slurm_node) return make(*ctx.slurm_node);
  for (const auto& i : ctx.interfaces) {
    if (i.up && !i.loopback && !is_link_local(i.ipv4)) return make(i.ipv4);
  }
  throw Error("the coordinator is bound to " + std::string(bound) +
              " but this machine has no non-loopback IPv4 interface that is up to advertise; "
              "set FLOWD_ADVERTISE=HOST to the name or address workers should connect to");
}

std::string advertise_as(std::string_view bound, const std::string& host) {
  if (!host.empty()) {
    AdvertiseContext ctx;
    ctx.override_host = host;
    return advertised_endpoint(bound, ctx);
  }
  return advertised_endpoint(bound, advertise_context(process_env()));
}

}  // namespace flowd::net::cluster
