#include "net/cluster/rendezvous.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "flowd/error.hpp"

namespace flowd::net::cluster {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view format_name = "flowd-rendezvous";
constexpr int format_version = 1;

std::string errno_text() { return std::strerror(errno); }

void write_all(int fd, const std::string& data, const fs::path& tmp) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot write rendezvous file " + tmp.string() + ": " + errno_text());
    }
    done += static_cast<std::size_t>(n);
  }
}

// Without it a crash right after the rename could leave the new name
// pointing at an empty file on some filesystems.
void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: the rename already happened
  (void)::fsync(fd);
  ::close(fd);
}

// "tcp://HOST:PORT" with a concrete port: a worker cannot connect to "*".
void check_coordinator_endpoint(const std::string& ep, const std::string& origin) {
  const std::string prefix = "tcp://";
  const auto bad = [&](const std::string& why) {
    return Error(origin + "='" + ep + "' is not a coordinator address: " + why +
                 " (expected tcp://HOST:PORT)");
  };
  if (ep.rfind(prefix, 0) != 0) throw bad("it does not start with tcp://");
  const std::string rest = ep.substr(prefix.size());
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos) throw bad("no port");
  const std::string host = rest.substr(0, colon);
  const std::string port = rest.substr(colon + 1);
  if (host.empty() || host == "[]") throw bad("no host");
  if (host == "*" || host == "0.0.0.0" || host == "[::]") {
    throw bad("a wildcard address can be bound but not connected to");
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) == 0 || std::stoi(port) > 65535) {
    throw bad("the port must be a number from 1 to 65535");
  }
}

}  // namespace

void write_rendezvous(const fs::path& path, const Rendezvous& r) {
  check_coordinator_endpoint(r.endpoint, "the rendezvous endpoint");
  const nlohmann::json doc = {{"format", format_name},
                              {"version", format_version},
                              {"endpoint", r.endpoint},
                              {"server_public_key", r.server_public_key},
                              {"job_id", r.job_id}};
  const std::string text = doc.dump(2) + "\n";

  // A unique temp name: several coordinators by mistake, or a retry, must
  // not write into each other's temp file.
  std::random_device rd;
  const fs::path tmp = path.parent_path() /
                       ("." + path.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                        std::to_string(rd()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error("cannot create rendezvous file " + tmp.string() + " (for " + path.string() +
                "): " + errno_text());
  }
  try {
    write_all(fd, text, tmp);
    if (::fsync(fd) != 0) throw Error("cannot flush rendezvous file " + tmp.string() + ": " + errno_text());
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw Error("cannot rename " + tmp.string() + " to rendezvous file " + path.string() + ": " + why);
  }
  fsync_dir(path.parent_path());
}

Rendezvous read_rendezvous(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open rendezvous file " + path.string() + ": " + errno_text());
  std::ostringstream buf;
  buf << in.rdbuf();
  const auto malformed = [&](const std::string& why) {
    return Error("rendezvous file " + path.string() + " is malformed: " + why +
                 " (delete it if an older flowd or another program wrote it)");
  };
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(buf.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw malformed(std::string("not JSON: ") + e.what());
  }
  if (!doc.is_object()) throw malformed("not a JSON object");
  if (doc.value("format", std::string()) != format_name) throw malformed("\"format\" is not \"flowd-rendezvous\"");
  if (!doc.contains("version") || !doc["version"].is_number_integer() || doc["version"] != format_version) {
    throw malformed("unsupported \"version\" (this flowd reads version 1)");
  }
  const auto str = [&](const char* key, bool required) -> std::string {
    if (!doc.contains(key)) {
      if (required) throw malformed(std::string("\"") + key + "\" is missing");
      return {};
    }
    if (!doc[key].is_string()) throw malformed(std::string("\"") + key + "\" is not a string");
    return doc[key].get<std::string>();
  };
  Rendezvous r;
  r.endpoint = str("endpoint", true);
  r.server_public_key = str("server_public_key", false);
  r.job_id = str("job_id", false);
  check_coordinator_endpoint(r.endpoint, "\"endpoint\" in " + path.string());
  if (!r.server_public_key.empty() && r.server_public_key.size() != 40) {
    throw malformed("\"server_public_key\" is not a 40-character Z85 key");
  }
  return r;
}

Rendezvous wait_for_rendezvous(const fs::path& path, const WaitOptions& options) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto deadline = start + options.timeout;
  std::string stale_job;
  for (;;) {
    std::error_code ec;
    if (fs::exists(path, ec)) {
      Rendezvous r = read_rendezvous(path);
      if (options.expected_job_id.empty() || r.job_id.empty() || r.job_id == options.expected_job_id) {
        return r;
      }
      stale_job = r.job_id;
    }
    const auto now = clock::now();
    if (options.interrupt && options.interrupt->load())
      throw RendezvousInterrupted(
          "interrupted while waiting " +
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count()) +
          " ms for the rendezvous file " + path.string());
    if (now >= deadline) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
      std::string msg = "no coordinator found: rendezvous file " + path.string() + " ";
      msg += stale_job.empty() ? std::string("did not appear")
                               : "still holds job " + stale_job + ", not this job " +
                                     options.expected_job_id + " (a leftover of an earlier run?)";
      msg += " within " + std::to_string(waited) +
             " ms; is rank 0 running, and is the path on a filesystem every node shares?";
      throw RendezvousTimeout(msg);
    }
    std::this_thread::sleep_for(std::min<clock::duration>(options.poll_interval, deadline - now));
  }
}

std::optional<fs::path> rendezvous_path(const Env& env) {
  const auto p = env("FLOWD_RENDEZVOUS");
  if (!p || p->empty()) return std::nullopt;
  return fs::path(*p);
}

Rendezvous resolve_coordinator(const Env& env, const LaunchInfo& self, WaitOptions options) {
  if (const auto ep = env("FLOWD_COORDINATOR"); ep && !ep->empty()) {
    check_coordinator_endpoint(*ep, "FLOWD_COORDINATOR");
    return Rendezvous{*ep, {}, {}};
  }
  if (const auto path = rendezvous_path(env)) {
    if (options.expected_job_id.empty()) options.expected_job_id = self.job_id;
    return wait_for_rendezvous(*path, options);
  }
  throw Error("rank " + std::to_string(self.rank) + " of " + std::to_string(self.size) + " (" +
              self.launcher + ") is a worker but does not know where the coordinator is: set "
              "FLOWD_RENDEZVOUS to a path on a shared filesystem (rank 0 writes it) or "
              "FLOWD_COORDINATOR=tcp://HOST:PORT");
}

}  // namespace flowd::net::cluster
