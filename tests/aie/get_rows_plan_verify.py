#!/usr/bin/env python3
"""The gather design's plans (aie/get_rows/design.py --print-plan --format json) against a recomputation
written here from the rules of the gather movement, sharing no code with design.py (design.py is only run,
through its command line, in this process for speed):

  - the tile (the largest of the description's xclbin tiles dividing the row), the grid (R = min(n_ids,
    columns) columns, column c the block of n_ids // R rows, one more for the first n_ids % R), the runs
    (consecutive ids, at most 256 rows each), the steps (as many runs as a BD slot has source ids), the BD
    ids of the slots in turn, every BD's offset, sizes and strides, the stream of each column (pushes, the
    token's syncs), the queue and BD counts, the runtime sequence's operands and the traffic;
  - the plan's stream replayed here: a channel never holds more tasks than its queue, a BD is never
    pushed while an unsynced step holds it, every step is synced once, in order;
  - the plan's BDs replayed row by row (every shape) and word by word (the small ones): per column, the
    words the source's BDs read, in push order, are the words y's BDs write, in push order, and y row r
    gets source row ids[r], every row of y written once, by the column whose block holds it;
  - which checks fail: exactly those the recomputation says must, for the real description and for
    variants of it (written to <tmp> by the caller), and the exit status (0 or 1) with them;
  - a few shapes held to numbers computed by hand (the comments show the arithmetic).

    get_rows_plan_verify.py <repo root> <directory of variant descriptions>
"""

import contextlib
import importlib.util
import io
import json
import os
import random
import sys

root, vdir = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("xdna_gather_design_under_test", f"{root}/aie/get_rows/design.py")
design = importlib.util.module_from_spec(spec)
spec.loader.exec_module(design)
REAL = f"{root}/aie/get_rows/dataflow.json"

# AIE2P facts and the host's run cap, written here again.
MEMTILE_BYTES, MT_IN, MT_OUT, SHIM_OUT, SHIM_IN, SHIM_UP, SHIM_DOWN = 524288, 6, 6, 2, 2, 6, 4
WRAP, ITER_MAX, REPEAT_MAX, STRIDE_MAX, LENGTH_MAX, BDS, QUEUE = 1023, 64, 255, 1 << 20, (1 << 32) - 1, 16, 4
ROWS_PER_RUN = 256

errors, lines = [], []
counts = {"plans": 0, "variant plans": 0, "anchors": 0, "replayed rows": 0, "replayed words": 0, "stream events": 0}


def run(desc_path, args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = design.main(["--dataflow", desc_path, "--print-plan", "--format", "json"] + args)
    return rc, out.getvalue(), err.getvalue()


def blocks_of(n, columns):
    used = min(n, columns)
    out, at = [], 0
    for c in range(used):
        k = n // used + (1 if c < n % used else 0)
        out.append((at, k))
        at += k
    assert at == n
    return out


def runs_of(ids, first, count):
    """Consecutive ids, at most ROWS_PER_RUN rows: (first row of y, first id, rows)."""
    out, r, end = [], first, first + count
    while r < end:
        k = 1
        while r + k < end and k < ROWS_PER_RUN and ids[r + k] == ids[r + k - 1] + 1:
            k += 1
        out.append((r, ids[r], k))
        r += k
    return out


def bd_rows(bd, row_len):
    """The rows (first word of each) a BD moves, row by row, after checking it moves each row whole and in
    order: d0 x d1 = the row, strides (1, d0)."""
    _, d2, d1, d0 = bd["sizes"]
    _, s2, s1, s0 = bd["strides"]
    if s0 != 1 or s1 != d0 or d0 * d1 != row_len:
        return None
    return [bd["offset"] + k * s2 for k in range(d2)]


def host_d0(tile, wrap):
    """The host's d0: the tile, halved while past the wrap (a row is contiguous)."""
    while tile > wrap and tile % 2 == 0:
        tile //= 2
    return tile


def bd_words(bd):
    _, d2, d1, d0 = bd["sizes"]
    _, s2, s1, s0 = bd["strides"]
    o = bd["offset"]
    return [o + a * s2 + b * s1 + c * s0 for a in range(d2) for b in range(d1) for c in range(d0)]


def verify(desc_path, ids, row_len, columns, src_rows=None, ss=None, ys=None, tile=None, expect=None, words=False):
    d = json.load(open(desc_path))
    args = ["--ids=" + ",".join(map(str, ids)), "--row-len", str(row_len), "--cols", str(columns)]
    for opt, v in (("--src-rows", src_rows), ("--src-stride", ss), ("--y-stride", ys), ("--tile", tile)):
        if v is not None:
            args += [opt, str(v)]
    name = "dataflow.json" if desc_path == REAL else os.path.basename(desc_path)
    shown = args[:]
    if len(ids) > 8:
        shown[0] = "--ids=" + ",".join(map(str, ids[:6])) + f",... ({len(ids)} ids)"
    label = f"{name} {' '.join(shown)}"
    err = lambda e: errors.append(f"{label}: {e}")
    rc, out, stderr = run(desc_path, args)
    if rc not in (0, 1):
        err(f"--print-plan exited {rc}: {stderr.strip()}")
        return None
    plan = json.loads(out)
    counts["plans"] += 1

    fam = next(k for k in d["families"] if k != "about")
    tiles = sorted(d["xclbin_tiles"][fam])
    T = tile or max(t for t in tiles if row_len % t == 0)
    if plan["tile"] != T:
        err(f"tile {plan['tile']}, the host's pick is {T}")
    src_rows = max(max(ids) + 1, 1) if src_rows is None else src_rows
    ss = row_len if ss is None else ss
    ys = row_len if ys is None else ys
    fifos = d["layouts"][0]["fifos"]
    src_f = next(f for f in fifos if f["from"] == "shim")
    y_f = next(f for f in fifos if f["to"] == "shim")
    S, Y = src_f["operand"], y_f["operand"]
    depth = lambda f: d["depths"][f["depth"]] if isinstance(f["depth"], str) else f["depth"]
    chunk = d["units"]["chunk"] * T
    mem = max(depth(src_f), depth(y_f)) * chunk
    lim, shim = d["limits"], d["shim"]
    slots, F = shim["bd_slots"], shim["steps_in_flight"]
    src_ids = [s[S] if isinstance(s[S], list) else [s[S]] for s in slots]
    per = min(len(x) for x in src_ids)  # slots of unequal sizes fail their check; the steps take the fewest
    d0 = host_d0(T, lim["wrap_max"])
    d1 = row_len // d0

    # The schedule, recomputed.
    blocks = blocks_of(len(ids), columns)
    cols = []
    for c, (first, count) in enumerate(blocks):
        runs = runs_of(ids, first, count)
        steps = [list(range(k, min(k + per, len(runs)))) for k in range(0, len(runs), per)]
        bds, stream = [], []
        for s, members in enumerate(steps):
            slot = s % len(slots)
            for j, i in enumerate(members):
                y0, id0, m = runs[i]
                bds.append((S, s, i, src_ids[slot][j], id0 * ss, [1, m, d1, d0], [0, ss if m > 1 else 0, d0, 1], False))
                stream.append(["push", S, src_ids[slot][j], s])
            y0 = runs[members[0]][0]
            m = sum(runs[i][2] for i in members)
            bds.append((Y, s, None, slots[slot][Y], y0 * ys, [1, m, d1, d0], [0, ys if m > 1 else 0, d0, 1], True))
            stream.append(["push", Y, slots[slot][Y], s])
            if s - (F - 1) >= 0:
                stream.append(["sync", s - (F - 1)])
        for s in range(len(steps) - (F - 1), len(steps)):
            if s >= 0:
                stream.append(["sync", s])
        cols.append((runs, steps, bds, stream))

    # Which checks must fail, recomputed.
    want_fail = set()
    if d["array"]["core_rows"] != 0 or "core_program" in d: want_fail.add("array: no cores")
    if d["array"]["max_columns"] > 8: want_fail.add("array: the description's columns")
    if any(t & (t - 1) for t in tiles): want_fail.add("family tiles")
    if mem > min(d["core_budget"]["memtile_bytes"], MEMTILE_BYTES): want_fail.add("memory tile: one buffer set")
    if d["core_budget"]["memtile_bytes"] > MEMTILE_BYTES: want_fail.add("memory tile: the description's budget")
    if lim["wrap_max"] > WRAP: want_fail.add("limits.wrap_max")
    if lim["stride_max"] > STRIDE_MAX: want_fail.add("limits.stride_max")
    if lim["iteration_max"] > ITER_MAX: want_fail.add("limits.iteration_max")
    if lim["repeat_max"] > REPEAT_MAX: want_fail.add("limits.repeat_max")
    if row_len % T: want_fail.add("shape: the row in whole chunks")
    if any(not 0 <= i < src_rows for i in ids): want_fail.add("ids inside")
    for nm, s, rows in ((S, ss, src_rows), (Y, ys, len(ids))):  # an operand of one row has no row stride
        if rows > 1 and s < row_len: want_fail.add(f"{nm} row stride covers")
        if rows > 1 and s > lim["stride_max"]: want_fail.add(f"{nm} row stride within")
    if len(slots) != F or len({len(x) for x in src_ids}) != 1 or any(not isinstance(s[Y], int) for s in slots):
        want_fail.add("shim BD slots")
    flat = [i for s, x in zip(slots, src_ids) for i in x + [s[Y]]]
    if len(set(flat)) != len(flat) or any(not 0 <= i < shim["bds"] for i in flat): want_fail.add("shim BD ids")
    if shim["bds"] > BDS: want_fail.add("shim: the description's bds")
    if F * (min(len(x) for x in src_ids) + 1) > min(shim["bds"], BDS): want_fail.add("shim BDs in flight")
    if F * min(len(x) for x in src_ids) > QUEUE: want_fail.add(f"shim task queue per channel: {S}")
    if F > QUEUE: want_fail.add(f"shim task queue per channel: {Y}")
    every = [b for _, _, bds, _ in cols for b in bds]
    if d0 > lim["wrap_max"]: want_fail.add("shim BDs: d0")
    if d1 > lim["wrap_max"]: want_fail.add("shim BDs: d1")
    if any(max(b[6]) > lim["stride_max"] for b in every): want_fail.add("shim BDs: strides")
    if any(b[5][1] * b[5][2] * b[5][3] > LENGTH_MAX for b in every): want_fail.add("shim BDs: buffer length")

    failed = [c["check"] for c in plan["checks"] if not c["ok"]]
    matched = set()
    for f in failed:
        hit = [w for w in want_fail if f.startswith(w)]
        if not hit:
            err(f"check failed that should pass: {f}")
        matched.update(hit)
    for w in sorted(want_fail - matched):
        err(f"check passed that must fail: {w}")
    if rc != (1 if failed else 0):
        err(f"design.py exited {rc} with {len(failed)} failed check(s)")
    if plan["checks failed"] != [f"{c['check']}: {c['detail']}" for c in plan["checks"] if not c["ok"]]:
        err("'checks failed' is not the failed checks")

    # Budgets, channels, ports.
    if plan["memtile_bytes"]["total"] != mem:
        err(f"memory tile {plan['memtile_bytes']['total']}, recomputed {mem} (one buffer set)")
    ch = plan["channels"]
    got = [(ch[t][k]["used"], ch[t][k]["available"]) for t, k in (("memory tile", "S2MM"), ("memory tile", "MM2S"),
                                                                  ("shim", "MM2S"), ("shim", "S2MM"))]
    if got != [(1, MT_IN), (1, MT_OUT), (1, SHIM_OUT), (1, SHIM_IN)]:
        err(f"channels {got}")
    st = plan["streams"]
    if [(v["used"], v["available"]) for v in st.values()] != [(1, SHIM_UP), (1, SHIM_DOWN)]:
        err(f"stream ports {st}")

    # The grid, runs, steps, BDs, stream.
    if [tuple(b) for b in plan["grid"]["blocks (first row, rows)"]] != blocks or plan["grid"]["columns used"] != len(blocks):
        err(f"grid {plan['grid']}, the host's {blocks}")
    if len(plan["per_column"]) != len(cols):
        err(f"{len(plan['per_column'])} columns planned, {len(cols)} used")
        return plan
    for c, ((runs, steps, bds, stream), pc) in enumerate(zip(cols, plan["per_column"])):
        if [tuple(r) for r in pc["runs (first row of y, first id, rows)"]] != runs:
            err(f"column {c}: runs {pc['runs (first row of y, first id, rows)'][:4]}..., recomputed {runs[:4]}...")
        if [s["runs"] for s in pc["steps"]] != steps:
            err(f"column {c}: steps {[s['runs'] for s in pc['steps']][:4]}..., recomputed {steps[:4]}...")
        got_b = [(b["what"], b["step"], b["run"], b["bd"], b["offset"], b["sizes"], b["strides"], b["token"]) for b in pc["bds"]]
        if got_b != bds:
            diff = next((j for j, (a, b) in enumerate(zip(got_b, bds)) if a != b), min(len(got_b), len(bds)))
            err(f"column {c}: BD {diff}: {got_b[diff:diff + 1]}, recomputed {bds[diff:diff + 1]} ({len(got_b)} vs {len(bds)} BDs)")
        if pc["stream"] != stream:
            diff = next((j for j, (a, b) in enumerate(zip(pc["stream"], stream)) if a != b), min(len(pc["stream"]), len(stream)))
            err(f"column {c}: stream event {diff}: {pc['stream'][diff:diff + 2]}, recomputed {stream[diff:diff + 2]}")

    # Replay the plan's stream: queues, BDs in use, syncs. A description whose queue or BD checks fail may
    # overflow them (the plan says so); any other plan must not.
    replay_err = err if not (want_fail & {f"shim task queue per channel: {S}", f"shim task queue per channel: {Y}",
                                          "shim BD slots", "shim BD ids", "shim BDs in flight"}) else (lambda e: None)
    worst_src = worst_y = worst_bd = 0
    for c, pc in enumerate(plan["per_column"]):
        queued = {S: [], Y: []}   # per channel: the steps of its unfinished tasks
        held = {}                 # BD id -> step holding it
        synced = []
        for ev in pc["stream"]:
            counts["stream events"] += 1
            if ev[0] == "push":
                _, what, bd, s = ev
                if bd in held:
                    replay_err(f"column {c}: BD {bd} pushed for step {s} while step {held[bd]} holds it (not synced)")
                held[bd] = s
                queued[what].append(s)
                if len(queued[what]) > QUEUE:
                    replay_err(f"column {c}: {len(queued[what])} tasks queued on {what}'s channel, its queue holds {QUEUE}")
            else:
                s = ev[1]
                if synced and s != synced[-1] + 1 or not synced and s != 0:
                    err(f"column {c}: sync on step {s} after {synced[-1:]}")
                synced.append(s)
                # A step's y token: every task of that step and the earlier ones are done.
                for k in queued:
                    queued[k] = [x for x in queued[k] if x > s]
                held = {b: x for b, x in held.items() if x > s}
            worst_src = max(worst_src, len(queued[S]))
            worst_y = max(worst_y, len(queued[Y]))
            worst_bd = max(worst_bd, len(held))
        if synced != list(range(len(pc["steps"]))):
            err(f"column {c}: syncs {synced[:6]}..., every step once in order expected")
    sch = plan["schedule"]
    if (sch[f"{S} tasks queued per channel (at most)"], sch[f"{Y} tasks queued per channel (at most)"],
            sch["shim BDs in use per column (at most)"]) != (worst_src, worst_y, worst_bd):
        err(f"queues and BDs in use {sch}, replayed {worst_src}, {worst_y}, {worst_bd}")
    if (sch["rows per run (at most)"], sch["runs per step (at most)"], sch["steps in flight"]) != (ROWS_PER_RUN, per, F):
        err(f"schedule {sch}")
    if sch["steps (most of a column)"] != max(len(x[1]) for x in cols) or \
            sch["runs per column"] != [len(x[0]) for x in cols] or sch["steps per column"] != [len(x[1]) for x in cols]:
        err(f"steps {sch}")

    # Replay the plan's BDs, row by row: per column the source rows read (push order) against the y rows
    # written (push order); within a step the rows of its source tasks are the rows of its y task.
    wrote = []
    ok_rows = row_len % T == 0 and ss > 0 and ys > 0 and (src_rows <= 1 or ss >= row_len) and \
        (len(ids) <= 1 or ys >= row_len)
    for c, pc in enumerate(plan["per_column"] if ok_rows else []):
        rd, wr = [], []
        for b in pc["bds"]:
            rows = bd_rows(b, row_len)
            if rows is None:
                err(f"column {c}: BD {b} does not move whole rows in order")
                break
            (rd if b["what"] == S else wr).extend(rows)
        if True:
            if len(rd) != len(wr):
                err(f"column {c}: {len(rd)} rows read, {len(wr)} written")
            for a, b in zip(rd, wr):
                if a % ss or b % ys or ids[b // ys] != a // ss:
                    err(f"column {c}: y word {b} gets source word {a}, not row ids[{b // ys}]")
                    break
                wrote.append((c, b // ys))
            counts["replayed rows"] += len(wr)
        per_step = {}
        for b in pc["bds"]:
            per_step.setdefault(b["step"], [0, 0])[0 if b["what"] == S else 1] += b["sizes"][1]
        bad = [s for s, (a, b) in per_step.items() if a != b]
        if bad:
            err(f"column {c}: step {bad[0]}'s source tasks move {per_step[bad[0]][0]} rows, its y task "
                f"{per_step[bad[0]][1]}: the token would not free them")
    if ok_rows:
        if sorted(r for _, r in wrote) != list(range(len(ids))) or \
                any(not blocks[c][0] <= r < sum(blocks[c]) for c, r in wrote):
            err("y: not every row written once, by the column whose block holds it")
    # ... and word by word for the small shapes: the memory tile forwards the chunks in order, so the
    # k-th word read is the k-th word written.
    if words and ok_rows:
        for c, pc in enumerate(plan["per_column"]):
            rd = [w for b in pc["bds"] if b["what"] == S for w in bd_words(b)]
            wr = [w for b in pc["bds"] if b["what"] == Y for w in bd_words(b)]
            want = {}
            for r in range(*[blocks[c][0], sum(blocks[c])]):
                for i in range(row_len):
                    want[r * ys + i] = ids[r] * ss + i
            if len(rd) != len(wr) or dict(zip(wr, rd)) != want or len(set(wr)) != len(wr):
                err(f"column {c}: the words written are not y[r][i] = src[ids[r]][i] of the column's rows")
            counts["replayed words"] += len(wr)

    # Operands and traffic.
    t = plan["traffic"]
    want_b = 4 * len(ids) * row_len
    if t != {f"{S} read (bytes)": want_b, f"{Y} written (bytes)": want_b, "read (bytes)": want_b, "written (bytes)": want_b}:
        err(f"traffic {t}, recomputed {want_b} each way")
    src_arg = next(o["arg"] for o in d["operands"] if o["name"] == S)
    y_arg = next(o["arg"] for o in d["operands"] if o["name"] == Y)
    want_t = {f"{S} (arg {src_arg})": (src_rows - 1) * ss + row_len, f"{Y} (arg {y_arg})": (len(ids) - 1) * ys + row_len}
    if plan["tensors"] != want_t:
        err(f"tensors {plan['tensors']}, recomputed {want_t}")

    for k, v in (expect or {}).items():
        pcs = plan["per_column"]
        got_v = {"tile": plan["tile"], "columns used": plan["grid"]["columns used"],
                 "blocks": [tuple(b) for b in plan["grid"]["blocks (first row, rows)"]],
                 "runs": [[tuple(r) for r in pc["runs (first row of y, first id, rows)"]] for pc in pcs],
                 "steps": plan["schedule"]["steps per column"], "bytes": t["read (bytes)"],
                 "bd0": [(b["what"], b["bd"], b["offset"], b["sizes"], b["strides"]) for b in pcs[0]["bds"][:3]],
                 "stream1": pcs[1]["stream"] if len(pcs) > 1 else None, "stream0": pcs[0]["stream"],
                 "src queued": plan["schedule"][f"{S} tasks queued per channel (at most)"],
                 "failed": len(failed)}[k]
        if got_v != v:
            err(f"{k}: {got_v}, computed by hand {v}")
    if expect:
        counts["anchors"] += 1
    lines.append(f"{label}: tile {T}, {len(blocks)} column(s), runs {[len(x[0]) for x in cols][:8]}, "
                 f"steps {[len(x[1]) for x in cols][:8]}, {len(failed)} failing check(s) as recomputed")
    return plan


rng = random.Random(20240617)


def ids_with_runs(n, src_rows):
    """Random runs of consecutive ids (some past the run cap), random jumps, repeats and descents."""
    out = []
    while len(out) < n:
        kind = rng.random()
        if kind < 0.5:
            k = rng.choice([1, 2, 3, 7, 40, 255, 256, 257, 300])
            start = rng.randrange(0, max(1, src_rows - k))
            out += list(range(start, min(start + k, src_rows)))
        elif kind < 0.7:
            out += [rng.randrange(src_rows)] * rng.choice([2, 3, 5])
        elif kind < 0.85:
            start = rng.randrange(src_rows)
            out += list(range(start, max(-1, start - rng.choice([2, 5, 30])), -1))
        else:
            out.append(rng.randrange(src_rows))
    return out[:n]


# 1. The real description over many shapes: one id, runs, repeats, descending, random; 1..8 columns; every
#    tile (the host's pick from the row, and each tile asked for); strided rows.
ROW_LENS = [32, 64, 96, 128, 160, 896, 1024, 2048, 3072, 4096, 5120, 8192]
SHAPES = []
for columns in range(1, 9):
    for n in (1, 2, 3, 5, 7, 8, 9, 16, 33, 64, 129, 300, 600, 1000):
        for row_len in ROW_LENS[(n + columns) % 4::4]:
            src_rows = rng.choice([max(1, n), 1000, 70000])
            SHAPES.append((ids_with_runs(n, src_rows), row_len, columns, src_rows, None, None, None))
for columns in (1, 3, 8):
    SHAPES += [([5], 4096, columns, 64, None, None, None),
               (list(range(600)), 896, columns, 600, None, None, None),
               (list(range(599, -1, -1)), 896, columns, 600, None, None, None),
               ([9] * 40, 128, columns, 10, None, None, None),
               (list(range(1000, 2000)), 2048, columns, 5000, None, None, None),
               ([0, 2, 4, 6, 8, 10, 12, 14, 16], 64, columns, 17, None, None, None)]
# Every tile asked for, on rows each of them divides.
for t in (32, 64, 128, 256, 512, 1024):
    for columns in (1, 3, 8):
        ids = ids_with_runs(37, 500)
        SHAPES.append((ids, 4096, columns, 500, None, None, t))
        SHAPES.append((ids, 2048, columns, 500, 2048 + 64, 3000, t))   # strided: at 1024 a run of rows fails d0
# Strided rows (wider than the row; too narrow; past the stride field), ids outside the source, a tile
# that does not divide the row.
SHAPES += [(ids_with_runs(50, 200), 1024, 8, 200, 1088, 4096, None), (ids_with_runs(50, 200), 512, 3, 200, 600, 512, None),
           ([3, 4, 5], 4096, 8, 10, 4000, None, None), ([3, 4, 5], 4096, 8, 10, None, 100, None),
           ([1, 2], 4096, 1, 3, 2000000, None, None), ([1, 2], 4096, 1, 3, None, 1048577, None),
           ([0], 1024, 1, 1, 1048576, 1048576, None), ([0, 1], 2048, 2, 2, 4096, 4096, 1024),
           ([5, 70], 4096, 8, 64, None, None, None), ([-1, 0, 1], 4096, 8, 64, None, None, None),
           ([63, 64], 128, 2, 64, None, None, None), ([1, 2, 3], 96, 8, 8, None, None, 64)]
for ids, row_len, columns, src_rows, ss, ys, tile in SHAPES:
    small = len(ids) * row_len <= 40000
    verify(REAL, ids, row_len, columns, src_rows, ss, ys, tile, words=small)

# 2. Anchors, by hand.
# One id 5 of 64 rows x 4096: 4096 = 4 x 1024, tile 1024; one column, one run, one step; the source BD at 5 x
# 4096 = 20480 words, 1 row (no row stride) of 8 x 512 (1024 past the 1023 wrap, halved); y's at 0; 16384
# bytes each way; push src 0, y 2, sync 0.
verify(REAL, [5], 4096, 8, 64, expect={"tile": 1024, "columns used": 1, "runs": [[(0, 5, 1)]], "steps": [1],
                                       "bytes": 16384,
                                       "bd0": [("src", 0, 20480, [1, 1, 8, 512], [0, 0, 512, 1]),
                                               ("y", 2, 0, [1, 1, 8, 512], [0, 0, 512, 1])],
                                       "stream0": [["push", "src", 0, 0], ["push", "y", 2, 0], ["sync", 0]]})
# Every token's row (prefill, ids 0..599) of 896 values on 8 columns: 896 = 7 x 128 (256 does not divide it),
# tile 128; 75 rows per column, one run each, one step; 600 x 896 x 4 = 2150400 bytes.
verify(REAL, list(range(600)), 896, 8, 600, expect={"tile": 128, "steps": [1] * 8, "bytes": 2150400,
                                                    "runs": [[(75 * c, 75 * c, 75)] for c in range(8)]})
# ids 3 4 5 9 9 2 1 0 7 8 on 3 columns: 10 = 3 x 3 + 1, blocks (0, 4), (4, 3), (7, 3); column 0: 3 4 5 | 9,
# column 1: 9 | 2 | 1 (three runs: two steps, the second on slot 1: src BD 8, y BD 10), column 2: 0 | 7 8.
verify(REAL, [3, 4, 5, 9, 9, 2, 1, 0, 7, 8], 2048, 3, 10,
       expect={"blocks": [(0, 4), (4, 3), (7, 3)], "steps": [1, 2, 1],
               "runs": [[(0, 3, 3), (3, 9, 1)], [(4, 9, 1), (5, 2, 1), (6, 1, 1)], [(7, 0, 1), (8, 7, 2)]],
               "stream1": [["push", "src", 0, 0], ["push", "src", 1, 0], ["push", "y", 2, 0], ["push", "src", 8, 1],
                           ["push", "y", 10, 1], ["sync", 0], ["sync", 1]]})
# ids 0..599 on one column, rows of 64: runs of 256, 256, 88 (the cap); steps (256 + 256), (88): y's first BD
# 512 rows at 0, src's second 256 rows from id 256 = 256 x 64 = 16384 words; tile 64.
verify(REAL, list(range(600)), 64, 1, 600,
       expect={"runs": [[(0, 0, 256), (256, 256, 256), (512, 512, 88)]], "steps": [2], "tile": 64,
               "bd0": [("src", 0, 0, [1, 256, 1, 64], [0, 64, 64, 1]), ("src", 1, 16384, [1, 256, 1, 64], [0, 64, 64, 1]),
                       ("y", 2, 0, [1, 512, 1, 64], [0, 64, 64, 1])]})
# ids 7 6 5 4 3 2 1 0 on one column: eight runs of one row, four steps on slots 0 1 0 1; at most two steps
# queued: 4 source tasks (the queue's 4).
verify(REAL, list(range(7, -1, -1)), 32, 1, 8,
       expect={"steps": [4], "src queued": 4,
               "stream0": [["push", "src", 0, 0], ["push", "src", 1, 0], ["push", "y", 2, 0],
                           ["push", "src", 8, 1], ["push", "src", 9, 1], ["push", "y", 10, 1], ["sync", 0],
                           ["push", "src", 0, 2], ["push", "src", 1, 2], ["push", "y", 2, 2], ["sync", 1],
                           ["push", "src", 8, 3], ["push", "src", 9, 3], ["push", "y", 10, 3], ["sync", 2], ["sync", 3]]})
# Strided rows at tile 1024: 2048 values (tile 1024), source stride 3000: the run 0 1 is two rows 3000 apart,
# each as 4 x 512 words (d0 halved); y's two rows 2048 apart; nothing fails.
verify(REAL, [0, 1], 2048, 1, 2, 3000, expect={"tile": 1024, "failed": 0,
                                               "bd0": [("src", 0, 0, [1, 2, 4, 512], [0, 3000, 512, 1]),
                                                       ("y", 2, 0, [1, 2, 4, 512], [0, 2048, 512, 1])]})
# One id: y's stride may be anything (one row, no row stride), the source's must cover its rows.
verify(REAL, [3], 1024, 8, 4, ys=100, expect={"failed": 0})
verify(REAL, [3], 1024, 8, 4, ss=100, expect={"failed": 1})

# 3. Variants of the description (written by check_design_get_rows.sh): what each must fail, recomputed.
before = counts["plans"]
for name in sorted(os.listdir(vdir)):
    if not name.endswith(".json") or name.startswith("refused-"):
        continue
    path = os.path.join(vdir, name)
    for ids, row_len, columns in (([5], 4096, 8), (list(range(7, -1, -1)), 1024, 1), (ids_with_runs(100, 400), 896, 3),
                                  (list(range(600)), 4096, 8)):
        verify(path, ids, row_len, columns)
counts["variant plans"] = counts["plans"] - before

for e in errors[:40]:
    print(f"  {e}")
if len(errors) > 40:
    print(f"  ... and {len(errors) - 40} more")
print(f"plans: {counts['plans']} recomputed ({counts['variant plans']} of variant descriptions, {counts['anchors']} held to "
      f"numbers by hand); replayed {counts['stream events']} stream events, {counts['replayed rows']} rows and "
      f"{counts['replayed words']} words through the BDs; {len(errors)} disagreement(s); e.g.")
for line in lines[:2] + [l for l in lines if not l.startswith("dataflow.json")][::7][:4]:
    print(f"  {line}")
sys.exit(1 if errors else 0)
