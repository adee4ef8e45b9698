#include "plugin/plugin_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <system_error>

#include <boost/dll/library_info.hpp>

#include "util/text.hpp"

namespace flowd::plugin {

namespace fs = std::filesystem;

namespace {

constexpr const char* required_exports[] = {"flowd_plugin_abi", "flowd_plugin_fingerprint", "flowd_plugin_manifest",
                                            "flowd_plugin_entry"};

// Whether the file can be opened for reading and is a regular file, checked
// before Boost.DLL reads it: for an unreadable file Boost.DLL reports an
// iostream failure ("basic_ios::clear") as unreadable ELF headers.
// O_NONBLOCK: a FIFO must not block the scan.
std::optional<std::string> check_readable(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "cannot read " + path.string() + ": " + std::error_code(errno, std::generic_category()).message();
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  ::close(fd);
  if (!regular) return "cannot read " + path.string() + ": not a regular file";
  return std::nullopt;
}

// Checks the exports in the "boostdll" section without running any code of
// the library; empty when it looks like a flowd plugin.
std::optional<std::string> check_exports(const fs::path& path) {
  std::vector<std::string> symbols;
  try {
    boost::dll::library_info info(path);
    symbols = info.symbols("boostdll");
  } catch (const std::exception& e) {
    return std::string("not a valid shared library: its ELF headers cannot be read (truncated or corrupt?): ") + e.what();
  }
  std::vector<std::string> missing;
  for (const char* name : required_exports)
    if (std::find(symbols.begin(), symbols.end(), name) == symbols.end()) missing.emplace_back(name);
  if (missing.size() == std::size(required_exports))
    return std::string("not a flowd plugin (it exports no flowd_plugin_* symbols; was it built with FLOWD_PLUGIN?)");
  if (!missing.empty()) return "not a complete flowd plugin (missing export " + missing.front() + ")";
  return std::nullopt;
}

boost::dll::shared_library load(const fs::path& path) {
  // Local binding: two plugins may define the same internal symbols.
  return boost::dll::shared_library(path, boost::dll::load_mode::rtld_lazy | boost::dll::load_mode::rtld_local);
}

// The SDK header hash in a fingerprint ("...;sdk=HASH"); empty for a plugin
// built with an SDK older than the hash.
std::string_view sdk_hash_of(std::string_view fingerprint) {
  constexpr std::string_view tag = ";sdk=";
  const auto at = fingerprint.find(tag);
  if (at == std::string_view::npos) return {};
  const auto value = fingerprint.substr(at + tag.size());
  return value.substr(0, value.find(';'));
}

std::string short_hash(std::string_view hash) {
  return hash.empty() ? std::string("none (an SDK older than the hash)") : std::string(hash.substr(0, 12));
}

std::string abi_problem(std::uint32_t abi, const std::string& fingerprint) {
  if (abi != abi_version)
    return "built for flowd plugin ABI " + std::to_string(abi) + " but this engine uses ABI " +
           std::to_string(abi_version) + "; rebuild it against this flowd's SDK";
  if (const auto theirs = sdk_hash_of(fingerprint); theirs != sdk_hash)
    return "built against a different flowd SDK (plugin's SDK headers " + short_hash(theirs) + ", this engine's " +
           short_hash(sdk_hash) + "); rebuild it against this flowd's SDK";
  if (fingerprint != abi_fingerprint())
    return "built with an incompatible toolchain (plugin: " + fingerprint + "; engine: " + abi_fingerprint() +
           "); rebuild it with the compiler and libraries flowd was built with";
  return {};
}

// Parameters whose default their own declaration refuses: every stage that
// leaves one unset would fail validation, so the plugin is refused instead.
void default_problems(const OperatorSpec& op, std::vector<std::string>& out) {
  for (const auto& p : op.params)
    if (p.default_value)
      if (auto why = p.check(*p.default_value))
        out.push_back("operator '" + op.name + "' declares parameter '" + p.name + "' with default " +
                      p.default_value->dump() + ", which its own declaration refuses (" + *why + ")");
}

}  // namespace

std::optional<FileStamp> FileStamp::of(const fs::path& p) {
  struct stat st{};
  if (::stat(p.c_str(), &st) != 0) return std::nullopt;
  FileStamp s;
  s.size = static_cast<std::uintmax_t>(st.st_size);
  s.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  s.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  s.inode = static_cast<std::uint64_t>(st.st_ino);
  return s;
}

bool valid_operator_name(std::string_view name) {
  bool dot = false;
  bool segment_start = true;
  for (char c : name) {
    if (c == '.') {
      if (segment_start) return false;
      dot = true;
      segment_start = true;
      continue;
    }
    const bool lower = c >= 'a' && c <= 'z';
    const bool digit_or_us = (c >= '0' && c <= '9') || c == '_';
    if (segment_start ? !lower : !(lower || digit_or_us)) return false;
    segment_start = false;
  }
  return dot && !segment_start;
}

PluginRecord inspect_plugin(const fs::path& path) {
  PluginRecord r;
  r.path = path;
  if (auto st = FileStamp::of(path)) r.stamp = *st;
  auto refuse = [&](std::string why) {
    r.refused = true;
    r.refusal = std::move(why);
    return r;
  };
  if (auto problem = check_readable(path)) return refuse(*problem);
  if (auto problem = check_exports(path)) return refuse(*problem);

  try {
    auto lib = load(path);
    r.abi = lib.get_alias<std::uint32_t()>("flowd_plugin_abi")();
    r.fingerprint = lib.get_alias<const char*()>("flowd_plugin_fingerprint")();
    // The manifest is plain JSON text, readable whatever the ABI, so a
    // refused plugin can still say which operators it would have provided.
    const char* text = lib.get_alias<const char*()>("flowd_plugin_manifest")();
    r.manifest = Json::parse(text);
    r.name = r.manifest.at("plugin").at("name").get<std::string>();
    r.version = r.manifest.at("plugin").at("version").get<std::string>();
    r.doc = r.manifest.at("plugin").value("doc", "");
    for (const auto& op : r.manifest.at("operators")) r.operators.push_back(spec_from_json(op));
  } catch (const std::exception& e) {
    return refuse(std::string("cannot be loaded or described: ") + e.what());
  }
  if (auto problem = abi_problem(r.abi, r.fingerprint); !problem.empty()) return refuse(problem);

  std::set<std::string> seen;
  std::vector<std::string> defaults;
  for (const auto& op : r.operators) {
    if (!valid_operator_name(op.name))
      return refuse("operator name '" + op.name + "' is not of the form family.operation (lower case, digits, _)");
    if (!seen.insert(op.name).second) return refuse("declares operator '" + op.name + "' twice");
    default_problems(op, defaults);
  }
  if (!defaults.empty()) return refuse("plugin '" + r.name + "': " + join(defaults, "; "));
  return r;
}

std::shared_ptr<const LoadedPlugin> LoadedPlugin::open(const fs::path& path) {
  auto p = std::shared_ptr<LoadedPlugin>(new LoadedPlugin());
  p->path_ = path;
  if (auto problem = check_readable(path)) throw Error(*problem);
  if (auto problem = check_exports(path)) throw Error(path.string() + ": " + *problem);
  try {
    p->lib_ = load(path);
    const auto abi = p->lib_.get_alias<std::uint32_t()>("flowd_plugin_abi")();
    const std::string fp = p->lib_.get_alias<const char*()>("flowd_plugin_fingerprint")();
    if (auto problem = abi_problem(abi, fp); !problem.empty()) throw Error(problem);
    p->descriptor_ = &p->lib_.get_alias<const PluginDescriptor&()>("flowd_plugin_entry")();
  } catch (const Error& e) {
    throw Error(path.string() + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error(path.string() + ": cannot be loaded: " + e.what());
  }
  return p;
}

const OperatorFactory* LoadedPlugin::factory(std::string_view op) const noexcept {
  for (const auto& f : descriptor_->operators)
    if (f.spec.name == op) return &f;
  return nullptr;
}

}  // namespace flowd::plugin
