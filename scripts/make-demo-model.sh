#!/usr/bin/env bash
# Make the demo models, each with its Q4_K_M, Q8_0 and F16 quantizations:
#   tiny, 1b  Llama-architecture GGUFs with RANDOM weights (they generate gibberish): the exact shapes of a
#             small model and of Llama 3.2 1B, for end-to-end tests and benchmarks.
#   text      a small Llama-architecture model TRAINED here, in minutes on the CPU, with llama.cpp's
#             llama-finetune on the quotations of Debian's fortunes-min package (BSD licence, University
#             of California): it writes recognisable English words; for the demo, llama-server and the
#             KL-divergence test.
#
# usage: scripts/make-demo-model.sh [tiny|1b|text]      (default tiny)
# env:   BUILD_DIR   this project's build directory (default build), holding tools/make-demo-model
#        MODELS_DIR  where the models go (default ~/.cache/ggml-xdna/models)
#
# Files that already exist are kept, so reruns are cheap. Prints the models directory on its last line.
set -euo pipefail

preset=${1:-tiny}
case "$preset" in
    tiny) base_type=f32 ;;
    1b)   base_type=f16 ;;   # an f32 1B model would be ~5 GB for no gain in what the demo can show
    text) base_type=f32 ;;   # trained in f32 (llama-finetune's requirement)
    *) echo "usage: $0 [tiny|1b|text]" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build_dir=${BUILD_DIR:-build}
case "$build_dir" in /*) ;; *) build_dir=$root/$build_dir ;; esac
models_dir=${MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ggml-xdna/models}
log() { echo "[demo-model] $*" >&2; }

llama=$("$here/llama-cpp.sh" | tail -n 1)
tool=$build_dir/tools/make-demo-model/make-demo-model
quantize=$llama/build/bin/llama-quantize
vocab=$llama/src/models/ggml-vocab-llama-bpe.gguf
[ -x "$tool" ]     || { log "missing $tool; build this project first (cmake --build $build_dir)"; exit 1; }
[ -x "$quantize" ] || { log "missing $quantize"; exit 1; }

mkdir -p "$models_dir"
base=$models_dir/demo-$preset-$base_type.gguf
if [ "$preset" = text ]; then
    [ -f "$base" ] || "$here/train-text-model.sh" "$tool" "$llama" "$models_dir" "$base" >&2
    log "have $base (trained)"
else
    log "weights are RANDOM: these models are for testing backends, not a trained model (output is gibberish)"
    if [ -f "$base" ]; then
        log "have $base"
    else
        # The tool writes via a temporary name itself, so an existing file is always complete.
        "$tool" --vocab "$vocab" --out "$base" --preset "$preset" --type "$base_type" >&2
    fi
fi

for q in Q4_K_M Q8_0 F16; do
    out=$models_dir/demo-$preset-$q.gguf
    if [ -f "$out" ]; then
        log "have $out"
        continue
    fi
    if [ "$q" = F16 ] && [ "$base_type" = f16 ]; then
        ln -f "$base" "$out"   # already F16: a second name, not a second copy
        continue
    fi
    log "quantizing to $q"
    # Quantize to a temporary name so an interrupted run is not mistaken for a finished file next time.
    "$quantize" "$base" "$out.tmp" "$q" >"$out.log" 2>&1 \
        || { log "llama-quantize failed, see $out.log"; rm -f "$out.tmp"; exit 1; }
    mv "$out.tmp" "$out"
    rm -f "$out.log"
    log "wrote $out ($(du -h "$out" | cut -f1))"
done

echo "$models_dir"
