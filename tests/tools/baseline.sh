#!/usr/bin/env bash
# The classical baseline (tools/baseline) runs beside flowd and is scored:
#   baseline.sh BUILD SOURCE WORK
# Skipped (exit 77) where Debian's python3-skimage is not installed.
set -euo pipefail
build=$1 src=$2 work=$3
py=${PYTHON:-/usr/bin/python3}
if ! "$py" -c 'import skimage' 2>/dev/null; then
  echo "SKIPPED: $py has no scikit-image (apt-get install python3-skimage)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
"$build/bin/flowd-hne-synth" --out "$work/data" --count 2 --size 512x512 --seed 11 >/dev/null
"$src/tools/baseline/compare.sh" "$build" "$work/data/images" "$work/data/truth" "$work/out" >"$work/compare.txt"
for f in scores-flowd.json scores-baseline.json baseline-timing.json; do
  [ -s "$work/out/$f" ] || { echo "missing $work/out/$f" >&2; exit 1; }
done
# The baseline finds nuclei: a pooled F1 above 0.3 on generated tiles.
"$py" - "$work/out/scores-baseline.json" <<'PY'
import json, sys
f1 = json.load(open(sys.argv[1]))["pooled"]["f1"]
print("baseline pooled F1", f1)
sys.exit(0 if f1 > 0.3 else 1)
PY
# A label image is not RGB: exit 2 naming the file, nothing written.
set +e
"$py" "$src/tools/baseline/nuclei_skimage.py" "$work/data/truth" "$work/bad" 2>"$work/err.txt"
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "expected exit 2 for a label image, got $rc" >&2; exit 1; }
grep -q "is not an RGB image" "$work/err.txt" || { cat "$work/err.txt" >&2; exit 1; }
echo "OK"
