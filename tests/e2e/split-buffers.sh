#!/usr/bin/env bash
# Buffers of at most GGML_XDNA_MAX_BUFFER_MB (the buffer type's max size; 4 GiB by default, as a buffer is
# one kernel argument whose operands are addressed by 32-bit offsets): llama.cpp splits the weights and the
# KV cache over several. With a limit of 1 MiB the trained demo model's weights take several buffers; the
# text generated with the layer on the NPU must be the same as with the default limit.
# usage: split-buffers.sh <llama.cpp bin dir> <libggml-xdna.so> <models dir> <work dir>
set -euo pipefail
. "$(dirname "$0")/no-fallback.sh"
bin=$1 lib=$2 models=$3 work=$4
mkdir -p "$work"
model=$models/demo-trained-Q4_K_M.gguf
[ -f "$model" ] || { echo "missing $model (scripts/make-demo-model.sh trained)"; exit 1; }
run() {  # run <name> [env...]
    local name=$1
    shift
    env GGML_BACKEND_PATH="$lib" GGML_XDNA_DEVICE=sim GGML_XDNA_NPU_OPS=layer "$@" "$bin/llama-completion" -m "$model" \
        -p "The cat" -n 24 -no-cnv --temp 0 -fa on -t 2 -v >"$work/$name.txt" 2>"$work/$name.log" \
        || { echo "llama-completion failed, see $work/$name.log"; exit 1; }
}
run whole
run split GGML_XDNA_MAX_BUFFER_MB=1
whole=$(grep -c "xdna: allocated a buffer" "$work/whole.log" || true)
split=$(grep -c "xdna: allocated a buffer" "$work/split.log" || true)
echo "device buffers: $whole with the default limit, $split with 1 MiB"
status=0
[ "$split" -gt "$whole" ] || { echo "FAIL: the 1 MiB limit split nothing"; status=1; }
no_fallback "$work/whole.log" "one buffer" || status=1
no_fallback "$work/split.log" "1 MiB buffers" || status=1
[ -s "$work/whole.txt" ] || { echo "FAIL: no text generated"; status=1; }
cmp -s "$work/whole.txt" "$work/split.txt" || { echo "FAIL: the text differs"; diff "$work/whole.txt" "$work/split.txt" | head; status=1; }
[ $status = 0 ] && echo "the same text from weights and cache in $split buffers as in $whole: $(head -c 80 "$work/split.txt")"
exit $status
