#!/usr/bin/env bash
# Two tests on the SDK example plugin (docs/examples/brightness-plugin):
#   build  install flowd into a scratch prefix, build the plugin against the
#          installed package (out of tree) and run it in a workflow;
#   swap   rebuild the same .so as a new version and check that the unchanged
#          engine picks it up (new version, new default, different output).
#   out_of_tree.sh build|swap BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
mode=$1 build=$2 src=$3 work=$4
example="$src/docs/examples/brightness-plugin"
flowd="$work/prefix/bin/flowd"
so="$work/ext/flowd-brightness.so"
export FLOWD_CACHE_DIR="$work/cache"
unset FLOWD_PLUGIN_PATH

step() { echo "== $*"; }

build_and_run() {
  rm -rf "$work"
  mkdir -p "$work"
  step "install flowd into $work/prefix"
  cmake --install "$build" --prefix "$work/prefix" >/dev/null
  test -x "$flowd"
  test -f "$work/prefix/include/flowd/flowd.hpp"
  # (grep reads everything: with -q it would exit at the first match and the
  # writer, under pipefail, would fail on SIGPIPE once the listing is long)
  "$flowd" plugins | grep "image.gaussian" >/dev/null  # the installed binary finds the installed plugins

  step "build the example plugin against the installed package (version 1.0.0)"
  cmake -S "$example" -B "$work/ext" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
    -DEXAMPLE_VERSION=1.0.0 -DEXAMPLE_DEFAULT_GAIN=1.5 >/dev/null
  cmake --build "$work/ext" >/dev/null
  test -f "$so"
  "$flowd" inspect example.brightness -P "$so" > "$work/inspect1.txt"
  grep -q "example 1.0.0" "$work/inspect1.txt"
  grep -q "default 1.5" "$work/inspect1.txt"

  step "run the example workflow with it"
  (cd "$work" && "$flowd" run "$example/workflow.json" -P "$so" --set output=run1 --no-progress)
  ls "$work/run1"/*.png >/dev/null
  echo "OK: an out-of-tree plugin ran in a workflow without rebuilding the engine"
}

swap() {
  test -f "$so" || { echo "swap needs the out_of_tree_plugin test's build in $work" >&2; exit 1; }
  step "rebuild the same .so as version 2.0.0 with another default gain"
  cmake -S "$example" -B "$work/ext" -DEXAMPLE_VERSION=2.0.0 -DEXAMPLE_DEFAULT_GAIN=3.0 >/dev/null
  cmake --build "$work/ext" >/dev/null
  "$flowd" inspect example.brightness -P "$so" > "$work/inspect2.txt"
  grep -q "example 2.0.0" "$work/inspect2.txt"
  grep -q "default 3.0" "$work/inspect2.txt"

  step "run the same workflow again"
  (cd "$work" && "$flowd" run "$example/workflow.json" -P "$so" --set output=run2 --no-progress)
  for f in "$work/run1"/*.png; do
    if cmp -s "$f" "$work/run2/$(basename "$f")"; then
      echo "FAIL: $(basename "$f") did not change after the plugin was rebuilt" >&2
      exit 1
    fi
  done
  echo "OK: the engine picked up the rebuilt plugin without being rebuilt"
}

case "$mode" in
  build) build_and_run ;;
  swap) swap ;;
  *) echo "usage: $0 build|swap BUILD_DIR SOURCE_DIR WORK_DIR" >&2; exit 1 ;;
esac
