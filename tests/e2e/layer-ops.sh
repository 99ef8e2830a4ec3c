#!/usr/bin/env bash
# llama.cpp's own test-backend-ops against XDNA0 for the ops other than the matmuls: as a device that
# owns layers (GGML_XDNA_DEVICE_TYPE=gpu, the default) the backend claims them and computes them on the
# host-op path, on the device's memory. Every case must pass, each op must have run cases on XDNA0, and
# the cases XDNA0 refuses are counted per op (a refusal is never a failure: the scheduler then keeps
# that node on the CPU).
# usage: layer-ops.sh <llama.cpp bin dir> <libggml-xdna.so> [OP[:params regex] ...]   (default: every op
#        of a llama, Qwen3 or Qwen3-MoE layer and of its KV cache, all of their cases; "every": each op
#        test-backend-ops --list-ops names, one after the other, about 30 min on 2 cores, the ops that
#        have no case reported). OP:regex runs the cases of OP whose parameters match regex (-p).
#        LAYER_OPS_ALLOW_EMPTY=1: an op with no case run on XDNA0 is reported, not a failure.
set -euo pipefail
. "$(dirname "$0")/no-fallback.sh"
bin=$1 lib=$2
shift 2
ops=("$@")
if [ "${ops[*]:-}" = every ]; then
    mapfile -t ops < <("$bin/test-backend-ops" --list-ops 2>/dev/null | sed -n 's/^  \([A-Z_0-9]*\)$/\1/p')
    [ ${#ops[@]} -gt 0 ] || { echo "test-backend-ops --list-ops named no op"; exit 1; }
    export LAYER_OPS_ALLOW_EMPTY=1
fi
[ ${#ops[@]} -gt 0 ] || ops=(ADD MUL SCALE RMS_NORM NORM ROPE SET_ROWS CPY CONT GET_ROWS SWIGLU GEGLU FLASH_ATTN_EXT SOFT_MAX
                          SILU GELU ARGSORT TOP_K SUM_ROWS DIV CONCAT)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for spec in "${ops[@]}"; do
    op=${spec%%:*}
    args=(-b XDNA0)
    args+=(-o "$op")
    [ "$spec" = "$op" ] || args+=(-p "${spec#*:}")
    if ! GGML_BACKEND_PATH=$lib GGML_XDNA_DEVICE=sim "$bin/test-backend-ops" "${args[@]}" >"$log" 2>&1; then
        grep -E "FAIL|error" "$log" | head -20
        echo "test-backend-ops -o $op failed"
        exit 1
    fi
    grep -q "Backend XDNA0: .*OK" "$log" || { echo "$op: XDNA0 not OK"; exit 1; }
    no_fallback "$log" "test-backend-ops -o $op" || exit 1
    passed=$(sed -n 's/^ *\([0-9]*\)\/\([0-9]*\) tests passed.*/\1 of \2/p' "$log" | tail -n 1)
    refused=$(grep -c "not supported \[XDNA0" "$log" || true)
    if [ -z "$passed" ] || [ "${passed%% *}" -eq 0 ]; then
        # An op of the list must have cases (a misspelt op name runs none); the sweep over every op
        # (LAYER_OPS_ALLOW_EMPTY=1) meets ops test-backend-ops has no case of.
        echo "$op: no case ran on XDNA0; $refused refused"
        [ "${LAYER_OPS_ALLOW_EMPTY:-0}" = 1 ] || exit 1
        continue
    fi
    echo "$op: $passed cases passed on XDNA0; $refused refused (left to the CPU)"
done
