#!/usr/bin/env bash
# The registration tables of docs/benchmarks.md (issue 14): accuracy of
# flowd's scheme (pairwise + compose + refine) beside phase correlation and
# OpenCV's findTransformECC on generated TEM series with known motions (64
# frames of 512^2, seeds 1-3, the generator's defaults: ~3 lattice periods of
# drift, 4 counts per pixel, scan-line jitter), then the time per pair on one
# core at 512^2 and 1920x1856. One thread throughout.
# usage: tools/bench/registration_accuracy.sh [BUILD_DIR] [SEEDS...]
set -euo pipefail
build=${1:-build}
shift || true
seeds=("$@")
((${#seeds[@]})) || seeds=(1 2 3)
bench=$build/bin/flowd-bench-registration
[[ -x $bench ]] || { echo "registration_accuracy: $bench not built (ninja -C $build flowd-bench-registration)" >&2; exit 1; }

echo "## Accuracy, 64 frames of 512x512"
"$bench" --frames 64 --size 512 --seeds "${seeds[@]}"
echo
echo "## Time per pair, one core"
"$bench" --time-pairs --size 512 --seeds "${seeds[@]}"
"$bench" --time-pairs --width 1920 --height 1856 --seeds "${seeds[0]}" | tail -n +3
