#!/usr/bin/env python3
"""The rms_norm design's plans (aie/rms_norm/design.py --print-plan --format json) against a recomputation
written here from the rules of the norm movement, sharing no code with design.py (design.py is only run,
through its command line, in this process for speed):

  - the tile (the largest of the description's tiles dividing the row), the grid (R = min(rows, columns)
    columns, column c the block count_of / first_of), the steps (at most limits.iteration_max rows), the
    BDs of the largest step (x a chain of two one-row BDs over the step's rows, the weight and y one each,
    iterations, strides, queue-push repeats, the token, the slot's ids), the RTP words of every used column
    (inv_cols and eps as fp32 bits, computed here with the array module), DRAM traffic (x twice, the weight
    once per row, y once), kernel calls, the core and memory-tile budgets, DMA channels and stream ports;
  - the shim's BDs replayed here row by row from the plan's patterns (a BD moves one row per execution and
    advances its iteration after each; a chain pass runs each of its BDs once; a task runs repeat + 1
    times): every row of x reaches its column's core twice in a row, pass 1 then pass 2, the weight row
    beside pass 2, every row of y written once, by the column whose block holds it;
  - which checks fail: exactly those the recomputation says must, for the real description and for
    variants of it (written to <tmp> by the caller), and the exit status (0 or 1) with them;
  - a few shapes held to numbers computed by hand (the comments show the arithmetic).

    rms_norm_plan_verify.py <repo root> <directory of variant descriptions>
"""

import contextlib
import importlib.util
import io
import json
import os
import re
import sys
from array import array

root, vdir = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("xdna_norm_design_under_test", f"{root}/aie/rms_norm/design.py")
design = importlib.util.module_from_spec(spec)
spec.loader.exec_module(design)
REAL = f"{root}/aie/rms_norm/dataflow.json"

# AIE2P facts, written here again.
CORE_BYTES, MEMTILE_BYTES, PROGRAM_BYTES = 65536, 524288, 16384
CORE_IN, CORE_OUT, MT_IN, MT_OUT, SHIM_OUT, SHIM_IN = 2, 2, 6, 6, 2, 2
UP, DOWN, SHIM_UP, SHIM_DOWN = 6, 4, 6, 4
ITER_MAX, REPEAT_MAX, STRIDE_MAX, LENGTH_MAX = 64, 255, 1048576, 4294967295
BDS, QUEUE = 16, 4
PROGRAM_ESTIMATE = 9488  # the estimate design.py keeps: 16 B x (40 + 70 + 35 + 12 x 32) bundles + 1024
EPS_MIN = 2.0 ** -100

errors, lines = [], []
counts = {"plans": 0, "anchors": 0, "variant plans": 0, "replayed rows": 0}


def bits(v):
    a = array("f", [v])
    return array("I", a.tobytes())[0]


def as_f32(v):
    return array("f", [v])[0]


def run(desc_path, args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = design.main(["--dataflow", desc_path, "--print-plan", "--format", "json"] + args)
    return rc, out.getvalue(), err.getvalue()


# The kernels, read here with expressions of our own: per function, its parameter kinds and loop hint.
def kernels_of(d):
    fam = next(k for k in d["families"] if k != "about")
    src = d["core_budget"]["kernel_stack"][fam]["source"]
    text = open(os.path.join(root, "aie", d["design"], "kernels", src)).read()
    header = re.search(r'"(xdna_aie/rms_norm_tiles\.h)"', text).group(1)
    lanes = int(re.search(r"kRmsNormLanes\s*=\s*(\d+)", open(os.path.join(root, "aie/include", header)).read()).group(1))
    found = {}
    for m in re.finditer(r"^void (\w+)\(([^)]*)\)", text, re.M):
        end = text.find("\n}\n", m.end())
        hint = re.search(r"MIN_ITERATION_COUNT\((\d+)\)", text[m.end():end])
        kinds = ["p" if "*" in a else "i" if "int32_t" in a else "f" for a in m.group(2).split(",")]
        found[m.group(1)] = ("".join(kinds), int(hint.group(1)) if hint else None)
    return fam, src, lanes, found


KERNEL_WANT = {"rms_norm_sumsq_f32": "ppi", "rms_norm_scale_f32": "ppff", "rms_norm_apply_mul_f32": "ppppi",
               "rms_norm_apply_f32": "pppi"}


def blocks_of(rows, columns):
    R = min(rows, columns)
    out, at = [], 0
    for c in range(R):
        n = rows // R + (1 if c < rows % R else 0)
        out.append((at, n))
        at += n
    assert at == rows
    return out


def verify(desc_path, rows, cols, columns, weight="row", xs=None, ws=None, ys=None, tile=None, eps=None,
           expect=None, label_extra=""):
    d = json.load(open(desc_path))
    args = ["--rows", str(rows), "--cols", str(cols), "--columns", str(columns)]
    if weight == "none":
        args.append("--no-weight")
    elif weight == "one":
        args.append("--one-weight-row")
    for opt, v in (("--x-row-stride", xs), ("--w-row-stride", ws), ("--y-row-stride", ys), ("--tile", tile),
                   ("--eps", eps)):
        if v is not None:
            args += [opt, str(v)]
    name = "dataflow.json" if desc_path == REAL else os.path.basename(desc_path)
    label = f"{name} {' '.join(args)}{label_extra}"
    err = lambda e: errors.append(f"{label}: {e}")
    rc, out, stderr = run(desc_path, args)
    if rc not in (0, 1):
        err(f"--print-plan exited {rc}: {stderr.strip()}")
        return None
    plan = json.loads(out)
    counts["plans"] += 1

    fam, src, lanes, kernels = kernels_of(d)
    tiles = sorted(int(t) for t in d["core_budget"]["kernel_stack"][fam] if t.isdigit())
    want_tile = tile or max(t for t in tiles if cols % t == 0)
    if plan["tile"] != want_tile:
        err(f"tile {plan['tile']}, the host's pick is {want_tile}")
    T = want_tile
    chunks = cols // T if cols % T == 0 else 0
    P = d["array"]["core_rows"]
    fifos = {f["name"]: f for f in d["layouts"][0]["fifos"]}
    depth = lambda f: d["depths"][f["depth"]] if isinstance(f["depth"], str) else f["depth"]
    core_fifos = [f for f in fifos.values() if f["to"] == "core" or f["from"] == "core"]
    mem_fifos = [f for f in fifos.values() if "shim_channel" in f]
    chunk = d["units"]["chunk"] * T
    prog = d["core_program"]
    stack = d["core_budget"]["kernel_stack"][fam][str(T)]
    kdata = d["core_budget"]["kernel_data_bytes"]
    core = sum(depth(f) * chunk for f in core_fifos) + 4 * prog["rtp_word_count"] + stack + kdata
    mem = sum(depth(f) * P * chunk for f in mem_fifos)
    lim, shim = d["limits"], d["shim"]
    xs_, ys_ = xs or cols, ys or cols
    ws_ = (0 if weight == "one" else (ws if ws is not None else cols)) if weight != "none" else None
    eps_v = 1e-6 if eps is None else eps

    # Which checks must fail, recomputed.
    want_fail = set()
    if core > CORE_BYTES: want_fail.add("core data memory")
    if mem > MEMTILE_BYTES: want_fail.add("memory tile")
    if 2 + P > MT_IN: want_fail.add("DMA channels memory tile S2MM")
    if 2 * P + 1 > MT_OUT: want_fail.add("DMA channels memory tile MM2S")
    r0 = d["array"]["first_core_row"]
    for k in range(P):
        if 2 * (P - k) > UP:
            want_fail.add(f"stream-switch ports memory tile -> core row {r0} (up)" if k == 0 else
                          f"stream-switch ports core row {r0 + k - 1} -> {r0 + k} (up)")
        if P - k > DOWN:
            want_fail.add(f"stream-switch ports core row {r0 + k} -> " + ("memory tile" if k == 0 else str(r0 + k - 1)))
    for sym in ["rms_norm_sumsq_f32", "rms_norm_scale_f32"] + [
            {"rms_norm_mul_f32": "rms_norm_apply_mul_f32", "rms_norm_f32": "rms_norm_apply_f32"}[c] for c in d["families"][fam]]:
        kinds, hint = kernels[sym]
        if kinds != KERNEL_WANT[sym]:
            want_fail.add(f"kernel {sym} ({src}) takes")
        if hint is not None:
            if T % lanes:
                want_fail.add(f"kernel {sym} ({src}) tile in whole vectors")
            if T // lanes < hint:
                want_fail.add(f"kernel {sym} ({src}) loop")
    if kdata < 2 * lanes * 4: want_fail.add("kernel data")
    if lim["iteration_max"] > ITER_MAX: want_fail.add("limits.iteration_max")
    if lim["repeat_max"] > REPEAT_MAX: want_fail.add("limits.repeat_max")
    if lim["stride_max"] > STRIDE_MAX: want_fail.add("limits.stride_max")
    if cols % T: want_fail.add("shape: the row in whole chunks")
    if not as_f32(eps_v) >= EPS_MIN: want_fail.add("eps")
    blocks = blocks_of(rows, columns)
    if any(n % P for _, n in blocks): want_fail.add("array: a block's rows in whole groups")
    flight = shim["steps_in_flight"]
    slots = shim["bd_slots"]
    as_list = lambda v: v if isinstance(v, list) else [v]
    if len(slots) != flight or any(len(as_list(s.get("x", []))) != 2 or len(as_list(s.get("weight", []))) != 1 or
                                   len(as_list(s.get("y", []))) != 1 for s in slots):
        want_fail.add("shim BD slots")
    ids = [i for s in slots for k in ("x", "weight", "y") for i in as_list(s.get(k, []))]
    if len(set(ids)) != len(ids) or any(not 0 <= i < shim["bds"] for i in ids): want_fail.add("shim BD ids")
    if shim["bds"] > BDS: want_fail.add("shim: the description's bds")
    if 4 * flight > BDS: want_fail.add("shim BDs in flight")
    if flight > QUEUE: want_fail.add("shim task queue")
    per = lim["iteration_max"]
    n0 = min(per, blocks[0][1])
    moved_ops = [("x pass 1", xs_), ("x pass 2", xs_), ("y", ys_)] + ([("weight", ws_)] if weight == "row" else [])
    for what, s in moved_ops:
        if s > lim["stride_max"]: want_fail.add((f"shim BD {what}", ": iteration stride within the shim's stride"))
        if s < cols: want_fail.add((f"shim BD {what}", ": iteration stride covers the row"))
    for what in ["x pass 1", "x pass 2", "y"] + (["weight"] if weight != "none" else []):
        if n0 - 1 > lim["repeat_max"]: want_fail.add((f"shim BD {what}", ": queue-push repeat"))
    bar = prog["barrier"]
    after = bar["set_value"] + bar["release"]["value"]
    if bar["acquire"]["mode"] != "equal": want_fail.add("barrier: the core waits")
    if bar["set_value"] != bar["acquire"]["value"]: want_fail.add("barrier: the sequence's set")
    if not (bar["release"]["value"] > 0 and after != bar["acquire"]["value"]): want_fail.add("barrier: released")
    if not 0 <= after <= bar["max_value"]: want_fail.add("barrier: lock values")
    contract = d["families"][fam].index("rms_norm_f32" if weight == "none" else "rms_norm_mul_f32")
    words = [{"contract": contract, "rows": n, "chunks": chunks, "inv_cols": bits(1.0 / as_f32(float(cols))),
              "eps": bits(eps_v), "version": prog["rtp_layout_version"]} for _, n in blocks]
    if max(max(w.values()) for w in words) > prog["rtp_word_max"]: want_fail.add("RTP words fit")

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
    if plan["checks failed"] != [f"{c['check']}: {c['detail']}" for c in plan["checks"] if not c["ok"]]:
        err("'checks failed' is not the failed checks")

    # Budgets, channels, ports.
    if plan["core_bytes"]["total"] != core:
        err(f"core data memory {plan['core_bytes']['total']}, recomputed {core}")
    if plan["memtile_bytes"]["total"] != mem:
        err(f"memory tile {plan['memtile_bytes']['total']}, recomputed {mem}")
    if (plan["program_bytes"]["estimate"], plan["program_bytes"]["limit"]) != (PROGRAM_ESTIMATE, PROGRAM_BYTES):
        err(f"program memory {plan['program_bytes']}, the kept estimate is {PROGRAM_ESTIMATE} of {PROGRAM_BYTES}")
    ch = plan["channels"]
    got = [(ch[t][k]["used"], ch[t][k]["available"]) for t, k in (("core", "S2MM"), ("core", "MM2S"), ("memory tile", "S2MM"),
                                                                  ("memory tile", "MM2S"), ("shim", "MM2S"), ("shim", "S2MM"))]
    want = [(2, CORE_IN), (1, CORE_OUT), (2 + P, MT_IN), (2 * P + 1, MT_OUT), (2, SHIM_OUT), (1, SHIM_IN)]
    if got != want:
        err(f"channels {got}, recomputed {want}")
    st = plan["streams"]
    want_st = {"shim -> memory tile (up)": (2, SHIM_UP), "memory tile -> shim (down)": (1, SHIM_DOWN),
               f"memory tile -> core row {r0} (up)": (2 * P, UP), f"core row {r0} -> memory tile (down)": (P, DOWN)}
    for k, v in want_st.items():
        if k not in st or (st[k]["used"], st[k]["available"]) != v:
            err(f"stream ports {k}: {st.get(k)}, recomputed {v}")

    # The grid, steps, RTP words, calls.
    if [tuple(b) for b in plan["grid"]["blocks (first row, rows)"]] != blocks or plan["grid"]["columns used"] != len(blocks):
        err(f"grid {plan['grid']}, the host's {blocks}")
    steps = [[(f + k, min(per, n - k)) for k in range(0, n, per)] for f, n in blocks]
    if [[tuple(s) for s in c] for c in plan["steps"]["per column (first row, rows)"]] != steps:
        err("steps per column are not the host's")
    if plan["steps"]["steps"] != len(steps[0]) or plan["steps"]["rows per step (at most)"] != per:
        err(f"steps {plan['steps']['steps']} of at most {plan['steps']['rows per step (at most)']}, the host's {len(steps[0])} of {per}")
    if plan["steps"]["tasks queued per channel (at most)"] != min(flight, len(steps[0])):
        err(f"tasks queued per channel {plan['steps']['tasks queued per channel (at most)']}")
    if plan["rtp"]["per used column"] != words:
        err(f"RTP words {plan['rtp']['per used column'][:2]}..., recomputed {words[:2]}...")
    if plan["rtp"]["index"] != prog["rtp_words"]:
        err("RTP word index is not the description's")
    calls = [n * (2 * chunks + 1) for _, n in blocks]
    if plan["calls"]["per column"] != calls or plan["calls"]["kernel calls on the busiest core"] != max(calls):
        err(f"calls {plan['calls']['per column'][:3]}..., recomputed {calls[:3]}...")

    # The BDs of the largest step.
    slot = slots[0]
    x_ids, w_ids, y_ids = as_list(slot.get("x", [])), as_list(slot.get("weight", [])), as_list(slot.get("y", []))
    want_t = [("x pass 1", x_ids[0] if x_ids else -1, x_ids[1] if len(x_ids) > 1 else -1, [n0, 1, 1, cols], [xs_, 0, 0, 1], False),
              ("x pass 2", x_ids[1] if len(x_ids) > 1 else -1, -1, [n0, 1, 1, cols], [xs_, 0, 0, 1], False)]
    if weight == "row":
        want_t.append(("weight", w_ids[0], -1, [n0, 1, 1, cols], [ws_, 0, 0, 1], False))
    elif weight == "one":
        want_t.append(("weight", w_ids[0], -1, [1, 1, 1, cols], [0, 0, 0, 1], False))
    want_t.append(("y", y_ids[0], -1, [n0, 1, 1, cols], [ys_, 0, 0, 1], True))
    got_t = [(t["what"], t["bd"], t["next_bd"], t["sizes"], t["strides"], t["token"]) for t in plan["transfers"]]
    if got_t != want_t:
        err(f"BDs {got_t}, recomputed {want_t}")
    if any(t["repeat"] != n0 - 1 for t in plan["transfers"]):
        err(f"queue-push repeats {[t['repeat'] for t in plan['transfers']]}, each task runs once per row: {n0 - 1}")

    # Replay the shim from the plan's patterns, per column and step (the step's n rows from row r0): what
    # reaches the core and what is written, row by row.
    byname = {t["what"]: t for t in plan["transfers"]}
    moved = {"x": 0, "weight": 0, "y": 0}
    wrote = []
    for c, col_steps in enumerate(plan["steps"]["per column (first row, rows)"]):
        core_x, core_w = [], []
        for first, n in col_steps:
            def bd_rows(t, runs, base_row):
                # One BD: one row per execution, the iteration counter advancing after each and wrapping at
                # the iteration size; the row an execution reads is base + iteration x stride (in rows here).
                it_size, stride = t["sizes"][0], t["strides"][0]
                out, i = [], 0
                for _ in range(runs):
                    out.append(base_row + (i if stride else 0))
                    i = (i + 1) % it_size
                return out
            runs = n  # the step's tasks run n times (queue-push repeat n - 1)
            a = bd_rows(byname["x pass 1"], runs, first)
            b = bd_rows(byname["x pass 2"], runs, first)
            for ra, rb in zip(a, b):  # a chain pass: pass 1's BD, then pass 2's
                core_x += [("pass 1", ra), ("pass 2", rb)]
            moved["x"] += 4 * cols * 2 * runs
            if "weight" in byname:
                core_w += bd_rows(byname["weight"], runs, 0 if weight == "one" else first)
                moved["weight"] += 4 * cols * runs
            wrote += [(c, r) for r in bd_rows(byname["y"], runs, first)]
            moved["y"] += 4 * cols * runs
            counts["replayed rows"] += n
        f, n = blocks[c]
        if core_x != [(p_, r) for r in range(f, f + n) for p_ in ("pass 1", "pass 2")]:
            err(f"column {c}: x reaches the core as {core_x[:4]}..., not each row of {f}..{f + n - 1} twice in a row")
        if weight != "none" and core_w != ([0] * n if weight == "one" else list(range(f, f + n))):
            err(f"column {c}: the weight rows beside pass 2 are {core_w[:4]}...")
    if sorted(r for _, r in wrote) != list(range(rows)) or any(not blocks[c][0] <= r < sum(blocks[c]) for c, r in wrote):
        err("y: not every row written once, by the column whose block holds it")

    t = plan["traffic"]
    want_tr = {"x read (bytes)": 2 * rows * cols * 4, "weight read (bytes)": rows * cols * 4 if weight != "none" else 0,
               "y written (bytes)": rows * cols * 4}
    want_tr["read (bytes)"] = want_tr["x read (bytes)"] + want_tr["weight read (bytes)"]
    want_tr["written (bytes)"] = want_tr["y written (bytes)"]
    if t != want_tr:
        err(f"traffic {t}, recomputed {want_tr}")
    if (moved["x"], moved["weight"], moved["y"]) != (t["x read (bytes)"], t["weight read (bytes)"], t["y written (bytes)"]):
        err(f"the replayed BDs move {moved}, the plan says {t}")
    span = lambda s: (rows - 1) * s + cols
    if plan["tensors"]["x (arg 0)"] != span(xs_) or plan["tensors"]["y (arg 2)"] != span(ys_):
        err(f"tensors {plan['tensors']}")
    if weight != "none" and plan["tensors"]["weight (arg 1)"] != (cols if weight == "one" else span(ws_)):
        err(f"weight tensor {plan['tensors']['weight (arg 1)']}")

    # Numbers computed by hand.
    for k, v in (expect or {}).items():
        got_v = {"tile": plan["tile"], "columns used": plan["grid"]["columns used"], "steps": plan["steps"]["steps"],
                 "calls": plan["calls"]["kernel calls on the busiest core"], "core": plan["core_bytes"]["total"],
                 "memtile": plan["memtile_bytes"]["total"], "blocks": [tuple(b) for b in plan["grid"]["blocks (first row, rows)"]],
                 "rtp0": plan["rtp"]["per used column"][0], "x repeat": plan["transfers"][0]["repeat"],
                 "failed": len(failed)}.get(k, t.get(k))
        if got_v != v:
            err(f"{k}: {got_v}, computed by hand {v}")
    if expect:
        counts["anchors"] += 1
    lines.append(f"{label}: tile {T}, {len(blocks)} column(s), {len(steps[0])} step(s), x {t['x read (bytes)']} B, "
                 f"{max(calls)} calls, core {core} B, {len(failed)} failing check(s) as recomputed")
    return plan


# 1. The real description over many shapes: rows 1..600, rows of 32 .. 8192 values and longer (up to the
#    stride field's 1048576 and one past it), the three weight modes, 1..8 columns.
ROWS = [1, 2, 3, 5, 7, 8, 9, 13, 31, 63, 64, 65, 100, 128, 129, 257, 511, 513, 600]
COLS = [32, 64, 96, 128, 160, 224, 512, 896, 1024, 1056, 2048, 2080, 3072, 3584, 4096, 4128, 5120, 8192,
        8224, 16384, 65536, 1048576, 1048608]
MODES = ["row", "one", "none"]
i = 0
for columns in range(1, 9):
    for rows in ROWS:
        for cols in COLS:
            verify(REAL, rows, cols, columns, MODES[i % 3])
            i += 1
# Strided rows (wider than the row; and too narrow, and past the stride field: those fail their checks).
for rows, cols, columns, mode, xs, ws, ys in ((64, 4096, 8, "row", 4096 + 32, 3 * 4096, 5000), (600, 896, 3, "row", 1024, 896, 2048),
                                             (9, 2048, 4, "one", 3000, None, 2048 * 7), (130, 512, 2, "none", 600, None, 512),
                                             (64, 4096, 8, "row", 4000, None, None), (64, 4096, 8, "row", None, 4095, None),
                                             (64, 4096, 8, "none", None, None, 100), (3, 4096, 1, "row", 2000000, None, None),
                                             (3, 4096, 1, "row", None, None, 1048577), (70, 1024, 1, "row", None, 1048576, None),
                                             (5, 8192, 8, "one", 1048576, None, 1048576)):
    verify(REAL, rows, cols, columns, mode, xs=xs, ws=ws, ys=ys)
# A tile asked for (the host picks the largest dividing; any tile of the family that divides runs), one
# that does not divide the row, and eps at and under 2^-100.
verify(REAL, 4, 4096, 8, tile=32)
verify(REAL, 100, 1024, 2, "one", tile=256)
verify(REAL, 4, 96, 8, tile=64)             # 96 is not whole chunks of 64: fails its shape check
verify(REAL, 2, 128, 1, eps=2.0 ** -100)
verify(REAL, 2, 128, 1, eps=2.0 ** -101)    # fails the eps check

# 2. Anchors, by hand.
# rows 1 x 4096 with its weight: 4096 = 4 x 1024, tile 1024; 1 column; 1 step; x read twice 2 x 4096 x 4 =
# 32768 B, weight 16384 B, y 16384 B; calls 1 x (2 x 4 + 1) = 9; core 3 x 2 x 4096 + 24 + 1024 + 256 = 25880 B,
# memory tile 3 x 2 x 4096 = 24576 B; RTP inv_cols = 1/4096 = 2^-12: exponent 127 - 12 = 115, 0x39800000.
verify(REAL, 1, 4096, 8, "row", expect={"tile": 1024, "columns used": 1, "steps": 1, "x read (bytes)": 32768,
                                        "weight read (bytes)": 16384, "y written (bytes)": 16384, "calls": 9,
                                        "core": 25880, "memtile": 24576, "x repeat": 0,
                                        "rtp0": {"contract": 0, "rows": 1, "chunks": 4, "inv_cols": 0x39800000,
                                                 "eps": 0x358637BD, "version": 1}})
# 600 rows x 896 (Qwen2.5-0.5B), one weight row, 8 columns: 896 = 7 x 128 (256 does not divide it), tile 128;
# 75 rows per column, steps 64 + 11 = 2; calls 75 x (2 x 7 + 1) = 1125; x 2 x 600 x 896 x 4 = 4300800 B,
# weight 600 x 3584 = 2150400 B (the one row again per row), y 2150400 B; core 3 x 2 x 512 + 1304 = 4376 B.
verify(REAL, 600, 896, 8, "one", expect={"tile": 128, "columns used": 8, "steps": 2, "calls": 1125,
                                         "x read (bytes)": 4300800, "weight read (bytes)": 2150400,
                                         "y written (bytes)": 2150400, "core": 4376, "memtile": 3072, "x repeat": 63})
# 13 rows x 2080 without the weight, 3 columns: 2080 = 32 x 65 (65 odd), tile 32, 65 chunks; 13 = 3 x 4 + 1:
# blocks (0, 5), (5, 4), (9, 4); calls 5 x 131 = 655; x 2 x 13 x 2080 x 4 = 216320 B, y 108160 B, weight 0.
verify(REAL, 13, 2080, 3, "none", expect={"tile": 32, "blocks": [(0, 5), (5, 4), (9, 4)], "calls": 655,
                                          "x read (bytes)": 216320, "weight read (bytes)": 0, "y written (bytes)": 108160,
                                          "rtp0": {"contract": 1, "rows": 5, "chunks": 65, "inv_cols": bits(1 / 2080),
                                                   "eps": 0x358637BD, "version": 1}})
# 5 rows x 8192, a weight row per row, 8 columns: 5 columns of 1 row; tile 1024, 8 chunks, calls 17;
# x 2 x 5 x 32768 = 327680 B, weight and y 163840 B.
verify(REAL, 5, 8192, 8, "row", expect={"columns used": 5, "calls": 17, "x read (bytes)": 327680,
                                        "weight read (bytes)": 163840, "y written (bytes)": 163840})
# 129 rows x 4096 on 1 column: steps 64, 64, 1 = 3; calls 129 x 9 = 1161; x 2 x 129 x 16384 = 4227072 B.
verify(REAL, 129, 4096, 1, "one", expect={"steps": 3, "calls": 1161, "x read (bytes)": 4227072, "x repeat": 63})
# The longest row at contiguous strides: 1048576 = 2^20 values (the stride field), 1024 chunks: calls
# 2 x 1024 + 1 = 2049; x 2 x 4 MiB = 8388608 B. One more chunk of 32 (1048608) and its stride is past the field.
verify(REAL, 2, 1048576, 1, "row", expect={"calls": 2 * 2049, "x read (bytes)": 2 * 8388608, "failed": 0})
verify(REAL, 1, 1048608, 1, "row", expect={"tile": 32, "failed": 4})  # x pass 1, x pass 2, weight, y strides

# 3. Variants of the description (written by check_design_rms_norm.sh): what each must fail, recomputed.
before = counts["plans"]
for name in sorted(os.listdir(vdir)):
    if not name.endswith(".json") or name.startswith("refused-"):
        continue
    path = os.path.join(vdir, name)
    for rows, cols, columns, mode in ((1, 4096, 8, "row"), (64, 4096, 8, "one"), (600, 896, 8, "row"), (13, 2080, 3, "none"),
                                      (37, 1024, 1, "one"), (8, 8192, 2, "row"), (200, 4096, 1, "row")):
        verify(path, rows, cols, columns, mode)
    if "tile16" in name:
        verify(path, 8, 64, 8, tile=16)
counts["variant plans"] = counts["plans"] - before

for e in errors[:40]:
    print(f"  {e}")
if len(errors) > 40:
    print(f"  ... and {len(errors) - 40} more")
print(f"plans: {counts['plans']} recomputed ({counts['variant plans']} of variant descriptions, {counts['anchors']} held to "
      f"numbers by hand), {counts['replayed rows']} rows replayed through the shim BDs; {len(errors)} disagreement(s); e.g.")
for line in lines[:2] + [l for l in lines if not l.startswith("dataflow.json")][::12][:4]:
    print(f"  {line}")
sys.exit(1 if errors else 0)
