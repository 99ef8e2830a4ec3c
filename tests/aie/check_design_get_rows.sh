#!/usr/bin/env bash
# Checks the gather design's IRON script (aie/get_rows/design.py, for aie/get_rows/dataflow.json) without
# mlir-aie, Peano or an NPU:
#   - design.py compiles and answers --help, --list-tiles (the description's xclbin_tiles: 32 .. 1024) and
#     --list-contracts (get_rows_f32, no kernel file) with a bare Python; its cap on a run's rows is the
#     host's stream builder's, once src/runtime/gather-sequence.h states one;
#   - --print-plan over random id lists (runs of consecutive ids, some past the 256-row cap, repeats,
#     descending ids, jumps), one id, 1000 ids, 1..8 columns, every tile (the host's pick and each asked
#     for), strided rows: the tile, grid, runs, steps, every BD's id, offset and pattern, each column's
#     stream of pushes and syncs, the queue and BD counts, operands and traffic agree with a recomputation
#     written apart from design.py (tests/aie/get_rows_plan_verify.py), which also replays each plan's
#     stream (queues, BD reuse, syncs) and its BDs row by row and, for the small shapes, word by word, holds
#     a few shapes to numbers computed by hand, and requires every check to fail exactly when the
#     recomputation says it must (exit 1 then, 0 otherwise);
#   - what the design cannot take is refused with the reason (exit 2): no ids, ids not integers, a row
#     no tile divides, a tile the description has no xclbin for, 0 or 9 columns, a negative stride, a
#     description of another movement, of core FIFOs, of another link or of two-chunk objects; what it
#     plans but cannot run fails its check by name (exit 1): an id outside the source, a row stride short
#     of the row or past the shim's stride field (of an operand of more than one row), a row not in whole
#     chunks of an asked tile; one row of y with a short stride and strided runs at tile 1024 (d0 halved to
#     512 words) pass;
#   - variants of the description (written to a temporary directory) fail the checks they break, by name:
#     a third source BD per slot (6 source tasks queued of 4), 3 steps in flight (the same), slots of
#     unequal source BDs, a BD id past 15, array.core_rows 1 (no core FIFOs to take), wrap_max 2047,
#     stride_max 2^21, a 48-value tile, a memory-tile budget of 4 KB; 4 steps in flight of one run each
#     (4 tasks, 8 BDs) passes;
#   - a failing plan is not emitted, and a passing one reaches the emission, which names mlir-aie when it
#     is missing;
#   - the IRON program run on stand-ins of IRON's classes (tests/aie/get_rows_iron_check.py, on
#     tests/aie/check_barrier.py's stand-ins): the FIFOs and their forward per column, the shim ends, no
#     workers, a fill per run and an awaited drain per step with taps replayed word by word, task groups in
#     flight.
# The description is read, never changed: variants are written to a temporary directory, removed on exit.
set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
root=$(cd "$root" && pwd)
py=${PYTHON:-python3}
export PYTHONDONTWRITEBYTECODE=1  # the in-process runs import design.py and check_barrier.py: no __pycache__ in the tree
here=$root/tests/aie
design=$root/aie/get_rows/design.py
df=$root/aie/get_rows/dataflow.json
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
print(" ".join(str(t) for t in sorted(d["xclbin_tiles"][fam])))' "$df")
got=$("$py" "$design" --list-tiles) || fail "--list-tiles"
[ "$got" = "$want" ] || fail "--list-tiles: '$got', the description has '$want'"
echo "get_rows tiles: $got"
got=$("$py" "$design" --list-contracts) || fail "--list-contracts"
[ "$got" = "get_rows_f32 -" ] || fail "--list-contracts: '$got', expected 'get_rows_f32 -' (no kernel file)"
# The run cap is the host's: compared with its stream builder's header once that states it.
py_run=$(sed -n 's/^HOST_ROWS_PER_RUN = \([0-9]*\).*/\1/p' "$design")
[ "$py_run" = 256 ] || fail "design.py's HOST_ROWS_PER_RUN is '$py_run', the host's rule is 256 rows per run"
hdr=$root/src/runtime/gather-sequence.h
if [ -f "$hdr" ]; then
    host_run=$(sed -n 's/.*constexpr[^=]*k[A-Za-z]*Run[A-Za-z]* *= *\([0-9]*\);.*/\1/p' "$hdr" | head -1)
    if [ -n "$host_run" ]; then
        [ "$host_run" = "$py_run" ] || fail "design.py's HOST_ROWS_PER_RUN '$py_run' is not gather-sequence.h's '$host_run'"
    else
        echo "note: ${hdr#"$root"/} states no k...Run... constant; the run cap (256) is not compared with it"
    fi
fi

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


def slots(n, runs):
    return lambda d: (d["shim"].__setitem__("steps_in_flight", n),
                      d["shim"].__setitem__("bd_slots", [{"src": [(runs + 1) * s + k for k in range(runs)],
                                                          "y": (runs + 1) * s + runs} for s in range(n)]))


def fifo(name):
    return lambda d: next(f for f in d["layouts"][0]["fifos"] if f["name"] == name)


variant("src3", lambda d: [s.__setitem__("src", s["src"] + [s["src"][-1] + 2]) for s in d["shim"]["bd_slots"]])
variant("inflight3", slots(3, 2))    # 6 source tasks queued of 4 (9 BDs of 16: fine)
variant("inflight4-one-run", slots(4, 1))  # 4 tasks of 4, 8 BDs: passes
variant("uneven", lambda d: d["shim"]["bd_slots"][1].__setitem__("src", [8]))
variant("bd16", lambda d: d["shim"]["bd_slots"][1].__setitem__("y", 16))
variant("core1", lambda d: d["array"].__setitem__("core_rows", 1))
variant("wrap2047", lambda d: d["limits"].__setitem__("wrap_max", 2047))
variant("stride2m", lambda d: d["limits"].__setitem__("stride_max", 1 << 21))
variant("tile48", lambda d: d["xclbin_tiles"]["gather"].append(48))
variant("memtile4k", lambda d: d["core_budget"].__setitem__("memtile_bytes", 4096))
# Refused when read:
variant("refused-core-fifo", lambda d: d["layouts"][0]["fifos"].append(
    {"name": "y_l1l2", "from": "core", "to": "memtile", "object": {"unit": "chunk", "count": 1}, "depth": 2}))
variant("refused-split", lambda d: fifo("y_l2l3")(d).__setitem__("link", "split"))
variant("refused-rows", lambda d: d.__setitem__("movement", "rows"))
variant("refused-count2", lambda d: fifo("src_l3l2")(d)["object"].__setitem__("count", 2))
PYEOF

# The plans and their recomputation.
"$py" "$here/get_rows_plan_verify.py" "$root" "$tmp/variants" || fail "a plan and its recomputation disagree"

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
refused 2 "no ids: the gather takes at least one" --ids ""
refused 2 "a comma-separated list of integers" --ids 1,x
refused 2 "no tile of \[32, 64, 128, 256, 512, 1024\] divides it (a row must be a whole number of chunks)" --row-len 48
refused 2 "no tile of .* divides it" --row-len 4100
refused 2 "positive number of values" --row-len 0
refused 2 "has no xclbin for tile 48" --tile 48 --row-len 96
refused 2 "has no xclbin for tile 2048" --tile 2048
refused 2 "--cols 0: npu2 has 1..8 columns" --cols 0
refused 2 "--cols 9: npu2 has 1..8 columns" --cols 9
refused 2 "--src-stride -1: a row stride is not negative" --src-stride -1
refused 2 "--src-rows 0: the source has at least one row" --src-rows 0
refused 2 "builds the \"gather\" movement" --dataflow "$tmp/variants/refused-rows.json"
refused 2 "builds the \"gather\" movement" --dataflow "$root/aie/add/dataflow.json"
refused 2 "y_l1l2 run to or from a core; a gather has no core program" --dataflow "$tmp/variants/refused-core-fifo.json"
refused 2 "y_l2l3 is linked by 'split'" --dataflow "$tmp/variants/refused-split.json"
refused 2 "objects of 2 chunk(s); this program forwards objects of one chunk" --dataflow "$tmp/variants/refused-count2.json"
refused 1 "\[FAIL\] ids inside the source's rows: 2 id(s) in \[5, 70\], the source has rows 0..63: \[70\] outside" --ids 5,70 --src-rows 64
refused 1 "\[FAIL\] ids inside the source's rows: 3 id(s) in \[-1, 1\]" --ids=-1,0,1 --src-rows 64
refused 1 "\[FAIL\] shape: the row in whole chunks of the tile: row of 96 values, tile 64" --tile 64 --row-len 96
refused 1 "\[FAIL\] src row stride covers the row: stride 4000, row 4096 words" --ids 1,2 --src-stride 4000
refused 1 "\[FAIL\] y row stride covers the row: stride 100, row 4096 words" --ids 1,2 --y-stride 100
refused 1 "\[FAIL\] y row stride within the shim's stride: stride 2000000 <= 1048576 words" --ids 1,2 --y-stride 2000000
refused 1 "\[FAIL\] src row stride covers the row: stride 100, row 1024 words" --ids 3 --row-len 1024 --src-rows 4 --src-stride 100
# What looks like a refusal and is not: one row of y has no row stride; tile 1024 goes as 2 x 512 words.
"$py" "$design" --ids 3 --row-len 1024 --y-stride 100 --print-plan >"$tmp/ok.txt" ||
    { fail "one id with a y stride short of the row fails a check (one row of y has no row stride)"; grep FAIL "$tmp/ok.txt"; }
"$py" "$design" --ids 0,1,5 --row-len 2048 --src-stride 3000 --cols 1 --print-plan >"$tmp/ok.txt" ||
    { fail "strided rows at tile 1024 fail a check"; grep FAIL "$tmp/ok.txt"; }
grep -q "\[ok\] shim BDs: d0 size (the tile, halved while past the wrap): 512 <= 1023 words (the tile 1024 as 2 x 512)" "$tmp/ok.txt" ||
    fail "the plan at tile 1024 does not halve d0 to 512 words"

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
named src3 --ids 5 -- "\[FAIL\] shim task queue per channel: src: 2 step(s) in flight x 3 run(s) per step = 6 of 4 queued"
named inflight3 --ids 7,6,5,4,3,2,1,0 --cols 1 -- \
    "\[FAIL\] shim task queue per channel: src: 3 step(s) in flight x 2 run(s) per step = 6 of 4 queued" \
    "\[ok\] shim BDs in flight: 3 step(s) x (2 src + 1 y) = 9 of 16"
named uneven --ids 5 -- "\[FAIL\] shim BD slots: one set per step in flight, the same number of src BDs in each"
named bd16 --ids 5 -- "\[FAIL\] shim BD ids distinct and in range: \[0, 1, 2, 8, 9, 16\] of 0..15"
named core1 --ids 5 -- "\[FAIL\] array: no cores and no core program: array.core_rows 1: a gather is DMAs only"
named wrap2047 --ids 5 -- "\[FAIL\] limits.wrap_max within the shim BD's d0 and d1 wraps: 2047 of 1..1023"
named stride2m --ids 5 -- "\[FAIL\] limits.stride_max within the shim BD's stride field"
named tile48 --ids 5 -- "\[FAIL\] family tiles: powers of two"
named memtile4k --ids 5 -- "\[FAIL\] memory tile: one buffer set: 8192 of 4096 bytes"
"$py" "$design" --dataflow "$tmp/variants/inflight4-one-run.json" --ids 7,6,5,4,3,2,1,0 --cols 1 --print-plan >"$tmp/v.txt" ||
    { fail "4 steps in flight of one run each (4 tasks, 8 BDs) fails a check"; grep FAIL "$tmp/v.txt"; }
grep -q "src tasks queued per channel (at most): 4" "$tmp/v.txt" ||
    fail "4 steps in flight of one run each: the plan does not queue 4 source tasks"

# A failing plan is not emitted; a passing one reaches the emission.
rc=0; "$py" "$design" --ids 1,2 --src-stride 4000 >"$tmp/emit.txt" 2>&1 || rc=$?
{ [ "$rc" = 1 ] && grep -q "design.py: check failed: src row stride covers the row" "$tmp/emit.txt"; } ||
    { fail "design.py went on to emit a plan with failed checks (exit $rc)"; cat "$tmp/emit.txt"; }
if ! "$py" -c "import aie.iron" 2>/dev/null; then
    rc=0; "$py" "$design" --ids 3,4,5,9 >"$tmp/emit.txt" 2>&1 || rc=$?
    { [ "$rc" = 2 ] && grep -q "emitting MLIR needs mlir-aie" "$tmp/emit.txt"; } ||
        { fail "without mlir-aie the emission did not say so (exit $rc)"; cat "$tmp/emit.txt"; }
fi

# The IRON program on stand-ins.
"$py" "$here/get_rows_iron_check.py" "$root" "$here/check_barrier.py" || fail "the IRON program"

echo "${df#"$root"/}, ids 3,4,5,9,9,2,1,0,7,8 of rows of 2048 on 3 columns:"
"$py" "$design" --ids 3,4,5,9,9,2,1,0,7,8 --row-len 2048 --cols 3 --print-plan >"$tmp/tree.txt" || true
grep '^  \[FAIL\]' "$tmp/tree.txt" || echo "  every check passes ($(grep -c '^  \[ok\]' "$tmp/tree.txt") checks)"

if [ "$failures" -ne 0 ]; then
    echo "check_design_get_rows: $failures failure(s)"
    exit 1
fi
echo "check_design_get_rows: all checks passed"
