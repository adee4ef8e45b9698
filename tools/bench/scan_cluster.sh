#!/usr/bin/env bash
# The cluster rows of the scan paper's mock-operator experiment (§11.3): the
# hierarchical scan over worker processes as ranks, their threads as lanes,
# static (equal shares) against work stealing, through the flowd binary. The
# operator only sleeps (bench.mock_scan: mean T_MS, constant or exponential
# times from std::mt19937 seeded 1410, one draw per application), so 64
# lanes fit on two cores. What is timed is the scan itself, as the run's log
# line gives it ("scan of N elements: ..., S s"), not process start.
# Prints, per configuration, the median seconds of REPEATS runs of each
# strategy (interleaved) and their ratio.
# usage: tools/bench/scan_cluster.sh [BUILD_DIR] [REPEATS] [N] [T_MS] [TIMES] [CONFIGS]
#   CONFIGS: space-separated RANKSxLANES, default "1x8 2x4 4x2 1x16 2x8 4x4 1x32 2x16 4x8 1x64 2x32 4x16"
set -euo pipefail
build=${1:-build}
reps=${2:-3}
n=${3:-512}
t_ms=${4:-1}
times=${5:-exponential}
configs=${6:-"1x8 2x4 4x2 1x16 2x8 4x4 1x32 2x16 4x8 1x64 2x32 4x16"}
flowd=$build/bin/flowd
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export FLOWD_PLUGIN_PATH=$build/bench-plugins FLOWD_CACHE_DIR=$work/cache

workflow() {  # strategy
  cat <<JSON
{"version": 1, "name": "scan-mock", "stages": {
  "series": {"op": "bench.series", "params": {"count": $n}},
  "scan": {"op": "bench.mock_scan", "strategy": "$1", "inputs": {"in": "series.out"},
           "params": {"t_ms": $t_ms, "times": "$times"}}}}
JSON
}
workflow static-hierarchical > "$work/static.json"
workflow work-stealing > "$work/ws.json"

# Seconds of the scan in one run.
scan_seconds() {  # workflow ranks lanes
  local log=$work/run.log
  if ! "$flowd" run "$1" --workers "$2" --worker-cpus "$3" --cpu 1 --no-progress --no-perf-model >"$log" 2>&1; then
    cat "$log" >&2
    exit 1
  fi
  sed -n 's/.*scan of [0-9]* elements: .*, \([0-9.]*\) s.*/\1/p' "$log" | tail -1
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

echo "n=$n t_ms=$t_ms times=$times repeats=$reps"
printf '%-12s %8s %12s %12s %8s\n' ranks_x_lanes workers static_s stealing_s ratio
for c in $configs; do
  ranks=${c%x*}
  lanes=${c#*x}
  s=() w=()
  for _ in $(seq "$reps"); do
    s+=("$(scan_seconds "$work/static.json" "$ranks" "$lanes")")
    w+=("$(scan_seconds "$work/ws.json" "$ranks" "$lanes")")
  done
  ms=$(printf '%s\n' "${s[@]}" | median)
  mw=$(printf '%s\n' "${w[@]}" | median)
  printf '%-12s %8s %12.4f %12.4f %7.2fx\n' "${ranks}x${lanes}" "$((ranks * lanes))" "$ms" "$mw" "$(echo "$ms / $mw" | bc -l)"
done
