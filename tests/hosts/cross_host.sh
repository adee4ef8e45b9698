#!/usr/bin/env bash
# docs/cluster.md's by-hand commands across hosts (issue 18): a coordinator
# and two workers, each in a network namespace of its own (its own address,
# its own folder and keys) on a bridge, inside a network namespace of the
# test's, so every address below exists only here. Checked:
#   1. the nuclei workflow gives the single-process labels;
#   2. one worker's link down for 10 s, with --missed-heartbeats long enough
#      to ride it out: same labels, the worker never declared lost;
#   3. that link down for good: the worker is declared lost, its items are
#      made again, same labels;
#   4. a worker bound to loopback on another host is refused, naming why.
# FLOWD_HOSTS_RATE=100mbit shapes every host's link (tc tbf) for the
# benchmark in docs/benchmarks.md; FLOWD_HOSTS_ONLY=whole runs only case 1.
#
#   usage: cross_host.sh FLOWD_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../launchers/common.sh"
enter_namespaces "$@"
setup_common "$@"
unset FLOWD_ADVERTISE  # each host has its own address here

hosts=(coordinator node2 node3)
declare -A addr=([coordinator]=10.0.0.1 [node2]=10.0.0.2 [node3]=10.0.0.3)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for h in "${hosts[@]}"; do ip netns del "fh-$h" 2>/dev/null || true; done
}
trap cleanup EXIT

# The "switch": a bridge in this namespace, one veth to each host.
ip link add br0 type bridge || skip "cannot create a bridge here"
ip link set br0 up
for h in "${hosts[@]}"; do
  ip netns add "fh-$h" || skip "ip netns add failed (no /run/netns here?)"
  ip link add "v-$h" type veth peer name eth0 netns "fh-$h"
  ip link set "v-$h" master br0 up
  ip -n "fh-$h" addr add "${addr[$h]}/24" dev eth0
  ip -n "fh-$h" link set eth0 up
  ip -n "fh-$h" link set lo up
  if [[ -n ${FLOWD_HOSTS_RATE:-} ]]; then
    tc qdisc add dev "v-$h" root tbf rate "$FLOWD_HOSTS_RATE" burst 256kb latency 400ms
    tc -n "fh-$h" qdisc add dev eth0 root tbf rate "$FLOWD_HOSTS_RATE" burst 256kb latency 400ms
  fi
done

on() {  # on HOST COMMAND...: run in HOST's namespace and folder
  local h=$1
  shift
  (cd "$WORK/$h" && exec ip netns exec "fh-$h" "$@")
}

# The documented lines, in order: keygen, authorised keys, coordinator, worker.
doc_block by-hand "$DOC" | grep -v '^#' | grep -v '^$' > "$WORK/by-hand.sh"
mapfile -t lines < "$WORK/by-hand.sh"
[[ ${#lines[@]} -eq 4 ]] || fail "expected 4 commands in the by-hand block of $DOC, found ${#lines[@]}"
keygen_line=${lines[0]} keys_line=${lines[1]} run_line=${lines[2]} worker_line=${lines[3]}
[[ $run_line == "flowd run "* && $worker_line == "flowd worker "* ]] || fail "the by-hand block changed shape: ${lines[*]}"

reference_run
for h in "${hosts[@]}"; do
  mkdir -p "$WORK/$h"
  # flowd keygen prints the authorised-keys line last.
  on "$h" env HOST="$h" bash -euo pipefail -c "$keygen_line" | tail -n 1 > "$WORK/$h/$h.line"
done
cp "$WORK/node2/node2.line" "$WORK/node3/node3.line" "$WORK/coordinator/"
on coordinator bash -euo pipefail -c "$keys_line"
for h in node2 node3; do cp "$WORK/coordinator/keys/coordinator.pub" "$WORK/$h/"; done
write_workflow "$WORK/coordinator"
sed -i 's#"output": "[^"]*"#"output": "results"#' "$WORK/coordinator/workflow.json"

# start_run TAG [extra flowd run options]: the coordinator in the background.
start_run() {
  local tag=$1
  shift
  rm -rf "$WORK/coordinator/results"
  on coordinator bash -c "exec timeout 300 $run_line $*" > "$WORK/$tag.coordinator.log" 2>&1 &
  coordinator=$!
  pids+=("$coordinator")
  for _ in $(seq 100); do
    on coordinator bash -c 'ss -ltn | grep -q ":5555 "' && return 0
    sleep 0.1
  done
  fail "the coordinator did not listen within 10 s: $(tail -n 20 "$WORK/$tag.coordinator.log")"
}
# start_worker TAG HOST [extra options]
start_worker() {
  local tag=$1 h=$2
  shift 2
  on "$h" env HOST="$h" bash -c "exec timeout 300 $worker_line $*" > "$WORK/$tag.$h.log" 2>&1 &
  pids+=($!)
}
# finish TAG: the coordinator's exit status, and the workers end too.
finish() {
  local tag=$1 rc=0
  wait "$coordinator" || rc=$?
  flowd_ends_within 15
  echo "$tag: coordinator exited $rc after $((SECONDS - started)) s"
  return "$rc"
}
# who_joined_from LOG ADDRESS: "worker N (NAME)" of the worker that joined
# from ADDRESS (names are host:pid, and every namespace has one host name).
who_joined_from() {
  sed -n "s/.*membership: \(worker [0-9]* ([^)]*)\) joined from .* at $2 .*/\1/p" "$1" | head -n 1
}
# when LOG PATTERN: waits up to 60 s for PATTERN in LOG.
when() {
  for _ in $(seq 600); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "no '$2' in $1 within 60 s: $(tail -n 20 "$1")"
}

echo "== 1. the documented commands across three hosts"
started=$SECONDS
start_run whole
start_worker whole node2
start_worker whole node3
finish whole || fail "the cross-host run failed: $(tail -n 30 "$WORK/whole.coordinator.log")"
grep -q 'items served at tcp://10.0.0.2:' "$WORK/whole.node2.log" ||
  fail "node2 does not serve its items on its own address: $(grep 'items served' "$WORK/whole.node2.log")"
same_labels "$WORK/coordinator"
grep 'cluster:\|outputs written in' "$WORK/whole.coordinator.log"
if [[ ${FLOWD_HOSTS_ONLY:-} == whole ]]; then
  # The benchmark's other column: the same workflow in one process on the
  # coordinator's host.
  rm -rf "$WORK/coordinator/results"
  on coordinator flowd run workflow.json --no-progress 2>&1 | grep 'outputs written in' | sed 's/^/one process: /'
  echo "PASSED (case 1 only)"
  exit 0
fi

echo "== 2. node3's link down for 10 s; --missed-heartbeats 30 rides it out"
started=$SECONDS
start_run outage --missed-heartbeats 30
start_worker outage node2
start_worker outage node3
when "$WORK/outage.coordinator.log" 'objects from'
ip link set v-node3 down
sleep 10
ip link set v-node3 up
finish outage || fail "the run failed although node3 came back within the loss bound: $(tail -n 30 "$WORK/outage.coordinator.log")"
grep -q 'counts as lost after 30 x 500 ms' "$WORK/outage.node3.log" ||
  fail "node3 did not take the coordinator's loss bound: $(grep 'joined the coordinator' "$WORK/outage.node3.log")"
node3=$(who_joined_from "$WORK/outage.coordinator.log" 10.0.0.3)
[[ -n $node3 ]] || fail "no worker joined from 10.0.0.3: $(grep 'joined from' "$WORK/outage.coordinator.log")"
if grep -F "$node3" "$WORK/outage.coordinator.log" | grep -q ') lost\|cut off: '; then
  fail "node3 ($node3) was given up although it came back within the bound: $(grep -F "$node3" "$WORK/outage.coordinator.log" | tail -n 5)"
fi
same_labels "$WORK/coordinator"
echo "pulls that waited for node3: $(grep -c 'get no answer\|could not pull an input' "$WORK/outage.coordinator.log" || true)"
grep 'cluster:' "$WORK/outage.coordinator.log"

echo "== 3. node3's link down for good"
started=$SECONDS
start_run lost
start_worker lost node2
start_worker lost node3
when "$WORK/lost.coordinator.log" 'objects from'
ip link set v-node3 down
finish lost || fail "the run failed after node3 was lost: $(tail -n 30 "$WORK/lost.coordinator.log")"
node3=$(who_joined_from "$WORK/lost.coordinator.log" 10.0.0.3)
grep -F "$node3" "$WORK/lost.coordinator.log" | grep -q ' lost' ||
  fail "node3 ($node3) was not declared lost: $(tail -n 20 "$WORK/lost.coordinator.log")"
same_labels "$WORK/coordinator"
grep 'cluster:' "$WORK/lost.coordinator.log"
ip link set v-node3 up

echo "== 4. a worker on another host bound to loopback is refused"
started=$SECONDS
start_run refused
start_worker refused node3 --bind 'tcp://127.0.0.1:*'
when "$WORK/refused.coordinator.log" 'rejected registration'
grep -q 'another host, but serves its items at tcp://127.0.0.1:' "$WORK/refused.coordinator.log" ||
  fail "the refusal does not say why: $(grep 'rejected' "$WORK/refused.coordinator.log")"
when "$WORK/refused.node3.log" 'which only its own host can reach'
# docs/security.md's refusals, seen from another host: an HTTP request,
# and a worker holding a wrong coordinator key.
on node3 bash -c 'exec 3<>/dev/tcp/10.0.0.1/5555; printf "GET / HTTP/1.0\r\n\r\n" >&3; sleep 1' || true
when "$WORK/refused.coordinator.log" 'to tcp://10.0.0.1:5555: not a ZeroMQ peer'
on node3 timeout 20 flowd worker --connect tcp://10.0.0.1:5555 --worker-key keys/node3.key \
  --coordinator-key "$WORK/node2/keys/node2.pub" --join-timeout 2 > "$WORK/refused.wrongkey.log" 2>&1 || true
when "$WORK/refused.coordinator.log" 'CURVE handshake failed cryptographically'
start_worker refused2 node2
start_worker refused2 node3
finish refused || fail "the run after a refused worker failed: $(tail -n 30 "$WORK/refused.coordinator.log")"
same_labels "$WORK/coordinator"
echo "PASSED"
