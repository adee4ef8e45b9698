#!/usr/bin/env bash
# Installs the Debian packages flowd needs to build, test and run. Idempotent:
# prints nothing when everything is already installed.
#
#   tools/install-deps.sh           build + test dependencies
#   tools/install-deps.sh --bench   also StarPU, valgrind and OpenCV's video module, for tools/bench
#   tools/install-deps.sh --report  also Chromium, for rendering HTML reports
#   tools/install-deps.sh --launchers  also Open MPI, Slurm and munge, for the
#                                      launcher tests (tests/launchers)
#   tools/install-deps.sh --train   also Debian's PyTorch (CPU) and scikit-image: the
#                                   learned nuclei method's training (tools/train/nuclei)
#                                   and the classical baseline (tools/baseline)
set -euo pipefail

packages=(
  g++ clang cmake ninja-build pkg-config
  libboost-dev libboost-program-options-dev libboost-filesystem-dev   # Asio, DLL (headers), Program_options
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev   # only the OpenCV modules we use
  libzmq3-dev cppzmq-dev
  nlohmann-json3-dev
  libhdf5-dev hdf5-tools
  libfftw3-dev
  zlib1g-dev                                                          # gzipped proteomes (plugins/cvtree)
  libjpeg-dev libtiff-dev                                             # damaged JPEG/TIFF inputs refused (plugins/imagefile)
  libopencv-dnn-dev                                                   # the learned nuclei method's network (plugins/nuclei/learned)
  libgtest-dev libgmock-dev
)
for arg in "$@"; do
  case "$arg" in
    --bench) packages+=(libstarpu-dev valgrind libopencv-video-dev) ;;   # video: findTransformECC, the registration peer
    --report) packages+=(chromium) ;;
    --launchers) packages+=(openmpi-bin slurm-wlm munge iproute2 util-linux) ;;
    --train) packages+=(python3-torch python3-skimage) ;;
    *) echo "usage: $0 [--bench] [--report] [--launchers] [--train]" >&2; exit 1 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

sudo=()
if [[ $EUID -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root (or install sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
