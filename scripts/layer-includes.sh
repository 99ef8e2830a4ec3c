#!/usr/bin/env bash
# The per-layer include roots of src/CMakeLists.txt, for compiles outside CMake (check-xrt-compile.sh,
# test-xrt-mock.sh): <dir>/<layer>/<layer> -> src/<layer>, so a source sees "<layer>/<file>.h" only for
# the layers it is given. Prints the -I flags, one per line, for the layers named.
#
# Usage: scripts/layer-includes.sh <dir> <layer>...    e.g. layer-includes.sh /tmp/x xrt runtime contracts
set -euo pipefail
dir=${1:?usage: $0 <dir> <layer>...}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
for layer in "$@"; do
    [ -d "$root/src/$layer" ] || { echo "no layer src/$layer" >&2; exit 2; }
    mkdir -p "$dir/$layer"
    ln -sfn "$root/src/$layer" "$dir/$layer/$layer"
    echo "-I$dir/$layer"
    # Each op's part of this layer, as "ops/<op>/..." (src/CMakeLists.txt xdna_op_part).
    for part in "$root"/src/ops/*/"$layer"; do
        [ -d "$part" ] || continue
        op=$(basename "$(dirname "$part")")
        mkdir -p "$dir/$layer/ops"
        ln -sfn "$part" "$dir/$layer/ops/$op"
    done
done
# The contracts include the tile ABI shared with the NPU code (xdna_aie_abi: aie/include).
for layer in "$@"; do
    if [ "$layer" = contracts ]; then
        echo "-I$root/aie/include"
    fi
done
