#!/usr/bin/env bash
# Checks the rms_norm design's plan (aie/rms_norm/design.py) without mlir-aie: on fresh random shapes
# every budget check passes, the traffic is x once, y once and the weight row once per column used,
# the busiest core takes ceil(rows / cores) rows; rows the design cannot take are refused.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
py=${PYTHON:-python3}
design=$root/aie/rms_norm/design.py
seed=${GGML_XDNA_TEST_SEED:-$RANDOM}
RANDOM=$seed
echo "seed $seed"
for i in 1 2 3 4 5 6; do
    rows=$((RANDOM % 600 + 1))
    cols=$(((RANDOM % 256 + 1) * 32))
    for weight in "" --no-weight; do
        plan_file=$(mktemp)
        "$py" "$design" --print-plan --format json --rows $rows --cols $cols $weight >"$plan_file" || {
            echo "FAIL: design.py refused rows $rows cols $cols $weight"; exit 1; }
        "$py" - "$plan_file" "$rows" "$cols" "$weight" <<'PYEOF' || { echo "FAIL (seed $seed, rows $rows, cols $cols $weight)"; exit 1; }
import json, sys
plan = json.load(open(sys.argv[1]))
rows, cols, weight = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] != "--no-weight"
cores = min(rows, 32)
errors = []
if plan["checks failed"]: errors.append(f"checks failed: {plan['checks failed']}")
t = plan["traffic"]
if t["x read (bytes)"] != rows * cols * 4: errors.append("x is not read once")
if t["y written (bytes)"] != rows * cols * 4: errors.append("y is not written once")
if t["w read (bytes)"] != (min(8, cores) * cols * 4 if weight else 0): errors.append("w is not read once per column used")
if plan["rows on the busiest core"] != -(-rows // cores): errors.append("busiest core's rows")
if plan["core data memory (bytes)"] > 65536 or plan["memory tile (bytes)"] > 524288: errors.append("budget")
for e in errors: print(e)
sys.exit(1 if errors else 0)
PYEOF
        rm -f "$plan_file"
    done
done
for cols in 33 8224 16384 0; do
    if "$py" "$design" --print-plan --rows 4 --cols $cols >/dev/null 2>&1; then
        echo "FAIL: design.py took row length $cols"; exit 1
    fi
done
echo "rms_norm design plan: budgets and traffic as documented"
