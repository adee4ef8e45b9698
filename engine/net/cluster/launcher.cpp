#include "net/cluster/launcher.hpp"

#include <unistd.h>

#include <array>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <utility>

#include "flowd/error.hpp"

namespace flowd::net::cluster {

namespace {

// Strict: "08" is fine, "+3", " 3", "3x", "-1" and "" are not, because a
// lenient parse of a mangled variable would quietly make a second rank 0.
int parse_count(std::string_view name, const std::string& value, std::string_view launcher) {
  int out = 0;
  const char* first = value.data();
  const char* last = value.data() + value.size();
  const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
  const auto [ptr, ec] = std::from_chars(first, last, out);
  if (!digits || ec != std::errc() || ptr != last) {
    throw Error(std::string(name) + "='" + value + "' (set by " + std::string(launcher) +
                ") is not a non-negative decimal number");
  }
  return out;
}

struct Vars {
  std::string_view launcher;
  std::string_view rank;
  std::array<std::string_view, 2> size;  // first one set wins; empty = unused slot
  // Whether the size variable alone means "launched by this launcher". Not
  // for Slurm: an salloc shell has SLURM_NTASKS without being a task, and a
  // plain `flowd run` typed there must stay a single-process run.
  bool size_alone_counts = true;
};

constexpr Vars openmpi{"openmpi", "OMPI_COMM_WORLD_RANK", {"OMPI_COMM_WORLD_SIZE", ""}};
constexpr Vars pmi{"pmi", "PMI_RANK", {"PMI_SIZE", ""}};
// srun sets SLURM_STEP_NUM_TASKS for the step; SLURM_NTASKS is the job's
// --ntasks, which differs when srun -n asks for fewer tasks than the job has.
constexpr Vars slurm{"slurm", "SLURM_PROCID", {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}, false};

bool present(const Env& env, const Vars& v) {
  if (env(v.rank)) return true;
  if (!v.size_alone_counts) return false;
  for (auto s : v.size) {
    if (!s.empty() && env(s)) return true;
  }
  return false;
}

LaunchInfo read(const Env& env, const Vars& v) {
  const auto rank = env(v.rank);
  std::optional<std::string> size;
  std::string_view size_name;
  for (auto s : v.size) {
    if (s.empty()) continue;
    if ((size = env(s))) {
      size_name = s;
      break;
    }
  }
  const std::string who(v.launcher);
  if (!rank) {
    throw Error(std::string(v.size[0]) + " is set but " + std::string(v.rank) +
                " is not: incomplete " + who + " environment");
  }
  if (!size) {
    std::string names(v.size[0]);
    if (!v.size[1].empty()) names += " (or " + std::string(v.size[1]) + ")";
    throw Error(std::string(v.rank) + " is set but " + names + " is not: incomplete " + who +
                " environment");
  }
  LaunchInfo info;
  info.launcher = who;
  info.rank = parse_count(v.rank, *rank, who);
  info.size = parse_count(size_name, *size, who);
  if (info.size == 0) {
    throw Error(std::string(size_name) + "=0 (set by " + who + "): a run needs at least one process");
  }
  if (info.rank >= info.size) {
    throw Error(std::string(v.rank) + "=" + *rank + " is not below " + std::string(size_name) + "=" +
                *size + " (set by " + who + ")");
  }
  const auto nodename = env("SLURMD_NODENAME");
  info.node = nodename && !nodename->empty() ? *nodename : local_hostname();
  if (&v == &slurm) {
    if (const auto job = env("SLURM_JOB_ID")) {
      info.job_id = *job;
      const auto step = env("SLURM_STEP_ID") ? env("SLURM_STEP_ID") : env("SLURM_STEPID");
      if (step) info.job_id += "." + *step;
    }
  } else if (const auto ns = env("PMIX_NAMESPACE")) {
    info.job_id = *ns;
  } else if (const auto job = env("PMI_JOBID")) {
    info.job_id = *job;
  }
  return info;
}

}  // namespace

Env process_env() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

Env map_env(std::map<std::string, std::string, std::less<>> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string local_hostname() {
  std::array<char, HOST_NAME_MAX + 1> buf{};
  if (gethostname(buf.data(), buf.size() - 1) != 0 || buf[0] == '\0') return "localhost";
  return std::string(buf.data());
}

std::optional<LaunchInfo> detect_launcher(const Env& env) {
  if (const auto forced = env("FLOWD_LAUNCHER"); forced && !forced->empty()) {
    if (*forced == "none") return std::nullopt;
    for (const Vars* v : {&openmpi, &pmi, &slurm}) {
      if (*forced != v->launcher) continue;
      if (!present(env, *v)) {
        throw Error("FLOWD_LAUNCHER=" + *forced + " but " + std::string(v->rank) + " is not set");
      }
      return read(env, *v);
    }
    throw Error("FLOWD_LAUNCHER='" + *forced + "' is not one of none, slurm, openmpi, pmi");
  }
  for (const Vars* v : {&openmpi, &pmi, &slurm}) {
    if (present(env, *v)) return read(env, *v);
  }
  return std::nullopt;
}

}  // namespace flowd::net::cluster
