#!/usr/bin/env bash
# The code printed in the docs is the code the tests compile: every fenced
# block preceded by a marker line
#   <!-- example: examples/DIR/FILE -->
# in DOCS/*.md must equal DOCS/examples/DIR/FILE byte for byte (the first
# fenced block after the marker). Fails naming each block that drifted.
#   doc_examples_in_sync.sh DOCS
set -euo pipefail
docs=$1
checked=0 drifted=0
for md in "$docs"/*.md; do
  while IFS=: read -r line path; do
    [ -n "$path" ] || continue
    if [ ! -f "$docs/$path" ]; then
      echo "$md:$line: marked example $path does not exist" >&2
      drifted=$((drifted + 1))
      continue
    fi
    block=$(awk -v start="$line" 'NR > start && !open && /^```/ { open = 1; next }
                                  open && /^```$/ { exit }
                                  open { print }' "$md")
    if ! diff -u <(printf '%s\n' "$block") "$docs/$path" >&2; then
      echo "$md:$line: the block above differs from $path (copy the file into the page)" >&2
      drifted=$((drifted + 1))
    fi
    checked=$((checked + 1))
  done < <(grep -n -o '<!-- example: [^ ]* -->' "$md" | sed -E 's/<!-- example: ([^ ]*) -->/\1/')
done
if [ "$checked" -eq 0 ]; then
  echo "no marked examples found in $docs/*.md" >&2
  exit 1
fi
[ "$drifted" -eq 0 ] || exit 1
echo "OK: $checked marked example(s) match their files"
