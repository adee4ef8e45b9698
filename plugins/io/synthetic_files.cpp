#include "synthetic_files.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "flowd/error.hpp"
#include "prnu/generate.hpp"
#include "synthetic.hpp"

namespace flowd::io {

namespace fs = std::filesystem;

namespace {

fs::path cache_root() {
  if (const char* d = std::getenv("FLOWD_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "flowd";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "flowd";
  return fs::temp_directory_path() / "flowd-cache";
}

}  // namespace

bool is_synthetic_files(const std::string& uri) { return uri.rfind("synthetic:prnu", 0) == 0; }

fs::path synthetic_files(const std::string& uri) {
  const std::string rest = uri.substr(std::string("synthetic:").size());
  const auto q = rest.find('?');
  const std::string generator = rest.substr(0, q);
  if (generator != "prnu") throw Error("'" + uri + "': unknown file generator '" + generator + "' (known: prnu)");
  std::map<std::string, std::string> kv;
  if (q != std::string::npos) {
    std::stringstream ss(rest.substr(q + 1));
    for (std::string pair; std::getline(ss, pair, '&');) {
      const auto eq = pair.find('=');
      if (eq == std::string::npos) throw Error("'" + uri + "': '" + pair + "' is not key=value");
      kv[pair.substr(0, eq)] = pair.substr(eq + 1);
    }
  }
  std::string part = "images";
  prnu::Params p;
  auto integer = [&](const std::string& k, const std::string& v, std::uint64_t lo, std::uint64_t hi) {
    return static_cast<int>(parse_number(uri, k, v, lo, hi));
  };
  for (const auto& [k, v] : kv) {
    if (k == "part") part = v;
    else if (k == "cameras") p.cameras = integer(k, v, 1, 1000);
    else if (k == "models") p.models = integer(k, v, 1, 100);
    else if (k == "flatfields") p.flatfields = integer(k, v, 0, 10000);
    else if (k == "images") p.images = integer(k, v, 0, 10000);
    else if (k == "shifted") p.shifted = integer(k, v, 0, 10000);
    else if (k == "width") p.width = integer(k, v, 1, 65536);
    else if (k == "height") p.height = integer(k, v, 1, 65536);
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
  // Named by every parameter, so another set never reuses this one.
  std::ostringstream name;
  name << "prnu-c" << p.cameras << "-m" << p.models << "-f" << p.flatfields << "-i" << p.images << "-s" << p.shifted
       << "-" << p.width << "x" << p.height << "-p" << p.portrait << "-seed" << p.seed << "-v1";
  const fs::path dir = cache_root() / "synthetic" / name.str();
  if (!fs::exists(dir / "complete")) {
    const fs::path tmp = dir.string() + ".partial-" + std::to_string(::getpid());
    std::error_code ec;
    fs::remove_all(tmp, ec);
    try {
      fs::create_directories(tmp / "flatfields");
      fs::create_directories(tmp / "images");
      const int cameras = p.cameras * p.models;
      for (int c = 0; c < cameras; ++c) {
        const prnu::Camera cam = prnu::make_camera(p, c);
        for (const prnu::Item& item : prnu::plan(p, c)) {
          const auto bytes = prnu::shoot(cam, item.shot);
          std::ofstream f(tmp / item.file, std::ios::binary);
          f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
          if (!f) throw Error("cannot write '" + (tmp / item.file).string() + "'");
        }
      }
      std::ofstream(tmp / "complete") << uri << "\n";
      fs::remove_all(dir, ec);  // a half-made set of another process
      fs::rename(tmp, dir);
    } catch (...) {
      fs::remove_all(tmp, ec);
      if (!fs::exists(dir / "complete")) throw;  // else another process made it meanwhile
    }
  }
  return dir / part;
}

}  // namespace flowd::io
