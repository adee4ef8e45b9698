#pragma once
// CURVE key pairs, their files and the coordinator's authorised keys.
//
// Keys are kept as Z85 text (40 characters for 32 bytes): that is what
// ZeroMQ's socket options take, what the files hold and what log lines show.
//
// Key files use ZeroMQ's certificate format (ZPL, as written by czmq's zcert
// and pyzmq's zmq.auth): a reviewed, documented format that existing ZeroMQ
// tooling already reads, with room for comments and metadata, and that needs
// no JSON parser in the security layer. See docs/security.md.
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flowd/error.hpp"

namespace flowd::net::security {

inline constexpr std::size_t z85_key_size = 40;

// Thrown by save_*_key when the file exists and overwriting was not asked for.
class KeyFileExists : public Error {
public:
  using Error::Error;
};

struct KeyPair {
  std::string public_key;  // Z85
  std::string secret_key;  // Z85
};

// Whether this libzmq was built with CURVE (libsodium or tweetnacl).
bool curve_available() noexcept;
// Throws flowd::Error explaining how to get a libzmq with CURVE.
void require_curve();

KeyPair generate_keypair();
// The public key that belongs to `secret_key`; throws on a malformed key.
std::string derive_public_key(std::string_view secret_key);
// 40 characters of the Z85 alphabet.
bool is_z85_key(std::string_view text) noexcept;
// Z85 text of a 32-byte binary key (ZAP hands keys over in binary).
std::string z85_from_binary(std::string_view binary32);

// A name usable as a key file's stem and in log lines: [A-Za-z0-9._-],
// 1..64 characters, not starting with '.'.
bool is_valid_key_name(std::string_view name) noexcept;

struct SecretKeyFile {
  std::string name;  // metadata name, may be empty
  KeyPair keys;
};

struct PublicKeyFile {
  std::string name;
  std::string public_key;
};

std::string format_secret_key_file(const KeyPair& keys, std::string_view name);
std::string format_public_key_file(std::string_view public_key, std::string_view name);

// `origin` names the text in errors ("FILE:LINE: ..."). The secret file must
// hold both keys, and they must belong together.
SecretKeyFile parse_secret_key_file(std::string_view text, const std::string& origin);
PublicKeyFile parse_public_key_file(std::string_view text, const std::string& origin);

// Refuses (flowd::Error naming the file) a secret key file that is not a
// regular file, not owned by this user (or root), or that group or others may
// read or write, as ssh does with private keys.
SecretKeyFile load_secret_key(const std::filesystem::path& path);
PublicKeyFile load_public_key(const std::filesystem::path& path);

// Atomic writes (temporary file, then link/rename): the file appears whole or
// not at all. The secret key file is created with mode 0600 from the start,
// the public one 0644. Without `overwrite` an existing file is an error, and
// the check cannot race with another writer.
void save_secret_key(const std::filesystem::path& path, const KeyPair& keys, std::string_view name, bool overwrite);
void save_public_key(const std::filesystem::path& path, std::string_view public_key, std::string_view name,
                     bool overwrite);

// The public keys a coordinator accepts. File format: one key per line,
// "<Z85 public key> [name]"; blank lines and lines starting with '#' are
// ignored. '#' is a Z85 character, but no valid key starts with it (that
// first 5-character group would exceed 32 bits), so the two never clash.
class AuthorisedKeys {
public:
  static AuthorisedKeys parse(std::string_view text, const std::string& origin);
  // A file that lists no keys (empty, or only comments) is refused: no
  // worker could join.
  static AuthorisedKeys load(const std::filesystem::path& path);

  // Throws flowd::Error on a malformed key or a key already present.
  void add(const std::string& public_key, std::string name = {});
  // The key's name ("" when it has none), or nullopt when not authorised.
  std::optional<std::string> find(std::string_view public_key) const;
  bool contains(std::string_view public_key) const { return find(public_key).has_value(); }
  std::size_t size() const noexcept { return keys_.size(); }
  bool empty() const noexcept { return keys_.empty(); }
  std::string format() const;  // the file format above

private:
  std::map<std::string, std::string, std::less<>> keys_;
};

// Ephemeral keys for `flowd run --workers N`: generated in memory for each
// run, never written to disk, so even loopback traffic between the local
// coordinator and its workers is authenticated and encrypted.
struct LocalKeys {
  KeyPair server;
  std::vector<KeyPair> workers;
  AuthorisedKeys authorised() const;  // the worker keys, named "local-worker-<i>"
};
LocalKeys make_local_keys(std::size_t workers);

// What a client (worker) needs: the server's public key and its own pair.
struct ClientCredentials {
  std::string server_public_key;
  KeyPair own;
};

// Handing a spawned local worker its credentials through the environment:
// readable only by the same user (/proc/PID/environ is 0400), unlike the
// command line, which every user sees in `ps`.
inline constexpr const char* client_credentials_env = "FLOWD_WORKER_CURVE";
std::string encode_client_credentials(const ClientCredentials& c);
ClientCredentials decode_client_credentials(std::string_view text);
// Reads and removes client_credentials_env, so that processes the worker
// starts (plugins' helpers) do not inherit its secret key.
std::optional<ClientCredentials> take_client_credentials_from_env();

}  // namespace flowd::net::security
