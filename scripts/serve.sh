#!/usr/bin/env bash
# Serve the demo model with stock llama.cpp's llama-server (OpenAI-compatible API on
# http://127.0.0.1:8080/v1), its matmuls on the XDNA backend: the real NPU when one is present,
# otherwise the simulated XDNA2 NPU. Builds what is missing first (as scripts/demo.sh does).
#
# usage: scripts/serve.sh [llama-server options...]   e.g. --port 9000, -np 4, -m other.gguf
# env:   DEMO_PRESET (trained, the default; tiny, 1b or tiny-moe: see README "Demo models"),
#        DEMO_QUANT (Q4_K_M, Q8_0, F16)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build_dir=${BUILD_DIR:-$root/build}

llama=$(BUILD_DIR=$build_dir "$here/build.sh" | tail -n 1)
preset=${DEMO_PRESET:-trained}
models=$(BUILD_DIR=$build_dir "$here/make-demo-model.sh" "$preset" | tail -n 1)

if [ -z "${GGML_XDNA_DEVICE:-}" ]; then
    if ls /dev/accel/accel* >/dev/null 2>&1 && [ -d /sys/bus/pci/drivers/amdxdna ]; then
        export GGML_XDNA_DEVICE=auto
    else
        export GGML_XDNA_DEVICE=sim
        echo "[serve] no XDNA NPU on this machine: using the simulated XDNA2 NPU (GGML_XDNA_DEVICE=sim)" >&2
    fi
fi
export GGML_BACKEND_PATH=$build_dir/src/libggml-xdna.so
# Later options win, so the caller's -m, --port, -np ... replace these defaults.
exec "$llama/build/bin/llama-server" -m "$models/demo-$preset-${DEMO_QUANT:-Q4_K_M}.gguf" \
    --host 127.0.0.1 --port 8080 -np 4 -c 2048 --no-webui "$@"
