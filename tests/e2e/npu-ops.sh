#!/usr/bin/env bash
# llama.cpp's test-backend-ops for ops besides the matmuls that the NPU computes when offered
# (GGML_XDNA_NPU_OPS), with the simulator executing their core kernel code. For each "OP:kernel" given:
# every case of OP passes on XDNA0, no device run failed (a failure falls back to the host and would
# still pass), and the profile's kernel table has rows of `kernel`, so the NPU path ran, not only the
# host-op path (which takes the cases the design cannot, with the reason). "OP:k1,k2" asks for rows of each;
# "OP@regex:kernel" runs only the cases of OP whose description matches regex (test-backend-ops -p).
# NPU_OPS_EXEC=stream runs the designs' host-built instruction streams through the DMA interpreter
# instead (GGML_XDNA_SIM_EXEC=stream; a kind whose design has no stream runs its kernel code directly).
# usage: npu-ops.sh <llama.cpp bin dir> <libggml-xdna.so> <npu ops> OP[@regex]:kernel[,kernel]...
set -euo pipefail
bin=$1 lib=$2 ops=$3
exec_mode=${NPU_OPS_EXEC:-kernels}
case $exec_mode in
    kernels) runs="executing the kernel code" ;;
    stream) runs="executing the instruction streams" ;;
    *) echo "NPU_OPS_EXEC=$exec_mode: kernels or stream"; exit 2 ;;
esac
shift 3
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for spec in "$@"; do
    op=${spec%%:*} kernel=${spec#*:}
    filter=()
    if [[ $op == *@* ]]; then filter=(-p "${op#*@}"); op=${op%%@*}; fi
    GGML_BACKEND_PATH=$lib GGML_XDNA_DEVICE=sim GGML_XDNA_SIM_EXEC=$exec_mode GGML_XDNA_NPU_OPS=$ops GGML_XDNA_PROFILE=1 \
        "$bin/test-backend-ops" -b XDNA0 -o "$op" "${filter[@]}" >"$log" 2>&1 || {
        grep -E "FAIL|error" "$log" | head -20; echo "test-backend-ops -o $op failed"; exit 1; }
    grep -q "$runs" "$log" || { echo "$op: the simulator was not $runs"; exit 1; }
    if grep -q "xdna: device run failed" "$log"; then grep "xdna: device run failed" "$log" | head -3; echo "$op: a device run failed"; exit 1; fi
    grep -q "Backend XDNA0: .*OK" "$log" || { echo "$op: XDNA0 not OK"; exit 1; }
    grep -q "^  $op(" "$log" || { echo "no $op case ran"; exit 1; }
    echo "$op: $(grep -E "tests passed" "$log" | tail -1 | sed 's/^ *//'); on the NPU:"
    for k in ${kernel//,/ }; do
        rows=$(grep -E "^  $k " "$log" || true)
        [ -n "$rows" ] || { echo "$op: no $k invocation ran on the NPU"; exit 1; }
        echo "$rows"
    done
    grep -E "^    $op +[0-9]+$" "$log" | sed "s/^ */on the host-op path (cases the design does not take): /" || true
done
