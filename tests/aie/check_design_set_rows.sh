#!/usr/bin/env bash
# Checks the scatter design's IRON script (aie/set_rows/design.py, for aie/set_rows/dataflow.json) without
# mlir-aie, Peano or an NPU:
#   - design.py compiles and answers --help, --list-tiles (each family's kernel_stack keys: 128 .. 1024) and
#     --list-contracts (f32_to_f16 f32_to_f16.cc, f32_to_q8_0 f32_to_q8_0.cc: the family's one program and its
#     kernel file) with a bare Python; its cap on a run's rows is the host's stream builder's
#     (src/runtime/scatter-sequence.h kScatterRunRows, resolved through rows-sequence.h's kRowsPerStep);
#   - --print-plan for both families over random id lists (runs of consecutive ids, some past the 256-row
#     cap, descending ids, jumps), one row (a decode token's K row: 1 x 1024 at id 517, 1 x 512, 1 x 4096
#     over 4 columns), many rows (512 rows of 256), CPY-like identity ids 0..rows-1, 1..8 columns, every tile
#     (the host's pick and each asked for), strided x and y (a KV-cache view: y rows further apart than a
#     row): the tile, y chunk, grid, RTP words, runs, steps, every BD's id, offset, pattern and token, the
#     stream of the invocation (RTP words and barriers, pushes, syncs), the queue and BD counts, operands and
#     traffic agree with a recomputation written apart from design.py (tests/aie/set_rows_plan_verify.py),
#     which also replays each plan's stream (queues, BD reuse, tokens, syncs) and its BDs row by row and,
#     for the small shapes, byte by byte through a conversion that keeps value indices (every byte of every
#     id's row of y written once, with its own value, no other byte of y touched), holds a few shapes to
#     numbers computed by hand, and requires every check to fail exactly when the recomputation says it
#     must (exit 1 then, 0 otherwise);
#   - what the design cannot take is refused with the reason (exit 2): no ids, ids not integers, ids not one
#     per row, an id outside y, two rows with one id, a row no tile divides, a tile the family has no xclbin
#     for or that does not divide the row, 0 or 9 columns, a negative stride, no rows of y, an unknown
#     family, a description of another movement (get_rows', add's), of a layout not named after its family,
#     of another link, of two-chunk objects, of x not fp32; what it plans but cannot run fails its check by
#     name (exit 1): a row stride short of the row or past the shim's stride field (x's of more than one
#     row, y's of more than one row of y), a y stride of no whole words, a segment of more chunks than d1
#     wraps; one row of x with a short x stride, one row of y with a short y stride and a KV-cache view pass;
#   - variants of the description (written to a temporary directory) fail the checks they break, by name:
#     a third y BD per slot (6 y tasks queued of 4), 3 slots (the same, and 3 steps in flight where the
#     host's stream keeps 2), a BD id past 15, wrap_max 2047, stride_max 2^21, F16 halves of 3 bytes with
#     an odd tile 129 (387-byte chunks: no whole words; at the real tiles 3 bytes a value are words), an RTP
#     word limit of 100 (512 chunks on one core), the barrier without its release, two core rows, small
#     memory-tile and core budgets; one y BD per slot (a run a step) passes;
#   - a failing plan is not emitted, and a passing one reaches the emission, which names mlir-aie when it
#     is missing;
#   - the IRON program run on stand-ins of IRON's classes (tests/aie/set_rows_iron_check.py, on
#     tests/aie/check_barrier.py's stand-ins): FIFOs, split and join per column, the shim ends, one worker
#     per column calling the family's kernel with n = the tile, the RTP words and barrier, the fills and
#     drains replayed word by word, task groups in flight.
# The description is read, never changed: variants are written to a temporary directory, removed on exit.
set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
root=$(cd "$root" && pwd)
py=${PYTHON:-python3}
export PYTHONDONTWRITEBYTECODE=1  # the in-process runs import design.py and check_barrier.py: no __pycache__ in the tree
here=$root/tests/aie
design=$root/aie/set_rows/design.py
df=$root/aie/set_rows/dataflow.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$py" -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$design" ||
    fail "design.py does not compile"
"$py" "$design" --help >/dev/null || fail "design.py --help"
# Per family: its tiles (the kernel_stack's numeric keys) and its one program with its kernel file.
"$py" -c 'import json, sys
d = json.load(open(sys.argv[1]))
for f in d["families"]:
    if f != "about":
        k = d["core_budget"]["kernel_stack"][f]
        print(f, k["source"], d["families"][f][0], " ".join(str(t) for t in sorted(int(x) for x in k if x.isdigit())))' \
    "$df" >"$tmp/families.txt"
while read -r fam source contract tiles; do
    got=$("$py" "$design" --family "$fam" --list-tiles) || fail "--list-tiles --family $fam"
    [ "$got" = "$tiles" ] || fail "--list-tiles --family $fam: '$got', the description has '$tiles'"
    got=$("$py" "$design" --family "$fam" --list-contracts) || fail "--list-contracts --family $fam"
    [ "$got" = "$contract $source" ] || fail "--list-contracts --family $fam: '$got', expected '$contract $source'"
    echo "set_rows $fam tiles: $tiles; $got"
done <"$tmp/families.txt"
[ "$(wc -l <"$tmp/families.txt")" = 2 ] || fail "the description has not the two families f16 and q8_0"
# The run cap is the host's (kScatterRunRows, which the header gives as the rows design's kRowsPerStep).
py_run=$(sed -n 's/^HOST_ROWS_PER_RUN = \([0-9]*\).*/\1/p' "$design")
[ "$py_run" = 256 ] || fail "design.py's HOST_ROWS_PER_RUN is '$py_run', the host's rule is 256 rows per run"
hdr=$root/src/runtime/scatter-sequence.h
if [ -f "$hdr" ]; then
    host_run=$(sed -n 's/.*constexpr[^=]*kScatterRunRows *= *\([A-Za-z0-9_]*\);.*/\1/p' "$hdr" | head -1)
    case "$host_run" in
        '') echo "note: ${hdr#"$root"/} states no kScatterRunRows; the run cap (256) is not compared with it" ;;
        *[!0-9]*) host_run=$(sed -n "s/.*constexpr[^=]*$host_run *= *\([0-9]*\);.*/\1/p" "$root/src/runtime/rows-sequence.h" | head -1) ;;
    esac
    if [ -n "$host_run" ]; then
        [ "$host_run" = "$py_run" ] || fail "design.py's HOST_ROWS_PER_RUN '$py_run' is not scatter-sequence.h's '$host_run'"
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


def fifo(layout, name):
    return lambda d: next(f for l in d["layouts"] if l["name"] == layout for f in l["fifos"] if f["name"] == name)


def slots(spec):
    return lambda d: (d["shim"].__setitem__("steps_in_flight", len(spec)), d["shim"].__setitem__("bd_slots", spec))


variant("y3", lambda d: [s.__setitem__("y", s["y"] + [s["y"][-1] + 1]) for s in d["shim"]["bd_slots"]])
variant("slots3", slots([{"x": [0], "y": [1, 2]}, {"x": [8], "y": [9, 10]}, {"x": [4], "y": [5, 6]}]))
variant("y1", slots([{"x": [0], "y": [1]}, {"x": [8], "y": [9]}]))   # a run a step: passes
variant("bd16", lambda d: d["shim"]["bd_slots"][1].__setitem__("y", [9, 16]))
variant("wrap2047", lambda d: d["limits"].__setitem__("wrap_max", 2047))
variant("stride2m", lambda d: d["limits"].__setitem__("stride_max", 1 << 21))
# F16 halves of 3 bytes: at every real tile (a multiple of 4) still whole words; at an odd tile not.
variant("half3-odd", lambda d: (d["units"].__setitem__("half", 3),
                                d["core_budget"]["kernel_stack"]["f16"].__setitem__("129", 1024)))
variant("rtpmax100", lambda d: d["core_program"].__setitem__("rtp_word_max", 100))
variant("norelease", lambda d: d["core_program"]["barrier"]["release"].__setitem__("value", 0))
variant("core2", lambda d: d["array"].__setitem__("core_rows", 2))
variant("memtile4k", lambda d: d["core_budget"].__setitem__("memtile_bytes", 4096))
variant("core12k", lambda d: d["core_budget"].__setitem__("core_data_bytes", 12288))
# Refused when read:
variant("refused-gather", lambda d: d.__setitem__("movement", "gather"))
variant("refused-layout", lambda d: d["layouts"][1].__setitem__("name", "q8"))
variant("refused-broadcast", lambda d: fifo("f16", "x_l2l1")(d).__setitem__("link", "broadcast"))
variant("refused-count2", lambda d: fifo("f16", "x_l3l2")(d)["object"].__setitem__("count", 2))
variant("refused-xunit", lambda d: (fifo("f16", "x_l3l2")(d)["object"].__setitem__("unit", "half"),
                                    fifo("f16", "x_l2l1")(d)["object"].__setitem__("unit", "half")))
PYEOF

# The plans and their recomputation.
"$py" "$here/set_rows_plan_verify.py" "$root" "$tmp/variants" || fail "a plan and its recomputation disagree"

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
refused 2 "no ids: the scatter takes one id per row of x" --ids ""
refused 2 "a comma-separated list of integers" --ids 1,x
refused 2 "2 id(s) for 3 row(s) of x: one id per row" --ids 1,2 --rows 3
refused 2 "id 5 of row 0 is outside the 4 rows of y" --ids 5 --y-rows 4
refused 2 "id -1 of row 0 is outside the 64 rows of y" --ids=-1,0 --y-rows 64
refused 2 "id 3 names rows 0 and 2 of x: two columns' DMAs would write that row of y in no defined order" --ids 3,4,3
refused 2 "id 11 names rows 1 and 4 of x" --family q8_0 --ids 10,11,12,13,11 --row-len 4096
refused 2 "no tile of \[128, 256, 512, 1024\] divides it (a row must be a whole number of chunks)" --row-len 96
refused 2 "no tile of .* divides it" --family q8_0 --row-len 1000
refused 2 "positive number of values" --row-len 0
refused 2 "has no xclbin for tile 64" --tile 64 --row-len 128
refused 2 "has no xclbin for tile 2048" --tile 2048 --row-len 2048
refused 2 "a row of 1536 values is not a whole number of chunks of tile 1024" --tile 1024 --row-len 1536
refused 2 "--cols 0: npu2 has 1..8 columns" --cols 0
refused 2 "--cols 9: npu2 has 1..8 columns" --cols 9
refused 2 "--x-stride -1: a row stride is not negative" --ids 1,2 --x-stride -1
refused 2 "--y-stride -4: a row stride is not negative" --ids 1,2 --y-stride -4
refused 2 "--y-rows 0: y has at least one row" --ids 0 --y-rows 0
refused 2 "unknown family 'bf16'" --family bf16
refused 2 "builds the \"scatter\" movement" --dataflow "$tmp/variants/refused-gather.json"
refused 2 "builds the \"scatter\" movement" --dataflow "$root/aie/get_rows/dataflow.json"
refused 2 "builds the \"scatter\" movement" --dataflow "$root/aie/add/dataflow.json"
refused 2 "family q8_0 has no layout named after it" --dataflow "$tmp/variants/refused-layout.json"
refused 2 "x_l2l1 is linked by 'broadcast'" --dataflow "$tmp/variants/refused-broadcast.json"
refused 2 "objects of 2 units; this program moves one chunk per object" --dataflow "$tmp/variants/refused-count2.json"
refused 2 "this program reads fp32 rows" --dataflow "$tmp/variants/refused-xunit.json"
refused 1 "\[FAIL\] x row stride covers the row: stride 4000, row 4096 values" --ids 1,2 --row-len 4096 --x-stride 4000
refused 1 "\[FAIL\] x row stride within the shim's stride: stride 2000000 <= 1048576 words" --ids 1,2 --x-stride 2000000
refused 1 "\[FAIL\] y row stride covers the row: stride 100, row 2048 bytes" --ids 1,2 --y-stride 100
refused 1 "\[FAIL\] y row stride covers the row: stride 1000, row 1088 bytes" --family q8_0 --ids 1,2 --y-stride 1000
refused 1 "\[FAIL\] y row stride within the shim's stride: stride 2000000 <= 1048576 words" --ids 1,2 --y-stride 8000000
refused 1 "\[FAIL\] y row stride in whole 32-bit words: stride 2050 bytes" --ids 1,2 --y-stride 2050
refused 1 "\[FAIL\] shim BDs: d1 size (d0 runs of a segment): 1 BD(s), e.g. column 0 step 0 x BD 0: sizes \[1, 1, 1024, 512\]" \
    --ids 0 --row-len 524288 --cols 1
# What looks like a refusal and is not: one row of x or of y has no row stride; a KV-cache view (y rows
# 8192 bytes apart, rows of 2048) and a decode token's Q8_0 row pass; tile 1024 goes as 2 x 512 words.
passes() {  # passes <what> <design args...>
    local what=$1; shift
    "$py" "$design" "$@" --print-plan >"$tmp/ok.txt" || { fail "$what fails a check"; grep FAIL "$tmp/ok.txt"; }
}
passes "one row of x with an x stride short of the row" --ids 3 --x-stride 100
passes "one row of y with a y stride short of the row" --ids 0 --y-rows 1 --y-stride 100
passes "a KV-cache view (y stride 8192 of rows of 2048 bytes)" --ids 5,6,7,100 --y-rows 4096 --y-stride 8192
passes "a Q8_0 KV-cache view (y stride 4352 of rows of 1088 bytes)" --family q8_0 --ids 5,6,7,100,101 --y-rows 4096 --y-stride 4352
passes "a CPY (no ids: rows in order), the build's sample invocation" --rows 64 --row-len 4096 --tile 128
grep -q "invocation: 64 row(s) of 4096 values (32 chunk(s)), x stride 4096 values; ids \[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, \.\.\. (64 in all)\] of 64 rows of y" \
    "$tmp/ok.txt" && grep -q "columns used: 8" "$tmp/ok.txt" || fail "without --ids the rows do not go in order (a CPY) to every column"
passes "a decode token's Q8_0 K row" --family q8_0 --ids 517
grep -q "\[ok\] y chunk in whole 32-bit words: 1088 bytes (q8_0 at tile 1024) = 272 words" "$tmp/ok.txt" ||
    fail "the Q8_0 chunk at tile 1024 is not 1088 bytes = 272 words"
grep -q "\[ok\] shim BDs: d0 size (the chunk, halved while past the wrap): x 512, y 272 <= 1023 words (x's chunk 1024 as 2 x 512)" \
    "$tmp/ok.txt" || fail "the plan at tile 1024 does not halve x's d0 to 512 words"

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
named y3 --ids 5 -- "\[FAIL\] shim task queue per channel: y: 2 step(s) in flight x 3 run(s) per step = 6 of 4 queued" \
    "\[ok\] shim BDs in flight: 2 step(s) x (1 x + 3 y) = 8 of 16"
named slots3 --ids 7,6,5,4,3,2,1,0 --cols 1 -- \
    "\[FAIL\] shim task queue per channel: y: 3 step(s) in flight x 2 run(s) per step = 6 of 4 queued" \
    "\[FAIL\] shim steps in flight: the host's stream keeps 2: shim.steps_in_flight 3, 3 BD slot(s)"
named bd16 --ids 5 -- "\[FAIL\] shim BD ids distinct and in range: \[0, 1, 2, 8, 9, 16\] of 0..15"
named wrap2047 --ids 5 -- "\[FAIL\] limits.wrap_max within the shim BD's d0 and d1 wraps: 2047 of 1..1023"
named stride2m --ids 5 -- "\[FAIL\] limits.stride_max within the shim BD's stride field"
named half3-odd --ids 0,1 --row-len 258 -- "\[FAIL\] y chunk in whole 32-bit words: 387 bytes (half at tile 129)" \
    "\[FAIL\] family tiles: powers of two, 128 to 1024: f16: \[128, 129, 256, 512, 1024\]"
named half3-odd --ids 0 --row-len 1024 -- "\[ok\] y chunk in whole 32-bit words: 3072 bytes (half at tile 1024) = 768 words"
named rtpmax100 --rows 512 --row-len 256 --cols 1 -- "\[FAIL\] RTP words fit the core's int32 words: largest 512 <= 100"
named norelease --ids 5 -- "\[FAIL\] barrier: released after the RTP words are read: release_with_value(0)"
named core2 --ids 5 -- "\[FAIL\] array: one core per column, npu2's rows and columns: array.core_rows 2"
named memtile4k --ids 5 -- "\[FAIL\] memory tile: 12288 of 4096 bytes"
named core12k --ids 5 -- "\[FAIL\] core data memory: 13324 of 12288 bytes"
"$py" "$design" --dataflow "$tmp/variants/y1.json" --ids 7,6,5,4,3,2,1,0 --cols 1 --print-plan >"$tmp/v.txt" ||
    { fail "one y BD per slot (a run a step) fails a check"; grep FAIL "$tmp/v.txt"; }
grep -q "steps per column: \[8\]" "$tmp/v.txt" || fail "one y BD per slot: eight runs are not eight steps"

# A failing plan is not emitted; a passing one reaches the emission.
rc=0; "$py" "$design" --ids 1,2 --row-len 4096 --x-stride 4000 >"$tmp/emit.txt" 2>&1 || rc=$?
{ [ "$rc" = 1 ] && grep -q "design.py: check failed: x row stride covers the row" "$tmp/emit.txt"; } ||
    { fail "design.py went on to emit a plan with failed checks (exit $rc)"; cat "$tmp/emit.txt"; }
if ! "$py" -c "import aie.iron" 2>/dev/null; then
    rc=0; "$py" "$design" --ids 3,4,5,9 >"$tmp/emit.txt" 2>&1 || rc=$?
    { [ "$rc" = 2 ] && grep -q "emitting MLIR needs mlir-aie" "$tmp/emit.txt"; } ||
        { fail "without mlir-aie the emission did not say so (exit $rc)"; cat "$tmp/emit.txt"; }
fi

# The IRON program on stand-ins.
"$py" "$here/set_rows_iron_check.py" "$root" "$here/check_barrier.py" || fail "the IRON program"

for fam in f16 q8_0; do
    echo "${df#"$root"/}, $fam, ids 3,4,5,9,8,2,1,0,7,6 of rows of 2048 on 3 columns:"
    "$py" "$design" --family "$fam" --ids 3,4,5,9,8,2,1,0,7,6 --row-len 2048 --cols 3 --print-plan >"$tmp/tree.txt" || true
    grep '^  \[FAIL\]' "$tmp/tree.txt" || echo "  every check passes ($(grep -c '^  \[ok\]' "$tmp/tree.txt") checks)"
done

if [ "$failures" -ne 0 ]; then
    echo "check_design_set_rows: $failures failure(s)"
    exit 1
fi
echo "check_design_set_rows: all checks passed"
