#!/usr/bin/env bash
# Checks the rows designs' IRON script (aie/add/design.py, for aie/add/dataflow.json, aie/glu/dataflow.json,
# aie/scale/dataflow.json, aie/hadamard/dataflow.json and aie/row_scale/dataflow.json) without mlir-aie, Peano
# or an NPU:
#   - design.py compiles and answers --help, --list-tiles (every tile the description has) and
#     --list-contracts (each contract's kernel file) with a bare Python, for the five descriptions;
#   - for every tile of add's, glu's and scale's descriptions, columns 1, 3 and 8, a one-row b (the
#     descriptions of two inputs), and shapes of one long row, few rows and many rows (steps of the host's
#     rows per step), and for hadamard's the shapes below, --print-plan's budgets, schedule, transfers and
#     traffic agree with a recomputation made here from the description (its inputs: the shim MM2S FIFOs,
#     two for add and glu, one for scale and hadamard; its output: the S2MM one), the AIE2P limits (64 KB
#     core data memory, 512 KB memory tile, DMA channels 2 + 2 per core, 6 + 6 per memory tile, 2 + 2
#     per shim, stream-switch ports 6 up and 4 down between rows, a shim BD's wraps of 1023 words: d0 the
#     tile halved while past it, d1 the segment's runs of d0 unless the step is one contiguous run, a
#     segment of at most 1023 chunks) and the host's rule
#     (src/runtime/rows-sequence.cpp: R row blocks x S segments, one column each; steps of at most
#     min(kRowsPerStep, repeat_max + 1) rows; rows_bd's d0), and each of its checks passes or fails
#     exactly when the recomputation says it must; every value goes to exactly one core and is read and
#     written once; the kernels take what the core passes (a binary kernel (a, b, y, n), SwiGLU's
#     (a, b, y, n, b's offset: b broadcast whole to glu's 4 core rows), scale's
#     (x, y, n, s, b, with_bias), hadamard's (x, y, rows, n, scale), read here from the sources); scale's
#     fp32 RTP words are the bits of --scale and --bias, hadamard's of --hadamard-scale or, by default,
#     1.0f / sqrtf(tile) (the three tiles' bits written here by hand); a few shapes are also held to the
#     numbers the host's own tests expect (tests/kernels/test_add_stream.cpp) or, for scale and hadamard
#     (the shapes of tests/kernels/test_hadamard_stream.cpp), worked out by hand;
#   - hadamard, whose row is one transform at its tile on one core row: every tile (64, 128, 256) at
#     1, 3, 32, 300 and 4096 rows on 1, 3 and 8 columns, strided rows, and a row of two transforms or the
#     description over 2 core rows, which must fail by name (a row transform's row, its group);
#   - what the design cannot take is refused with the reason: a tile not in the description, 0 or 9
#     columns, a row not in whole groups (or of no tile's groups), a stride short of the row or past the
#     shim's stride field, a strided step whose segment has more runs of d0 than d1 wraps (512 chunks of
#     1024), a link the program does not build, objects that are not a group per core row,
#     --one-b-row for scale's or hadamard's one input, --scale / --bias / --hadamard-scale for a description
#     without those words, a value past fp32's range, fp32 words that are counts or not words at all, or
#     that the program has no option for; a hadamard row that is no tile's length;
#   - descriptions changed the ways the design has been discussed: the inputs split over 4 core rows
#     (core_rows 4, groups of 4: for add and glu the memory tile's 6 MM2S channels and the 6 upward ports
#     cannot feed it and it must fail those checks by name; scale's one input fits, 5 of 6 and 4 of 6),
#     the last input broadcast whole (add's and scale's kernels take no offset: it must fail the kernels'
#     signature check; glu's description broadcasts b and its kernel takes the offset: its plan passes,
#     and glu split over 2 core rows, as it was, fails the signature check: its kernel wants an offset the
#     core then does not pass), scale without its fp32 words and add with one (both fail the signature check), hadamard
#     beside a fwht.cc that defines no fwht_f32 or one without its rows (the kernel check fails by name);
#     a plan that passes is handed on to the MLIR emission;
#   - the IRON program design.py builds for the descriptions, run on stand-ins of IRON's classes
#     (tests/aie/check_barrier.py) and of mlir's arith and types (here): the FIFOs and their split / join,
#     one worker per core with its FIFO ends, the kernels declared with the types the core passes, the
#     kernel calls with n = tile (hadamard's with rows = 1 before it; scale's: s and b the RTP words
#     bitcast to f32, with_bias their une compare of b with 0.0 extended to i32; hadamard's scale the
#     word bitcast), the split and join of one part over hadamard's one core row, the runtime-parameter
#     barrier (wait, every word read, the bitcasts and the compare, release, before the first acquire; the
#     sequence's words, then its set, before the first DMA), RTP chunk counts as the host's, s and b
#     written as the int32 of their fp32 bits (--scale -0.125 --bias 3.5, and -0.0: sign bits set;
#     hadamard's scale -0.25, or its default), and fills and drains covering each column's rows and
#     segment once, in order (tile 1024 as runs of 512, strided rows too; one run only where a segment has
#     more runs than d1 wraps).
#   - row_scale (x split, w one value per row broadcast to both core rows, y joined; its core holds a row's
#     value for the row's chunks: RTP words rows and row_chunks): its plans for every tile, 1, 3 and 8
#     columns, rows of one to 600, w strides of 1, several and 0 (one value for every row), against a
#     recomputation written apart from design.py (tests/aie/row_scale_plan_verify.py), the shapes of
#     tests/kernels/test_row_scale_stream.cpp held to its numbers (tile, columns, calls per core, steps, w
#     bytes), and variants failing by name (w split, not broadcast; the word rows missing; chunks instead of
#     rows and row_chunks; a kernel without its w; a per-row unit of 8 bytes; --one-b-row, a negative
#     --w-stride); its IRON program on the stand-ins (tests/aie/row_scale_iron_check.py): the links, the
#     core program (per row the w acquire and its value, row_chunks calls with n = tile and that value,
#     x and y released per chunk, w after the row), the words and fills, and a replay of the fills through
#     the traced core programs in which every output value must be x * w of its own row.
# The descriptions are read, never changed: variants are written to a temporary directory, removed on exit.
set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
root=$(cd "$root" && pwd)
py=${PYTHON:-python3}
export PYTHONDONTWRITEBYTECODE=1  # the in-process runs import design.py and check_barrier.py: no __pycache__ in the tree
design=$root/aie/add/design.py
add_df=$root/aie/add/dataflow.json
glu_df=$root/aie/glu/dataflow.json
scale_df=$root/aie/scale/dataflow.json
hadamard_df=$root/aie/hadamard/dataflow.json
row_scale_df=$root/aie/row_scale/dataflow.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
shows() {  # shows <label> <plan file> <pattern>...: every pattern is in the plan
    local label=$1 file=$2 want
    shift 2
    for want in "$@"; do
        grep -q -- "$want" "$file" || fail "$label: no '$want'"
    done
}

# Compile without writing a .pyc into the source tree.
"$py" -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$design" ||
    fail "design.py does not compile"
"$py" "$design" --help >"$tmp/help.txt" || fail "design.py --help"
for want in "aie/scale/dataflow.json" "aie/hadamard/dataflow.json" "aie/row_scale/dataflow.json" "--scale" "--bias" \
            "--hadamard-scale" "--one-b-row" "--w-stride"; do
    grep -qF -- "$want" "$tmp/help.txt" || fail "design.py --help does not mention '$want'"
done
contracts() {  # contracts <description> <expected lines...>
    local desc=$1; shift
    "$py" "$design" --dataflow "$desc" --list-contracts >"$tmp/contracts.txt" || fail "--list-contracts $desc"
    for want in "$@"; do
        grep -qx "$want" "$tmp/contracts.txt" || { fail "--list-contracts of $desc: no '$want'"; cat "$tmp/contracts.txt"; }
    done
}
contracts "$add_df" "add_f32 add.cc" "mul_f32 mul.cc"
contracts "$glu_df" "swiglu_f32 swiglu.cc"
contracts "$scale_df" "scale_f32 scale.cc"
contracts "$hadamard_df" "fwht_f32 fwht.cc"
contracts "$row_scale_df" "row_scale_f32 row_scale.cc"
# Every tile the description has (the numeric keys of each family's kernel_stack).
for desc in "$add_df" "$glu_df" "$scale_df" "$hadamard_df" "$row_scale_df"; do
    want=$("$py" -c 'import json, sys
d = json.load(open(sys.argv[1]))
fam = next(k for k in d["families"] if k != "about")
print(" ".join(str(t) for t in sorted(int(k) for k in d["core_budget"]["kernel_stack"][fam] if k.isdigit())))' "$desc")
    got=$("$py" "$design" --dataflow "$desc" --list-tiles) || fail "--list-tiles $desc"
    [ "$got" = "$want" ] || fail "--list-tiles of $desc: '$got', the description has '$want'"
    echo "$(basename "$(dirname "$desc")") tiles: $got"
done
# design.py's copy of the host's rows per step is the host's.
host_step=$(sed -n 's/.*kRowsPerStep = \([0-9]*\);.*/\1/p' "$root/src/runtime/rows-sequence.h")
py_step=$(sed -n 's/^HOST_ROWS_PER_STEP = \([0-9]*\).*/\1/p' "$design")
[ -n "$host_step" ] && [ "$host_step" = "$py_step" ] ||
    fail "design.py's HOST_ROWS_PER_STEP '$py_step' is not rows-sequence.h's kRowsPerStep '$host_step'"

# Variants of each description, from the real one (so every other number stays its own); "the inputs"
# are its shim MM2S FIFOs (a and b, or x), "the last input" b or x:
#   <d>-split4:  the inputs split over 4 core rows (core_rows 4, groups of 4 chunks), y joined from 4;
#   <d>-split2:  the inputs split over 2 core rows (core_rows 2, groups of 2 chunks), y joined from 2;
#   <d>-bcast:   the last input broadcast whole to the 2 core rows (core object = the group);
#   <d>-forward: the last input handed on by a forward (refused when read);
#   <d>-group4:  groups of 4 chunks over core_rows 2 (refused when read);
# and of the fp32 RTP words:
#   scale-nofloat:    scale without rtp_float_words (its kernel takes s, b and with_bias: the signature fails);
#   add-float:        add with an fp32 word s (its kernels take no s: the signature fails);
#   scale-countfloat: rtp_float_words naming the count word chunks (refused when read);
#   scale-noword:    rtp_float_words naming a word rtp_words lacks (refused when read);
#   scale-otherword:  s renamed q, an fp32 word the program has no option for (refused).
"$py" - "$add_df" "$glu_df" "$scale_df" "$tmp" <<'PYEOF'
import copy, json, os, sys

*descs, out = sys.argv[1:]
for path in descs:
    base = json.load(open(path))
    name = os.path.basename(os.path.dirname(path))
    fifos = base["layouts"][0]["fifos"]
    shim = [f["name"] for f in fifos if "shim_channel" in f]
    last_in = [f["name"] for f in fifos if f.get("shim_channel", {}).get("direction") == "mm2s"][-1]
    last_core = next(f["name"] for f in fifos if f.get("source") == last_in)

    def variant(kind, core_rows=None, group=None, link=None, count=None, split_all=False):
        d = copy.deepcopy(base)
        if core_rows is not None:
            d["array"]["core_rows"] = core_rows
        for f in d["layouts"][0]["fifos"]:
            if group is not None and f["name"] in shim:
                f["object"]["count"] = group
            if split_all and f.get("to") == "core":
                f["link"], f["object"]["count"] = "split", 1
            if f["name"] == last_core and link is not None:
                f["link"] = link
                f["object"]["count"] = count
        json.dump(d, open(f"{out}/{name}-{kind}.json", "w"), indent=1)
        return d

    variant("split4", core_rows=4, group=4, split_all=True)
    variant("split2", core_rows=2, group=2, split_all=True)
    variant("bcast", link="broadcast", count=base["array"]["core_rows"])
    variant("forward", link="forward", count=1)
    variant("group4", group=4)


def write(name, d):
    json.dump(d, open(f"{out}/{name}.json", "w"), indent=1)


add, scale = (json.load(open(p)) for p in (descs[0], descs[2]))
d = copy.deepcopy(scale)
del d["core_program"]["rtp_float_words"]
write("scale-nofloat", d)
d = copy.deepcopy(add)
d["core_program"]["rtp_words"] = {"contract": 0, "chunks": 1, "s": 2, "version": 3}
d["core_program"]["rtp_word_count"] = 4
d["core_program"]["rtp_float_words"] = ["s"]
write("add-float", d)
d = copy.deepcopy(scale)
d["core_program"]["rtp_float_words"] = ["s", "chunks"]
write("scale-countfloat", d)
d = copy.deepcopy(scale)
d["core_program"]["rtp_float_words"] = ["s", "w"]
write("scale-noword", d)
d = copy.deepcopy(scale)
words = d["core_program"]["rtp_words"]
d["core_program"]["rtp_words"] = {("q" if k == "s" else k): v for k, v in words.items()}
d["core_program"]["rtp_float_words"] = ["q", "b"]
write("scale-otherword", d)
PYEOF
# Hadamard's: over 2 core rows (groups of 2 chunks; a transform's group must be one chunk), and copies of
# the description beside a kernels/ of their own (looked in first) whose fwht.cc defines no fwht_f32
# (renamed) or one without its rows.
"$py" - "$hadamard_df" "$tmp" <<'PYEOF'
import copy, json, os, sys

path, out = sys.argv[1:]
base = json.load(open(path))
d = copy.deepcopy(base)
d["array"]["core_rows"] = 2
for f in d["layouts"][0]["fifos"]:
    if "shim_channel" in f:
        f["object"]["count"] = 2
json.dump(d, open(f"{out}/hadamard-core2.json", "w"), indent=1)
src = open(os.path.join(os.path.dirname(path), "kernels", "fwht.cc")).read()
for name, old, new in (("nokernel", "void fwht_f32(", "void fwht_rows_f32("),
                       ("norows", "int32_t rows, int32_t n,", "int32_t n,")):
    if src.count(old) != 1:
        sys.exit(f"fwht.cc has no one '{old}' to change")
    os.makedirs(f"{out}/hadamard-{name}/kernels")
    json.dump(base, open(f"{out}/hadamard-{name}/dataflow.json", "w"), indent=1)
    open(f"{out}/hadamard-{name}/kernels/fwht.cc", "w").write(src.replace(old, new))
PYEOF

# The plans, made in one process through design.py's command line (main), and their recomputation.
cat >"$tmp/plans.py" <<'PYEOF'
import contextlib, importlib.util, io, json, os, re, struct, sys

root, tmp = sys.argv[1:3]
spec = importlib.util.spec_from_file_location("xdna_rows_design", f"{root}/aie/add/design.py")
design = importlib.util.module_from_spec(spec)
spec.loader.exec_module(design)

CORE, MEMTILE = 65536, 524288
CORE_IN, CORE_OUT, MT_IN, MT_OUT, SHIM_IN, SHIM_OUT = 2, 2, 6, 6, 2, 2
UP, DOWN = 6, 4
DEFAULT_FLOATS = {"s": 1.0, "b": 0.0}  # SCALE's identity: what --scale and --bias default to
# Families whose kernel transforms whole rows, (x, y, rows, n, scale) with rows = 1: a chunk is one row, so
# one core row and a row length equal to the tile. Hadamard's scale word defaults to 1.0f / sqrtf(n), by
# hand: 1/8, 1/sqrt(128) rounded to fp32 (0x3db504f3, as sqrtf then the fp32 quotient give it), 1/16.
TRANSFORMS = ("hadamard",)
HADAMARD_SCALE_BITS = {64: 0x3E000000, 128: 0x3DB504F3, 256: 0x3D800000}
OPTION = {"s": "--scale", "b": "--bias", "scale": "--hadamard-scale"}
errors, lines = [], []


def run(desc_path, args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = design.main(["--dataflow", desc_path, "--print-plan", "--format", "json"] + args)
    return rc, out.getvalue(), err.getvalue()


def bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def default_float(word, tile):
    """What design.py must take for an fp32 word not given: SCALE's identity, or 1 / sqrtf(tile)."""
    if word == "scale":
        return struct.unpack("<f", struct.pack("<I", HADAMARD_SCALE_BITS[tile]))[0]
    return DEFAULT_FLOATS[word]


def kind(param):
    # What a C parameter is, read here with expressions of our own: a pointer, an int32 or a float.
    return "pointer" if "*" in param else "int32" if "int32_t" in param else "float" if re.search(r"\bfloat\b", param) else param


# Kernels: parameters, lanes and loop hint, read here from the sources.
def kernels_of(d):
    fam = next(k for k in d["families"] if k != "about")
    kdir = os.path.join(root, "aie", d["design"], "kernels")
    found = {}
    for name in sorted(os.listdir(kdir)):
        text = open(os.path.join(kdir, name)).read()
        lanes_name = re.search(r"xdna_aie::(\w+Lanes)", text).group(1)
        header = re.search(r'"(xdna_aie/\w+_tiles\.h)"', text).group(1)
        lanes = int(re.search(lanes_name + r"\s*=\s*(\d+)", open(os.path.join(root, "aie/include", header)).read()).group(1))
        for m in re.finditer(r"void\s+(\w+)\s*\(([^)]*)\)", text):
            hint = re.search(r"MIN_ITERATION_COUNT\((\d+)\)", text[m.end():])
            found[m.group(1)] = (name, [kind(x) for x in m.group(2).split(",")], lanes, int(hint.group(1)) if hint else 0)
    return fam, [(sym, *found[sym]) for sym in d["families"][fam]]


def roles(d):
    """The description's FIFOs by name, per operand its shim FIFO and core FIFO, its inputs (the shim's
    MM2S operands) and outputs (S2MM), in the order of the operands' args."""
    fifos = {f["name"]: f for f in d["layouts"][0]["fifos"]}
    shim = {f["operand"]: f for f in fifos.values() if "shim_channel" in f}
    core = {o: next(f for f in fifos.values() if f.get("source") == shim[o]["name"] or f.get("sink") == shim[o]["name"])
            for o in shim}
    ops = [o["name"] for o in sorted(d["operands"], key=lambda o: o["arg"])]
    ins = [o for o in ops if shim[o]["shim_channel"]["direction"] == "mm2s"]
    outs = [o for o in ops if shim[o]["shim_channel"]["direction"] == "s2mm"]
    return fifos, shim, core, ops, ins, outs


def parts(total, n):
    """n sizes differing by at most one, the first ones larger, and where each starts."""
    sizes = [total // n + (i < total % n) for i in range(n)]
    return [(sum(sizes[:i]), sizes[i]) for i in range(n)]


def host_d0(tile, wrap):
    # src/runtime/rows-sequence.cpp rows_bd, written again: a row's segment is contiguous, so d0 may be a
    # divisor of the chunk; the tile loses a factor of two while it is past the wrap.
    k = 0
    while tile >> k > wrap and (tile >> k) % 2 == 0:
        k += 1
    return tile >> k


def host_grid(rows, groups, columns):
    # src/runtime/rows-sequence.cpp, written again: R = min(rows, columns); S = 1 when rows >= columns,
    # else max(1, min(groups, columns // rows)); column c: row block c // S, segment c % S.
    if rows >= columns:
        R, S = columns, 1
    else:
        R, S = rows, max(1, min(groups, columns // rows))
    blocks, segs = parts(rows, R), parts(groups, S)
    return [(blocks[c // S], segs[c % S]) for c in range(R * S)]


def verify(desc_path, rows, row_len, cols, tile=None, one_b_row=False, stride=None, floats=None, expect=None):
    d = json.load(open(desc_path))
    fifos, shim, core_f, ops, ins, outs = roles(d)
    args = ["--rows", str(rows), "--row-len", str(row_len), "--cols", str(cols)]
    args += ["--tile", str(tile)] if tile else []
    args += ["--one-b-row"] if one_b_row else []
    args += ["--row-stride", str(stride)] if stride else []
    for w, v in (floats or {}).items():
        args += [OPTION[w], repr(v)]
    label = f"{os.path.basename(os.path.dirname(desc_path)) if desc_path.endswith('/dataflow.json') else os.path.basename(desc_path)}" \
            f" {' '.join(args)}"
    err = lambda e: errors.append(f"{label}: {e}")
    rc, out, stderr = run(desc_path, args)
    if rc > 1:
        err(f"--print-plan exited {rc}: {stderr.strip()}")
        return
    plan = json.loads(out)
    depth = lambda f: d["depths"][f["depth"]] if isinstance(f["depth"], str) else f["depth"]
    P = d["array"]["core_rows"]
    fam, kernels = kernels_of(d)
    transform = fam in TRANSFORMS
    # The host's pick: the largest tile whose group divides the row; a row transform's row is its tile.
    want_tile = tile or (row_len if transform else
                         max(int(t) for t in d["core_budget"]["kernel_stack"][fam] if t.isdigit() and row_len % (P * int(t)) == 0))
    if plan["tile"] != want_tile:
        err(f"tile {plan['tile']}, the host's pick is {want_tile}")
    tile = plan["tile"]
    chunk = d["units"]["chunk"] * tile
    link = {o: core_f[o].get("link") for o in ops}
    bcast = [o for o in ins if link[o] == "broadcast"]
    float_words = d["core_program"].get("rtp_float_words", [])
    stride = stride or row_len
    wrap = d["limits"]["wrap_max"]

    want_fail = set()
    core = sum(depth(core_f[o]) * core_f[o]["object"]["count"] * chunk for o in ops)
    core += 4 * d["core_program"]["rtp_word_count"] + d["core_budget"]["kernel_stack"][fam][str(tile)]
    core += d["core_budget"]["kernel_data_bytes"]
    mem = sum(depth(shim[o]) * shim[o]["object"]["count"] * chunk for o in ops)
    mt_out = sum(P if link[o] == "split" else 1 for o in ins) + len(outs)
    mt_in = len(ins) + P * len(outs)
    up = sum(P if link[o] == "split" else 1 for o in ins)
    if core > CORE: want_fail.add("core data memory")
    if mem > MEMTILE: want_fail.add("memory tile")
    if mt_out > MT_OUT: want_fail.add("DMA channels memory tile (each column) MM2S")
    if mt_in > MT_IN: want_fail.add("DMA channels memory tile (each column) S2MM")
    r0 = d["array"]["first_core_row"]
    for k in range(P):  # the boundary below core row k carries the split parts of rows k.. and each broadcast
        up_k = sum((P - k) if link[o] == "split" else 1 for o in ins)
        if up_k > UP:
            want_fail.add(f"stream-switch ports memory tile -> core row {r0} (up)" if k == 0 else
                          f"stream-switch ports core row {r0 + k - 1} -> {r0 + k} (up)")
        if len(outs) * (P - k) > DOWN:
            want_fail.add(f"stream-switch ports core row {r0 + k} -> " + ("memory tile" if k == 0 else str(r0 + k - 1)))
    # What the core passes: the operands' objects, a row transform's rows, n, an offset per broadcast
    # input, the fp32 words, and with_bias when b is one of them.
    want_kinds = ["pointer"] * len(ops) + ["int32"] * (transform + 1 + len(bcast)) + ["float"] * len(float_words) + \
        (["int32"] if "b" in float_words else [])
    for sym, source, kinds, lanes, hint in kernels:
        if kinds != want_kinds:
            want_fail.add(f"kernel {sym} ({source}) takes")
        if tile % lanes:
            want_fail.add(f"kernel {sym} ({source}) tile in whole vectors")
        if tile // lanes < hint:
            want_fail.add(f"kernel {sym} ({source}) loop")
    # The RTP block: the counts the stream computes and the fp32 words, nothing else (a word neither is
    # one the program would not know how to read).
    if sorted(d["core_program"]["rtp_words"]) != sorted(["contract", "chunks", "version"] + float_words):
        want_fail.add("RTP words:")
    whole = row_len % (P * tile) == 0
    if not whole: want_fail.add("shape: a row in whole groups")
    # A transform is never cut: one chunk per group, one per row.
    if transform and P != 1: want_fail.add("array: a row transform's group is one chunk")
    if transform and row_len != tile: want_fail.add("shape: a row transform's row is one chunk")
    if stride < row_len: want_fail.add("shape: row stride covers the row")
    one_row = lambda o: one_b_row and len(ins) == 2 and o == ins[1]
    what = lambda o: f"{o} fill" if o in ins else f"{o} drain"
    if stride > d["limits"]["stride_max"]:
        want_fail.add("shape: row stride within")
        want_fail.update((what(o), ": strides") for o in ops if not one_row(o))

    s = plan["schedule"]
    per_step = min(256, d["limits"]["repeat_max"] + 1)
    grid = host_grid(rows, row_len // (P * tile), cols) if whole else []
    n0, seg0 = (min(per_step, grid[0][0][1]), grid[0][1][1] * P) if grid else (0, 0)
    # A step is one contiguous run when it is one row (a one-row b always) or whole rows back to back;
    # only then may a wrap be exceeded: d0 (a tile that cannot be halved within it) or d1 (the segment's
    # runs of d0). A segment of more chunks than the wrap is refused whatever the run.
    linear = lambda o: one_row(o) or n0 <= 1 or stride == seg0 * tile
    d0 = host_d0(tile, wrap)
    seg_runs = seg0 * tile // d0
    for o in ops:
        if d0 > wrap and not linear(o):
            want_fail.add((what(o), ": d0 size"))
        if seg0 > wrap or (seg_runs > wrap and not linear(o)):
            want_fail.add((what(o), ": d1 size"))

    if plan["core_bytes"]["total"] != core:
        err(f"core data memory: plan {plan['core_bytes']['total']}, recomputed {core}")
    if plan["memtile_bytes"]["total"] != mem:
        err(f"memory tile: plan {plan['memtile_bytes']['total']}, recomputed {mem}")
    ch = plan["channels"]
    got = (ch["core (each)"]["S2MM"]["used"], ch["core (each)"]["MM2S"]["used"],
           ch["memory tile (each column)"]["S2MM"]["used"], ch["memory tile (each column)"]["MM2S"]["used"],
           ch["shim (each column)"]["MM2S"]["used"], ch["shim (each column)"]["S2MM"]["used"])
    want_ch = (len(ins), len(outs), mt_in, mt_out, len(ins), len(outs))
    if got != want_ch:
        err(f"channels core in/out, memtile in/out, shim out/in {got}, recomputed {want_ch}")
    avail = (ch["core (each)"]["S2MM"]["available"], ch["memory tile (each column)"]["MM2S"]["available"],
             ch["memory tile (each column)"]["S2MM"]["available"], ch["shim (each column)"]["MM2S"]["available"])
    if avail != (CORE_IN, MT_OUT, MT_IN, SHIM_OUT):
        err(f"channel limits {avail}, the hardware has {(CORE_IN, MT_OUT, MT_IN, SHIM_OUT)}")
    first_up = plan["streams"][f"memory tile -> core row {r0} (up)"]
    if (first_up["used"], first_up["available"]) != (up, UP):
        err(f"upward streams into the first core row {first_up}, recomputed {up} of {UP}")

    # The fp32 words: the bits of the values given (the defaults otherwise), and with_bias as the host's b != 0.
    value = lambda w: (floats or {}).get(w, default_float(w, tile))
    want_floats = {w: {"value": float(value(w)), "bits": bits(value(w))} for w in float_words}
    as_seen = lambda fw: {w: (repr(f["value"]), f["bits"]) for w, f in fw.items()}  # a NaN is not equal to itself
    if as_seen(plan["float_words"]) != as_seen(want_floats):
        err(f"fp32 RTP words {plan['float_words']}, expected {want_floats}")
    if "b" in float_words:
        b = want_floats["b"]["value"]
        flag = f"with_bias = (b != 0.0) = {1 if b != b or b != 0.0 else 0}"
        if flag not in plan["core_program"]["per chunk, core row k"]:
            err(f"the core program's kernel call has no '{flag}': {plan['core_program']['per chunk, core row k']}")
    call = f"by the contract word, {'rows = 1, ' if transform else ''}n = {tile}"
    if call not in plan["core_program"]["per chunk, core row k"]:
        err(f"the core program's kernel call has no '{call}': {plan['core_program']['per chunk, core row k']}")

    # The plan's failed checks are exactly the ones recomputed here.
    failed = [c["check"] for c in plan["checks"] if not c["ok"]]
    matched = set()
    for f in failed:
        hit = [w for w in want_fail if (f.startswith(w[0]) and w[1] in f[len(w[0]):] if isinstance(w, tuple) else f.startswith(w))]
        if not hit:
            err(f"check failed that should pass: {f}")
        matched.update(hit)
    for w in sorted(want_fail - matched, key=str):
        err(f"check passed that must fail: {w}")
    if rc != (1 if failed else 0):
        err(f"design.py exited {rc} with {len(failed)} failed check(s)")
    for c in plan["checks"]:
        if not c["ok"] and c["check"].startswith("DMA channels memory tile") and "dataflow.json must change" not in c["detail"]:
            err(f"memory-tile channel failure without the way out: {c['detail']}")

    if whole:
        # The grid, the per-core chunk counts (RTP "chunks"), the steps: the host's rule.
        got_grid = [(tuple(b), tuple(g)) for b, g in s[design.GRID]]
        if got_grid != grid:
            err(f"grid {got_grid}, the host's {grid}")
        calls = [n * g for (_, n), (_, g) in grid] + [0] * (cols - len(grid))
        if s["chunks per core of column c (RTP chunks)"] != calls:
            err(f"chunks per core {s['chunks per core of column c (RTP chunks)']}, the host's {calls}")
        if s["columns used"] != len(grid) or s["kernel calls on the busiest core"] != max(calls):
            err(f"columns used {s['columns used']}, busiest core {s['kernel calls on the busiest core']}: "
                f"the host's {len(grid)}, {max(calls)}")
        steps = -(-grid[0][0][1] // per_step)
        if (s["rows per step (at most)"], s["steps"]) != (per_step, steps):
            err(f"rows per step {s['rows per step (at most)']}, steps {s['steps']}: the host's {per_step}, {steps}")
        # Every value of every operand to exactly one core, once: each row's segments tile the row.
        cover = {}
        for (r0_, n), (g0, g) in grid:
            for r in range(r0_, r0_ + n):
                cover.setdefault(r, []).append((g0 * P * tile, g * P * tile))
        if sorted(cover) != list(range(rows)):
            err("not every row goes to a column")
        for r, segs in cover.items():
            at = 0
            for v0, n in sorted(segs):
                if v0 != at:
                    err(f"row {r}: segments {sorted(segs)} do not tile the row")
                    break
                at += n
            else:
                if at != row_len:
                    err(f"row {r}: segments {sorted(segs)} do not tile the row")
        if sum(calls) * P * tile != rows * row_len:
            err(f"chunks per core {calls}: not every value once")
        t = plan["traffic"]
        once = 4 * rows * row_len
        want_t = tuple(once for _ in ops) + (len(ins) * once, len(outs) * once)
        got_t = tuple(t[f"{o} {'read' if o in ins else 'written'} (bytes)"] for o in ops) + (t["read (bytes)"], t["written (bytes)"])
        if got_t != want_t:
            err(f"traffic {got_t}: {', '.join(ops)} are not moved once ({want_t})")
        got_x = [(x["what"].split()[0], x["sizes"], x["strides"], x["repeat"], x["linear"]) for x in plan["transfers"]]
        want_x = [(o, [1, 1, seg_runs, d0], [0, 0, d0, 1], n0 - 1, True) if one_row(o) else
                  (o, [1, n0, seg_runs, d0], [0, stride, d0, 1], 0, linear(o)) for o in ops]
        if got_x != want_x:
            err(f"transfers (operand, sizes, strides, repeat, one run) {got_x}, the host's {want_x}")
        for j, o in enumerate(ops):
            length = row_len if one_row(o) else (rows - 1) * stride + row_len
            if plan["tensors"][f"{o} (arg {j})"] != length:
                err(f"tensor {o} of {plan['tensors'][f'{o} (arg {j})']} values, expected {length}")
    # What the host's own tests expect of the same shape (tests/kernels/test_add_stream.cpp), or worked out by hand.
    for k, v in (expect or {}).items():
        got_v = plan["tile"] if k == "tile" else plan["traffic"][k] if k in plan["traffic"] else \
            [[x["sizes"], x["strides"], x["linear"]] for x in plan["transfers"]] if k == "transfers" else s[k]
        if got_v != v:
            err(f"{k}: {got_v}, expected {v}")

    lines.append(f"{label}: tile {tile}, core {core} B, memtile {mem} B, memtile MM2S {mt_out}/{MT_OUT}, up {up}/{UP}, "
                 f"{s['columns used']} column(s) used, {len(failed)} check(s) failing as recomputed")


add, glu, scale = (f"{root}/aie/{n}/dataflow.json" for n in ("add", "glu", "scale"))
real = [add, glu, scale]
variants = [f"{tmp}/{n}-{v}.json" for n in ("add", "glu", "scale") for v in ("split4", "bcast")] + \
    [f"{tmp}/scale-nofloat.json", f"{tmp}/add-float.json"]
for desc_path in real + variants:
    d = json.load(open(desc_path))
    fam = next(k for k in d["families"] if k != "about")
    P = d["array"]["core_rows"]
    two = len(roles(d)[4]) == 2  # a one-row b needs a second input: the shapes of one take every row
    fl = {w: v for w, v in {"s": -0.125, "b": 3.5}.items() if w in d["core_program"].get("rtp_float_words", [])}
    for tile in sorted(int(t) for t in d["core_budget"]["kernel_stack"][fam] if t.isdigit()):
        for cols in (1, 3, 8):
            verify(desc_path, 64, 4 * P * tile, cols, tile)
            verify(desc_path, 1, 7 * P * tile, cols, tile, floats=fl)      # one long row over the columns
            verify(desc_path, 3, 7 * P * tile, cols, tile, one_b_row=two)  # fewer rows than columns, one b row
        verify(desc_path, 5, 2 * P * tile, 8, tile, one_b_row=two)
        verify(desc_path, 600, P * tile, 1, tile, floats=fl)             # one column, steps of the host's rows per step
    if desc_path in real:
        # The runtime's tile for a row (the largest whose group divides it); long blocks, a wider stride.
        verify(desc_path, 1000, 4096, 3)
        verify(desc_path, 700, 3072, 2, one_b_row=two)
        verify(desc_path, 10, 2048, 8, stride=3000)              # scale: tile 1024, rows not back to back
        # Segments of 1024 values of 512 (add, glu: the host refuses them) or 512 chunks of 1024 (scale:
        # 1024 runs of 512, which only a contiguous step may have).
        verify(desc_path, 16, 524288, 8, stride=600000)
        verify(desc_path, 16, 524288, 8)
        verify(desc_path, 2, 1536, 3, tile=512)                   # not whole groups: fails its shape check
        verify(desc_path, 4, 1024, 8, stride=1000)               # stride short of the row
        verify(desc_path, 4, 1024, 8, stride=2000000)            # stride past the shim's field
# Hadamard: a row is one transform at its tile, on one core row; every tile, rows of a decode token's heads
# to a prefill's, strided rows (a view of a fused QKV row), and the scale word given (its sign bit set) or
# its default. A row of two transforms, and the description over 2 core rows, fail by name.
hadamard = f"{root}/aie/hadamard/dataflow.json"
for tile in (64, 128, 256):
    for rows in (1, 3, 32, 300, 4096):
        for cols in (1, 3, 8):
            verify(hadamard, rows, tile, cols, floats={"scale": -0.25} if rows == 3 else None)
    verify(hadamard, 37, tile, 8, stride=3 * tile)
    verify(hadamard, 3, 2 * tile, 8, tile=tile)
    verify(f"{tmp}/hadamard-core2.json", 8, tile, 8, tile=tile)
    verify(f"{tmp}/hadamard-core2.json", 8, 2 * tile, 8, tile=tile)
# The shapes of the host's own test (tests/kernels/test_hadamard_stream.cpp), worked out by hand: 32 query
# heads of 128, 4 rows per column; 8 KV heads 384 apart, one row per column, each step one row (one run);
# one row of 256, one column; 600 rows 300 apart, 75 per column, not one run; 2100 rows of 64, 263 in
# column 0: 2 steps, the first of 256 rows back to back.
verify(hadamard, 32, 128, 8, expect={"tile": 128, "columns used": 8, "kernel calls on the busiest core": 4,
                                     "read (bytes)": 32 * 512, "written (bytes)": 32 * 512,
                                     "transfers": [[[1, 4, 1, 128], [0, 128, 128, 1], True]] * 2})
verify(hadamard, 8, 128, 8, stride=384, expect={"columns used": 8, "kernel calls on the busiest core": 1,
                                                "transfers": [[[1, 1, 1, 128], [0, 384, 128, 1], True]] * 2})
verify(hadamard, 1, 256, 8, expect={"tile": 256, "columns used": 1, "kernel calls on the busiest core": 1})
verify(hadamard, 600, 256, 8, stride=300, expect={"columns used": 8, "kernel calls on the busiest core": 75,
                                                  "transfers": [[[1, 75, 1, 256], [0, 300, 256, 1], False]] * 2})
verify(hadamard, 2100, 64, 8, expect={"kernel calls on the busiest core": 263, "steps": 2,
                                      "transfers": [[[1, 256, 1, 64], [0, 64, 64, 1], True]] * 2})
# The host's own tests' numbers (tests/kernels/test_add_stream.cpp, test_swiglu.cpp's shapes).
verify(add, 1, 14336, 8, expect={"tile": 512, "columns used": 8, "kernel calls on the busiest core": 2})
verify(add, 3, 14336, 8, expect={"columns used": 6, "kernel calls on the busiest core": 7})
verify(add, 1, 4096, 8, expect={"columns used": 4, "kernel calls on the busiest core": 1,
                                "read (bytes)": 2 * 16384, "written (bytes)": 16384})
verify(add, 512, 4096, 8, one_b_row=True, expect={"columns used": 8, "kernel calls on the busiest core": 256,
                                                  "read (bytes)": 2 * 512 * 16384})
# glu over 4 core rows, by hand: 14336 is 7 groups of 4 chunks of 512, one per column; 1536 is 3 groups of
# 4 x 128 (no larger tile's group divides it), 37 rows in row blocks of 5 and 4 over the 8 columns, 5 x 3
# chunks on each core of the busiest.
verify(glu, 1, 14336, 8, expect={"tile": 512, "columns used": 7, "kernel calls on the busiest core": 1})
verify(glu, 37, 1536, 8, expect={"tile": 128, "columns used": 8, "kernel calls on the busiest core": 15})
# Scale's, by hand: a row of 4096 is 2 groups of 2 chunks of 1024, one per column (1 row < 8 columns:
# S = min(2, 8) = 2); 64 rows are 8 per column, 2 groups each, 16 chunks per core; x read and y written once.
verify(scale, 1, 4096, 8, expect={"tile": 1024, "columns used": 2, "kernel calls on the busiest core": 1,
                                  "read (bytes)": 16384, "written (bytes)": 16384})
verify(scale, 64, 4096, 8, floats={"s": -0.125, "b": 3.5},
       expect={"tile": 1024, "columns used": 8, "kernel calls on the busiest core": 16, "read (bytes)": 64 * 16384,
               "transfers": [[[1, 8, 8, 512], [0, 4096, 512, 1], True]] * 2})
# Rows 3000 apart (test_scale_stream.cpp's strided tile-1024 case): 10 rows over 8 columns, the first two
# blocks of 2 rows; a row of 2048 is 1 group of 2 chunks of 1024, each 2 runs of 512: d1 4, d2 2, not one run.
verify(scale, 10, 2048, 8, stride=3000,
       expect={"tile": 1024, "columns used": 8, "kernel calls on the busiest core": 2,
               "transfers": [[[1, 2, 4, 512], [0, 3000, 512, 1], False]] * 2})
verify(scale, 37, 1536, 8, expect={"tile": 256, "columns used": 8, "kernel calls on the busiest core": 15})
# The bias as the host decides with_bias: -0.0 none, a NaN one.
verify(scale, 8, 2048, 8, floats={"b": -0.0})
verify(scale, 8, 2048, 8, floats={"s": float("inf"), "b": float("nan")})

for e in errors:
    print(f"  {e}")
print(f"plans: {len(lines)} recomputed ({len(errors)} disagreement(s)); e.g.")
pick = lambda key: [l for l in lines if key in l][:1]
for line in lines[:2] + pick("split4") + pick("bcast") + pick("scale --rows 64 --row-len 4096 --cols 8 --scale") + \
        pick("scale --rows 10 --row-len 2048") + pick("scale --rows 16 --row-len 524288 --cols 8 --row-stride") + \
        pick("hadamard --rows 32 --row-len 128 --cols 8") + pick("hadamard-core2.json") + lines[-2:]:
    print(f"  {line}")
sys.exit(1 if errors else 0)
PYEOF
"$py" "$tmp/plans.py" "$root" "$tmp" || fail "a plan and its recomputation disagree"

# Refusals, with the reason.
refused() {  # refused <pattern> <design args...>
    local pattern=$1; shift
    if "$py" "$design" "$@" --print-plan >"$tmp/bad.txt" 2>&1; then
        fail "design.py accepted $*"
    elif ! grep -q -- "$pattern" "$tmp/bad.txt"; then
        fail "design.py refused $* without '$pattern'"; cat "$tmp/bad.txt"
    fi
}
refused "has no xclbin for tile 32" --tile 32
refused "has no xclbin for tile 1024" --tile 1024 --row-len 8192
refused "has no xclbin for tile 48" --dataflow "$glu_df" --tile 48
refused "has no xclbin for tile 64" --dataflow "$scale_df" --tile 64
refused "has no xclbin for tile 2048" --dataflow "$scale_df" --tile 2048 --row-len 8192
refused "npu2 has 1..8 columns" --cols 9
refused "npu2 has 1..8 columns" --cols 0
refused "npu2 has 1..8 columns" --dataflow "$glu_df" --cols 9
refused "npu2 has 1..8 columns" --dataflow "$scale_df" --cols 0
refused "no tile of" --row-len 96
refused "no tile of" --dataflow "$glu_df" --row-len 96
refused "no tile of" --dataflow "$scale_df" --row-len 128
refused "\[FAIL\] shape: a row in whole groups" --tile 512 --row-len 1536
refused "\[FAIL\] shape: a row in whole groups" --dataflow "$glu_df" --tile 256 --row-len 768
refused "\[FAIL\] shape: a row in whole groups" --dataflow "$scale_df" --tile 1024 --row-len 3072
refused "\[FAIL\] shape: row stride covers the row" --tile 128 --row-len 1024 --row-stride 1000
refused "\[FAIL\] shape: row stride covers the row" --dataflow "$scale_df" --row-len 1024 --row-stride 1000
refused "\[FAIL\] shape: row stride within the shim's stride" --dataflow "$glu_df" --row-stride 2000000
refused "\[FAIL\] shape: row stride within the shim's stride" --dataflow "$scale_df" --row-stride 2000000
# Tile 1024 moves as runs of 512 (d0 halved within the wrap), so strided rows pass; a segment of 512 chunks
# is then 1024 runs, past d1's wrap unless the step is one contiguous run.
"$py" "$design" --dataflow "$scale_df" --rows 10 --row-len 2048 --row-stride 3000 --print-plan >"$tmp/strided.txt" ||
    fail "scale: strided rows at tile 1024 fail a check"
shows "scale: strided rows at tile 1024" "$tmp/strided.txt" "x fill, per column per step (the largest: column 0's first): sizes \[1, 2, 4, 512\] strides \[0, 3000, 512, 1\]$" \
            "\[ok\] x fill, per column per step (the largest: column 0's first): d0 size: 512 <= 1023 words" \
            "\[ok\] y drain, per column per step: d1 size (runs of 512 words of a segment): 4 <= 1023"
refused "\[FAIL\] x fill, per column per step (the largest: column 0's first): d1 size (runs of 512 words of a segment): 1024 > 1023" \
    --dataflow "$scale_df" --rows 16 --row-len 524288 --row-stride 600000
"$py" "$design" --dataflow "$scale_df" --rows 16 --row-len 524288 --print-plan >"$tmp/long.txt" &&
    grep -q "sizes \[1, 2, 1024, 512\] strides \[0, 524288, 512, 1\], one contiguous run" "$tmp/long.txt" ||
    fail "scale: contiguous rows of 512 chunks of 1024 are not one run"
refused "is linked by 'forward'" --dataflow "$tmp/add-forward.json"
refused "is linked by 'forward'" --dataflow "$tmp/glu-forward.json"
refused "is linked by 'forward'" --dataflow "$tmp/scale-forward.json"
refused "a split over array.core_rows = 2 core rows" --dataflow "$tmp/add-group4.json"
refused "a split over array.core_rows = 2 core rows" --dataflow "$tmp/scale-group4.json"
# Scale's one input and its fp32 words.
refused "--one-b-row: .*has one input (x)" --dataflow "$scale_df" --one-b-row
refused "--scale: .*has no fp32 RTP word 's'" --scale 2
refused "--bias: .*has no fp32 RTP word 'b'" --dataflow "$glu_df" --bias 1
refused "--scale 1e+39 is past fp32's range" --dataflow "$scale_df" --scale 1e39
refused "rtp_float_words: 'chunks' is not one parameter word" --dataflow "$tmp/scale-countfloat.json"
refused "rtp_float_words: 'w' is not one parameter word" --dataflow "$tmp/scale-noword.json"
refused "fp32 RTP word 'q': this program knows s, b" --dataflow "$tmp/scale-otherword.json"
refused "\[FAIL\] kernel scale_f32 (scale.cc) takes what the core program passes" --dataflow "$tmp/scale-nofloat.json"
refused "\[FAIL\] kernel add_f32 (add.cc) takes what the core program passes" --dataflow "$tmp/add-float.json"
# The fp32 words' bits, as the plan prints them.
"$py" "$design" --dataflow "$scale_df" --scale -0.125 --bias 3.5 --print-plan >"$tmp/scale.txt" || fail "scale's plan fails a check"
shows "scale's plan" "$tmp/scale.txt" "s = -0.125 (0xbe000000), b = 3.5 (0x40600000)" "with_bias = (b != 0.0) = 1" \
            "\[ok\] kernel scale_f32 (scale.cc) takes what the core program passes" \
            "\[ok\] DMA channels memory tile (each column) MM2S: 3 of 6 (2 x x (split) + 1 x y to the shim)" \
            "\[ok\] RTP fp32 words: 32-bit patterns: s 0xbe000000, b 0x40600000"
"$py" "$design" --dataflow "$scale_df" --bias -0.0 --print-plan >"$tmp/scale.txt" || fail "scale's plan at -0.0 fails a check"
grep -q "with_bias = (b != 0.0) = 0" "$tmp/scale.txt" && grep -q "b = -0.0 (0x80000000)" "$tmp/scale.txt" ||
    fail "scale's plan at --bias -0.0: not with_bias 0 on the bits 0x80000000"
# Hadamard's row is one transform at its tile, its scale word hadamard's only, its kernel found and taking
# rows (variants beside kernels/ of their own), one core row.
refused "has no xclbin for tile 512" --dataflow "$hadamard_df" --tile 512
refused "row length 4096: a hadamard row is one transform of a tile, and no tile of \[64, 128, 256\] is its length" \
    --dataflow "$hadamard_df" --row-len 4096
refused "\[FAIL\] shape: a row transform's row is one chunk (row length = the tile): row length 256, tile 128" \
    --dataflow "$hadamard_df" --tile 128 --row-len 256
refused "--one-b-row: .*has one input (x)" --dataflow "$hadamard_df" --one-b-row
refused "--scale: .*has no fp32 RTP word 's'" --dataflow "$hadamard_df" --scale 2
refused "--hadamard-scale: .*has no fp32 RTP word 'scale'" --dataflow "$scale_df" --hadamard-scale 0.5
refused "--hadamard-scale 1e+39 is past fp32's range" --dataflow "$hadamard_df" --hadamard-scale 1e39
refused "\[FAIL\] kernel fwht_f32: no .cc file of the directory of family hadamard's source 'fwht.cc'" \
    --dataflow "$tmp/hadamard-nokernel/dataflow.json"
refused "\[FAIL\] kernel fwht_f32 (fwht.cc) takes what the core program passes: fwht_f32(.*, float \* y, int32_t n, float scale)" \
    --dataflow "$tmp/hadamard-norows/dataflow.json"
refused "\[FAIL\] array: a row transform's group is one chunk (array.core_rows 1)" --dataflow "$tmp/hadamard-core2.json" --tile 128
if "$py" "$design" --dataflow "$tmp/hadamard-core2.json" --tile 128 --row-len 256 >"$tmp/emit.txt" 2>&1 ||
        ! grep -q "check failed: array: a row transform's group is one chunk" "$tmp/emit.txt"; then
    fail "hadamard over 2 core rows: design.py went on to emit a plan with failed checks"; cat "$tmp/emit.txt"
fi
# Without --row-len or --tile: the largest tile, a row of its length, scale 1 / sqrtf(256) = 1/16.
"$py" "$design" --dataflow "$hadamard_df" --print-plan >"$tmp/hadamard.txt" || fail "hadamard's plan fails a check"
shows "hadamard's plan" "$tmp/hadamard.txt" "runtime sequence for: 64 rows x 256 values, row stride 256, scale = 0.0625 (0x3d800000)$" \
            "fwht_f32 by the contract word, rows = 1, n = 256, scale = f32(word scale) = 0.0625;" \
            "\[ok\] kernel fwht_f32 (fwht.cc) takes what the core program passes: fwht_f32(.*, int32_t rows, int32_t n, float scale)" \
            "\[ok\] array: a row transform's group is one chunk (array.core_rows 1)" \
            "\[ok\] DMA channels memory tile (each column) MM2S: 2 of 6 (1 x x (split) + 1 x y to the shim)"
"$py" "$design" --dataflow "$hadamard_df" --row-len 128 --print-plan >"$tmp/hadamard.txt" &&
    grep -q "runtime sequence for: 64 rows x 128 values, row stride 128, scale = 0.0883883461356163 (0x3db504f3)$" "$tmp/hadamard.txt" ||
    fail "hadamard at --row-len 128: not tile 128 with the scale 1.0f / sqrtf(128) (0x3db504f3)"

# The inputs split over 4 core rows: for add and glu the memory tile's MM2S channels and the upward ports,
# by name; scale's one input fits.
for d in add glu; do
    "$py" "$design" --dataflow "$tmp/$d-split4.json" --tile 256 --print-plan >"$tmp/split4.txt" 2>&1 || true
    shows "$d: split over 4 core rows" "$tmp/split4.txt" "\[FAIL\] DMA channels memory tile (each column) MM2S: 9 of 6" \
                "\[FAIL\] stream-switch ports memory tile -> core row 2 (up): 8 stream(s) of 6 ports"
    # A failing plan is not emitted: design.py names the failed checks.
    if "$py" "$design" --dataflow "$tmp/$d-split4.json" --tile 256 >"$tmp/emit.txt" 2>&1 ||
            ! grep -q "check failed: DMA channels memory tile" "$tmp/emit.txt"; then
        fail "$d: design.py went on to emit a plan with failed checks"; cat "$tmp/emit.txt"
    fi
done
"$py" "$design" --dataflow "$tmp/scale-split4.json" --tile 256 --print-plan >"$tmp/split4.txt" 2>&1 ||
    fail "scale: split over 4 core rows fails a check"
shows "scale: split over 4 core rows" "$tmp/split4.txt" "\[ok\] DMA channels memory tile (each column) MM2S: 5 of 6" \
            "\[ok\] stream-switch ports memory tile -> core row 2 (up): 4 stream(s) of 6 ports"
# glu broadcasts b whole to its 4 core rows and its kernel takes the offset of the core's chunk; split over
# 2 core rows, as it was, the core passes no offset and the kernel check fails.
"$py" "$design" --dataflow "$glu_df" --tile 256 --print-plan >"$tmp/glu.txt" 2>&1 ||
    fail "glu's description: a check fails"
shows "glu's plan" "$tmp/glu.txt" "\[ok\] kernel swiglu_f32 (swiglu.cc) takes what the core program passes: swiglu_f32(.*int32_t n, int32_t g_at); .*offset of the core's chunk in b's object" \
            "\[ok\] DMA channels memory tile (each column) MM2S: 6 of 6 (4 x a (split) + 1 x b (broadcast) + 1 x y to the shim)" \
            "\[ok\] stream-switch ports memory tile -> core row 2 (up): 5 stream(s) of 6 ports"
"$py" "$design" --dataflow "$tmp/glu-split2.json" --tile 256 --print-plan >"$tmp/split2.txt" 2>&1 || true
grep -q "\[FAIL\] kernel swiglu_f32 (swiglu.cc) takes what the core program passes" "$tmp/split2.txt" ||
    fail "glu split over 2 core rows: no failed kernel signature check"
# The last input broadcast whole: add's and scale's kernels take no offset.
for d in add scale; do
    "$py" "$design" --dataflow "$tmp/$d-bcast.json" --tile 256 --print-plan >"$tmp/bcast.txt" 2>&1 || true
    grep -q "\[FAIL\] kernel .* takes what the core program passes: .*the kernel must take the chunk's offset" "$tmp/bcast.txt" ||
        fail "$d: the last input broadcast: no failed kernel signature check"
done
# A plan that passes goes on to the emission, which names what it lacks here.
if ! "$py" -c "import aie.iron" 2>/dev/null; then
    for desc in "$add_df" "$glu_df" "$scale_df" "$hadamard_df" "$row_scale_df"; do
        if "$py" "$design" --dataflow "$desc" --tile 256 >"$tmp/emit.txt" 2>&1; then
            fail "design.py emitted MLIR for $desc without mlir-aie"
        elif ! grep -q "emitting MLIR needs mlir-aie" "$tmp/emit.txt"; then
            fail "a passing plan of $desc did not reach the emission"; cat "$tmp/emit.txt"
        fi
    done
fi

# The IRON program on stand-ins.
cat >"$tmp/iron.py" <<'PYEOF'
import importlib.util, struct, sys, types

root, barrier_py = sys.argv[1], sys.argv[2]
descs = sys.argv[3:]


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# A numpy of types only, so that the kernels' declared argument types can be compared.
fake_np = types.ModuleType("numpy")


class _NdArray:
    def __class_getitem__(cls, item):
        return ("ndarray", tuple(item[0]), item[1])


class _Dtype:
    def __class_getitem__(cls, item):
        return ("dtype", item)


fake_np.ndarray, fake_np.dtype = _NdArray, _Dtype
fake_np.float32, fake_np.int32 = "float32", "int32"
fake_np.zeros = lambda n, dtype=None: ("zeros", n, dtype)
sys.modules["numpy"] = fake_np

cb = load("check_barrier", barrier_py)
cb.install_stand_ins()  # before design.py's emit_mlir imports IRON
design = load("xdna_rows_design", f"{root}/aie/add/design.py")
LINKS, FIFOS, DMAS = [], {}, []


class Fifo:
    def __init__(self, obj_type=None, name=None, depth=None, **kwargs):
        self.name, self.depth = name, depth
        FIFOS[name] = self

    def prod(self, *args, **kwargs):
        return Handle(self, "prod")

    def cons(self, *args, **kwargs):
        return Handle(self, "cons")


class Obj:  # an acquired object
    def __init__(self, handle):
        self.handle = handle


class Handle(cb.FifoHandle):
    def __init__(self, fifo, end):
        self.fifo, self.end = fifo, end

    def acquire(self, n=1):
        cb.record("acquire", self, n)
        return Obj(self)

    def release(self, n=1):
        cb.record("release", self, n)

    def split(self, offsets, obj_types=None, names=None, depths=None, **kwargs):
        LINKS.append(("split", self.fifo.name, list(offsets), list(names), list(depths)))
        return [Fifo(name=x, depth=dp) for x, dp in zip(names, depths)]

    def join(self, offsets, obj_types=None, names=None, depths=None, **kwargs):
        LINKS.append(("join", self.fifo.name, list(offsets), list(names), list(depths)))
        return [Fifo(name=x, depth=dp) for x, dp in zip(names, depths)]

    def forward(self, obj_type=None, depth=None, name=None, **kwargs):
        LINKS.append(("forward", self.fifo.name, None, [name], [depth]))
        return Fifo(name=name, depth=depth)

    def fill(self, tensor, tap=None, **kwargs):
        cb.record("dma", self)
        DMAS.append((self.fifo.name, tap))

    def drain(self, tensor, tap=None, **kwargs):
        cb.record("dma", self)
        DMAS.append((self.fifo.name, tap))


class Tap:
    def __init__(self, shape, offset, sizes, strides):
        self.shape, self.offset, self.sizes, self.strides = shape, offset, list(sizes), list(strides)


class Kernel:
    def __init__(self, name, obj, arg_types):
        self.name, self.arg_types = name, list(arg_types)

    def __call__(self, *args):
        cb.record("call", self, args)


class Word(cb.Anything):  # an RTP word read in the core: which word it is
    def __init__(self, i):
        self.i = i

    def __eq__(self, other):
        return ("word ==", self.i, other)

    __hash__ = object.__hash__


class Buffer(cb.Buffer):
    def __getitem__(self, i):
        cb.record("read", self, i)
        return Word(i)

    def __setitem__(self, i, v):
        cb.record("write", self, (i, v))


class Worker(cb.Worker):
    def __init__(self, core_fn, fn_args=None, *args, tile=None, **kwargs):
        super().__init__(core_fn, fn_args)
        self.tile = tile


def range_(bound, *args, **kwargs):
    cb.record("loop", None, bound)
    yield cb.Anything()  # IRON traces a loop body once
    cb.record("end loop", None, bound)


# mlir's python arith and types, as values that say what they were made of: a bitcast names the word it
# was read from.
def bitcast(ty, value):
    cb.record("bitcast", None, (ty, value.i))
    return (ty, "word", value.i)


def constant(ty, value):
    return ("constant", ty, value)


def cmpf(predicate, lhs, rhs):
    cb.record("cmpf", None, (predicate, lhs, rhs))
    return ("cmpf", predicate, lhs, rhs)


def extui(ty, value):
    cb.record("extui", None, (ty, value))
    return ("extui", ty, value)


iron = sys.modules["aie.iron"]
iron.ObjectFifo, iron.Worker, iron.Kernel, iron.Buffer = Fifo, Worker, Kernel, Buffer
sys.modules["aie.iron.device"].Tile = lambda c, r: (c, r)
sys.modules["aie.helpers.taplib"].TensorAccessPattern = Tap
sys.modules["aie.iron.controlflow"].range_ = range_
for name in ("aie.dialects", "aie.dialects.arith", "aie.ir"):
    sys.modules[name] = cb.StubModule(name)
    sys.modules[name].__path__ = []
arith = sys.modules["aie.dialects.arith"]
arith.bitcast, arith.constant, arith.cmpf, arith.extui = bitcast, constant, cmpf, extui
arith.CmpFPredicate = types.SimpleNamespace(**{p: p.lower() for p in (
    "AlwaysFalse", "OEQ", "OGT", "OGE", "OLT", "OLE", "ONE", "ORD", "UEQ", "UGT", "UGE", "ULT", "ULE", "UNE", "UNO", "AlwaysTrue")})
sys.modules["aie.dialects"].arith = arith
sys.modules["aie.ir"].F32Type = types.SimpleNamespace(get=lambda: "f32")
sys.modules["aie.ir"].IntegerType = types.SimpleNamespace(get_signless=lambda w: f"i{w}")
sys.modules["aie"].dialects, sys.modules["aie"].ir = sys.modules["aie.dialects"], sys.modules["aie.ir"]
errors = []


def parts(total, n):
    sizes = [total // n + (i < total % n) for i in range(n)]
    return [(sum(sizes[:i]), sizes[i]) for i in range(n)]


# Families whose kernel transforms whole rows: (x, y, rows, n, scale), the core passing rows = 1 before n.
# Hadamard's scale word, when not given, is 1.0f / sqrtf(tile), by hand: 1/8, 1/sqrt(128) rounded to fp32,
# 1/16; SCALE's s and b are its identity.
TRANSFORMS = ("hadamard",)
HADAMARD_SCALE_BITS = {64: 0x3E000000, 128: 0x3DB504F3, 256: 0x3D800000}


def default_float(word, tile):
    if word == "scale":
        return struct.unpack("<f", struct.pack("<I", HADAMARD_SCALE_BITS[tile]))[0]
    return {"s": 1.0, "b": 0.0}[word]


def int32_of(v):
    """The int32 with the bits of v as fp32: what an i32 RTP word holding v's bits reads as."""
    return struct.unpack("<i", struct.pack("<f", v))[0]


def runs(t):
    """The words a tap moves, in order, as (first, count) runs, adjacent runs merged."""
    out = []
    (s3, s2, s1, s0), (t3, t2, t1, t0) = t.sizes, t.strides
    if t0 != 1:
        return [("d0 stride", t0)]
    for i3 in range(s3):
        for i2 in range(s2):
            for i1 in range(s1):
                a = t.offset + i3 * t3 + i2 * t2 + i1 * t1
                if out and out[-1][0] + out[-1][1] == a:
                    out[-1][1] += s0
                else:
                    out.append([a, s0])
    return [tuple(r) for r in out]


def merged(rs):
    out = []
    for a, n in rs:
        if out and out[-1][0] + out[-1][1] == a:
            out[-1] = (out[-1][0], out[-1][1] + n)
        else:
            out.append((a, n))
    return out


def check(desc_path, tile, cols, rows, row_len, one_b_row, floats=None, stride=None):
    LINKS.clear(); FIFOS.clear(); DMAS.clear()
    desc = design.load_description(desc_path)
    raw = desc.raw
    fifo = {f["name"]: f for f in raw["layouts"][0]["fifos"]}
    shim = {f["operand"]: f for f in fifo.values() if "shim_channel" in f}
    ops = [o["name"] for o in sorted(raw["operands"], key=lambda o: o["arg"])]
    ins = [o for o in ops if shim[o]["shim_channel"]["direction"] == "mm2s"]
    core = {o: next(f for f in fifo.values() if f.get("source") == shim[o]["name"] or f.get("sink") == shim[o]["name"])
            for o in ops}
    one_b_row = one_b_row and len(ins) == 2
    float_words = raw["core_program"].get("rtp_float_words", [])
    # The words given go to design.py; the others it must fill in with their defaults.
    given = {w: v for w, v in (floats or {}).items() if w in float_words}
    floats = {w: given[w] if w in given else default_float(w, tile) for w in float_words}
    transform = next(k for k in raw["families"] if k != "about") in TRANSFORMS
    stride = stride or row_len
    p = design.make_plan(desc, tile=tile, cols=cols, rows=rows, row_len=row_len, row_stride=stride,
                         one_b_row=one_b_row, floats=given or None)
    label = f"{desc_path.split('/')[-2]}/{desc_path.rsplit('/', 1)[-1]} tile {tile} cols {cols} rows {rows}x{row_len}" + \
            (f" stride {stride}" if stride != row_len else "") + (" one b row" if one_b_row else "") + \
            "".join(f" {w} {v!r}" for w, v in floats.items())
    err = lambda e: errors.append(f"{label}: {e}")
    # A broadcast's plan fails only the kernels' signature check; its program is still built, to see the forward.
    failing = [c[0] for c in p.checks if not c[1] and "takes what the core program passes" not in c[0]]
    if failing:
        err(f"the plan fails {failing}")
        return label
    cb.EVENTS.clear(); cb.PROGRAM.clear()
    design.emit_mlir(desc, p, "stand-in.o")
    prog = cb.PROGRAM[0]
    P, prog_d = raw["array"]["core_rows"], raw["core_program"]
    idx = prog_d["rtp_words"]
    depth = lambda f: raw["depths"][f["depth"]] if isinstance(f["depth"], str) else f["depth"]
    link = {o: core[o].get("link") for o in ops}
    contracts = next(v for k, v in raw["families"].items() if k != "about")
    n_ops = len(ops)

    # The host's grid, written again: R row blocks x S segments, one column each.
    groups = row_len // (P * tile)
    R = min(rows, cols)
    S = 1 if rows >= cols else max(1, min(groups, cols // rows))
    blocks, segs = parts(rows, R), parts(groups, S)
    grid = [(blocks[c // S], segs[c % S]) for c in range(R * S)]

    # FIFOs and links, per column: each input split (or forwarded, a broadcast) to the core rows, y joined.
    core_name = lambda o, c, k: f"{core[o]['name']}_{c}" if link[o] == "broadcast" else f"{core[o]['name']}_{c}_{k}"
    want_links = []
    for c in range(cols):
        offs = [k * tile for k in range(P)]
        for o in ops:
            m, l1 = shim[o]["name"], core[o]["name"]
            if link[o] == "broadcast":
                want_links.append(("forward", f"{m}_{c}", None, [f"{l1}_{c}"], [depth(core[o])]))
            else:
                want_links.append(("split" if o in ins else "join", f"{m}_{c}", offs, [f"{l1}_{c}_{k}" for k in range(P)],
                                   [depth(core[o])] * P))
            if FIFOS[f"{m}_{c}"].depth != depth(shim[o]):
                err(f"{m}_{c} depth {FIFOS[f'{m}_{c}'].depth}, the description's is {depth(shim[o])}")
    if LINKS != want_links:
        err(f"links {LINKS[:3]}..., expected {want_links[:3]}...")
    tensors, shim_ends = prog.rt.arg_types[:n_ops], prog.rt.arg_types[n_ops:]
    if [[h.fifo.name for h in hs] for hs in shim_ends] != [[f"{shim[o]['name']}_{c}" for c in range(cols)] for o in ops]:
        err(f"shim ends {[[h.fifo.name for h in hs] for hs in shim_ends]}")
    if [[h.end for h in hs] for hs in shim_ends] != [["prod" if o in ins else "cons"] * cols for o in ops]:
        err(f"the shim produces {', '.join(ins)} and consumes the output")
    want_len = [row_len if one_b_row and o == ins[1] else (rows - 1) * stride + row_len for o in ops]
    if [t[1] for t in tensors] != [(n,) for n in want_len]:
        err(f"runtime sequence tensors {[t[1] for t in tensors]}, expected {want_len}")

    # Workers: one per core of the first core_rows rows, its FIFO ends, its kernels, its calls, its barrier.
    if [w.tile for w in prog.workers] != [(c, raw["array"]["first_core_row"] + k) for c in range(cols) for k in range(P)]:
        err(f"workers on {[w.tile for w in prog.workers]}")
    chunk_t = lambda n: ("ndarray", (n * tile,), ("dtype", "float32"))
    bcast = [o for o in ins if link[o] == "broadcast"]
    want_types = [chunk_t(core[o]["object"]["count"]) for o in ops] + ["int32"] * (transform + 1 + len(bcast)) + \
        ["float32"] * len(float_words) + (["int32"] if "b" in float_words else [])
    seq = [e for e in cb.EVENTS if e[0] == "sequence"]
    first_dma = next((i for i, e in enumerate(seq) if e[1] == "dma"), len(seq))
    for i, w in enumerate(prog.workers):
        c, k = divmod(i, P)
        ends, (rtp, bar), ks = w.fn_args[:n_ops], w.fn_args[n_ops:n_ops + 2], w.fn_args[n_ops + 2:]
        want_ends = [(core_name(o, c, k), "cons" if o in ins else "prod") for o in ops]
        if [(h.fifo.name, h.end) for h in ends] != want_ends:
            err(f"core {w.tile}: FIFO ends {[(h.fifo.name, h.end) for h in ends]}, expected {want_ends}")
        if [(x.name, x.arg_types) for x in ks] != [(s, want_types) for s in contracts]:
            err(f"core {w.tile}: kernels {[(x.name, x.arg_types) for x in ks]}, expected {contracts} of {want_types}")
        ev = [e for e in cb.EVENTS if e[0] == f"core {i}"]
        # Before the release: the wait, a read of every word, each fp32 word bitcast to f32 after its read,
        # and b's une compare with 0.0 extended to i32.
        rel = next((j for j, e in enumerate(ev) if e[1] == "release" and e[2] is bar), len(ev))
        head = ev[:rel]
        reads = {e[3]: j for j, e in enumerate(head) if e[1] == "read" and e[2] is rtp}
        casts = {e[3][1]: j for j, e in enumerate(head) if e[1] == "bitcast"}
        f32_of = lambda word: ("f32", "word", idx[word])
        with_bias = ("extui", "i32", ("cmpf", "une", f32_of("b"), ("constant", "f32", 0.0))) if "b" in float_words else None
        want_head = ["wait"] + ["read"] * len(idx) + ["bitcast"] * len(float_words) + \
            (["cmpf", "extui"] if "b" in float_words else [])
        if [e[1] for e in head] != want_head or head[0][2] is not bar or head[0][3] != prog_d["barrier"]["acquire"]["value"]:
            err(f"core {w.tile}: before the barrier's release {[e[1] for e in head]}, expected {want_head}")
        if sorted(reads) != sorted(idx.values()):
            err(f"core {w.tile}: reads RTP words {sorted(reads)}, the description has {sorted(idx.values())}")
        if sorted(casts) != sorted(idx[x] for x in float_words) or any(casts[idx[x]] < reads.get(idx[x], 1 << 30) for x in float_words) or \
                any(e[3][0] != "f32" for e in head if e[1] == "bitcast"):
            err(f"core {w.tile}: bitcasts to f32 of words {sorted(casts)}, the fp32 words are {[idx[x] for x in float_words]}")
        if rel == len(ev) or ev[rel][3] != prog_d["barrier"]["release"]["value"]:
            err(f"core {w.tile}: no release of the barrier with the description's value")
        # After it: a loop over the chunks word: acquire every end, one call per contract, release every end.
        body = [(e[1], e[2], e[3]) for e in ev[rel + 1:]]
        names = [h.fifo.name for h in ends]
        want_args = [core_name(o, c, k) for o in ops] + [1] * transform + [tile] + [k * tile] * len(bcast) + \
            [f32_of(x) for x in float_words] + ([with_bias] if "b" in float_words else [])
        got = [("loop", v.i if isinstance(v, Word) else v) if kd == "loop" else ("end loop",) if kd == "end loop" else
               (kd, o.fifo.name) if kd in ("acquire", "release") else
               (kd, o.name, [x.handle.fifo.name if isinstance(x, Obj) else x for x in v]) if kd == "call" else (kd,)
               for kd, o, v in body]
        want = [("loop", idx["chunks"])] + [("acquire", n) for n in names] + \
            [("call", s, want_args) for s in contracts] + [("release", n) for n in names] + [("end loop",)]
        if got != want:
            diff = next((j for j, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            err(f"core {w.tile}: program differs at event {diff}: {got[diff:diff + 2]}, expected {want[diff:diff + 2]}")
        # The sequence: this core's words (chunks: the host's count; s and b: the int32 of their fp32
        # bits), then its set, before any DMA; none for a column without work.
        writes = [(j, e[3]) for j, e in enumerate(seq) if e[1] == "write" and e[2] is rtp]
        sets = [j for j, e in enumerate(seq) if e[1] == "set" and e[2] is bar]
        if c >= len(grid):
            if writes or sets:
                err(f"core {w.tile}: a column without work gets RTP words or a set")
            continue
        (_, n), (_, g) = grid[c]
        want_words = {idx["contract"]: 0, idx["chunks"]: n * g, idx["version"]: prog_d["rtp_layout_version"]}
        want_words.update({idx[x]: int32_of(v) for x, v in floats.items()})
        got_words = dict(v for _, v in writes)
        if got_words != want_words or len(writes) != len(idx) or \
                not all(isinstance(v, int) and -(1 << 31) <= v < 1 << 31 for v in got_words.values()):
            err(f"core {w.tile}: RTP words {got_words}, expected the int32 words {want_words}")
        if any((got_words.get(idx[x], 0) & 0xFFFFFFFF) != struct.unpack("<I", struct.pack("<f", v))[0] for x, v in floats.items()):
            err(f"core {w.tile}: the fp32 words' bits are not those of {floats}")
        if len(sets) != 1 or seq[sets[0]][3] != prog_d["barrier"]["set_value"] or sets[0] < max(j for j, _ in writes) or sets[0] > first_dma:
            err(f"core {w.tile}: the barrier is not set once, after the words and before the first DMA")

    # Fills and drains: each column's rows of its segment, once, in order, in steps of at most the host's
    # rows per step (as runs of the host's d0: the tile, halved while past the wrap; one contiguous run
    # where the segment has more runs than d1 wraps); a one-row b's segment read again per row, in fills
    # of at most iteration_max rows.
    per_step = min(256, raw["limits"]["repeat_max"] + 1)
    wrap, iters = raw["limits"]["wrap_max"], raw["limits"]["iteration_max"]
    d0 = tile
    while d0 > wrap and d0 % 2 == 0:  # rows_bd's d0
        d0 //= 2
    moved = {o: [] for o in ops}
    for c in range(cols):
        for o in ops:
            name = shim[o]["name"]
            taps = [t for f, t in DMAS if f == f"{name}_{c}"]
            if c >= len(grid):
                if taps:
                    err(f"column {c}: {name} moves data, the column has no work")
                continue
            (first, n), (g0, g) = grid[c]
            v0, seg = g0 * P * tile, g * P * tile
            chunked = d0 <= wrap and seg // d0 <= wrap
            for t in taps:
                rows_in = t.sizes[1] if chunked else t.sizes[3] // seg
                shape_ok = (t.sizes[2:] == [seg // d0, d0] and t.strides[2:] == [d0, 1]) if chunked else \
                    (t.sizes[1:3] == [1, 1] and t.strides == [0, 0, 0, 1] and t.sizes[3] % seg == 0)
                once = one_b_row and o == ins[1]
                if not shape_ok or (once and (t.sizes[0] > iters or t.offset != v0 or t.strides[0] != 0)) or \
                        (not once and (t.sizes[0] != 1 or rows_in > per_step)):
                    err(f"column {c}: {name} tap offset {t.offset} sizes {t.sizes} strides {t.strides}")
            got = [r for t in taps for r in runs(t)]
            if one_b_row and o == ins[1]:
                want = [(v0, seg)] * n
            else:
                got = merged(got)
                want = merged([(r * stride + v0, seg) for r in range(first, first + n)])
                moved[o] += got  # a one-row b is read per row: not a cover of its one row
            if got != want:
                err(f"column {c}: {name} moves {got[:3]}..., expected {want[:3]}... (rows {first}..{first + n - 1})")
    for o, rs in moved.items():
        if not (one_b_row and o == ins[1]) and merged(sorted(rs)) != merged([(r * stride, row_len) for r in range(rows)]):
            err(f"{o}: the columns' runs do not cover its {rows} rows once")
    return label


done = []
for desc_path in descs:
    if next(k for k in design.load_description(desc_path).raw["families"] if k != "about") in TRANSFORMS:
        # A row is one transform at its tile: every tile; 2100 rows (two steps in column 0), 32 rows with
        # the scale given (its sign bit set), 8 rows 384 apart and 600 rows 300 apart (strided steps), one row.
        for tile, cols, rows, stride, floats in ((64, 8, 2100, None, None), (128, 8, 32, None, {"scale": -0.25}),
                                                 (128, 3, 8, 384, None), (256, 8, 600, 300, None), (256, 1, 1, None, None)):
            done.append(check(desc_path, tile, cols, rows, tile, False, floats=floats, stride=stride))
        continue
    scale = "rtp_float_words" in design.load_description(desc_path).raw["core_program"]
    P = design.load_description(desc_path).parts
    shapes = ((512, 8, 64, 4096, False), (128, 3, 1000, 4096, False), (256, 8, 5, 2048, True), (128, 1, 300, 512, True),
              (512, 8, 1, 14336, False), (256, 8, 3, 7168, True), (128, 3, 600, 256, False), (512, 8, 2, 2048, False))
    # Rows in whole groups of the description's core rows (a variant over 4 core rows has groups of 4 chunks).
    for shape in (sh for sh in shapes if sh[3] % (P * sh[0]) == 0):
        done.append(check(desc_path, *shape, floats={"s": -0.125, "b": 3.5}))
    done.append(check(desc_path, 256, 3, 7, 2048, True, stride=2500))  # rows not back to back, several per step
    if scale and P == 2:
        # Its largest tile (runs of 512: contiguous rows, strided ones, and one run where a segment's runs
        # pass d1's wrap), and the bias that is no bias (-0.0: with_bias 0, the word's sign bit set) or the
        # defaults (s = 1, b = 0).
        done.append(check(desc_path, 1024, 8, 64, 4096, False, floats={"s": -0.125, "b": 3.5}))
        done.append(check(desc_path, 1024, 3, 5, 2048, False, floats={"b": -0.0}))
        done.append(check(desc_path, 1024, 8, 1, 14336, False))
        done.append(check(desc_path, 1024, 1, 300, 2048, False, floats={"s": 2.0 ** -130, "b": float("-inf")}))
        done.append(check(desc_path, 1024, 8, 10, 2048, False, stride=3000))
        done.append(check(desc_path, 1024, 3, 600, 4096, False, stride=5000))
        done.append(check(desc_path, 1024, 8, 16, 524288, False))
for e in errors[:20]:
    print(f"  {e}")
print(f"IRON program on stand-ins: {len(done)} programs of {len(descs)} descriptions " +
      (f"FAILED ({len(errors)} error(s))" if errors else "as the descriptions say"))
sys.exit(1 if errors else 0)
PYEOF
"$py" "$tmp/iron.py" "$root" "$root/tests/aie/check_barrier.py" "$add_df" "$glu_df" "$scale_df" "$hadamard_df" \
    "$tmp/add-bcast.json" "$tmp/scale-split4.json" || fail "the IRON program"

# row_scale: its plans against a recomputation of their own, the host's test's numbers and variants failing
# by name; its IRON program on the stand-ins, replayed value by value.
mkdir -p "$tmp/row_scale"
"$py" "$root/tests/aie/row_scale_plan_verify.py" "$root" "$tmp/row_scale" || fail "row_scale: a plan and its recomputation disagree"
"$py" "$root/tests/aie/row_scale_iron_check.py" "$root" "$root/tests/aie/check_barrier.py" || fail "row_scale: the IRON program"
# The plan as printed: a broadcast is one memory-tile MM2S channel and one upward stream; w is 4-byte objects.
"$py" "$design" --dataflow "$row_scale_df" --print-plan >"$tmp/row_scale.txt" || fail "row_scale's plan fails a check"
shows "row_scale's plan" "$tmp/row_scale.txt" "\[ok\] DMA channels memory tile (each column) MM2S: 4 of 6 (2 x x (split) + 1 x w (broadcast) + 1 x y to the shim)" \
            "\[ok\] DMA channels core (each) S2MM: 2 of 2 (x, w)" \
            "\[ok\] stream-switch ports memory tile -> core row 2 (up): 3 stream(s) of 6 ports" \
            "v_l2l1_<c> (2 x 1 value of 4 B) *8 B" "v_l3l2_<c> (2 x 1 value of 4 B) *8 B" \
            "per row (RTP rows), core row k: acquire w, read its value; the row's chunks; release w" \
            "row_scale_f32 by the contract word, n = 1024, w = the value of w's object; release x, y" \
            "w fill, per column per step: one value per row: sizes \[1, 8, 1, 1\] strides \[0, 1, 1, 1\], one contiguous run"

# What the descriptions in the tree get: their failing checks, named (a plan is not emitted while any fails).
for desc in "$add_df" "$glu_df" "$scale_df" "$hadamard_df" "$row_scale_df"; do
    echo "${desc#"$root"/}, tile 256, 8 columns:"
    "$py" "$design" --dataflow "$desc" --tile 256 --print-plan >"$tmp/tree.txt" || true
    grep '^  \[FAIL\]' "$tmp/tree.txt" || echo "  every check passes ($(grep -c '^  \[ok\]' "$tmp/tree.txt") checks)"
done

if [ "$failures" -ne 0 ]; then
    echo "check_design_add: $failures failure(s)"
    exit 1
fi
echo "check_design_add: all checks passed"
