# Shared by the launcher tests (sourced). They run the scripts of
# docs/cluster.md verbatim under real launchers, each test inside network,
# PID and mount namespaces of its own: all traffic stays on its loopback, and
# every daemon and rank it started dies with it.
#
#   usage: TEST.sh FLOWD_BINARY SOURCE_DIR WORK_DIR
# Exit 77 (ctest: skipped) when a launcher is missing or namespaces cannot be
# made, saying why.

skip() {
  echo "SKIPPED: $*" >&2
  exit 77
}

fail() {
  echo "FAILED: $*" >&2
  exit 1
}

# The fenced block after the line "<!-- launcher-test: NAME ..." in
# docs/cluster.md, so the documented script is the one that runs.
doc_block() {
  local name=$1 doc=$2
  awk -v marker="<!-- launcher-test: $name " '
    index($0, marker) == 1 { found = 1; next }
    found && !inside && /^```/ { inside = 1; next }
    inside && /^```/ { exit }
    inside { print }' "$doc"
}

# Re-runs this script inside new namespaces (once), with loopback up.
enter_namespaces() {
  if [[ ${FLOWD_LAUNCHER_TEST_NS:-} != 1 ]]; then
    [[ $EUID -eq 0 ]] || skip "needs root for its own network namespace (CI runs as root)"
    command -v unshare >/dev/null && command -v ip >/dev/null || skip "unshare or ip (util-linux, iproute2) missing"
    unshare --net --pid --fork --mount-proc true 2>/dev/null || skip "cannot create network/PID namespaces here"
    FLOWD_LAUNCHER_TEST_NS=1 exec unshare --net --pid --fork --mount-proc bash "$0" "$@"
  fi
  ip link set lo up
}

# A workflow.json in $1: the main job on generated slides small enough for a
# 2-core machine, big enough that the run takes a few seconds on 3 ranks.
write_workflow() {
  sed 's#"input": "[^"]*"#"input": "synthetic:hne?width=2048\&height=2048\&count=6\&seed=19"#' \
    "$SOURCE_DIR/workflows/nuclei.json" > "$1/workflow.json"
  grep -q 'count=6' "$1/workflow.json" || fail "could not set the input of $1/workflow.json"
}

# The labels of one process, the reference for every launcher run.
reference_run() {
  mkdir -p "$WORK/reference"
  write_workflow "$WORK/reference"
  (cd "$WORK/reference" && flowd run workflow.json --no-progress --quiet --set output=results/) ||
    fail "the single-process reference run failed"
}

# The labels of run folder $1 equal the reference's, image by image.
same_labels() {
  local got=$1/results/labels want=$WORK/reference/results/labels n=0
  [[ -d $got ]] || fail "$got is missing"
  for f in "$want"/*.png; do
    cmp -s "$f" "$got/$(basename "$f")" || fail "$got/$(basename "$f") differs from one process's"
    n=$((n + 1))
  done
  [[ $(ls "$got" | wc -l) -eq $n ]] || fail "$got holds other files than the reference's $n"
  echo "labels of $n images equal one process's"
}

setup_common() {
  FLOWD=$(readlink -f "$1")
  SOURCE_DIR=$(readlink -f "$2")
  WORK=$3
  DOC=$SOURCE_DIR/docs/cluster.md
  rm -rf "$WORK"
  mkdir -p "$WORK/home"
  export PATH=$(dirname "$FLOWD"):$PATH
  export HOME=$WORK/home
  export FLOWD_CACHE_DIR=$WORK/cache
  # Workers connect to what rank 0 advertises: its loopback here.
  export FLOWD_ADVERTISE=127.0.0.1
}

# Live flowd processes in this test's PID namespace (zombies excluded: they
# have ended, and only wait for this script, PID 1 here, to reap them).
live_flowd() {
  local p
  for p in $(pgrep -x flowd); do
    [[ $(ps -o stat= -p "$p" 2>/dev/null) == Z* ]] || echo "$p"
  done
}

# Every flowd process ends within $1 seconds, or the test fails naming them.
flowd_ends_within() {
  local left
  for _ in $(seq $(($1 * 10))); do
    left=$(live_flowd)
    [[ -z $left ]] && return 0
    sleep 0.1
  done
  fail "flowd processes still running $1 s after the job ended: $(ps -o pid=,args= -p "$(echo $left | tr ' ' ,)")"
}
