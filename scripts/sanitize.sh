#!/usr/bin/env bash
# Instrumented builds and what they run. Each mode has a build directory of its own.
#   asan  ASan + UBSan: the unit and backend test programs, the concurrency test, and test-backend-ops
#         MUL_MAT on a subset of types (all of MUL_MAT with --full)
#   tsan  ThreadSanitizer: the concurrency tests (two backends computing at once on one device; the
#         shared device, its thread pools and the free log) (--full: also the backend tests)
#   fuzz  libFuzzer (clang): each fuzzer of tests/fuzz replays its committed corpus, then fuzzes for
#         20 s (--full: 10 minutes each)
# CI runs the subsets (CTest labels asan, tsan, fuzz in the main build call this script); the full runs
# are `scripts/sanitize.sh <mode> --full`.
#
# usage: sanitize.sh asan|tsan|fuzz [--full]   (BUILD_DIR: build directory, default build-<mode>;
#        LLAMA_CPP_DIR: the llama.cpp cache, made by scripts/llama-cpp.sh when unset)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
mode=${1:?usage: $0 asan|tsan|fuzz [--full]}
full=0
[ "${2:-}" = --full ] && full=1
build_dir=${BUILD_DIR:-$root/build-$mode}
llama=${LLAMA_CPP_DIR:-$("$here/llama-cpp.sh" | tail -n 1)}
bin=$llama/build/bin

args=(-DCMAKE_BUILD_TYPE=Release -DLLAMA_CPP_DIR="$llama")
if command -v ccache >/dev/null 2>&1; then
    args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
case $mode in
    asan) args+=(-DXDNA_SANITIZE=address)
          targets=(test-weight-layout test-runtime test-backend test-concurrency ggml-xdna xdna-info)
          [ $full = 1 ] && targets+=(test-timing-model test-kernels) ;;
    tsan) args+=(-DXDNA_SANITIZE=thread)
          targets=(test-concurrency)
          [ $full = 1 ] && targets+=(test-backend) ;;
    fuzz) command -v clang++ >/dev/null || { echo "clang++ not found (scripts/install-deps.sh installs it)"; exit 1; }
          args+=(-DXDNA_SANITIZE=fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
                 -DXDNA_FUZZ_SECONDS=$([ $full = 1 ] && echo 600 || echo 20))
          targets=(fuzz_manifest fuzz_weight_packing fuzz_control_decode fuzz_dma_interpreter fuzz_stream_builder) ;;
    *) echo "unknown mode '$mode': asan, tsan or fuzz" >&2; exit 2 ;;
esac

start=$(date +%s)
cmake -S "$root" -B "$build_dir" "${args[@]}" >/dev/null
cmake --build "$build_dir" -j "${JOBS:-$(nproc)}" --target "${targets[@]}" >/dev/null
echo "[$mode] built in $(( $(date +%s) - start )) s"

t=$build_dir/tests
export GGML_XDNA_DEVICE=sim
# Any finding fails the run. The prebuilt llama.cpp libraries are not instrumented; leak checking is off
# where their process-lifetime objects would be reported (test-backend-ops).
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
case $mode in
    asan)
        export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
        "$t/test-weight-layout" --gtest_brief=1
        "$t/runtime/test-runtime" --gtest_brief=1 --gtest_filter=-NpuDiscovery.InaccessibleDeviceNode
        "$t/test-backend" --gtest_brief=1
        "$t/test-concurrency" --gtest_brief=1
        if [ $full = 1 ]; then
            "$t/timing/test-timing-model" --gtest_brief=1
            "$t/kernels/test-kernels" --gtest_brief=1
        fi
        # test-backend-ops loads the instrumented backend into an uninstrumented program: the ASan
        # runtime must be loaded first. CI: the types of the demo models; --full: every MUL_MAT case.
        pattern=()
        [ $full = 1 ] || pattern=(-p "type_a=(q4_K|q6_K|q8_0|f16),type_b=f32")
        log=$build_dir/backend-ops.log
        LD_PRELOAD="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libubsan.so)" ASAN_OPTIONS=detect_leaks=0 \
            GGML_BACKEND_PATH="$build_dir/src/libggml-xdna.so" "$bin/test-backend-ops" -b XDNA0 -o MUL_MAT "${pattern[@]}" \
            >"$log" 2>&1 || { tail -n 30 "$log"; echo "[asan] test-backend-ops failed, see $log"; exit 1; }
        grep -E "tests passed" "$log"
        grep -q "Backend XDNA0: .*OK" "$log" || { echo "[asan] XDNA0 not OK, see $log"; exit 1; }
        ;;
    tsan)
        "$t/test-concurrency" --gtest_brief=1
        [ $full = 1 ] && "$t/test-backend" --gtest_brief=1
        ;;
    fuzz)
        (cd "$build_dir" && ctest -L fuzz --output-on-failure)
        ;;
esac
echo "[$mode] clean, $(( $(date +%s) - start )) s in all"
