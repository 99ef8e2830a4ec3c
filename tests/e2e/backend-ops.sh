#!/usr/bin/env bash
# llama.cpp's own test-backend-ops for MUL_MAT (or MUL_MAT_ID) against the XDNA backend (simulator),
# loaded as stock llama.cpp loads it. Every case must pass, and no case of a weight type the backend
# claims may be reported "not supported" by XDNA0.
# usage: backend-ops.sh <llama.cpp bin dir> <libggml-xdna.so> <xdna-info> [MUL_MAT|MUL_MAT_ID]
set -euo pipefail
bin=$1 lib=$2 info=$3 op=${4:-MUL_MAT}
# The claimed weight types come from the contract table (xdna-info --list-types), not from a copy here.
types=$("$info" --list-types | paste -sd'|')
[ -n "$types" ] || { echo "xdna-info --list-types printed nothing"; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# BACKEND_OPS_PARAMS: a -p regex choosing a subset of the cases (slow simulator modes run a subset in CI).
subset=()
[ -z "${BACKEND_OPS_PARAMS:-}" ] || subset=(-p "$BACKEND_OPS_PARAMS")
# With the glue on the NPU, a MUL_MAT_ID's rows are moved by NPU gathers and quantizations (plan/expert-plan.h):
# the profile must show them.
npu_moves_rows=0
[ "$op" = MUL_MAT_ID ] && [[ "${GGML_XDNA_NPU_OPS:-}" =~ ^(glue|layer)$ ]] && npu_moves_rows=1
GGML_XDNA_PROFILE=$npu_moves_rows GGML_BACKEND_PATH=$lib GGML_XDNA_DEVICE=sim "$bin/test-backend-ops" -b XDNA0 -o "$op" "${subset[@]}" >"$log" 2>&1 || {
    grep -E "FAIL|error" "$log" | head -20; echo "test-backend-ops failed"; exit 1; }
grep -E "tests passed" "$log"
# A device failure falls back to the host and still passes the case: none may happen here (a stream
# reading past a weight's tail room, for one, would be such a failure).
if grep -q "xdna: device run failed" "$log"; then grep "xdna: device run failed" "$log" | head -3; echo "a device run failed"; exit 1; fi
# Every case of the op must have been tried (a filter that matches nothing would pass vacuously).
grep -q "^  $op(" "$log" || { echo "no $op case ran"; exit 1; }
# With GGML_XDNA_SIM_EXEC=kernels the simulator must say it ran the core kernel code itself.
if [ "${GGML_XDNA_SIM_EXEC:-}" = kernels ]; then
    grep -q "executing the kernel code" "$log" || { echo "the simulator did not run the kernel code"; exit 1; }
    echo "executed the NPU core kernel code (GGML_XDNA_SIM_EXEC=kernels)"
fi
# With GGML_XDNA_SIM_EXEC=stream it must say it ran the instruction streams through the DMA interpreter.
if [ "${GGML_XDNA_SIM_EXEC:-}" = stream ]; then
    grep -q "executing the instruction streams" "$log" || { echo "the simulator did not run the instruction streams"; exit 1; }
    echo "executed the host-built instruction streams and the core kernel code (GGML_XDNA_SIM_EXEC=stream)"
fi
if [ $npu_moves_rows = 1 ]; then
    grep -qE "^  get_rows_f32 " "$log" && grep -qE "^  act_quant_" "$log" ||
        { echo "GGML_XDNA_NPU_OPS=$GGML_XDNA_NPU_OPS: no NPU gather or quantization of expert rows in the profile"; exit 1; }
    echo "the experts' rows were gathered, quantized and scattered by NPU invocations"
fi
claimed="type_a=($types),type_b=(f32|f16|bf16),"
# o > 1 cases add the matmul outputs with ADD, an op that stays on the CPU: refused for the ADD, not the matmul.
# A refusal reason logged inside a case's line pushes its verdict onto the next line: join them first.
refused=$(awk '/^not supported/ { prev = prev " " $0; next } { if (NR > 1) print prev; prev = $0 } END { print prev }' "$log" |
    grep -E "^  $op\(" | grep -E "$claimed" | grep "not supported \[XDNA0" | grep -v -E ',o=[2-9]' || true)
if [ -n "$refused" ]; then
    echo "claimed weight types reported not supported:"; echo "$refused" | head -20; exit 1
fi
grep -q "Backend XDNA0: .*OK" "$log" || { echo "XDNA0 not OK"; exit 1; }
echo "all $op cases of claimed types supported and passing"
