#!/usr/bin/env bash
# Peak resident memory of llama-completion --no-mmap with and without the XDNA backend (goal: <= 1.05x).
# Weights live in exactly one place either way: the CPU's buffers, or XDNA's packed weight buffers.
#
# usage: bench/rss.sh <model.gguf>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
model=$1
bin=${LLAMA_BIN:-$("$root/scripts/llama-cpp.sh" | tail -n 1)/build/bin}
lib=${BUILD_DIR:-$root/build}/src/libggml-xdna.so
run=("$bin/llama-completion" -m "$model" --no-mmap -p "The capital of France is" -n 16 -no-cnv --temp 0 -c 512)

cpu=$(env -u GGML_BACKEND_PATH /usr/bin/time -f "%M" "${run[@]}" 2>&1 >/dev/null | tail -n 1)
xdna=$(GGML_BACKEND_PATH=$lib GGML_XDNA_DEVICE=${GGML_XDNA_DEVICE:-sim} /usr/bin/time -f "%M" "${run[@]}" 2>&1 >/dev/null | tail -n 1)
size=$(du -k "$model" | cut -f1)
echo "model $model ($((size / 1024)) MiB)"
echo "peak RSS, llama-completion --no-mmap: CPU only $((cpu / 1024)) MiB, with XDNA $((xdna / 1024)) MiB, ratio $(awk -v a="$xdna" -v b="$cpu" 'BEGIN { printf "%.3f", a / b }')x"
