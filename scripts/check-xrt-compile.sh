#!/usr/bin/env bash
# Syntax-check every XRT-facing source (src/xrt/*.cpp) against the public headers of an XRT source
# checkout, without building XRT and without an NPU. See docs/xrt.md.
#
# Usage: scripts/check-xrt-compile.sh <XRT source checkout> [<llama.cpp dir>]
#   <XRT source checkout>  a clone of github.com/Xilinx/XRT at any release >= 2.18
#   <llama.cpp dir>        the LLAMA_CPP_DIR the project is configured with (for ggml.h);
#                          defaults to $LLAMA_CPP_DIR
set -euo pipefail

xrt=${1:?usage: $0 <XRT source checkout> [<llama.cpp dir>]}
llama=${2:-${LLAMA_CPP_DIR:-}}
[ -n "$llama" ] || { echo "give the llama.cpp dir (LLAMA_CPP_DIR) as the second argument" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
inc=$xrt/src/runtime_src/core/include
[ -f "$inc/xrt/xrt_kernel.h" ] || { echo "$inc/xrt/xrt_kernel.h not found: not an XRT source checkout" >&2; exit 2; }
[ -f "$llama/src/ggml/include/ggml.h" ] || { echo "$llama/src/ggml/include/ggml.h not found" >&2; exit 2; }

gen=$(mktemp -d)
trap 'rm -rf "$gen"' EXIT
version=$("$here/scripts/xrt-generated-headers.sh" "$xrt" "$gen")
# The xrt layer sees itself and the layers below it, as in the CMake build.
mapfile -t layers < <("$here/scripts/layer-includes.sh" "$gen/layers" xrt runtime contracts control)

echo "XRT $version headers: $inc"
status=0
for f in "$here"/src/xrt/*.cpp; do
    if g++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror \
        -I"$inc" -I"$gen" "${layers[@]}" \
        -I"$llama/src/ggml/include" \
        "$f"; then
        echo "ok    ${f#$here/}"
    else
        echo "FAIL  ${f#$here/}"
        status=1
    fi
done
exit $status
