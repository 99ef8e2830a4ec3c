#!/usr/bin/env bash
# The whole test suite: builds what it needs, then runs every CTest test (unit, backend, the XRT-free
# runtime tests, test-backend-ops, the end-to-end tests on the demo model, and the instrumented builds:
# ASan+UBSan, TSan and the fuzzers on their CI subsets, labels asan, tsan, fuzz; scripts/sanitize.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build_dir=${BUILD_DIR:-$root/build}

BUILD_DIR=$build_dir "$here/build.sh" >/dev/null
models=$(BUILD_DIR=$build_dir "$here/make-demo-model.sh" tiny | tail -n 1)
BUILD_DIR=$build_dir "$here/make-demo-model.sh" tiny-moe >/dev/null   # the MoE demo model, for the KLD test
BUILD_DIR=$build_dir "$here/make-demo-model.sh" trained >/dev/null    # the trained demo model (server, KLD)
BUILD_DIR=$build_dir "$here/make-demo-model.sh" draft >/dev/null      # its draft model (speculative decoding)
cmake -S "$root" -B "$build_dir" -DXDNA_MODELS_DIR="$models" >/dev/null
cd "$build_dir"
# One test per core: most tests are one simulator thread; the instrumented builds start first (their
# COST) and use every core while the other slots run the rest.
ctest --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
