#!/usr/bin/env bash
# End to end: speculative decoding through stock llama-server on XDNA (the simulator), the demo pair.
#
# The same greedy requests go to llama-server without speculation, then with the draft model
# (--spec-type draft-simple -md demo-draft, 3 drafted tokens) and with n-gram modes that need no draft
# model (ngram-simple, ngram-map-k, ngram-mod, their drafts capped at 3 tokens). Checks:
#  1. every mode's text is the plain run's, token for token (speculative decoding must not change greedy
#     text), and every mode drafted tokens (else the comparison would prove nothing);
#  2. from the XDNA profiles printed when the server frees its backends: the draft model ran its matmuls on
#     XDNA0 too (a second profile, of the draft's shapes), the target ran verify batches of 2-4 tokens (one
#     decode tile, 4 tokens wide) and no more passes wider than the decode tile than the plain run's prompts;
#  3. prints acceptance, target passes per generated token, simulator tokens/s (the server's own timings,
#     wall clock) and CPU time per token, and the NPU time the timing model charges per token (the sum of
#     both models' profiles over every pass, prompts included), per mode (work dir: summary.md).
#
# usage: speculative.sh <llama.cpp bin dir> <libggml-xdna.so> <models dir> <work dir> [max tokens]
set -euo pipefail
. "$(dirname "$0")/no-fallback.sh"
bin=$1 lib=$2 models=$3 work=$4 n_predict=${5:-48}
here=$(cd "$(dirname "$0")" && pwd)
target=$models/demo-trained-Q4_K_M.gguf
draft=$models/demo-draft-Q4_K_M.gguf
for m in "$target" "$draft"; do
    [ -f "$m" ] || { echo "missing $m (scripts/make-demo-model.sh trained / draft makes it)"; exit 1; }
done
command -v node >/dev/null || { echo "node is not installed (scripts/install-deps.sh installs it)"; exit 1; }
mkdir -p "$work"
. "$here/speculative/server-lib.sh"
trap stop_server EXIT

export GGML_BACKEND_PATH=$lib GGML_XDNA_DEVICE=sim GGML_XDNA_PROFILE=1
# Prompts: openings the demo model continues with words of its corpus; one repeats itself, where the
# n-gram modes find their drafts.
cat >"$work/prompts.json" <<'EOF'
["The", "Q: What", "A man", "A visit to a", "Q: Why did the chicken cross the road?\nA:"]
EOF
# One slot, so that a request's passes are its own; -c 512: room for prompt and answer.
common=(-m "$target" -np 1 -c 512 -t 2)
modes=(none draft-simple ngram-simple ngram-map-k ngram-mod)
mode_args() {
    case "$1" in
        none)         ;;
        draft-simple) echo "-md $draft --spec-type draft-simple --spec-draft-n-max 3 -ngld all" ;;
        ngram-simple) echo "--spec-type ngram-simple --spec-ngram-simple-size-n 2 --spec-ngram-simple-size-m 3" ;;
        ngram-map-k)  echo "--spec-type ngram-map-k --spec-ngram-map-k-size-n 2 --spec-ngram-map-k-size-m 3" ;;
        ngram-mod)    echo "--spec-type ngram-mod --spec-ngram-mod-n-match 2 --spec-ngram-mod-n-min 1 --spec-ngram-mod-n-max 3" ;;
    esac
}

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$server_pid/stat"; }   # utime + stime
status=0
for mode in "${modes[@]}"; do
    # shellcheck disable=SC2046
    start_server "$work/server-$mode.log" "${common[@]}" $(mode_args "$mode") || exit 1
    # The server's CPU time over the requests: on a shared machine a steadier figure than its wall time.
    t0=$(cpu_ticks)
    node "$here/speculative/complete.mjs" "http://127.0.0.1:$port" "$work/prompts.json" "$n_predict" "$work/$mode.json" \
        || { echo "FAIL: requests to the $mode server failed, see $work/server-$mode.log"; exit 1; }
    echo "$(( $(cpu_ticks) - t0 ))" >"$work/cpu-ticks-$mode.txt"
    stop_server
    no_fallback "$work/server-$mode.log" "the $mode server" || exit 1
done

# Profile blocks of a server log: "<block> row <kernel> <M> <N> <Kp> <count> <modelled us per call> <MB>" rows, and "<block> graphs <n>",
# "<block> npu_ms <modelled ms>", "<block> invocations <n>".
profile() {
    awk '/^xdna profile/ { b++; for (i = 1; i <= NF; i++) if ($(i + 1) == "matmul" && $(i + 2) == "invocations") print b, "invocations", $i }
         b && /NPU time \(MODELLED/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/ && $(i + 1) ~ /^ms/) { print b, "npu_ms", $i; break } }
         b && /^  graphs: / { g = $2; sub(/;/, "", g); print b, "graphs", g }
         b && /^  mm_/ && $3 == "x" && $5 == "x" { print b, "row", $1, $2, $4, $6, $7, $10, $12 }' "$1"
}
# The target's block: the one with the target's 256-wide layer matmuls; the draft's: 128-wide ones.
block_of() {  # <profile file> <M>
    awk -v m="$2" '$2 == "row" && $4 == m { print $1; exit }' "$1"
}
for mode in "${modes[@]}"; do
    profile "$work/server-$mode.log" >"$work/profile-$mode.txt"
done

node - "$work" "${modes[@]}" >"$work/compare.txt" <<'EOF' || status=1
const [work, ...modes] = process.argv.slice(2);
const fs = require('fs');
const runs = Object.fromEntries(modes.map(m => [m, JSON.parse(fs.readFileSync(`${work}/${m}.json`, 'utf8'))]));
let ok = true;
for (const m of modes.slice(1)) {
    let drafted = 0;
    runs[m].forEach((r, i) => {
        const ref = runs.none[i];
        drafted += r.timings.draft_n || 0;
        if (r.content !== ref.content || JSON.stringify(r.tokens) !== JSON.stringify(ref.tokens)) {
            ok = false;
            console.log(`FAIL: ${m}, prompt ${JSON.stringify(r.prompt)}: ${JSON.stringify(r.content)} differs from the plain run's ${JSON.stringify(ref.content)}`);
        }
    });
    if (drafted === 0) {
        ok = false;
        console.log(`FAIL: ${m} drafted no token: the comparison shows nothing`);
    }
}
for (const m of modes) {
    const t = runs[m].reduce((a, r) => ({ n: a.n + r.timings.predicted_n, ms: a.ms + r.timings.predicted_ms,
        d: a.d + (r.timings.draft_n || 0), acc: a.acc + (r.timings.draft_n_accepted || 0) }), { n: 0, ms: 0, d: 0, acc: 0 });
    console.log(`stats ${m} ${t.n} ${(t.n * 1000 / t.ms).toFixed(2)} ${t.d} ${t.acc}`);
}
process.exit(ok ? 0 : 1);
EOF
grep -v '^stats' "$work/compare.txt" || true

val() { awk -v b="$2" -v k="$3" '$1 == b && $2 == k { print $3; exit }' "$1"; }
tb_none=$(block_of "$work/profile-none.txt" 256)
[ -n "$tb_none" ] || { echo "FAIL: no XDNA profile of the target in $work/server-none.log"; exit 1; }
g_none=$(val "$work/profile-none.txt" "$tb_none" graphs)
n_none=$(awk '$2 == "none" { print $3 }' "$work/compare.txt")
warmup=$((g_none - n_none))   # passes that produced no token (llama-server's warm-up)
[ "$warmup" -ge 0 ] && [ "$warmup" -le 4 ] || { echo "FAIL: $g_none target passes for $n_none tokens in the plain run"; exit 1; }

# Rows of the target wider than the decode tile (N > 4): the plain run has them for its prompts only.
wide() { awk -v b="$2" '$1 == b && $2 == "row" && $5 > 4 { print $3, $4, $5, $6, $7 }' "$1" | sort; }
wide "$work/profile-none.txt" "$tb_none" >"$work/wide-none.txt"

# A verify batch costs the target what one token costs: for every matmul of the target, the timing
# model's time per call at 4 tokens (the draft-simple run's verify batches) against 1 token (the plain
# run's decode), and the bytes; the pass's ratio weighs each matmul by its calls in the plain run.
tb_draft=$(block_of "$work/profile-draft-simple.txt" 256)
awk -v b1="$tb_none" -v b4="$tb_draft" '
    FNR == 1 { f++ }
    f == 1 && $1 == b1 && $2 == "row" && $5 == 1 { k = $3 " " $4 " " $6; c1[k] = $7; us1[k] = $8; mb1[k] = $9 / $7 }
    f == 2 && $1 == b4 && $2 == "row" && $5 == 4 { k = $3 " " $4 " " $6; us4[k] = $8; mb4[k] = $9 / $7 }
    END {
        for (k in c1) {
            if (!(k in us4)) { print "FAIL: no verify batch of 4 tokens for " k; bad = 1; continue }
            printf "  %-26s %5s calls in the plain run: modelled %7.1f us at 1 token, %7.1f us at 4 (%.3fx); %7.3f MB, %7.3f MB\n", k, c1[k], us1[k], us4[k], us4[k] / us1[k], mb1[k], mb4[k]
            t1 += c1[k] * us1[k]; t4 += c1[k] * us4[k]
            if (us4[k] > 1.05 * us1[k]) { print "FAIL: " k " costs more than one token at 4 tokens"; bad = 1 }
        }
        if (!t1) { print "FAIL: no one-token decode pass of the target in the plain run"; exit 1 }
        printf "verify batch of 4 tokens: %.3fx the modelled matmul time of a one-token decode pass of the target\n", t4 / t1
        exit bad
    }' "$work/profile-none.txt" "$work/profile-draft-simple.txt" >"$work/verify-cost.txt" || status=1
sort "$work/verify-cost.txt"

{
    echo "| mode | tokens | drafted | accepted | acceptance | target passes per token | simulator t/s (wall) | simulator CPU ms per token | modelled NPU ms per token (both models) |"
    echo "|---|---|---|---|---|---|---|---|---|"
} >"$work/summary.md"
for mode in "${modes[@]}"; do
    p=$work/profile-$mode.txt
    read -r _ _ n tps drafted accepted < <(awk -v m="$mode" '$2 == m' "$work/compare.txt")
    tb=$(block_of "$p" 256)
    [ -n "$tb" ] || { echo "FAIL: $mode: no XDNA profile of the target"; status=1; continue; }
    g=$(val "$p" "$tb" graphs)
    npu=$(awk '$2 == "npu_ms" { s += $3 } END { print s + 0 }' "$p")
    if [ "$mode" = draft-simple ]; then
        db=$(block_of "$p" 128)
        if [ -z "$db" ] || [ "$db" = "$tb" ] || [ "$(val "$p" "$db" invocations)" -eq 0 ]; then
            echo "FAIL: the draft model ran no matmul on XDNA0 (no profile of its 128-wide matmuls in $work/server-$mode.log)"
            status=1
        else
            echo "draft model on XDNA0: $(val "$p" "$db" invocations) matmul invocations in $(val "$p" "$db" graphs) passes"
        fi
    fi
    if [ "$mode" != none ]; then
        verify=$(awk -v b="$tb" '$1 == b && $2 == "row" && $5 >= 2 && $5 <= 4 { s += $7 } END { print s + 0 }' "$p")
        full=$(awk -v b="$tb" '$1 == b && $2 == "row" && $5 == 4 { s += $7 } END { print s + 0 }' "$p")
        echo "$mode: target invocations at 2-4 tokens (verify batches, one decode tile): $verify, of them at 4 tokens: $full"
        [ "$verify" -gt 0 ] || { echo "FAIL: $mode: no verify batch of 2-4 tokens reached XDNA0"; status=1; }
        wide "$p" "$tb" >"$work/wide-$mode.txt"
        cmp -s "$work/wide-none.txt" "$work/wide-$mode.txt" \
            || { echo "FAIL: $mode: target passes wider than the decode tile beyond the prompts' (diff $work/wide-none.txt $work/wide-$mode.txt)"; status=1; }
    fi
    acc=$( [ "$drafted" -gt 0 ] && awk -v a="$accepted" -v d="$drafted" 'BEGIN { printf "%.1f %%", 100 * a / d }' || echo "-")
    ppt=$(awk -v g="$g" -v w="$warmup" -v n="$n" 'BEGIN { printf "%.2f", (g - w) / n }')
    npt=$(awk -v s="$npu" -v n="$n" 'BEGIN { printf "%.2f", s / n }')
    cpt=$(awk -v t="$(cat "$work/cpu-ticks-$mode.txt")" -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN { printf "%.0f", 1000 * t / hz / n }')
    echo "| $mode | $n | $drafted | $accepted | $acc | $ppt | $tps | $cpt | $npt |" >>"$work/summary.md"
done
cat "$work/summary.md"
[ "$status" = 0 ] && echo "greedy text of every mode identical to the plain run's"
exit $status
