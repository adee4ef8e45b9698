#!/usr/bin/env bash
# The all-pairs pattern across worker processes (issue 15, docs/benchmarks.md
# §13.4; cvtree: issue 16, §14): workflows/prnu-allpairs.json on generated
# photos (or workflows/cvtree.json on generated proteomes), in one process
# and on N worker processes of one CPU each, with and without the peer cache.
# What is timed is the all-pairs stage as its log line gives it ("..., S s;
# R = ..."), not process start or the generator. Runs are interleaved
# (one of each configuration per round); prints each configuration's median
# seconds, R, items from the peer cache and peers asked in vain.
# usage: tools/bench/allpairs_cluster.sh [BUILD_DIR] [REPEATS] [SIZE] [CONFIGS]
#   SIZE: photos per camera (4 cameras), or with APPLICATION=cvtree the
#   number of proteomes (workflows/cvtree.json on generated proteomes of
#   CVTREE_PROTEINS proteins, default 1000, k = 5).
#   CONFIGS: space-separated; "local:K" = one process, K CPU workers;
#   "N:on" / "N:off" = N worker processes (1 CPU each), peer cache on / off;
#   a suffix "/C" sets cache_items=C (e.g. "local:2/50").
set -euo pipefail
build=${1:-build}
reps=${2:-3}
size=${3:-20}
configs=${4:-"local:1 local:2 1:on 2:on 2:off 4:on 4:off"}
application=${APPLICATION:-prnu}
flowd=$(realpath "$build/bin/flowd")
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export FLOWD_PLUGIN_PATH=$(realpath "$build/lib/flowd/plugins")
export FLOWD_CACHE_DIR=${FLOWD_CACHE_DIR:-$work/cache}  # the generated photos: made once per cache
case $application in
  prnu)
    workflow=$root/workflows/prnu-allpairs.json
    input=(--set "images=synthetic:prnu?cameras=4&flatfields=1&images=$size&width=2048&height=1536&seed=3&part=images")
    what="n=$((4 * size)) photos 2048x1536, crop 512, wavelet" ;;
  cvtree)
    workflow=$root/workflows/cvtree.json
    input=(--set "input=synthetic:cvtree?proteomes=$size&proteins=${CVTREE_PROTEINS:-1000}&seed=3&part=proteomes")
    what="n=$size proteomes of ${CVTREE_PROTEINS:-1000} proteins, k = 5" ;;
  *) echo "APPLICATION must be prnu or cvtree" >&2; exit 2 ;;
esac

# "S R peer_hits peer_misses efficiency%" of one run.
one_run() {  # config
  local log=$work/run.log args=() config=${1%%/*}
  [[ $1 == */* ]] && args+=(--set "cache_items=${1#*/}")
  case $config in
    local:*) args+=(--cpu "${config#local:}") ;;
    *:on) args+=(--workers "${config%:on}" --worker-cpus 1 --cpu 1 --set peer_cache=true) ;;
    *:off) args+=(--workers "${config%:off}" --worker-cpus 1 --cpu 1 --set peer_cache=false) ;;
  esac
  rm -rf "$work/out"
  if ! "$flowd" run "$workflow" "${input[@]}" --set output="$work/out" \
      "${args[@]}" --no-progress --no-perf-model >"$log" 2>&1; then
    cat "$log" >&2
    exit 1
  fi
  local line
  line=$(grep '\[compare\] all-pairs of' "$log" | tail -1)
  local s r ph pm eff
  s=$(sed -n 's/.* lanes, \([0-9.]*\) s; R = .*/\1/p' <<<"$line")
  r=$(sed -n 's/.*; R = \([0-9.]*\) .*/\1/p' <<<"$line")
  ph=$(sed -n 's/.*: \([0-9]*\) items from the peer cache.*/\1/p' <<<"$line")
  pm=$(sed -n 's/.*, \([0-9]*\) peers asked.*/\1/p' <<<"$line")
  eff=$(sed -n 's/.*efficiency \([0-9]*\)% of T_min.*/\1/p' <<<"$line")
  echo "$s $r ${ph:-0} ${pm:-0} $eff"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

one_run local:2 >/dev/null  # generates the data once (not timed)
declare -A got
for _ in $(seq "$reps"); do
  for c in $configs; do got[$c]+="$(one_run "$c")"$'\n'; done
done
echo "$what; repeats=$reps; $(nproc) cores"
printf '%-10s %10s %6s %10s %12s %11s\n' config stage_s R peer_hits peer_misses efficiency
for c in $configs; do
  col() { printf '%s' "${got[$c]}" | awk -v k="$1" 'NF {print $k}' | median; }
  printf '%-10s %10.3f %6.2f %10s %12s %10s%%\n' "$c" "$(col 1)" "$(col 2)" "$(col 3)" "$(col 4)" "$(col 5)"
done
