#!/usr/bin/env bash
# Checks the NPU matmul design without mlir-aie or an NPU:
#   - aie/matmul/design.py compiles and answers --help with a bare Python;
#   - for every family, token tile and some column counts / exact contracts, --print-plan passes its own
#     checks, and an independent recomputation (below, from the ABI header's static_asserts and the
#     activation-tile formula of the tile ABI) agrees that the buffers fit: double-buffered W and A tiles
#     plus the C tile in a 64 KB core, the staging FIFOs in a 512 KB memory tile, 2 input DMA channels
#     per core, 6 + 6 per memory tile, 2 + 2 per shim;
#   - a shape the design cannot serve is refused;
#   - every core releases its runtime-parameter barrier after reading the RTP words, and the sequence
#     sets it after writing them (tests/aie/check_barrier.py runs design.py's IRON program on stand-ins
#     of IRON's classes; its self-test shows the design without the release is caught);
#   - scripts/build-npu-kernels.sh without a toolchain names what is missing and how to point at it,
#     prints "NPU kernels not built", writes no manifest and exits 0 (1 with --require).
set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
py=${PYTHON:-python3}
design=$root/aie/matmul/design.py
header=$root/aie/include/xdna_aie/matmul_tiles.h
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Compile without writing a .pyc into the source tree.
"$py" -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$design" ||
    fail "design.py does not compile"
"$py" "$design" --help >/dev/null || fail "design.py --help"

cat >"$tmp/verify.py" <<'PYEOF'
import json, re, sys

header = open(sys.argv[1]).read()

# Weight tile bytes as the ABI header asserts them (fmt name -> bytes).
asserted = {}
for m in re.finditer(r"static_assert\(fmt::(\w+)\.tile_bytes\(\)\s*==\s*([\d\s*]+),", header):
    v = 1
    for f in m.group(2).split("*"):
        v *= int(f)
    asserted[m.group(1)] = v
asserted.setdefault("bf16", asserted.get("f16"))  # same layout as F16 (no assert of its own)


def verify(plan):
    errors = []
    tn = plan["tile_n"]
    fmt_of = lambda contract: {"mm_f16_f16": "f16", "mm_bf16_bf16": "bf16", "mm_f32_f32": "f32"}.get(
        contract, contract[3:-6] if contract.endswith("_bfp16") else contract[3:-3])  # mm_q4_K_a8 -> q4_K
    for contract, w in plan["w_tile_bytes"].items():
        if asserted.get(fmt_of(contract)) != w:
            errors.append(f"{contract}: plan W tile {w}, header {asserted.get(fmt_of(contract))}")

    def a_tile(contract):
        f = fmt_of(contract)
        up = lambda x: (x + 63) // 64 * 64
        if contract.endswith("_bfp16"):  # bfp16ebs8 blocks: 8 values in 9 bytes (prefill contracts v3)
            tk = 64 if f == "f32" else 128 if f in ("f16", "bf16") else 256
            return up(tn * (tk // 8) * 9)
        if f in ("f16", "bf16"):
            return up(tn * 128 * 2)
        if f == "f32":
            return up(tn * 64 * 4)
        ablk = 256 if f.endswith("K") else 32
        return up(tn * 256) + up(tn * (256 // ablk) * 4) + up(tn * (256 // 16) * 2)

    served = [plan["contract"]] if plan["exact"] else list(plan["w_tile_bytes"])
    need_w = max(plan["w_tile_bytes"][c] for c in served)
    need_a = max(a_tile(c) for c in served)
    need_c = tn * 64 * 4
    fifos = {f["name"]: f for f in plan["fifos"]}
    # m_split: W split over the cores (one FIFO per core), A broadcast; n_split the reverse.
    n_split = plan["layout"] == "n_split"
    w1 = fifos["w_l2l1_<c>" if n_split else "w_l2l1_<c>_<r>"]
    a1 = fifos["a_l2l1_<c>_<r>" if n_split else "a_l2l1_<c>"]
    c1 = fifos["c_l1l2_<c>_<r>"]
    if w1["obj_bytes"] < need_w or a1["obj_bytes"] < need_a or c1["obj_bytes"] != need_c:
        errors.append(f"core FIFO objects W {w1['obj_bytes']} A {a1['obj_bytes']} C {c1['obj_bytes']} "
                      f"below W {need_w} A {need_a} C {need_c}")
    if w1["depth"] != 2 or a1["depth"] != 2 or c1["depth"] < 1:
        errors.append(f"core depths W {w1['depth']} A {a1['depth']} C {c1['depth']}: W and A must be double-buffered")

    core = sum(f["obj_bytes"] * f["depth"] for f in plan["fifos"] if f["home"] == "core")
    core += 16 + plan["stack_bytes"] + plan["kernel_data_bytes"]
    if core > 64 * 1024:
        errors.append(f"core data memory {core} > 65536")
    if core != plan["core_bytes"]["total"]:
        errors.append(f"core total: recomputed {core}, plan {plan['core_bytes']['total']}")
    mem = sum(f["obj_bytes"] * f["depth"] for f in plan["fifos"] if f["home"] == "memtile")
    if mem > 512 * 1024:
        errors.append(f"memory tile {mem} > 524288")
    if fifos["w_l3l2_<c>"]["obj_bytes"] != (1 if n_split else 4) * w1["obj_bytes"]:
        errors.append("memory-tile W object is not the 4 cores' W tiles (m_split) or the column's one (n_split)")
    if fifos["a_l3l2_<c>"]["obj_bytes"] != (4 if n_split else 1) * a1["obj_bytes"]:
        errors.append("memory-tile A object is not the 4 cores' A tiles (n_split) or the column's one (m_split)")

    limits = {("core (each)", "S2MM"): 2, ("core (each)", "MM2S"): 2,
              ("memory tile (each column)", "S2MM"): 6, ("memory tile (each column)", "MM2S"): 6,
              ("shim (each column)", "MM2S"): 2, ("shim (each column)", "S2MM"): 2}
    for (tile, d), lim in limits.items():
        used = plan["channels"][tile][d]["used"]
        if used > lim:
            errors.append(f"{tile} {d}: {used} channels > {lim}")
    if plan["channels"]["core (each)"]["S2MM"]["used"] != 2:
        errors.append("a core takes exactly its W and A streams in")

    failed = [c for c in plan["checks"] if not c["ok"]]
    for c in failed:
        errors.append(f"plan check failed: {c['check']}: {c['detail']}")
    for e in errors:
        print(f"  {e}")
    print(f"{plan['family']} n{tn} cols {plan['cols']} {plan['contract']}{' exact' if plan['exact'] else ''} {plan['layout']}: "
          f"core {core} B, memtile {mem} B{'' if not errors else ' -> ERRORS'}")
    return not errors


ok = True
for path in sys.argv[2:]:
    ok = verify(json.load(open(path))) and ok
sys.exit(0 if ok else 1)
PYEOF

plans=()
plan_ok() {  # plan_ok <label> <design args...>: design.py --print-plan passes its own checks
    local label=$1; shift
    local json=$tmp/plan${#plans[@]}.json
    if "$py" "$design" "$@" --print-plan --format json >"$json" 2>"$tmp/plan.err"; then
        plans+=("$json")
    else
        fail "$label: --print-plan failed"; cat "$tmp/plan.err"; "$py" "$design" "$@" --print-plan | grep FAIL || true
    fi
}

for family in kquant legacy kquant_low float kquant_bfp16 legacy_bfp16 kquant_low_bfp16 float_bfp16 f32_bfp16; do
    tiles=$("$py" "$design" --family "$family" --list-tiles)
    for tn in $tiles; do
        plan_ok "$family n$tn" --family "$family" --tile-n "$tn" --cols 8 --dev npu2
        # The column-broadcast layout (W down the column, A split): 9 row tiles, 2 groups of 4 token tiles.
        plan_ok "$family n$tn n_split" --family "$family" --tile-n "$tn" --cols 8 --dev npu2 --layout n_split \
            --m-tiles 9 --n-tiles 8
    done
    first_tn=${tiles%% *}
    plan_ok "$family n$first_tn 1 column" --family "$family" --tile-n "$first_tn" --cols 1 --dev npu2
    first=1
    while read -r contract _; do
        # Every contract's own instruction stream (a shape with 7 rounds, a partial last one, and 2
        # K chunks), and one exact-size xclbin per family.
        plan_ok "$contract" --family "$family" --tile-n 32 --contract "$contract" \
            --m-tiles 172 --n-tiles 3 --k-tiles 112
        [ "$first" = 1 ] && plan_ok "$contract exact" --family "$family" --tile-n "$first_tn" --contract "$contract" --exact
        first=0
    done < <("$py" "$design" --family "$family" --list-contracts)
done
# An independent recomputation agrees that every plan fits.
"$py" "$tmp/verify.py" "$header" "${plans[@]}" || fail "a plan does not fit"

# The plan must refuse what the data movement cannot do: M not in groups of 4 row tiles (m_split), N not
# in groups of 4 token tiles (n_split), and K runs too long for the shim's buffer descriptors.
for bad in "--m-tiles 6" "--k-tiles 200" "--layout n_split --n-tiles 6"; do
    # shellcheck disable=SC2086 # word splitting of the option pair is intended
    if "$py" "$design" --family kquant --tile-n 32 $bad --print-plan >"$tmp/bad.txt" 2>&1; then
        fail "plan accepted $bad"
    elif ! grep -q '^  \[FAIL\]' "$tmp/bad.txt"; then
        fail "plan refused $bad without naming the failed check"
    fi
done

# The runtime-parameter barrier as design.py's core program and sequence use it, and the plan's check of it.
"$py" "$root/tests/aie/check_barrier.py" "$design" || fail "the runtime-parameter barrier protocol"
"$py" "$root/tests/aie/check_barrier.py" "$design" --self-test >"$tmp/barrier.txt" ||
    { cat "$tmp/barrier.txt"; fail "check_barrier.py does not catch a core program without the release"; }
# Every plan checks the release (verify.py above fails any plan whose check failed).
for json in "${plans[@]}"; do
    grep -q '"check": "barrier: released after the RTP words are read"' "$json" ||
        fail "$json: the plan does not check the barrier's release"
done

# The build script without a toolchain: every tool pointed at a place that does not have it.
out=$tmp/kernels
run_build() {
    MLIR_AIE_INSTALL_DIR=$tmp/none/mlir-aie PEANO_INSTALL_DIR=$tmp/none/llvm-aie XRT_ROOT=$tmp/none/xrt \
        PYTHON=$py "$root/scripts/build-npu-kernels.sh" --out "$out" "$@" >"$tmp/build.log" 2>&1
}
rc=0; run_build || rc=$?
cat "$tmp/build.log"
[ "$rc" = 0 ] || fail "build script without toolchain exited $rc, expected 0"
for want in "NPU kernels not built" "missing mlir-aie (>= 1.4), llvm-aie (Peano), XRT (>= 2.18)" \
            "MLIR_AIE_INSTALL_DIR=$tmp/none/mlir-aie has no python/aie" "$tmp/none/llvm-aie has no bin/clang++" \
            "no bin/xclbinutil under XRT_ROOT=$tmp/none/xrt" \
            "MLIR_AIE_INSTALL_DIR=<" "PEANO_INSTALL_DIR=<" "XRT_ROOT=<"; do
    grep -qF -- "$want" "$tmp/build.log" || fail "build script message lacks '$want'"
done
[ ! -e "$out/manifest.json" ] || fail "build script wrote a manifest without a toolchain"
rc=0; run_build --require || rc=$?
[ "$rc" = 1 ] || fail "build script --require without toolchain exited $rc, expected 1"

if [ "$failures" -ne 0 ]; then
    echo "check_design: $failures failure(s)"
    exit 1
fi
echo "check_design: all checks passed"
