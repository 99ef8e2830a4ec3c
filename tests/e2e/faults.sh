#!/usr/bin/env bash
# Fault injection end to end: llama-perplexity on the demo model with GGML_XDNA_SIM_FAULTS, which makes
# the simulator fail a seeded fraction of submissions (errors that leave NaN in the outputs, and
# timeouts). Every failed submission must be computed on the CPU by the backend's fallback, which runs
# the same contract arithmetic as the device (bit-identical twins of the kernels): so the perplexity must
# be the fault-free run's, the process must not crash, and the backend must report exactly as many
# fallbacks as the simulator injected faults. (A single int8 activation code flipped anywhere changes
# the perplexity of this random-weight model by far more than the tolerance below.)
# The perplexity itself is compared to 1e-11 relative, not bit for bit: llama-perplexity sums the
# per-token log-probabilities on several threads in whatever order they finish (two fault-free runs
# differed in the 15th digit). Reordering a double sum of ~400 terms of size ~25 moves the mean by at
# most ~400 * 2^-53 * 25 ~ 1e-12, and PPL = exp(mean) relatively by the same: 1e-11 leaves 10x margin.
#
# XDNA0 owns the layers and the KV cache here (GGML_XDNA_DEVICE_TYPE=gpu): a failed submission sits between
# host ops that read and write the cache on device memory, and its recomputation must leave them exact.
#
# FAULTS_CACHE_TYPE=q8_0: a Q8_0 KV cache (-ctk q8_0 -ctv q8_0) on the trained demo model (head dim 64,
# which the NPU's Q8_0 attention takes): the recomputation rewrites Q8_0 rows and the Hadamard rotations.
#
# usage: faults.sh <llama.cpp bin dir> <libggml-xdna.so> <models dir> <text file> <work dir> [rate,seed]
set -euo pipefail
bin=$1 lib=$2 models=$3 text=$4 work=$5 faults=${6:-0.2,7}
mkdir -p "$work"
model=$models/demo-tiny-Q4_K_M.gguf
cache=${FAULTS_CACHE_TYPE:-f16}
[ "$cache" = f16 ] || model=$models/demo-trained-Q4_K_M.gguf
# FAULTS_MODEL=tiny-moe: the MoE demo model, whose experts' rows the NPU gathers, quantizes and scatters
# inside the submissions with the glue there (a failed one's recomputation runs those moves on the host).
[ -z "${FAULTS_MODEL:-}" ] || model=$models/demo-$FAULTS_MODEL-Q4_K_M.gguf
# Prefill batches of 32 tokens: many submissions (one per split and batch), so the rate gives many faults.
common=(-m "$model" -f "$text" -c 128 -b 32 -ub 32 --chunks 3 -t 2)
[ "$cache" = f16 ] || common+=(-ctk "$cache" -ctv "$cache")

run() {  # run <log> [env...]
    local log=$1
    shift
    env GGML_BACKEND_PATH="$lib" GGML_XDNA_DEVICE=sim GGML_XDNA_DEVICE_TYPE=gpu "$@" "$bin/llama-perplexity" "${common[@]}" >"$log" 2>&1 \
        || { echo "llama-perplexity failed (exit $?), see $log"; exit 1; }
}

run "$work/clean.log"
run "$work/faults.log" GGML_XDNA_SIM_FAULTS="$faults" GGML_XDNA_PROFILE=1

status=0
# The profile names the host runs between submissions: the cache writes among them show whole layers ran.
# With GGML_XDNA_NPU_OPS=glue the cache writes run inside the submissions instead (the f32_to_f16 rows
# of the kernel table): a failed submission then leaves the KV rows it wrote, and its recomputation on
# the host must write them again from inputs the failed run may have overwritten.
# With GGML_XDNA_NPU_OPS=layer the attention runs there too (the fa_block rows): a failed submission's
# recomputation then reads the KV rows the same submission wrote.
if [ "${GGML_XDNA_NPU_OPS:-none}" = glue ] || [ "${GGML_XDNA_NPU_OPS:-none}" = layer ]; then
    grep -q "^  f32_to_$cache " "$work/faults.log" || { echo "FAIL: the KV-cache writes did not run on the NPU"; status=1; }
    if [ "$GGML_XDNA_NPU_OPS" = layer ]; then
        grep -q "^  fa_block" "$work/faults.log" || { echo "FAIL: the attention did not run on the NPU"; status=1; }
    fi
    if [ "${FAULTS_MODEL:-}" = tiny-moe ]; then
        grep -q "MUL_MAT_ID expert invocations" "$work/faults.log" && grep -q "^  get_rows_f32 " "$work/faults.log" ||
            { echo "FAIL: the experts or their rows' gathers did not run on the NPU"; status=1; }
    fi
else
    grep -q "cut .* by host ops .*SET_ROWS" "$work/faults.log" || { echo "FAIL: no whole layer ran on XDNA0 (no SET_ROWS between submissions)"; status=1; }
fi
clean=$(sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p' "$work/clean.log")
faulty=$(sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p' "$work/faults.log")
echo "without faults: PPL $clean; with faults $faults: PPL $faulty"
[ -n "$clean" ] && [ -n "$faulty" ] && awk -v a="$clean" -v b="$faulty" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-11 * a) }' \
    || { echo "FAIL: the perplexity changed under faults"; status=1; }

# "xdna: XDNA0: <fallbacks> of <submissions> submissions fell back ..." per backend freed;
# "xdna: simulator: GGML_XDNA_SIM_FAULTS injected <n> faults in <m> submissions ..." when the device closes.
fallbacks=$(awk '/submissions fell back to the CPU/ { for (i = 1; i <= NF; ++i) if ($i == "of") s += $(i - 1) } END { print s + 0 }' "$work/faults.log")
injected=$(sed -n 's/.*GGML_XDNA_SIM_FAULTS injected \([0-9]*\) faults.*/\1/p' "$work/faults.log" | tail -n 1)
clean_fallbacks=$(awk '/submissions fell back to the CPU/ { for (i = 1; i <= NF; ++i) if ($i == "of") s += $(i - 1) } END { print s + 0 }' "$work/clean.log")
grep -h "submissions fell back\|GGML_XDNA_SIM_FAULTS injected" "$work/faults.log"
echo "faults injected: ${injected:-none reported}, fallbacks reported: $fallbacks (fault-free run: $clean_fallbacks)"
[ -n "$injected" ] && [ "$injected" -gt 0 ] || { echo "FAIL: no fault was injected"; status=1; }
[ "$fallbacks" = "${injected:-x}" ] || { echo "FAIL: fallbacks reported differ from faults injected"; status=1; }
[ "$clean_fallbacks" = 0 ] || { echo "FAIL: the fault-free run fell back"; status=1; }
exit $status
