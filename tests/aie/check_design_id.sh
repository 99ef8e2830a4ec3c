#!/usr/bin/env bash
# Checks the MUL_MAT_ID design (aie/matmul_id/design.py) without mlir-aie: on a fresh random routing,
# the plan streams exactly the selected experts' slices (W bytes = per selected expert, its token tiles x
# m_tiles x k_tiles x the Q4_K tile of the ABI table in docs/kernels.md, 9216 bytes; each expert's W
# base at its slice), one
# invocation per selected expert (one with --fold), every matmul check passing; a routing naming an
# expert outside the stack is refused.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
py=${PYTHON:-python3}
design=$root/aie/matmul_id/design.py
seed=${GGML_XDNA_TEST_SEED:-$RANDOM}
RANDOM=$seed
n_expert=16 m_tiles=12 k_tiles=8 q4k_tile=9216
routing="" selected=0
for x in $(seq 0 $((n_expert - 1))); do
    if [ $((RANDOM % 3)) -eq 0 ]; then
        routing+="${routing:+,}$x:$((RANDOM % 70 + 1))"
        selected=$((selected + 1))
    fi
done
[ -n "$routing" ] || { routing="5:1"; selected=1; }
echo "seed $seed, routing $routing"
for fold in "" --fold; do
    plan_file=$(mktemp)
    "$py" "$design" --print-plan --format json --tile-n 32 --experts $n_expert --m-tiles $m_tiles \
        --k-tiles $k_tiles --routing "$routing" $fold >"$plan_file" || { echo "FAIL: design.py refused a valid routing"; exit 1; }
    "$py" - "$plan_file" "$selected" "$m_tiles" "$k_tiles" "$q4k_tile" "$routing" "$fold" <<'PYEOF' || { echo "FAIL (seed $seed)"; exit 1; }
import json, sys
plan = json.load(open(sys.argv[1]))
sys.argv = sys.argv[1:]
selected, m_tiles, k_tiles, tile = map(int, sys.argv[1:5])
routing = {int(a): int(b) for a, b in (p.split(":") for p in sys.argv[5].split(","))}
fold = sys.argv[6] == "--fold"
slice_bytes = m_tiles * k_tiles * tile
errors = []
if plan["checks failed"]: errors.append(f"checks failed: {plan['checks failed']}")
# W is streamed once per token tile (aie/matmul/README.md): each selected slice ceil(rows / 32) times.
w_expected = sum((r + 31) // 32 for r in routing.values()) * slice_bytes
if plan["traffic"]["W of the selected experts' tiles (bytes)"] != w_expected: errors.append("W bytes are not the selected experts'")
if plan["invocations"] != (1 if fold else selected): errors.append(f"invocations {plan['invocations']}")
if sorted(e["expert"] for e in plan["experts"]) != sorted(routing): errors.append("streamed experts != selected")
for e in plan["experts"]:
    if e["W base (bytes)"] != e["expert"] * slice_bytes: errors.append(f"expert {e['expert']}: W base {e['W base (bytes)']}")
    if e["token tiles"] != (routing[e["expert"]] + 31) // 32: errors.append(f"expert {e['expert']}: token tiles")
print("\n".join(errors) if errors else f"ok: {selected} of 16 experts, {plan['invocations']} invocation(s)")
sys.exit(1 if errors else 0)
PYEOF
    rm -f "$plan_file"
done
if "$py" "$design" --print-plan --experts $n_expert --routing "$n_expert:1" >/dev/null 2>&1; then
    echo "FAIL: an expert outside the stack was accepted"; exit 1
fi
echo "aie/matmul_id design checks passed"
