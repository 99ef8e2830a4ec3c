#!/usr/bin/env bash
# Checks the attention design's IRON script (aie/flash_attn/design.py, for aie/flash_attn/dataflow.json) without
# mlir-aie, Peano or an NPU:
#   - design.py compiles and answers --help, --list-tiles (per family, the numeric keys of its kernel_stack) and
#     --list-contracts (the family's two block programs, in flash_attn.cc) with a bare Python; its copy of the
#     engine's split is the engine's: the constants of flash_attn_split (4 cores per column, 32 in all) and the
#     kernel's entry points are still those the simulator declares (src/ops/flash_attn/sim/flash-attn-kernels.h);
#   - the layout a shape takes: decode (kv_decode objects, one mask row a block step) for every one-token
#     shape, attention for more tokens or when forced (--layout); --layout decode for a task of 2 tokens and an
#     unknown layout refused;
#   - --print-plan over a few hundred shapes (decode and prefill, GQA ratios 1..8, every head dim, n_kv from 1
#     to 40000, both caches and programs, with and without a mask, the columns the tasks fill or 1..8 given;
#     the one-token shapes on the decode layout and again on the attention layout):
#     the split, placement, columns, rounds, steps, RTP words, objects, memories, the shim's chains per phase
#     and the DRAM traffic they move agree with a recomputation written apart from design.py
#     (tests/aie/flash_attn_plan_verify.py), which also replays each core's program (the one IRON traces)
#     against the engine's kernel calls, in order with their rows, n and scale, on the buffers the lockstep
#     hands over, the mask rows widened in place to the tokens the query rows need (the decode layout: the
#     step's one row copied into the core's mask buffer), and holds a few plans to numbers worked out by hand;
#   - the block steps under a causal profile (--causal N0), in the same sweep: prefill and decode, several N0,
#     split tasks, two sequences, fewer columns; the step table (per round each core's own block steps, each
#     column's the most of its cores'), the q step's step words and their BDs, the block groups' chains
#     (columns of fewer steps repeating theirs fewer times, a core's BDs rereading its part past its own
#     steps), every task's parts computing exactly its needed blocks; a hand-worked pp64 plan; and per shape
#     no more block steps in lockstep, bytes read or K bytes than without the profile;
#   - the task order (placement v2): chunk-major (a round holds a few chunks of every KV head and sequence)
#     when the rounds are several and a round's tasks are a multiple of n_seq x n_head_kv, else chunk fastest;
#     in the sweep both orders over several rounds, with and without a profile, one sequence and several, each
#     core's first_chunk and chunk_step counting its tasks' chunks; a hand-worked plan in chunk-major order
#     (pp64 on 2 columns: each core's tasks in rounds 0 and 1, its words, the lockstep); the text plan naming
#     the order; and broken on purpose, on a copy of design.py: its tasks put back in chunk-fastest order fail
#     the recomputation, its chunk-major tasks with chunk-fastest words fail its own check;
#   - what the design cannot take is refused with the reason (exit 2): a head dim without an xclbin, a Q8_0
#     cache at head dim 32, a ratio that is not whole, no KV rows, 9 columns, a mask per head, a description
#     of another movement, a causal profile without a mask, over more positions than the KV rows or negative;
#   - variants of the description (written to a temporary directory) fail the check their name says, or are
#     refused: a kv object of the wrong size, kv_l2l1 three deep (past the core's memory), slopes not
#     host-written, a tile the kernels do not take, no barrier release, a phase of 17 BD ids or of an id
#     twice, 16 lanes, V before K in a block object, the query rows before the slopes in a q step, a q step
#     without its step words, the RTP words of layout 2 (part_blocks and steps as words) or 1 (no mask_ratio)
#     or only their version, a kv_decode object too small for its states or not whole words, a
#     layout's task_tokens not its objects' mask rows (decode 0, attention 17), each on a decode and a prefill
#     shape; a phase of 8 BD ids (shorter than a decode block step's chain), the BD slots split into kv and
#     out ids and a decode layout whose kv FIFOs carry different objects are refused;
#   - a failing plan is not emitted, and a passing one reaches the emission, which names mlir-aie when it is
#     missing;
#   - the IRON program run on stand-ins of IRON's classes (tests/aie/flash_attn_iron_check.py), on both layouts.
# The description is read, never changed: variants are written to a temporary directory, removed on exit.
set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
root=$(cd "$root" && pwd)
py=${PYTHON:-python3}
export PYTHONDONTWRITEBYTECODE=1
here=$root/tests/aie
design=$root/aie/flash_attn/design.py
df=$root/aie/flash_attn/dataflow.json
engine=$root/src/ops/flash_attn/sim/sim-flash-attn.cpp
sequence=$root/src/ops/flash_attn/runtime/flash-attn-sequence.cpp
entry_points=$root/src/ops/flash_attn/sim/flash-attn-kernels.h
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$py" -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$design" || fail "design.py does not compile"
"$py" "$design" --help >"$tmp/help.txt" || fail "design.py --help"
for want in "--family" "--tile" "--n-head-kv" "--tokens" "--n-kv" "--layout" "--list-tiles" "--list-contracts" "--print-plan"; do
    grep -qF -- "$want" "$tmp/help.txt" || fail "design.py --help does not mention '$want'"
done
for fam in f16 q8_0; do
    want=$("$py" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(str(t) for t in sorted(int(k) for k in d["core_budget"]["kernel_stack"][sys.argv[2]] if k.isdigit())))' "$df" "$fam")
    got=$("$py" "$design" --family "$fam" --list-tiles) || fail "--list-tiles --family $fam"
    [ "$got" = "$want" ] || fail "--list-tiles of $fam: '$got', the description has '$want'"
    got=$("$py" "$design" --family "$fam" --list-contracts | tr '\n' ' ') || fail "--list-contracts --family $fam"
    [ "$got" = "fa_block_${fam}_bfp16 flash_attn.cc fa_block_${fam} flash_attn.cc " ] ||
        fail "--list-contracts of $fam: '$got'"
    echo "flash_attn $fam tiles: $(echo $want)"
done
# The engine's split, whose constants design.py and the verifier restate.
grep -q 'constexpr int kColumns = 8, kCores = 32, kCoresPerColumn = 4;' "$engine" ||
    fail "sim-flash-attn.cpp's array constants changed: design.py and flash_attn_plan_verify.py restate 8 x 4 cores"
grep -q 's.parts = attention_parts(s.groups, s.blocks, cores);' "$engine" &&
    grep -q 'if (tasks < 1 || tasks >= cores) return 1;' "$sequence" &&
    grep -q 'while ((root + 1) \* (root + 1) <= 2 \* blocks) ++root;' "$sequence" &&
    grep -q 'return std::max<int64_t>(1, std::min({cores / tasks, blocks, std::max<int64_t>(4, root)}));' "$sequence" ||
    fail "flash_attn_split's parts changed: design.py and flash_attn_plan_verify.py restate it"
for sym in fa_init_f32 fa_prepare_q_bfp16 fa_block_f16 fa_block_f16_bfp16 fa_block_q8_0 fa_block_q8_0_bfp16 fa_merge_f32 fa_finish_f32; do
    grep -q "^void $sym(" "$entry_points" || fail "the simulator no longer declares $sym"
done

# Variants of the description, from the real one.
mkdir -p "$tmp/variants"
"$py" - "$df" "$tmp/variants" <<'PYEOF'
import copy, json, sys

src, out = sys.argv[1:]
base = json.load(open(src))


def variant(name, edit):
    d = copy.deepcopy(base)
    edit(d)
    json.dump(d, open(f"{out}/{name}.json", "w"), indent=1)


class fifo:
    """The named FIFO of every layout: an edit applies to each."""

    def __init__(self, name):
        self.name = name

    def __call__(self, d):
        self.fs = [f for lay in d["layouts"] for f in lay["fifos"] if f["name"] == self.name]
        return self

    def __setitem__(self, key, value):
        for f in self.fs:
            f[key] = value


variant("kv-size", lambda d: d["attention"]["objects"]["f16"]["128"].__setitem__("kv", 17400))
variant("depth3", lambda d: fifo("kv_l2l1")(d).__setitem__("depth", 3))
variant("no-slopes", lambda d: d["host_written"].pop("slopes"))
variant("tile256", lambda d: d["core_budget"]["kernel_stack"]["f16"].__setitem__("256", 2688))
variant("no-release", lambda d: d["core_program"]["barrier"]["release"].__setitem__("value", 0))
variant("phase17", lambda d: d["shim"]["bd_slots"][0].__setitem__("phase", list(range(17))))
variant("phase-twice", lambda d: d["shim"]["bd_slots"][0].__setitem__("phase", [0] + list(range(15))))
variant("refused-phase8", lambda d: d["shim"]["bd_slots"][0].__setitem__("phase", list(range(8))))
variant("refused-kv-out-slots", lambda d: d["shim"].__setitem__("bd_slots", [{"kv": list(range(12)),
                                                                             "out": [12, 13, 14, 15]}]))
variant("lanes16", lambda d: d["attention"].__setitem__("lanes", 16))
variant("kv-order", lambda d: d["attention"]["kv_object"].__setitem__("block", ["v", "k", "mask"]))
variant("q-order", lambda d: d["attention"]["kv_object"].__setitem__("q_step", ["q", "slopes"]))


def rtp_layout(d, names, version):
    d["core_program"].update(rtp_words={n: i for i, n in enumerate(names)}, rtp_word_count=len(names),
                             rtp_layout_version=version)


def layout_v2_names(d):
    """The RTP words of layout 2: the block steps as words, part_blocks and steps after block0."""
    words = d["core_program"]["rtp_words"]
    names = sorted(words, key=words.get)
    at = names.index("block0") + 1
    return names[:at] + ["part_blocks", "steps"] + names[at:]


variant("rtp-v2", lambda d: rtp_layout(d, layout_v2_names(d), 2))
variant("rtp-v1", lambda d: rtp_layout(d, [n for n in layout_v2_names(d) if n != "mask_ratio"], 1))
variant("rtp-version2", lambda d: d["core_program"].__setitem__("rtp_layout_version", 2))
variant("q-no-steps", lambda d: d["attention"]["kv_object"].__setitem__("q_step", ["slopes", "q"]))
variant("refused-rope", lambda d: d.__setitem__("movement", "rope"))
variant("refused-broadcast", lambda d: fifo("kv_l2l1")(d).__setitem__("link", "broadcast"))
layout = lambda name: lambda d: next(x for x in d["layouts"] if x["name"] == name)
variant("kv-decode-size", lambda d: d["attention"]["objects"]["f16"]["128"].__setitem__("kv_decode", 16448))
variant("kv-decode-odd", lambda d: d["attention"]["objects"]["q8_0"]["64"].__setitem__("kv_decode", 4418))
variant("decode-tokens0", lambda d: layout("decode")(d).__setitem__("task_tokens", 0))
variant("attention-tokens17", lambda d: layout("attention")(d).__setitem__("task_tokens", 17))


def decode_mixed_units(d):
    next(f for f in layout("decode")(d)["fifos"] if f["name"] == "kv_l3l2")["object"]["unit"] = "kv"


variant("refused-decode-mixed-units", decode_mixed_units)
PYEOF

# The plans and their recomputation, the core programs replayed against the engine.
"$py" "$here/flash_attn_plan_verify.py" "$root" "$tmp/variants" || fail "a plan and its recomputation disagree"

# Refusals, with the reason.
refused() {  # refused <pattern> <design args...>
    local pattern=$1 rc=0; shift
    "$py" "$design" "$@" --print-plan >"$tmp/bad.txt" 2>&1 || rc=$?
    if [ "$rc" != 2 ]; then
        fail "design.py $* exited $rc, expected 2"; cat "$tmp/bad.txt"
    elif ! grep -q -- "$pattern" "$tmp/bad.txt"; then
        fail "design.py $* refused without '$pattern'"; cat "$tmp/bad.txt"
    fi
}
refused "no xclbin for head dim 96" --tile 96
refused "no xclbin for head dim 32" --family q8_0 --tile 32
refused "not a shape the design takes" --n-head 32 --n-head-kv 6
refused "not a shape the design takes" --n-kv 0
refused "npu2 has 1..8 columns" --cols 9
refused "a mask per head is not this design's" --mask-heads 8
refused "this program builds the \"attention\" movement" --dataflow "$tmp/variants/refused-rope.json"
refused "its tasks hold 1 token(s), this shape's largest task has 2" --layout decode --tokens 2 --n-head 8 --n-head-kv 8
refused "its tasks hold 1 token(s), this shape's largest task has 4" --layout decode --tokens 4 --n-head 32 --n-head-kv 8
refused "the description has layouts attention, decode" --layout prefill
refused "a causal profile describes a mask, and this shape has none" --causal 0 --no-mask
refused "need at least 305 KV rows, this shape has 304" --causal 300 --tokens 5 --n-kv 304
refused "the earlier positions are a count" --causal -1

# A causal profile moves no more than none: per shape the lockstep block steps, the bytes read and K's bytes
# with --causal N0 at most those without (the split, the columns and rounds the same), and the JSON plan
# carries the step table the text prints.
plan_figures() {  # plan_figures <design args...>: "<columns> <rounds> <lockstep> <read> <k> <step table rows>"
    "$py" "$design" --print-plan --format json "$@" | "$py" -c 'import json, sys
p = json.load(sys.stdin)
assert len(p["col_steps"]) == len(p["own"]) == p["rounds"], "the step table has a row per round"
print(p["columns"], p["rounds"], p["steps"]["lockstep block steps"], p["traffic"]["read"], p["traffic"]["k"],
      len(p["col_steps"]))'
}
for shape in "--tokens 512 --n-kv 512 --causal 0" "--tokens 64 --n-kv 256 --causal 0" \
             "--tokens 1 --n-kv 512 --causal 300" "--tokens 1 --n-kv 4096 --causal 0" \
             "--tokens 7 --n-kv 256 --n-head 4 --n-head-kv 2 --tile 64 --causal 100" \
             "--tokens 100 --n-kv 1000 --n-head 8 --n-head-kv 2 --tile 64 --causal 500" \
             "--tokens 3 --n-kv 700 --n-head 8 --n-head-kv 2 --tile 64 --family q8_0 --n-seq 2 --causal 300"; do
    # shellcheck disable=SC2086
    with=$(plan_figures $shape) || { fail "plan of $shape"; continue; }
    # shellcheck disable=SC2086
    without=$(plan_figures ${shape% --causal *}) || { fail "plan of ${shape% --causal *}"; continue; }
    read -r c1 r1 l1 b1 k1 _ <<<"$with"
    read -r c0 r0 l0 b0 k0 _ <<<"$without"
    { [ "$c1 $r1" = "$c0 $r0" ] && [ "$l1" -le "$l0" ] && [ "$b1" -le "$b0" ] && [ "$k1" -le "$k0" ]; } ||
        fail "$shape: columns, rounds, lockstep, read, k '$with' against '$without' without the profile"
done

# The task order the text plan names: chunk-major over several rounds of whole chunk indices (pp512; pp64 on 2
# columns, 8 tasks a round of 8 KV heads), else chunk fastest (pp64 on 5 columns: 20 tasks a round; one round).
for case in "chunk-major:--tokens 512 --n-kv 512 --causal 0" "chunk-major:--tokens 64 --n-kv 256 --cols 2" \
            "chunk-fastest:--tokens 64 --n-kv 256 --cols 5" "chunk-fastest:--tokens 7 --n-kv 256 --n-head 4 --n-head-kv 2 --tile 64"; do
    # shellcheck disable=SC2086
    got=$("$py" "$design" --print-plan ${case#*:} | sed -n 's/^task order: //p') || fail "plan of ${case#*:}"
    [ "$got" = "${case%%:*}" ] || fail "${case#*:}: task order '$got', expected '${case%%:*}'"
done

# Broken on purpose, each on a copy of design.py (with the description and header it reads) with one edit: the
# tasks back in the engine's order (chunk fastest) must fail the recomputation; chunk-major tasks with the
# chunk-fastest words (first_chunk slot % chunks, chunk_step per round % chunks) must fail design.py's own check.
broken() {  # broken <name> <text> <replacement>: the copy in $tmp/broken-<name>
    local dir=$tmp/broken-$1
    mkdir -p "$dir/aie/flash_attn" "$dir/aie/include/xdna_aie"
    cp "$df" "$dir/aie/flash_attn/dataflow.json"
    cp "$root/aie/include/xdna_aie/flash_attn_tiles.h" "$dir/aie/include/xdna_aie/"
    "$py" - "$design" "$dir/aie/flash_attn/design.py" "$2" "$3" <<'PYEOF'
import sys

src, dst, old, new = sys.argv[1:]
text = open(src).read()
if text.count(old) != 1:
    sys.exit(f"design.py has {text.count(old)} of {old!r}, the edit needs one")
open(dst, "w").write(text.replace(old, new))
PYEOF
}
mkdir -p "$tmp/no-variants"
if broken order "return CHUNK_MAJOR if rounds > 1 and per_round % chunk_sharers(s) == 0 else CHUNK_FASTEST" \
        "return CHUNK_FASTEST"; then
    rc=0; "$py" "$here/flash_attn_plan_verify.py" "$tmp/broken-order" "$tmp/no-variants" >"$tmp/broken.txt" 2>&1 || rc=$?
    { [ "$rc" = 1 ] && grep -qF "task order chunk-fastest, recomputed chunk-major" "$tmp/broken.txt"; } ||
        { fail "design.py with its tasks in chunk-fastest order passed the recomputation (exit $rc)"; tail -5 "$tmp/broken.txt"; }
else
    fail "the task order's rule is no longer where the broken copy edits it"
fi
if broken words "return slot // chunk_sharers(s), per_round // chunk_sharers(s)" \
        'return slot % sp["chunks"], per_round % sp["chunks"]'; then
    rc=0; "$py" "$tmp/broken-words/aie/flash_attn/design.py" --print-plan --tokens 64 --n-kv 256 --cols 2 \
        >"$tmp/broken.txt" 2>&1 || rc=$?
    { [ "$rc" = 1 ] && grep -qF "FAILED: placement: each core's chunk counting" "$tmp/broken.txt"; } ||
        fail "design.py with chunk-fastest words on chunk-major tasks passed its checks (exit $rc)"
else
    fail "the chunk words' rule is no longer where the broken copy edits it"
fi

# The layout a shape takes: decode for one query token (every family, head dim and GQA ratio), attention for
# more; the attention layout still takes a one-token shape when forced. The JSON plan names it and the kv
# object bytes of its FIFOs.
layout_of() {  # layout_of <design args...>: "<layout> <kv bytes>"
    "$py" "$design" --print-plan --format json "$@" |
        "$py" -c 'import json, sys; p = json.load(sys.stdin); print(p["layout"], p["objects"]["kv"])'
}
for fam_tile in "f16 32" "f16 64" "f16 128" "q8_0 64" "q8_0 128"; do
    set -- $fam_tile
    want_dec=$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["attention"]["objects"][sys.argv[2]][sys.argv[3]]["kv_decode"])' "$df" "$1" "$2")
    want_att=$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["attention"]["objects"][sys.argv[2]][sys.argv[3]]["kv"])' "$df" "$1" "$2")
    for heads in "32 8" "8 8" "8 1"; do
        set -- $fam_tile $heads
        got=$(layout_of --family "$1" --tile "$2" --n-head "$3" --n-head-kv "$4" --tokens 1 --n-kv 1000) || fail "plan of $*"
        [ "$got" = "decode $want_dec" ] || fail "$1 d$2 $3/$4 heads, 1 token: layout '$got', expected 'decode $want_dec'"
        for tokens in 2 7 512; do
            got=$(layout_of --family "$1" --tile "$2" --n-head "$3" --n-head-kv "$4" --tokens "$tokens" --n-kv 1000) ||
                fail "plan of $* $tokens tokens"
            [ "$got" = "attention $want_att" ] || fail "$1 d$2 $3/$4 heads, $tokens tokens: layout '$got', expected 'attention $want_att'"
        done
        got=$(layout_of --family "$1" --tile "$2" --n-head "$3" --n-head-kv "$4" --tokens 1 --n-kv 1000 --layout attention) ||
            fail "plan of $* forced on attention"
        [ "$got" = "attention $want_att" ] || fail "$1 d$2 $3/$4 heads, 1 token, --layout attention: '$got'"
    done
done
"$py" "$design" --print-plan --tokens 1 >"$tmp/plan.txt" || fail "the text plan of a decode shape"
grep -qF "layout: decode (tasks of up to 1 token(s), kv objects of 16640 bytes)" "$tmp/plan.txt" ||
    fail "the text plan of a decode shape does not name its layout"

# A failing plan is not emitted; a passing one reaches the emission (no mlir-aie here: it says so).
rc=0; "$py" "$design" --dataflow "$tmp/variants/depth3.json" >"$tmp/emit.txt" 2>&1 || rc=$?
{ [ "$rc" = 1 ] && grep -q "check failed: core data memory" "$tmp/emit.txt"; } || fail "a plan over the core's memory was emitted (exit $rc)"
if ! "$py" -c 'import aie.iron' 2>/dev/null; then
    for lay in decode attention; do
        rc=0; "$py" "$design" --layout "$lay" >"$tmp/emit.txt" 2>&1 || rc=$?
        { [ "$rc" = 2 ] && grep -q "mlir-aie" "$tmp/emit.txt"; } || fail "emission ($lay) without mlir-aie did not name it (exit $rc)"
    done
fi

# The IRON program on stand-ins.
"$py" "$here/flash_attn_iron_check.py" "$root" "$here/check_barrier.py" || fail "the IRON program on stand-ins"

if [ "$failures" -gt 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "check_design_flash_attn: all checks passed"
