#!/usr/bin/env bash
# Cluster runtime benchmarks (docs/benchmarks.md §7), through the flowd
# binary on this machine, with sleep-based tasks so two cores are not the
# limit:
#   scaling: 1, 2, 4, 8 local worker processes (one thread each) on a
#            pipeline of S sleep tasks; efficiency = T1 / (N * TN);
#   steal:   uneven tasks (task i sleeps i * 4 ms, largest last) on 4 workers
#            that each queue 3 tasks ahead, with and without stealing.
# usage: tools/bench/cluster.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
build=${1:-build}
reps=${2:-3}
flowd=$build/bin/flowd
plugins=$build/test-plugins/testops
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export FLOWD_PLUGIN_PATH=$plugins FLOWD_CACHE_DIR=$work/cache

pipeline() {  # count sleep_ms sleep_per_i_ms
  cat <<JSON
{"version": 1, "name": "bench", "stages": {
  "src": {"op": "test.count", "params": {"count": $1}},
  "step": {"op": "test.step", "inputs": {"in": "src.out"}, "params": {"sleep_ms": $2, "sleep_per_i_ms": $3}},
  "out": {"op": "test.record", "inputs": {"in": "step.out"}, "params": {"path": "$work/out.txt"}}}}
JSON
}

seconds() {  # args...: median wall seconds of $reps runs
  local times=()
  for _ in $(seq "$reps"); do
    local t0 t1
    t0=$(date +%s.%N)
    "$flowd" run "$@" --gpu none --no-progress --no-perf-model -q >/dev/null
    t1=$(date +%s.%N)
    times+=("$(echo "$t1 - $t0" | bc -l)")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

echo "# machine: $(nproc) cores, $(uname -m); $(date -u +%Y-%m-%d)"
echo "## scaling: 96 tasks x 50 ms (4.8 s of sleep), median of $reps"
pipeline 96 50 0 >"$work/scale.json"
t1=""
echo "| worker processes | wall s | speedup | efficiency | one process, N threads: wall s |"
echo "|---|---|---|---|---|"
for n in 1 2 4 8; do
  t=$(seconds "$work/scale.json" --workers "$n" --worker-cpus 1)
  local_t=$(seconds "$work/scale.json" --cpu "$n")
  [ -z "$t1" ] && t1=$t
  printf '| %d | %.2f | %.2f | %.0f %% | %.2f |\n' "$n" "$t" "$(echo "$t1 / $t" | bc -l)" \
    "$(echo "100 * $t1 / ($n * $t)" | bc -l)" "$local_t"
done

echo "## steal: 48 tasks, task i sleeps 4i ms (4.5 s in all, largest last), 4 workers x 1 thread, 3 queued ahead, median of $reps"
pipeline 48 0 4 >"$work/steal.json"
for s in off on; do
  t=$(seconds "$work/steal.json" --workers 4 --worker-cpus 1 --worker-lookahead 3 --steal "$s")
  printf '| steal %s | %.2f s |\n' "$s" "$t"
done
