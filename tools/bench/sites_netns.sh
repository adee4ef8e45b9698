#!/usr/bin/env bash
# shellcheck disable=SC2317  # cleanup() runs from the EXIT trap
# A chain of sites on one machine (docs/cluster.md "Sites"; issue 17): one
# network namespace per site of SITES.json, consecutive sites joined by a
# veth pair shaped to the link's bandwidth (tc tbf) and latency (netem,
# where the kernel has it),
# traffic between sites further apart routed through those between. The
# coordinator runs in the coordinator site's namespace; each site gets
# `nodes` worker processes of one CPU, labelled site:NAME, with CURVE keys
# (the documented commands for workers on other hosts). Everything is
# removed at the end, whatever happens. Needs root.
#
#   tools/bench/sites_netns.sh BUILD_DIR SITES.json WORKFLOW.json [flowd run options...]
#
# FLOWD_BENCH_WORKER_ARGS: more options for every worker (e.g. --prefetch 1).
# Prints the coordinator's log; its last lines give the placement, the
# predicted and the measured time.
set -euo pipefail
build=$(realpath "$1") sites=$(realpath "$2") wf=$(realpath "$3")
shift 3
flowd=$build/bin/flowd
export FLOWD_PLUGIN_PATH=$build/lib/flowd/plugins
tag=fs$$
work=$(mktemp -d)
pids=()
names=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for n in "${names[@]}"; do ip netns del "$n" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# name nodes bandwidth_mb_s latency_ms (the link to the next site), one line per site; then the coordinator's index.
python3 - "$sites" >"$work/chain" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s, l = d["sites"], d["links"]
for i, site in enumerate(s):
    link = l[i] if i < len(l) else {}
    print(site["name"], site.get("nodes", 1), link.get("bandwidth_mb_s", 0), link.get("latency_ms", 0))
names = [x["name"] for x in s]
print("coordinator", names.index(d.get("coordinator", names[-1])))
PY
mapfile -t chain < <(grep -v '^coordinator ' "$work/chain")
coord=$(sed -n 's/^coordinator //p' "$work/chain")
m=${#chain[@]}
for ((i = 0; i < m; ++i)); do
  names+=("$tag-$i")
  ip netns add "$tag-$i"
  ip -n "$tag-$i" link set lo up
  ip netns exec "$tag-$i" sysctl -qw net.ipv4.ip_forward=1
done
# Link i: 10.77.i.1 (site i) <-> 10.77.i.2 (site i+1); site i's address is
# 10.77.i.1 (its own link) or, for the last, 10.77.(m-2).2.
addr() { if (($1 < m - 1)); then echo "10.77.$1.1"; else echo "10.77.$(($1 - 1)).2"; fi; }
for ((i = 0; i + 1 < m; ++i)); do
  read -r _ _ mbs ms <<<"${chain[i]}"
  a=$tag-$i b=$tag-$((i + 1))
  ip link add "l$i-$tag" netns "$a" type veth peer name "r$i-$tag" netns "$b"
  ip -n "$a" addr add "10.77.$i.1/24" dev "l$i-$tag"
  ip -n "$b" addr add "10.77.$i.2/24" dev "r$i-$tag"
  rate=$(python3 -c "print(int($mbs * 8e6))")
  for end in "$a l$i-$tag" "$b r$i-$tag"; do
    read -r ns dev <<<"$end"
    ip -n "$ns" link set "$dev" up
    # netem for the latency where the kernel has it; else bandwidth alone.
    if tc -n "$ns" qdisc add dev "$dev" root handle 1: netem delay "${ms}ms" 2>/dev/null; then
      tc -n "$ns" qdisc add dev "$dev" parent 1: handle 2: tbf rate "${rate}bit" burst 256kb latency 400ms
    else
      ((i == 0)) && [[ $ns == "$a" ]] && echo "sites_netns: no netem in this kernel: link latencies are not emulated" >&2
      tc -n "$ns" qdisc add dev "$dev" root handle 2: tbf rate "${rate}bit" burst 256kb latency 400ms
    fi
  done
done
# Routes: towards lower sites through the lower neighbour, higher through the higher.
for ((i = 0; i < m; ++i)); do
  for ((k = 0; k + 1 < m; ++k)); do
    ((k == i || k + 1 == i)) && continue
    if ((k < i)); then via=10.77.$((i - 1)).1; else via=10.77.$i.2; fi
    ip -n "$tag-$i" route add "10.77.$k.0/24" via "$via"
  done
done

"$flowd" keygen coordinator --out "$work/keys" >/dev/null
"$flowd" keygen worker --out "$work/keys" | tail -n 1 >"$work/keys/authorised_keys"
host=$(addr "$coord")
port=$((20000 + $$ % 20000))
total=0
for line in "${chain[@]}"; do read -r _ n _ _ <<<"$line"; total=$((total + n)); done
ip netns exec "$tag-$coord" "$flowd" run "$wf" --listen "tcp://$host:$port" --expect "$total" --wait-workers 60 \
  --key "$work/keys/coordinator.key" --authorised-keys "$work/keys/authorised_keys" --no-progress \
  --sites "$sites" "$@" >"$work/coordinator.log" 2>&1 &
cpid=$!
pids+=("$cpid")
for ((i = 0; i < m; ++i)); do
  read -r name n _ _ <<<"${chain[i]}"
  for ((w = 0; w < n; ++w)); do
    # Peers pull items from its item server at its site's address.
    ip netns exec "$tag-$i" "$flowd" worker --connect "tcp://$host:$port" --worker-key "$work/keys/worker.key" \
      --bind "tcp://$(addr "$i"):*" \
      --coordinator-key "$work/keys/coordinator.pub" --cpus 1 --gpu none --name "$name-$w" --label "site:$name" \
      ${FLOWD_BENCH_WORKER_ARGS:-} >"$work/worker-$name-$w.log" 2>&1 &
    pids+=($!)
  done
done
rc=0
timeout 600 tail --pid="$cpid" -f /dev/null || rc=124
wait "$cpid" || rc=$?
cat "$work/coordinator.log"
# What crossed each link, each way (the shaping qdisc's byte count: TCP
# and ZMQ headers and retransmissions included), beside the model's
# prediction.
for ((i = 0; i + 1 < m; ++i)); do
  read -r from _ <<<"${chain[i]}"
  read -r to _ <<<"${chain[i + 1]}"
  fwd=$(tc -s -n "$tag-$i" qdisc show dev "l$i-$tag" | awk '/Sent/ {print $2; exit}')
  back=$(tc -s -n "$tag-$((i + 1))" qdisc show dev "r$i-$tag" | awk '/Sent/ {print $2; exit}')
  echo "sites_netns: link $from -> $to: $((fwd / 1000000)) MB; $to -> $from: $((back / 1000000)) MB"
done
# Pulls asked for again (logged at debug level: run the workers with -v
# through FLOWD_BENCH_WORKER_ARGS): each retry may send an item, or its
# missing chunks, over a link a second time.
for f in "$work"/worker-*.log; do
  echo "sites_netns: $(basename "$f" .log): $(grep -c 'asking again' "$f") pull retries"
done
exit "$rc"
