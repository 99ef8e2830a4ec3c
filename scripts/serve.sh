#!/usr/bin/env bash
# Serve the demo model with stock llama.cpp's llama-server (OpenAI-compatible API on
# http://127.0.0.1:8080/v1 and llama-server's web UI on http://127.0.0.1:8080/), its matmuls on the XDNA
# backend: the real NPU when one is present, otherwise the simulated XDNA2 NPU. Builds what is missing
# first (as scripts/demo.sh does), the web UI included (scripts/webui.sh: npm, once, then cached).
#
# usage: scripts/serve.sh [--draft] [llama-server options...]   e.g. --port 9000, -np 4, -m other.gguf
#   --draft  speculative decoding with the demo pair: the trained demo model as the target and its draft
#            model (make-demo-model.sh draft), both on XDNA; the draft proposes 3 tokens, so the target
#            verifies batches of at most 4 tokens, one decode tile (README "Speculative decoding")
# env:   DEMO_PRESET (trained, the default; tiny, 1b or tiny-moe: see README "Demo models"),
#        DEMO_QUANT (Q4_K_M, Q8_0, F16), SERVE_WEBUI=0 (no web UI: no npm build)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build_dir=${BUILD_DIR:-$root/build}

draft=0
if [ "${1:-}" = --draft ]; then
    draft=1
    shift
fi

llama=$(BUILD_DIR=$build_dir "$here/build.sh" | tail -n 1)
preset=${DEMO_PRESET:-trained}
quant=${DEMO_QUANT:-Q4_K_M}
models=$(BUILD_DIR=$build_dir "$here/make-demo-model.sh" "$preset" | tail -n 1)
args=(-m "$models/demo-$preset-$quant.gguf")
if [ "$draft" = 1 ]; then
    [ "$preset" = trained ] || { echo "[serve] --draft serves the trained demo model and its draft (DEMO_PRESET=trained)" >&2; exit 2; }
    BUILD_DIR=$build_dir "$here/make-demo-model.sh" draft >/dev/null
    # Every layer of the draft on XDNA0 as well (-ngld all); 3 drafted tokens: a verify batch of 4.
    args+=(-md "$models/demo-draft-$quant.gguf" --spec-type draft-simple --spec-draft-n-max 3 -ngld all)
fi

# The web UI, built from the pinned llama.cpp's own sources, served as a static directory.
if [ "${SERVE_WEBUI:-1}" = 1 ]; then
    if ui=$("$here/webui.sh" | tail -n 1); then
        args+=(--path "$ui")
    else
        echo "[serve] the web UI could not be built (above); serving the API only (SERVE_WEBUI=0 skips it)" >&2
        args+=(--no-webui)
    fi
else
    args+=(--no-webui)
fi

if [ -z "${GGML_XDNA_DEVICE:-}" ]; then
    if ls /dev/accel/accel* >/dev/null 2>&1 && [ -d /sys/bus/pci/drivers/amdxdna ]; then
        export GGML_XDNA_DEVICE=auto
    else
        export GGML_XDNA_DEVICE=sim
        echo "[serve] no XDNA NPU on this machine: using the simulated XDNA2 NPU (GGML_XDNA_DEVICE=sim)" >&2
    fi
fi
export GGML_BACKEND_PATH=$build_dir/src/libggml-xdna.so
# Later options win, so the caller's -m, --port, -np, --no-webui ... replace these defaults.
exec "$llama/build/bin/llama-server" "${args[@]}" --host 127.0.0.1 --port 8080 -np 4 -c 2048 "$@"
