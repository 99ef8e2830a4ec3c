#!/usr/bin/env bash
# The e2e timing model's order of a decoded token's invocations is the backend's. `xdna-bench e2e` models
# a token's submissions from a model's dimensions, in an order written by hand after the batch planner
# (src/plan/batch-plan.cpp); each change of program between consecutive invocations is an xclbin switch it
# charges. If the backend orders a layer otherwise, the modelled figures are for another program: this
# test fails. The programs of the last decoded token's submissions in the backend's trace
# (GGML_XDNA_TRACE) against `xdna-bench order` for the same GGUF, line by line:
#   - the trained demo model, with the glue on the NPU (GGML_XDNA_NPU_OPS=glue) and with attention too
#     (layer), F16 and Q8_0 KV caches;
#   - the tiny MoE demo model (Qwen3-MoE-shaped: norms of q and k, experts routed on the host between
#     submissions) in layer mode with an F16 cache. Its head dim of 32 takes neither the Hadamard
#     rotations nor the Q8_0 attention program, and the e2e model does not follow the backend's MoE
#     layers in glue mode: neither is compared.
# MODEL_ORDER_RUNS replaces that list (words model:ops:cache, the model demo-<model>-Q4_K_M.gguf), e.g.
# "1b:layer:f16 1b:layer:q8_0 8b:layer:f16 8b:layer:q8_0" for the larger random-weight models CI does not
# make (scripts/make-demo-model.sh 1b|8b; those four match, about 30 s).
#
# usage: model-order.sh <llama.cpp bin dir> <libggml-xdna.so> <xdna-bench> <models dir> <work dir>
set -euo pipefail
. "$(dirname "$0")/no-fallback.sh"
bin=$1 lib=$2 bench=$3 models=$4 work=$5
here=$(dirname "$0")
mkdir -p "$work"
for run in ${MODEL_ORDER_RUNS:-trained:layer:f16 trained:layer:q8_0 trained:glue:f16 trained:glue:q8_0 tiny-moe:layer:f16}; do
    IFS=: read -r name ops cache <<<"$run"
    model=$models/demo-$name-Q4_K_M.gguf
    [ -f "$model" ] || { echo "missing $model (scripts/make-demo-model.sh $name makes it)"; exit 1; }
    tag=$name-$ops-$cache
    rm -f "$work/$tag.json"*
    # A prompt of 5 tokens, then decoded tokens: the last graph is one decoded token's, at 7 KV rows.
    GGML_BACKEND_PATH=$lib GGML_XDNA_DEVICE=sim GGML_XDNA_NPU_OPS=$ops GGML_XDNA_TRACE="$work/$tag.json" \
        "$bin/llama-completion" -m "$model" -p "Once upon a time" -n 2 -c 128 -fa on -ctk $cache -ctv $cache \
        -no-cnv --temp 0 -t 2 >"$work/$tag.txt" 2>"$work/$tag.log" \
        || { echo "llama-completion ($tag) failed, see $work/$tag.log"; exit 1; }
    no_fallback "$work/$tag.log" "the $tag run" || exit 1
    "$bench" order --model "$model" --npu-ops $ops --kv $cache --context 8 >"$work/$tag.model"
    submissions=$(( $(grep -c '^--$' "$work/$tag.model" || true) + 1 ))
    # Every backend traces to a file of its own (path, path.2, ...): the one with the model's layers.
    trace=$(ls -S "$work/$tag.json"* | head -n 1)
    python3 "$here/trace-programs.py" "$trace" "$submissions" >"$work/$tag.backend"
    if ! diff "$work/$tag.model" "$work/$tag.backend" >"$work/$tag.diff"; then
        echo "FAIL: $tag: the e2e model orders a decoded token otherwise than the backend (< model, > backend):"
        head -n 40 "$work/$tag.diff"
        exit 1
    fi
    echo "$tag: $(grep -vc '^--$' "$work/$tag.model") invocations in $submissions submission(s), the same programs in the same order"
done
