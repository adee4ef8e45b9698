#include "synthetic_files.hpp"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "cvtree/generate.hpp"
#include "flowd/error.hpp"
#include "prnu/generate.hpp"
#include "synthetic.hpp"

namespace flowd::io {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view scheme = "synthetic:";

fs::path cache_root() {
  if (const char* d = std::getenv("FLOWD_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "flowd";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "flowd";
  return fs::temp_directory_path() / "flowd-cache";
}

// synthetic:<generator>?key=value&...: the generator and its keys (a
// repeated key: the last one counts).
struct Query {
  std::string generator;
  std::map<std::string, std::string> keys;
};

Query parse_query(const std::string& uri) {
  const std::string rest = uri.substr(scheme.size());
  const auto q = rest.find('?');
  Query query{rest.substr(0, q), {}};
  if (q != std::string::npos) {
    std::stringstream ss(rest.substr(q + 1));
    for (std::string pair; std::getline(ss, pair, '&');) {
      const auto eq = pair.find('=');
      if (eq == std::string::npos) throw Error("'" + uri + "': '" + pair + "' is not key=value");
      query.keys[pair.substr(0, eq)] = pair.substr(eq + 1);
    }
  }
  return query;
}

int integer(const std::string& uri, const std::string& key, const std::string& value, std::uint64_t lo,
            std::uint64_t hi) {
  return static_cast<int>(parse_number(uri, key, value, lo, hi));
}

// Shortest text that reads back as the same double: two values never share
// a folder name.
std::string real_text(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

// The data set `name` in the cache, made first by `make` if it is not there
// yet. `make` fills an empty temporary sibling folder that is then renamed
// into place with a `complete` mark, so an interrupted generation leaves
// nothing a later call would take for a whole set; two processes may both
// generate it, and the first to finish wins.
fs::path cached_set(const std::string& uri, const std::string& name, const std::function<void(const fs::path&)>& make,
                    const Say& say) {
  const fs::path dir = cache_root() / "synthetic" / name;
  if (fs::exists(dir / "complete")) return dir;
  // Seconds and tens of MB the first time: said, so a first run's pause and
  // a cache that grows are not a mystery.
  if (say) say("generating " + uri + " into " + dir.string() + " (first use; later runs reuse it)");
  const auto t0 = std::chrono::steady_clock::now();
  const fs::path tmp = dir.string() + ".partial-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  try {
    fs::create_directories(tmp);
    make(tmp);
    std::ofstream(tmp / "complete") << uri << "\n";
    if (fs::exists(dir / "complete")) {  // another process finished first: keep its set
      fs::remove_all(tmp, ec);
      return dir;
    }
    fs::remove_all(dir, ec);  // a half-made set of another process
    fs::rename(tmp, dir);
    if (say) {
      std::uintmax_t bytes = 0;
      std::size_t files = 0;
      for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
           it.increment(ec))
        if (it->is_regular_file(ec) && it->path() != dir / "complete") bytes += it->file_size(ec), ++files;
      char line[160];
      std::snprintf(line, sizeof line, "generated %zu files, %.1f MB, in %.1f s", files, static_cast<double>(bytes) / 1e6,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      say(line);
    }
  } catch (...) {
    fs::remove_all(tmp, ec);
    if (!fs::exists(dir / "complete")) throw;  // else another process made it meanwhile
  }
  return dir;
}

void write_file(const fs::path& target, const char* data, std::size_t size) {
  std::ofstream f(target, std::ios::binary);
  f.write(data, static_cast<std::streamsize>(size));
  if (!f) throw Error("cannot write '" + target.string() + "'");
}

// synthetic:prnu?cameras=4&models=1&flatfields=10&images=10&shifted=0&
// width=1024&height=768&seed=1&portrait=0.2&part=images
fs::path prnu_set(const std::string& uri, const Query& query, const Say& say) {
  std::string part = "images";
  prnu::Params p;
  for (const auto& [k, v] : query.keys) {
    if (k == "part") part = v;
    else if (k == "cameras") p.cameras = integer(uri, k, v, 1, 1000);
    else if (k == "models") p.models = integer(uri, k, v, 1, 100);
    else if (k == "flatfields") p.flatfields = integer(uri, k, v, 0, 10000);
    else if (k == "images") p.images = integer(uri, k, v, 0, 10000);
    else if (k == "shifted") p.shifted = integer(uri, k, v, 0, 10000);
    else if (k == "width") p.width = integer(uri, k, v, 1, 65536);
    else if (k == "height") p.height = integer(uri, k, v, 1, 65536);
    else if (k == "seed") p.seed = parse_number(uri, k, v, 0, UINT64_MAX);
    else if (k == "portrait") p.portrait = parse_real(uri, k, v);
    else
      throw Error("'" + uri + "': unknown key '" + k +
                  "' (keys: cameras, models, flatfields, images, shifted, width, height, seed, portrait, part)");
  }
  if (part != "images" && part != "flatfields") throw Error("'" + uri + "': part=" + part + " (flatfields or images)");
  try {
    prnu::validate(p);
  } catch (const std::invalid_argument& e) {
    throw Error("'" + uri + "': " + e.what());
  }
  // Named by every parameter, so another set never reuses this one. (The
  // name of v1 sets, kept so existing caches stay valid.)
  std::ostringstream name;
  name << "prnu-c" << p.cameras << "-m" << p.models << "-f" << p.flatfields << "-i" << p.images << "-s" << p.shifted
       << "-" << p.width << "x" << p.height << "-p" << p.portrait << "-seed" << p.seed << "-v1";
  return cached_set(uri, name.str(),
                    [&](const fs::path& tmp) {
                      fs::create_directories(tmp / "flatfields");
                      fs::create_directories(tmp / "images");
                      const int cameras = p.cameras * p.models;
                      for (int c = 0; c < cameras; ++c) {
                        const prnu::Camera cam = prnu::make_camera(p, c);
                        for (const prnu::Item& item : prnu::plan(p, c)) {
                          const auto bytes = prnu::shoot(cam, item.shot);
                          write_file(tmp / item.file, reinterpret_cast<const char*>(bytes.data()), bytes.size());
                        }
                      }
                    },
                    say) /
         part;
}

// synthetic:cvtree?proteomes=8&proteins=3000&length=330&divergence=0.25&
// indel_rate=0.05&gain_rate=0.4&loss_rate=0.4&rate_shape=0.8&drift=1&
// min_internal=0.15&seed=1&part=proteomes
fs::path cvtree_set(const std::string& uri, const Query& query, const Say& say) {
  namespace cvs = cvtree::synth;
  std::string part = "proteomes";
  cvs::Params p;
  for (const auto& [k, v] : query.keys) {
    if (k == "part") part = v;
    else if (k == "proteomes") p.proteomes = integer(uri, k, v, 2, 1000);
    else if (k == "proteins") p.proteins = integer(uri, k, v, 1, 100000);
    else if (k == "length") p.mean_length = integer(uri, k, v, 40, 5000);
    else if (k == "divergence") p.divergence = parse_real(uri, k, v);
    else if (k == "indel_rate") p.indel_rate = parse_real(uri, k, v);
    else if (k == "gain_rate") p.gain_rate = parse_real(uri, k, v);
    else if (k == "loss_rate") p.loss_rate = parse_real(uri, k, v);
    else if (k == "rate_shape") p.rate_shape = parse_real(uri, k, v);
    else if (k == "drift") p.drift = parse_real(uri, k, v);
    else if (k == "min_internal") p.min_internal = parse_real(uri, k, v);
    else if (k == "seed") p.seed = parse_number(uri, k, v, 0, UINT64_MAX);
    else
      throw Error("'" + uri + "': unknown key '" + k +
                  "' (keys: proteomes, proteins, length, divergence, indel_rate, gain_rate, loss_rate, rate_shape, "
                  "drift, min_internal, seed, part)");
  }
  if (part != "proteomes" && part != "truth") throw Error("'" + uri + "': part=" + part + " (proteomes or truth)");
  try {
    cvs::validate(p);
  } catch (const std::invalid_argument& e) {
    throw Error("'" + uri + "': " + e.what());
  }
  // Named by every parameter, so another set never reuses this one; the
  // version goes up when the generator's output changes.
  const std::string name = "cvtree-n" + std::to_string(p.proteomes) + "-p" + std::to_string(p.proteins) + "-l" +
                           std::to_string(p.mean_length) + "-d" + real_text(p.divergence) + "-i" +
                           real_text(p.indel_rate) + "-g" + real_text(p.gain_rate) + "-x" + real_text(p.loss_rate) +
                           "-a" + real_text(p.rate_shape) + "-c" + real_text(p.drift) + "-m" +
                           real_text(p.min_internal) + "-seed" + std::to_string(p.seed) + "-v1";
  return cached_set(uri, name,
                    [&](const fs::path& tmp) {
                      fs::create_directories(tmp / "proteomes");
                      fs::create_directories(tmp / "truth");
                      const std::string newick = cvs::generate(p, [&](cvs::Proteome leaf) {
                        write_file(tmp / "proteomes" / (leaf.name + ".faa"), leaf.fasta.data(), leaf.fasta.size());
                      });
                      const std::string tree = newick + "\n";
                      write_file(tmp / "truth" / "tree.nwk", tree.data(), tree.size());
                    },
                    say) /
         part;
}

}  // namespace

bool is_synthetic_files(const std::string& uri) {
  return uri.rfind("synthetic:prnu", 0) == 0 || uri.rfind("synthetic:cvtree", 0) == 0;
}

fs::path synthetic_files(const std::string& uri, const Say& say) {
  const Query query = parse_query(uri);
  if (query.generator == "prnu") return prnu_set(uri, query, say);
  if (query.generator == "cvtree") return cvtree_set(uri, query, say);
  throw Error("'" + uri + "': unknown file generator '" + query.generator + "' (known: prnu, cvtree)");
}

}  // namespace flowd::io
