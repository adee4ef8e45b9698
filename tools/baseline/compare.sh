#!/usr/bin/env bash
# flowd's nuclei job beside the classical scikit-image baseline
# (nuclei_skimage.py) on the same tiles, both scored against the same truth.
#   tools/baseline/compare.sh BUILD IMAGES TRUTH OUT
# BUILD: flowd's build folder; IMAGES: RGB tiles; TRUTH: label images with the
# same stems; OUT: created, holds flowd/ and baseline/ outputs and the scores
# (scores-flowd.json, scores-baseline.json, baseline-timing.json).
# Needs Debian's python3-skimage (apt-get install python3-skimage), run by
# /usr/bin/python3 unless PYTHON names another interpreter that has it.
set -euo pipefail
if [ $# -ne 4 ]; then
  echo "usage: $0 BUILD IMAGES TRUTH OUT" >&2
  exit 1
fi
build=$1 images=$2 truth=$3 out=$4
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$out"
"$build/bin/flowd" run "$root/workflows/nuclei.json" --set "input=$images" --set "output=$out/flowd" \
  --no-progress --quiet --overwrite
"${PYTHON:-/usr/bin/python3}" "$here/nuclei_skimage.py" "$images" "$out/baseline" --timing "$out/baseline-timing.json"
echo "== flowd"
"$build/bin/flowd-score" --pred "$out/flowd/labels" --truth "$truth" --json "$out/scores-flowd.json" | tail -3
echo "== baseline (scikit-image)"
"$build/bin/flowd-score" --pred "$out/baseline" --truth "$truth" --json "$out/scores-baseline.json" | tail -3
