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
#     prints "NPU kernels not built", writes no manifest and exits 0 (1 with --require; 0 for the
#     attention design alone with --attention-layout both or decode), and refuses an unknown
#     --attention-layout (2).
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
            parts = 2 if tn == 64 else 1  # at 64 tokens A comes in K halves: one A object is half a K tile
            return up(tn * (tk // parts // 8) * 9)
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
    # m_split: W split over the cores (one FIFO per core), A broadcast; n_split the reverse; n_shared as
    # n_split with one A FIFO for the array (a_l3l2 into memory tile (0,1), split into one per core row).
    # n_rows: as n_shared with one A FIFO per core row r, in column r (a_l3l2_<r>, one A tile per object).
    n_rows = plan["layout"] == "n_rows"
    n_shared = plan["layout"] == "n_shared" or n_rows
    n_split = plan["layout"] == "n_split" or n_shared
    w1 = fifos["w_l2l1_<c>" if n_split else "w_l2l1_<c>_<r>"]
    a1 = fifos["a_l2l1_<r>" if n_shared else "a_l2l1_<c>_<r>" if n_split else "a_l2l1_<c>"]
    a3 = fifos["a_l3l2_<r>" if n_rows else "a_l3l2" if n_shared else "a_l3l2_<c>"]
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
    # The busiest memory tile: every column's (n_shared: column 0's, the only one staging A).
    mem = sum(f["obj_bytes"] * f["depth"] for f in plan["fifos"] if f["home"] == "memtile")
    if mem > 512 * 1024:
        errors.append(f"memory tile {mem} > 524288")
    if mem != plan["memtile_bytes"]["total"]:
        errors.append(f"memory tile total: recomputed {mem}, plan {plan['memtile_bytes']['total']}")
    if n_shared:
        other = mem - a3["obj_bytes"] * a3["depth"]  # the other columns' memory tiles: W and C only
        key = "total of memory tiles (c,1), c > 3 (no A)" if n_rows else "total of memory tiles (c,1), c > 0 (no A)"
        if other != plan["memtile_bytes"][key]:
            errors.append(f"{key}: recomputed {other}, plan {plan['memtile_bytes'][key]}")
    if fifos["w_l3l2_<c>"]["obj_bytes"] != (1 if n_split else 4) * w1["obj_bytes"]:
        errors.append("memory-tile W object is not the 4 cores' W tiles (m_split) or the column's one (n_split)")
    if a3["obj_bytes"] != (4 if n_split and not n_rows else 1) * a1["obj_bytes"]:
        errors.append("memory-tile A object is not the 4 cores' A tiles (n_split, n_shared) or one A tile (m_split, n_rows)")

    # Every tile's channels against the hardware: core 2 + 2, memory tile 6 + 6, shim 2 + 2. n_shared
    # lists memory tile (0,1) and shim (0,0) (they also carry the array's A) apart from the others.
    hw = {"core": 2, "memory tile": 6, "shim": 2}
    want_tiles = (["core (each)", "memory tile (r,1), r < 4", "memory tile (c,1), c > 3", "shim (r,0), r < 4", "shim (c,0), c > 3"]
                  if n_rows else
                  ["core (each)", "memory tile (0,1)", "memory tile (c,1), c > 0", "shim (0,0)", "shim (c,0), c > 0"]
                  if n_shared else ["core (each)", "memory tile (each column)", "shim (each column)"])
    if sorted(plan["channels"]) != sorted(want_tiles):
        errors.append(f"channel table lists {sorted(plan['channels'])}, expected {sorted(want_tiles)}")
    for tile, dirs in plan["channels"].items():
        lim = next(v for k, v in hw.items() if tile.startswith(k))
        for d, ch in dirs.items():
            if ch["used"] > lim or ch["available"] != lim:
                errors.append(f"{tile} {d}: {ch['used']} of {ch['available']} channels, the hardware has {lim}")
    if plan["channels"]["core (each)"]["S2MM"]["used"] != 2:
        errors.append("a core takes exactly its W and A streams in")
    if n_rows:
        # Memory tile (r,1), r < 4: W in, A in, 4 C in; W broadcast, A along core row r, C out.
        mtr = plan["channels"]["memory tile (r,1), r < 4"]
        if (mtr["S2MM"]["used"], mtr["MM2S"]["used"]) != (6, 3):
            errors.append(f"memory tile (r,1) uses {mtr['S2MM']['used']} + {mtr['MM2S']['used']} channels, expected 6 + 3")
        if plan["cols"] != 8:
            errors.append(f"n_rows planned for {plan['cols']} columns")
    elif n_shared:
        # Memory tile (0,1): W in, A in, 4 C in; W broadcast, 4 A parts (one per core row), C out.
        mt0 = plan["channels"]["memory tile (0,1)"]
        if (mt0["S2MM"]["used"], mt0["MM2S"]["used"]) != (6, 6):
            errors.append(f"memory tile (0,1) uses {mt0['S2MM']['used']} + {mt0['MM2S']['used']} channels, expected 6 + 6")
        if plan["cols"] != 8:
            errors.append(f"n_shared planned for {plan['cols']} columns")

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
    # The activations shared by the columns (prefill, TN 32, the whole array only): 9 row tiles (a last
    # round of 1 row tile and 7 duplicates), and the 8B attention projection's shape.
    plan_ok "$family n32 n_shared" --family "$family" --tile-n 32 --cols 8 --dev npu2 --layout n_shared \
        --m-tiles 9 --n-tiles 8
    plan_ok "$family n32 n_shared 64 row tiles" --family "$family" --tile-n 32 --layout n_shared \
        --m-tiles 64 --n-tiles 16 --k-tiles 16
    # Each core row's A from its own column (n_rows): the same two shapes.
    plan_ok "$family n32 n_rows" --family "$family" --tile-n 32 --cols 8 --layout n_rows --m-tiles 9 --n-tiles 8
    plan_ok "$family n32 n_rows 64 row tiles" --family "$family" --tile-n 32 --layout n_rows \
        --m-tiles 64 --n-tiles 16 --k-tiles 16
    case " $tiles " in *" 64 "*)  # A in K halves: the 8B projection at pp512 (2 groups of 4 token tiles of 64)
        plan_ok "$family n64 n_shared 64 row tiles" --family "$family" --tile-n 64 --layout n_shared \
            --m-tiles 64 --n-tiles 8 --k-tiles 16
        plan_ok "$family n64 n_shared, 56 K tiles (2 K chunks of 32 x 2 halves)" --family "$family" --tile-n 64 \
            --layout n_shared --m-tiles 64 --n-tiles 8 --k-tiles 56
        plan_ok "$family n64 n_rows 64 row tiles" --family "$family" --tile-n 64 --layout n_rows \
            --m-tiles 64 --n-tiles 8 --k-tiles 56 ;;
    esac
    first_tn=${tiles%% *}
    plan_ok "$family n$first_tn 1 column" --family "$family" --tile-n "$first_tn" --cols 1 --dev npu2
    first=1
    while read -r contract _; do
        # Every contract's own instruction stream (a shape with 7 rounds, a partial last one, and 2
        # K chunks), and one exact-size xclbin per family.
        plan_ok "$contract" --family "$family" --tile-n 32 --contract "$contract" \
            --m-tiles 172 --n-tiles 3 --k-tiles 112
        # n_shared with the 8B output head's 2004 row tiles: 251 rounds, the last with 4 row tiles and
        # 4 columns recomputing the last one; 2 K chunks.
        plan_ok "$contract n_shared" --family "$family" --tile-n 32 --contract "$contract" --layout n_shared \
            --m-tiles 2004 --n-tiles 4 --k-tiles 112
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

# n_shared is built for the whole array only: other column counts are refused, with the reason.
for cols in 1 4 7; do
    if "$py" "$design" --family kquant_bfp16 --tile-n 32 --layout n_shared --cols "$cols" --print-plan \
        >"$tmp/bad.txt" 2>&1; then
        fail "n_shared planned for --cols $cols"
    elif ! grep -q "layout n_shared .*all 8 columns only" "$tmp/bad.txt"; then
        fail "n_shared refused --cols $cols without the reason"; cat "$tmp/bad.txt"
    fi
done

# n_shared against n_split, recomputed here from the plan's objects: A read once per step for the whole
# array (n_split's A / 8 when the row tiles fill the rounds), the duplicate row tiles of a partial last
# round (every column works every round: W fills and C drains counted), column 0's A channel the
# busiest; and its IRON program (design.py's emit_mlir on the stand-ins of tests/aie/check_barrier.py):
# one A FIFO from shim (0,0) into memory tile (0,1), its 4 parts to core row r of every column, A fills
# on column 0 only, and each column's C drains at the row tiles the rule gives.
cat >"$tmp/n_shared.py" <<'PYEOF'
import importlib.util, sys


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


cb = load("check_barrier", sys.argv[2])
cb.install_stand_ins()  # before design.py's emit_mlir imports IRON
design = load("xdna_matmul_design", sys.argv[1])
errors = []
COLS = design.MAX_COLS


def plan(family, layout, m, n, k, contract=None):
    p = design.make_plan(family, 32, COLS, contract=contract, m_tiles=m, n_tiles=n, k_tiles=k, layout=layout)
    errors.extend(f"{family} {layout} {m}x{n}x{k}: plan check failed: {w}: {d}" for w, ok, d in p.checks if not ok)
    return p


for family in sorted(design.FAMILIES):
    if 32 not in design.family_tiles(family):
        continue
    for m, n, k in ((64, 16, 16), (2004, 4, 16), (20, 8, 16), (9, 8, 112), (224, 16, 16)):
        sp, sh = plan(family, "n_split", m, n, k), plan(family, "n_shared", m, n, k)
        label = f"{family} {m}x{n}x{k}"
        rounds, units = -(-m // COLS), n // 4
        W, A, C = sh.w_obj_bytes, sh.a_obj_bytes, 32 * 64 * 4
        want = {"W read (bytes)": COLS * rounds * units * k * W,
                "A read (bytes)": rounds * units * k * 4 * A,
                "C written (bytes)": COLS * rounds * units * 4 * C}
        want["busiest shim channel (bytes)"] = max(want["A read (bytes)"], want["W read (bytes)"] // COLS,
                                                   want["C written (bytes)"] // COLS)
        for key, v in want.items():
            if sh.traffic[key] != v:
                errors.append(f"{label}: n_shared {key} {sh.traffic[key]}, recomputed {v}")
        if sp.traffic["W read (bytes)"] != m * units * k * W:
            errors.append(f"{label}: n_split W read {sp.traffic['W read (bytes)']}, recomputed {m * units * k * W}")
        if m % COLS == 0:
            if sh.traffic["A read (bytes)"] * COLS != sp.traffic["A read (bytes)"]:
                errors.append(f"{label}: n_shared A {sh.traffic['A read (bytes)']} is not n_split's "
                              f"{sp.traffic['A read (bytes)']} / {COLS}")
            for key in ("W read (bytes)", "C written (bytes)"):
                if sh.traffic[key] != sp.traffic[key]:
                    errors.append(f"{label}: {key} n_shared {sh.traffic[key]}, n_split {sp.traffic[key]} (no duplicates)")
        dup = rounds * COLS - m
        s = sh.schedule
        if s["duplicate row tiles (last round, recomputing row tile m_tiles - 1)"] != dup:
            errors.append(f"{label}: plan has {s['duplicate row tiles (last round, recomputing row tile m_tiles - 1)']} "
                          f"duplicate row tiles, expected {dup}")
        if s["output tiles per core (RTP)"] != [rounds * units] * COLS:
            errors.append(f"{label}: output tiles per core {s['output tiles per core (RTP)']}, expected "
                          f"{rounds * units} on every column")
        if s["active columns in the last round"] != COLS:
            errors.append(f"{label}: {s['active columns in the last round']} active columns in the last round")

# The IRON program on stand-ins that remember FIFO names, cores and tap offsets.
SPLITS, DMAS = [], []


class Tap:
    def __init__(self, shape, offset, sizes, strides):
        self.offset = offset


class Fifo:
    def __init__(self, *args, name=None, **kwargs):
        self.name = name

    def prod(self, *args, **kwargs):
        return Handle(self)

    def cons(self, *args, **kwargs):
        return Handle(self)


class Handle(cb.FifoHandle):
    def __init__(self, fifo):
        self.fifo = fifo

    def split(self, offsets, obj_types=None, names=None, depths=None, **kwargs):
        SPLITS.append((self.fifo.name, list(offsets), list(names)))
        return [Fifo(name=x) for x in names]

    def join(self, offsets, obj_types=None, names=None, depths=None, **kwargs):
        return [Fifo(name=x) for x in names]

    def forward(self, obj_type=None, depth=None, name=None, **kwargs):
        return Fifo(name=name)

    def fill(self, tensor, tap=None, **kwargs):
        cb.record("dma", self)
        DMAS.append((self.fifo.name, tap.offset))

    def drain(self, tensor, tap=None, **kwargs):
        cb.record("dma", self)
        DMAS.append((self.fifo.name, tap.offset))


class Worker(cb.Worker):
    def __init__(self, core_fn, fn_args=None, *args, tile=None, **kwargs):
        super().__init__(core_fn, fn_args)
        self.tile = tile


sys.modules["aie.iron"].ObjectFifo = Fifo
sys.modules["aie.iron"].Worker = Worker
sys.modules["aie.iron.device"].Tile = lambda c, r: (c, r)
sys.modules["aie.helpers.taplib"].TensorAccessPattern = Tap
for m, n, k in ((20, 8, 3), (9, 4, 70), (16, 4, 2)):
    SPLITS.clear()
    DMAS.clear()
    p = plan("kquant_bfp16", "n_shared", m, n, k)
    label = f"emit n_shared {m}x{n}x{k}"
    errors += [f"{label}: {e}" for e in cb.check_program(design, p)]
    prog = cb.PROGRAM[0]
    a_handles = prog.rt.arg_types[5]
    if [h.fifo.name for h in a_handles] != ["a_l3l2"]:
        errors.append(f"{label}: A producers {[h.fifo.name for h in a_handles]}, expected the one a_l3l2")
    A = p.a_obj_bytes
    a_splits = [x for x in SPLITS if x[0].startswith("a_")]
    if a_splits != [("a_l3l2", [r * A for r in range(4)], [f"a_l2l1_{r}" for r in range(4)])]:
        errors.append(f"{label}: A splits {a_splits}")
    for w in prog.workers:
        c, row = w.tile
        got = (w.fn_args[0].fifo.name, w.fn_args[1].fifo.name)
        if got != (f"w_l2l1_{c}", f"a_l2l1_{row - 2}"):
            errors.append(f"core {w.tile}: W, A from {got}")
    rounds, units = -(-m // COLS), n // 4
    chunks = -(-k // 64)
    a_fills = [o for f, o in DMAS if f == "a_l3l2"]
    if len(a_fills) != rounds * units * chunks:
        errors.append(f"{label}: {len(a_fills)} A fills, expected {rounds * units * chunks} (column 0 only)")
    if any(f.startswith("a_") and f != "a_l3l2" for f, _ in DMAS):
        errors.append(f"{label}: A fills outside column 0")
    T = design.family_contracts("kquant_bfp16")[0].w_bytes()
    for c in range(COLS):
        tiles = [min(j * COLS + c, m - 1) for j in range(rounds) for _ in range(units)]
        drains = [o for f, o in DMAS if f == f"c_l2l3_{c}"]
        want = [u * 4 * 32 * p.out_row_stride + mt * 64 for mt, u in zip(tiles, [u for _ in range(rounds) for u in range(units)])]
        if drains != want:
            errors.append(f"{label}: column {c} C drains at {drains}, expected {want}")
        w_fills = [o for f, o in DMAS if f == f"w_l3l2_{c}"]
        want_w = [(mt * k + k0) * T for mt in tiles for k0 in range(0, k, 64)]
        if w_fills != want_w:
            errors.append(f"{label}: column {c} W fills at {w_fills}, expected {want_w}")

# n_rows: core row r's A FIFO in column r (a_l3l2_r -> memory tile (r,1) -> a_l2l1_r, along the row), no
# split; each of columns 0-3 fills token tile 4u + r's K run; at TN 64 its K halves in the same run.
for tn, m, n, k in ((32, 20, 8, 3), (64, 9, 8, 70), (64, 16, 4, 2)):
    SPLITS.clear()
    DMAS.clear()
    p = design.make_plan("kquant_bfp16", tn, COLS, m_tiles=m, n_tiles=n, k_tiles=k, layout="n_rows")
    label = f"emit n_rows TN {tn} {m}x{n}x{k}"
    errors += [f"{label}: plan check failed: {w}: {d}" for w, ok, d in p.checks if not ok]
    errors += [f"{label}: {e}" for e in cb.check_program(design, p)]
    prog = cb.PROGRAM[0]
    rows = design.ROWS
    if [h.fifo.name for h in prog.rt.arg_types[5]] != [f"a_l3l2_{r}" for r in range(rows)]:
        errors.append(f"{label}: A producers {[h.fifo.name for h in prog.rt.arg_types[5]]}")
    if any(x[0].startswith("a_") for x in SPLITS):
        errors.append(f"{label}: A split {SPLITS}")
    for w in prog.workers:
        c, row = w.tile
        got = (w.fn_args[0].fifo.name, w.fn_args[1].fifo.name)
        if got != (f"w_l2l1_{c}", f"a_l2l1_{row - 2}"):
            errors.append(f"{label}: core {w.tile}: W, A from {got}")
    rounds, units = -(-m // COLS), n // 4
    AK = p.a_obj_bytes * p.a_parts  # A per token tile and K tile
    chunks = -(-k // 64)  # a linear A run: the BD's 64 iterations per chunk whatever the parts
    for r in range(rows):
        fills = [o for f, o in DMAS if f == f"a_l3l2_{r}"]
        want = [((4 * u + r) * k + k0) * AK for _ in range(rounds) for u in range(units) for k0 in range(0, k, 64)]
        if fills != want:
            errors.append(f"{label}: row {r} A fills at {fills[:4]}..., expected {want[:4]}... ({len(fills)} vs {len(want)})")
    if p.a_parts != (2 if tn == 64 else 1):
        errors.append(f"{label}: {p.a_parts} A parts")

for e in errors:
    print(f"  {e}")
print("n_shared, n_rows: " + ("FAILED" if errors else "traffic, duplicate row tiles and IRON programs ok"))
sys.exit(1 if errors else 0)
PYEOF
"$py" "$tmp/n_shared.py" "$design" "$root/tests/aie/check_barrier.py" || fail "layout n_shared"

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
# The attention design: picked alone, with both layouts listed (the default, said) or the decode one, it
# still stops at the missing tools; a layout the attention designs lack is an error before the tools are
# looked for.
for layout in both decode; do
    rc=0; run_build --design flash_attn --attention-layout $layout || rc=$?
    [ "$rc" = 0 ] && grep -qF "NPU kernels not built" "$tmp/build.log" ||
        fail "build script --design flash_attn --attention-layout $layout without toolchain exited $rc, expected 0"
done
rc=0; run_build --attention-layout prefill || rc=$?
[ "$rc" = 2 ] && grep -qF -- "--attention-layout prefill: not a layout" "$tmp/build.log" ||
    fail "build script --attention-layout prefill exited $rc, expected 2: $(cat "$tmp/build.log")"

if [ "$failures" -ne 0 ]; then
    echo "check_design: $failures failure(s)"
    exit 1
fi
echo "check_design: all checks passed"
