#!/usr/bin/env bash
# tools/train/nuclei/train.py --smoke (issue 39): a few iterations on two
# generated tiles, then the exported model through flowd: validated against
# its own manifest's check and used by workflows/nuclei.json. Proves the
# training script and the engine agree on the model format; not a model.
# Skipped (exit 77) without Debian's python3-torch and python3-skimage.
#   train_smoke.sh BUILD SOURCE WORK
set -euo pipefail
build=$1 src=$2 work=$3
py=${PYTHON:-/usr/bin/python3}
if ! "$py" -c 'import torch, skimage' 2>/dev/null; then
  echo "SKIPPED: $py has no torch or scikit-image (apt-get install python3-torch python3-skimage)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
"$build/bin/flowd-hne-synth" --out "$work/data" --count 2 --size 256x256 --seed 5 >/dev/null
mv "$work/data/truth" "$work/data/labels"
"$py" "$src/tools/train/nuclei/train.py" --data "$work/data" --out "$work/smoke.onnx" --smoke >"$work/train.log" 2>&1 ||
  { cat "$work/train.log" >&2; exit 1; }
"$py" - "$work/smoke.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
assert m["format"] == "flowd.nuclei.unet/1", m["format"]
assert m["training"]["smoke"] is True and m["training"]["iterations"] == 3, m["training"]
assert len(m["check"]["points"]) == len(m["check"]["probabilities"]) > 0
PY
"$build/bin/flowd" validate "$src/workflows/nuclei.json" --set "segment.model=$work/smoke.onnx" >"$work/validate.log" 2>&1 ||
  { cat "$work/validate.log" >&2; exit 1; }
"$build/bin/flowd" "$src/workflows/nuclei.json" --set "input=$work/data/images" --set "output=$work/out" \
  --set "segment.model=$work/smoke.onnx" --no-progress --no-perf-model >"$work/run.log" 2>&1 ||
  { cat "$work/run.log" >&2; exit 1; }
[ -s "$work/out/features.h5" ] || { echo "no features.h5" >&2; exit 1; }
echo "OK"
