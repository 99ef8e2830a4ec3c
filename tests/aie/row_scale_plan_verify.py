#!/usr/bin/env python3
"""The row_scale plans of aie/add/design.py (--dataflow aie/row_scale/dataflow.json --print-plan --format json)
against a recomputation written here from the rules of the rows movement with a per-row input, sharing no
planning code with design.py (design.py is only run, through its command line, in this process for speed):

  - the tile (the largest of the description's whose group of 2 chunks divides the row), the grid (the host's
    R row blocks x S segments, src/runtime/rows-sequence.cpp), per used column the RTP words rows (its block's
    rows) and row_chunks (its segment's groups: a core's chunks of each row), the kernel calls (their
    product), the steps (at most min(256, repeat_max + 1) rows);
  - the shim transfers of the largest step: x and y as the rows design's (runs of d0, the tile halved while
    past the wrap), w one value per row at its stride (the host's rows_bd(n, 1, stride, 1)), or with a
    stride of 0 one value pushed again per row (a queue-push repeat of the step's rows - 1);
  - the operands' lengths (w: (rows - 1) x stride + 1 values, one for a stride of 0), the DRAM traffic (x and
    y once, w one value per row of every column, so a row whose segments go to several columns has its value
    read by each), the core and memory-tile budgets (x and y chunks double-buffered, w 2 x 4 B on both),
    the DMA channels (memory tile MM2S x 2 + w 1 + y 1 = 4 of 6: a broadcast is one channel; core S2MM x
    and w, 2 of 2) and the stream-switch ports (a broadcast is one stream up through every boundary);
  - which checks fail: exactly those the recomputation says must, and the exit status with them;
  - the shapes of tests/kernels/test_row_scale_stream.cpp held to its numbers (tile, columns, calls per
    core, steps, w bytes; x and y bytes rows x cols x 4);
  - variants of the description, written to <tmp>, that must fail by name: w split instead of broadcast,
    the RTP word rows missing, rows and row_chunks replaced by chunks, a kernel without its w parameter, a
    per-row unit of 8 bytes; and options refused with the reason (--one-b-row, a negative --w-stride,
    --w-stride for a description without a per-row input).

    row_scale_plan_verify.py <repo root> <tmp directory>
"""

import contextlib
import copy
import importlib.util
import io
import json
import os
import re
import sys

root, tmp = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("xdna_rows_design_under_test", f"{root}/aie/add/design.py")
design = importlib.util.module_from_spec(spec)
spec.loader.exec_module(design)
REAL = f"{root}/aie/row_scale/dataflow.json"
ADD = f"{root}/aie/add/dataflow.json"

# AIE2P facts and the host's constant, written here again.
CORE_BYTES, MEMTILE_BYTES = 65536, 524288
CORE_IN, CORE_OUT, MT_IN, MT_OUT, SHIM_OUT, SHIM_IN = 2, 2, 6, 6, 2, 2
UP, DOWN = 6, 4
HOST_ROWS_PER_STEP = 256

errors, lines = [], []
counts = {"plans": 0, "hand-held": 0, "variants": 0, "refusals": 0}

GRID = "column c: row block (first row, rows), segment (first group, groups)"


def run(desc_path, args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = design.main(["--dataflow", desc_path, "--print-plan", "--format", "json"] + args)
    return rc, out.getvalue(), err.getvalue()


def blocks(total, n):
    """n consecutive blocks of total items, sizes differing by at most one, the first ones larger: (first, count)."""
    q, m = divmod(total, n)
    out, at = [], 0
    for i in range(n):
        size = q + (1 if i < m else 0)
        out.append((at, size))
        at += size
    return out


def grid_of(rows, groups, columns):
    # The host's rows_grid: R = min(rows, columns); S = 1 when rows >= columns, else
    # max(1, min(groups, columns // rows)); column c: row block c // S, segment c % S.
    R = min(rows, columns)
    S = 1 if rows >= columns else max(1, min(groups, columns // rows))
    rb, sb = blocks(rows, R), blocks(groups, S)
    return [(rb[c // S], sb[c % S]) for c in range(R * S)]


def host_d0(tile, wrap):
    d0 = tile
    while d0 > wrap and d0 % 2 == 0:
        d0 //= 2
    return d0


def verify(rows, row_len, cols, tile=None, stride=None, w_stride=None, expect=None, desc_path=REAL):
    d = json.load(open(desc_path))
    args = ["--rows", str(rows), "--row-len", str(row_len), "--cols", str(cols)]
    args += ["--tile", str(tile)] if tile else []
    args += ["--row-stride", str(stride)] if stride else []
    args += ["--w-stride", str(w_stride)] if w_stride is not None else []
    label = f"row_scale {' '.join(args)}"
    err = lambda e: errors.append(f"{label}: {e}")
    rc, out, stderr = run(desc_path, args)
    counts["plans"] += 1
    if rc > 1:
        err(f"--print-plan exited {rc}: {stderr.strip()}")
        return None
    plan = json.loads(out)
    P = d["array"]["core_rows"]
    fam = next(k for k in d["families"] if k != "about")
    tiles = sorted(int(t) for t in d["core_budget"]["kernel_stack"][fam] if t.isdigit())
    want_tile = tile or max(t for t in tiles if row_len % (P * t) == 0)
    if plan["tile"] != want_tile:
        err(f"tile {plan['tile']}, the host's pick is {want_tile}")
    tile = plan["tile"]
    stride = stride or row_len
    w_stride = 1 if w_stride is None else w_stride
    lim = d["limits"]
    wrap, stride_max = lim["wrap_max"], lim["stride_max"]
    depth = lambda v: d["depths"][v] if isinstance(v, str) else v
    fifos = {f["name"]: f for f in d["layouts"][0]["fifos"]}
    value = d["units"]["scalar"]["fixed_bytes"]
    chunk = d["units"]["chunk"] * tile

    # Budgets: x and y one chunk per core object, w one value; the memory tile's objects a group of
    # chunks, w one value.
    core = (depth(fifos["x_l2l1"]["depth"]) + depth(fifos["y_l1l2"]["depth"])) * chunk + \
        depth(fifos["v_l2l1"]["depth"]) * value + 4 * d["core_program"]["rtp_word_count"] + \
        d["core_budget"]["kernel_stack"][fam][str(tile)] + d["core_budget"]["kernel_data_bytes"]
    mem = (depth(fifos["x_l3l2"]["depth"]) + depth(fifos["y_l2l3"]["depth"])) * P * chunk + \
        depth(fifos["v_l3l2"]["depth"]) * value
    if plan["core_bytes"]["total"] != core:
        err(f"core data memory {plan['core_bytes']['total']}, recomputed {core}")
    if plan["memtile_bytes"]["total"] != mem:
        err(f"memory tile {plan['memtile_bytes']['total']}, recomputed {mem}")
    # Channels: x split (one memory-tile MM2S channel per core row), w broadcast (one), y joined (one S2MM
    # per core row) and drained (one MM2S).
    ch = plan["channels"]
    got = (ch["core (each)"]["S2MM"]["used"], ch["core (each)"]["MM2S"]["used"],
           ch["memory tile (each column)"]["S2MM"]["used"], ch["memory tile (each column)"]["MM2S"]["used"],
           ch["shim (each column)"]["MM2S"]["used"], ch["shim (each column)"]["S2MM"]["used"])
    want_ch = (2, 1, 2 + P, P + 1 + 1, 2, 1)
    if got != want_ch:
        err(f"channels core in/out, memtile in/out, shim out/in {got}, recomputed {want_ch}")
    r0 = d["array"]["first_core_row"]
    want_streams = {f"memory tile -> core row {r0} (up)": P + 1, f"core row {r0} -> memory tile (down)": P}
    for k in range(1, P):
        want_streams[f"core row {r0 + k - 1} -> {r0 + k} (up)"] = (P - k) + 1
        want_streams[f"core row {r0 + k} -> {r0 + k - 1} (down)"] = P - k
    for what, n in want_streams.items():
        if plan["streams"].get(what, {}).get("used") != n:
            err(f"streams {what}: {plan['streams'].get(what)}, recomputed {n}")

    # Which checks must fail.
    want_fail = set()
    if core > CORE_BYTES: want_fail.add("core data memory")
    if mem > MEMTILE_BYTES: want_fail.add("memory tile")
    whole = row_len % (P * tile) == 0
    if not whole: want_fail.add("shape: a row in whole groups")
    if stride < row_len: want_fail.add("shape: row stride covers the row")
    if stride > stride_max:
        want_fail.update({"shape: row stride within", ("x fill", ": strides"), ("y drain", ": strides")})
    if w_stride > stride_max:
        want_fail.update({"shape: w stride within", ("w fill", ": strides")})
    groups = row_len // (P * tile) if whole else 0
    grid = grid_of(rows, groups, cols) if whole else []
    per_step = min(HOST_ROWS_PER_STEP, lim["repeat_max"] + 1)
    n0 = min(per_step, grid[0][0][1]) if grid else 0
    seg0 = grid[0][1][1] * P if grid else 0
    d0 = host_d0(tile, wrap)
    runs = seg0 * tile // d0
    linear = n0 <= 1 or stride == seg0 * tile
    if seg0 > wrap or (runs > wrap and not linear):
        want_fail.update({("x fill", ": d1 size"), ("y drain", ": d1 size")})

    failed = [c["check"] for c in plan["checks"] if not c["ok"]]
    matched = set()
    for f in failed:
        hit = [w for w in want_fail if (f.startswith(w[0]) and w[1] in f if isinstance(w, tuple) else f.startswith(w))]
        if not hit:
            err(f"check failed that should pass: {f}")
        matched.update(hit)
    for w in sorted(want_fail - matched, key=str):
        err(f"check passed that must fail: {w}")
    if rc != (1 if failed else 0):
        err(f"design.py exited {rc} with {len(failed)} failed check(s)")

    s = plan["schedule"]
    if whole:
        got_grid = [(tuple(b), tuple(g)) for b, g in s[GRID]]
        if got_grid != grid:
            err(f"grid {got_grid}, the host's {grid}")
        pad = [0] * (cols - len(grid))
        want_rows = [n for (_, n), _ in grid] + pad
        want_row_chunks = [g for _, (_, g) in grid] + pad
        want_calls = [n * g for (_, n), (_, g) in grid] + pad
        for key, want in (("rows per core of column c (RTP rows)", want_rows),
                          ("chunks of a row per core of column c (RTP row_chunks)", want_row_chunks),
                          ("chunks per core of column c (RTP chunks)", want_calls)):
            if s.get(key) != want:
                err(f"{key}: {s.get(key)}, the host's {want}")
        steps = -(-grid[0][0][1] // per_step)
        if (s["steps"], s["kernel calls on the busiest core"], s["columns used"]) != (steps, max(want_calls), len(grid)):
            err(f"steps, busiest core, columns {(s['steps'], s['kernel calls on the busiest core'], s['columns used'])}, "
                f"the host's {(steps, max(want_calls), len(grid))}")
        words = plan["core_program"]["RTP words"]
        if (words.get("rows (largest of a core)"), words.get("row_chunks (largest of a core)")) != \
                (max(want_rows), max(want_row_chunks)) or any("chunks (" == k[:8] for k in words):
            err(f"RTP words {words}: not rows {max(want_rows)} and row_chunks {max(want_row_chunks)} (and no chunks)")
        # Every value of x to exactly one core, once: each row's segments tile the row.
        if sum(want_calls) * P * tile != rows * row_len:
            err(f"calls {want_calls}: not every value once")
        # The transfers of the largest step (column 0's first).
        x_t = ([1, n0, runs, d0], [0, stride, d0, 1], 0, linear)
        w_t = ([1, 1, 1, 1], [0, 0, 1, 1], n0 - 1, True) if w_stride == 0 else \
            ([1, n0, 1, 1], [0, w_stride, 1, 1], 0, n0 <= 1 or w_stride == 1)
        got_x = [(t["what"].split()[0], t["sizes"], t["strides"], t["repeat"], t["linear"]) for t in plan["transfers"]]
        want_x = [("x",) + x_t, ("w",) + w_t, ("y",) + x_t]
        if got_x != want_x:
            err(f"transfers {got_x}, the host's {want_x}")
        # Traffic: x and y once; w one value per row of each column (the value of a row whose segments go
        # to S columns is read S times).
        once = 4 * rows * row_len
        w_bytes = value * sum(n for (_, n), _ in grid)
        t = plan["traffic"]
        got_t = (t["x read (bytes)"], t["w read (bytes)"], t["y written (bytes)"], t["read (bytes)"], t["written (bytes)"])
        if got_t != (once, w_bytes, once, once + w_bytes, once):
            err(f"traffic x, w, y, read, written {got_t}, recomputed {(once, w_bytes, once, once + w_bytes, once)}")
        lengths = {"x (arg 0)": (rows - 1) * stride + row_len, "w (arg 1)": 1 if w_stride == 0 else (rows - 1) * w_stride + 1,
                   "y (arg 2)": (rows - 1) * stride + row_len}
        if plan["tensors"] != lengths:
            err(f"tensors {plan['tensors']}, expected {lengths}")
    for k, v in (expect or {}).items():
        got_v = plan["tile"] if k == "tile" else plan["traffic"][k] if k in plan["traffic"] else s[k]
        if got_v != v:
            err(f"{k}: {got_v}, expected {v}")
    lines.append(f"{label}: tile {tile}, core {core} B, memtile {mem} B, {s['columns used']} column(s), "
                 f"{s['kernel calls on the busiest core']} call(s) on the busiest core, {len(failed)} check(s) failing as recomputed")
    return plan


# Every tile, 1, 3 and 8 columns, one long row, fewer rows than columns, many rows; w one per row, strided,
# and one value for every row.
for tile in (64, 128, 256, 512, 1024):
    for cols in (1, 3, 8):
        verify(64, 4 * 2 * tile, cols, tile)
        verify(1, 7 * 2 * tile, cols, tile, w_stride=0)
        verify(3, 7 * 2 * tile, cols, tile, w_stride=5)
    verify(5, 2 * 2 * tile, 8, tile, w_stride=0)
    verify(600, 2 * tile, 1, tile, w_stride=2)   # one column: 3 steps of at most 256 rows
    verify(600, 2 * tile, 2, tile, w_stride=0)   # 300 rows per column: a repeat of 255 in the first step
verify(1000, 4096, 3, stride=5000, w_stride=7)
verify(10, 2048, 8, stride=3000, w_stride=0)
verify(16, 524288, 8)                            # 512 chunks of 1024 a segment: one contiguous run passes
verify(16, 524288, 8, stride=600000)             # strided: 1024 runs of 512, past d1's wrap: x and y fail
verify(4, 1024, 8, w_stride=2000000)             # w's stride past the shim's field: fails by name
verify(4, 1024, 8, stride=1000)                  # a row stride short of the row
verify(2, 1536, 3, tile=512)                     # not whole groups of 2 chunks of 512

# tests/kernels/test_row_scale_stream.cpp's shapes and numbers (TrafficGridAndWordsAreTheDesigns): rows,
# cols, x stride, w stride; tile, columns, calls per core, steps, w bytes. design.py has one stride for x
# and y; the third case's x stride (1600) is given, its y stride (1540) changes none of these numbers.
HELD = [((8, 2048, 2048, 1), (1024, 8, 1, 1, 8 * 4)),
        ((1, 4096, 4096, 0), (1024, 2, 1, 1, 2 * 4)),
        ((37, 1536, 1600, 3), (256, 8, 5 * 3, 1, 37 * 4)),
        ((600, 256, 256, 1), (128, 8, 75, 1, 600 * 4)),
        ((2100, 128, 128, 1), (64, 8, 263, 2, 2100 * 4)),
        ((24, 2048, 2048, 0), (1024, 8, 3, 1, 24 * 4))]
for (rows, cols_, xs, ws), (tile, columns, calls, steps, w_bytes) in HELD:
    bytes_ = rows * cols_ * 4
    verify(rows, cols_, 8, stride=xs, w_stride=ws,
           expect={"tile": tile, "columns used": columns, "kernel calls on the busiest core": calls, "steps": steps,
                   "w read (bytes)": w_bytes, "x read (bytes)": bytes_, "y written (bytes)": bytes_,
                   "read (bytes)": bytes_ + w_bytes, "written (bytes)": bytes_})
    counts["hand-held"] += 1

# Variants that must fail by name.
base = json.load(open(REAL))


def variant(name, edit, kernel=None):
    d = copy.deepcopy(base)
    edit(d)
    os.makedirs(f"{tmp}/row_scale-{name}/kernels", exist_ok=True)
    path = f"{tmp}/row_scale-{name}/dataflow.json"
    json.dump(d, open(path, "w"), indent=1)
    if kernel:
        src = open(f"{root}/aie/row_scale/kernels/row_scale.cc").read()
        old, new = kernel
        if src.count(old) != 1:
            sys.exit(f"row_scale.cc has no one '{old}' to change")
        open(f"{tmp}/row_scale-{name}/kernels/row_scale.cc", "w").write(src.replace(old, new))
    return path


def fifo(d, name):
    return next(f for f in d["layouts"][0]["fifos"] if f["name"] == name)


def words(d, names):
    d["core_program"]["rtp_words"] = {w: i for i, w in enumerate(names)}
    d["core_program"]["rtp_word_count"] = len(names)


def must_fail(path, pattern, args=(), rc_want=1):
    """design.py --print-plan on a variant: exit rc_want, its output naming the failure."""
    rc, out, stderr = run(path, list(args))
    # The failed checks as the text plan prints them ("[FAIL] <check>: <detail>"), and the refusal.
    text = "".join(f"[FAIL] {c}\n" for c in (json.loads(out)["checks failed"] if rc == 1 else [])) + stderr
    counts["variants" if path not in (REAL, ADD) else "refusals"] += 1
    if rc != rc_want or not re.search(pattern, text):
        errors.append(f"{os.path.relpath(path, tmp)} {' '.join(args)}: exit {rc} (want {rc_want}), no '{pattern}':\n"
                      + "\n".join(l for l in text.splitlines() if "FAIL" in l or "design.py" in l))


must_fail(variant("split", lambda d: fifo(d, "v_l2l1").update(link="split")),
          r"design\.py: .*v_l2l1 is linked by 'split'; an input of one value per row \(w\) goes whole to each of the 2 "
          r"core rows.*: a broadcast", rc_want=2)
must_fail(variant("norows", lambda d: words(d, ["contract", "row_chunks", "version"])),
          r"\[FAIL\] core program: a value per row is held for its row's chunks \(RTP words rows and row_chunks\): "
          r"w one value per row; the core's work words: none")
must_fail(f"{tmp}/row_scale-norows/dataflow.json",
          r"\[FAIL\] RTP words: contract, chunks \(or rows and row_chunks\) and version, .*neither a 'chunks' word")
must_fail(variant("chunks", lambda d: words(d, ["contract", "chunks", "version"])),
          r"\[FAIL\] core program: a value per row is held for its row's chunks .*the core's work words: chunks")
must_fail(variant("now", lambda d: None, kernel=("int32_t n, float w)", "int32_t n)")),
          r"\[FAIL\] kernel row_scale_f32 \(row_scale\.cc\) takes what the core program passes: "
          r"row_scale_f32\(.*int32_t n\); the core program passes \(.*; w: the row's value")
must_fail(variant("fixed8", lambda d: d["units"].update(scalar={"fixed_bytes": 8})),
          r"design\.py: .*v_l3l2: a unit of 8 fixed bytes; the host's stream moves one 32-bit word per row", rc_want=2)
must_fail(variant("toshim", lambda d: fifo(d, "y_l2l3")["object"].update(unit="scalar", count=1) or
                  fifo(d, "y_l1l2")["object"].update(unit="scalar", count=1)),
          r"design\.py: .*y_l2l3 moves a unit of fixed bytes \(one value per row\) to the shim", rc_want=2)
# Options refused with the reason.
must_fail(REAL, r"--one-b-row: .*second input \(w\) is one value per row; --w-stride 0", ["--one-b-row"], rc_want=2)
must_fail(REAL, r"--w-stride -1: values between the rows' values", ["--w-stride", "-1"], rc_want=2)
must_fail(ADD, r"--w-stride: .*has no input of one value per row", ["--w-stride", "0"], rc_want=2)
must_fail(REAL, r"has no xclbin for tile 32", ["--tile", "32"], rc_want=2)
must_fail(REAL, r"no tile of \[64, 128, 256, 512, 1024\] has a group of 2 chunks dividing it", ["--row-len", "96"], rc_want=2)

for e in errors[:30]:
    print(f"  {e}")
print(f"row_scale plans: {counts['plans']} recomputed ({counts['hand-held']} held to test_row_scale_stream.cpp's "
      f"numbers), {counts['variants']} variant(s) of the description and {counts['refusals']} option(s) failing by name; "
      f"{len(errors)} disagreement(s); e.g.")
for line in lines[:1] + [l for l in lines if "--w-stride 0" in l][:1] + lines[-len(HELD):][:2]:
    print(f"  {line}")
sys.exit(1 if errors else 0)
