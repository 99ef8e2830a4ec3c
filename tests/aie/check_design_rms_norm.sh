#!/usr/bin/env bash
# Checks the norm design's IRON script (aie/rms_norm/design.py, for aie/rms_norm/dataflow.json) without
# mlir-aie, Peano or an NPU:
#   - design.py compiles and answers --help, --list-tiles (every tile of the description: 32 .. 1024) and
#     --list-contracts (each contract's kernel file) with a bare Python;
#   - its kernels' loop promise is what the plan checks: AIE_LOOP_MIN_ITERATION_COUNT(1) in every chunk
#     loop of kernels/rms_norm.cc, so the smallest tile (32, one trip of 32 lanes) keeps it;
#   - --print-plan over rows 1..600, rows of 32 .. 8192 values and longer (up to the shim's stride field,
#     1048576, and one chunk past it), with and without the weight, one weight row or one per row, strided
#     rows, 1..8 columns: the tile, grid, steps, BDs, RTP words, traffic, calls, budgets, channels and
#     ports agree with a recomputation written apart from design.py (tests/aie/rms_norm_plan_verify.py),
#     which also replays the shim's BDs row by row, holds a few shapes to numbers computed by hand, and
#     requires every check to fail exactly when the recomputation says it must (exit 1 then, 0 otherwise);
#   - what the design cannot take is refused (exit 2) with the reason: a row not a multiple of 32 values,
#     0 rows, 0 or 9 columns, a tile the description has no xclbin for, a negative stride, a description
#     of another movement or link; a row stride short of the row or past the shim's stride field fails its
#     check by name (exit 1), as a row not in whole chunks of an asked tile and an eps under 2^-100;
#   - variants of the description (written to a temporary directory) fail the checks they break, by name:
#     5 steps in flight (20 BDs of 16, 5 tasks of a channel's 4, BD ids past 15), x without its second BD,
#     4 core rows (9 memory-tile MM2S channels of 6, 8 upward streams of 6), iteration_max 128, repeat_max
#     31, stride_max 2^21, a 4096-value tile (core data memory), a 16-value tile (the loop promise), too
#     little kernel data, a barrier never released; 4 steps in flight (16 BDs, 4 tasks) passes;
#   - a failing plan is not emitted, and a passing one reaches the emission, which names mlir-aie when it
#     is missing;
#   - the IRON program run on stand-ins of IRON's classes (tests/aie/rms_norm_iron_check.py, on
#     tests/aie/check_barrier.py's stand-ins): FIFOs, links and shim ends, one worker per column, the core
#     program as traced (barrier, RTP words, two passes per row, the contract's branch), the sequence's
#     words, sets, fills and drains (x twice per row, the weight row, y once) and task groups in flight.
# The description is read, never changed: variants are written to a temporary directory, removed on exit.
set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
root=$(cd "$root" && pwd)
py=${PYTHON:-python3}
export PYTHONDONTWRITEBYTECODE=1  # the in-process runs import design.py and check_barrier.py: no __pycache__ in the tree
here=$root/tests/aie
design=$root/aie/rms_norm/design.py
df=$root/aie/rms_norm/dataflow.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$py" -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$design" ||
    fail "design.py does not compile"
"$py" "$design" --help >/dev/null || fail "design.py --help"
want=$("$py" -c 'import json, sys
d = json.load(open(sys.argv[1]))
fam = next(k for k in d["families"] if k != "about")
print(" ".join(str(t) for t in sorted(int(k) for k in d["core_budget"]["kernel_stack"][fam] if k.isdigit())))' "$df")
got=$("$py" "$design" --list-tiles) || fail "--list-tiles"
[ "$got" = "$want" ] || fail "--list-tiles: '$got', the description has '$want'"
echo "rms_norm tiles: $got"
"$py" "$design" --list-contracts >"$tmp/contracts.txt" || fail "--list-contracts"
for line in "rms_norm_mul_f32 rms_norm.cc" "rms_norm_f32 rms_norm.cc"; do
    grep -qx "$line" "$tmp/contracts.txt" || { fail "--list-contracts: no '$line'"; cat "$tmp/contracts.txt"; }
done
# The kernels' promise: every chunk loop says 1 trip (so tile 32 keeps it), and the plan checks it.
hints=$(grep -o 'AIE_LOOP_MIN_ITERATION_COUNT([0-9]*)' "$root/aie/rms_norm/kernels/rms_norm.cc" | sort | uniq -c | sed 's/^ *//')
[ "$hints" = "3 AIE_LOOP_MIN_ITERATION_COUNT(1)" ] ||
    fail "rms_norm.cc's loop hints are '$hints', the design's tiles assume three loops promising 1 trip"
"$py" "$design" --print-plan --rows 1 --cols 32 >"$tmp/t32.txt" || fail "rows of 32 values (tile 32) fail a check"
[ "$(grep -c '\[ok\] kernel .* loop keeps its min_iteration_count at n = tile: 32 / 32 lanes = 1 trip(s), AIE_LOOP_MIN_ITERATION_COUNT(1)' "$tmp/t32.txt")" = 3 ] ||
    fail "the plan of tile 32 does not check the three loops' promise of 1 trip"
# The host's longest row is the header's, and the plan says so.
host_max=$(sed -n 's/.*kRmsNormMaxCols = \([0-9]*\);.*/\1/p' "$root/aie/include/xdna_aie/rms_norm_tiles.h")
"$py" "$design" --print-plan --rows 1 --cols 16384 >"$tmp/long.txt" || fail "a row of 16384 values fails a check"
grep -q "the host takes rows of up to $host_max values (kRmsNormMaxCols.*this row is longer" "$tmp/long.txt" ||
    fail "the plan of a row past kRmsNormMaxCols ($host_max) does not say the host refuses it"

# Variants of the description, from the real one (so every other number stays its own).
mkdir -p "$tmp/variants"
"$py" - "$df" "$tmp/variants" <<'PYEOF'
import copy, json, sys

src, out = sys.argv[1:]
base = json.load(open(src))


def variant(name, edit):
    d = copy.deepcopy(base)
    edit(d)
    json.dump(d, open(f"{out}/{name}.json", "w"), indent=1)


def slots(n):
    return lambda d: (d["shim"].__setitem__("steps_in_flight", n),
                      d["shim"].__setitem__("bd_slots", [{"x": [4 * s, 4 * s + 1], "weight": [4 * s + 2], "y": 4 * s + 3}
                                                         for s in range(n)]))


def core4(d):
    d["array"]["core_rows"] = 4
    for f in d["layouts"][0]["fifos"]:
        if "shim_channel" in f:
            f["object"]["count"] = 4


def fifo(name):
    return lambda d: next(f for f in d["layouts"][0]["fifos"] if f["name"] == name)


variant("inflight4", slots(4))     # 16 BDs of 16, 4 tasks of 4: passes
variant("inflight5", slots(5))     # 20 BDs, 5 tasks per channel, ids 16..19
variant("xone", lambda d: d["shim"]["bd_slots"][0].__setitem__("x", [0]))
variant("core4", core4)
variant("iter128", lambda d: d["limits"].__setitem__("iteration_max", 128))
variant("repeat31", lambda d: d["limits"].__setitem__("repeat_max", 31))
variant("stride2m", lambda d: d["limits"].__setitem__("stride_max", 1 << 21))
variant("tile4096", lambda d: d["core_budget"]["kernel_stack"]["norm"].__setitem__("4096", 1024))
variant("tile16", lambda d: d["core_budget"]["kernel_stack"]["norm"].__setitem__("16", 1024))
variant("kdata128", lambda d: d["core_budget"].__setitem__("kernel_data_bytes", 128))
variant("norelease", lambda d: d["core_program"]["barrier"]["release"].__setitem__("value", 0))
# Refused when read:
variant("refused-forward", lambda d: fifo("weight_l2l1")(d).__setitem__("link", "forward"))
variant("refused-rows", lambda d: d.__setitem__("movement", "rows"))
variant("refused-group2", lambda d: fifo("x_l3l2")(d)["object"].__setitem__("count", 2))
PYEOF

# The plans and their recomputation.
"$py" "$here/rms_norm_plan_verify.py" "$root" "$tmp/variants" || fail "a plan and its recomputation disagree"

# Refusals, with the reason.
refused() {  # refused <exit status> <pattern> <design args...>
    local status=$1 pattern=$2 rc=0; shift 2
    "$py" "$design" "$@" --print-plan >"$tmp/bad.txt" 2>&1 || rc=$?
    if [ "$rc" != "$status" ]; then
        fail "design.py $* exited $rc, expected $status"; cat "$tmp/bad.txt"
    elif ! grep -q -- "$pattern" "$tmp/bad.txt"; then
        fail "design.py $* refused without '$pattern'"; cat "$tmp/bad.txt"
    fi
}
refused 2 "positive multiple of 32" --cols 33
refused 2 "positive multiple of 32" --cols 48
refused 2 "positive multiple of 32" --cols 0
refused 2 "positive multiple of 32" --rows 3 --cols 8200 --no-weight
refused 2 "0 rows: the design takes at least one" --rows 0
refused 2 "npu2 has 1..8 columns" --columns 9
refused 2 "npu2 has 1..8 columns" --columns 0
refused 2 "has no xclbin for tile 2048" --tile 2048
refused 2 "has no xclbin for tile 48" --tile 48 --cols 96
refused 2 "x row stride -1: a stride is positive" --x-row-stride -1
refused 2 "y row stride 0: a stride is positive" --y-row-stride 0
refused 2 "is linked by 'forward'" --dataflow "$tmp/variants/refused-forward.json"
refused 2 "builds the \"norm\" movement" --dataflow "$tmp/variants/refused-rows.json"
refused 2 "a split over array.core_rows = 1 core rows" --dataflow "$tmp/variants/refused-group2.json"
refused 2 "builds the \"norm\" movement" --dataflow "$root/aie/add/dataflow.json"
refused 1 "\[FAIL\] shim BD x pass 1: iteration stride covers the row: stride 4000, row 4096" --rows 64 --cols 4096 --x-row-stride 4000
refused 1 "\[FAIL\] shim BD weight: iteration stride covers the row: stride 100, row 4096" --rows 2 --w-row-stride 100
refused 1 "\[FAIL\] shim BD y: iteration stride within the shim's stride: 2000000 <= 1048576" --rows 8 --y-row-stride 2000000
refused 1 "\[FAIL\] shim BD x pass 2: iteration stride within the shim's stride: 1048608 <= 1048576" --rows 1 --cols 1048608
refused 1 "\[FAIL\] shape: the row in whole chunks of the tile" --tile 1024 --cols 96
refused 1 "\[FAIL\] eps: at least 2^-100" --eps 0
refused 1 "\[FAIL\] eps: at least 2^-100" --eps 1e-40

# The variants fail by name (the recomputation above requires exactly these; here the names people read).
named() {  # named <variant> <design args> -- <patterns...>
    local v=$1 args=() rc=0; shift
    while [ "$1" != "--" ]; do args+=("$1"); shift; done; shift
    "$py" "$design" --dataflow "$tmp/variants/$v.json" "${args[@]}" --print-plan >"$tmp/v.txt" 2>&1 || rc=$?
    [ "$rc" = 1 ] || fail "variant $v ${args[*]}: design.py exited $rc, expected 1 (a failed check)"
    for want in "$@"; do
        grep -q -- "$want" "$tmp/v.txt" || fail "variant $v ${args[*]}: no '$want'"
    done
}
named inflight5 --rows 600 -- "\[FAIL\] shim BDs in flight: 5 step(s) x 4 BDs (x 2, weight 1, y 1) = 20 of 16" \
    "\[FAIL\] shim task queue per channel: 5 step(s) in flight x 1 task per channel and step = 5 of 4 queued" \
    "\[FAIL\] shim BD ids distinct and in range"
named xone --rows 8 -- "\[FAIL\] shim BD slots: one set per step in flight, 2 x BDs (the chain)"
named core4 --rows 64 -- "\[FAIL\] DMA channels memory tile MM2S: 9 of 6" \
    "\[FAIL\] stream-switch ports memory tile -> core row 2 (up): 8 stream(s) of 6 ports"
named core4 --rows 9 -- "\[FAIL\] array: a block's rows in whole groups of array.core_rows"
named iter128 --rows 8 -- "\[FAIL\] limits.iteration_max within the shim BD's iteration count: 128 of 1..64"
named repeat31 --rows 512 -- "\[FAIL\] shim BD x pass 1: queue-push repeat: 63 <= 31" "\[FAIL\] shim BD y: queue-push repeat: 63 <= 31"
named stride2m --rows 8 -- "\[FAIL\] limits.stride_max within the shim BD's stride field"
named tile4096 --rows 8 --cols 4096 -- "\[FAIL\] core data memory: 99608 of 65536 bytes"
named tile16 --rows 8 --cols 64 --tile 16 -- "\[FAIL\] kernel rms_norm_sumsq_f32 (rms_norm.cc) loop keeps its min_iteration_count at n = tile: 16 / 32 lanes = 0 trip(s)"
named kdata128 --rows 8 -- "\[FAIL\] kernel data: the partial sums and the scale"
named norelease --rows 8 -- "\[FAIL\] barrier: released after the RTP words are read"
"$py" "$design" --dataflow "$tmp/variants/inflight4.json" --rows 600 --print-plan >"$tmp/v.txt" ||
    { fail "4 steps in flight (16 BDs, 4 tasks per channel) fails a check"; grep FAIL "$tmp/v.txt"; }
"$py" "$design" --dataflow "$tmp/variants/repeat31.json" --rows 256 --print-plan >/dev/null ||
    fail "repeat_max 31 fails at 32 rows per column (repeat 31)"

# A failing plan is not emitted; a passing one reaches the emission.
rc=0; "$py" "$design" --rows 64 --x-row-stride 4000 >"$tmp/emit.txt" 2>&1 || rc=$?
{ [ "$rc" = 1 ] && grep -q "design.py: check failed: shim BD x pass 1: iteration stride covers the row" "$tmp/emit.txt"; } ||
    { fail "design.py went on to emit a plan with failed checks (exit $rc)"; cat "$tmp/emit.txt"; }
if ! "$py" -c "import aie.iron" 2>/dev/null; then
    rc=0; "$py" "$design" --rows 8 --cols 4096 >"$tmp/emit.txt" 2>&1 || rc=$?
    { [ "$rc" = 2 ] && grep -q "emitting MLIR needs mlir-aie" "$tmp/emit.txt"; } ||
        { fail "without mlir-aie the emission did not say so (exit $rc)"; cat "$tmp/emit.txt"; }
fi

# The host's own figures for the same shapes (its stream builder, src/runtime/norm-sequence.cpp, as
# tests/kernels/test_rms_norm_stream.cpp TrafficGridAndTileAreTheDesigns asserts them): tile, columns,
# steps, rows of the busiest core and the bytes of x, the weight and y.
host_anchor() {  # host_anchor <tile> <columns> <steps> <busiest rows> <x> <weight> <y> -- <design.py args>
    local want="$1 $2 $3 $4 $5 $6 $7"
    shift 8
    local got
    got=$("$py" "$design" --print-plan --format json "$@" | "$py" -c 'import json, sys
p = json.load(sys.stdin)
st, t = p["steps"], p["traffic"]
blocks = [sum(n for _, n in col) for col in st["per column (first row, rows)"]]
print(p["tile"], len(blocks), st["steps"], max(blocks), t["x read (bytes)"], t["weight read (bytes)"], t["y written (bytes)"])')
    [ "$got" = "$want" ] || fail "host anchor $*: design.py gives '$got', the host '$want'"
}
host_anchor 1024 1 1 1 32768 16384 16384 -- --rows 1 --cols 4096 --one-weight-row
host_anchor 128 7 1 1 50176 25088 25088 -- --rows 7 --cols 896 --x-row-stride 900 --y-row-stride 904 --one-weight-row
host_anchor 64 8 2 75 307200 0 153600 -- --rows 600 --cols 64 --no-weight
host_anchor 32 3 1 44 2163200 1081600 1081600 -- --rows 130 --cols 2080 --columns 3 --one-weight-row
host_anchor 1024 8 1 2 491520 245760 245760 -- --rows 12 --cols 5120

# The IRON program on stand-ins.
"$py" "$here/rms_norm_iron_check.py" "$root" "$here/check_barrier.py" || fail "the IRON program"

echo "${df#"$root"/}, rows 1 x 4096, 8 columns:"
"$py" "$design" --rows 1 --cols 4096 --print-plan >"$tmp/tree.txt" || true
grep '^  \[FAIL\]' "$tmp/tree.txt" || echo "  every check passes ($(grep -c '^  \[ok\]' "$tmp/tree.txt") checks)"

if [ "$failures" -ne 0 ]; then
    echo "check_design_rms_norm: $failures failure(s)"
    exit 1
fi
echo "check_design_rms_norm: all checks passed"
