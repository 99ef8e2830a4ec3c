#!/usr/bin/env bash
# Checks the rows designs' IRON script (aie/add/design.py, for aie/add/dataflow.json and
# aie/glu/dataflow.json) without mlir-aie, Peano or an NPU:
#   - design.py compiles and answers --help, --list-tiles (every tile the description has) and
#     --list-contracts (each contract's kernel file) with a bare Python, for both descriptions;
#   - for every tile of both descriptions, columns 1, 3 and 8, a one-row b, and shapes of one long row,
#     few rows and many rows (steps of the host's rows per step), --print-plan's budgets, schedule and
#     traffic agree with a recomputation made here from the description, the AIE2P limits (64 KB core
#     data memory, 512 KB memory tile, DMA channels 2 + 2 per core, 6 + 6 per memory tile, 2 + 2 per shim,
#     stream-switch ports 6 up and 4 down between rows) and the host's rule
#     (src/runtime/rows-sequence.cpp: R row blocks x S segments, one column each; steps of at most
#     min(kRowsPerStep, repeat_max + 1) rows), and each of its checks passes or fails exactly when the
#     recomputation says it must; every value goes to exactly one core and is read and written once; a
#     few shapes are also held to the numbers the host's own tests expect (tests/kernels/test_add_stream.cpp);
#   - what the design cannot take is refused with the reason: a tile not in the description, 0 or 9
#     columns, a row not in whole groups (or of no tile's groups), a stride short of the row or past the
#     shim's stride field, a link the program does not build, objects that are not a group per core row;
#   - descriptions changed the ways the design has been discussed: a and b split over 4 core rows
#     (core_rows 4, groups of 4: the memory tile's 6 MM2S channels and the 6 upward ports cannot feed it;
#     it must fail those checks by name) and b broadcast whole (the kernels take no offset: it must fail
#     the kernels' signature check); a plan that passes is handed on to the MLIR emission;
#   - the IRON program design.py builds for both descriptions, run on stand-ins of IRON's classes
#     (tests/aie/check_barrier.py): the FIFOs and their split / join, one worker per core with its FIFO
#     ends, the kernel calls with n = tile, the runtime-parameter barrier (wait, read, release, before the
#     first acquire; the sequence's words, then its set, before the first DMA), RTP chunk counts as the
#     host's, and fills and drains covering each column's rows and segment once.
# The descriptions are read, never changed: variants are written to a temporary directory, removed on exit.
set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
root=$(cd "$root" && pwd)
py=${PYTHON:-python3}
export PYTHONDONTWRITEBYTECODE=1  # the in-process runs import design.py and check_barrier.py: no __pycache__ in the tree
design=$root/aie/add/design.py
add_df=$root/aie/add/dataflow.json
glu_df=$root/aie/glu/dataflow.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Compile without writing a .pyc into the source tree.
"$py" -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$design" ||
    fail "design.py does not compile"
"$py" "$design" --help >/dev/null || fail "design.py --help"
contracts() {  # contracts <description> <expected lines...>
    local desc=$1; shift
    "$py" "$design" --dataflow "$desc" --list-contracts >"$tmp/contracts.txt" || fail "--list-contracts $desc"
    for want in "$@"; do
        grep -qx "$want" "$tmp/contracts.txt" || { fail "--list-contracts of $desc: no '$want'"; cat "$tmp/contracts.txt"; }
    done
}
contracts "$add_df" "add_f32 add.cc" "mul_f32 mul.cc"
contracts "$glu_df" "swiglu_f32 swiglu.cc"
# Every tile the description has (the numeric keys of each family's kernel_stack).
for desc in "$add_df" "$glu_df"; do
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

# Variants of each description, from the real one (so every other number stays its own):
#   <d>-split4:  a and b split over 4 core rows (core_rows 4, groups of 4 chunks), y joined from 4;
#   <d>-bcast:   b broadcast whole to the 2 core rows (core object = the group);
#   <d>-forward: b handed on by a forward (refused when read);
#   <d>-group4:  groups of 4 chunks over core_rows 2 (refused when read).
"$py" - "$add_df" "$glu_df" "$tmp" <<'PYEOF'
import copy, json, os, sys

*descs, out = sys.argv[1:]
for path in descs:
    base = json.load(open(path))
    name = os.path.basename(os.path.dirname(path))

    def variant(kind, core_rows=None, group=None, b_link=None, b_count=None):
        d = copy.deepcopy(base)
        if core_rows is not None:
            d["array"]["core_rows"] = core_rows
        for f in d["layouts"][0]["fifos"]:
            if group is not None and f["name"] in ("a_l3l2", "b_l3l2", "y_l2l3"):
                f["object"]["count"] = group
            if f["name"] == "b_l2l1" and b_link is not None:
                f["link"] = b_link
                f["object"]["count"] = b_count
        json.dump(d, open(f"{out}/{name}-{kind}.json", "w"), indent=1)

    variant("split4", core_rows=4, group=4)
    variant("bcast", b_link="broadcast", b_count=base["array"]["core_rows"])
    variant("forward", b_link="forward", b_count=1)
    variant("group4", group=4)
PYEOF

# The plans, made in one process through design.py's command line (main), and their recomputation.
cat >"$tmp/plans.py" <<'PYEOF'
import contextlib, importlib.util, io, json, os, re, sys

root, tmp = sys.argv[1:3]
spec = importlib.util.spec_from_file_location("xdna_rows_design", f"{root}/aie/add/design.py")
design = importlib.util.module_from_spec(spec)
spec.loader.exec_module(design)

CORE, MEMTILE = 65536, 524288
CORE_IN, CORE_OUT, MT_IN, MT_OUT, SHIM_IN, SHIM_OUT = 2, 2, 6, 6, 2, 2
UP, DOWN = 6, 4
errors, lines = [], []


def run(desc_path, args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = design.main(["--dataflow", desc_path, "--print-plan", "--format", "json"] + args)
    return rc, out.getvalue(), err.getvalue()


# Kernels: parameters, lanes and loop hint, read here from the sources with expressions of our own.
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
            found[m.group(1)] = (name, len(m.group(2).split(",")), lanes, int(hint.group(1)) if hint else 0)
    return fam, [(sym, *found[sym]) for sym in d["families"][fam]]


def parts(total, n):
    """n sizes differing by at most one, the first ones larger, and where each starts."""
    sizes = [total // n + (i < total % n) for i in range(n)]
    return [(sum(sizes[:i]), sizes[i]) for i in range(n)]


def host_grid(rows, groups, columns):
    # src/runtime/rows-sequence.cpp, written again: R = min(rows, columns); S = 1 when rows >= columns,
    # else max(1, min(groups, columns // rows)); column c: row block c // S, segment c % S.
    if rows >= columns:
        R, S = columns, 1
    else:
        R, S = rows, max(1, min(groups, columns // rows))
    blocks, segs = parts(rows, R), parts(groups, S)
    return [(blocks[c // S], segs[c % S]) for c in range(R * S)]


def verify(desc_path, rows, row_len, cols, tile=None, one_b_row=False, stride=None, expect=None):
    d = json.load(open(desc_path))
    args = ["--rows", str(rows), "--row-len", str(row_len), "--cols", str(cols)]
    args += ["--tile", str(tile)] if tile else []
    args += ["--one-b-row"] if one_b_row else []
    args += ["--row-stride", str(stride)] if stride else []
    label = f"{os.path.basename(os.path.dirname(desc_path)) if desc_path.endswith('/dataflow.json') else os.path.basename(desc_path)}" \
            f" {' '.join(args)}"
    err = lambda e: errors.append(f"{label}: {e}")
    rc, out, stderr = run(desc_path, args)
    if rc > 1:
        err(f"--print-plan exited {rc}: {stderr.strip()}")
        return
    plan = json.loads(out)
    fifos = {f["name"]: f for f in d["layouts"][0]["fifos"]}
    depth = lambda f: d["depths"][f["depth"]] if isinstance(f["depth"], str) else f["depth"]
    P = d["array"]["core_rows"]
    fam, kernels = kernels_of(d)
    want_tile = tile or max(int(t) for t in d["core_budget"]["kernel_stack"][fam] if t.isdigit() and row_len % (P * int(t)) == 0)
    if plan["tile"] != want_tile:
        err(f"tile {plan['tile']}, the host's pick is {want_tile}")
    tile = plan["tile"]
    chunk = d["units"]["chunk"] * tile
    b_link = fifos["b_l2l1"]["link"]
    stride = stride or row_len

    want_fail = set()
    core = sum(depth(fifos[n]) * fifos[n]["object"]["count"] * chunk for n in ("a_l2l1", "b_l2l1", "y_l1l2"))
    core += 4 * d["core_program"]["rtp_word_count"] + d["core_budget"]["kernel_stack"][fam][str(tile)]
    core += d["core_budget"]["kernel_data_bytes"]
    mem = sum(depth(fifos[n]) * fifos[n]["object"]["count"] * chunk for n in ("a_l3l2", "b_l3l2", "y_l2l3"))
    mt_out = P + (P if b_link == "split" else 1) + 1
    mt_in = 2 + P
    up = P + (P if b_link == "split" else 1)
    if core > CORE: want_fail.add("core data memory")
    if mem > MEMTILE: want_fail.add("memory tile")
    if mt_out > MT_OUT: want_fail.add("DMA channels memory tile (each column) MM2S")
    if mt_in > MT_IN: want_fail.add("DMA channels memory tile (each column) S2MM")
    r0 = d["array"]["first_core_row"]
    for k in range(P):  # the boundary below core row k carries the split parts of rows k.. and each broadcast
        up_k = (P - k) + ((P - k) if b_link == "split" else 1)
        if up_k > UP:
            want_fail.add(f"stream-switch ports memory tile -> core row {r0} (up)" if k == 0 else
                          f"stream-switch ports core row {r0 + k - 1} -> {r0 + k} (up)")
        if P - k > DOWN:
            want_fail.add(f"stream-switch ports core row {r0 + k} -> " + ("memory tile" if k == 0 else str(r0 + k - 1)))
    for sym, source, n_params, lanes, hint in kernels:
        if n_params != 4 + (b_link == "broadcast"):
            want_fail.add(f"kernel {sym} ({source}) takes")
        if tile % lanes:
            want_fail.add(f"kernel {sym} ({source}) tile in whole vectors")
        if tile // lanes < hint:
            want_fail.add(f"kernel {sym} ({source}) loop")
    whole = row_len % (P * tile) == 0
    if not whole: want_fail.add("shape: a row in whole groups")
    if stride < row_len: want_fail.add("shape: row stride covers the row")
    if stride > d["limits"]["stride_max"]:
        want_fail.add("shape: row stride within")
        want_fail.update((op, ": strides") for op in ("a fill", "b fill", "y drain") if not (op == "b fill" and one_b_row))

    if plan["core_bytes"]["total"] != core:
        err(f"core data memory: plan {plan['core_bytes']['total']}, recomputed {core}")
    if plan["memtile_bytes"]["total"] != mem:
        err(f"memory tile: plan {plan['memtile_bytes']['total']}, recomputed {mem}")
    ch = plan["channels"]
    got = (ch["core (each)"]["S2MM"]["used"], ch["core (each)"]["MM2S"]["used"],
           ch["memory tile (each column)"]["S2MM"]["used"], ch["memory tile (each column)"]["MM2S"]["used"],
           ch["shim (each column)"]["MM2S"]["used"], ch["shim (each column)"]["S2MM"]["used"])
    if got != (2, 1, mt_in, mt_out, 2, 1):
        err(f"channels core in/out, memtile in/out, shim out/in {got}, recomputed {(2, 1, mt_in, mt_out, 2, 1)}")
    avail = (ch["core (each)"]["S2MM"]["available"], ch["memory tile (each column)"]["MM2S"]["available"],
             ch["memory tile (each column)"]["S2MM"]["available"], ch["shim (each column)"]["MM2S"]["available"])
    if avail != (CORE_IN, MT_OUT, MT_IN, SHIM_OUT):
        err(f"channel limits {avail}, the hardware has {(CORE_IN, MT_OUT, MT_IN, SHIM_OUT)}")
    first_up = plan["streams"][f"memory tile -> core row {r0} (up)"]
    if (first_up["used"], first_up["available"]) != (up, UP):
        err(f"upward streams into the first core row {first_up}, recomputed {up} of {UP}")

    # The plan's failed checks are exactly the ones recomputed here.
    failed = [c["check"] for c in plan["checks"] if not c["ok"]]
    matched = set()
    for f in failed:
        hit = [w for w in want_fail if (f.startswith(w[0]) and f.endswith(w[1]) if isinstance(w, tuple) else f.startswith(w))]
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

    s = plan["schedule"]
    if whole:
        # The grid, the per-core chunk counts (RTP "chunks"), the steps: the host's rule.
        groups = row_len // (P * tile)
        grid = host_grid(rows, groups, cols)
        got_grid = [(tuple(b), tuple(g)) for b, g in s[design.GRID]]
        if got_grid != grid:
            err(f"grid {got_grid}, the host's {grid}")
        calls = [n * g for (_, n), (_, g) in grid] + [0] * (cols - len(grid))
        if s["chunks per core of column c (RTP chunks)"] != calls:
            err(f"chunks per core {s['chunks per core of column c (RTP chunks)']}, the host's {calls}")
        if s["columns used"] != len(grid) or s["kernel calls on the busiest core"] != max(calls):
            err(f"columns used {s['columns used']}, busiest core {s['kernel calls on the busiest core']}: "
                f"the host's {len(grid)}, {max(calls)}")
        per_step = min(256, d["limits"]["repeat_max"] + 1)
        steps = -(-grid[0][0][1] // per_step)
        if (s["rows per step (at most)"], s["steps"]) != (per_step, steps):
            err(f"rows per step {s['rows per step (at most)']}, steps {s['steps']}: the host's {per_step}, {steps}")
        # Every value of a, b and y to exactly one core, once: each row's segments tile the row.
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
        want_t = (4 * rows * row_len,) * 3 + (8 * rows * row_len, 4 * rows * row_len)
        got_t = (t["a read (bytes)"], t["b read (bytes)"], t["y written (bytes)"], t["read (bytes)"], t["written (bytes)"])
        if got_t != want_t:
            err(f"traffic {got_t}: a, b and y are not moved once ({want_t})")
        n0, seg0 = min(per_step, grid[0][0][1]), grid[0][1][1] * P
        for x in plan["transfers"]:
            one = x["what"].startswith("b") and one_b_row
            want_x = ([1, 1, seg0, tile], [0, 0, tile, 1], n0 - 1) if one else ([1, n0, seg0, tile], [0, stride, tile, 1], 0)
            if (x["sizes"], x["strides"], x["repeat"]) != want_x:
                err(f"{x['what']}: sizes {x['sizes']} strides {x['strides']} repeat {x['repeat']}, the host's {want_x}")
        if plan["tensors"]["b (arg 1)"] != (row_len if one_b_row else (rows - 1) * stride + row_len):
            err(f"tensor b of {plan['tensors']['b (arg 1)']} values")
    # What the host's own tests expect of the same shape (tests/kernels/test_add_stream.cpp).
    for k, v in (expect or {}).items():
        got_v = plan["tile"] if k == "tile" else plan["traffic"][k] if k in plan["traffic"] else s[k]
        if got_v != v:
            err(f"{k}: {got_v}, the host's tests expect {v}")

    lines.append(f"{label}: tile {tile}, core {core} B, memtile {mem} B, memtile MM2S {mt_out}/{MT_OUT}, up {up}/{UP}, "
                 f"{s['columns used']} column(s) used, {len(failed)} check(s) failing as recomputed")


add, glu = f"{root}/aie/add/dataflow.json", f"{root}/aie/glu/dataflow.json"
real = [add, glu]
variants = [f"{tmp}/{n}-{v}.json" for n in ("add", "glu") for v in ("split4", "bcast")]
for desc_path in real + variants:
    d = json.load(open(desc_path))
    fam = next(k for k in d["families"] if k != "about")
    P = d["array"]["core_rows"]
    for tile in sorted(int(t) for t in d["core_budget"]["kernel_stack"][fam] if t.isdigit()):
        for cols in (1, 3, 8):
            verify(desc_path, 64, 4 * P * tile, cols, tile)
            verify(desc_path, 1, 7 * P * tile, cols, tile)          # one long row over the columns
            verify(desc_path, 3, 7 * P * tile, cols, tile, one_b_row=True)  # fewer rows than columns, one b row
        verify(desc_path, 5, 2 * P * tile, 8, tile, one_b_row=True)
        verify(desc_path, 600, P * tile, 1, tile)                 # one column, steps of the host's rows per step
    if desc_path in real:
        # The runtime's tile for a row (the largest whose group divides it); long blocks, a wider stride.
        verify(desc_path, 1000, 4096, 3)
        verify(desc_path, 700, 3072, 2, one_b_row=True)
        verify(desc_path, 10, 2048, 8, stride=3000)
        verify(desc_path, 2, 1536, 3, tile=512)                   # not whole groups: fails its shape check
        verify(desc_path, 4, 1024, 8, stride=1000)               # stride short of the row
        verify(desc_path, 4, 1024, 8, stride=2000000)            # stride past the shim's field
# The host's own tests' numbers (tests/kernels/test_add_stream.cpp, test_swiglu.cpp's shapes).
verify(add, 1, 14336, 8, expect={"tile": 512, "columns used": 8, "kernel calls on the busiest core": 2})
verify(add, 3, 14336, 8, expect={"columns used": 6, "kernel calls on the busiest core": 7})
verify(add, 1, 4096, 8, expect={"columns used": 4, "kernel calls on the busiest core": 1,
                                "read (bytes)": 2 * 16384, "written (bytes)": 16384})
verify(add, 512, 4096, 8, one_b_row=True, expect={"columns used": 8, "kernel calls on the busiest core": 256,
                                                  "read (bytes)": 2 * 512 * 16384})
verify(glu, 1, 14336, 8, expect={"tile": 512, "columns used": 8, "kernel calls on the busiest core": 2})
verify(glu, 37, 1536, 8, expect={"tile": 256, "columns used": 8, "kernel calls on the busiest core": 15})

for e in errors:
    print(f"  {e}")
print(f"plans: {len(lines)} recomputed ({len(errors)} disagreement(s)); e.g.")
for line in lines[:2] + [l for l in lines if "split4" in l][:1] + [l for l in lines if "bcast" in l][:1] + lines[-2:]:
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
refused "npu2 has 1..8 columns" --cols 9
refused "npu2 has 1..8 columns" --cols 0
refused "npu2 has 1..8 columns" --dataflow "$glu_df" --cols 9
refused "no tile of" --row-len 96
refused "no tile of" --dataflow "$glu_df" --row-len 96
refused "\[FAIL\] shape: a row in whole groups" --tile 512 --row-len 1536
refused "\[FAIL\] shape: a row in whole groups" --dataflow "$glu_df" --tile 256 --row-len 768
refused "\[FAIL\] shape: row stride covers the row" --tile 128 --row-len 1024 --row-stride 1000
refused "\[FAIL\] shape: row stride within the shim's stride" --dataflow "$glu_df" --row-stride 2000000
refused "is linked by 'forward'" --dataflow "$tmp/add-forward.json"
refused "is linked by 'forward'" --dataflow "$tmp/glu-forward.json"
refused "a split over array.core_rows = 2 core rows" --dataflow "$tmp/add-group4.json"

# a and b split over 4 core rows: the memory tile's MM2S channels and the upward ports, by name.
for d in add glu; do
    "$py" "$design" --dataflow "$tmp/$d-split4.json" --tile 256 --print-plan >"$tmp/split4.txt" 2>&1 || true
    for want in "\[FAIL\] DMA channels memory tile (each column) MM2S: 9 of 6" \
                "\[FAIL\] stream-switch ports memory tile -> core row 2 (up): 8 stream(s) of 6 ports"; do
        grep -q "$want" "$tmp/split4.txt" || fail "$d: split over 4 core rows: no '$want'"
    done
    # b broadcast whole: the kernels take no offset.
    "$py" "$design" --dataflow "$tmp/$d-bcast.json" --tile 256 --print-plan >"$tmp/bcast.txt" 2>&1 || true
    grep -q "\[FAIL\] kernel .* takes what the core program passes: .*the kernel must take the chunk's offset" "$tmp/bcast.txt" ||
        fail "$d: b broadcast: no failed kernel signature check"
    # A failing plan is not emitted: design.py names the failed checks.
    if "$py" "$design" --dataflow "$tmp/$d-split4.json" --tile 256 >"$tmp/emit.txt" 2>&1 ||
            ! grep -q "check failed: DMA channels memory tile" "$tmp/emit.txt"; then
        fail "$d: design.py went on to emit a plan with failed checks"; cat "$tmp/emit.txt"
    fi
done
# A plan that passes goes on to the emission, which names what it lacks here.
if ! "$py" -c "import aie.iron" 2>/dev/null; then
    for desc in "$add_df" "$glu_df"; do
        if "$py" "$design" --dataflow "$desc" --tile 256 >"$tmp/emit.txt" 2>&1; then
            fail "design.py emitted MLIR for $desc without mlir-aie"
        elif ! grep -q "emitting MLIR needs mlir-aie" "$tmp/emit.txt"; then
            fail "a passing plan of $desc did not reach the emission"; cat "$tmp/emit.txt"
        fi
    done
fi

# The IRON program on stand-ins.
cat >"$tmp/iron.py" <<'PYEOF'
import importlib.util, sys

root, barrier_py = sys.argv[1], sys.argv[2]
descs = sys.argv[3:]


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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
        self.name, self.n_args = name, len(arg_types)

    def __call__(self, *args):
        cb.record("call", self, args)


class Buffer(cb.Buffer):
    def __setitem__(self, i, v):
        cb.record("write", self, (i, v))


class Worker(cb.Worker):
    def __init__(self, core_fn, fn_args=None, *args, tile=None, **kwargs):
        super().__init__(core_fn, fn_args)
        self.tile = tile


iron = sys.modules["aie.iron"]
iron.ObjectFifo, iron.Worker, iron.Kernel, iron.Buffer = Fifo, Worker, Kernel, Buffer
sys.modules["aie.iron.device"].Tile = lambda c, r: (c, r)
sys.modules["aie.helpers.taplib"].TensorAccessPattern = Tap
errors = []


def parts(total, n):
    sizes = [total // n + (i < total % n) for i in range(n)]
    return [(sum(sizes[:i]), sizes[i]) for i in range(n)]


def check(desc_path, tile, cols, rows, row_len, one_b_row):
    LINKS.clear(); FIFOS.clear(); DMAS.clear()
    desc = design.load_description(desc_path)
    p = design.make_plan(desc, tile=tile, cols=cols, rows=rows, row_len=row_len, one_b_row=one_b_row)
    label = f"{desc_path.split('/')[-2]}/{desc_path.rsplit('/', 1)[-1]} tile {tile} cols {cols} rows {rows}x{row_len}" + \
            (" one b row" if one_b_row else "")
    err = lambda e: errors.append(f"{label}: {e}")
    cb.EVENTS.clear(); cb.PROGRAM.clear()
    design.emit_mlir(desc, p, "stand-in.o")
    prog = cb.PROGRAM[0]
    raw = desc.raw
    P, prog_d = raw["array"]["core_rows"], raw["core_program"]
    idx = prog_d["rtp_words"]
    fifo = {f["name"]: f for f in raw["layouts"][0]["fifos"]}
    depth = lambda f: raw["depths"][f["depth"]] if isinstance(f["depth"], str) else f["depth"]
    b_link = fifo["b_l2l1"]["link"]
    contracts = next(v for k, v in raw["families"].items() if k != "about")

    # The host's grid, written again: R row blocks x S segments, one column each.
    groups = row_len // (P * tile)
    R = min(rows, cols)
    S = 1 if rows >= cols else max(1, min(groups, cols // rows))
    blocks, segs = parts(rows, R), parts(groups, S)
    grid = [(blocks[c // S], segs[c % S]) for c in range(R * S)]

    # FIFOs and links, per column.
    want_links = []
    for c in range(cols):
        offs = [k * tile for k in range(P)]
        want_links.append(("split", f"a_l3l2_{c}", offs, [f"a_l2l1_{c}_{k}" for k in range(P)], [depth(fifo["a_l2l1"])] * P))
        want_links.append(("split", f"b_l3l2_{c}", offs, [f"b_l2l1_{c}_{k}" for k in range(P)], [depth(fifo["b_l2l1"])] * P)
                          if b_link == "split" else ("forward", f"b_l3l2_{c}", None, [f"b_l2l1_{c}"], [depth(fifo["b_l2l1"])]))
        want_links.append(("join", f"y_l2l3_{c}", offs, [f"y_l1l2_{c}_{k}" for k in range(P)], [depth(fifo["y_l1l2"])] * P))
        for n in ("a_l3l2", "b_l3l2", "y_l2l3"):
            if FIFOS[f"{n}_{c}"].depth != depth(fifo[n]):
                err(f"{n}_{c} depth {FIFOS[f'{n}_{c}'].depth}, the description's is {depth(fifo[n])}")
    if LINKS != want_links:
        err(f"links {LINKS}, expected {want_links}")
    shim_ends = prog.rt.arg_types[3:]
    if [[h.fifo.name for h in hs] for hs in shim_ends] != [[f"{n}_{c}" for c in range(cols)] for n in ("a_l3l2", "b_l3l2", "y_l2l3")]:
        err(f"shim ends {[[h.fifo.name for h in hs] for hs in shim_ends]}")
    if [[h.end for h in hs] for hs in shim_ends] != [["prod"] * cols, ["prod"] * cols, ["cons"] * cols]:
        err("the shim produces a and b and consumes y")

    # Workers: one per core of the first core_rows rows, its FIFO ends, its kernel calls, its barrier.
    if [w.tile for w in prog.workers] != [(c, raw["array"]["first_core_row"] + k) for c in range(cols) for k in range(P)]:
        err(f"workers on {[w.tile for w in prog.workers]}")
    seq = [e for e in cb.EVENTS if e[0] == "sequence"]
    first_dma = next((i for i, e in enumerate(seq) if e[1] == "dma"), len(seq))
    for i, w in enumerate(prog.workers):
        c, k = divmod(i, P)
        a, b, y, rtp, bar = w.fn_args[:5]
        ends = [(a.fifo.name, a.end), (b.fifo.name, b.end), (y.fifo.name, y.end)]
        want = [(f"a_l2l1_{c}_{k}", "cons"), (f"b_l2l1_{c}_{k}" if b_link == "split" else f"b_l2l1_{c}", "cons"),
                (f"y_l1l2_{c}_{k}", "prod")]
        if ends != want:
            err(f"core {w.tile}: FIFO ends {ends}, expected {want}")
        ev = [e for e in cb.EVENTS if e[0] == f"core {i}"]
        kinds = [e[1] for e in ev]
        waits = [j for j, e in enumerate(ev) if e[1] == "wait" and e[2] is bar]
        rels = [j for j, e in enumerate(ev) if e[1] == "release" and e[2] is bar]
        reads = [j for j, e in enumerate(ev) if e[1] == "read" and e[2] is rtp]
        acqs = [j for j, e in enumerate(ev) if e[1] == "acquire"]
        if not (len(waits) == 1 and len(rels) == 1 and reads and acqs and waits[0] < reads[0] and
                reads[-1] < rels[0] < acqs[0]):
            err(f"core {w.tile}: barrier protocol out of order: {kinds}")
        if waits and ev[waits[0]][3] != prog_d["barrier"]["acquire"]["value"] or rels and ev[rels[0]][3] != prog_d["barrier"]["release"]["value"]:
            err(f"core {w.tile}: waits for / releases other values than the description's")
        if sorted(ev[j][3] for j in reads) != sorted(idx.values()):
            err(f"core {w.tile}: reads RTP words {[ev[j][3] for j in reads]}, the description has {idx}")
        calls = [e for e in ev if e[1] == "call"]
        if [e[2].name for e in calls] != contracts:
            err(f"core {w.tile}: calls {[e[2].name for e in calls]}, expected one of each of {contracts}")
        for e in calls:
            args = e[3]
            objs = [x.handle.fifo.name if isinstance(x, Obj) else x for x in args[:3]]
            want_args = [f"{n}" for n, _ in want] + [tile] + ([k * tile] if b_link == "broadcast" else [])
            if objs + list(args[3:]) != want_args:
                err(f"core {w.tile}: {e[2].name}{tuple(objs + list(args[3:]))}, expected {tuple(want_args)}")
            if e[2].n_args != len(args):
                err(f"core {w.tile}: {e[2].name} declared with {e[2].n_args} arguments, called with {len(args)}")
        acq = [e[2].fifo.name for e in ev if e[1] == "acquire"]
        rel = [e[2].fifo.name for e in ev if e[1] == "release" and isinstance(e[2], Handle)]
        if acq != [n for n, _ in want] or sorted(rel) != sorted(acq):
            err(f"core {w.tile}: acquires {acq}, releases {rel}")
        # The sequence: this core's words (chunks: the host's count), then its set, before any DMA; none
        # for a column without work.
        writes = [(j, e[3]) for j, e in enumerate(seq) if e[1] == "write" and e[2] is rtp]
        sets = [j for j, e in enumerate(seq) if e[1] == "set" and e[2] is bar]
        if c >= len(grid):
            if writes or sets:
                err(f"core {w.tile}: a column without work gets RTP words or a set")
            continue
        (_, n), (_, g) = grid[c]
        want_words = {idx["contract"]: 0, idx["chunks"]: n * g, idx["version"]: prog_d["rtp_layout_version"]}
        if dict(v for _, v in writes) != want_words:
            err(f"core {w.tile}: RTP words {dict(v for _, v in writes)}, expected {want_words}")
        if len(sets) != 1 or seq[sets[0]][3] != prog_d["barrier"]["set_value"] or sets[0] < max(j for j, _ in writes) or sets[0] > first_dma:
            err(f"core {w.tile}: the barrier is not set once, after the words and before the first DMA")

    # Fills and drains: each column's rows of its segment, once, in order, in steps of at most the host's
    # rows per step; a one-row b's segment read again per row.
    per_step = min(256, raw["limits"]["repeat_max"] + 1)
    seen = {n: set() for n in ("a_l3l2", "b_l3l2", "y_l2l3")}
    for c in range(cols):
        for name in ("a_l3l2", "b_l3l2", "y_l2l3"):
            taps = [t for f, t in DMAS if f == f"{name}_{c}"]
            if c >= len(grid):
                if taps:
                    err(f"column {c}: {name} moves data, the column has no work")
                continue
            (first, n), (g0, g) = grid[c]
            v0, seg = g0 * P * tile, g * P * tile
            if any(t.strides[2:] != [tile, 1] or t.sizes[2:] != [g * P, tile] for t in taps):
                err(f"column {c}: {name} not in chunks of {tile} of a segment of {g * P}: {[(t.sizes, t.strides) for t in taps]}")
                continue
            if name == "b_l3l2" and one_b_row:
                if any(t.offset != v0 or t.sizes[1] != 1 or t.strides[:2] != [0, 0] for t in taps) or sum(t.sizes[0] for t in taps) != n:
                    err(f"column {c}: b's one row's segment not read once per row: {[(t.offset, t.sizes) for t in taps]}")
                continue
            rows_seen = []
            for t in taps:
                if (t.offset - v0) % row_len or t.sizes[0] != 1 or t.sizes[1] > per_step or (t.sizes[1] > 1 and t.strides[1] != row_len):
                    err(f"column {c}: {name} tap offset {t.offset} sizes {t.sizes} strides {t.strides}")
                    continue
                r0 = (t.offset - v0) // row_len
                rows_seen += list(range(r0, r0 + t.sizes[1]))
                for r in range(r0, r0 + t.sizes[1]):
                    key = (r, v0)
                    if key in seen[name]:
                        err(f"{name}: row {r} at {v0} moved twice")
                    seen[name].add(key)
            if rows_seen != list(range(first, first + n)):
                err(f"column {c}: {name} moves rows {rows_seen[:4]}..., expected rows {first}..{first + n - 1}")
    for name, keys in seen.items():
        if name == "b_l3l2" and one_b_row:
            continue
        if len(keys) != rows * S:
            err(f"{name}: {len(keys)} row segments moved, {rows} rows x {S} segments expected")
    return label


done = []
for desc_path in descs:
    for tile, cols, rows, row_len, one in ((512, 8, 64, 4096, False), (128, 3, 1000, 4096, False),
                                           (256, 8, 5, 2048, True), (128, 1, 300, 512, True),
                                           (512, 8, 1, 14336, False), (256, 8, 3, 7168, True),
                                           (128, 3, 600, 256, False), (512, 8, 2, 2048, False)):
        done.append(check(desc_path, tile, cols, rows, row_len, one))
for e in errors[:20]:
    print(f"  {e}")
print(f"IRON program on stand-ins: {len(done)} programs of {len(descs)} descriptions " +
      (f"FAILED ({len(errors)} error(s))" if errors else "as the descriptions say"))
sys.exit(1 if errors else 0)
PYEOF
"$py" "$tmp/iron.py" "$root" "$root/tests/aie/check_barrier.py" "$add_df" "$glu_df" "$tmp/add-bcast.json" ||
    fail "the IRON program"

# What the descriptions in the tree get: their failing checks, named (a plan is not emitted while any fails).
for desc in "$add_df" "$glu_df"; do
    echo "${desc#"$root"/}, tile 256, 8 columns:"
    "$py" "$design" --dataflow "$desc" --tile 256 --print-plan >"$tmp/tree.txt" || true
    grep '^  \[FAIL\]' "$tmp/tree.txt" || echo "  every check passes"
done

if [ "$failures" -ne 0 ]; then
    echo "check_design_add: $failures failure(s)"
    exit 1
fi
echo "check_design_add: all checks passed"
