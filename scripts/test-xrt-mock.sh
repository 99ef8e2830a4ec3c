#!/usr/bin/env bash
# Build and run the XRT device's tests on the mock XRT (tests/xrt-mock): the real src/xrt sources,
# compiled against an XRT source checkout's public headers and linked with a host-memory stand-in for
# libxrt_coreutil. Needs no NPU and does not build XRT. See docs/xrt.md.
#
# Usage: scripts/test-xrt-mock.sh <XRT source checkout> [<llama.cpp dir>]
set -euo pipefail

xrt=${1:?usage: $0 <XRT source checkout> [<llama.cpp dir>]}
llama=${2:-${LLAMA_CPP_DIR:-}}
[ -n "$llama" ] || { echo "give the llama.cpp dir (LLAMA_CPP_DIR) as the second argument" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
inc=$xrt/src/runtime_src/core/include
[ -f "$inc/xrt/xrt_kernel.h" ] || { echo "$inc/xrt/xrt_kernel.h not found: not an XRT source checkout" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
version=$("$here/scripts/xrt-generated-headers.sh" "$xrt" "$work/gen")
echo "building the XRT device tests against XRT $version headers with the mock runtime"
# The xrt layer sees itself and the layers below it, as in the CMake build.
mapfile -t layers < <("$here/scripts/layer-includes.sh" "$work/layers" xrt runtime contracts control)
# The runtime compiles every aie/*/dataflow.json in (src/CMakeLists.txt does the same at configure time).
{
    printf '#include "runtime/design-registry.h"\nnamespace xdna {\nconst BuiltInDesignText kBuiltInDesigns[] = {\n'
    for json in "$here"/aie/*/dataflow.json; do
        printf '    {"%s", R"xdnadataflow(' "$(basename "$(dirname "$json")")"
        cat "$json"
        printf ')xdnadataflow"},\n'
    done
    printf '};\nconst int kBuiltInDesignCount = sizeof kBuiltInDesigns / sizeof kBuiltInDesigns[0];\n}\n'
} >"$work/design-descriptions.cpp"

sources=(
    "$here"/src/xrt/*.cpp
    "$here"/src/runtime/{options,invocation,matmul-invocation,design-registry,runtime-log,kernel-files,kernel-manifest,installed-kernels,npu-discovery,invocation-args,run-errors,design-description,matmul-sequence,rows-sequence,norm-sequence,gather-sequence,quant-sequence,scatter-sequence,rope-sequence,argument-places}.cpp
    "$here"/src/ops/*/runtime/*.cpp
    "$work/design-descriptions.cpp"
    "$here"/src/control/{control-ops,shim-bd}.cpp
    "$here"/src/contracts/*.cpp
    "$here"/tests/xrt-mock/mock-xrt.cpp
    "$here"/tests/xrt-mock/test_xrt_device.cpp
)
# ggml-base: the contracts' layouts (the instruction-stream builder sizes tiles with them).
# libuuid: XRT's inline xrt::uuid needs it (XRT::xrt_coreutil carries it as a PUBLIC dependency).
g++ -std=c++17 -O1 -g -Wall -Wextra -ffp-contract=off \
    -I"$inc" -I"$work/gen" "${layers[@]}" -I"$here/tests/xrt-mock" \
    -I"$llama/src/ggml/include" \
    "${sources[@]}" -o "$work/test-xrt-device" \
    -L"$llama/build/bin" -Wl,-rpath,"$llama/build/bin" -lggml-base \
    -lgtest -lgtest_main -luuid -ldl -pthread
"$work/test-xrt-device" "${@:3}"
