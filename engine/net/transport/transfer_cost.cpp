#include "net/transport/transfer_cost.hpp"

#include <sys/resource.h>

#include <chrono>

#include "net/security/keys.hpp"
#include "net/transport/client.hpp"
#include "net/transport/server.hpp"
#include "store/item_store.hpp"

namespace flowd::net::transport {

namespace {

double process_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  const auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

}  // namespace

TransferCost measure_transfer_cost(std::uint64_t item_bytes, int fetches) {
  if (item_bytes == 0 || fetches < 1) throw Error("measure_transfer_cost: needs a non-empty item and at least one fetch");
  store::MemoryItemStore store;
  Item item;
  item.meta.key = "calibrate/transfer";
  auto a = Array::uninitialized(DType::u8, {static_cast<std::int64_t>(item_bytes)});
  // Bytes that look like image data to nothing in the path (no compression
  // anywhere), but are not all zero pages either.
  std::uint64_t x = 0x9e3779b97f4a7c15ull;
  for (std::uint64_t i = 0; i < item_bytes; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    a.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(x);
  }
  item.value = std::move(a);
  const wire::ItemId id = wire::id_of(item.meta);
  store.put(std::move(item));

  TransferCost out;
  out.curve = security::curve_available();
  ServerOptions so;
  ClientOptions co;
  if (out.curve) {
    const security::KeyPair server = security::generate_keypair(), client = security::generate_keypair();
    security::AuthorisedKeys authorised;
    authorised.add(client.public_key, "calibrate");
    so.curve = CurveServerKeys{server, authorised};
    co.curve = security::ClientCredentials{server.public_key, client};
  }
  ItemServer srv(store, so);
  ItemClient cli(co);
  const auto patience = std::chrono::seconds(60);
  cli.fetch(srv.endpoint(), id, patience);  // connects, shakes hands, warms the allocator
  const double cpu0 = process_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < fetches; ++i) cli.fetch(srv.endpoint(), id, patience);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = process_cpu_seconds() - cpu0;
  const auto bytes = static_cast<double>(item_bytes) * fetches;
  out.cpu_seconds_per_byte = cpu / bytes;
  out.bytes_per_second = wall > 0 ? bytes / wall : 0;
  return out;
}

}  // namespace flowd::net::transport
