#!/usr/bin/env bash
# The modelled speculative-decoding table (xdna-bench speculative: Llama 3.1 8B Q4_K_M + a Llama 3.2 1B
# draft on Krackan) against arithmetic done here, from its own per-pass figures:
#  1. a verify batch of 2-4 tokens costs the target what one token costs (within 1%: one decode tile, the
#     same weight bytes), and 5 tokens more (the prefill tile);
#  2. every row's tokens per round is 1 + alpha + ... + alpha^gamma, its rate (accepted / drafted) that over
#     gamma, its target passes per token the inverse, and its t/s (per split) tokens per round over the
#     round's time: the draft's pass over gamma + 1 tokens, gamma one-token draft passes, the target's
#     verify pass of gamma + 1 tokens, all from the per-pass table; the plain decode is 1 / a one-token pass;
#  3. the published acceptance (526 of 730 drafted tokens at n_draft 5) read as alpha gives that rate back.
#
# usage: speculative-model.sh <xdna-bench> <work dir>
set -euo pipefail
bench=$1 work=$2
mkdir -p "$work"
"$bench" speculative >"$work/speculative.md"
awk -F'|' '
    function num(s) { gsub(/[ x%]/, "", s); return s + 0 }
    /^Inputs/ { if (match($0, /Plain decode: [0-9.]+ t\/s/)) plain = substr($0, RSTART + 14, RLENGTH - 18) + 0 }
    # The per-pass table: | tokens | target pass us | / one-token pass | DRAM | compute | dispatch | draft pass us |
    NF == 9 && $2 ~ /^ *[0-9]+ *$/ { n = num($2); V[n] = num($3); D[n] = num($8) }
    # The decode table: | label | alpha | rate | gamma | verify tokens | ratio | tokens/round | passes | t/s | speed-up | ...
    NF == 15 && $3 ~ /^ *0\.[0-9]+ *$/ {
        rows++
        a = num($3); rate = num($4) / 100; g = num($5); tok = num($8); ppt = num($9); tps = num($10)
        e = 1; p = 1
        for (i = 1; i <= g; i++) { p *= a; e += p }
        if (!(g + 1 in V) || !(1 in D)) { print "FAIL: no per-pass figures for " g + 1 " tokens"; bad = 1; next }
        ref = e * 1e6 / (D[g + 1] + g * D[1] + V[g + 1])
        if (abs(tok - e) > 0.006) { printf "FAIL: alpha %s gamma %d: %s tokens per round, expected %.3f\n", a, g, tok, e; bad = 1 }
        if (abs(rate - (e - 1) / g) > 0.0006) { printf "FAIL: alpha %s gamma %d: rate %s, expected %.4f\n", a, g, rate, (e - 1) / g; bad = 1 }
        if (abs(ppt - 1 / e) > 0.006) { printf "FAIL: alpha %s gamma %d: %s passes per token, expected %.3f\n", a, g, ppt, 1 / e; bad = 1 }
        if (abs(tps - ref) > 0.051 + 0.002 * ref) { printf "FAIL: alpha %s gamma %d: %s t/s, expected %.2f\n", a, g, tps, ref; bad = 1 }
        if (label_pub == "" && $2 ~ /published 72.1 % at n_draft 5/) {
            label_pub = a; s = 0; p = 1
            for (i = 1; i <= 5; i++) { p *= a; s += p }
            if (abs(s / 5 - 526 / 730) > 0.002) { printf "FAIL: alpha %s gives %.4f at n_draft 5, not 526/730\n", a, s / 5; bad = 1 }
        }
    }
    function abs(x) { return x < 0 ? -x : x }
    END {
        for (n = 2; n <= 4; n++) if (abs(V[n] / V[1] - 1) > 0.01) { printf "FAIL: a verify batch of %d tokens costs %.3fx one token\n", n, V[n] / V[1]; bad = 1 }
        if (!(V[5] > V[4])) { print "FAIL: 5 tokens (the prefill tile) cost no more than 4"; bad = 1 }
        if (abs(plain - 1e6 / V[1]) > 0.051) { printf "FAIL: plain decode %s t/s, expected %.2f\n", plain, 1e6 / V[1]; bad = 1 }
        if (rows < 10 || label_pub == "") { print "FAIL: the decode table has " rows " rows, or no published row"; bad = 1 }
        if (!bad) printf "%d rows checked; verify at 2-4 tokens = one token (%.0f us), at 5: %.3fx; plain %s t/s; published alpha %s\n", rows, V[1], V[5] / V[1], plain, label_pub
        exit bad
    }' "$work/speculative.md"
