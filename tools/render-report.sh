#!/usr/bin/env bash
# Renders a flowd HTML run report with headless Chromium, to look at it (or
# attach it to a review) without a desktop, and to let tests check what the
# page's JavaScript drew.
#
#   tools/render-report.sh REPORT.html OUT.png [WIDTHxHEIGHT]   screenshot (default 1400x1800)
#   tools/render-report.sh --dom REPORT.html [WIDTHxHEIGHT]     print the rendered DOM on stdout
#
# CHROMIUM overrides the browser (default /usr/bin/chromium).
set -euo pipefail

usage() {
  echo "usage: $0 REPORT.html OUT.png [WIDTHxHEIGHT]" >&2
  echo "       $0 --dom REPORT.html [WIDTHxHEIGHT]" >&2
  exit 2
}

mode=png
if [[ ${1:-} == --dom ]]; then
  mode=dom
  shift
fi
if [[ $mode == png ]]; then
  (($# == 2 || $# == 3)) || usage
  report=$1 out=$2 size=${3:-1400x1800}
else
  (($# == 1 || $# == 2)) || usage
  report=$1 out= size=${2:-1400x1800}
fi
[[ $size =~ ^([0-9]+)x([0-9]+)$ ]] || { echo "render-report: size must be WIDTHxHEIGHT, got '$size'" >&2; exit 2; }
width=${BASH_REMATCH[1]} height=${BASH_REMATCH[2]}
[[ -f $report ]] || { echo "render-report: no such report: $report" >&2; exit 1; }

chromium=${CHROMIUM:-/usr/bin/chromium}
[[ -x $chromium ]] || [[ -n ${CHROMIUM:-} ]] || chromium=$(command -v chromium || true)
[[ -n $chromium && -x $chromium ]] ||
  { echo "render-report: chromium not found; install it with tools/install-deps.sh --report" >&2; exit 1; }

# A file:// URL for the report's absolute path, with the characters that
# would end or change the path percent-encoded.
abs=$(realpath -- "$report")
url_path=$(printf '%s' "$abs" | sed -e 's/%/%25/g' -e 's/ /%20/g' -e 's/#/%23/g' -e 's/?/%3F/g')
url="file://$url_path"

# A throwaway profile per run: no state shared with other renders or users.
profile=$(mktemp -d "${TMPDIR:-/tmp}/flowd-render.XXXXXX")
trap 'rm -rf -- "$profile"' EXIT
log=$profile/chromium.log

# The network flags matter: without them Chromium waits on background
# requests that never finish on a closed machine.
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
  --disable-component-update --disable-sync --user-data-dir="$profile/profile" --hide-scrollbars
  --virtual-time-budget=5000 --window-size="$width,$height")

fail() {
  echo "render-report: $1" >&2
  tail -n 20 "$log" >&2 || true
  exit 1
}

if [[ $mode == dom ]]; then
  timeout 120 "$chromium" "${flags[@]}" --dump-dom "$url" 2>"$log" || fail "chromium failed to render $report"
  exit 0
fi

out_abs=$(realpath -m -- "$out")
mkdir -p -- "$(dirname -- "$out_abs")"
rm -f -- "$out_abs"
timeout 120 "$chromium" "${flags[@]}" --screenshot="$out_abs" "$url" >"$log" 2>&1 ||
  fail "chromium failed to render $report"
[[ -s $out_abs ]] || fail "chromium wrote no screenshot to $out"
echo "render-report: wrote $out (${width}x${height})"
