#!/usr/bin/env bash
# The all-pairs pattern across worker processes (issue 15, docs/benchmarks.md
# §13.4): workflows/prnu-allpairs.json on generated photos, in one process
# and on N worker processes of one CPU each, with and without the peer cache.
# What is timed is the all-pairs stage as its log line gives it ("..., S s;
# R = ..."), not process start or the generator. Runs are interleaved
# (one of each configuration per round); prints each configuration's median
# seconds, R, items from the peer cache and peers asked in vain.
# usage: tools/bench/allpairs_cluster.sh [BUILD_DIR] [REPEATS] [IMAGES_PER_CAMERA] [CONFIGS]
#   CONFIGS: space-separated; "local:K" = one process, K CPU workers;
#   "N:on" / "N:off" = N worker processes (1 CPU each), peer cache on / off.
set -euo pipefail
build=${1:-build}
reps=${2:-3}
per_camera=${3:-20}
configs=${4:-"local:1 local:2 1:on 2:on 2:off 4:on 4:off"}
flowd=$(realpath "$build/bin/flowd")
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export FLOWD_PLUGIN_PATH=$(realpath "$build/lib/flowd/plugins")
export FLOWD_CACHE_DIR=${FLOWD_CACHE_DIR:-$work/cache}  # the generated photos: made once per cache
images="synthetic:prnu?cameras=4&flatfields=1&images=$per_camera&width=2048&height=1536&seed=3&part=images"

# "S R peer_hits peer_misses efficiency%" of one run.
one_run() {  # config
  local log=$work/run.log args=()
  case $1 in
    local:*) args=(--cpu "${1#local:}") ;;
    *:on) args=(--workers "${1%:on}" --worker-cpus 1 --cpu 1 --set peer_cache=true) ;;
    *:off) args=(--workers "${1%:off}" --worker-cpus 1 --cpu 1 --set peer_cache=false) ;;
  esac
  if ! "$flowd" run "$root/workflows/prnu-allpairs.json" --set images="$images" --set output="$work/out" \
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

one_run local:2 >/dev/null  # generates the photos once (not timed)
declare -A got
for _ in $(seq "$reps"); do
  for c in $configs; do got[$c]+="$(one_run "$c")"$'\n'; done
done
echo "n=$((4 * per_camera)) photos 2048x1536, crop 512, wavelet; repeats=$reps; $(nproc) cores"
printf '%-10s %10s %6s %10s %12s %11s\n' config stage_s R peer_hits peer_misses efficiency
for c in $configs; do
  col() { printf '%s' "${got[$c]}" | awk -v k="$1" 'NF {print $k}' | median; }
  printf '%-10s %10.3f %6.2f %10s %12s %10s%%\n' "$c" "$(col 1)" "$(col 2)" "$(col 3)" "$(col 4)" "$(col 5)"
done
