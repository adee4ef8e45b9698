#!/usr/bin/env bash
# Checks that engine/ is layered: a file may include its own room's headers
# and those of lower floors, never a higher floor's. The floors follow the
# data path (docs/architecture.md, "The rooms"): the command line drives the
# network, which drives a run, which drives workers, queues and the graph.
#
#   tools/check-layers.sh [ENGINE_DIR]     exit 0: layered; 1: lists each offence
set -euo pipefail
engine=${1:-"$(dirname "$0")/../engine"}
cd "$engine"

# floor of each room (top folder of engine/; net/* counts as one floor)
floor() {
  case "$1" in
    util | memory | h5) echo 0 ;;
    plugin | wire | trace) echo 1 ;;
    workflow | sched | placement) echo 2 ;;
    exec) echo 3 ;;
    runtime) echo 4 ;;
    store) echo 5 ;;
    net) echo 6 ;;
    cli) echo 7 ;;
    *) echo "" ;;
  esac
}

bad=0
while IFS= read -r file; do
  room=${file%%/*}
  from=$(floor "$room")
  [[ -z $from ]] && { echo "check-layers: $file is in a room with no floor ($room): add it to $0" >&2; bad=1; continue; }
  while IFS= read -r target; do
    to_room=${target%%/*}
    [[ $to_room == "$target" ]] && continue  # same-folder or bare include
    to=$(floor "$to_room")
    [[ -z $to ]] && continue                  # not an engine room (flowd/ SDK headers, libraries)
    if ((to > from)); then
      echo "check-layers: engine/$file includes \"$target\": $room (floor $from) must not depend on $to_room (floor $to)"
      bad=1
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
done < <(find . -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) | sed 's#^\./##' | sort)

((bad == 0)) && echo "check-layers: engine/ is layered"
exit $bad
