#!/usr/bin/env bash
# Cluster runtime benchmarks (docs/benchmarks.md §7), through the flowd
# binary on this machine, with sleep-based tasks so two cores are not the
# limit:
#   scaling: 1, 2, 4, 8 local worker processes (one thread each) on a
#            pipeline of S sleep tasks; efficiency = T1 / (N * TN);
#   steal:   8 slow tasks (410 ms) emitted first, then 60 of 10 ms, on 4
#            workers that each queue 6 tasks ahead: the first node to ask
#            takes most slow tasks into its queue (an imbalance no later
#            assignment can undo); with and without stealing.
# usage: tools/bench/cluster.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
build=${1:-build}
reps=${2:-3}
flowd=$build/bin/flowd
plugins=$build/test-plugins/testops
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export FLOWD_PLUGIN_PATH=$plugins FLOWD_CACHE_DIR=$work/cache

pipeline() {  # count sleep_ms slow_from slow_ms reverse
  cat <<JSON
{"version": 1, "name": "bench", "stages": {
  "src": {"op": "test.count", "params": {"count": $1, "reverse": ${5:-false}}},
  "step": {"op": "test.step", "inputs": {"in": "src.out"},
           "params": {"sleep_ms": $2, "slow_from": $3, "slow_ms": $4}},
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
pipeline 96 50 -1 0 >"$work/scale.json"
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

echo "## steal: 68 tasks (8 x 410 ms first, then 60 x 10 ms), 4 workers x 1 thread, 6 queued ahead, median of $reps"
pipeline 68 10 60 400 true >"$work/steal.json"
echo "| | wall s |"
echo "|---|---|"
for s in off on; do
  t=$(seconds "$work/steal.json" --workers 4 --worker-cpus 1 --worker-lookahead 6 --steal "$s")
  printf '| steal %s | %.2f |\n' "$s" "$t"
done
