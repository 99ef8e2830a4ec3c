#!/usr/bin/env bash
# The timing model's feasibility table (src/sim/feasibility.cpp) against the design it describes: every
# design figure it keeps (core bytes with the design's stack and static-data reserves, C depth, DMA
# channels used) must be what `aie/matmul/design.py --print-plan --format json` prints today.
set -euo pipefail
bench=$1
root=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
py=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bench" feasibility | sed -n 's/^budget //p' >"$tmp/budgets"
[ -s "$tmp/budgets" ] || { echo "FAIL: xdna-bench feasibility printed no budget lines"; exit 1; }
failures=0
while read -r family tn core stack data cdepth cin cout min mout sout sin; do
    "$py" "$root/aie/matmul/design.py" --family "$family" --tile-n "$tn" --print-plan --format json >"$tmp/plan.json"
    want=$("$py" - "$tmp/plan.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
ch = d["channels"]
core, mt, shim = ch["core (each)"], ch["memory tile (each column)"], ch["shim (each column)"]
print(d["core_bytes"]["total"], d["stack_bytes"], d["kernel_data_bytes"], d["c_depth"],
      core["S2MM"]["used"], core["MM2S"]["used"], mt["S2MM"]["used"], mt["MM2S"]["used"],
      shim["MM2S"]["used"], shim["S2MM"]["used"])
PYEOF
)
    have="$core $stack $data $cdepth $cin $cout $min $mout $sout $sin"
    if [ "$want" != "$have" ]; then
        echo "FAIL: $family TN=$tn: feasibility table has '$have', design.py prints '$want'"
        failures=$((failures + 1))
    else
        echo "ok: $family TN=$tn: $have"
    fi
done <"$tmp/budgets"
[ "$failures" -eq 0 ] || exit 1
