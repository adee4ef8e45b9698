#!/usr/bin/env bash
# flowd beside the scikit-image baseline on every named condition of the
# synthetic H&E generator (flowd-hne-synth --condition list), one table.
#   tools/baseline/conditions.sh BUILD OUT [--tiles N] [--seed S] [--size PX]
#                                [--conditions NAME,NAME,...]
# For each condition: N generated PX x PX tiles (default 8 of 512) with seed
# S (default 13) in OUT/NAME/data, then compare.sh (flowd's
# workflows/nuclei.json with defaults, the baseline, flowd-score) into
# OUT/NAME. Prints a markdown table of the pooled scores and writes the same
# as OUT/conditions.json. Exit 77 where python3-skimage is missing (as the
# ctest skips), 1 for a bad command line, 2 when a step fails (named).
set -euo pipefail
usage() {
  echo "usage: $0 BUILD OUT [--tiles N] [--seed S] [--size PX] [--conditions A,B,...]" >&2
  exit 1
}
[ $# -ge 2 ] || usage
build=$1 out=$2
shift 2
tiles=8 seed=13 size=512 only=
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case $1 in
    --tiles) tiles=$2 ;;
    --seed) seed=$2 ;;
    --size) size=$2 ;;
    --conditions) only=$2 ;;
    *) usage ;;
  esac
  shift 2
done
for v in "$tiles" "$seed" "$size"; do
  [[ $v =~ ^[0-9]+$ ]] || { echo "conditions.sh: --tiles, --seed and --size take whole numbers, got '$v'" >&2; exit 1; }
done
[ "$tiles" -ge 1 ] || { echo "conditions.sh: --tiles must be at least 1" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-/usr/bin/python3}
if ! "$py" -c 'import skimage' 2>/dev/null; then
  echo "SKIPPED: $py has no scikit-image (apt-get install python3-skimage)"
  exit 77
fi
for tool in flowd flowd-hne-synth flowd-score; do
  [ -x "$build/bin/$tool" ] || { echo "conditions.sh: '$build/bin/$tool' is missing; build it first" >&2; exit 1; }
done
if [ -n "$only" ]; then
  IFS=, read -r -a names <<<"$only"
else
  mapfile -t names < <("$build/bin/flowd-hne-synth" --condition list | awk '{print $1}')
fi
command="tools/baseline/conditions.sh $build $out --tiles $tiles --seed $seed --size $size${only:+ --conditions $only}"
mkdir -p "$out"
for name in "${names[@]}"; do
  dir=$out/$name
  rm -rf "$dir"
  if ! "$build/bin/flowd-hne-synth" --condition "$name" --out "$dir/data" --count "$tiles" --size "${size}x${size}" \
    --seed "$seed" >"$out/$name.log" 2>&1; then
    echo "conditions.sh: generating condition '$name' failed:" >&2
    cat "$out/$name.log" >&2
    exit 2
  fi
  if ! "$here/compare.sh" "$build" "$dir/data/images" "$dir/data/truth" "$dir" >>"$out/$name.log" 2>&1; then
    echo "conditions.sh: flowd or the baseline failed on condition '$name' (log: $out/$name.log):" >&2
    tail -20 "$out/$name.log" >&2
    exit 2
  fi
  echo "$name: done" >&2
done
"$py" - "$out" "$seed" "$tiles" "$size" "$command" "${names[@]}" <<'PY'
import json, os, sys
out, seed, tiles, size, command, names = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6:]
keys = ("dice", "precision", "recall", "f1", "aji")
rows = []
for name in names:
    row = {"condition": name, "tiles": tiles}
    for who in ("flowd", "baseline"):
        with open(os.path.join(out, name, f"scores-{who}.json")) as f:
            pooled = json.load(f)["pooled"]
        row["nuclei"] = pooled["n_truth"]
        row[who] = {k: pooled[k] for k in keys + ("n_pred", "n_matched")}
    rows.append(row)
doc = {"seed": seed, "tiles": tiles, "size": size, "command": command, "scores": "pooled over the tiles", "conditions": rows}
tmp = os.path.join(out, ".conditions.json.tmp")
with open(tmp, "w") as f:
    json.dump(doc, f, indent=1)
os.replace(tmp, os.path.join(out, "conditions.json"))
print(f"Seed {seed}, {tiles} tiles of {size}x{size} per condition, pooled scores; `{command}`\n")
print("| condition | tiles | nuclei | flowd Dice | flowd precision | flowd recall | flowd F1 | flowd AJI "
      "| baseline Dice | baseline precision | baseline recall | baseline F1 | baseline AJI |")
print("|---|---:|---:|" + "---:|" * 10)
for r in rows:
    cells = [r["condition"], str(r["tiles"]), str(r["nuclei"])]
    cells += [f"{r[who][k]:.3f}" for who in ("flowd", "baseline") for k in keys]
    print("| " + " | ".join(cells) + " |")
PY
