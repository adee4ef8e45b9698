#!/usr/bin/env bash
# Sets up flowd on a Debian machine (dependencies, Release build) and then
#   run    runs the main job, workflows/nuclei.json, on generated data -> out/nuclei/
#   test   runs every test (ctest)
#   build  stops after the build
# The build directory is build/ (FLOWD_BUILD_DIR to change it).
set -euo pipefail
cd "$(dirname "$0")/.."

what=${1:-build}
case "$what" in run|test|build) ;; *) echo "usage: $0 run|test|build" >&2; exit 1 ;; esac

# The tests render an HTML report in headless Chromium, run the documented
# srun/mpirun scripts under real Slurm and Open MPI, and run a few iterations
# of the nuclei network's training, so they install those.
if [[ $what == test ]]; then tools/install-deps.sh --report --launchers --train; else tools/install-deps.sh; fi
build=${FLOWD_BUILD_DIR:-build}
jobs=$(nproc)
# CI (CI=true) runs `test` on a 2-core machine within 30 minutes: the
# benchmark drivers (tools/bench), which no test needs, are left out there.
bench=ON
[[ $what == test && ${CI:-} == true ]] && bench=OFF
# A unity build (CMakeLists.txt says why): this script builds everything once.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLOWD_BUILD_BENCH=$bench -DFLOWD_UNITY_BUILD=ON >/dev/null
# The main job needs the flowd binary and the shipped plugins (the H&E
# generator is linked into the io plugin); `run` also builds the small
# command-line tools of docs/tools.md (generators, flowd-score). The tests
# and benchmarks are built only for `test` and `build`.
case "$what" in
  run) cmake --build "$build" -j "$jobs" --target flowd flowd_plugins flowd_tools ;;
  *) cmake --build "$build" -j "$jobs" ;;
esac

case "$what" in
  run) exec "$build/bin/flowd" run workflows/nuclei.json ;;
  test) exec ctest --test-dir "$build" --output-on-failure -j "$jobs" ;;
  build) ;;
esac
