#!/usr/bin/env bash
# The main job: build everything, make the demo model (a small Llama trained here on Debian's fortune
# files, once, in a few minutes), and run stock llama.cpp's llama-completion with its matmuls on the XDNA
# backend: the real NPU when one is present, otherwise the simulated XDNA2 NPU. Ends with what ran where.
# DEMO_PRESET=tiny|1b runs a random-weight model instead (gibberish; for shapes and speed).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build_dir=${BUILD_DIR:-$root/build}

llama=$(BUILD_DIR=$build_dir "$here/build.sh" | tail -n 1)
preset=${DEMO_PRESET:-trained}
models=$(BUILD_DIR=$build_dir "$here/make-demo-model.sh" "$preset" | tail -n 1)
model=$models/demo-$preset-${DEMO_QUANT:-Q4_K_M}.gguf

# A real NPU is used when its driver is bound; otherwise the simulator.
if [ -z "${GGML_XDNA_DEVICE:-}" ]; then
    if ls /dev/accel/accel* >/dev/null 2>&1 && [ -d /sys/bus/pci/drivers/amdxdna ]; then
        export GGML_XDNA_DEVICE=auto
    else
        export GGML_XDNA_DEVICE=sim
        echo "[demo] no XDNA NPU on this machine: using the simulated XDNA2 NPU (GGML_XDNA_DEVICE=sim)"
    fi
fi
export GGML_BACKEND_PATH=$build_dir/src/libggml-xdna.so
export GGML_XDNA_PROFILE=1

echo "[demo] model: $model"
if [ "$preset" = trained ]; then
    echo "[demo] a 4-layer Llama trained on 100 KB of fortune cookies: expect their words, not wisdom"
    prompt=${DEMO_PROMPT:-"The"}
else
    echo "[demo] its weights are RANDOM: the text it generates is gibberish; the point is where it runs"
    prompt=${DEMO_PROMPT:-"The capital of France is"}
fi
log=$(mktemp)
# -v: llama.cpp's load and scheduler lines go to the log, from which the summary below is taken.
"$llama/build/bin/llama-completion" -m "$model" -p "$prompt" -n 48 -no-cnv --temp 0 \
    -t "$(nproc)" -v 2>"$log"
echo
echo "[demo] what ran where:"
echo "  (XDNA0 holds the layers, the output layer and the KV cache: the NPU runs the matmuls, packed for it at"
echo "   load; the other ops of those layers run on the host inside the backend; the CPU keeps the embeddings)"
{ grep -E "model buffer size|KV buffer size|graph splits = " "$log" | grep -v "= *0.00 MiB" | tail -n 4 || true; } | sed 's/^[0-9.]* [A-Z] /  /'
awk '/^xdna profile/ { on = 1; print; next } on && /^  / { print; next } { on = 0 }' "$log"
{ grep -E "prompt eval time|  eval time" "$log" || true; } | tail -n 2 | sed 's/^[0-9.]* [A-Z] /  /'
rm -f "$log"
