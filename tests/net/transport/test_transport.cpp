// Peer-to-peer item transfer: ItemServer (ROUTER, own thread) and
// ItemClient (DEALER) in one process over real sockets.
//
// Every fetch has a timeout and every raw socket ZMQ_LINGER 0 and a receive
// timeout, so a lost message fails a test, never hangs it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "net/captured_log.hpp"
#include "net/transport/client.hpp"
#include "net/zio/zio.hpp"
#include "net/transport/server.hpp"
#include "store/item_store.hpp"

namespace tp = flowd::net::transport;
namespace wire = flowd::wire;
namespace sec = flowd::net::security;
using flowd::Array;
using flowd::DType;
using flowd::Item;
using flowd::LogLevel;
using namespace std::chrono_literals;

namespace {

using flowd::nettest::CapturedLog;

// A u8 array whose every byte depends on its position, so a chunk landing
// at the wrong offset shows.
Item pattern_item(const std::string& key, std::int64_t bytes, std::int64_t version = 1) {
  Item item;
  item.meta.key = key;
  item.meta.version = version;
  item.meta.attrs = {{"origin", "test"}};
  auto a = Array::uninitialized(DType::u8, {bytes});
  auto* p = a.data<std::uint8_t>();
  for (std::int64_t i = 0; i < bytes; ++i) p[i] = static_cast<std::uint8_t>((i * 131 + (i >> 20)) & 0xFF);
  item.value = std::move(a);
  return item;
}

void expect_same_array(const Item& got, const Item& want) {
  EXPECT_EQ(got.meta.key, want.meta.key);
  EXPECT_EQ(got.meta.version, want.meta.version);
  EXPECT_EQ(got.meta.attrs, want.meta.attrs);
  const auto& a = got.array();
  const auto& b = want.array();
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(std::vector<std::int64_t>(a.shape().begin(), a.shape().end()),
            std::vector<std::int64_t>(b.shape().begin(), b.shape().end()));
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
}

std::string ipc_endpoint() {
  static std::atomic<int> n{0};
  // Not under the build tree: ipc paths are limited to ~107 bytes.
  return "ipc:///tmp/flowd-transport-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + ".sock";
}

tp::ServerOptions server_options(CapturedLog& log, std::string endpoint = "tcp://127.0.0.1:*") {
  tp::ServerOptions o;
  o.endpoint = std::move(endpoint);
  o.log = log.sink();
  return o;
}

tp::ClientOptions client_options(CapturedLog& log, std::chrono::milliseconds retry = 300ms) {
  tp::ClientOptions o;
  o.retry_interval = retry;
  o.log = log.sink();
  return o;
}

// The server releases a transfer when the last ack arrives, which is after
// the client returned: wait for it rather than race it.
bool wait_released(const tp::ItemServer& server, std::chrono::milliseconds timeout = 5s) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (server.stats().active_transfers == 0) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

zmq::socket_t raw_dealer(zmq::context_t& ctx, const std::string& endpoint) {
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvtimeo, 3000);
  s.set(zmq::sockopt::sndtimeo, 3000);
  s.connect(endpoint);
  return s;
}

void send_all(zmq::socket_t& s, const wire::OutMessage& m) {
  for (std::size_t i = 0; i < m.size(); ++i)
    s.send(zmq::buffer(m[i].bytes.data(), m[i].bytes.size()),
           i + 1 < m.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
}

}  // namespace

TEST(ItemStore, PutFindEraseKeyedByTheWholeTuple) {
  flowd::store::MemoryItemStore store;
  store.put(pattern_item("a", 4, 1));
  store.put(pattern_item("a", 8, 2));
  EXPECT_EQ(store.size(), 2u);
  ASSERT_NE(store.find({"a", 1, 0}), nullptr);
  EXPECT_EQ(store.find({"a", 2, 0})->array().nbytes(), 8u);
  EXPECT_EQ(store.find({"a", 1, 5}), nullptr);
  EXPECT_TRUE(store.erase({"a", 1, 0}));
  EXPECT_FALSE(store.erase({"a", 1, 0}));
  EXPECT_EQ(store.find({"a", 1, 0}), nullptr);
}

TEST(ItemTransport, SmallItemsOfEveryKindOverTcp) {
  CapturedLog log;
  flowd::store::MemoryItemStore store;
  Item arr;
  arr.meta.key = "small/array";
  arr.meta.bbox = flowd::Box::make2d(10, 20, 3, 4);
  auto a = Array::uninitialized(DType::f32, {3, 4});
  for (int i = 0; i < 12; ++i) a.data<float>()[i] = static_cast<float>(i) * 0.5f;
  arr.value = a;
  store.put(arr);
  Item js;
  js.meta.key = "small/json";
  js.value = flowd::Json{{"cells", 42}, {"names", {"a", "b"}}};
  store.put(js);
  Item table;
  table.meta.key = "small/table";
  flowd::Table t;
  t.add_column<std::int64_t>("id") = {1, 2, 3};
  t.add_column<std::string>("label") = {"x", "", "zz"};
  table.value = t;
  store.put(table);
  Item none;
  none.meta.key = "small/none";
  store.put(none);

  tp::ItemServer server(store, server_options(log));
  ASSERT_EQ(server.endpoint().rfind("tcp://127.0.0.1:", 0), 0u) << server.endpoint();
  tp::ItemClient client(client_options(log));

  const Item got_a = client.fetch(server.endpoint(), {"small/array", 0, 0}, 5s);
  ASSERT_EQ(got_a.array().nbytes(), a.nbytes());
  EXPECT_EQ(std::memcmp(got_a.array().raw(), a.raw(), a.nbytes()), 0);
  EXPECT_EQ(got_a.meta.bbox, arr.meta.bbox);
  EXPECT_EQ(client.fetch(server.endpoint(), {"small/json", 0, 0}, 5s).json(), js.json());
  const Item got_t = client.fetch(server.endpoint(), {"small/table", 0, 0}, 5s);
  EXPECT_EQ(got_t.table().rows(), 3u);
  EXPECT_EQ(got_t.table().column<std::string>("label")[2], "zz");
  EXPECT_EQ(flowd::kind_of(client.fetch(server.endpoint(), {"small/none", 0, 0}, 5s).value), flowd::ValueKind::none);
  EXPECT_TRUE(wait_released(server));
  EXPECT_EQ(server.stats().transfers_completed, 4u);
  EXPECT_EQ(client.last_stats().retries, 0);
}

class LargeItem : public ::testing::TestWithParam<bool> {};

TEST_P(LargeItem, SixtyFourMiBArrivesWhole) {
  const bool ipc = GetParam();
  CapturedLog log;
  flowd::store::MemoryItemStore store;
  const Item item = pattern_item("large", 64 << 20);
  store.put(item);
  tp::ItemServer server(store, server_options(log, ipc ? ipc_endpoint() : "tcp://127.0.0.1:*"));
  tp::ItemClient client(client_options(log, 2s));
  for (int round = 0; round < 2; ++round) {  // the second reuses the connection
    const Item got = client.fetch(server.endpoint(), {"large", 1, 0}, 30s);
    expect_same_array(got, item);
    EXPECT_EQ(client.last_stats().chunks, 4u);
    EXPECT_EQ(client.last_stats().retries, 0);
  }
  EXPECT_TRUE(wait_released(server));
  const auto s = server.stats();
  EXPECT_EQ(s.transfers_completed, 2u);
  EXPECT_EQ(s.chunks_sent, 6u);  // 3 item_chunks each; chunk 0 rides in item_data
  EXPECT_EQ(s.rejected, 0u) << log.all();
}
INSTANTIATE_TEST_SUITE_P(Transports, LargeItem, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? std::string("Ipc") : std::string("Tcp"); });

TEST(ItemTransport, WindowOfOneChunkStillCompletes) {
  // Every chunk waits for the previous one's ack: the slowest flow control
  // possible, and the one where a lost credit would stall for good.
  CapturedLog log;
  flowd::store::MemoryItemStore store;
  const Item item = pattern_item("narrow", (16 << 20) + 12345);
  store.put(item);
  auto o = server_options(log);
  o.chunk_bytes = 1 << 20;
  o.window_chunks = 1;
  o.send_hwm = 1;
  tp::ItemServer server(store, o);
  tp::ItemClient client(client_options(log, 2s));
  expect_same_array(client.fetch(server.endpoint(), {"narrow", 1, 0}, 30s), item);
  EXPECT_EQ(client.last_stats().chunks, 17u);
  EXPECT_TRUE(wait_released(server));
}

TEST(ItemTransport, ConcurrentConsumersShareTheServer) {
  CapturedLog log;
  flowd::store::MemoryItemStore store;
  const Item item = pattern_item("shared", 24 << 20);
  store.put(item);
  auto o = server_options(log);
  o.chunk_bytes = 2 << 20;
  tp::ItemServer server(store, o);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 3; ++i)
    threads.emplace_back([&] {
      tp::ItemClient client(client_options(log, 2s));
      const Item got = client.fetch(server.endpoint(), {"shared", 1, 0}, 30s);
      if (std::memcmp(got.array().raw(), item.array().raw(), item.array().nbytes()) == 0) ++ok;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 3);
  EXPECT_TRUE(wait_released(server));
  EXPECT_EQ(server.stats().transfers_completed, 3u);
}

TEST(ItemTransport, UnknownItemIsAClearErrorAtOnce) {
  CapturedLog log;
  flowd::store::MemoryItemStore store;
  tp::ItemServer server(store, server_options(log));
  tp::ItemClient client(client_options(log, 2s));
  const auto t0 = std::chrono::steady_clock::now();
  try {
    client.fetch(server.endpoint(), {"nowhere/7", 3, 1}, 10s);
    FAIL() << "fetch of a missing item succeeded";
  } catch (const tp::FetchError& e) {
    EXPECT_EQ(e.kind(), tp::FetchError::Kind::not_found);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("item 'nowhere/7' (version 3, timestamp 1)"), std::string::npos) << msg;
    EXPECT_NE(msg.find(server.endpoint()), std::string::npos) << msg;
    EXPECT_NE(msg.find("not held here"), std::string::npos) << msg;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);  // a nack, not a timeout
  EXPECT_EQ(server.stats().unknown_items, 1u);
  EXPECT_EQ(server.stats().active_transfers, 0u);
}

TEST(ItemTransport, LostChunkIsReRequestedAndTheItemCompletes) {
  CapturedLog log;
  flowd::store::MemoryItemStore store;
  const Item item = pattern_item("lossy", 8 << 20);
  store.put(item);
  auto o = server_options(log);
  o.chunk_bytes = 1 << 20;
  tp::ItemServer server(store, o);
  server.drop_chunk_once(3);
  tp::ItemClient client(client_options(log, 200ms));
  const auto t0 = std::chrono::steady_clock::now();
  expect_same_array(client.fetch(server.endpoint(), {"lossy", 1, 0}, 10s), item);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 150ms);  // it did wait for the retry timer
  EXPECT_EQ(client.last_stats().retries, 1);
  EXPECT_EQ(client.last_stats().chunks, 8u);
  EXPECT_TRUE(wait_released(server));
  const auto s = server.stats();
  EXPECT_EQ(s.chunks_resent, 1u);  // just the lost one, not the item
  EXPECT_EQ(s.chunks_sent, 8u);    // 7 item_chunks (one of them lost) + the resend
  EXPECT_EQ(s.transfers_completed, 1u);
}

TEST(ItemTransport, RestartedServerServesAChunkReRequest) {
  // The holder went away and came back on the same endpoint between the
  // first answer and the retry: the re-request alone (no descriptor) must
  // be served from the store.
  CapturedLog log;
  flowd::store::MemoryItemStore store;
  const Item item = pattern_item("phoenix", 6 << 20);
  store.put(item);
  const std::string endpoint = ipc_endpoint();
  auto o = server_options(log, endpoint);
  o.chunk_bytes = 1 << 20;
  auto server = std::make_unique<tp::ItemServer>(store, o);
  server->drop_chunk_once(4);
  tp::ItemClient client(client_options(log, 500ms));
  std::optional<Item> got;
  std::string error;
  std::thread consumer([&] {
    try {
      got = client.fetch(endpoint, {"phoenix", 1, 0}, 10s);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (server->stats().chunks_sent < 5 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(2ms);
  server.reset();
  server = std::make_unique<tp::ItemServer>(store, o);
  consumer.join();
  ASSERT_TRUE(got) << error;
  expect_same_array(*got, item);
  EXPECT_GE(client.last_stats().retries, 1);
}

TEST(ItemTransport, ServerStoppedMidTransferFailsWithinTheTimeout) {
  CapturedLog log;
  flowd::store::MemoryItemStore store;
  store.put(pattern_item("orphan", 8 << 20));
  auto o = server_options(log);
  o.chunk_bytes = 1 << 20;
  auto server = std::make_unique<tp::ItemServer>(store, o);
  const std::string endpoint = server->endpoint();
  server->drop_chunk_once(5);  // the client is left waiting for chunk 5
  auto co = client_options(log, 200ms);
  co.max_retries = 100;  // the timeout, not the retry count, must end it
  tp::ItemClient client(co);
  std::string error;
  tp::FetchError::Kind kind{};
  const auto timeout = 1500ms;
  std::chrono::steady_clock::duration took{};
  std::thread consumer([&] {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      client.fetch(endpoint, {"orphan", 1, 0}, timeout);
    } catch (const tp::FetchError& e) {
      error = e.what();
      kind = e.kind();
    }
    took = std::chrono::steady_clock::now() - t0;
  });
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (server->stats().chunks_sent < 6 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  server.reset();
  consumer.join();
  ASSERT_FALSE(error.empty()) << "the fetch succeeded although chunk 5 was never sent";
  EXPECT_EQ(kind, tp::FetchError::Kind::timed_out);
  EXPECT_NE(error.find("item 'orphan'"), std::string::npos) << error;
  EXPECT_NE(error.find(endpoint), std::string::npos) << error;
  EXPECT_NE(error.find("of 8 chunks received"), std::string::npos) << error;
  EXPECT_GE(took, timeout);
  EXPECT_LT(took, timeout + 500ms);
}

namespace {

// A fetch of a missing item from `endpoint` by a client retrying twice
// every 100 ms: it must give up, timed out, naming the endpoint; how long
// that took.
// A peer that accepts connections and never answers: connected, silent.
struct MutePeer {
  zmq::context_t ctx;
  zmq::socket_t socket{ctx, zmq::socket_type::router};
  std::string endpoint;
  MutePeer() {
    socket.set(zmq::sockopt::linger, 0);
    socket.bind("tcp://127.0.0.1:*");
    endpoint = socket.get(zmq::sockopt::last_endpoint);
  }
};

std::chrono::steady_clock::duration time_to_give_up(CapturedLog& log, const std::string& endpoint) {
  auto co = client_options(log, 100ms);
  co.max_retries = 2;
  tp::ItemClient client(co);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    client.fetch(endpoint, {"ghost", 0, 0}, 30s);
    ADD_FAILURE() << "the fetch from " << endpoint << " did not fail";
  } catch (const tp::FetchError& e) {
    EXPECT_EQ(e.kind(), tp::FetchError::Kind::timed_out);
    EXPECT_NE(std::string(e.what()).find("2 retries did not help"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(endpoint), std::string::npos) << e.what();
  }
  return std::chrono::steady_clock::now() - t0;
}

}  // namespace

TEST(ItemTransport, RetriesAreBounded) {
  CapturedLog log;
  flowd::store::MemoryItemStore store;
  tp::ItemServer server(store, server_options(log));
  // Nobody listens, so nobody is connected: no patience, 3 × 100 ms.
  EXPECT_LT(time_to_give_up(log, ipc_endpoint()), 600ms);
}

// A peer that is connected but silent (a slow link shared by other
// transfers looks so): the silence allowed doubles with each retry,
// 100 + 200 + 400 ms, before the fetch gives up.
TEST(ItemTransport, AConnectedSilentPeerGetsMorePatienceEachRetry) {
  CapturedLog log;
  MutePeer mute;
  const auto took = time_to_give_up(log, mute.endpoint);
  EXPECT_GE(took, 650ms);
  EXPECT_LT(took, 3s);
}

// A holder declared lost while a fetch waits on it (issue 18, item 4): the
// fetch gives up at once, saying why, instead of spending its retries.
TEST(ItemTransport, AFetchFromAHolderDeclaredGoneStopsAtOnce) {
  CapturedLog log;
  MutePeer mute;
  const std::string endpoint = mute.endpoint;
  auto co = client_options(log, 1s);  // alone, a connected silent peer would take 1 + 2 + 4 + 8 + 8 + 8 s
  std::atomic<bool> gone{false};
  std::string asked_about;
  co.abandon = [&](const std::string& ep) -> std::optional<std::string> {
    asked_about = ep;
    if (!gone) return std::nullopt;
    return "worker 2 was declared gone";
  };
  tp::ItemClient client(co);
  std::jthread declare([&] {
    std::this_thread::sleep_for(300ms);
    gone = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  try {
    client.fetch(endpoint, {"ghost", 0, 0}, 60s);
    ADD_FAILURE() << "the fetch did not fail";
  } catch (const tp::FetchError& e) {
    EXPECT_EQ(e.kind(), tp::FetchError::Kind::abandoned) << e.what();
    EXPECT_NE(std::string(e.what()).find("worker 2 was declared gone"), std::string::npos) << e.what();
  }
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 900ms) << "the fetch went on after its holder was declared gone";
  EXPECT_EQ(asked_about, endpoint);
}

TEST(ItemTransport, MalformedRequestsAreLoggedAndServingGoesOn) {
  CapturedLog log;
  flowd::store::MemoryItemStore store;
  const Item item = pattern_item("survivor", 3 << 20);
  store.put(item);
  tp::ItemServer server(store, server_options(log));
  zmq::context_t ctx;
  auto raw = raw_dealer(ctx, server.endpoint());

  // Not a flowd frame at all: logged, no answer possible.
  raw.send(zmq::str_buffer("GET / HTTP/1.1"), zmq::send_flags::none);
  EXPECT_TRUE(log.wait_for("bad_magic")) << log.all();

  // A fetch_item with one bit of its body flipped: the checksum fails, and
  // the nack refers to the claimed seq.
  wire::FetchItem request;
  request.transfer_id = 5;
  request.id = wire::ItemId{"survivor", 1, 0};
  auto fetch = wire::encode(77, request);
  ASSERT_TRUE(fetch);
  std::vector<std::byte> damaged((*fetch)[0].bytes.begin(), (*fetch)[0].bytes.end());
  damaged.back() ^= std::byte{1};
  raw.send(zmq::buffer(damaged.data(), damaged.size()), zmq::send_flags::none);
  std::vector<zmq::message_t> reply;
  ASSERT_TRUE(zmq::recv_multipart(raw, std::back_inserter(reply)));
  auto nack = wire::decode(flowd::net::zio::views(reply));
  ASSERT_TRUE(nack) << nack.error().describe();
  ASSERT_TRUE(std::holds_alternative<wire::Nack>(nack->body));
  EXPECT_EQ(std::get<wire::Nack>(nack->body).ref_seq, 77u);
  EXPECT_EQ(std::get<wire::Nack>(nack->body).code, wire::RejectCode::bad_checksum);
  EXPECT_TRUE(log.wait_for("bad_checksum")) << log.all();

  // Well formed but not for a data endpoint.
  wire::Hello intruder;
  intruder.name = "intruder";
  auto hello = wire::encode(78, intruder);
  send_all(raw, *hello);
  reply.clear();
  ASSERT_TRUE(zmq::recv_multipart(raw, std::back_inserter(reply)));
  nack = wire::decode(flowd::net::zio::views(reply));
  ASSERT_TRUE(nack && std::holds_alternative<wire::Nack>(nack->body));
  EXPECT_EQ(std::get<wire::Nack>(nack->body).code, wire::RejectCode::unexpected);

  // A payload frame on a fetch_item, and an empty message.
  auto extra = *fetch;
  extra.push_back(wire::OutFrame{std::as_bytes(std::span("junk", 4)), {}});
  send_all(raw, extra);
  reply.clear();
  ASSERT_TRUE(zmq::recv_multipart(raw, std::back_inserter(reply)));
  nack = wire::decode(flowd::net::zio::views(reply));
  ASSERT_TRUE(nack && std::holds_alternative<wire::Nack>(nack->body));
  EXPECT_EQ(std::get<wire::Nack>(nack->body).code, wire::RejectCode::frame_count);
  raw.send(zmq::message_t(), zmq::send_flags::none);  // no header to refer to: logged, not answered
  EXPECT_TRUE(log.wait_for("truncated")) << log.all();

  // A chunk index beyond the item.
  request.transfer_id = 6;
  request.chunks = {999};
  send_all(raw, *wire::encode(79, request));
  reply.clear();
  ASSERT_TRUE(zmq::recv_multipart(raw, std::back_inserter(reply)));
  nack = wire::decode(flowd::net::zio::views(reply));
  ASSERT_TRUE(nack && std::holds_alternative<wire::Nack>(nack->body));
  EXPECT_NE(std::get<wire::Nack>(nack->body).reason.find("out of range"), std::string::npos);

  tp::ItemClient client(client_options(log, 2s));
  expect_same_array(client.fetch(server.endpoint(), {"survivor", 1, 0}, 10s), item);
  EXPECT_GE(server.stats().rejected, 4u);
  EXPECT_TRUE(wait_released(server));
}

TEST(ItemTransport, RefusesToBindAnExternalAddressWithoutKeys) {
  CapturedLog log;
  flowd::store::MemoryItemStore store;
  EXPECT_THROW(tp::ItemServer(store, server_options(log, "tcp://0.0.0.0:*")), flowd::Error);
  tp::ItemClient client(client_options(log));
  EXPECT_THROW(client.fetch("tcp://10.1.2.3:5000", {"x", 0, 0}, 1s), flowd::Error);
}

class CurveTransport : public ::testing::Test {
protected:
  void SetUp() override {
    if (!sec::curve_available()) GTEST_SKIP() << "libzmq without CURVE";
  }
};

TEST_F(CurveTransport, AuthorisedClientFetchesUnauthorisedIsRefused) {
  CapturedLog log;
  flowd::store::MemoryItemStore store;
  const Item item = pattern_item("secret", 20 << 20);
  store.put(item);
  const auto server_keys = sec::generate_keypair();
  const auto good = sec::generate_keypair();
  const auto bad = sec::generate_keypair();
  sec::AuthorisedKeys authorised;
  authorised.add(good.public_key, "consumer-1");
  auto o = server_options(log);
  o.curve = tp::CurveServerKeys{server_keys, authorised};
  tp::ItemServer server(store, o);

  auto co = client_options(log, 300ms);
  co.curve = sec::ClientCredentials{server_keys.public_key, good};
  tp::ItemClient client(co);
  expect_same_array(client.fetch(server.endpoint(), {"secret", 1, 0}, 20s), item);

  auto bo = client_options(log, 300ms);
  bo.curve = sec::ClientCredentials{server_keys.public_key, bad};
  bo.max_retries = 2;
  tp::ItemClient intruder(bo);
  try {
    intruder.fetch(server.endpoint(), {"secret", 1, 0}, 5s);
    FAIL() << "an unauthorised key fetched the item";
  } catch (const tp::FetchError& e) {
    EXPECT_EQ(e.kind(), tp::FetchError::Kind::timed_out);
  }
  EXPECT_TRUE(log.wait_for("refused CURVE peer")) << log.all();
  EXPECT_GE(log.count(bad.public_key), 1u);

  // A client without keys cannot even try: the server's port is TCP and
  // the policy only lets keyless clients talk to local endpoints, which
  // this is, but the handshake fails (mechanism mismatch): no answer.
  auto no = client_options(log, 200ms);
  no.max_retries = 1;
  tp::ItemClient plain(no);
  EXPECT_THROW(plain.fetch(server.endpoint(), {"secret", 1, 0}, 3s), tp::FetchError);
}

TEST_F(CurveTransport, PeerKeyOverridesTheDefaultServerKey) {
  CapturedLog log;
  flowd::store::MemoryItemStore store;
  store.put(pattern_item("k", 1000));
  const auto server_keys = sec::generate_keypair();
  const auto me = sec::generate_keypair();
  sec::AuthorisedKeys authorised;
  authorised.add(me.public_key);
  auto o = server_options(log, ipc_endpoint());
  o.curve = tp::CurveServerKeys{server_keys, authorised};
  tp::ItemServer server(store, o);
  auto co = client_options(log, 300ms);
  co.curve = sec::ClientCredentials{sec::generate_keypair().public_key, me};  // some other server's key
  tp::ItemClient client(co);
  const Item got = client.fetch(tp::Peer{server.endpoint(), server_keys.public_key}, {"k", 1, 0}, 10s);
  EXPECT_EQ(got.array().nbytes(), 1000u);
}

// A consumer that asks again for a whole item while the first answer is on
// its way (a slow link shared with other transfers: benchmarks.md §15.3)
// gets it once, not twice: the item crosses the link once. Asked again after
// the item's bytes would have needed at 1 MB/s, the answer goes again.
TEST(ItemTransport, AskingAgainWhileTheAnswerIsOnItsWaySendsItOnce) {
  CapturedLog log;
  flowd::store::MemoryItemStore store;
  store.put(pattern_item("slow", 3 << 20));  // one chunk, inline in item_data
  tp::ItemServer server(store, server_options(log));
  zmq::context_t ctx;
  auto raw = raw_dealer(ctx, server.endpoint());
  wire::FetchItem request;
  request.transfer_id = 9;
  request.id = wire::ItemId{"slow", 1, 0};
  auto ask = [&](std::uint64_t seq) {
    auto msg = wire::encode(seq, request);
    ASSERT_TRUE(msg);
    send_all(raw, *msg);
  };
  // Counts item_data answers for transfer 9 arriving within `window`.
  auto answers = [&](std::chrono::milliseconds window) {
    int n = 0;
    raw.set(zmq::sockopt::rcvtimeo, static_cast<int>(window.count()));
    std::vector<zmq::message_t> reply;
    while (reply.clear(), zmq::recv_multipart(raw, std::back_inserter(reply))) {
      auto m = wire::decode(flowd::net::zio::views(reply));
      if (m && std::holds_alternative<wire::ItemData>(m->body) && std::get<wire::ItemData>(m->body).transfer_id == 9) ++n;
    }
    return n;
  };
  ask(1);
  EXPECT_EQ(answers(1000ms), 1);
  // Asked again with the answer out and not acknowledged (as a consumer
  // does whose answer is still queued on a slow link): not sent again.
  ask(2);
  EXPECT_EQ(answers(1000ms), 0);
  EXPECT_EQ(server.stats().descriptors_resent, 0u);
  // Asked again after more than 3 MB at 1 MB/s (3.1 s; the server's idle
  // timeout is far longer): taken as lost, sent again.
  std::this_thread::sleep_for(1500ms);
  ask(3);
  EXPECT_EQ(answers(1000ms), 1);
  EXPECT_EQ(server.stats().descriptors_resent, 1u);
}

TEST(ItemTransport, AConsumerGivingUpReleasesTheServersState) {
  CapturedLog log;
  flowd::store::MemoryItemStore store;
  store.put(pattern_item("abandoned", 4 << 20));
  auto o = server_options(log);
  o.chunk_bytes = 1 << 20;
  tp::ItemServer server(store, o);  // idle_timeout 30 s: only the nack can release it in time
  server.drop_chunk_once(2);
  auto co = client_options(log, 100ms);
  co.max_retries = 0;
  tp::ItemClient client(co);
  EXPECT_THROW(client.fetch(server.endpoint(), {"abandoned", 1, 0}, 5s), tp::FetchError);
  EXPECT_TRUE(wait_released(server, 2s));
  EXPECT_EQ(server.stats().transfers_expired, 0u);
}
