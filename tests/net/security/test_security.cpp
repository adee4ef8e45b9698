// CURVE security: keys and files, authorised keys, the ZAP handler over real
// loopback TCP connections, the endpoint policy and `flowd keygen`.
//
// Every receive has a timeout and every socket ZMQ_LINGER 0, so a refused
// peer makes a test fail, never hang.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "net/captured_log.hpp"
#include "net/security/curve.hpp"
#include "support/cli.hpp"
#include "support/helpers.hpp"

namespace sec = flowd::net::security;
namespace fs = std::filesystem;
using flowd::LogLevel;
using flowd::test::scratch;

namespace {

using flowd::nettest::CapturedLog;

zmq::socket_t make_socket(zmq::context_t& ctx, zmq::socket_type type, int rcvtimeo_ms) {
  zmq::socket_t s(ctx, type);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvtimeo, rcvtimeo_ms);
  s.set(zmq::sockopt::sndtimeo, rcvtimeo_ms);
  return s;
}

// Sends "hello" from the DEALER and returns what the ROUTER got (empty when
// nothing arrived within the timeout). The DEALER queues the message until
// its connection is ready, so a refused connection means it never arrives.
std::optional<std::vector<zmq::message_t>> exchange(zmq::socket_t& client, zmq::socket_t& server) {
  client.send(zmq::str_buffer("hello"), zmq::send_flags::dontwait);
  std::vector<zmq::message_t> got;
  if (!zmq::recv_multipart(server, std::back_inserter(got))) return std::nullopt;
  return got;
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const flowd::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(SecurityKeys, GeneratedPairIsConsistent) {
  ASSERT_TRUE(sec::curve_available());
  const auto a = sec::generate_keypair(), b = sec::generate_keypair();
  EXPECT_TRUE(sec::is_z85_key(a.public_key));
  EXPECT_TRUE(sec::is_z85_key(a.secret_key));
  EXPECT_NE(a.public_key, b.public_key);
  EXPECT_EQ(sec::derive_public_key(a.secret_key), a.public_key);
  EXPECT_FALSE(sec::is_z85_key("short"));
  EXPECT_FALSE(sec::is_z85_key(std::string(40, ' ')));
  // '#' is in the alphabet but overflows a first group: never a key's start.
  EXPECT_FALSE(sec::is_z85_key("#" + std::string(39, '0')));
}

TEST(SecurityKeys, FilesRoundTripWithModes) {
  const auto dir = scratch();
  const auto keys = sec::generate_keypair();
  sec::save_secret_key(dir / "w.key", keys, "w", false);
  sec::save_public_key(dir / "w.pub", keys.public_key, "w", false);
  EXPECT_EQ(mode_of(dir / "w.key"), 0600u);
  EXPECT_EQ(mode_of(dir / "w.pub"), 0644u);
  const auto s = sec::load_secret_key(dir / "w.key");
  EXPECT_EQ(s.name, "w");
  EXPECT_EQ(s.keys.public_key, keys.public_key);
  EXPECT_EQ(s.keys.secret_key, keys.secret_key);
  const auto p = sec::load_public_key(dir / "w.pub");
  EXPECT_EQ(p.name, "w");
  EXPECT_EQ(p.public_key, keys.public_key);
  // The public file must not carry the secret, and the secret file is not a public one.
  EXPECT_EQ(flowd::test::slurp(dir / "w.pub").find(keys.secret_key), std::string::npos);
  EXPECT_NE(error_of([&] { sec::load_public_key(dir / "w.key"); }).find("secret-key"), std::string::npos);
  EXPECT_NE(error_of([&] { sec::parse_secret_key_file(flowd::test::slurp(dir / "w.pub"), "w.pub"); })
                .find("w.pub: no curve secret-key"),
            std::string::npos);
  // No overwrite unless asked; nothing left behind by the refused write.
  EXPECT_THROW(sec::save_secret_key(dir / "w.key", sec::generate_keypair(), "w", false), sec::KeyFileExists);
  EXPECT_EQ(sec::load_secret_key(dir / "w.key").keys.secret_key, keys.secret_key);
  const auto other = sec::generate_keypair();
  sec::save_secret_key(dir / "w.key", other, "w", true);
  EXPECT_EQ(sec::load_secret_key(dir / "w.key").keys.secret_key, other.secret_key);
  EXPECT_EQ(mode_of(dir / "w.key"), 0600u);
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 2u);
}

TEST(SecurityKeys, SecretKeyReadableByOthersIsRefused) {
  const auto dir = scratch();
  const auto path = dir / "open.key";
  sec::save_secret_key(path, sec::generate_keypair(), "open", false);
  for (mode_t m : {0640, 0604, 0620, 0644}) {
    ASSERT_EQ(::chmod(path.c_str(), m), 0);
    const auto err = error_of([&] { sec::load_secret_key(path); });
    EXPECT_NE(err.find(path.string()), std::string::npos) << err;
    EXPECT_NE(err.find("chmod 600"), std::string::npos) << err;
  }
  ASSERT_EQ(::chmod(path.c_str(), 0400), 0);
  EXPECT_NO_THROW(sec::load_secret_key(path));
  fs::create_symlink(path, dir / "link.key");
  EXPECT_NE(error_of([&] { sec::load_secret_key(dir / "link.key"); }).find("symbolic link"), std::string::npos);
}

TEST(SecurityKeys, KeyFileErrorsNameFileAndLine) {
  const auto k = sec::generate_keypair();
  const auto bad = [&](const std::string& text) { return error_of([&] { sec::parse_secret_key_file(text, "x.key"); }); };
  EXPECT_EQ(bad("metadata\ncurve\n    public-key = \"" + k.public_key + "\"\n    secret-key = \"tooshort\"\n"),
            "x.key:4: secret-key is not a Z85 CURVE key (40 characters of the Z85 alphabet)");
  EXPECT_EQ(bad("# c\nstuff\n").substr(0, 8), "x.key:2:");
  EXPECT_EQ(bad("    public-key = \"x\"\n").substr(0, 8), "x.key:1:");
  EXPECT_EQ(bad("curve\n    colour = \"red\"\n").substr(0, 8), "x.key:2:");
  EXPECT_EQ(bad("curve\n    public-key = \"" + k.public_key + "\n").substr(0, 8), "x.key:2:");
  // A pair whose halves do not belong together.
  const auto other = sec::generate_keypair();
  EXPECT_NE(bad(sec::format_secret_key_file({other.public_key, k.secret_key}, "m")).find("does not belong"),
            std::string::npos);
  // czmq-style certificates (tabs, single quotes, extra metadata) are read.
  const auto ok = sec::parse_secret_key_file("metadata\n\tname = 'n'\n\temail = \"a@b\"\ncurve\n\tpublic-key = '" +
                                                 k.public_key + "'\n\tsecret-key = '" + k.secret_key + "'\n",
                                             "x.key");
  EXPECT_EQ(ok.name, "n");
  EXPECT_EQ(ok.keys.secret_key, k.secret_key);
}

TEST(SecurityKeys, AuthorisedKeysParsing) {
  const auto a = sec::generate_keypair(), b = sec::generate_keypair(), c = sec::generate_keypair();
  const auto keys = sec::AuthorisedKeys::parse(
      "# workers\n\n" + a.public_key + " node-a\n  " + b.public_key + "\t node b \r\n" + c.public_key + "\n", "auth");
  EXPECT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys.find(a.public_key), "node-a");
  EXPECT_EQ(keys.find(b.public_key), "node b");
  EXPECT_EQ(keys.find(c.public_key), "");
  EXPECT_FALSE(keys.contains(sec::generate_keypair().public_key));
  EXPECT_EQ(sec::AuthorisedKeys::parse(keys.format(), "again").size(), 3u);

  const auto err = [](const std::string& text) { return error_of([&] { sec::AuthorisedKeys::parse(text, "auth.txt"); }); };
  EXPECT_EQ(err("# ok\n" + a.public_key + "\nnot-a-key name\n").substr(0, 11), "auth.txt:3:");
  EXPECT_NE(err("# ok\n" + a.public_key + "\nnot-a-key name\n").find("'not-a-key'"), std::string::npos);
  const std::string dup = err(a.public_key + " one\n" + a.public_key + " two\n");
  EXPECT_EQ(dup.substr(0, 11), "auth.txt:2:");
  EXPECT_NE(dup.find("listed twice"), std::string::npos);
  // 40 characters, but not Z85 (overflowing group).
  EXPECT_NE(err("%" + std::string(39, '#') + "\n").find("auth.txt:1: "), std::string::npos);

  const auto dir = scratch();
  EXPECT_NE(error_of([&] { sec::AuthorisedKeys::load(dir / "missing"); }).find((dir / "missing").string()),
            std::string::npos);
}

TEST(SecurityKeys, LocalKeysAndWorkerCredentials) {
  const auto local = sec::make_local_keys(3);
  ASSERT_EQ(local.workers.size(), 3u);
  const auto auth = local.authorised();
  EXPECT_EQ(auth.size(), 3u);
  EXPECT_EQ(auth.find(local.workers[2].public_key), "local-worker-2");
  EXPECT_FALSE(auth.contains(local.server.public_key));

  const sec::ClientCredentials creds{local.server.public_key, local.workers[1]};
  const auto text = sec::encode_client_credentials(creds);
  ::setenv(sec::client_credentials_env, text.c_str(), 1);
  const auto back = sec::take_client_credentials_from_env();
  ASSERT_TRUE(back);
  EXPECT_EQ(back->server_public_key, creds.server_public_key);
  EXPECT_EQ(back->own.secret_key, creds.own.secret_key);
  EXPECT_EQ(std::getenv(sec::client_credentials_env), nullptr);  // children do not inherit the secret
  EXPECT_FALSE(sec::take_client_credentials_from_env());
  EXPECT_THROW(sec::decode_client_credentials("a b c"), flowd::Error);
  // A secret key that does not belong to the public key given with it.
  EXPECT_THROW(sec::decode_client_credentials(local.server.public_key + " " + local.workers[0].public_key + " " +
                                              local.workers[1].secret_key),
               flowd::Error);
}

TEST(SecurityPolicy, LoopbackIpcInprocNeedNoKeys) {
  for (const char* ep : {"tcp://127.0.0.1:5555", "tcp://127.0.0.1:*", "tcp://127.1.2.3:0", "tcp://[::1]:5555",
                         "tcp://localhost:5555", "ipc:///tmp/flowd.sock", "inproc://coordinator",
                         "tcp://[::ffff:127.0.0.1]:80"}) {
    EXPECT_NO_THROW(sec::check_bind_endpoint(ep, false)) << ep;
    EXPECT_TRUE(sec::is_local_endpoint(ep)) << ep;
  }
  EXPECT_EQ(sec::default_bind_endpoint(), "tcp://127.0.0.1:*");
  EXPECT_EQ(sec::default_bind_endpoint(7000), "tcp://127.0.0.1:7000");
  EXPECT_TRUE(sec::is_local_endpoint(sec::default_bind_endpoint()));
  EXPECT_EQ(sec::normalise_bind_endpoint("tcp://localhost:9"), "tcp://127.0.0.1:9");
  EXPECT_EQ(sec::normalise_bind_endpoint("ipc:///x"), "ipc:///x");
}

TEST(SecurityPolicy, OtherTcpAddressesNeedKeys) {
  for (const char* ep : {"tcp://0.0.0.0:5555", "tcp://*:5555", "tcp://192.168.1.10:5555", "tcp://eth0:5555",
                         "tcp://[::]:5555", "tcp://[fe80::1]:5555", "tcp://node17.cluster:5555", "tcp://128.0.0.1:1"}) {
    const auto err = error_of([&] { sec::check_bind_endpoint(ep, false); });
    EXPECT_NE(err.find("refusing to bind"), std::string::npos) << ep << ": " << err;
    EXPECT_NE(err.find("flowd keygen"), std::string::npos) << err;
    EXPECT_NO_THROW(sec::check_bind_endpoint(ep, true)) << ep;
    EXPECT_THROW(sec::check_connect_endpoint(ep, false), flowd::Error) << ep;
  }
  EXPECT_NO_THROW(sec::check_connect_endpoint("tcp://node17:5555", true));
  // Malformed or unsupported, keys or not.
  for (const char* ep : {"127.0.0.1:5555", "tcp://127.0.0.1", "tcp://127.0.0.1:99999", "tcp://:5", "pgm://eth0;239.1.1.1:5",
                         "udp://127.0.0.1:5", "tcp://10.0.0.1;127.0.0.1:5", "ipc://"}) {
    EXPECT_THROW(sec::check_bind_endpoint(ep, true), flowd::Error) << ep;
  }
  EXPECT_THROW(sec::check_connect_endpoint("tcp://127.0.0.1:*", true), flowd::Error);
}

TEST(SecurityZap, AuthorisedClientExchangesMessages) {
  CapturedLog log;
  zmq::context_t ctx;
  const auto server_keys = sec::generate_keypair(), worker = sec::generate_keypair();
  sec::AuthorisedKeys auth;
  auth.add(worker.public_key, "worker-1");
  sec::ZapHandler zap(ctx, auth, log.sink());

  auto server = make_socket(ctx, zmq::socket_type::router, 5000);
  sec::configure_curve_server(server, zap, server_keys);
  const auto endpoint = sec::secure_bind(server, "tcp://127.0.0.1:*");
  ASSERT_EQ(endpoint.rfind("tcp://127.0.0.1:", 0), 0u) << endpoint;
  ASSERT_NE(endpoint.substr(endpoint.rfind(':') + 1), "0");

  auto client = make_socket(ctx, zmq::socket_type::dealer, 5000);
  sec::configure_curve_client(client, {server_keys.public_key, worker});
  sec::secure_connect(client, endpoint);

  auto got = exchange(client, server);
  ASSERT_TRUE(got) << "no message within 5 s; log:\n" << log.all();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[1].to_string(), "hello");
  // The ZAP user id tells the coordinator which worker spoke.
  EXPECT_STREQ((*got)[1].gets("User-Id"), "worker-1");
  EXPECT_STREQ((*got)[1].gets("Peer-Address"), "127.0.0.1");

  server.send((*got)[0], zmq::send_flags::sndmore);
  server.send(zmq::str_buffer("welcome"), zmq::send_flags::none);
  zmq::message_t reply;
  ASSERT_TRUE(client.recv(reply));
  EXPECT_EQ(reply.to_string(), "welcome");
  EXPECT_EQ(zap.allowed(), 1u);
  EXPECT_EQ(zap.refused(), 0u);
}

TEST(SecurityZap, UnauthorisedClientIsRefusedAndLogged) {
  CapturedLog log;
  zmq::context_t ctx;
  const auto server_keys = sec::generate_keypair(), authorised = sec::generate_keypair(),
             intruder = sec::generate_keypair();
  sec::AuthorisedKeys auth;
  auth.add(authorised.public_key, "good");
  sec::ZapHandler zap(ctx, auth, log.sink());

  auto server = make_socket(ctx, zmq::socket_type::router, 1500);
  sec::configure_curve_server(server, zap, server_keys);
  const auto endpoint = sec::secure_bind(server, sec::default_bind_endpoint());

  // Valid CURVE keys, and the right server key: only the authorisation is missing.
  auto client = make_socket(ctx, zmq::socket_type::dealer, 1500);
  sec::configure_curve_client(client, {server_keys.public_key, intruder});
  sec::secure_connect(client, endpoint);

  EXPECT_FALSE(exchange(client, server)) << "an unauthorised peer's message got through";
  ASSERT_TRUE(log.wait_for(intruder.public_key)) << log.all();
  EXPECT_EQ(log.count("refused CURVE peer at 127.0.0.1: public key " + intruder.public_key), 1u) << log.all();
  EXPECT_GE(zap.refused(), 1u);
  EXPECT_EQ(zap.allowed(), 0u);

  // More connections with the same key from the same address: refused each
  // time, logged once per interval.
  std::vector<zmq::socket_t> more;
  for (int i = 0; i < 3; ++i) {
    more.push_back(make_socket(ctx, zmq::socket_type::dealer, 300));
    sec::configure_curve_client(more.back(), {server_keys.public_key, intruder});
    sec::secure_connect(more.back(), endpoint);
    more.back().send(zmq::str_buffer("hello"), zmq::send_flags::dontwait);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (zap.refused() < 4 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(zap.refused(), 4u);
  EXPECT_EQ(log.count(intruder.public_key), 1u) << log.all();
  zmq::message_t none;
  EXPECT_FALSE(server.recv(none, zmq::recv_flags::dontwait));

  // Authorising the key later lets new connections in without a restart.
  auth.add(intruder.public_key, "late");
  zap.set_authorised(auth);
  auto again = make_socket(ctx, zmq::socket_type::dealer, 5000);
  sec::configure_curve_client(again, {server_keys.public_key, intruder});
  sec::secure_connect(again, endpoint);
  server.set(zmq::sockopt::rcvtimeo, 5000);
  auto got = exchange(again, server);
  ASSERT_TRUE(got) << log.all();
  EXPECT_STREQ(got->back().gets("User-Id"), "late");
}

TEST(SecurityZap, PlainClientIsRefusedAndLogged) {
  CapturedLog log;
  zmq::context_t ctx;
  const auto server_keys = sec::generate_keypair();
  sec::ZapHandler zap(ctx, sec::AuthorisedKeys{}, log.sink());
  auto server = make_socket(ctx, zmq::socket_type::router, 1500);
  sec::configure_curve_server(server, zap, server_keys);
  const auto endpoint = sec::secure_bind(server, "tcp://127.0.0.1:*");
  sec::HandshakeMonitor monitor(ctx, server, log.sink());

  auto client = make_socket(ctx, zmq::socket_type::dealer, 1500);
  client.connect(endpoint);  // NULL mechanism: no keys at all
  EXPECT_FALSE(exchange(client, server)) << "a plain peer's message got through";
  ASSERT_TRUE(log.wait_for("does not use CURVE")) << log.all();
  EXPECT_GE(monitor.failures(), 1u);
  EXPECT_EQ(zap.allowed(), 0u);
}

TEST(SecurityZap, ClientWithWrongServerKeyIsRefused) {
  CapturedLog log;
  zmq::context_t ctx;
  const auto server_keys = sec::generate_keypair(), worker = sec::generate_keypair();
  sec::AuthorisedKeys auth;
  auth.add(worker.public_key, "w");
  sec::ZapHandler zap(ctx, auth, log.sink());
  auto server = make_socket(ctx, zmq::socket_type::router, 1500);
  sec::configure_curve_server(server, zap, server_keys);
  const auto endpoint = sec::secure_bind(server, "tcp://127.0.0.1:*");

  // An authorised key talking to an impostor's idea of the server.
  auto client = make_socket(ctx, zmq::socket_type::dealer, 1500);
  sec::configure_curve_client(client, {sec::generate_keypair().public_key, worker});
  client.connect(endpoint);
  EXPECT_FALSE(exchange(client, server));
  EXPECT_EQ(zap.allowed(), 0u);
}

TEST(SecurityZap, LocalNullOnlyOverIpc) {
  CapturedLog log;
  zmq::context_t ctx;
  {
    sec::ZapHandler strict(ctx, sec::AuthorisedKeys{}, log.sink());
    auto s = make_socket(ctx, zmq::socket_type::router, 100);
    EXPECT_THROW(sec::configure_local_server(s, strict), flowd::Error);
  }
  sec::ZapHandler zap(ctx, sec::AuthorisedKeys{}, log.sink(), sec::ZapOptions{true});
  // One handler per context: a second could not bind the ZAP address.
  EXPECT_NE(error_of([&] { sec::ZapHandler again(ctx, sec::AuthorisedKeys{}, log.sink()); }).find("already has a ZAP"),
            std::string::npos);

  auto server = make_socket(ctx, zmq::socket_type::router, 5000);
  sec::configure_local_server(server, zap);
  EXPECT_NE(error_of([&] { sec::secure_bind(server, "tcp://127.0.0.1:*"); }).find("only ipc://"), std::string::npos);
  const auto dir = scratch();
  const std::string endpoint = "ipc://" + (dir / "c.sock").string();
  ASSERT_LT(endpoint.size(), 100u) << "ipc path too long for sun_path";
  sec::secure_bind(server, endpoint);

  auto client = make_socket(ctx, zmq::socket_type::dealer, 5000);
  sec::secure_connect(client, endpoint);
  auto got = exchange(client, server);
  ASSERT_TRUE(got) << log.all();
  EXPECT_STREQ(got->back().gets("User-Id"), "local");
}

TEST(SecurityZap, NullServerRefusesNonLoopbackBind) {
  zmq::context_t ctx;
  auto s = make_socket(ctx, zmq::socket_type::router, 100);
  EXPECT_NE(error_of([&] { sec::secure_bind(s, "tcp://0.0.0.0:*"); }).find("without CURVE keys"), std::string::npos);
  EXPECT_NE(error_of([&] { sec::secure_bind(s, "tcp://*:*"); }).find("without CURVE keys"), std::string::npos);
  // Loopback without keys is allowed (the default), "localhost" included.
  EXPECT_EQ(sec::secure_bind(s, "tcp://localhost:*").rfind("tcp://127.0.0.1:", 0), 0u);
  auto c = make_socket(ctx, zmq::socket_type::dealer, 100);
  EXPECT_THROW(sec::secure_connect(c, "tcp://192.0.2.1:5555"), flowd::Error);
}

TEST(SecurityCli, KeygenWritesPrivateKeyAndRefusesOverwrite) {
  const auto dir = scratch();
  auto r = flowd::test::flowd_cmd(dir, {"keygen", "--out", "keys", "--name", "node1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(mode_of(dir / "keys"), 0700u);
  EXPECT_EQ(mode_of(dir / "keys/node1.key"), 0600u);
  EXPECT_EQ(mode_of(dir / "keys/node1.pub"), 0644u);
  const auto secret = sec::load_secret_key(dir / "keys/node1.key");
  const auto pub = sec::load_public_key(dir / "keys/node1.pub");
  EXPECT_EQ(secret.keys.public_key, pub.public_key);
  EXPECT_EQ(secret.name, "node1");
  // The printed line is ready for an authorised-keys file.
  EXPECT_TRUE(sec::AuthorisedKeys::parse(r.out.substr(r.out.rfind(pub.public_key)), "stdout").contains(pub.public_key));

  r = flowd::test::flowd_cmd(dir, {"keygen", "node1", "--out", "keys"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  EXPECT_EQ(sec::load_secret_key(dir / "keys/node1.key").keys.secret_key, secret.keys.secret_key);

  r = flowd::test::flowd_cmd(dir, {"keygen", "node1", "--out", "keys", "--force"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(sec::load_secret_key(dir / "keys/node1.key").keys.secret_key, secret.keys.secret_key);
  EXPECT_EQ(mode_of(dir / "keys/node1.key"), 0600u);

  r = flowd::test::flowd_cmd(dir, {"keygen", "--name", "../evil"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("invalid key name"), std::string::npos);

  r = flowd::test::flowd_cmd(dir, {"--help"});
  EXPECT_NE(r.out.find("flowd keygen"), std::string::npos);
}
