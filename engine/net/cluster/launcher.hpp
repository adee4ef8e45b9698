#pragma once
// Rank and size of this process from the launcher that started it.
//
// flowd has no cluster manager of its own: srun or mpirun place the
// processes, and each one learns from its environment who it is. Rank 0
// becomes the coordinator, every other rank a worker that connects to it.
//
// Precedence when several launchers' variables are present (first wins):
//   1. FLOWD_LAUNCHER=none|slurm|openmpi|pmi forces one (or none): the
//      escape hatch when the heuristics below guess wrong.
//   2. Open MPI (OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE).
//   3. PMI (PMI_RANK / PMI_SIZE: MPICH and Intel MPI's Hydra, srun --mpi=pmi2).
//   4. Slurm (SLURM_PROCID / SLURM_STEP_NUM_TASKS, else SLURM_NTASKS).
// MPI comes before Slurm because an mpirun started inside a Slurm
// allocation inherits the allocation's SLURM_* variables (SLURM_PROCID=0 of
// the batch step in every process), while the MPI variables describe the
// processes mpirun actually started; trusting Slurm there would make every
// process rank 0. When srun itself starts the ranks through PMI, both sets
// agree and the choice does not matter.
//
// Errors (flowd::Error) name the variable: a value that is not a plain
// non-negative decimal number, a size of 0, a rank not below the size, a
// rank without its size (or the reverse), an unknown FLOWD_LAUNCHER.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace flowd::net::cluster {

// Looks up one environment variable; nullopt when it is not set. Tests pass
// a map, the program passes process_env().
using Env = std::function<std::optional<std::string>(std::string_view name)>;

Env process_env();
Env map_env(std::map<std::string, std::string, std::less<>> vars);

struct LaunchInfo {
  std::string launcher;  // "slurm", "openmpi", "pmi"
  int rank = 0;
  int size = 1;
  std::string node;      // SLURMD_NODENAME under Slurm, else this host's name
  // Identifies this launch, to tell a current rendezvous file from one an
  // earlier run left behind: "SLURM_JOB_ID.SLURM_STEP_ID", PMIX_NAMESPACE
  // (Open MPI 5, or 4 with PMIx), PMI_JOBID; empty when the launcher gives
  // none.
  std::string job_id;

  bool is_coordinator() const noexcept { return rank == 0; }
};

// nullopt when no launcher started this process (a plain `flowd run`), or
// FLOWD_LAUNCHER=none.
std::optional<LaunchInfo> detect_launcher(const Env& env);

// gethostname(), or "localhost" when it fails.
std::string local_hostname();

}  // namespace flowd::net::cluster
