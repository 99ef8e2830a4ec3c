#!/usr/bin/env bash
# The co-resident decode-layer plan's budgets (aie/decode_layer/budget.py), from the designs it reuses:
# every variant fits with its phases aliased (exit 0), none fits with every phase resident (what linking
# today's designs unchanged would give: the reason the plan re-programs channels between phases), and the
# tool fails when a role breaks a limit (a core limit lowered below the attention phase's bytes).
set -euo pipefail
root=${1:?usage: $0 <repo root>}
py=${PYTHON:-python3}
tool=$root/aie/decode_layer/budget.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for variant in "" "--subroles" "--cache q8_0" "--subroles --cache q8_0"; do
    # shellcheck disable=SC2086
    "$py" "$tool" $variant --format json >"$work/b.json" || { echo "budget.py $variant: a role does not fit aliased"; "$py" "$tool" $variant; exit 1; }
    "$py" - "$work/b.json" "$variant" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
v = sys.argv[2] or "default"
for role in r["roles"]:
    assert not role["aliased_over"], (v, role["role"], role["aliased_over"])
    assert role["resident_over"], (v, role["role"], "fits resident: the plan's aliasing would not be needed")
    phases = role["phases"]
    # aliased = the largest phase, resident = their sum (the barrier's lock added once)
    assert role["aliased"]["core_bytes"] == max(p["core_bytes"] for p in phases), (v, role["role"])
    assert role["resident"]["core_bytes"] == sum(p["core_bytes"] for p in phases), (v, role["role"])
    assert role["aliased"]["core_locks"] == max(p["core_locks"] for p in phases) + 1, (v, role["role"])
    for p in phases:
        assert not p["failed"], (v, p["phase"], p["failed"])
        assert 0 < p["core_bytes"] <= r["limits"]["core_bytes"], (v, p["phase"])
print(f"{v}: " + "; ".join(f"{x['role'].split(':')[0]} aliased {x['aliased']['core_bytes']} B, resident {x['resident']['core_bytes']} B"
                            for x in r["roles"]))
PY
done
# Broken on purpose: a core of 60000 bytes cannot hold the attention phase (62592 B at head dim 128, F16).
if (cd "$root/aie/decode_layer" && "$py" -B -c "import budget, sys; budget.LIMITS['core_bytes'] = 60000; sys.exit(budget.main([]))") >"$work/broken.txt"; then
    echo "budget.py passed with a 60000-byte core"; exit 1
fi
grep -q "aliased: does not fit: core_bytes" "$work/broken.txt" || { echo "budget.py failed without naming the core's bytes"; cat "$work/broken.txt"; exit 1; }
echo "ok: the decode-layer budgets"
