#!/usr/bin/env bash
# One source of truth for DRAM traffic: for every weight matmul of Llama-3.1-8B and Qwen3-30B-A3B
# (Q4_K_M: projections, router, expert slices, output head), both token tiles, decode and pp512, in every
# layout of the design that takes the shape, the bytes the timing model charges (`xdna-bench traffic`:
# the BDs of the instruction stream the runtime builds, src/sim/design-traffic.h) must be the DRAM
# traffic `aie/matmul/design.py --print-plan --format json --layout L` prints for the same shape: W read,
# W of the ABI, A read, C written, the busiest shim channel, and the model's charged total = W + A + C.
# And the layout the model picks for the 8B projections at pp512 reads each weight at most 4 times.
# The design's plan is called in-process (make_plan + plan_json, exactly what --print-plan --format json
# prints) so the ~170 plans take a second or two.
set -euo pipefail
bench=$1
root=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
py=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Both xclbin sizings: the family's (W objects of its largest tile) and exact (GGML_XDNA_W_OBJECTS=exact
# against design.py --exact: W objects of the contract's own tile, no over-fetch).
status=0
for objects in family exact; do
echo "== W objects: $objects"
GGML_XDNA_W_OBJECTS=$objects "$bench" traffic --models 8b,qwen3-30b-a3b --ftype q4_K_M --pp 512 >"$tmp/report" ||
    { echo "FAIL: xdna-bench traffic refused a shape"; grep refused "$tmp/report" || true; exit 1; }
sed -n 's/^traffic //p' "$tmp/report" >"$tmp/lines"
[ -s "$tmp/lines" ] || { echo "FAIL: xdna-bench traffic printed no traffic lines"; exit 1; }
"$py" - "$root/aie/matmul/design.py" "$tmp/lines" "$objects" <<'PYEOF' || status=1
import importlib.util, sys
spec = importlib.util.spec_from_file_location("design", sys.argv[1])
design = importlib.util.module_from_spec(spec)
spec.loader.exec_module(design)
family_of = {c.name: f for f, (_, cs) in design.FAMILIES.items() for c in cs}
failures = checked = 0
seen_models = set()
chosen_pp = {}
for line in open(sys.argv[2]):
    f = line.split()
    model, matmul, contract, layout, chosen = f[0], f[1], f[2], f[3], f[4] == "1"
    tn, m_rows, n_tiles, k_tiles, tokens = map(int, f[5:10])
    w_read, w_abi, a_read, c_written, busiest = map(int, f[10:15])
    charged, charged_w = float(f[15]), float(f[16])
    seen_models.add(model)
    plan = design.plan_json(design.make_plan(family_of[contract], tn, design.MAX_COLS, contract=contract,
                                             exact=sys.argv[3] == "exact", m_tiles=m_rows, n_tiles=n_tiles,
                                             k_tiles=k_tiles, layout=layout))
    t = plan["traffic"]
    want = {"W read (bytes)": w_read, "W of the ABI (bytes)": w_abi, "A read (bytes)": a_read,
            "C written (bytes)": c_written, "busiest shim channel (bytes)": busiest}
    errors = [f"{k}: model {v}, design.py {t[k]}" for k, v in want.items() if t[k] != v]
    design_total = t["W read (bytes)"] + t["A read (bytes)"] + t["C written (bytes)"]
    if charged != design_total:
        errors.append(f"the model charges {charged:.0f} bytes, design.py moves {design_total}")
    if charged_w != t["W read (bytes)"]:
        errors.append(f"the model charges {charged_w:.0f} W bytes, design.py reads {t['W read (bytes)']}")
    if plan["layout"] != layout:
        errors.append(f"design.py planned layout {plan['layout']}")
    errors += [f"plan check failed: {c['check']}: {c['detail']}" for c in plan["checks"] if not c["ok"]]
    label = f"{model} {matmul} {contract} TN {tn} tokens {tokens} {layout}{' (chosen)' if chosen else ''} " \
            f"({m_rows}x{n_tiles}x{k_tiles} tiles)"
    if chosen and model == "8b" and matmul != "output" and tn == 32 and tokens == 512:
        chosen_pp[(matmul, contract)] = (layout, t["W re-read per token tile"], t["W over-fetch (%)"])
    checked += 1
    if errors:
        failures += 1
        print(f"FAIL: {label}")
        for e in errors:
            print(f"  {e}")
    else:
        print(f"ok: {label}: W {w_read} (x{t['W re-read per token tile']}, over-fetch {t['W over-fetch (%)']} %), "
              f"A {a_read}, C {c_written}")
# The 8B projections at pp512 as the model runs them: W read at most once per column's 4 token tiles.
for (matmul, contract), (layout, rereads, over) in sorted(chosen_pp.items()):
    if rereads > 4:
        print(f"FAIL: 8b {matmul} {contract} at pp512 ({layout}): W re-read {rereads} times per invocation, more than 4")
        failures += 1
    else:
        print(f"ok: 8b {matmul} {contract} at pp512: {layout}, W re-read {rereads}, over-fetch {over} % (charged)")
if len({m for m, _ in chosen_pp}) != 7:
    print(f"FAIL: the model chose layouts for {sorted(chosen_pp)} only, not every 8B projection")
    failures += 1
if seen_models != {"8b", "qwen3-30b-a3b"}:
    print(f"FAIL: shapes of {sorted(seen_models)} only")
    failures += 1
print(f"{checked} shapes, {failures} failure(s)")
sys.exit(1 if failures else 0)
PYEOF
done
exit $status
