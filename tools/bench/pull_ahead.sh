#!/usr/bin/env bash
# A worker node pulling its next task's inputs while its thread computes
# (flowd worker --pull-ahead, docs/cluster.md "Runtime protocol" 4;
# docs/benchmarks.md §15.7).
#
# Two worker nodes of one thread each: node "a" makes N items of SIZE bytes
# (stage make, held to site:a), node "b" works on each for WORK ms (stage
# work, held to site:b), so every item crosses from a to b. The link is
# emulated (--emulate-link-mb-s: a pull takes at least bytes / rate, as a
# sleep), and the work is a sleep too: neither needs this machine's CPUs,
# so the figures show the overlap of pulling and computing alone, not how
# busy the machine was. Without pulling ahead each of b's tasks waits for
# its pull and then computes (N × (pull + work)); with it, the pull of the
# next runs during the work (about N × max(pull, work)).
#
# usage: tools/bench/pull_ahead.sh [BUILD_DIR] [REPEATS] [ITEMS] [ITEM_MB] [LINK_MB_S] [WORK_MS]
set -euo pipefail
build=${1:-build}
reps=${2:-5}
items=${3:-40}
item_mb=${4:-2}
link=${5:-50}
work_ms=${6:-40}
flowd=$(realpath "$build/bin/flowd")
work=$(mktemp -d)
trap 'rm -rf "$work"; kill $(jobs -p) 2>/dev/null || true' EXIT
export FLOWD_PLUGIN_PATH=$(realpath "$build/test-plugins/testops") FLOWD_CACHE_DIR=$work/cache

cat >"$work/wf.json" <<EOF
{"version": 1, "name": "pull-ahead",
 "stages": {
  "src": {"op": "test.count", "params": {"count": $items, "prefix": "x"}},
  "make": {"op": "test.step", "inputs": {"in": "src.out"}, "labels": ["site:a"],
           "params": {"emit_bytes": $((item_mb * 1000000))}},
  "work": {"op": "test.step", "inputs": {"in": "make.out"}, "labels": ["site:b"],
           "params": {"sleep_ms": $work_ms}},
  "out": {"op": "test.record", "inputs": {"in": "work.out"}, "params": {"path": "$work/out.txt"}}}}
EOF

run_once() {  # pull-ahead -> the run's own seconds ("outputs written in")
  local port=$((20000 + RANDOM % 20000))
  "$flowd" run "$work/wf.json" --listen "tcp://127.0.0.1:$port" --expect 2 --gpu none --no-progress --no-perf-model \
    >"$work/coord.log" 2>&1 &
  local coord=$!
  for site in a b; do
    "$flowd" worker --connect "tcp://127.0.0.1:$port" --label "site:$site" --name "site-$site" --cpus 1 --gpu none \
      --pull-ahead "$1" --emulate-link-mb-s "$link" -q >/dev/null 2>&1 &
  done
  wait "$coord"
  wait
  sed -n 's/.*outputs written in \([0-9.]*\)s.*/\1/p' "$work/coord.log"
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

pull_ms=$(echo "$item_mb * 1000 / $link" | bc -l)
echo "# machine: $(nproc) cores; $(date -u +%Y-%m-%d); $items items of $item_mb MB; link $link MB/s" \
  "(a pull $(printf '%.0f' "$pull_ms") ms); work $work_ms ms; median of $reps, runs alternating"
a=() b=()
for _ in $(seq "$reps"); do
  a+=("$(run_once 0)")
  b+=("$(run_once 1)")
done
t0=$(printf '%s\n' "${a[@]}" | median)
t1=$(printf '%s\n' "${b[@]}" | median)
echo "| pull-ahead | run s (median) | runs | per item ms | ratio to 0 |"
echo "|---:|---:|---|---:|---:|"
printf '| 0 | %.2f | %s | %.0f | 1.00 |\n' "$t0" "${a[*]}" "$(echo "1000 * $t0 / $items" | bc -l)"
printf '| 1 | %.2f | %s | %.0f | %.2f |\n' "$t1" "${b[*]}" "$(echo "1000 * $t1 / $items" | bc -l)" "$(echo "$t1 / $t0" | bc -l)"
