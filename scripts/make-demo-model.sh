#!/usr/bin/env bash
# Make the demo models and their Q4_K_M, Q8_0 and F16 quantizations:
#   trained   a small Llama TRAINED here on the fortune files of Debian's fortunes-min package
#             (BSD-3-Clause; tools/train-demo-model, a few minutes on 2 cores): it writes recognisable
#             words, so the demo and llama-server show text, and its activations are a trained model's.
#   draft     its draft model for speculative decoding: a smaller Llama (n_embd 128, 2 layers) trained the
#             same way on the same corpus with the same tokenizer (about 2 minutes on 2 cores).
#   tiny, 1b  Llama-architecture GGUFs with RANDOM weights (gibberish) at tiny and Llama 3.2 1B shapes,
#             for tests and benchmarks (8b: Llama 3.1 8B's shapes, 16 GB as F16, Q4_K_M only, for profiles); tiny-moe the same for the Qwen3-MoE architecture (mixture of
#             experts) with Qwen's tokenizer; 30b-a3b-4l: 4 of Qwen3-30B-A3B's 48 layers at its shapes (128
#             experts, 8 used; 6 GB as F16, Q4_K_M only), for profiles at the real MoE shapes.
#
# usage: scripts/make-demo-model.sh [trained|draft|tiny|1b|8b|tiny-moe|30b-a3b-4l]      (default tiny)
# env:   BUILD_DIR   this project's build directory (default build), holding tools/make-demo-model
#        MODELS_DIR  where the models go (default ~/.cache/ggml-xdna/models)
#
# Files that already exist are kept, so reruns are cheap. Prints the models directory on its last line.
set -euo pipefail

preset=${1:-tiny}
case "$preset" in
    trained|draft|tiny|tiny-moe) base_type=f32 ;;
    1b|8b|30b-a3b-4l) base_type=f16 ;;  # an f32 1B model would be ~5 GB for no gain in what the demo can show
    *) echo "usage: $0 [trained|draft|tiny|1b|8b|tiny-moe|30b-a3b-4l]" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build_dir=${BUILD_DIR:-build}
case "$build_dir" in /*) ;; *) build_dir=$root/$build_dir ;; esac
models_dir=${MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ggml-xdna/models}
log() { echo "[demo-model] $*" >&2; }

llama=$("$here/llama-cpp.sh" | tail -n 1)
tool=$build_dir/tools/make-demo-model/make-demo-model
trainer=$build_dir/tools/train-demo-model/train-demo-model
# The training corpus: Debian's fortunes-min (scripts/install-deps.sh installs it).
corpus_dir=${FORTUNES_DIR:-/usr/share/games/fortunes}
corpus=(fortunes literature riddles)
quantize=$llama/build/bin/llama-quantize
vocab=$llama/src/models/ggml-vocab-llama-bpe.gguf
# Qwen3 models use Qwen2's tokenizer; llama.cpp ships it as a vocab file too.
{ [ "$preset" = tiny-moe ] || [ "$preset" = 30b-a3b-4l ]; } && vocab=$llama/src/models/ggml-vocab-qwen2.gguf
[ -x "$tool" ]     || { log "missing $tool; build this project first (cmake --build $build_dir)"; exit 1; }
case "$preset" in trained|draft) trained=1 ;; *) trained=0 ;; esac
[ "$trained" = 0 ] || [ -x "$trainer" ] || { log "missing $trainer; build this project first"; exit 1; }
[ -x "$quantize" ] || { log "missing $quantize"; exit 1; }

mkdir -p "$models_dir"
base=$models_dir/demo-$preset-$base_type.gguf
# The trained models' recipes (the trainer's options): a cached model trained to another recipe is
# trained again, with the quantized files made from it. The draft model is trained as the target is (same
# corpus, tokenizer, seed, steps and schedule), at the trainer's smaller "draft" shape.
recipe_file=$models_dir/demo-$preset.recipe
case "$preset" in
    trained) train_opts=(--steps 700 --seed 42); recipe="steps 700, seed 42, trainer defaults otherwise" ;;
    draft)   train_opts=(--shape draft --steps 700 --seed 42); recipe="shape draft, steps 700, seed 42, trainer defaults otherwise" ;;
esac
if [ "$trained" = 1 ] && [ -f "$base" ] && [ "$(cat "$recipe_file" 2>/dev/null)" != "$recipe" ]; then
    log "the cached $preset model has another recipe; training it again"
    rm -f "$models_dir"/demo-$preset-*.gguf
fi
if [ -f "$base" ]; then
    log "have $base"
elif [ "$trained" = 1 ]; then
    files=()
    for f in "${corpus[@]}"; do
        [ -f "$corpus_dir/$f" ] || { log "missing $corpus_dir/$f: install Debian's fortunes-min (scripts/install-deps.sh)"; exit 1; }
        files+=(--corpus "$corpus_dir/$f")
    done
    log "training the $preset demo model on $corpus_dir/{${corpus[*]}} (a few minutes; once, then cached)"
    # The tool writes via a temporary name itself, so an existing file is always complete.
    # 700 steps: past 400 the model reproduces the corpus's sentences rather than its word frequencies,
    # so that greedy text is words of the corpus on every instruction set ggml's CPU kernels use (the
    # trajectory depends on their rounding; at 400 steps an AVX2-only machine's model looped on a token).
    "$trainer" --vocab "$vocab" "${files[@]}" "${train_opts[@]}" --out "$base" >&2
    echo "$recipe" >"$recipe_file"
else
    log "weights are RANDOM: these models are for testing backends, not a trained model (output is gibberish)"
    "$tool" --vocab "$vocab" --out "$base" --preset "$preset" --type "$base_type" >&2
fi

quants=(Q4_K_M Q8_0 F16)
{ [ "$preset" = 8b ] || [ "$preset" = 30b-a3b-4l ]; } && quants=(Q4_K_M)   # the profile's model; 8.5 GB of Q8_0 and a second F16 name buy nothing
for q in "${quants[@]}"; do
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
