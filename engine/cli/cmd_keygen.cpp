// flowd keygen: a CURVE key pair for a coordinator or a worker.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <boost/program_options.hpp>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/setup.hpp"
#include "net/security/keys.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;
namespace sec = flowd::net::security;

namespace flowd::cli {

namespace {

// The short host name makes keys from different machines tell themselves
// apart in authorised-keys files without the user having to think of names.
std::string default_name() {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof host - 1) == 0) {
    std::string name(host);
    name = name.substr(0, name.find('.'));
    if (sec::is_valid_key_name(name)) return name;
  }
  return "flowd";
}

}  // namespace

int cmd_keygen(const Args& args) {
  std::string out = ".", name;
  bool force = false;
  po::options_description desc("Options");
  desc.add_options()("out,o", po::value(&out), "directory to write NAME.key and NAME.pub in (default: .)")
      ("name,n", po::value(&name), "key name: file stem and label in authorised keys (default: the host name)")
      ("force,f", po::bool_switch(&force), "replace existing key files")("help,h", "show this help");
  po::variables_map vm;
  if (auto rc = parse_command(args, desc, "usage: flowd keygen [NAME] [--out DIR] [--name NAME] [--force]", "name", vm))
    return *rc;
  if (name.empty()) name = default_name();
  if (!sec::is_valid_key_name(name)) {
    std::cerr << "flowd: invalid key name '" << name
              << "': use 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'\n";
    return exit_usage;
  }
  const fs::path dir(out);
  const fs::path secret = dir / (name + ".key"), pub = dir / (name + ".pub");
  try {
    if (!fs::exists(dir)) {
      // A directory made for keys is private: others need not even see names.
      fs::create_directories(dir);
      if (::chmod(dir.c_str(), 0700) != 0)
        throw Error("cannot set the mode of " + dir.string() + ": " + std::strerror(errno));
    } else if (!fs::is_directory(dir)) {
      std::cerr << "flowd: --out " << dir.string() << " is not a directory\n";
      return exit_usage;
    }
    if (!force) {
      for (const auto& p : {secret, pub})
        if (fs::exists(fs::symlink_status(p))) {
          std::cerr << "flowd: " << p.string() << " already exists; not replacing it (use --force)\n";
          return exit_usage;
        }
    }
    const auto keys = sec::generate_keypair();
    sec::save_secret_key(secret, keys, name, force);
    try {
      sec::save_public_key(pub, keys.public_key, name, force);
    } catch (...) {
      // Half a pair is useless and confusing: the secret goes too, unless an
      // older one was just replaced (--force), which is gone either way.
      if (!force) fs::remove(secret);
      throw;
    }
    std::cout << "wrote " << secret.string() << " (secret key, mode 0600: keep it on this machine)\n"
              << "wrote " << pub.string() << " (public key)\n"
              << "authorised-keys line (for a coordinator that should accept this worker):\n"
              << keys.public_key << " " << name << "\n";
    return exit_ok;
  } catch (const sec::KeyFileExists& e) {
    // Lost a race with another writer after the check above.
    std::cerr << "flowd: " << e.what() << " (use --force)\n";
    return exit_usage;
  } catch (const std::exception& e) {
    std::cerr << "flowd: " << e.what() << "\n";
    return exit_run_failed;
  }
}

}  // namespace flowd::cli
