#!/usr/bin/env python3
"""The scatter design's plans (aie/set_rows/design.py --print-plan --format json) against a recomputation
written here from the rules of the scatter movement, sharing no code with design.py (design.py is only run,
through its command line, in this process for speed):

  - the tile (the largest key of the family's kernel_stack dividing the row), the y chunk (the tile's values
    in the family's unit: "half" 2 bytes a value, "q8_0" 34 bytes a 32 values), the grid (R = min(rows,
    columns) row blocks x S segments of each row's chunks, S = 1 when rows >= columns, else max(1,
    min(chunks, columns // rows)); blocks and segments consecutive, the first ones one larger), the RTP
    words per used column (contract 0, the block's rows x the segment's chunks, the layout version) and the
    barrier's set, the runs (consecutive ids, at most 256 rows), the steps (as many runs as a BD slot has y
    ids), every BD's id, offset, sizes, strides and token, the one stream of the invocation (every column's
    RTP words and barrier first; per step, every column's x task then its y tasks; the syncs of step k - 1
    after step k's pushes, the last step's at the end), the queue and BD counts, operands and traffic;
  - the plan's stream replayed here: the RTP words and barrier of every used column before any push, a
    channel never holds more tasks than its queue, a BD is never pushed while an unsynced step holds it,
    exactly a step's last y task carries the token, every step synced once, in order, after all its pushes;
  - the plan's BDs replayed row by row (every shape): each column's rows of x read in push order land, a
    row's segment each, at the rows of y their ids name, every row of x read once by the column whose block
    holds it; and byte by byte (the small shapes): x's words cut into chunks of the tile, each chunk
    "converted" keeping value indices (byte b of a y chunk stands for value b // 2 of an F16 chunk, for the
    first value of block b // 34 of a Q8_0 chunk), the y bytes written in push order: every byte of every
    id's row of y is written once, with its own value, and no other byte of y is touched;
  - which checks fail: exactly those the recomputation says must, for the real description and for variants
    of it (written to <tmp> by the caller), and the exit status (0 or 1) with them;
  - a few shapes held to numbers computed by hand (the comments show the arithmetic).

    set_rows_plan_verify.py <repo root> <directory of variant descriptions>
"""

import contextlib
import importlib.util
import io
import json
import os
import random
import re
import sys

root, vdir = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("xdna_scatter_design_under_test", f"{root}/aie/set_rows/design.py")
design = importlib.util.module_from_spec(spec)
spec.loader.exec_module(design)
REAL = f"{root}/aie/set_rows/dataflow.json"

# AIE2P facts and the host's rules, written here again.
CORE_MEM, MEMTILE_MEM = 65536, 524288
WRAP, ITERS, REPEATS, STRIDE, LENGTH, BDS, QUEUE = 1023, 64, 255, 1 << 20, (1 << 32) - 1, 16, 4
RUN_CAP = 256          # kScatterRunRows (= kRowsPerStep)
HOST_IN_FLIGHT = 2     # the host syncs step k - 1 after step k

errors, lines = [], []
counts = {"plans": 0, "variant plans": 0, "anchors": 0, "stream events": 0, "replayed rows": 0,
          "replayed bytes": 0}


def run(desc_path, args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = design.main(["--dataflow", desc_path, "--print-plan", "--format", "json"] + args)
    return rc, out.getvalue(), err.getvalue()


def deal(total, n):
    """n consecutive blocks of total items, sizes differing by at most one, the larger first: (first, size)."""
    out, at = [], 0
    for i in range(n):
        k = (total + n - 1 - i) // n   # the first total % n blocks get the extra item
        out.append((at, k))
        at += k
    assert at == total
    return out


def halve(words, wrap):
    """rows_bd's d0: the chunk, halved while past the wrap and even."""
    while words > wrap and words % 2 == 0:
        words //= 2
    return words


def runs_of(ids, first, count):
    """(first row of x, first id, rows) of each run of consecutive ids, at most RUN_CAP rows."""
    out, r, end = [], first, first + count
    while r < end:
        k = 1
        while r + k < end and k < RUN_CAP and ids[r + k] == ids[r + k - 1] + 1:
            k += 1
        out.append((r, ids[r], k))
        r += k
    return out


def y_chunk_of(spec, tile):
    if isinstance(spec, int):
        return spec * tile
    return None if tile % spec["values"] else spec["bytes"] * tile // spec["values"]


def value_of_byte(spec, b):
    """The (first) value of the chunk a byte of its converted chunk stands for."""
    if isinstance(spec, int):
        return b // spec
    return b // spec["bytes"] * spec["values"]


KERNEL_CACHE = {}


def kernel_facts(desc_path, d, fam):
    """(symbol, file, parameter kinds, loop step, min iteration hint) of the family's one program, read here."""
    sym = d["families"][fam][0]
    src = d["core_budget"]["kernel_stack"][fam]["source"]
    kdir = os.path.join(os.path.dirname(desc_path), "kernels")
    if not os.path.isfile(os.path.join(kdir, src)):
        kdir = os.path.join(root, "aie", d["design"], "kernels")
    key = (kdir, src, sym)
    if key not in KERNEL_CACHE:
        text = open(os.path.join(kdir, src)).read()
        m = re.search(r"void\s+" + sym + r"\s*\(([^)]*)\)", text)
        params = [x.strip() for x in m.group(1).split(",")]
        kinds = ["pointer" if "*" in x else "int32" if "int32_t" in x else x for x in params]
        body = text[m.end():]
        step_name = re.search(r"\+=\s*([\w:]+)\s*\)", body).group(1).split("::")[-1]
        lanes = None
        for t in [text] + [open(os.path.join(root, "aie/include", h)).read()
                           for h in re.findall(r'#include\s+"(xdna_aie/[^"]+)"', text)]:
            v = re.search(r"\b" + step_name + r"\s*=\s*(\d+)", t)
            if v:
                lanes = int(v.group(1))
                break
        hint = int(re.search(r"MIN_ITERATION_COUNT\((\d+)\)", body).group(1))
        KERNEL_CACHE[key] = (sym, src, kinds, "float" in params[0], lanes, hint)
    return KERNEL_CACHE[key]


def bd_rows(bd, seg_words):
    """The first word of each row a BD moves, after checking it moves each row's segment whole and in order:
    d0 x d1 = the segment, strides (1, d0). None when it does not."""
    _, d2, d1, d0 = bd["sizes"]
    _, s2, s1, s0 = bd["strides"]
    if bd["offset (bytes)"] % 4 or s0 != 1 or s1 != d0 or d0 * d1 != seg_words:
        return None
    return [bd["offset (bytes)"] // 4 + k * s2 for k in range(d2)]


def words_of(bd):
    _, d2, d1, d0 = bd["sizes"]
    _, s2, s1, s0 = bd["strides"]
    o = bd["offset (bytes)"] // 4
    return [o + a * s2 + b * s1 + c for a in range(d2) for b in range(d1) for c in range(d0)]


def verify(desc_path, fam, ids, row_len, columns, xs=None, yr=None, ys=None, tile=None, expect=None, small=False):
    d = json.load(open(desc_path))
    args = ["--family", fam, "--ids=" + ",".join(map(str, ids)), "--row-len", str(row_len), "--cols", str(columns)]
    for opt, v in (("--x-stride", xs), ("--y-rows", yr), ("--y-stride", ys), ("--tile", tile)):
        if v is not None:
            args += [opt, str(v)]
    name = "dataflow.json" if desc_path == REAL else os.path.basename(desc_path)
    shown = args[:]
    if len(ids) > 8:
        shown[2] = "--ids=" + ",".join(map(str, ids[:6])) + f",... ({len(ids)} ids)"
    label = f"{name} {' '.join(shown)}"
    err = lambda e: errors.append(f"{label}: {e}")
    rc, out, stderr = run(desc_path, args)
    if rc not in (0, 1):
        err(f"--print-plan exited {rc}: {stderr.strip()}")
        return None
    plan = json.loads(out)
    counts["plans"] += 1

    # The description, read here.
    lay = next(l for l in d["layouts"] if l["name"] == fam)
    fifo = {f["name"]: f for f in lay["fifos"]}
    x_mem = next(f for f in lay["fifos"] if f.get("shim_channel", {}).get("direction") == "mm2s")
    y_mem = next(f for f in lay["fifos"] if f.get("shim_channel", {}).get("direction") == "s2mm")
    x_core = next(f for f in lay["fifos"] if f.get("source") == x_mem["name"])
    y_core = next(f for f in lay["fifos"] if f.get("sink") == y_mem["name"])
    X, Y = x_mem["operand"], y_mem["operand"]
    depth = lambda f: d["depths"][f["depth"]] if isinstance(f["depth"], str) else f["depth"]
    stack_tab = d["core_budget"]["kernel_stack"][fam]
    tiles = sorted(int(k) for k in stack_tab if k.isdigit())
    T = tile or max(t for t in tiles if row_len % t == 0)
    if plan["tile"] != T:
        err(f"tile {plan['tile']}, the host's pick is {T}")
        return plan
    yspec = d["units"][y_mem["object"]["unit"]]
    xchunk = d["units"][x_mem["object"]["unit"]] * T
    ychunk = y_chunk_of(yspec, T)
    y_ok = ychunk is not None and ychunk > 0 and ychunk % 4 == 0
    yw = (ychunk or 0) // 4
    n = len(ids)
    chunks = row_len // T
    yrow = chunks * (ychunk or 0)
    xs = row_len if xs is None else xs
    yr = max(ids) + 1 if yr is None else yr
    ys = yrow if ys is None else ys
    lim, shim, prog, arr = d["limits"], d["shim"], d["core_program"], d["array"]
    wrap, smax = lim["wrap_max"], lim["stride_max"]
    slots = shim["bd_slots"]
    F = shim["steps_in_flight"]
    xl = [s[X] if isinstance(s[X], list) else [s[X]] for s in slots]
    yl = [s[Y] if isinstance(s[Y], list) else [s[Y]] for s in slots]
    per = min(len(v) for v in yl)

    # The grid, the RTP words, the runs, steps, BDs and the stream, recomputed.
    R = min(n, columns)
    S = 1 if n >= columns else max(1, min(chunks, columns // n))
    blocks, segs = deal(n, R), deal(chunks, S)
    grid = [(blocks[c // S], segs[c % S]) for c in range(R * S)]
    idx = prog["rtp_words"]
    stream, rtp = [], []
    for c, ((_, k), (_, g)) in enumerate(grid):
        w = [0] * prog["rtp_word_count"]
        w[idx["contract"]], w[idx["chunks"]], w[idx["version"]] = 0, k * g, prog["rtp_layout_version"]
        rtp.append((c, w, k * g))
        stream += [["rtp", c, arr["first_core_row"], prog["rtp_core_address"], w],
                   ["barrier", c, arr["first_core_row"], prog["barrier"]["lock"], prog["barrier"]["set_value"]]]
    xd0, yd0 = halve(T, wrap), max(1, halve(yw, wrap))
    cols = []
    for c, ((first, k), (c0, g)) in enumerate(grid):
        runs = runs_of(ids, first, k)
        steps = [list(range(i, min(i + per, len(runs)))) for i in range(0, len(runs), per)]
        bds = []
        for s, members in enumerate(steps):
            sl = s % len(slots)
            r0, m = runs[members[0]][0], sum(runs[i][2] for i in members)
            bds.append((X, s, None, xl[sl][0], 4 * (r0 * xs + c0 * T), [1, m, g * T // xd0, xd0],
                        [0, xs if m > 1 else 0, xd0, 1], False))
            for j, i in enumerate(members):
                _, id0, rows = runs[i]
                bds.append((Y, s, i, yl[sl][j], id0 * ys + c0 * (ychunk or 0), [1, rows, g * yw // yd0, yd0],
                            [0, ys // 4 if rows > 1 else 0, yd0, 1], j == len(members) - 1))
        cols.append((runs, steps, bds))
    most = max(len(x[1]) for x in cols)
    for s in range(most):
        for c, (_, _, bds) in enumerate(cols):
            stream += [["push", c, b[0], b[3], s, b[7], 0] for b in bds if b[1] == s]
        if s:
            stream += [["sync", c, arr["shim_row"], "s2mm", y_mem["shim_channel"]["channel"], s - 1]
                       for c, x in enumerate(cols) if s - 1 < len(x[1])]
    stream += [["sync", c, arr["shim_row"], "s2mm", y_mem["shim_channel"]["channel"], most - 1]
               for c, x in enumerate(cols) if most - 1 < len(x[1])]

    # Which checks must fail, recomputed.
    want = set()
    if arr["core_rows"] != 1 or not 1 <= arr["max_columns"] <= 8 or arr["shim_row"] != 0 or arr["memtile_row"] != 1 \
            or not 2 <= arr["first_core_row"] <= 5:
        want.add("array: one core per column")
    if any(t & (t - 1) or not 128 <= t <= 1024 for t in tiles): want.add("family tiles")
    sym, src, kinds, xfloat, lanes, hint = kernel_facts(desc_path, d, fam)
    if kinds != ["pointer", "pointer", "int32"] or not xfloat: want.add(f"kernel {sym} ({src}) takes")
    if T % lanes: want.add(f"kernel {sym} ({src}) tile in whole steps")
    if T // lanes < hint: want.add(f"kernel {sym} ({src}) loop keeps")
    if ychunk is None: want.add("y chunk: the tile in whole units")
    if not y_ok: want.add("y chunk in whole 32-bit words")
    core = depth(x_core) * xchunk + depth(y_core) * (ychunk or 0) + 4 * prog["rtp_word_count"] + stack_tab[str(T)] + \
        d["core_budget"]["kernel_data_bytes"]
    core_cap = min(d["core_budget"]["core_data_bytes"], CORE_MEM)
    if core > core_cap: want.add("core data memory")
    if prog["rtp_core_address"] % 4 or prog["rtp_core_address"] + 4 * prog["rtp_word_count"] > core_cap:
        want.add("RTP words inside")
    mt = depth(x_mem) * xchunk + depth(y_mem) * (ychunk or 0)
    if mt > min(d["core_budget"]["memtile_bytes"], MEMTILE_MEM): want.add("memory tile")
    if not 1 <= wrap <= WRAP: want.add("limits.wrap_max")
    if not 1 <= smax <= STRIDE: want.add("limits.stride_max")
    if not 1 <= lim["iteration_max"] <= ITERS: want.add("limits.iteration_max")
    if not 0 <= lim["repeat_max"] <= REPEATS: want.add("limits.repeat_max")
    if n > 1 and xs < row_len: want.add(f"{X} row stride covers")
    if n > 1 and xs > smax: want.add(f"{X} row stride within")
    if ys % 4: want.add(f"{Y} row stride in whole")
    if yr > 1 and ys < yrow: want.add(f"{Y} row stride covers")
    if yr > 1 and ys // 4 > smax: want.add(f"{Y} row stride within")
    if len(slots) != F or len({len(v) for v in yl}) != 1 or per < 1 or not all(xl): want.add("shim BD slots")
    if F != HOST_IN_FLIGHT or len(slots) != HOST_IN_FLIGHT: want.add("shim steps in flight")
    flat = [i for a, b in zip(xl, yl) for i in a + b]
    if len(set(flat)) != len(flat) or any(not 0 <= i < shim["bds"] for i in flat): want.add("shim BD ids")
    if shim["bds"] > BDS: want.add("shim: the description's bds")
    if len(slots) * (1 + per) > min(shim["bds"], BDS): want.add("shim BDs in flight")
    if len(slots) > QUEUE: want.add(f"shim task queue per channel: {X}")
    if len(slots) * per > QUEUE: want.add(f"shim task queue per channel: {Y}")
    every = [b for _, _, bds in cols for b in bds]
    if any(b[5][3] > wrap for b in every): want.add("shim BDs: d0")
    if any(b[5][2] > wrap for b in every): want.add("shim BDs: d1")
    if any(b[5][1] * b[5][2] * b[5][3] > LENGTH for b in every): want.add("shim BDs: buffer length")
    if any(max(b[6]) > smax for b in every): want.add("shim BDs: strides")
    # y's BDs move whole words: a chunk of a part word cannot be written exactly.
    if ychunk is not None and ychunk % 4: want.add("traffic")
    if sorted(idx) != ["chunks", "contract", "version"] or sorted(idx.values()) != list(range(prog["rtp_word_count"])):
        want.add("RTP words: contract")
    b = prog["barrier"]
    if b["acquire"]["mode"] != "equal": want.add("barrier: the core waits")
    if b["set_value"] != b["acquire"]["value"]: want.add("barrier: the sequence's set")
    left = b["set_value"] + b["release"]["value"] if b["acquire"]["mode"] == "equal" else \
        b["set_value"] - b["acquire"]["value"] + b["release"]["value"]
    if b["release"]["value"] <= 0 or left == b["acquire"]["value"]: want.add("barrier: released")
    if not 0 <= left <= b["max_value"]: want.add("barrier: lock values")
    if max([x[2] for x in rtp] + [prog["rtp_layout_version"], 0]) > prog["rtp_word_max"]: want.add("RTP words fit")

    failed = [c["check"] for c in plan["checks"] if not c["ok"]]
    hit = set()
    for f in failed:
        m = [w for w in want if f.startswith(w)]
        if not m:
            err(f"check failed that should pass: {f}")
        hit.update(m)
    for w in sorted(want - hit):
        err(f"check passed that must fail: {w}")
    if rc != (1 if failed else 0):
        err(f"design.py exited {rc} with {len(failed)} failed check(s)")
    if plan["checks failed"] != [f"{c['check']}: {c['detail']}" for c in plan["checks"] if not c["ok"]]:
        err("'checks failed' is not the failed checks")

    # The shape, budgets, channels, ports.
    got = (plan["layout"], plan["contract"], plan["contract_index"], plan["chunks"], plan["x_chunk_bytes"],
           plan["y_chunk_bytes"], plan["y_row_bytes"], plan["x_stride"], plan["y_rows"], plan["y_stride"])
    if got != (fam, d["families"][fam][0], 0, chunks, xchunk, ychunk or 0, yrow, xs, yr, ys):
        err(f"shape {got}")
    if plan["core_bytes"]["total"] != core or plan["memtile_bytes"]["total"] != mt:
        err(f"core {plan['core_bytes']['total']} (recomputed {core}), memory tile {plan['memtile_bytes']['total']} ({mt})")
    if [(f["name"], f["obj_bytes"], f["depth"]) for f in plan["fifos"]] != \
            [(f"{f['name']}_<c>", o, depth(f)) for f, o in ((x_mem, xchunk), (x_core, xchunk), (y_core, ychunk or 0),
                                                           (y_mem, ychunk or 0))]:
        err(f"FIFOs {[(f['name'], f['obj_bytes'], f['depth']) for f in plan['fifos']]}")
    ch = {(t, k): (v["used"], v["available"]) for t, dirs in plan["channels"].items() for k, v in dirs.items()}
    if sorted(ch.values()) != sorted([(1, 2), (1, 2), (2, 6), (2, 6), (1, 2), (1, 2)]):
        err(f"DMA channels {ch}")
    if sorted((v["used"], v["available"]) for v in plan["streams"].values()) != [(1, 4), (1, 4), (1, 6), (1, 6)]:
        err(f"stream ports {plan['streams']}")
    if plan["tensors"] != {f"{X} (arg 0, fp32 values)": (n - 1) * xs + row_len, f"{Y} (arg 1, bytes)": (yr - 1) * ys + yrow}:
        err(f"tensors {plan['tensors']}")
    if not y_ok:
        lines.append(f"{label}: tile {T}, y chunk {ychunk} B (not whole words): {len(failed)} failing check(s)")
        return plan   # no BD of y is meaningful: the plan is not emitted, its failing checks were the point

    # The grid, RTP words, runs, steps, BDs, stream.
    pg = plan["grid"]
    if pg["columns used"] != len(grid) or pg["row blocks R x segments S"] != [R, S] or \
            [(tuple(a), tuple(b)) for a, b in pg["column c: row block (first row, rows), segment (first chunk, chunks)"]] != grid:
        err(f"grid {pg}, the host's {R} x {S}: {grid[:4]}")
        return plan
    if [(r["column"], r["words"], r["core"], r["address"], r["barrier"]) for r in plan["rtp"]] != \
            [(c, w, [c, arr["first_core_row"]], prog["rtp_core_address"],
              {"lock": prog["barrier"]["lock"], "value": prog["barrier"]["set_value"]}) for c, w, _ in rtp]:
        err(f"RTP words {[r['words'] for r in plan['rtp']][:4]}, recomputed {[w for _, w, _ in rtp][:4]}")
    for c, ((runs, steps, bds), pc) in enumerate(zip(cols, plan["per_column"])):
        if [tuple(r) for r in pc["runs (first row of x, first id, rows)"]] != runs:
            err(f"column {c}: runs {pc['runs (first row of x, first id, rows)'][:4]}, recomputed {runs[:4]}")
        if pc["steps"] != steps:
            err(f"column {c}: steps {pc['steps'][:4]}, recomputed {steps[:4]}")
        gotb = [(b["what"], b["step"], b["run"], b["bd"], b["offset (bytes)"], b["sizes"], b["strides"], b["token"])
                for b in pc["bds"]]
        if gotb != bds:
            i = next((j for j, (a, b) in enumerate(zip(gotb, bds)) if a != b), min(len(gotb), len(bds)))
            err(f"column {c}: BD {i}: {gotb[i:i + 1]}, recomputed {bds[i:i + 1]}")
    if len(plan["per_column"]) != len(cols):
        err(f"{len(plan['per_column'])} columns planned, {len(cols)} used")
    if plan["stream"] != stream:
        i = next((j for j, (a, b) in enumerate(zip(plan["stream"], stream)) if a != b), min(len(plan["stream"]), len(stream)))
        err(f"stream event {i}: {plan['stream'][i:i + 2]}, recomputed {stream[i:i + 2]}")

    # Replay the plan's stream. A description whose queue or BD checks fail may overflow them (the plan
    # says so); any other plan must not.
    quiet = want & {"shim BD slots", "shim steps in flight", "shim BD ids", "shim BDs in flight",
                    f"shim task queue per channel: {X}", f"shim task queue per channel: {Y}"}
    rerr = (lambda e: None) if quiet else err
    queued = {}            # (column, operand) -> steps of its unfinished tasks
    held = {}              # column -> [(BD, step)]
    synced = {c: [] for c in range(len(cols))}
    pushed = {}            # (column, step) -> [(what, token)]
    began = set()
    worst = {X: 0, Y: 0, "bds": 0}
    for ev in plan["stream"]:
        counts["stream events"] += 1
        kind, c = ev[0], ev[1]
        if kind in ("rtp", "barrier"):
            if pushed:
                err(f"column {c}: {kind} after the first push")
            if kind == "barrier" and c not in began:
                err(f"column {c}: barrier set before its RTP words")
            began.add(c)
        elif kind == "push":
            _, c, what, bd, s, token, rep = ev
            if c not in began:
                err(f"column {c}: a push before its RTP words and barrier")
            if rep != 0:
                err(f"column {c}: a repeat {rep}")
            if any(b == bd for b, _ in held.setdefault(c, [])):
                rerr(f"column {c}: BD {bd} pushed for step {s} while an unsynced step holds it")
            held[c].append((bd, s))
            q = queued.setdefault((c, what), [])
            q.append(s)
            if len(q) > QUEUE:
                rerr(f"column {c}: {len(q)} tasks queued on {what}'s channel of {QUEUE}")
            pushed.setdefault((c, s), []).append((what, token))
            worst[what] = max(worst[what], len(q))
            worst["bds"] = max(worst["bds"], len(held[c]))
        else:
            s = ev[5]
            if (synced[c][-1] + 1 if synced[c] else 0) != s:
                err(f"column {c}: sync of step {s} after {synced[c][-1:]}")
            synced[c].append(s)
            tasks = pushed.get((c, s), [])
            if not tasks or [t for w, t in tasks] != [False] * (len(tasks) - 1) + [True] or tasks[-1][0] != Y:
                err(f"column {c}: step {s}'s tasks {tasks}: exactly its last y task carries the token")
            for key in queued:
                if key[0] == c:
                    queued[key] = [x for x in queued[key] if x > s]
            held[c] = [(b, x) for b, x in held.get(c, []) if x > s]
    for c, (_, steps, _) in enumerate(cols):
        if synced[c] != list(range(len(steps))):
            err(f"column {c}: synced {synced[c][:6]}, its {len(steps)} steps once each in order expected")
        if c not in began:
            err(f"column {c}: no RTP words")
    sch = plan["schedule"]
    if (sch[f"{X} tasks queued per channel (at most)"], sch[f"{Y} tasks queued per channel (at most)"],
            sch["shim BDs in use per column (at most)"]) != (worst[X], worst[Y], worst["bds"]):
        err(f"queues and BDs in use {sch}, replayed {worst}")
    if (sch["rows per run (at most)"], sch["runs per step (at most)"], sch["steps in flight"], sch["steps per column"],
            sch["steps (most of a column)"]) != (RUN_CAP, per, len(slots), [len(x[1]) for x in cols], most):
        err(f"schedule {sch}")

    # Replay the BDs row by row: per column, x's rows (push order) against y's rows (push order).
    rows_ok = (n <= 1 or xs >= row_len) and (yr <= 1 or ys >= yrow) and ys % 4 == 0
    seen = []
    for c, ((first, k), (c0, g)) in enumerate(grid if rows_ok else []):
        pc = plan["per_column"][c]
        rd, wr = [], []
        for b in pc["bds"]:
            rows = bd_rows(b, g * T if b["what"] == X else g * yw)
            if rows is None:
                err(f"column {c}: BD {b} does not move whole segments of rows in order")
                break
            (rd if b["what"] == X else wr).extend(rows)
        if len(rd) != len(wr):
            err(f"column {c}: {len(rd)} rows read, {len(wr)} written")
        for a, w in zip(rd, wr):
            r = 0 if n == 1 else (a - c0 * T) // xs
            if a != r * xs + c0 * T or not 0 <= r < n or 4 * w != ids[r] * ys + c0 * ychunk:
                err(f"column {c}: x word {a} written to y byte {4 * w}: not row ids[r]'s segment")
                break
            seen.append((c, r))
        counts["replayed rows"] += len(wr)
    if rows_ok:
        if any(not grid[c][0][0] <= r < grid[c][0][0] + grid[c][0][1] for c, r in seen):
            err("x: a row read by a column whose block does not hold it")
        per_row = {}
        for c, r in seen:
            per_row.setdefault(r, []).append(tuple(grid[c][1]))
        if sorted(per_row) != list(range(n)) or any(sorted(v) != deal(chunks, S) for v in per_row.values()):
            err("x: not every row's chunks read once, a segment per column")

    # ... and byte by byte for the small shapes: x's words in chunks of the tile through an identity
    # conversion (a y byte stands for a value index), y's bytes written in push order.
    if small and rows_ok:
        got, dup = {}, 0
        for pc in plan["per_column"]:
            xw = [w for b in pc["bds"] if b["what"] == X for w in words_of(b)]
            yb = [4 * w + i for b in pc["bds"] if b["what"] == Y for w in words_of(b) for i in range(4)]
            if len(xw) % T or len(yb) != len(xw) // T * ychunk:
                err(f"column {pc['column']}: {len(xw)} x words, {len(yb)} y bytes: not whole chunks, one out per in")
                continue
            for q in range(len(xw) // T):
                cx = xw[q * T:(q + 1) * T]
                if cx != list(range(cx[0], cx[0] + T)):
                    err(f"column {pc['column']}: chunk {q} of x is not {T} consecutive values")
                    break
                for bb in range(ychunk):
                    a = yb[q * ychunk + bb]
                    dup += a in got
                    got[a] = cx[0] + value_of_byte(yspec, bb)
        want_b = {ids[r] * ys + q * ychunk + bb: r * xs + q * T + value_of_byte(yspec, bb)
                  for r in range(n) for q in range(chunks) for bb in range(ychunk)}
        if dup or got != want_b:
            bad = sorted(set(got) ^ set(want_b))[:3] or [a for a in sorted(got) if got[a] != want_b.get(a)][:3]
            err(f"y: bytes written twice ({dup}), outside the ids' rows or with another value's index, e.g. {bad}")
        counts["replayed bytes"] += len(got)

    # Traffic.
    t = plan["traffic"]
    want_t = {f"{X} read (bytes)": 4 * n * row_len, f"{Y} written (bytes)": n * yrow, "columns used": len(grid),
              "kernel calls on the busiest core": max(x[2] for x in rtp), "steps (most of a column)": most}
    if t != want_t:
        err(f"traffic {t}, recomputed {want_t}")

    for k, v in (expect or {}).items():
        pcs = plan["per_column"]
        got_v = {"tile": plan["tile"], "columns used": pg["columns used"], "y chunk": plan["y_chunk_bytes"],
                 "runs": [[tuple(r) for r in pc["runs (first row of x, first id, rows)"]] for pc in pcs],
                 "steps": plan["schedule"]["steps per column"], "traffic": [t[f"{X} read (bytes)"], t[f"{Y} written (bytes)"]],
                 "bds0": [(b["what"], b["bd"], b["offset (bytes)"], b["sizes"], b["strides"], b["token"])
                          for b in pcs[0]["bds"]],
                 "bds": [[(b["what"], b["bd"], b["offset (bytes)"], b["sizes"], b["strides"], b["token"])
                          for b in pc["bds"]] for pc in pcs],
                 "pushes0": [(e[2], e[3], e[4], e[5]) if e[0] == "push" else ("sync", e[5]) for e in plan["stream"]
                             if e[0] in ("push", "sync") and e[1] == 0],
                 "chunks": [r["words"][idx["chunks"]] for r in plan["rtp"]],
                 "y queued": sch[f"{Y} tasks queued per channel (at most)"],
                 "y bytes": plan["tensors"][f"{Y} (arg 1, bytes)"], "failed": sorted(failed)}[k]
        if got_v != v:
            err(f"{k}: {got_v}, computed by hand {v}")
    if expect:
        counts["anchors"] += 1
    lines.append(f"{label}: tile {T}, {len(grid)} column(s) ({R} x {S}), runs {[len(x[0]) for x in cols][:8]}, "
                 f"steps {[len(x[1]) for x in cols][:8]}, {len(failed)} failing check(s) as recomputed")
    return plan


rng = random.Random(20260611)


def distinct_ids(n, y_rows):
    """n distinct ids in [0, y_rows): runs of consecutive ids (some past the 256-row cap), descending runs,
    jumps; never a repeated id (refused by the design, tested apart)."""
    used, out = set(), []
    tries = 0
    while len(out) < n and tries < 10000:
        tries += 1
        kind = rng.random()
        if kind < 0.45:
            k = rng.choice([2, 3, 7, 40, 255, 256, 257, 300])
            start = rng.randrange(0, max(1, y_rows - k))
            seg = list(range(start, min(start + k, y_rows)))
        elif kind < 0.7:
            start = rng.randrange(y_rows)
            seg = list(range(start, max(-1, start - rng.choice([2, 5, 30])), -1))
        else:
            seg = [rng.randrange(y_rows)]
        seg = [i for i in seg if i not in used][:n - len(out)]
        used.update(seg)
        out += seg
    return out


# 1. The real description over many shapes: one row (a decode token's K row), random id lists with runs,
#    descents and jumps, identity ids (CPY), many rows; 1..8 columns; every family and tile (the host's
#    pick and each asked for); strided x and y (a KV-cache view).
ROW_LENS = [128, 256, 384, 512, 640, 1024, 1536, 2048, 3072, 4096]
SHAPES = []
for fam in ("f16", "q8_0"):
    for columns in range(1, 9):
        for n in (1, 2, 3, 5, 8, 9, 33, 300, 600):
            row_len = ROW_LENS[(n + columns + (fam == "q8_0")) % len(ROW_LENS)]
            y_rows = rng.choice([n + rng.randrange(3), 1000, 70000])
            ids = distinct_ids(n, max(y_rows, n))
            SHAPES.append((fam, ids, row_len, columns, None, None, None, None))
    for columns in (1, 3, 8):
        SHAPES += [(fam, [517], 1024, columns, None, None, None, None),
                   (fam, [517], 512, columns, None, None, None, None),
                   (fam, [9], 4096, columns, None, 4096, None, None),
                   (fam, list(range(512)), 256, columns, None, None, None, None),
                   (fam, list(range(600)), 128, columns, None, None, None, None),
                   (fam, list(range(599, -1, -1)), 384, columns, None, None, None, None),
                   (fam, [0, 2, 4, 6, 8, 10, 12, 14, 16], 640, columns, None, None, None, None),
                   (fam, list(range(1000, 1300)) + list(range(10, 20)), 1024, columns, None, 4096, None, None)]
    # Every tile asked for, on rows each divides; strided x (a view's rows) and y (a KV cache of 4096
    # values a row, of which these rows fill the first row_len).
    for t in (128, 256, 512, 1024):
        for columns in (1, 3, 8):
            ids = distinct_ids(37, 500)
            SHAPES.append((fam, ids, 2048, columns, None, None, None, t))
            SHAPES.append((fam, ids, 2048, columns, 2048 + 64, 500, 8192 if fam == "f16" else 4352, t))
    # Strides short of the row or past the shim's field; one row of each with any stride.
    SHAPES += [(fam, [3, 4, 5], 4096, 8, 4000, None, None, None), (fam, [3, 4, 5], 1024, 8, None, None, 100, None),
               (fam, [1, 2], 4096, 1, 2000000, None, None, None), (fam, [1, 2], 1024, 1, None, None, 4 * 1048577, None),
               (fam, [3], 1024, 8, 100, None, None, None), (fam, [0], 1024, 2, None, 1, 100, None),
               (fam, [5, 6], 1024, 1, None, None, 8194, None), (fam, [0], 524288, 1, None, None, None, None),
               (fam, [0, 1], 262144, 1, None, None, None, 1024)]
for fam, ids, row_len, columns, xs, yr, ys, tile in SHAPES:
    small = len(ids) * row_len <= 20000
    verify(REAL, fam, ids, row_len, columns, xs, yr, ys, tile, small=small)

# 2. Anchors, by hand.
# A decode token's K row, 1 x 1024 at id 517, F16: tile 1024, one chunk, so one column (S = min(1, 8) = 1);
# x: 1 row as 2 x 512 words (1024 past the 1023 wrap); y: the 2048-byte chunk = 512 words at 517 x 2048 =
# 1058816; the step's one y task carries the token; y is 518 rows of 2048 bytes = 1060864.
verify(REAL, "f16", [517], 1024, 8, expect={
    "tile": 1024, "columns used": 1, "y chunk": 2048, "traffic": [4096, 2048], "y bytes": 1060864, "chunks": [1],
    "bds0": [("x", 0, 0, [1, 1, 2, 512], [0, 0, 512, 1], False), ("y", 1, 1058816, [1, 1, 1, 512], [0, 0, 512, 1], True)],
    "pushes0": [("x", 0, 0, False), ("y", 1, 0, True), ("sync", 0)]})
# The same at 512 values: tile 512 (x d0 512, no halving), y chunk 1024 bytes = 256 words at 517 x 1024 = 529408.
verify(REAL, "f16", [517], 512, 8, expect={
    "tile": 512, "y chunk": 1024,
    "bds0": [("x", 0, 0, [1, 1, 1, 512], [0, 0, 512, 1], False), ("y", 1, 529408, [1, 1, 1, 256], [0, 0, 256, 1], True)]})
# Q8_0, 1 x 4096 at id 3: tile 1024, 4 chunks; one row on 8 columns: S = min(4, 8 // 1) = 4 columns, a chunk
# each; y chunk 1024 / 32 x 34 = 1088 bytes = 272 words, a row 4352 bytes; column c reads x at 4096 c bytes
# and writes y at 3 x 4352 + 1088 c = 13056 + 1088 c; 16384 bytes in, 4352 out.
verify(REAL, "q8_0", [3], 4096, 8, expect={
    "tile": 1024, "columns used": 4, "y chunk": 1088, "traffic": [16384, 4352], "chunks": [1, 1, 1, 1],
    "bds": [[("x", 0, 4096 * c, [1, 1, 2, 512], [0, 0, 512, 1], False),
             ("y", 1, 13056 + 1088 * c, [1, 1, 1, 272], [0, 0, 272, 1], True)] for c in range(4)]})
# 512 rows of 256 values, ids 0..511 (a CPY), F16, 8 columns: tile 256, 64 rows a column, one run, one step;
# x at 64 x 256 x 4 = 65536 c bytes, 64 rows of 256 words; y chunk 512 bytes = 128 words, rows 512 bytes
# (128 words) apart, at 64 x 512 = 32768 c; 64 calls a core; 524288 bytes in, 262144 out.
verify(REAL, "f16", list(range(512)), 256, 8, expect={
    "tile": 256, "columns used": 8, "steps": [1] * 8, "chunks": [64] * 8, "traffic": [524288, 262144],
    "bds": [[("x", 0, 65536 * c, [1, 64, 1, 256], [0, 256, 256, 1], False),
             ("y", 1, 32768 * c, [1, 64, 1, 128], [0, 128, 128, 1], True)] for c in range(8)]})
# 600 rows of 128 values, ids 0..599, one column: runs of 256, 256 and 88 (the cap); step 0 = runs 0 and 1:
# x BD 0 over 512 rows, y BDs 1 (rows 0..255, at 0) and 2 (rows 256..511 at 256 x 256 = 65536, the token);
# step 1 on slot 1: x BD 8 from row 512 (512 x 128 x 4 = 262144 bytes), y BD 9 at 512 x 256 = 131072.
verify(REAL, "f16", list(range(600)), 128, 1, expect={
    "runs": [[(0, 0, 256), (256, 256, 256), (512, 512, 88)]], "steps": [2], "chunks": [600],
    "bds0": [("x", 0, 0, [1, 512, 1, 128], [0, 128, 128, 1], False),
             ("y", 1, 0, [1, 256, 1, 64], [0, 64, 64, 1], False),
             ("y", 2, 65536, [1, 256, 1, 64], [0, 64, 64, 1], True),
             ("x", 8, 262144, [1, 88, 1, 128], [0, 128, 128, 1], False),
             ("y", 9, 131072, [1, 88, 1, 64], [0, 64, 64, 1], True)],
    "pushes0": [("x", 0, 0, False), ("y", 1, 0, False), ("y", 2, 0, True), ("x", 8, 1, False), ("y", 9, 1, True),
                ("sync", 0), ("sync", 1)]})
# ids 7 6 5 4 3 2 1 0 of rows of 128, one column: eight runs of one row, four steps on slots 0 1 0 1; x of
# two rows a step; y rows of 256 bytes at id x 256; a sync of step k - 1 after step k: 4 y tasks queued.
verify(REAL, "f16", list(range(7, -1, -1)), 128, 1, expect={
    "steps": [4], "y queued": 4,
    "pushes0": [("x", 0, 0, False), ("y", 1, 0, False), ("y", 2, 0, True), ("x", 8, 1, False), ("y", 9, 1, False),
                ("y", 10, 1, True), ("sync", 0), ("x", 0, 2, False), ("y", 1, 2, False), ("y", 2, 2, True), ("sync", 1),
                ("x", 8, 3, False), ("y", 9, 3, False), ("y", 10, 3, True), ("sync", 2), ("sync", 3)]})
# A KV-cache view: F16 rows of 1024 values into a cache of 4096 (y stride 8192 bytes), ids 5 6 7 100 of 4096
# rows, 8 columns: 4 rows < 8 columns, one chunk a row: R 4, S 1, a row a column, y at id x 8192; nothing
# fails; y is 4095 x 8192 + 2048 = 33548288 bytes.
verify(REAL, "f16", [5, 6, 7, 100], 1024, 8, yr=4096, ys=8192, expect={
    "columns used": 4, "failed": [], "y bytes": 33548288,
    "bds": [[("x", 0, 4096 * c, [1, 1, 2, 512], [0, 0, 512, 1], False),
             ("y", 1, i * 8192, [1, 1, 1, 512], [0, 0, 512, 1], True)] for c, i in enumerate([5, 6, 7, 100])]})
# Q8_0, rows of 256 (tile 256: 8 blocks = 272 bytes = 68 words a chunk and a row), ids 10 11 2, one column:
# runs (0, 10, 2), (2, 2, 1), one step; x 3 rows of 256 words; y 2 rows at 10 x 272 = 2720, 68 words apart,
# then 1 row at 544 with the token.
verify(REAL, "q8_0", [10, 11, 2], 256, 1, expect={
    "runs": [[(0, 10, 2), (2, 2, 1)]],
    "bds0": [("x", 0, 0, [1, 3, 1, 256], [0, 256, 256, 1], False),
             ("y", 1, 2720, [1, 2, 1, 68], [0, 68, 68, 1], False),
             ("y", 2, 544, [1, 1, 1, 68], [0, 0, 68, 1], True)]})
# Failing by name: two rows of 4096 with x rows 4000 apart overlap (the only failing check); a y stride of
# 8194 bytes is no whole number of words.
verify(REAL, "f16", [1, 2], 4096, 8, xs=4000, expect={"failed": ["x row stride covers the row"]})
verify(REAL, "f16", [5, 6], 1024, 8, ys=8194, expect={"failed": ["y row stride in whole 32-bit words"]})

# 3. Variants of the description (written by check_design_set_rows.sh): what each must fail, recomputed.
before = counts["plans"]
for name in sorted(os.listdir(vdir)):
    if not name.endswith(".json") or name.startswith("refused-"):
        continue
    path = os.path.join(vdir, name)
    shapes = [("f16", [5], 1024, 8), ("q8_0", list(range(7, -1, -1)), 1024, 1), ("f16", distinct_ids(100, 400), 2048, 3),
              ("q8_0", list(range(512)), 256, 1)]
    if name.startswith("half3"):
        shapes.append(("f16", [0, 1], 258, 1))   # the variant's odd tile, 129
    for fam, ids, row_len, columns in shapes:
        verify(path, fam, ids, row_len, columns, small=len(ids) * row_len <= 20000)
counts["variant plans"] = counts["plans"] - before

for e in errors[:40]:
    print(f"  {e}")
if len(errors) > 40:
    print(f"  ... and {len(errors) - 40} more")
print(f"plans: {counts['plans']} recomputed ({counts['variant plans']} of variant descriptions, {counts['anchors']} held to "
      f"numbers by hand); replayed {counts['stream events']} stream events, {counts['replayed rows']} rows and "
      f"{counts['replayed bytes']} bytes of y through the BDs; {len(errors)} disagreement(s); e.g.")
for line in lines[:2] + [l for l in lines if not l.startswith("dataflow.json")][::9][:4]:
    print(f"  {line}")
sys.exit(1 if errors else 0)
