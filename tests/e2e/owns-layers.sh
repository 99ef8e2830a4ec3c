#!/usr/bin/env bash
# XDNA0 as the device that owns layers (GGML_XDNA_DEVICE_TYPE=gpu, the default), as stock llama.cpp sees it:
#  1. llama-completion with no -ngl puts every layer, the output layer and the KV cache on XDNA0;
#  2. each graph is one CPU split (the embedding rows) and one XDNA0 split (GGML_SCHED_DEBUG=2);
#  3. a decoded token takes 4 submissions per layer plus the output head (Q/K/V, attention output,
#     gate/up, down: the host ops between them cut the rest), as the profile counts them;
#  4. the same greedy text as the CPU backend;
#  5. with GGML_XDNA_DEVICE_TYPE=accel, the KV cache stays on the CPU (the behaviour before the option).
# usage: owns-layers.sh <llama.cpp bin dir> <libggml-xdna.so> <models dir> <work dir>
set -euo pipefail
. "$(dirname "$0")/no-fallback.sh"
bin=$1 lib=$2 models=$3 work=$4
mkdir -p "$work"
model=$models/demo-tiny-Q4_K_M.gguf
layers=4
run=("$bin/llama-completion" -m "$model" -p "The capital of France is" -n 8 -no-cnv --temp 0 -t 2 -v)
GGML_BACKEND_PATH=$lib GGML_XDNA_DEVICE=sim GGML_SCHED_DEBUG=2 GGML_XDNA_PROFILE=1 "${run[@]}" \
    >"$work/gpu.txt" 2>"$work/gpu.log" || { echo "llama-completion failed, see $work/gpu.log"; exit 1; }
status=0
grep -q "offloaded $((layers + 1))/$((layers + 1)) layers to GPU" "$work/gpu.log" \
    || { echo "FAIL: not every layer and the output layer offloaded"; status=1; }
grep -q "XDNA0 KV buffer size" "$work/gpu.log" || { echo "FAIL: the KV cache is not on XDNA0"; status=1; }
grep -E "load_tensors: .*model buffer size|KV buffer size|graph splits = " "$work/gpu.log" | sed 's/^[0-9.]* [A-Z] /  /'
# The scheduler prints each graph's splits; every graph must have at most one CPU and one XDNA0 split.
awk '/^## SPLIT #0/ { if (n) print n; n = 0 } /^## SPLIT #/ { n++ } END { if (n) print n }' "$work/gpu.log" | sort -u >"$work/splits.txt"
echo "splits per graph: $(paste -sd' ' "$work/splits.txt")"
[ "$(tail -n 1 "$work/splits.txt")" -le 2 ] || { echo "FAIL: a graph has more than two splits"; status=1; }
grep -q "^## SPLIT #1: XDNA0" "$work/gpu.log" || { echo "FAIL: no XDNA0 split"; status=1; }
most=$(sed -n 's/.*submissions per graph: [0-9.]* on average, \([0-9]*\) at most.*/\1/p' "$work/gpu.log")
echo "submissions per graph, at most: ${most:-none} (expected $((4 * layers + 1)))"
[ "${most:-0}" = $((4 * layers + 1)) ] || { echo "FAIL: expected $((4 * layers + 1)) submissions per graph"; status=1; }
grep "cut .* by host ops" "$work/gpu.log" || true
env -u GGML_BACKEND_PATH "${run[@]}" >"$work/cpu.txt" 2>/dev/null || { echo "CPU run failed"; exit 1; }
cmp -s "$work/cpu.txt" "$work/gpu.txt" || { echo "FAIL: greedy text differs from the CPU backend's"; diff "$work/cpu.txt" "$work/gpu.txt" | head; status=1; }
GGML_BACKEND_PATH=$lib GGML_XDNA_DEVICE=sim GGML_XDNA_DEVICE_TYPE=accel "${run[@]}" >"$work/accel.txt" 2>"$work/accel.log" \
    || { echo "accel run failed, see $work/accel.log"; exit 1; }
grep -q "CPU KV buffer size" "$work/accel.log" || { echo "FAIL: as accel, the KV cache is not on the CPU"; status=1; }
no_fallback "$work/gpu.log" "the run owning the layers" || status=1
no_fallback "$work/accel.log" "the accel run" || status=1
[ $status = 0 ] && echo "XDNA0 owns the layers and the KV cache; one XDNA0 split per graph; same text as the CPU"
exit $status
