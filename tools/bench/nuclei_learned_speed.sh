#!/usr/bin/env bash
# The speed targets of issue 39 (docs/benchmarks.md §19): on 512² tiles of
# real H&E (cut from DATA/images, the development set), the one-core whole
# job of workflows/nuclei.json (read, segment, features, labels and overlay
# PNGs) with the learned method and with the classical one, and the
# scikit-image baseline's segmentation alone (its own per-tile timing,
# reading and writing excluded), on the same tiles.
#
# usage: tools/bench/nuclei_learned_speed.sh [BUILD_DIR] [DATA] [RUNS]
set -euo pipefail
build=${1:-build}
data=${2:-../shared/data/nuclei-miccai15}
runs=${3:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
flowd=$(realpath "$build/bin/flowd")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Non-overlapping 512² crops of every image large enough.
/usr/bin/python3 - "$data/images" "$work/tiles" <<'PY'
import os, sys
from skimage import io
src, dst = sys.argv[1:]
os.makedirs(dst)
n = 0
for name in sorted(os.listdir(src)):
    img = io.imread(os.path.join(src, name))[..., :3]
    for y in range(0, img.shape[0] - 511, 512):
        for x in range(0, img.shape[1] - 511, 512):
            io.imsave(os.path.join(dst, f"{name[:-4]}_{y}_{x}.png"), img[y:y + 512, x:x + 512], check_contrast=False)
            n += 1
print(n, "tiles of 512 x 512", file=sys.stderr)
PY
tiles=$(ls "$work/tiles" | wc -l)
job() {  # method -> the farm-bench command of a one-core whole job
  echo "$flowd $root/workflows/nuclei.json --cpu 1 --gpu none --no-progress --no-perf-model --overwrite \
    --set input=$work/tiles --set output=$work/out-$1 --set method=$1"
}
echo "== $tiles tiles; the whole job on one core, learned (A) beside classical (B)"
farm-bench -n "$runs" --timeout 900 --vs "$(job classical)" -- $(job learned)
echo "== the baseline's segmentation alone (tools/baseline/nuclei_skimage.py --timing), median s per tile"
OMP_NUM_THREADS=1 /usr/bin/python3 "$root/tools/baseline/nuclei_skimage.py" "$work/tiles" "$work/baseline" \
  --timing "$work/timing.json"
/usr/bin/python3 -c "import json; print(round(json.load(open('$work/timing.json'))['median_s'], 4))"
