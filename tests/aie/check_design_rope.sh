#!/usr/bin/env bash
# Checks the rope design's IRON script (aie/rope/design.py, for aie/rope/dataflow.json) without mlir-aie,
# Peano or an NPU:
#   - design.py compiles and answers --help, --list-tiles (per family, the numeric keys of its
#     kernel_stack) and --list-contracts (rope_norm_f32 and rope_neox_f32, each in rope.cc) with a bare
#     Python; its copies of the host's rules are the host's: tokens per step (kRowsPerStep,
#     src/runtime/rows-sequence.h) and two steps in flight (src/runtime/rope-sequence.cpp syncs on step
#     k - 1 after queueing step k);
#   - --print-plan over random shapes (both families, every tile, partial rotations such as 32 of 80,
#     strided views: gaps between heads and tokens, a fused QKV row's K, heads outermost; decode's one
#     token to prefill's 512; 1..8 columns): the grid, RTP words, steps, every BD's id, offset and
#     pattern, the stream of RTP writes, pushes and syncs, the budgets, operands and traffic agree with a
#     recomputation written apart from design.py (tests/aie/rope_plan_verify.py), which also replays each
#     plan's stream (queues, BD reuse, syncs) and, for the small shapes, its BDs element by element through
#     the core program, holds a few shapes to numbers computed by hand (the host's own test's among them),
#     and requires every check to fail exactly when the recomputation says it must (exit 1 then, 0
#     otherwise);
#   - what the design cannot take is refused with the reason (exit 2): a row length without an xclbin,
#     rotated dims rope_row_fits refuses, no tokens or no heads, 0 or 9 columns, a description of another
#     movement, of other links or objects; what it plans but the host would refuse fails its check by
#     name (exit 1): a head stride short of the row or past the shim's stride field, a token stride of 0
#     or past it, more heads on a column than a BD's d1 wrap;
#   - variants of the description (written to a temporary directory) fail the checks they break, by name:
#     three BD slots for two steps in flight, three steps in flight (the host keeps two), one slot (its
#     BDs rewritten while the step before runs), a BD id past 15, wrap_max 2047, stride_max 2^21, a
#     kernel_stack tile of 1024 (past rope_row_fits' 512), cs not in host_written, two core rows;
#   - a failing plan is not emitted, and a passing one reaches the emission, which names mlir-aie when it
#     is missing;
#   - the IRON program run on stand-ins of IRON's classes (tests/aie/rope_iron_check.py, on
#     tests/aie/check_barrier.py's stand-ins): per column the x, cs and y FIFOs and their split / join of
#     one part, one worker per column taking cs once per token and x and y per head, its RTP words and
#     barrier, fills and drains with taps replayed word by word, task groups in flight.
# The description is read, never changed: variants are written to a temporary directory, removed on exit.
set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
root=$(cd "$root" && pwd)
py=${PYTHON:-python3}
export PYTHONDONTWRITEBYTECODE=1  # the in-process runs import design.py and check_barrier.py: no __pycache__ in the tree
here=$root/tests/aie
design=$root/aie/rope/design.py
df=$root/aie/rope/dataflow.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$py" -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$design" ||
    fail "design.py does not compile"
"$py" "$design" --help >"$tmp/help.txt" || fail "design.py --help"
for want in "--ne0" "--n-dims" "--tokens" "--heads" "--x-head-stride" "--y-token-stride" "--list-tiles"; do
    grep -qF -- "$want" "$tmp/help.txt" || fail "design.py --help does not mention '$want'"
done
for fam in norm neox; do
    want=$("$py" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(str(t) for t in sorted(int(k) for k in d["core_budget"]["kernel_stack"][sys.argv[2]] if k.isdigit())))' "$df" "$fam")
    got=$("$py" "$design" --family "$fam" --list-tiles) || fail "--list-tiles --family $fam"
    [ "$got" = "$want" ] || fail "--list-tiles of $fam: '$got', the description has '$want'"
    echo "rope $fam tiles: $got"
    got=$("$py" "$design" --family "$fam" --list-contracts) || fail "--list-contracts --family $fam"
    [ "$got" = "rope_${fam}_f32 rope.cc" ] || fail "--list-contracts of $fam: '$got', expected 'rope_${fam}_f32 rope.cc'"
done
# The host's rules design.py copies: tokens per step, and the step before synced after each step.
host_step=$(sed -n 's/.*kRowsPerStep = \([0-9]*\);.*/\1/p' "$root/src/runtime/rows-sequence.h")
py_step=$(sed -n 's/^HOST_TOKENS_PER_STEP = \([0-9]*\).*/\1/p' "$design")
{ [ -n "$host_step" ] && [ "$host_step" = "$py_step" ]; } ||
    fail "design.py's HOST_TOKENS_PER_STEP '$py_step' is not rows-sequence.h's kRowsPerStep '$host_step'"
py_flight=$(sed -n 's/^HOST_STEPS_IN_FLIGHT = \([0-9]*\).*/\1/p' "$design")
{ [ "$py_flight" = 2 ] && grep -q 'sync_step(step - 1);' "$root/src/runtime/rope-sequence.cpp"; } ||
    fail "design.py's HOST_STEPS_IN_FLIGHT '$py_flight': src/runtime/rope-sequence.cpp no longer syncs on the step before" \
         "(sync_step(step - 1)) after each step, the two steps in flight design.py plans"

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


def fifo(name):
    return lambda d: next(f for f in d["layouts"][0]["fifos"] if f["name"] == name)


third = {"x": [4], "cs": [5], "y": 6}
variant("slots3", lambda d: d["shim"]["bd_slots"].append(third))
variant("slots3-inflight3", lambda d: (d["shim"]["bd_slots"].append(third), d["shim"].__setitem__("steps_in_flight", 3)))
variant("slot1", lambda d: (d["shim"]["bd_slots"].pop(), d["shim"].__setitem__("steps_in_flight", 1)))
variant("bd16", lambda d: d["shim"]["bd_slots"][1].__setitem__("y", 16))
variant("wrap2047", lambda d: d["limits"].__setitem__("wrap_max", 2047))
variant("stride2m", lambda d: d["limits"].__setitem__("stride_max", 1 << 21))
variant("tile1024", lambda d: d["core_budget"]["kernel_stack"]["norm"].__setitem__("1024", 1024))
variant("cs-not-host-written", lambda d: d["host_written"].pop("cs"))
variant("core2", lambda d: d["array"].__setitem__("core_rows", 2))
# Refused when read:
variant("refused-rows", lambda d: d.__setitem__("movement", "rows"))
variant("refused-forward", lambda d: fifo("x_l2l1")(d).__setitem__("link", "forward"))
variant("refused-count2", lambda d: fifo("cs_l3l2")(d)["object"].__setitem__("count", 2))
variant("refused-no-cs", lambda d: d.__setitem__("operands", [o for o in d["operands"] if o["name"] != "cs"]))
PYEOF

# The plans and their recomputation.
"$py" "$here/rope_plan_verify.py" "$root" "$tmp/variants" || fail "a plan and its recomputation disagree"

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
refused 2 "family norm has no xclbin for head rows of 48 values (it has 32, 64, 80, 96, 128, 192, 256, 512)" --ne0 48
refused 2 "family neox has no xclbin for head rows of 1024 values" --family neox --ne0 1024
refused 2 "20 rotated dims of 128: the program rotates a multiple of 32" --n-dims 20
refused 2 "96 rotated dims of 80" --ne0 80 --n-dims 96
refused 2 "0 rotated dims of 64" --ne0 64 --n-dims 0
refused 2 "0 token(s) x 32 head(s): the design takes at least one of each" --tokens 0
refused 2 "1 token(s) x 0 head(s)" --heads 0
refused 2 "--cols 0: npu2 has 1..8 columns" --cols 0
refused 2 "--cols 9: npu2 has 1..8 columns" --cols 9
refused 2 "unknown family 'vision'" --family vision
refused 2 "builds the \"rope\" movement" --dataflow "$root/aie/add/dataflow.json"
refused 2 "builds the \"rope\" movement" --dataflow "$tmp/variants/refused-rows.json"
refused 2 "x_l2l1 is linked by 'forward'" --dataflow "$tmp/variants/refused-forward.json"
refused 2 "cs_l3l2: objects of 2 chunk(s)" --dataflow "$tmp/variants/refused-count2.json"
refused 2 "this program takes x, cs and y" --dataflow "$tmp/variants/refused-no-cs.json"
refused 1 "\[FAIL\] x head stride: at least the head row, within the shim's stride: 100 floats between heads, rows of 128" \
    --heads 4 --x-head-stride 100
refused 1 "\[FAIL\] y head stride: at least the head row, within the shim's stride: 2000000 floats" \
    --heads 4 --y-head-stride 2000000
refused 1 "\[FAIL\] y token stride: within the shim's stride: 0 floats between tokens" --tokens 2 --heads 4 --y-token-stride 0
refused 1 "\[FAIL\] x token stride: within the shim's stride: 5000000 floats between tokens" --tokens 30 --x-token-stride 5000000
# y's head rows overlapping (token t's last head over token t + 1's first): the columns would write them in
# no defined order. The same strides for x are no refusal: x is only read.
refused 1 "\[FAIL\] y head rows: disjoint, token-major or head-major: 128 floats between heads, 384 between tokens, rows of 128" \
    --tokens 3 --heads 4 --y-token-stride 384
refused 1 "\[FAIL\] columns: a segment's heads within the d1 wrap, a core's calls within an int32 word: column 0: 1 token(s) x 2000 head(s)" \
    --heads 2000 --ne0 64 --cols 1
# What looks like a refusal and is not: one head has no head stride, one token no token stride; 2000 heads
# over 2 columns are 1000 each; 32 of 80 dims rotated; rows of 80 without --n-dims (64 rotated, the most they take);
# x rows overlapping (only read); y rows head-major (a head's tokens, then the next head's).
for args in "--heads 1 --x-head-stride 3 --y-head-stride 0" "--tokens 1 --x-token-stride 0" \
            "--heads 2000 --ne0 64 --cols 2" "--ne0 80 --n-dims 32 --tokens 9 --heads 3 --x-head-stride 96 --x-token-stride 400" \
            "--ne0 80 --family neox --tokens 64 --heads 8" "--tokens 3 --heads 4 --x-token-stride 384" \
            "--tokens 3 --heads 2 --ne0 64 --y-head-stride 192 --y-token-stride 64"; do
    # shellcheck disable=SC2086
    "$py" "$design" $args --print-plan >"$tmp/ok.txt" || { fail "design.py $args fails a check"; grep FAIL "$tmp/ok.txt"; }
done

# The variants fail by name (the recomputation above requires exactly these; here the names people read).
named() {  # named <variant> <design args> -- <patterns...>
    local v=$1 args=() rc=0; shift
    while [ "$1" != "--" ]; do args+=("$1"); shift; done; shift
    "$py" "$design" --dataflow "$tmp/variants/$v.json" ${args[@]+"${args[@]}"} --print-plan >"$tmp/v.txt" 2>&1 || rc=$?
    [ "$rc" = 1 ] || fail "variant $v ${args[*]-}: design.py exited $rc, expected 1 (a failed check)"
    for want in "$@"; do
        grep -q -- "$want" "$tmp/v.txt" || fail "variant $v ${args[*]-}: no '$want'"
    done
}
named slots3 -- "\[FAIL\] shim BD slots: one set per step in flight, an id for x, cs and y in each: 3 set(s) for 2 step(s)"
named slots3-inflight3 -- "\[FAIL\] shim: steps in flight as the host's stream keeps them: 3" \
    "\[ok\] shim BD slots: one set per step in flight"
named slot1 --tokens 600 --heads 2 --ne0 64 --cols 1 -- \
    "\[FAIL\] shim BDs: reused only after the sync that frees them: column 0: BD 0 pushed for step 1 while step 0 holds it" \
    "\[FAIL\] shim: steps in flight as the host's stream keeps them: 1"
named bd16 -- "\[FAIL\] shim BD ids distinct and in range: \[0, 1, 2, 8, 9, 16\] of 0..15"
named wrap2047 -- "\[FAIL\] limits.wrap_max within the shim BD's d0 and d1 wraps: 2047 of 1..1023"
named stride2m -- "\[FAIL\] limits.stride_max within the shim BD's stride field: 2097152"
named tile1024 -- "\[FAIL\] family norm tiles: head rows the kernels take: \[32, 64, 80, 96, 128, 192, 256, 512, 1024\]: \[1024\]"
named cs-not-host-written -- "\[FAIL\] host_written: the angle rows cs, and only they: host_written \[\]"
named core2 -- "\[FAIL\] array: one core per column above the memory tile: array.core_rows 2"
"$py" "$design" --ne0 80 --print-plan --format json |
    "$py" -c 'import json, sys; p = json.load(sys.stdin); sys.exit(p["n_dims"] != 64 or p["rtp"]["per used column"][0]["n_dims"] != 64)' ||
    fail "rows of 80 without --n-dims do not rotate 64 dims (the most rope_row_fits takes)"
# The neox family of the tile1024 variant keeps its tiles: nothing fails.
"$py" "$design" --dataflow "$tmp/variants/tile1024.json" --family neox --print-plan >"$tmp/v.txt" ||
    { fail "variant tile1024 --family neox fails a check"; grep FAIL "$tmp/v.txt"; }

# A failing plan is not emitted; a passing one reaches the emission.
rc=0; "$py" "$design" --heads 4 --x-head-stride 100 >"$tmp/emit.txt" 2>&1 || rc=$?
{ [ "$rc" = 1 ] && grep -q "design.py: check failed: x head stride" "$tmp/emit.txt"; } ||
    { fail "design.py went on to emit a plan with failed checks (exit $rc)"; cat "$tmp/emit.txt"; }
if ! "$py" -c "import aie.iron" 2>/dev/null; then
    rc=0; "$py" "$design" --tokens 64 --heads 8 >"$tmp/emit.txt" 2>&1 || rc=$?
    { [ "$rc" = 2 ] && grep -q "emitting MLIR needs mlir-aie" "$tmp/emit.txt"; } ||
        { fail "without mlir-aie the emission did not say so (exit $rc)"; cat "$tmp/emit.txt"; }
fi

# The IRON program on stand-ins.
"$py" "$here/rope_iron_check.py" "$root" "$here/check_barrier.py" || fail "the IRON program"

for args in "--family norm" "--family neox --tokens 512 --heads 8 --ne0 64"; do
    echo "${df#"$root"/} $args:"
    # shellcheck disable=SC2086
    "$py" "$design" $args --print-plan >"$tmp/tree.txt" || true
    grep '^  \[FAIL\]' "$tmp/tree.txt" || echo "  every check passes ($(grep -c '^  \[ok\]' "$tmp/tree.txt") checks)"
done

if [ "$failures" -ne 0 ]; then
    echo "check_design_rope: $failures failure(s)"
    exit 1
fi
echo "check_design_rope: all checks passed"
