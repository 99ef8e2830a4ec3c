#!/usr/bin/env bash
# Checks the quant design's IRON script (aie/act_quant/design.py, for aie/act_quant/dataflow.json) without
# mlir-aie, Peano or an NPU:
#   - design.py compiles and answers --help, --list-tiles (each family's one token tile, its kernel_stack
#     key) and --list-contracts (act_quant_<family> act_quant.cc) for every family with a bare Python;
#   - --print-plan for every family over n = 1, tile_n - 1, tile_n, tile_n + 1 and several token tiles, k of
#     1..60 K tiles and past the 64-tile iteration cap (130), 1, 3 and 8 columns, strided rows: the shape,
#     grid, segments, steps, every BD's id, chain, offset, pattern and repeat, each column's stream of
#     pushes and syncs, the queue and BD counts, RTP words, calls, operands and traffic agree with a
#     recomputation written apart from design.py (tests/aie/act_quant_plan_verify.py), which also replays
#     each plan's stream (queues, BD reuse with the chained zeros BD, syncs) and its BDs into the tile
#     objects (row by row, and word by word for the small shapes: valid rows of x, then zeros, in order),
#     holds a few shapes to numbers computed by hand, and requires every check to fail exactly when the
#     recomputation says it must (exit 1 then, 0 otherwise);
#   - what the design cannot take is refused with the reason (exit 2): no rows, no values, 0 or 9 columns,
#     a negative stride, an unknown family, a token tile the family has no xclbin for, a description of
#     another movement, of another link, of two-group objects, of two operands, of a family of two programs
#     or without objects; what it plans but cannot run fails its check by name (exit 1): k not a whole
#     number of K tiles, a row stride short of the row or past the shim's stride field (these cases, and
#     the variants' below, run in one Python, tests/aie/act_quant_cli_cases.py: a Python start per case
#     costs more than the case);
#   - variants of the description (written to a temporary directory) fail the checks they break, by name:
#     zeros_bytes too small for the family's padding or not whole words, a group that is not group_tokens
#     x tile_k x 4 bytes, tokens not in whole groups, a tile not in whole words, 3 steps in flight, a BD id
#     past 15, iteration_max 65, repeat_max 32 (a 64-tile segment repeats 63 times), wrap_max 255 (a K tile
#     of 256), stride_max 4096, small memory-tile and core budgets, a second token tile, the RTP words, the
#     barrier without its release, two core rows, a shim channel 2, a program no kernel file defines, a
#     kernel whose signature is not (const float *, uint8_t *, int32_t); iteration_max 8 passes, its
#     segments cut at 8 tiles;
#   - a failing plan is not emitted, and a passing one reaches the emission, which names mlir-aie when it
#     is missing;
#   - the IRON program run on stand-ins of IRON's classes (tests/aie/act_quant_iron_check.py, on
#     tests/aie/check_barrier.py's stand-ins): FIFOs, split and join per column, the shim ends, one worker
#     per column with its kernel, the traced core program (barrier, RTP words, per tile its groups' calls
#     with g = 0, 1, ...), the RTP words and barrier sets, the fills (x, then zeros) and drains replayed word
#     by word, task groups in flight.
# The description is read, never changed: variants are written to a temporary directory, removed on exit.
set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
root=$(cd "$root" && pwd)
py=${PYTHON:-python3}
export PYTHONDONTWRITEBYTECODE=1  # the in-process runs import design.py and check_barrier.py: no __pycache__ in the tree
here=$root/tests/aie
design=$root/aie/act_quant/design.py
df=$root/aie/act_quant/dataflow.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$py" -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$design" ||
    fail "design.py does not compile"
"$py" "$design" --help >/dev/null || fail "design.py --help"
# Every family: its token tile (the kernel_stack key, the objects' tokens) and its program in act_quant.cc.
"$py" -c 'import json, sys
d = json.load(open(sys.argv[1]))
for f in d["families"]:
    if f != "about":
        o = d["objects"][f]
        print(f, o["tokens"], d["families"][f][0])' "$df" >"$tmp/families.txt"
: >"$tmp/cases.txt"
while read -r fam tokens contract; do
    echo "0 | --family $fam --list-tiles | =$tokens" >>"$tmp/cases.txt"
    echo "0 | --family $fam --list-contracts | =$contract act_quant.cc" >>"$tmp/cases.txt"
    grep -q "void $contract(const float \* x, uint8_t \* tile, int32_t group)" "$root/aie/act_quant/kernels/act_quant.cc" ||
        fail "act_quant.cc has no $contract(const float * x, uint8_t * tile, int32_t group)"
done <"$tmp/families.txt"
"$py" "$here/act_quant_cli_cases.py" "$design" <"$tmp/cases.txt" >"$tmp/cases.out" || { fail "--list-tiles or --list-contracts"; cat "$tmp/cases.out"; }
echo "act_quant families: $(wc -l <"$tmp/families.txt"), each --list-tiles its token tile and --list-contracts act_quant_<family> act_quant.cc"

# Variants of the description, from the real one (so every other number stays its own).
mkdir -p "$tmp/variants"
"$py" - "$df" "$tmp/variants" "$root/aie/act_quant/kernels/act_quant.cc" <<'PYEOF'
import copy, json, os, sys

src, out, kernel = sys.argv[1:]
base = json.load(open(src))


def variant(name, edit, into=None):
    d = copy.deepcopy(base)
    edit(d)
    path = f"{out}/{name}.json" if into is None else f"{into}/dataflow.json"
    json.dump(d, open(path, "w"), indent=1)


def fifo(name):
    return lambda d: next(f for f in d["layouts"][0]["fifos"] if f["name"] == name)


def setk(*keys):
    def edit(value):
        def go(d):
            for k in keys[:-1]:
                d = d[k]
            d[keys[-1]] = value
        return go
    return edit


variant("zeros16k", setk("zeros_bytes")(16384))
variant("zeros-odd", setk("zeros_bytes")(32770))
variant("group2048", setk("objects", "a8_b32_n4", "group")(2048))
variant("groups3", lambda d: d["objects"]["f16_n4"].update(group_tokens=3, group=3 * 128 * 4))
variant("tile-odd", setk("objects", "f32_n4", "tile")(1026))
variant("inflight3", setk("shim", "steps_in_flight")(3))
variant("bd16", lambda d: d["shim"]["bd_slots"][1].__setitem__("tiles", 16))
variant("iter65", setk("limits", "iteration_max")(65))
variant("iter8", setk("limits", "iteration_max")(8))          # passes: segments of at most 8 tiles
variant("repeat32", setk("limits", "repeat_max")(32))
variant("wrap255", setk("limits", "wrap_max")(255))
variant("stride4096", setk("limits", "stride_max")(4096))
variant("memtile16k", setk("core_budget", "memtile_bytes")(16384))
variant("core16k", setk("core_budget", "core_data_bytes")(16384))
variant("stack-two-tiles", lambda d: d["core_budget"]["kernel_stack"]["a8_b32_n4"].__setitem__("32", 1024))
variant("rtp-dup", lambda d: d["core_program"]["rtp_words"].__setitem__("version", 1))
variant("no-release", lambda d: d["core_program"]["barrier"]["release"].__setitem__("value", 0))
variant("core-rows2", setk("array", "core_rows")(2))
variant("channel2", lambda d: fifo("x_l3l2")(d)["shim_channel"].__setitem__("channel", 2))
variant("no-kernel", setk("families", "f32_n4")(["act_quant_f32_n5"]))
# A kernel file whose program takes a float tile: the description beside a kernels/ of its own.
os.makedirs(f"{out}/signature/kernels")
text = open(kernel).read().replace("void act_quant_f32_n4(const float * x, uint8_t * tile,",
                                   "void act_quant_f32_n4(const float * x, float * tile,")
open(f"{out}/signature/kernels/act_quant.cc", "w").write(text)
variant("signature", lambda d: None, into=f"{out}/signature")
# Refused when read:
variant("refused-norm", setk("movement")("norm"))
variant("refused-forward", lambda d: fifo("x_l2l1")(d).__setitem__("link", "forward"))
variant("refused-count2", lambda d: fifo("x_l3l2")(d)["object"].__setitem__("count", 2))
variant("refused-two-operands", lambda d: d.__setitem__("operands", d["operands"][:2]))
variant("refused-two-contracts", setk("families", "f32_n4")(["act_quant_f32_n4", "act_quant_f32_n32"]))
variant("refused-no-objects", lambda d: d["objects"].pop("f32_n4"))
variant("refused-no-cores", setk("array", "core_rows")(0))
PYEOF

# The plans and their recomputation.
"$py" "$here/act_quant_plan_verify.py" "$root" "$tmp/variants" || fail "a plan and its recomputation disagree"

# Refusals with the reason (exit 2), checks failing by name (exit 1), the variants' failures by name (the
# recomputation above requires exactly these; here the names people read): one Python for every case.
v=$tmp/variants
"$py" "$here/act_quant_cli_cases.py" "$design" <<EOF || fail "a command-line case"
2 | --rows 0 | --rows 0: the design takes at least one token row
2 | --k 0 | --k 0: a row has a positive number of values (whole K tiles of 256)
2 | --cols 0 | --cols 0: npu2 has 1..8 columns
2 | --cols 9 | --cols 9: npu2 has 1..8 columns
2 | --row-stride -1 | --row-stride -1: a row stride is not negative
2 | --family q4_0 | unknown family 'q4_0'
2 | --family f32_n32 --tile 4 | family f32_n32 has no xclbin for token tile 4 (it has 32)
2 | --dataflow $v/refused-norm.json | builds the "quant" movement
2 | --dataflow $root/aie/rms_norm/dataflow.json | builds the "quant" movement
2 | --dataflow $v/refused-forward.json | x_l2l1 is linked by 'forward'
2 | --dataflow $v/refused-count2.json | objects of 2 group(s); this program moves objects of one group
2 | --dataflow $v/refused-two-operands.json | the quant movement has x, the tiles and the zeros
2 | --dataflow $v/refused-two-contracts.json | a quant family is one core program
2 | --dataflow $v/refused-no-objects.json --family f32_n4 | family f32_n4 has no objects
2 | --dataflow $v/refused-no-cores.json | array.core_rows 0: the quant movement has a core per column
1 | --k 300 --print-plan | [FAIL] shape: k in whole K tiles: k 300, K tile 256: 1 whole K tile(s) and 44 values | [FAIL] traffic: every value of x read once
1 | --rows 3 --k 512 --row-stride 500 --print-plan | [FAIL] x row stride covers the row: stride 500, row 512 values
1 | --rows 3 --k 512 --row-stride 2000000 --print-plan | [FAIL] x row stride within the shim's stride field: stride 2000000 <= 1048576 words
# What looks like a refusal and is not: one row has no row stride.
0 | --rows 1 --k 512 --row-stride 3 --print-plan | [ok] x row stride covers the row: one row: no row stride
0 | --rows 1 --k 512 --row-stride 2000000 --print-plan | [ok] x row stride within the shim's stride field: one row: no row stride
# The variants.
1 | --dataflow $v/zeros16k.json --family a8_b32_n32 --print-plan | [FAIL] zeros: the block holds the family's largest padding: zeros_bytes 16384, (32 - 1) rows x 256 x 4 = 31744 bytes
0 | --dataflow $v/zeros16k.json --family f32_n32 --print-plan | [ok] zeros: the block holds the family's largest padding: zeros_bytes 16384, (32 - 1) rows x 64 x 4 = 7936 bytes
1 | --dataflow $v/zeros-odd.json --print-plan | [FAIL] zeros: the block in whole 32-bit words: zeros_bytes 32770
1 | --dataflow $v/group2048.json --family a8_b32_n4 --print-plan | [FAIL] family objects: a group is group_tokens x tile_k fp32: a8_b32_n4: group 2048 bytes, 4 x 256 x 4 = 4096
1 | --dataflow $v/groups3.json --family f16_n4 --print-plan | [FAIL] family objects: a tile's tokens in whole groups: f16_n4: 4 tokens, groups of 3
1 | --dataflow $v/tile-odd.json --family f32_n4 --print-plan | [FAIL] family objects: the tile in whole 32-bit words: f32_n4: tile 1026 bytes
1 | --dataflow $v/inflight3.json --print-plan | [FAIL] shim BD slots: one set per step in flight, 2 x BDs (its BD, the zeros chained), 1 tiles BD: 2 set(s) for 3 step(s) | [FAIL] shim: steps in flight as the host streams them: shim.steps_in_flight 3 | [ok] shim task queue per channel: x: 3 step(s) in flight x 1 task (the chain) = 3 of 4 queued
1 | --dataflow $v/bd16.json --print-plan | [FAIL] shim BD ids distinct and in range: [0, 1, 2, 8, 9, 16] of 0..15
1 | --dataflow $v/iter65.json --print-plan | [FAIL] limits.iteration_max within the shim BD's iteration count: 65 of 1..64
1 | --dataflow $v/repeat32.json --family f32_n32 --rows 32 --k 8320 --cols 1 --print-plan | [FAIL] shim BDs: queue-push repeat (a step's K tiles - 1): 2 BD(s), e.g. column 0 step 0 x BD 0: sizes [64, 1, 32, 64]
1 | --dataflow $v/wrap255.json --family a8_b32_n32 --print-plan | [FAIL] shim BDs: d0 size (x: a K tile of a row): | : 256 > 255 words
0 | --dataflow $v/wrap255.json --family f32_n32 --print-plan | [ok] shim BDs: d0 size (x: a K tile of a row): 64 <= 255 words
1 | --dataflow $v/stride4096.json --rows 3 --k 8192 --print-plan | [FAIL] x row stride within the shim's stride field: stride 8192 <= 4096 words | [FAIL] shim BDs: strides
1 | --dataflow $v/memtile16k.json --family a8_b32_n32 --print-plan | [FAIL] memory tile: 28672 of 16384 bytes
1 | --dataflow $v/core16k.json --family bfp16_n32 --print-plan | [FAIL] core data memory: 35980 of 16384 bytes | [FAIL] RTP words inside core data memory
1 | --dataflow $v/stack-two-tiles.json --family a8_b32_n4 --print-plan | [FAIL] family: one token tile, its objects' tokens: a8_b32_n4: kernel_stack token tile(s) [4, 32]
1 | --dataflow $v/rtp-dup.json --print-plan | [FAIL] RTP words: contract, tiles and version, distinct, within the word count
1 | --dataflow $v/no-release.json --print-plan | [FAIL] barrier: released after the RTP words are read
1 | --dataflow $v/core-rows2.json --print-plan | [FAIL] array: one core per column, npu2's rows: array.core_rows 2
1 | --dataflow $v/channel2.json --print-plan | [FAIL] shim channel numbers in range: x MM2S 2 of 0..1
1 | --dataflow $v/no-kernel.json --family f32_n4 --print-plan | [FAIL] kernel act_quant_f32_n5: defined in the family's source
1 | --dataflow $v/signature/dataflow.json --family f32_n4 --print-plan | [FAIL] kernel act_quant_f32_n4 (act_quant.cc) takes what the core passes: act_quant_f32_n4(const float * x, float * tile, int32_t group)
# iteration_max 8 passes, a token tile's 32 K tiles cut into segments of 8.
0 | --dataflow $v/iter8.json --family f32_n32 --rows 70 --k 2048 --cols 1 --print-plan | tiles per step (at most): 8 | [[0, 0, 0, 8], [8, 0, 8, 8]
# A failing plan is not emitted.
1 | --k 300 | design.py: check failed: shape: k in whole K tiles
EOF

# A passing plan reaches the emission.
if ! "$py" -c "import aie.iron" 2>/dev/null; then
    rc=0; "$py" "$design" --rows 33 >"$tmp/emit.txt" 2>&1 || rc=$?
    { [ "$rc" = 2 ] && grep -q "emitting MLIR needs mlir-aie" "$tmp/emit.txt"; } ||
        { fail "without mlir-aie the emission did not say so (exit $rc)"; cat "$tmp/emit.txt"; }
fi

# The IRON program on stand-ins.
"$py" "$here/act_quant_iron_check.py" "$root" "$here/check_barrier.py" || fail "the IRON program"

echo "${df#"$root"/}, a8_b32_n32, 33 rows x 4096 on 3 columns:"
"$py" "$design" --family a8_b32_n32 --rows 33 --k 4096 --cols 3 --print-plan >"$tmp/tree.txt" || true
grep '^  \[FAIL\]' "$tmp/tree.txt" || echo "  every check passes ($(grep -c '^  \[ok\]' "$tmp/tree.txt") checks)"

if [ "$failures" -ne 0 ]; then
    echo "check_design_act_quant: $failures failure(s)"
    exit 1
fi
echo "check_design_act_quant: all checks passed"
