#!/usr/bin/env bash
# flowd's segment() beside the scikit-image baseline (tools/baseline/
# nuclei_skimage.py) on the same generated tiles, both on one core, timed in
# one session (issue 13: a 512² tile must segment >= 10x faster than the
# baseline). Segmentation only: reading and writing are excluded on both sides.
#
#   tools/bench/nuclei_vs_baseline.sh BUILD OUT [--tiles N] [--seed S] [--size PX] [--mpp M] [--rounds K] [--repeat R]
#
# BUILD: flowd's build folder (flowd-hne-synth, flowd-bench-segment-speed);
# OUT: created; holds tiles/ (generated), baseline/ and the raw timings.
# Defaults: 16 tiles, seed 13, 512 px, 0.25 µm/px, 2 rounds, 3 repeats.
# The two programs alternate (flowd, baseline, flowd, baseline, ...) pinned to
# CPU 0, so background load hits both; per tile the median over rounds (flowd:
# of its per-round medians over R repeats), then the median over tiles.
# Prints a markdown table row: tiles | size | flowd ms | baseline ms | ratio.
# Needs Debian's python3-skimage, run by /usr/bin/python3 unless PYTHON names
# another interpreter that has it.
set -euo pipefail
usage() {
  echo "usage: $0 BUILD OUT [--tiles N] [--seed S] [--size PX] [--mpp M] [--rounds K] [--repeat R]" >&2
  exit 1
}
[ $# -ge 2 ] || usage
build=$1 out=$2
shift 2
tiles=16 seed=13 size=512 mpp=0.25 rounds=2 repeat=3
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case $1 in
    --tiles) tiles=$2 ;;
    --seed) seed=$2 ;;
    --size) size=$2 ;;
    --mpp) mpp=$2 ;;
    --rounds) rounds=$2 ;;
    --repeat) repeat=$2 ;;
    *) usage ;;
  esac
  shift 2
done
for v in "$tiles" "$size" "$rounds" "$repeat"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "$0: --tiles, --size, --rounds and --repeat take positive integers, got '$v'" >&2; exit 1; }
done
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${PYTHON:-/usr/bin/python3}
for b in flowd-hne-synth flowd-bench-segment-speed; do
  [ -x "$build/bin/$b" ] || { echo "$0: $build/bin/$b not found (build with -DFLOWD_BUILD_BENCH=ON)" >&2; exit 2; }
done
"$python" -c 'import skimage' 2>/dev/null || { echo "$0: $python has no scikit-image (apt-get install python3-skimage)" >&2; exit 2; }

mkdir -p "$out"
rm -rf "$out/tiles"
"$build/bin/flowd-hne-synth" --out "$out/tiles" --count "$tiles" --size "${size}x${size}" --seed "$seed" --mpp "$mpp" >/dev/null
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
for ((k = 1; k <= rounds; ++k)); do
  taskset -c 0 "$build/bin/flowd-bench-segment-speed" --images "$out/tiles/images" --repeat "$repeat" >"$out/flowd-$k.txt"
  taskset -c 0 "$python" "$root/tools/baseline/nuclei_skimage.py" "$out/tiles/images" "$out/baseline" \
    --timing "$out/baseline-$k.json"
done

"$python" - "$out" "$rounds" "$tiles" "$size" "$mpp" "$seed" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
flowd, base = {}, {}
for k in range(1, rounds + 1):
    for line in open(f"{out}/flowd-{k}.txt"):
        f = line.split()
        if len(f) == 3 and f[0] == "tile":
            flowd.setdefault(f[1], []).append(float(f[2]))
    for name, s in json.load(open(f"{out}/baseline-{k}.json"))["images"].items():
        base.setdefault(name, []).append(1e3 * s)
if sorted(flowd) != sorted(base):
    sys.exit(f"nuclei_vs_baseline: flowd timed {sorted(flowd)}, the baseline {sorted(base)}")
f = statistics.median(statistics.median(v) for v in flowd.values())
b = statistics.median(statistics.median(v) for v in base.values())
print("| tiles (seed, µm/px) | size | flowd segment() ms/tile | scikit-image baseline ms/tile | baseline / flowd |")
print("|---|---|---|---|---|")
print(f"| {sys.argv[3]} (seed {sys.argv[6]}, {sys.argv[5]}) | {sys.argv[4]}² | {f:.2f} | {b:.1f} | {b / f:.1f}x |")
PY
