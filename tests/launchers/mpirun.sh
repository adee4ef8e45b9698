#!/usr/bin/env bash
# docs/cluster.md's flowd-mpirun.sh under Open MPI's mpirun, 3 ranks on one
# machine: the labels equal one process's; a worker rank killed mid-run ends
# the job with no output, and the next run in that folder is whole.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/common.sh"
command -v mpirun >/dev/null || skip "mpirun not found (tools/install-deps.sh --launchers installs openmpi-bin)"
enter_namespaces "$@"
setup_common "$@"

doc_block mpirun "$DOC" > "$WORK/flowd-mpirun.sh"
grep -q '^mpirun ' "$WORK/flowd-mpirun.sh" || fail "no mpirun script found in $DOC"
chmod +x "$WORK/flowd-mpirun.sh"
reference_run

mpi_args=(-np 3 --oversubscribe --allow-run-as-root)

echo "== the documented command, 3 ranks"
mkdir -p "$WORK/run"
write_workflow "$WORK/run"
rc=0
(cd "$WORK/run" && timeout 240 "$WORK/flowd-mpirun.sh" "${mpi_args[@]}") > "$WORK/run/log" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { tail -n 40 "$WORK/run/log"; fail "flowd-mpirun.sh exited $rc"; }
grep -q 'rank 1 of 3 (openmpi)' "$WORK/run/log" || fail "rank 1 did not run as a worker: $(tail -n 20 "$WORK/run/log")"
same_labels "$WORK/run"
[[ -z $(ls -A "$HOME/.flowd/keys") ]] || fail "the script left keys behind"

echo "== a worker rank killed mid-run"
mkdir -p "$WORK/killed"
write_workflow "$WORK/killed"
(cd "$WORK/killed" && exec timeout 240 "$WORK/flowd-mpirun.sh" "${mpi_args[@]}") > "$WORK/killed/log" 2>&1 &
job=$!
rank_pid() {  # the flowd process of rank $1 (this PID namespace holds only this test)
  local p
  for p in $(pgrep -x flowd); do
    tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && { echo "$p"; return; }
  done
}
for _ in $(seq 600); do
  grep -q "objects from" "$WORK/killed/log" 2>/dev/null && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
victim=$(rank_pid 2)
[[ -n $victim ]] || { tail -n 30 "$WORK/killed/log"; fail "rank 2 was not running when the first image was done"; }
kill -KILL "$victim"
start=$SECONDS
rc=0
wait "$job" || rc=$?
echo "mpirun ended $((SECONDS - start)) s after the kill, exit $rc"
[[ $rc -ne 0 ]] || fail "the job succeeded although rank 2 was killed"
[[ $rc -ne 124 ]] || fail "the job hung after rank 2 was killed"
flowd_ends_within 10
visible=$(find "$WORK/killed/results" -type f ! -name '.*' 2>/dev/null || true)
[[ -z $visible ]] || fail "a killed job left outputs: $visible"
echo "no output written; temporaries left for the next run: $(find "$WORK/killed/results" -name '.*flowd-tmp*' 2>/dev/null | wc -l)"

echo "== the next run in the same folder"
rc=0
(cd "$WORK/killed" && timeout 240 "$WORK/flowd-mpirun.sh" "${mpi_args[@]}") > "$WORK/killed/log2" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { tail -n 40 "$WORK/killed/log2"; fail "the run after the killed one exited $rc"; }
same_labels "$WORK/killed"
left=$(find "$WORK/killed/results" -name '.*flowd-tmp*')
[[ -z $left ]] || fail "temporaries remain after the next run: $left"
echo "PASSED"
