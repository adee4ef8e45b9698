#!/usr/bin/env bash
# docs/cluster.md's Slurm batch script under a real one-node Slurm (munged,
# slurmctld and slurmd started here, in a temporary folder, on ports of this
# test's own network namespace), submitted with sbatch --wait as 3 tasks on
# the machine's cores: the labels equal one process's.
set -euo pipefail
source "${BASH_SOURCE[0]%/*}/common.sh"
for cmd in munged slurmctld slurmd sbatch srun sinfo; do
  command -v "$cmd" >/dev/null ||
    skip "$cmd not found (tools/install-deps.sh --launchers installs slurm-wlm and munge)"
done
enter_namespaces "$@"
setup_common "$@"
# Slurm resolves its own addresses with AI_ADDRCONFIG, which counts no
# 127.0.0.0/8 address: one more address on loopback, inside this namespace.
ip addr add 10.213.0.1/32 dev lo

S=$WORK/slurm
mkdir -p "$S/munge" "$S/state" "$S/spool" "$S/log"
stop_daemons() {
  local f
  for f in "$S/slurmd.pid" "$S/slurmctld.pid" "$S/munge/munged.pid"; do
    [[ -s $f ]] && kill "$(cat "$f")" 2>/dev/null || true
  done
}
show_logs() {
  local f
  for f in "$S"/log/*.log; do echo "--- $f"; tail -n 15 "$f"; done
}
trap stop_daemons EXIT

dd if=/dev/urandom of="$S/munge/munge.key" bs=1024 count=1 status=none
chmod 0400 "$S/munge/munge.key"
munged --force --socket="$S/munge/socket" --key-file="$S/munge/munge.key" --pid-file="$S/munge/munged.pid" \
  --log-file="$S/log/munged.log" --seed-file="$S/munge/seed" || { show_logs; fail "munged did not start"; }

cat > "$S/slurm.conf" <<CONF
ClusterName=flowdtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$S/munge/socket
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
NodeName=flowdnode NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=flowd Nodes=flowdnode Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
export SLURM_CONF=$S/slurm.conf
slurmctld -f "$SLURM_CONF" -i || { show_logs; fail "slurmctld did not start"; }
slurmd -f "$SLURM_CONF" -N flowdnode || { show_logs; fail "slurmd did not start"; }
for _ in $(seq 150); do
  [[ $(sinfo -h -o '%T' 2>/dev/null) == idle ]] && break
  sleep 0.2
done
[[ $(sinfo -h -o '%T' 2>/dev/null) == idle ]] || { sinfo || true; show_logs; fail "the Slurm node never became idle"; }
echo "Slurm is up: $(sinfo -h -o '%P %D %C %T')"

doc_block slurm-batch "$DOC" > "$WORK/job.sh"
grep -q '^srun ' "$WORK/job.sh" || fail "no batch script found in $DOC"
reference_run

echo "== the documented batch script, 3 tasks on $(nproc) cores"
mkdir -p "$WORK/run"
write_workflow "$WORK/run"
rc=0
(cd "$WORK/run" && timeout 300 sbatch --wait --quiet --nodes=1 --ntasks=3 --cpus-per-task=1 --overcommit \
  --time=10 --output="$WORK/run/slurm-%j.out" "$WORK/job.sh") || rc=$?
out=$(ls "$WORK"/run/slurm-*.out 2>/dev/null | head -n 1)
[[ $rc -eq 0 ]] || { [[ -n $out ]] && tail -n 40 "$out"; show_logs; fail "sbatch --wait exited $rc"; }
grep -q 'rank 1 of 3 (slurm)' "$out" || fail "rank 1 did not run as a worker: $(tail -n 20 "$out")"
same_labels "$WORK/run"
[[ -z $(ls -A "$HOME/.flowd/keys") ]] || fail "the batch script left keys behind"

echo "== rank 0 fails: the step ends, no rank waits for it"
mkdir -p "$WORK/failed"
write_workflow "$WORK/failed"
echo "not a folder" > "$WORK/failed/results"  # rank 0 cannot write results/labels
start=$SECONDS
rc=0
(cd "$WORK/failed" && timeout 300 sbatch --wait --quiet --nodes=1 --ntasks=3 --cpus-per-task=1 --overcommit \
  --time=10 --output="$WORK/failed/slurm-%j.out" "$WORK/job.sh") || rc=$?
took=$((SECONDS - start))
out=$(ls "$WORK"/failed/slurm-*.out 2>/dev/null | head -n 1)
echo "sbatch ended $took s after submission, exit $rc"
[[ $rc -ne 0 ]] || fail "the job succeeded although rank 0 could not write its output"
# Far below --wait-workers (120 s), the longest any rank may wait.
((took < 90)) || fail "the step took $took s to end after rank 0 failed"
grep -q 'results' "$out" || fail "rank 0's error does not name the output: $(tail -n 20 "$out")"
flowd_ends_within 10
[[ $(cat "$WORK/failed/results") == "not a folder" ]] || fail "the failed job touched results"

stop_daemons
echo "PASSED"
