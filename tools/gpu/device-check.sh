#!/usr/bin/env bash
# Runs on a lent GPU machine (the device tool's `run`), in the repository root,
# with the bundle of tools/gpu/pack.py carried in .device/: every GPU test,
# compute-sanitizer's memcheck over the GPU twins, the twin benchmarks (nuclei,
# image, registration; PRNU's cuFFT twin), the nuclei and registration jobs
# CPU-only and with the GPU, outputs compared, whole-job timings, and the
# all-pairs runner on the machine's 16 cores.
# Logs go to /tmp/dc and come back as $OUT/device-check.tar.gz; a summary is
# printed last. Each step has its own time limit so the script always ends
# (and packs its logs) inside the call's limit.
#
#   tools/gpu/device-check.sh [tests] [sanitizer] [bench] [prnu] [allpairs] [ahead] [apgpu] [cvtree] [nuclei]
#                             [registration] [timing]
#   (default: all but allpairs, ahead, apgpu, cvtree and timing)
#
# FLOWD_DEVICE_BUDGET_S (default 420): a step that would start later than
# this many seconds after the script began is skipped, and says so, so that
# the call's time is never spent on a step that cannot finish.
set -u -o pipefail
steps=${*:-tests sanitizer bench prnu nuclei registration}
budget=${FLOWD_DEVICE_BUDGET_S:-420}
# FLOWD_TIMING_JOBS (default "nuclei registration"): the jobs the timing step
# times, FLOWD_TIMING_ROUNDS (default 3) how often. FLOWD_ALLPAIRS_RUNS
# (default "0:16 100:2 100:16", cache:lanes) the runner benchmark's runs and
# FLOWD_ALLPAIRS_CACHES (default "0") the cache_items of the 300-photo
# all-pairs job (allpairs step).
timing_jobs=${FLOWD_TIMING_JOBS:-nuclei registration}
timing_rounds=${FLOWD_TIMING_ROUNDS:-3}
out=${OUT:-/tmp/out}
logs=/tmp/dc
rm -rf "$logs" && mkdir -p "$logs" "$out"
summary=$out/summary.txt  # straight into $OUT: it comes back even if the call is cut off
say() { echo "$*" | tee -a "$summary"; }
pack_logs() { cp "$summary" "$logs/" 2>/dev/null; tar -czf "$out/device-check.tar.gz" -C /tmp dc 2>/dev/null; }
trap pack_logs EXIT

# The build's paths are absolute (the source and build folders of the machine
# that packed it, .device/paths from pack.py): recreate them here.
src=$(sed -n 's/^source=//p' .device/paths 2>/dev/null)
build=$(sed -n 's/^build=//p' .device/paths 2>/dev/null)
if [[ -z $src || -z $build ]]; then say "device-check: .device/paths is missing or incomplete: rerun tools/gpu/pack.py"; exit 2; fi
root=$(pwd -P)
if [[ $root != "$src" ]]; then
  if [[ -e $src ]]; then say "device-check: $src exists and is not this checkout"; exit 2; fi
  mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"
fi
cd "$src"
t0=$(date +%s)
# step NAME: true when NAME was asked for and there is still time to start it.
step() {
  [[ " $steps " == *" $1 "* ]] || return 1
  local used=$(( $(date +%s) - t0 ))
  if (( used > budget )); then say "$1: skipped, $used s used of the $budget s budget"; return 1; fi
}
tar -xJf .device/bundle.tar.xz 2>/dev/null ||
  python3 -c 'import tarfile; tarfile.open(".device/bundle.tar.xz").extractall()' ||
  { say "device-check: cannot unpack .device/bundle.tar.xz"; exit 2; }
# Only flowd's programs see the bundled libraries (the stand-ins would break
# the machine's own tools): `ours CMD...`.
ours() { LD_LIBRARY_PATH=$src/.device-lib "$@"; }
bin=$src/$build/bin
say "unpacked in $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader | tee -a "$summary"
say "cpu: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"

# Missing libraries show here before any test reports a confusing failure.
for f in "$bin"/flowd "$bin"/test_* "$build"/lib/flowd/plugins/*.so; do
  [[ -f $f ]] || continue
  miss=$(ours ldd "$f" 2>/dev/null | grep "not found")
  [[ -z $miss ]] || say "MISSING for $f: $miss"
done

# executable:filter (the GPU tests of test_nuclei_ops; everything of the others)
# executable:filter (the GPU tests of test_nuclei_ops; everything of the others)
gpu_tests=(test_gpu:* test_nuclei_gpu:* test_nuclei_features:* test_registration_gpu:* test_nuclei_ops:NucleiGpuOps.*
           test_prnu_gpu:* "test_prnu_workflows:PrnuWorkflows.AllPairsOnTheGpu*"
           "test_allpairs:*Gpu*:AllPairsStage.*Simulated*" test_cvtree_gpu:*
           "test_cvtree_workflows:CvtreeWorkflows.TheGpu*")

# compute-sanitizer's memcheck over the twin tests runs in the background,
# beside the plain tests (both only check results; nothing is timed yet).
if step sanitizer; then
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  if [[ -z $cs ]]; then say "sanitizer: compute-sanitizer not found"; else
    for spec in "test_nuclei_gpu:-NucleiGpu.ReconstructU8" "test_registration_gpu:*" "test_nuclei_features:NucleiFeaturesGpu.*" \
                "test_gpu:GaussianGpu.*:GpuCudaDevice.*:RegistrationVariantsGpu.*" "test_prnu_gpu:*" \
                "test_prnu_workflows:PrnuWorkflows.AllPairsOnTheGpu*" "test_cvtree_gpu:*"; do
      t=${spec%%:*} filter=${spec#*:}
      ( ours timeout 120 "$cs" --tool memcheck --leak-check full --error-exitcode 9 "$bin/$t" --gtest_filter="$filter" \
          >"$logs/memcheck-$t.log" 2>&1
        echo "memcheck $t ($filter): rc=$? $(grep -m1 'ERROR SUMMARY' "$logs/memcheck-$t.log")" >"$logs/memcheck-$t.rc" ) &
    done
  fi
fi

if step tests; then
  for spec in "${gpu_tests[@]}"; do
    t=${spec%%:*} filter=${spec#*:}
    [[ -x $bin/$t ]] || { say "test $t: not built"; continue; }
    s=$(date +%s%N)
    ours timeout 120 "$bin/$t" --gtest_filter="$filter" --gtest_output="xml:$logs/$t.xml" >"$logs/$t.log" 2>&1
    rc=$?
    say "test $t ($filter): rc=$rc, $(( ($(date +%s%N) - s) / 1000000 )) ms: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?' "$logs/$t.log" | tr -s ' ' | tr '\n' ' ')"
    grep -E '^\[  (FAILED|SKIPPED) +\] [A-Za-z0-9_/.]+$' "$logs/$t.log" | sort -u | head -20 | tee -a "$summary"
  done
fi
wait  # the sanitizer runs (each bounded by its timeout)
cat "$logs"/memcheck-*.rc 2>/dev/null | tee -a "$summary"

if step bench; then
  for run in 1152:7 2304:3; do
    size=${run%%:*}
    ours timeout 150 "$bin/flowd-bench-gpu-twins" --size "$size" --repeat "${run#*:}" >"$logs/bench-$size.txt" 2>&1
    say "bench $size: rc=$?"
    grep -v '^csv,' "$logs/bench-$size.txt" | tee -a "$summary"
  done
fi
# PRNU: the cuFFT twin per 10 MP image and NCC against a device copy, then the
# CPU core on this machine's CPU (one thread) for the ratio.
if step prnu; then
  ours timeout 90 "$bin/flowd-bench-prnu-speed" --gpu --repeat 20 >"$logs/prnu-gpu.txt" 2>&1
  say "prnu gpu: rc=$?"
  cat "$logs/prnu-gpu.txt" | tee -a "$summary"
  for m in nfi ncc; do
    ours timeout 60 "$bin/flowd-bench-prnu-speed" --method $m >"$logs/prnu-cpu-$m.txt" 2>&1
    say "prnu cpu $m: rc=$? $(grep -E '_(median_ms|read_gbps|ms) ' "$logs/prnu-cpu-$m.txt" | tr '\n' ' ')"
  done
fi

if step nuclei; then
  export FLOWD_CACHE_DIR=/tmp/dc-cache  # generated inputs: kept out of the logs that come back
  for cfg in "cpu:--gpu none" "hetero:--gpu 1" "gpu:--gpu 1 --cpu 2"; do
    name=${cfg%%:*} opts=${cfg#*:}
    s=$(date +%s%N)
    # shellcheck disable=SC2086
    ours timeout 120 "$bin/flowd" run workflows/nuclei.json --set output=/tmp/nuclei-$name $opts \
      --perf-model "$logs/perf-$name.json" --report "$logs/report-$name.html" --trace "$logs/trace-$name.json" \
      >"$logs/nuclei-$name.log" 2>&1
    rc=$?
    say "nuclei $name ($opts): rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms"
    tail -3 "$logs/nuclei-$name.log" | tee -a "$summary"
  done
  for name in hetero gpu; do
    for f in /tmp/nuclei-cpu/labels/*.png; do
      cmp -s "$f" "/tmp/nuclei-$name/labels/$(basename "$f")" && r=same || r=DIFFERENT
      say "labels $(basename "$f") cpu vs $name: $r"
    done
  done
  python3 - <<'PY' 2>&1 | tee -a "$summary"
# features.h5: one dataset per column under /nuclei; rows in completion order,
# so both runs are sorted by (item_key, label) before comparing.
import h5py, numpy as np
def load(n):
    with h5py.File(f"/tmp/nuclei-{n}/features.h5") as f:
        g = f["nuclei"]
        cols = {k: g[k][()] for k in g}
    order = np.lexsort((cols["label"], cols["item_key"]))
    return {k: v[order] for k, v in cols.items()}
a = load("cpu")
for n in ("hetero", "gpu"):
    b = load(n)
    rows = len(a["label"])
    if len(b["label"]) != rows or not (a["item_key"] == b["item_key"]).all() or not (a["label"] == b["label"]).all():
        print(f"features cpu vs {n}: different nuclei ({rows} vs {len(b['label'])} rows)"); continue
    worst, where = 0.0, ""
    for k, x in a.items():
        if x.dtype.kind not in "iuf": continue
        x, y = x.astype(np.float64), b[k].astype(np.float64)
        d = np.abs(x - y)
        rel = np.where(d <= 1e-9, 0.0, d / np.maximum(np.maximum(np.abs(x), np.abs(y)), 1e-300))
        if rel.size and np.nanmax(rel) > worst: worst, where = float(np.nanmax(rel)), k
    print(f"features cpu vs {n}: {rows} rows, worst relative difference {worst:.3g} ({where or 'none'})")
PY
  # Every operator on every variant (flowd calibrate), then what the model learnt.
  ours timeout 150 "$bin/flowd" calibrate workflows/nuclei.json --gpu 1 --perf-model "$logs/perf-calibrate.json" \
    >"$logs/calibrate.log" 2>&1
  say "calibrate: rc=$?"
  ours "$bin/flowd" perf --perf-model "$logs/perf-calibrate.json" >"$logs/perf-calibrate.txt" 2>&1
  say "--- flowd perf after calibrate:"
  head -60 "$logs/perf-calibrate.txt" | tee -a "$summary"
fi
if step registration; then
  export FLOWD_CACHE_DIR=/tmp/dc-cache  # generated inputs: kept out of the logs that come back
  for cfg in "cpu:--gpu none" "hetero:--gpu 1" "gpu:--gpu 1 --cpu 2"; do
    name=${cfg%%:*} opts=${cfg#*:}
    s=$(date +%s%N)
    # shellcheck disable=SC2086
    ours timeout 120 "$bin/flowd" run workflows/registration.json --set output=/tmp/reg-$name --set strategy=sequential $opts \
      --perf-model "$logs/perf-reg-$name.json" --report "$logs/report-reg-$name.html" \
      >"$logs/registration-$name.log" 2>&1
    rc=$?
    say "registration $name ($opts): rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms"
    tail -2 "$logs/registration-$name.log" | tee -a "$summary"
  done
  python3 - <<'PY' 2>&1 | tee -a "$summary"
import csv, math
def rows(n):
    with open(f"/tmp/reg-{n}/deformations.csv") as f:
        return {r["frame"]: r for r in csv.DictReader(f)}
a = rows("cpu")
for n in ("hetero", "gpu"):
    b = rows(n)
    worst = 0.0
    for k, r in a.items():
        s = b[k]
        # corner displacement of the difference, 512x512 frames: |dt| + |dangle| * half diagonal
        d = math.hypot(float(r["tx"]) - float(s["tx"]), float(r["ty"]) - float(s["ty"])) + \
            abs(math.radians(float(r["angle"]) - float(s["angle"]))) * 362.0
        worst = max(worst, d)
    print(f"deformations cpu vs {n}: {len(a)} frames, worst difference at a corner <= {worst:.2e} px")
PY
  ours "$bin/flowd" perf --perf-model "$logs/perf-reg-hetero.json" >"$logs/perf-reg-hetero.txt" 2>&1
  say "--- flowd perf after the registration hetero run:"
  head -20 "$logs/perf-reg-hetero.txt" | tee -a "$summary"
fi
# Whole jobs timed: CPU-only against CPU+GPU, 16 and 2 CPU workers, the
# performance model calibrated once and copied for every run, configurations
# interleaved, three rounds; medians printed.
if step timing; then
  export FLOWD_CACHE_DIR=/tmp/dc-cache  # generated inputs: kept out of the logs that come back
  for wf in $timing_jobs; do
    ours timeout 150 "$bin/flowd" calibrate workflows/$wf.json --gpu 1 --perf-model "$logs/perf-timing.json" \
      >>"$logs/timing-calibrate.log" 2>&1 || say "calibrate $wf: rc=$?"
  done
  configs=()
  for wf in $timing_jobs; do
    configs+=("$wf-cpu16:$wf:--gpu none" "$wf-cpu16+gpu:$wf:--gpu 1" "$wf-cpu2:$wf:--gpu none --cpu 2"
              "$wf-cpu2+gpu:$wf:--gpu 1 --cpu 2")
  done
  for round in $(seq "$timing_rounds"); do
    for cfg in "${configs[@]}"; do
      name=${cfg%%:*} rest=${cfg#*:}
      wf=${rest%%:*} opts=${rest#*:}
      cp "$logs/perf-timing.json" /tmp/perf-run.json
      s=$(date +%s%N)
      # shellcheck disable=SC2086
      ours timeout 90 "$bin/flowd" run workflows/$wf.json --set output=/tmp/timing-$name $opts \
        --perf-model /tmp/perf-run.json --no-progress >"$logs/timing-$name-$round.log" 2>&1
      rc=$?
      echo "$name $round $rc $(( ($(date +%s%N) - s) / 1000000 ))" | tee -a "$logs/timing.txt"
    done
  done
  python3 - "$logs/timing.txt" <<'PY' 2>&1 | tee -a "$summary"
import sys, statistics, collections
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, rnd, rc, ms = line.split()
    runs[name].append(int(ms) if rc == "0" else None)
print("job configuration            median s   runs (s)")
for name, ms in runs.items():
    ok = [m for m in ms if m is not None]
    med = statistics.median(ok) / 1e3 if ok else float("nan")
    print(f"{name:28s} {med:8.2f}   " + " ".join("fail" if m is None else f"{m / 1e3:.2f}" for m in ms))
PY
  ours "$bin/flowd" perf --perf-model "$logs/perf-timing.json" >"$logs/perf-timing.txt" 2>&1
  say "--- flowd perf after calibrating both jobs:"
  cat "$logs/perf-timing.txt" | tee -a "$summary"
fi
# The all-pairs runner and the PRNU all-pairs job on this machine's 16 cores
# (CPU only: R and efficiency with many lanes on a quiet machine).
if step allpairs; then
  export FLOWD_CACHE_DIR=/tmp/dc-cache  # generated inputs: kept out of the logs that come back
  # Three rounds, configurations interleaved; a small cache runs the band
  # plan only (its Hilbert order, R = n/C per lane's region, was measured).
  for round in 1 2 3; do
    for cfg in ${FLOWD_ALLPAIRS_RUNS:-0:16 100:2 100:16}; do
      c=${cfg%%:*} l=${cfg#*:}
      plan=both && [[ $c != 0 ]] && plan=bands
      ours timeout 60 "$bin/flowd-bench-allpairs-cache" --items 300 --cache "$c" --lanes "$l" --load-ms 4 --compare-us 50 \
        --plan $plan >"$logs/allpairs-runner-$c-$l-$round.txt" 2>&1
      say "allpairs runner round $round cache=$c lanes=$l: rc=$?"
      grep -E "^(hilbert|bands)" "$logs/allpairs-runner-$c-$l-$round.txt" | tee -a "$summary"
    done
  done
  photos='synthetic:prnu?cameras=30&flatfields=1&images=10&width=1024&height=768&seed=2&part=images'
  for c in ${FLOWD_ALLPAIRS_CACHES:-0}; do
    s=$(date +%s%N)
    ours timeout 120 "$bin/flowd" run workflows/prnu-allpairs.json --cpu 16 --no-progress --set "images=$photos" \
      --set cache_items=$c --set output=/tmp/prnu-ap-$c --report "$logs/report-prnu-ap-$c.html" \
      >"$logs/prnu-allpairs-$c.log" 2>&1
    say "prnu-allpairs 300 photos cache_items=$c --cpu 16: rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms"
    grep -E "all-pairs of|AUC" "$logs/prnu-allpairs-$c.log" | tee -a "$summary"
  done
fi
# The PRNU all-pairs job with and without loading ahead, side by side:
# rounds interleaved (FLOWD_AHEAD_ROUNDS, default 2), all 300 residuals
# cached, 16 workers.
if step ahead; then
  export FLOWD_CACHE_DIR=/tmp/dc-cache
  photos='synthetic:prnu?cameras=30&flatfields=1&images=10&width=1024&height=768&seed=2&part=images'
  for round in $(seq "${FLOWD_AHEAD_ROUNDS:-2}"); do
    for ahead in false true; do
      ours timeout 90 "$bin/flowd" run workflows/prnu-allpairs.json --cpu 16 --no-progress --set "images=$photos" \
        --set load_ahead=$ahead --set output=/tmp/prnu-ahead-$ahead >"$logs/prnu-ahead-$ahead-$round.log" 2>&1
      say "prnu-allpairs load_ahead=$ahead round $round: rc=$? $(grep -o 'on 16 lanes, [0-9.]* s; R = [0-9.]*.*' "$logs/prnu-ahead-$ahead-$round.log")"
    done
  done
fi
# The PRNU all-pairs job with its GPU lane (prnu.compare's GPU variant, NFI
# residuals) beside the CPU only, 300 generated photos, rounds interleaved
# (FLOWD_APGPU_ROUNDS, default 2): 16 CPU lanes; 16 CPU lanes and the GPU;
# one CPU lane and the GPU; the last with no loading ahead, so that the GPU
# lane extracts the residuals it loads on cuFFT.
if step apgpu; then
  export FLOWD_CACHE_DIR=/tmp/dc-cache
  photos='synthetic:prnu?cameras=30&flatfields=1&images=10&width=1024&height=768&seed=2&part=images'
  for round in $(seq "${FLOWD_APGPU_ROUNDS:-2}"); do
    for cfg in "cpu16:--cpu 16 --gpu none" "cpu16gpu:--cpu 16 --gpu 1" "cpu1gpu:--cpu 1 --gpu 1" \
               "cpu1gpu-noahead:--cpu 1 --gpu 1 --set load_ahead=false"; do
      name=${cfg%%:*} opts=${cfg#*:}
      s=$(date +%s%N)
      # shellcheck disable=SC2086
      ours timeout 120 "$bin/flowd" run workflows/prnu-allpairs.json $opts --no-progress --set "images=$photos" \
        --set method=nfi --set output=/tmp/prnu-apgpu-$name --trace "$logs/trace-apgpu-$name.json" \
        >"$logs/prnu-apgpu-$name-$round.log" 2>&1
      say "prnu-allpairs nfi $name round $round: rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms $(grep -o 'on [0-9]* lanes, [0-9.]* s; R = .*' "$logs/prnu-apgpu-$name-$round.log")"
      python3 - "$logs/trace-apgpu-$name.json" <<'PY' 2>&1 | tee -a "$summary"
import json, sys
try:
    ap = json.load(open(sys.argv[1]))["otherData"]["allpairs"][0]
except Exception as e:
    print("  (no all-pairs record:", e, ")"); sys.exit(0)
lanes = sorted(ap["lanes"], key=lambda l: -l["pairs"])
print("  lanes:", ", ".join(f'{l["name"]} {l["pairs"]}' for l in lanes[:4]), "...",
      "device cache:", json.dumps(ap.get("device_cache")))
PY
    done
  done
  for name in cpu16gpu cpu1gpu cpu1gpu-noahead; do
    python3 - /tmp/prnu-apgpu-cpu16/scores.csv "/tmp/prnu-apgpu-$name/scores.csv" "$name" <<'PY' 2>&1 | tee -a "$summary"
import csv, sys
def load(p):
    return {(r["a"], r["b"]): (float(r["ncc"]), float(r["pce"])) for r in csv.DictReader(open(p))}
a, b = load(sys.argv[1]), load(sys.argv[2])
dn = max(abs(a[k][0] - b[k][0]) for k in a)
dp = max(abs(a[k][1] - b[k][1]) / max(1.0, abs(a[k][1])) for k in a)
print(f"  scores {sys.argv[3]} vs cpu16: {len(a)} pairs, same keys {set(a) == set(b)}, max |dNCC| {dn:.2e}, max rel dPCE {dp:.2e}")
PY
  done
fi
# CVTree: the core on one Xeon core and the merge-path cosine per pair on the
# GPU (8 generated proteomes of ~1 M residues, k = 5, 6, 7), then
# workflows/cvtree.json on 8 and on 60 generated proteomes (k = 5 and 6), CPU
# lanes only beside CPU lanes and the GPU's, distances compared.
if step cvtree; then
  export FLOWD_CACHE_DIR=/tmp/dc-cache
  # ~1 M residues a proteome (the generator's default), then ~3 M (9 000 proteins).
  for proteins in 3000 9000; do
    ours timeout 150 "$bin/flowd-bench-cvtree-speed" --proteins $proteins --k 5,6,7 --gpu >"$logs/cvtree-speed-$proteins.txt" 2>&1
    say "cvtree speed ($proteins proteins): rc=$?"
    tee -a "$summary" <"$logs/cvtree-speed-$proteins.txt"
  done
  for n in 8 60; do
    for cfg in "cpu1:--cpu 1 --gpu none" "cpu16:--cpu 16 --gpu none" "cpu1gpu:--cpu 1 --gpu 1" "cpu16gpu:--cpu 16 --gpu 1"; do
      name=${cfg%%:*} opts=${cfg#*:}
      [[ $n == 60 && $name == cpu1 ]] && continue  # 1770 pairs on one core: minutes
      s=$(date +%s%N)
      # shellcheck disable=SC2086
      ours timeout 150 "$bin/flowd" run workflows/cvtree.json $opts --no-progress \
        --set "input=synthetic:cvtree?proteomes=$n&seed=1&part=proteomes" --set 'k=[5, 6]' \
        --set output=/tmp/cvtree-$n-$name >"$logs/cvtree-$n-$name.log" 2>&1
      say "cvtree n=$n $name: rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms $(grep -o 'on [0-9]* lanes, [0-9.]* s; R = [0-9.]*' "$logs/cvtree-$n-$name.log") $(grep -o 'GPU caches.*' "$logs/cvtree-$n-$name.log")"
    done
    for name in cpu16gpu cpu1gpu; do
      python3 - "/tmp/cvtree-$n-cpu16" "/tmp/cvtree-$n-$name" "$n $name" <<'PY' 2>&1 | tee -a "$summary"
import sys
def load(d, k):
    rows = open(f"{d}/distances_k{k}.phylip").read().split("\n")[1:]
    return [[float(x) for x in r.split()[1:]] for r in rows if r.strip()]
worst = 0.0
for k in (5, 6):
    a, b = load(sys.argv[1], k), load(sys.argv[2], k)
    worst = max(worst, max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb)))
def splits(path):
    # The leaf sets an edge of the unrooted tree separates, each named by its
    # smaller-sorting side: the topology, whatever the branch lengths' digits.
    text = open(path).read().strip().rstrip(";")
    stack, groups, leaves, token = [set()], [], set(), ""
    for c in text + ",":
        if c in "(),":
            name = token.split(":")[0].strip()
            token = ""
            if name:
                leaves.add(name)
                stack[-1].add(name)
            if c == "(":
                stack.append(set())
            elif c == ")":
                g = stack.pop()
                groups.append(frozenset(g))
                stack[-1] |= g
        else:
            token += c
    every = frozenset(leaves)
    return {min(g, every - g, key=sorted) for g in groups if 1 < len(g) < len(every) - 1}
text_same = open(f"{sys.argv[1]}/tree_k5.nwk").read() == open(f"{sys.argv[2]}/tree_k5.nwk").read()
topo_same = all(splits(f"{sys.argv[1]}/tree_k{k}.nwk") == splits(f"{sys.argv[2]}/tree_k{k}.nwk") for k in (5, 6))
print(f"  cvtree {sys.argv[3]} vs cpu16: max |dD| {worst:.2e}, same k=5 tree text {text_same}, same topology (k = 5, 6) {topo_same}")
PY
    done
  done
fi
say "device-check: done in $(( $(date +%s) - t0 )) s"
