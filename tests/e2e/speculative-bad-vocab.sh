#!/usr/bin/env bash
# Bad input: a draft model with another vocabulary (the tiny MoE demo model, Qwen's tokenizer) beside the
# trained demo model (Llama 3's). llama.cpp refuses such a pair (common/speculative.cpp compares the
# vocabularies); with this backend it must do so as it does on the CPU backend, and the message must reach
# the user: llama-server logs the refusal, then serves the target alone. Checked: on XDNA and on the CPU
# backend alike, the log names the incompatible vocabularies, the server answers, drafts nothing, and its
# greedy text is that of a server started without a draft.
#
# usage: speculative-bad-vocab.sh <llama.cpp bin dir> <libggml-xdna.so> <models dir> <work dir>
set -euo pipefail
bin=$1 lib=$2 models=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
target=$models/demo-trained-Q4_K_M.gguf
other=$models/demo-tiny-moe-Q4_K_M.gguf
for m in "$target" "$other"; do
    [ -f "$m" ] || { echo "missing $m (scripts/make-demo-model.sh trained / tiny-moe makes it)"; exit 1; }
done
command -v node >/dev/null || { echo "node is not installed (scripts/install-deps.sh installs it)"; exit 1; }
mkdir -p "$work"
. "$here/speculative/server-lib.sh"
trap stop_server EXIT
echo '["A visit to a"]' >"$work/prompts.json"
common=(-m "$target" -np 1 -c 512 -t 2)
# The refusal as common/speculative.cpp words it, and as llama-server reports it.
expected=("the target and draft vocabs are not compatible"
          "failed to initialize speculative decoding context: draft model vocab type must match target model")

status=0
for backend in xdna cpu; do
    if [ "$backend" = xdna ]; then
        export GGML_BACKEND_PATH=$lib GGML_XDNA_DEVICE=sim GGML_XDNA_PROFILE=1
    else
        unset GGML_BACKEND_PATH GGML_XDNA_DEVICE GGML_XDNA_PROFILE
    fi
    for mode in plain bad-draft; do
        extra=()
        [ "$mode" = bad-draft ] && extra=(-md "$other" --spec-type draft-simple --spec-draft-n-max 3)
        start_server "$work/server-$backend-$mode.log" "${common[@]}" "${extra[@]}" || exit 1
        node "$here/speculative/complete.mjs" "http://127.0.0.1:$port" "$work/prompts.json" 24 "$work/$backend-$mode.json" \
            || { echo "FAIL: $backend, $mode: the request failed, see $work/server-$backend-$mode.log"; exit 1; }
        stop_server
    done
    log=$work/server-$backend-bad-draft.log
    for e in "${expected[@]}"; do
        if grep -aqF "$e" "$log"; then
            echo "$backend: the log says: $(grep -aF "$e" "$log" | head -n 1 | sed 's/^[0-9.]* [A-Z] //')"
        else
            echo "FAIL: $backend: no \"$e\" in $log"; status=1
        fi
    done
    node -e '
        const [a, b] = process.argv.slice(1).map(f => require(f)[0]);
        if (b.timings.draft_n) { console.log(`FAIL: the refused draft drafted ${b.timings.draft_n} tokens`); process.exit(1); }
        if (a.content !== b.content) { console.log(`FAIL: ${JSON.stringify(b.content)} is not the text of the plain server, ${JSON.stringify(a.content)}`); process.exit(1); }
        console.log(`served by the target alone, the text of the plain server: ${JSON.stringify(b.content)}`);
    ' "$work/$backend-plain.json" "$work/$backend-bad-draft.json" >"$work/$backend-check.txt" || status=1
    sed "s/^/$backend: /" "$work/$backend-check.txt"
done
if grep -aq "^xdna profile" "$work/server-cpu-bad-draft.log"; then
    echo "FAIL: the CPU run loaded the XDNA backend"; status=1
fi
grep -aq "^xdna profile" "$work/server-xdna-bad-draft.log" || { echo "FAIL: the XDNA run ran no matmul on XDNA0"; status=1; }
exit $status
