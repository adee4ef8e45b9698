#!/usr/bin/env bash
# conditions.sh (tools/baseline) on 1 tile x 2 conditions: the table, the
# JSON and the command-line errors. Skipped (exit 77) without python3-skimage.
#   conditions.sh BUILD SOURCE WORK
set -euo pipefail
build=$1 src=$2 work=$3
py=${PYTHON:-/usr/bin/python3}
script=$src/tools/baseline/conditions.sh
# Bad command lines are refused before anything runs, with or without skimage.
set +e
"$script" "$build" "$work/bad" --tiles 2>"$work.err1"
rc1=$?
"$script" "$build" "$work/bad" --tiles x 2>"$work.err2"
rc2=$?
set -e
[ "$rc1" -eq 1 ] && grep -q "usage:" "$work.err1" || { echo "expected usage error, got $rc1" >&2; cat "$work.err1" >&2; exit 1; }
[ "$rc2" -eq 1 ] && grep -q "take whole numbers, got 'x'" "$work.err2" || { echo "expected number error, got $rc2" >&2; exit 1; }
if ! "$py" -c 'import skimage' 2>/dev/null; then
  echo "SKIPPED: $py has no scikit-image (apt-get install python3-skimage)"
  exit 77
fi
rm -rf "$work"
"$script" "$build" "$work" --tiles 1 --seed 13 --size 256 --conditions stroma,neuropil >"$work.table"
cat "$work.table"
grep -q "^| stroma | 1 | " "$work.table"
grep -q "^| neuropil | 1 | " "$work.table"
grep -q "Seed 13, 1 tiles of 256x256" "$work.table"
"$py" - "$work/conditions.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["seed"] == 13 and doc["tiles"] == 1, doc
rows = doc["conditions"]
assert [r["condition"] for r in rows] == ["stroma", "neuropil"], rows
for r in rows:
    assert r["nuclei"] > 0, r
    for who in ("flowd", "baseline"):
        for k in ("dice", "precision", "recall", "f1", "aji"):
            assert 0.0 <= r[who][k] <= 1.0, (who, k, r)
        assert r[who]["dice"] > 0.3, (who, r)
print("OK")
PY
# An unknown condition: exit 2 naming it.
set +e
"$script" "$build" "$work/bad" --tiles 1 --size 64 --conditions nope 2>"$work.err3"
rc3=$?
set -e
[ "$rc3" -eq 2 ] && grep -q "condition 'nope'" "$work.err3" || { echo "expected exit 2, got $rc3" >&2; cat "$work.err3" >&2; exit 1; }
