#!/usr/bin/env bash
# What --resume saves (issue 38 item 6; docs/benchmarks.md §18): the virtual
# microscope (workflows/virtual-microscope.json, FACTOR 1 as the issue ran it) on IMAGES H&E
# images of SIZE² PNG files, 16 tiles each. Each round: a fresh run, a fresh
# run with --journal (what a resumable run costs), then a journalled run
# killed (SIGKILL) once KILL_AT tiles are journalled as finished, and its
# --resume. Prints each run's own seconds ("outputs written in") and how
# many source items the resume skipped. Before issue 38 the source read and
# decoded every image again, so a resume saved only the subsampling (16.3 s
# against 17.6 s fresh, the issue's figures).
#
# usage: tools/bench/resume_saving.sh [BUILD_DIR] [ROUNDS] [IMAGES] [SIZE] [KILL_AT] [FACTOR]
# (FLOWD_PLUGIN_PATH may point at another build's plugins, for a before/after.)
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
images=${3:-10}
size=${4:-4096}
kill_at=${5:-64}
factor=${6:-1}
flowd=$(realpath "$build/bin/flowd")
wf=$(realpath "$(dirname "$0")/../../workflows/virtual-microscope.json")
work=$(mktemp -d)
trap 'rm -rf "$work"; kill $(jobs -p) 2>/dev/null || true' EXIT
export FLOWD_CACHE_DIR=$work/cache

"$build/bin/flowd-hne-synth" --out "$work/data" --count "$images" --size "${size}x${size}" >/dev/null
args=(--set "input=$work/data/images" --set factor=$factor --no-progress --no-perf-model)

seconds() { grep -o 'outputs written in [0-9.]*s' "$1" | grep -o '[0-9.]*' | head -1; }
finished() { [[ -f $1/journal.log ]] || { echo 0; return; }; grep -c ' finished:tiles ' "$1/journal.log" || true; }

printf 'round fresh_s journalled_s resumed_s skipped killed_at\n'
for r in $(seq 1 "$rounds"); do
  rm -rf "$work/out" "$work/j"
  "$flowd" "$wf" "${args[@]}" --set "output=$work/out" >"$work/fresh.log" 2>&1
  fresh=$(seconds "$work/fresh.log")
  rm -rf "$work/out"
  "$flowd" "$wf" "${args[@]}" --set "output=$work/out" --journal "$work/j" >"$work/journalled.log" 2>&1
  journalled=$(seconds "$work/journalled.log")
  rm -rf "$work/out" "$work/j"
  "$flowd" "$wf" "${args[@]}" --set "output=$work/out" --journal "$work/j" >"$work/killed.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 6000); do
    (($(finished "$work/j") >= kill_at)) && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  done_before=$(finished "$work/j")
  "$flowd" "$wf" "${args[@]}" --set "output=$work/out" --journal "$work/j" --resume >"$work/resumed.log" 2>&1
  resumed=$(seconds "$work/resumed.log")
  skipped=$(grep -o 'resuming: [0-9]* source items' "$work/resumed.log" | grep -o '[0-9]*' || echo 0)
  printf '%d %s %s %s %s %s\n' "$r" "$fresh" "$journalled" "$resumed" "$skipped" "$done_before"
done
