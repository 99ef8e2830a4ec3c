#!/usr/bin/env bash
# A whole model through the designs' instruction streams: the trained demo model (F16) with every op of its
# layers on the NPU (GGML_XDNA_NPU_OPS=layer, flash attention on), a prompt of several ubatches (the causal
# mask's hidden blocks skipped by the attention stream, the ubatches without outputs planned without
# invocations for their empty ops), run by the simulator's stream mode (GGML_XDNA_SIM_EXEC=stream: the
# host-built instruction streams through the DMA interpreter, the core programs calling the kernel code) and
# by its kernels mode (the same kernel code without the data movement). Greedy, the two must print the same
# text, and the stream run must not fall back to the CPU anywhere (a fallback recomputes, so the text alone
# would not show it). With the F16 KV cache and the Q8_0 one.
#
# usage: stream-model.sh <llama.cpp bin dir> <libggml-xdna.so> <models dir> <corpus dir> <work dir>
set -euo pipefail
. "$(dirname "$0")/no-fallback.sh"
bin=$1 lib=$2 models=$3 corpus=$4 work=$5
model=$models/demo-trained-F16.gguf
mkdir -p "$work"
[ -f "$model" ] || { echo "missing $model (scripts/make-demo-model.sh trained makes it)"; exit 1; }
# Filtered into a file first: `grep | head` would end grep by SIGPIPE, which pipefail counts as a failure.
grep -v '^%$' "$corpus/fortunes" >"$work/corpus.txt"
prompt=$(head -c 240 "$work/corpus.txt" | tr '\n' ' ')
for cache in f16 q8_0; do
    for mode in kernels stream; do
        GGML_BACKEND_PATH=$lib GGML_XDNA_DEVICE=sim GGML_XDNA_NPU_OPS=layer GGML_XDNA_SIM_EXEC=$mode \
            "$bin/llama-completion" -m "$model" -p "$prompt" -n 32 -c 128 -b 128 -ub 32 -fa on -ctk $cache -ctv $cache \
            -no-cnv --temp 0 -t 2 >"$work/$cache-$mode.txt" 2>"$work/$cache-$mode.log" \
            || { echo "llama-completion ($mode, $cache cache) failed, see $work/$cache-$mode.log"; exit 1; }
        no_fallback "$work/$cache-$mode.log" "the $mode run ($cache cache)" || exit 1
    done
    cmp -s "$work/$cache-kernels.txt" "$work/$cache-stream.txt" \
        || { echo "FAIL: stream and kernels mode print different text ($cache cache): $work/$cache-*.txt"; exit 1; }
    echo "$cache cache, stream mode = kernels mode: $(tail -c 120 "$work/$cache-stream.txt" | tr '\n' ' ')"
done
