#include "net/cluster/item_bind.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "flowd/error.hpp"

namespace flowd::net::cluster {

namespace {

// tcp://HOST:PORT → HOST, without brackets.
std::string host_of(std::string_view endpoint) {
  std::string_view rest = endpoint;
  if (const auto sep = rest.find("://"); sep != std::string_view::npos) rest = rest.substr(sep + 3);
  if (const auto colon = rest.rfind(':'); colon != std::string_view::npos) rest = rest.substr(0, colon);
  if (rest.size() >= 2 && rest.front() == '[' && rest.back() == ']') rest = rest.substr(1, rest.size() - 2);
  return std::string(rest);
}

bool loopback(std::string_view host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1" || host.rfind("::ffff:127.", 0) == 0;
}

class Fd {
public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const noexcept { return fd_; }

private:
  int fd_;
};

}  // namespace

std::optional<std::string> source_address_towards(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  // Any port: a UDP connect only picks the route.
  if (::getaddrinfo(host.c_str(), "9", &hints, &found) != 0 || found == nullptr) return std::nullopt;
  std::optional<std::string> out;
  for (const addrinfo* a = found; a != nullptr && !out; a = a->ai_next) {
    const Fd fd(::socket(a->ai_family, a->ai_socktype, 0));
    if (fd.get() < 0 || ::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) continue;
    sockaddr_in local{};
    socklen_t len = sizeof local;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) continue;
    char text[INET_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text) != nullptr && local.sin_addr.s_addr != 0)
      out = text;
  }
  ::freeaddrinfo(found);
  return out;
}

std::string default_item_bind(std::string_view coordinator, bool keys) {
  const std::string host = host_of(coordinator);
  if (!keys || coordinator.rfind("tcp://", 0) != 0 || loopback(host)) return "tcp://127.0.0.1:*";
  const auto local = source_address_towards(host);
  if (!local)
    throw Error("cannot tell which address of this host reaches the coordinator at " + std::string(coordinator) +
                " (no route to '" + host + "'); give --bind tcp://ADDRESS:* with an address the other nodes reach");
  return "tcp://" + *local + ":*";
}

bool on_this_machine(std::string_view address, const std::vector<Interface>& interfaces) {
  const std::string host = host_of("tcp://" + std::string(address) + ":0");
  if (loopback(host)) return true;
  for (const auto& i : interfaces)
    if (i.ipv4 == host || "::ffff:" + i.ipv4 == host) return true;
  return false;
}

}  // namespace flowd::net::cluster
