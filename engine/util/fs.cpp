#include "util/fs.hpp"

#include <unistd.h>

#include <random>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "flowd/error.hpp"
#include "util/temp_files.hpp"

namespace flowd {

namespace fs = std::filesystem;

std::optional<fs::path> user_cache_dir() {
  if (const char* d = std::getenv("FLOWD_CACHE_DIR"); d && *d) return fs::path(d);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "flowd";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "flowd";
  return std::nullopt;
}

fs::path temp_path_for(const fs::path& target) { return owned_temp_name(target); }

void write_file_atomic(const fs::path& path, std::string_view bytes) {
  const fs::path tmp = temp_path_for(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot create " + tmp.string() + ": " + std::strerror(errno));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();  // a full disk may show only when the last buffer is written
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw Error("cannot write " + tmp.string() + ": " + std::strerror(errno));
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error("cannot rename " + tmp.string() + " to " + path.string() + ": " + ec.message());
  }
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + path.string() + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error("cannot read " + path.string());
  return ss.str();
}

}  // namespace flowd
