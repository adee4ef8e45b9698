#!/usr/bin/env bash
# The Constellation label experiment in miniature (docs/benchmarks.md §7;
# the Constellation paper, Maassen et al.: 1942 / 1721 / 1774 / 1416 s for anywhere,
# anywhere sorted by size, location sorted, location sorted + anywhere).
#
# Four sites, one worker node each (--label site:X, one thread), joined by
# an emulated slow link (--emulate-link-mb-s: a pull from another node takes
# at least bytes / rate). The data of each site is uneven (a: 24 items, b: 12,
# c and d: 6) and is loaded where it lives (stage in_X runs only at site X,
# making a 2 MB array); then compare_X works on it for 20 + 16 i ms (item i).
# The runs differ only in labels, order and options, never code:
#   anywhere          compare_X has no labels; items in ascending size;
#                     placement blind to where data is (--locality off), as
#                     in the paper
#   anywhere sorted   the same, largest items first
#   location sorted   compare_X labels {"all": ["site:X"]}, largest first
#   location+anywhere compare_X labels {"prefer": ["site:X"], "anywhere": true}, largest first
#   anywhere, flowd   no labels, largest first, flowd's default placement
#                     (--locality on: a node gets the tasks whose inputs it holds first)
# usage: tools/bench/constellation.sh [BUILD_DIR] [REPEATS] [LINK_MB_S]
set -euo pipefail
build=${1:-build}
reps=${2:-3}
link=${3:-5}
flowd=$(realpath "$build/bin/flowd")
work=$(mktemp -d)
trap 'rm -rf "$work"; kill $(jobs -p) 2>/dev/null || true' EXIT
export FLOWD_PLUGIN_PATH=$(realpath "$build/test-plugins/testops") FLOWD_CACHE_DIR=$work/cache

workflow() {  # compare_labels_json reverse
  local labels=$1 reverse=$2 stages="" comma=""
  for site in a b c d; do
    case $site in a) n=24 ;; b) n=12 ;; *) n=6 ;; esac
    local compare_labels=${labels//SITE/$site}
    stages+="$comma
  \"src_$site\": {\"op\": \"test.count\", \"params\": {\"count\": $n, \"prefix\": \"$site\", \"reverse\": $reverse}},
  \"in_$site\": {\"op\": \"test.step\", \"inputs\": {\"in\": \"src_$site.out\"}, \"labels\": [\"site:$site\"],
               \"params\": {\"emit_bytes\": 2000000}},
  \"compare_$site\": {\"op\": \"test.step\", \"inputs\": {\"in\": \"in_$site.out\"}, $compare_labels
                    \"params\": {\"sleep_ms\": 20, \"sleep_per_i_ms\": 16}},
  \"out_$site\": {\"op\": \"test.record\", \"inputs\": {\"in\": \"compare_$site.out\"}, \"params\": {\"path\": \"$work/out_$site.txt\"}}"
    comma=","
  done
  echo "{\"version\": 1, \"name\": \"constellation\", \"stages\": {$stages}}"
}

run_once() {  # workflow file, locality -> wall seconds
  local port=$((20000 + RANDOM % 20000))
  local t0 t1
  t0=$(date +%s.%N)
  "$flowd" run "$1" --listen "tcp://127.0.0.1:$port" --expect 4 --gpu none --no-progress --no-perf-model -q \
    --max-in-flight 64 --locality "$2" >/dev/null &
  local coord=$!
  for site in a b c d; do
    "$flowd" worker --connect "tcp://127.0.0.1:$port" --label "site:$site" --name "site-$site" --cpus 1 --gpu none \
      --lookahead 0 --emulate-link-mb-s "$link" -q >/dev/null 2>&1 &
  done
  wait "$coord"
  wait
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "# machine: $(nproc) cores; $(date -u +%Y-%m-%d); link ${link} MB/s; median of $reps"
echo "| placement | wall s | vs anywhere |"
echo "|---|---|---|"
base=""
for config in "anywhere||false|off" "anywhere sorted||true|off" \
              "location sorted|\"labels\": {\"all\": [\"site:SITE\"]},|true|on" \
              "location sorted + anywhere|\"labels\": {\"prefer\": [\"site:SITE\"], \"anywhere\": true},|true|on" \
              "anywhere sorted, flowd locality||true|on"; do
  IFS='|' read -r name labels reverse locality <<<"$config"
  workflow "$labels" "$reverse" >"$work/wf.json"
  t=$(for _ in $(seq "$reps"); do run_once "$work/wf.json" "$locality"; done | median)
  [ -z "$base" ] && base=$t
  printf '| %s | %.2f | %+.0f %% |\n' "$name" "$t" "$(echo "100 * ($t - $base) / $base" | bc -l)"
done
