// flowd-bench-net: throughput of one large item between two processes on
// this machine (issue 5): flowd's ItemClient/ItemServer versus raw ZeroMQ
// sending the same bytes as one zero-copy message over the same transport,
// and versus memcpy. Results in docs/transport.md.
//
//   flowd-bench-net [--mib N] [--runs R] [--chunk-mib C] [--window W] [--plain-alloc]
//
// The server is a forked child: fork happens before either side creates a
// ZeroMQ context or a thread, so nothing of libzmq crosses the fork.
#include <sys/wait.h>
#include <unistd.h>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "net/transport/client.hpp"
#include "net/transport/server.hpp"
#include "store/item_store.hpp"
#include "wire/xxhash64.hpp"

namespace tp = flowd::net::transport;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  std::int64_t bytes = 64ll << 20;
  int runs = 9;
  std::uint64_t chunk_bytes = 16ull << 20;
  std::uint32_t window = 4;
  bool plain_alloc = false;  // destination in ordinary 4 KiB pages instead of the client's default
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double gbps(std::int64_t bytes, double seconds) { return static_cast<double>(bytes) / seconds / 1e9; }

// ---- the serving process -----------------------------------------------------

[[noreturn]] void serve(const Config& cfg, int report_fd, int quit_fd) {
  int rc = 0;
  try {
    flowd::store::MemoryItemStore store;
    flowd::Item item;
    item.meta.key = "bench/payload";
    auto a = flowd::Array::uninitialized(flowd::DType::u8, {cfg.bytes});
    for (std::int64_t i = 0; i < cfg.bytes; ++i) a.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(i * 7);
    item.value = a;
    store.put(item);

    tp::ServerOptions so;
    so.chunk_bytes = cfg.chunk_bytes;
    so.window_chunks = cfg.window;
    so.endpoint = "tcp://127.0.0.1:*";
    tp::ItemServer flowd_tcp(store, so);
    so.endpoint = "ipc:///tmp/flowd-bench-net-" + std::to_string(::getpid()) + "-flowd.sock";
    tp::ItemServer flowd_ipc(store, so);

    // Raw ZeroMQ: a ROUTER that answers any message with the same bytes as
    // one zero-copy message (no free function: the array outlives it).
    zmq::context_t ctx(1);
    zmq::socket_t raw_tcp(ctx, zmq::socket_type::router), raw_ipc(ctx, zmq::socket_type::router);
    for (auto* s : {&raw_tcp, &raw_ipc}) s->set(zmq::sockopt::linger, 0);
    raw_tcp.bind("tcp://127.0.0.1:*");
    raw_ipc.bind("ipc:///tmp/flowd-bench-net-" + std::to_string(::getpid()) + "-raw.sock");

    const std::string line = flowd_tcp.endpoint() + " " + flowd_ipc.endpoint() + " " +
                             raw_tcp.get(zmq::sockopt::last_endpoint) + " " +
                             raw_ipc.get(zmq::sockopt::last_endpoint) + "\n";
    if (::write(report_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) throw std::runtime_error("pipe");
    ::close(report_fd);

    while (true) {
      zmq::pollitem_t items[] = {{raw_tcp.handle(), 0, ZMQ_POLLIN, 0},
                                 {raw_ipc.handle(), 0, ZMQ_POLLIN, 0},
                                 {nullptr, quit_fd, ZMQ_POLLIN, 0}};
      zmq::poll(items, 3, std::chrono::milliseconds(1000));
      if (items[2].revents) break;  // the parent closed its end
      for (int i = 0; i < 2; ++i) {
        if (!items[i].revents) continue;
        auto& s = i == 0 ? raw_tcp : raw_ipc;
        std::vector<zmq::message_t> req;
        if (!zmq::recv_multipart(s, std::back_inserter(req), zmq::recv_flags::dontwait)) continue;
        zmq::message_t data(a.raw(), a.nbytes(), nullptr, nullptr);
        s.send(req[0], zmq::send_flags::sndmore);
        s.send(data, zmq::send_flags::none);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flowd-bench-net server: %s\n", e.what());
    rc = 1;
  }
  std::fflush(stderr);
  ::_exit(rc);
}

// ---- the measuring process ---------------------------------------------------

double time_flowd(tp::ItemClient& client, const std::string& endpoint, std::int64_t bytes) {
  const auto t0 = Clock::now();
  const flowd::Item got = client.fetch(endpoint, {"bench/payload", 0, 0}, std::chrono::seconds(60));
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (static_cast<std::int64_t>(got.array().nbytes()) != bytes || got.array().data<std::uint8_t>()[1] != 7)
    throw std::runtime_error("flowd fetch returned the wrong bytes");
  return s;
}

double time_raw(zmq::socket_t& s, std::int64_t bytes) {
  const auto t0 = Clock::now();
  s.send(zmq::str_buffer("go"), zmq::send_flags::none);
  zmq::message_t m;
  if (!s.recv(m)) throw std::runtime_error("raw ZeroMQ: no reply within 60 s");
  const double t = std::chrono::duration<double>(Clock::now() - t0).count();
  if (static_cast<std::int64_t>(m.size()) != bytes || static_cast<const std::uint8_t*>(m.data())[1] != 7)
    throw std::runtime_error("raw ZeroMQ returned the wrong bytes");
  return t;
}

int measure(const Config& cfg, int report_fd) {
  std::string line;
  char buf[512];
  for (ssize_t n; (n = ::read(report_fd, buf, sizeof buf)) > 0;) line.append(buf, static_cast<std::size_t>(n));
  std::istringstream in(line);
  std::string flowd_tcp, flowd_ipc, raw_tcp_ep, raw_ipc_ep;
  if (!(in >> flowd_tcp >> flowd_ipc >> raw_tcp_ep >> raw_ipc_ep)) {
    std::fprintf(stderr, "flowd-bench-net: the server process did not start\n");
    return 1;
  }

  tp::ClientOptions co;
  if (cfg.plain_alloc)
    co.allocate = [](flowd::DType d, std::span<const std::int64_t> shape) { return flowd::Array::uninitialized(d, shape); };
  tp::ItemClient client(co);
  zmq::context_t ctx(1);
  zmq::socket_t raw_tcp(ctx, zmq::socket_type::dealer), raw_ipc(ctx, zmq::socket_type::dealer);
  for (auto* s : {&raw_tcp, &raw_ipc}) {
    s->set(zmq::sockopt::linger, 0);
    s->set(zmq::sockopt::rcvtimeo, 60000);
  }
  raw_tcp.connect(raw_tcp_ep);
  raw_ipc.connect(raw_ipc_ep);

  // Warm-up: connections, the allocator, and the server's one hashing pass
  // over the item (later fetches reuse its hashes; a first fetch costs one
  // more xxh64 pass, the row printed below).
  time_flowd(client, flowd_tcp, cfg.bytes);
  time_flowd(client, flowd_ipc, cfg.bytes);
  time_raw(raw_tcp, cfg.bytes);
  time_raw(raw_ipc, cfg.bytes);

  // Interleaved, so a burst from another tenant hits all variants alike.
  std::vector<double> ft, fi, rt, ri;
  for (int r = 0; r < cfg.runs; ++r) {
    ft.push_back(time_flowd(client, flowd_tcp, cfg.bytes));
    rt.push_back(time_raw(raw_tcp, cfg.bytes));
    fi.push_back(time_flowd(client, flowd_ipc, cfg.bytes));
    ri.push_back(time_raw(raw_ipc, cfg.bytes));
  }

  // memcpy: into a buffer already touched (bandwidth), and into a fresh
  // allocation (what a receiver that allocates per item pays: page faults).
  const auto n = static_cast<std::size_t>(cfg.bytes);
  std::vector<std::uint8_t> src(n, 1), dst(n, 0);
  std::vector<double> mc, mf, hx;
  for (int r = 0; r < cfg.runs; ++r) {
    auto t0 = Clock::now();
    std::memcpy(dst.data(), src.data(), n);
    mc.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    t0 = Clock::now();
    {
      std::unique_ptr<std::uint8_t[]> fresh(new std::uint8_t[n]);
      std::memcpy(fresh.get(), src.data(), n);
      if (fresh[n - 1] != 1) return 1;
      mf.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    t0 = Clock::now();
    volatile std::uint64_t h = flowd::wire::xxh64(std::as_bytes(std::span(src)), 0);
    (void)h;
    hx.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }

  const double b = static_cast<double>(cfg.bytes);
  std::printf("flowd-bench-net: %.0f MiB item, median of %d runs, chunks of %.0f MiB, window %u, %s destination\n",
              b / (1 << 20), cfg.runs, static_cast<double>(cfg.chunk_bytes) / (1 << 20), cfg.window,
              cfg.plain_alloc ? "4 KiB-page" : "huge-page");
  std::printf("  %-34s %9s %9s\n", "", "ms", "GB/s");
  const auto row = [&](const char* name, const std::vector<double>& v) {
    std::printf("  %-34s %9.2f %9.2f\n", name, median(v) * 1e3, gbps(cfg.bytes, median(v)));
  };
  row("flowd fetch, tcp loopback", ft);
  row("raw ZeroMQ, tcp loopback", rt);
  row("flowd fetch, ipc", fi);
  row("raw ZeroMQ, ipc", ri);
  row("memcpy (touched destination)", mc);
  row("memcpy (fresh destination)", mf);
  row("xxh64 (one pass, for reference)", hx);
  std::printf("  flowd / raw ZeroMQ: tcp %.0f%%, ipc %.0f%% (target >= 80%%)\n", 100 * median(rt) / median(ft),
              100 * median(ri) / median(fi));
  std::printf("  flowd / memcpy (touched): tcp %.0f%%, ipc %.0f%%\n", 100 * median(mc) / median(ft),
              100 * median(mc) / median(fi));
  std::printf("  last fetch: %u chunks, %d retries; a first fetch of an item adds one xxh64 pass on the server\n",
              client.last_stats().chunks, client.last_stats().retries);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&]() -> long long {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "flowd-bench-net: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::atoll(argv[++i]);
    };
    if (a == "--mib") cfg.bytes = next() << 20;
    else if (a == "--runs") cfg.runs = static_cast<int>(next());
    else if (a == "--chunk-mib") cfg.chunk_bytes = static_cast<std::uint64_t>(next()) << 20;
    else if (a == "--window") cfg.window = static_cast<std::uint32_t>(next());
    else if (a == "--plain-alloc") cfg.plain_alloc = true;
    else {
      std::fprintf(stderr, "usage: flowd-bench-net [--mib N] [--runs R] [--chunk-mib C] [--window W] [--plain-alloc]\n");
      return 2;
    }
  }
  if (cfg.bytes <= 0 || cfg.runs <= 0 || cfg.chunk_bytes == 0 || cfg.window == 0) {
    std::fprintf(stderr, "flowd-bench-net: sizes, runs and window must be positive\n");
    return 2;
  }
  int report[2], quit[2];
  if (::pipe(report) != 0 || ::pipe(quit) != 0) {
    std::perror("flowd-bench-net: pipe");
    return 1;
  }
  const pid_t child = ::fork();
  if (child < 0) {
    std::perror("flowd-bench-net: fork");
    return 1;
  }
  if (child == 0) {
    ::close(report[0]);
    ::close(quit[1]);
    serve(cfg, report[1], quit[0]);
  }
  ::close(report[1]);
  ::close(quit[0]);
  int rc = 1;
  try {
    rc = measure(cfg, report[0]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flowd-bench-net: %s\n", e.what());
  }
  ::close(quit[1]);  // the server sees EOF and exits
  int status = 0;
  ::waitpid(child, &status, 0);
  return rc;
}
