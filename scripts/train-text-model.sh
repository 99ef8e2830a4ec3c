#!/usr/bin/env bash
# Train the text demo model (scripts/make-demo-model.sh text): a small Llama-architecture model, trained
# from random initial weights on this machine's CPU with llama.cpp's own llama-finetune.
#
# Corpus: the quotations, literature quotes and riddles of Debian's fortunes-min package (fortune-mod's
# data files; BSD licence, copyright The Regents of the University of California; about 100 KB, 26 k
# tokens), with the '%' separators turned into blank lines.
# Tokenizer: Llama 2's SentencePiece vocabulary (32000 tokens, llama.cpp's ggml-vocab-llama-spm.gguf):
# a quarter of Llama 3's output matrix, which is what bounds the training time of a model this small.
#
# usage: train-text-model.sh <make-demo-model tool> <llama.cpp cache dir> <models dir> <out.gguf>
# env:   TEXT_EPOCHS  passes over the corpus (default 4)
set -euo pipefail
tool=$1 llama=$2 models=$3 out=$4
epochs=${TEXT_EPOCHS:-4}
log() { echo "[train] $*" >&2; }

fortunes=/usr/share/games/fortunes
for f in fortunes literature riddles; do
    [ -f "$fortunes/$f" ] || { log "missing $fortunes/$f: install Debian's fortunes-min (scripts/install-deps.sh does)"; exit 1; }
done
finetune=$llama/build/bin/llama-finetune
[ -x "$finetune" ] || { log "missing $finetune (scripts/llama-cpp.sh builds it)"; exit 1; }

corpus=$models/fortunes-min.txt
sed 's/^%$//' "$fortunes/fortunes" "$fortunes/literature" "$fortunes/riddles" > "$corpus.tmp"
mv "$corpus.tmp" "$corpus"

init=$models/demo-text-init.gguf
"$tool" --vocab "$llama/src/models/ggml-vocab-llama-spm.gguf" --out "$init" --preset text --type f32 --seed 7 >&2

# Windows of 128 tokens (llama-finetune steps by half a window), one window per optimizer step; AdamW
# at 2e-3 decaying to 2e-4 over the run; 5 % of the windows held out to report validation loss. The
# CPU backend only: the XDNA backend is for inference.
log "training on $corpus ($(wc -c <"$corpus") bytes), $epochs epochs, $(nproc) threads"
t0=$(date +%s)
env -u GGML_BACKEND_PATH "$finetune" -m "$init" -f "$corpus" -o "$out.tmp" -c 128 -b 128 -ub 128 \
    -epochs "$epochs" -lr 2e-3 -lr-min 2e-4 -decay-epochs "$epochs" -wd 0 -val-split 0.05 -t "$(nproc)" \
    >"$out.log" 2>&1 || { log "llama-finetune failed, see $out.log"; rm -f "$out.tmp"; exit 1; }
t1=$(date +%s)
# The progress bar's last validation loss: what the held-out text costs per token after training.
val=$(tr '\r' '\n' <"$out.log" | sed -n 's/.*val:.*loss=\([0-9.]*\).*/\1/p' | tail -n 1)
mv "$out.tmp" "$out"
rm -f "$init"
log "trained in $((t1 - t0)) s; validation loss ${val:-?} nats/token (a uniform guess: ln 32000 = 10.4); log: $out.log"
