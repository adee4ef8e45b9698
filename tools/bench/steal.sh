#!/usr/bin/env bash
# Work stealing with and without (--steal on|off), through the flowd binary,
# with sleep-based tasks (test plugin test.step) so two cores are not the
# limit; one thread per worker process. For each workload: median wall
# seconds of REPEATS runs, and the steals of the last --steal on run as the
# run summary prints them ("N steals (M tasks moved)").
#   even:       64 tasks of 200 ms on 2 workers that queue 2 ahead: nothing
#               to balance (busy nodes used to steal each other's lookahead,
#               ~1200 tasks moved per run);
#   even-default: the same with the default lookahead (= threads);
#   uneven:     8 tasks of 810 ms emitted first, then 56 of 10 ms, on 2
#               workers that queue 4 ahead;
#   slow-first: 8 of 410 ms first, then 60 of 10 ms, 4 workers queueing 6
#               ahead (benchmarks.md §7.2);
#   deep:       48 tasks of 100 ms, 8 workers queueing 40 ahead: the first
#               node to ask takes nearly all of them.
# usage: tools/bench/steal.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
build=${1:-build}
reps=${2:-5}
flowd=$build/bin/flowd
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export FLOWD_PLUGIN_PATH=$build/test-plugins/testops FLOWD_CACHE_DIR=$work/cache

workflow() {  # count sleep_ms slow_from slow_ms reverse
  cat <<JSON
{"version": 1, "name": "steal", "stages": {
  "src": {"op": "test.count", "params": {"count": $1, "reverse": $5}},
  "step": {"op": "test.step", "inputs": {"in": "src.out"},
           "params": {"sleep_ms": $2, "slow_from": $3, "slow_ms": $4}},
  "out": {"op": "test.record", "inputs": {"in": "step.out"}, "params": {"path": "$work/out.txt"}}}}
JSON
}

# Median wall seconds of $reps runs; the last run's stderr stays in $work/last.log.
seconds() {
  local times=()
  for _ in $(seq "$reps"); do
    local t0 t1
    t0=$(date +%s.%N)
    "$flowd" run "$@" --gpu none --no-progress --no-perf-model 2>"$work/last.log" >/dev/null
    t1=$(date +%s.%N)
    times+=("$(echo "$t1 - $t0" | bc -l)")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

row() {  # name workflow-args -- run-args
  local name=$1
  shift
  workflow "$1" "$2" "$3" "$4" "$5" >"$work/$name.json"
  shift 5
  local on off steals
  on=$(seconds "$work/$name.json" "$@" --steal on)
  steals=$(grep -oE '[0-9]+ steals \([^)]*\)' "$work/last.log" || echo "?")
  off=$(seconds "$work/$name.json" "$@" --steal off)
  printf '| %s | %.2f | %.2f | %.2f | %s |\n' "$name" "$on" "$off" "$(echo "$on / $off" | bc -l)" "$steals"
}

echo "# machine: $(nproc) cores, $(uname -m); $(date -u +%Y-%m-%d); median of $reps"
echo "| workload | steal on s | steal off s | on/off | steals (last run) |"
echo "|---|---|---|---|---|"
row even 64 200 -1 0 false --workers 2 --worker-cpus 1 --worker-lookahead 2
row even-default 64 200 -1 0 false --workers 2 --worker-cpus 1
row uneven 64 10 56 800 true --workers 2 --worker-cpus 1 --worker-lookahead 4
row slow-first 68 10 60 400 true --workers 4 --worker-cpus 1 --worker-lookahead 6
row deep 48 100 -1 0 false --workers 8 --worker-cpus 1 --worker-lookahead 40
