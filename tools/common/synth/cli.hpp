#pragma once
// The command-line frame of the data-set generators (tools/cvtree,
// tools/prnu, tools/tem, tools/hne): parsing with --help, a bad command line
// and a failed write reported as "<tool>: <what>", SIGINT/SIGTERM noted
// rather than fatal, and a staging folder that makes a data set appear
// complete or not at all. Each tool keeps its own options, layout and exit
// statuses (they differ between tools and are documented per tool in
// docs/tools.md).
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <unistd.h>
#include <utility>

#include <boost/program_options.hpp>

namespace flowd::synth::cli {

// A tool's exit statuses besides 0.
struct ExitCodes {
  int usage;              // a bad command line; nothing written
  int failed;             // a failure while generating or writing
  int interrupted = 130;  // SIGINT or SIGTERM, for the tools that watch for them
};

// A failure while writing (not a bad command line).
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Set by SIGINT or SIGTERM once watch_interruptions() is called; the tool
// polls it between files so that its cleanup (Staging) still runs.
inline volatile std::sig_atomic_t interrupted = 0;
extern "C" inline void flowd_synth_cli_on_signal(int) { interrupted = 1; }

inline void watch_interruptions() {
  std::signal(SIGINT, flowd_synth_cli_on_signal);
  std::signal(SIGTERM, flowd_synth_cli_on_signal);
}

inline void throw_if_interrupted() {
  if (interrupted) throw Failure("interrupted; nothing written");
}

inline void require_out(const std::string& out) {
  if (out.empty()) throw boost::program_options::error("--out is required");
}

// What follows the message of a bad command line.
enum class UsageHint {
  see_help,  // "(see --help)"
  options,   // the whole option list
};

struct Tool {
  std::string_view name;
  ExitCodes exit_codes;
  UsageHint usage_hint = UsageHint::see_help;

  // Parses the command line against `opts`; --help prints them. Then
  // `check(vm)` does the tool's own checks, throwing on a bad command line;
  // it returns void, or an exit status to end with at once (e.g. after
  // listing something) or std::nullopt. Returns the exit status to end
  // main() with, or std::nullopt to go on and write.
  template <class Check>
  std::optional<int> parse(int argc, char** argv, const boost::program_options::options_description& opts,
                           Check&& check) const {
    namespace po = boost::program_options;
    try {
      po::variables_map vm;
      po::store(po::parse_command_line(argc, argv, opts), vm);
      po::notify(vm);
      if (vm.count("help")) {
        std::cout << opts << '\n';
        return 0;
      }
      if constexpr (std::is_void_v<std::invoke_result_t<Check&, const po::variables_map&>>) {
        check(vm);
        return std::nullopt;
      } else {
        return check(vm);
      }
    } catch (const std::exception& e) {
      std::cerr << name << ": " << e.what() << '\n';
      if (usage_hint == UsageHint::options)
        std::cerr << opts << '\n';
      else
        std::cerr << "(see --help)\n";
      return exit_codes.usage;
    }
  }

  // Runs `write_data_set`; an exception from it is reported and ends with
  // exit_codes.interrupted when a watched signal came, else exit_codes.failed.
  template <class Write>
  int write(Write&& write_data_set) const {
    try {
      write_data_set();
    } catch (const std::exception& e) {
      std::cerr << name << ": " << e.what() << '\n';
      return interrupted ? exit_codes.interrupted : exit_codes.failed;
    }
    return 0;
  }
};

inline void write_file(const std::filesystem::path& target, std::string_view bytes) {
  std::ofstream f(target, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.flush();
  if (!f) throw Failure("cannot write '" + target.string() + "'");
}

inline void write_file(const std::filesystem::path& target, std::span<const std::uint8_t> bytes) {
  write_file(target, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// ".<stem>.partial-<pid>": hidden, and two runs at once do not share it.
inline std::string partial_name(std::string_view stem) {
  return "." + std::string(stem) + ".partial-" + std::to_string(::getpid());
}

// A folder a data set is written into before it is put in place, so the
// data set appears complete or not at all. The folder goes with the Staging
// object: on any way out before the commit (an error, an interruption) it
// takes what was written with it; after the commit it is gone (renamed) or
// empty (its parts moved).
class Staging {
public:
  // A fresh `dir` holding the folders `parts`; whatever an earlier run with
  // the same pid left there is cleared first.
  Staging(std::filesystem::path dir, std::initializer_list<std::string_view> parts) : dir_(std::move(dir)) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    for (const std::string_view part : parts) {
      std::filesystem::create_directories(dir_ / part, ec);
      if (ec) throw Failure("cannot create '" + dir_.string() + "': " + ec.message());
    }
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  const std::filesystem::path& dir() const { return dir_; }

  // The whole folder becomes `out`.
  void rename_to(const std::filesystem::path& out) { put_in_place(dir_, out, "rename"); }

  // `parts`, in this order, move into `out`. If one cannot, those moved
  // before it come back, so a part never appears without the ones after it.
  void move_parts_to(const std::filesystem::path& out, std::initializer_list<std::string_view> parts) {
    for (auto part = parts.begin(); part != parts.end(); ++part) {
      try {
        put_in_place(dir_ / *part, out / *part, "move");
      } catch (...) {
        for (auto moved = part; moved != parts.begin();) {
          --moved;
          std::error_code ec;
          std::filesystem::rename(out / *moved, dir_ / *moved, ec);
        }
        throw;
      }
    }
  }

private:
  static void put_in_place(const std::filesystem::path& from, const std::filesystem::path& to, const char* verb) {
    std::error_code ec;
    if (std::filesystem::exists(to)) std::filesystem::remove(to, ec);  // an empty folder (checked before) gives way
    if (!ec) std::filesystem::rename(from, to, ec);
    if (ec)
      throw Failure(std::string("cannot ") + verb + " '" + from.string() + "' to '" + to.string() +
                    "': " + ec.message());
  }

  std::filesystem::path dir_;
};

}  // namespace flowd::synth::cli
