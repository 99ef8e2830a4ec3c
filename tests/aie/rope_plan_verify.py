#!/usr/bin/env python3
"""The rope design's plans (aie/rope/design.py --print-plan --format json) against a recomputation written
here from the rules of the rope movement (src/runtime/rope-sequence.cpp, read; rows-sequence.h's grid and
blocks), sharing no code with design.py (design.py is only run, through its command line, in this process
for speed):

  - the grid (R = min(tokens, columns) token blocks x S segments of each token's heads, S = 1 when
    tokens >= columns, else max(1, min(heads, columns // tokens)); column c block c // S, segment c % S;
    blocks differing by at most one, the first ones larger), each used column's RTP words (contract 0,
    its tokens and heads, n_dims, the layout version), the steps (at most 256 of a column's tokens, step
    k on BD slot k % slots), every BD's id, byte offset, sizes and strides (x and y: the head row, the
    segment's heads at their stride or ne0 for one, the step's tokens at theirs or 0 for one; cs: the
    angle row, one chunk, the step's rows ne0 apart), the whole stream (RTP block write and barrier value
    per used column before any step; per step and column x, cs, y, only y with a token; then the syncs of
    the step before; the last step's syncs at the end), the budgets, the operands and the traffic;
  - the plan's stream replayed: a channel never holds more than 4 tasks, a BD is never pushed while an
    unsynced step holds it, every step of a column synced once, in order, on y's channel;
  - the plan's BDs replayed element by element (the small shapes): per column, x's words in push order
    cut into head rows and the angle rows likewise, fed to the core program as the column's RTP words
    drive it (per token one angle row, per head one x row in and one y row out), and y's words in push
    order taking the rows the core wrote: every head row of x read once, into the column whose block and
    segment hold it, in token-major order; every angle row delivered once per token to each column
    taking the token; every y head row written once, at its place, with its x row and its token's angle
    row, and nothing else written (the gaps of strided views untouched);
  - which checks fail: exactly those the recomputation says must, for the real description and for
    variants of it (written to <tmp> by the caller), and the exit status (0 or 1) with them;
  - a few shapes held to numbers computed by hand (the comments show the arithmetic), those of the host's
    own test (tests/kernels/test_rope_stream.cpp ColumnsStepsCallsAndBytesAreTheDesigns) among them.

    rope_plan_verify.py <repo root> <directory of variant descriptions>
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
spec = importlib.util.spec_from_file_location("xdna_rope_design_under_test", f"{root}/aie/rope/design.py")
design = importlib.util.module_from_spec(spec)
spec.loader.exec_module(design)
REAL = f"{root}/aie/rope/dataflow.json"

# AIE2P facts, the host's step and flight rules and the kernels' row rule, written here again.
CORE_BYTES, MEMTILE_BYTES = 65536, 524288
WRAP, ITER_MAX, REPEAT_MAX, STRIDE_MAX, LENGTH_MAX, BDS, QUEUE = 1023, 64, 255, 1 << 20, (1 << 32) - 1, 16, 4
TOKENS_PER_STEP, IN_FLIGHT = 256, 2
LANES, PAIR, MAX_ROW = 16, 32, 512  # rope_tiles.h, compared with the header below
INT32_MAX = 2 ** 31 - 1

errors, lines = [], []
counts = {"plans": 0, "variant plans": 0, "anchors": 0, "replayed words": 0, "stream events": 0}

hdr = open(f"{root}/aie/include/xdna_aie/rope_tiles.h").read()
for name, want in (("kRopeLanes", LANES), ("kRopePairLanes", PAIR), ("kRopeMaxRow", MAX_ROW)):
    m = re.search(name + r"\s*=\s*(\d+)", hdr)
    if not m or int(m.group(1)) != want:
        errors.append(f"rope_tiles.h: {name} is {m.group(1) if m else 'missing'}, this recomputation has {want}")


def fits(n_dims, ne0):
    # rope_row_fits, as rope_tiles.h states it.
    return 0 < n_dims and n_dims % PAIR == 0 and n_dims <= ne0 <= MAX_ROW and (ne0 - n_dims) % LANES == 0


def run(desc_path, args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = design.main(["--dataflow", desc_path, "--print-plan", "--format", "json"] + args)
    return rc, out.getvalue(), err.getvalue()


def deal(total, parts):
    """`total` dealt into `parts` consecutive blocks, the first total % parts one larger: (first, count)."""
    out, at = [], 0
    for i in range(parts):
        k = total // parts + (1 if i < total % parts else 0)
        out.append((at, k))
        at += k
    assert at == total
    return out


def words_of(sizes, strides, offset_words):
    (d0, d1, d2), (s0, s1, s2) = sizes, strides
    return [offset_words + k * s2 + j * s1 + i * s0 for k in range(d2) for j in range(d1) for i in range(d0)]


def contiguous(sizes, strides):
    # The words move as one run when each dimension continues where the one inside it ends.
    (d0, d1, d2), (s0, s1, s2) = sizes, strides
    return s0 == 1 and (d1 == 1 or s1 == d0) and (d2 == 1 or s2 == d0 * d1)


def kernel_ok(d):
    """The programs of every family: their signature read from rope.cc (3 pointers, 2 int32) and the
    rotation loop's trip hint at the fewest rotated dims (one step of 32)."""
    bad = set()
    text = open(f"{root}/aie/rope/kernels/rope.cc").read()
    for fam, progs in d["families"].items():
        if fam == "about":
            continue
        for prog in progs:
            m = re.search(r"void\s+" + prog + r"\s*\(([^)]*)\)", text)
            if not m:
                bad.add(f"kernel {prog}")
                continue
            kinds = ["p" if "*" in a else "i" if "int32_t" in a else "?" for a in m.group(1).split(",")]
            if kinds != ["p", "p", "p", "i", "i"]:
                bad.add(f"kernel {prog} (rope.cc) takes")
            h = re.search(r"MIN_ITERATION_COUNT\((\d+)\)", text[m.end():])
            if h and int(h.group(1)) > PAIR // PAIR:
                bad.add(f"kernel {prog} (rope.cc) loop")
    return bad


def verify(desc_path, fam, tokens, heads, ne0, n_dims=None, x=None, y=None, columns=8, expect=None, words=False):
    d = json.load(open(desc_path))
    n_dims = ne0 if n_dims is None else n_dims
    xhs, xts = x or (ne0, heads * ne0)
    yhs, yts = y or (ne0, heads * ne0)
    args = ["--family", fam, "--tokens", str(tokens), "--heads", str(heads), "--ne0", str(ne0), "--n-dims", str(n_dims),
            f"--x-head-stride={xhs}", f"--x-token-stride={xts}", f"--y-head-stride={yhs}", f"--y-token-stride={yts}",
            "--cols", str(columns)]
    name = "dataflow.json" if desc_path == REAL else os.path.basename(desc_path)
    label = f"{name} {fam} {tokens}x{heads}x{ne0} n_dims {n_dims} x ({xhs},{xts}) y ({yhs},{yts}) cols {columns}"
    err = lambda e: errors.append(f"{label}: {e}")
    rc, out, stderr = run(desc_path, args)
    if rc not in (0, 1):
        err(f"--print-plan exited {rc}: {stderr.strip()}")
        return None
    plan = json.loads(out)
    counts["plans"] += 1

    arr, cp, lim, shim, budget = d["array"], d["core_program"], d["limits"], d["shim"], d["core_budget"]
    fifos = {f["name"]: f for f in d["layouts"][0]["fifos"]}
    depth = lambda f: d["depths"][f["depth"]] if isinstance(f["depth"], str) else f["depth"]
    shim_f = {f["operand"]: f for f in fifos.values() if "shim_channel" in f}
    core_f = {o: next(f for f in fifos.values() if shim_f[o]["name"] in (f.get("source"), f.get("sink"))) for o in shim_f}
    wrap, smax = lim["wrap_max"], lim["stride_max"]
    slots, F = shim["bd_slots"], shim["steps_in_flight"]
    first_id = lambda v: (v[0] if v else None) if isinstance(v, list) else v
    slot_ids = [{o: first_id(s.get(o)) for o in ("x", "cs", "y")} for s in slots]

    # The grid, recomputed.
    if tokens >= columns:
        R, S = columns, 1
    else:
        R, S = tokens, max(1, min(heads, columns // tokens))
    tb, hb = deal(tokens, R), deal(heads, S)
    grid = [(tb[c // S], hb[c % S]) for c in range(R * S)]
    used = len(grid)
    words_idx = cp["rtp_words"]
    rtp = [{"contract": 0, "tokens": nt, "heads": nh, "n_dims": n_dims, "version": cp["rtp_layout_version"]}
           for (_, nt), (_, nh) in grid]

    # The stream, recomputed: RTP and barrier per used column's core, then the steps.
    stream = []
    for c, w in enumerate(rtp):
        for r in range(arr["core_rows"]):
            vec = [0] * cp["rtp_word_count"]
            for k, i in words_idx.items():
                if k in w and 0 <= i < len(vec):
                    vec[i] = w[k]
            stream += [["rtp", c, arr["first_core_row"] + r, vec], ["barrier", c, arr["first_core_row"] + r,
                                                                     cp["barrier"]["set_value"]]]
    col_steps = []  # per column: [(t0, n)] of its steps
    for (tf, nt), _ in grid:
        steps_c, t = [], tf
        while t < tf + nt:
            n = min(TOKENS_PER_STEP, tf + nt - t)
            steps_c.append((t, n))
            t += n
        col_steps.append(steps_c)
    n_steps = len(col_steps[0])
    bds = [[] for _ in grid]
    y_ch = shim_f["y"]["shim_channel"]["channel"]
    for k in range(n_steps):
        ids = slot_ids[k % len(slot_ids)] if slot_ids else {}
        for c, ((_, _), (h0, nh)) in enumerate(grid):
            if k >= len(col_steps[c]):
                continue
            t0, n = col_steps[c][k]
            for what, pat in (("x", ([ne0, nh, n], [1, xhs if nh > 1 else ne0, xts if n > 1 else 0], t0 * xts + h0 * xhs)),
                              ("cs", ([ne0, 1, n], [1, ne0, ne0 if n > 1 else 0], t0 * ne0)),
                              ("y", ([ne0, nh, n], [1, yhs if nh > 1 else ne0, yts if n > 1 else 0], t0 * yts + h0 * yhs))):
                sizes, strides, at = pat
                bds[c].append({"step": k, "what": what, "bd": ids.get(what), "offset": 4 * at, "sizes": sizes,
                               "strides": strides, "token": what == "y", "linear": contiguous(sizes, strides)})
                stream.append(["push", c, what, ids.get(what), k, what == "y"])
        if k >= 1:
            stream += [["sync", c, y_ch, k - 1] for c in range(used) if k - 1 < len(col_steps[c])]
    stream += [["sync", c, y_ch, n_steps - 1] for c in range(used) if n_steps - 1 < len(col_steps[c])]

    # Replay the recomputed stream (queues and BD reuse), per column.
    worst_q, worst_bd, reused = 0, 0, False
    for c in range(used):
        q, held = {"x": [], "cs": [], "y": []}, {}
        for ev in (e for e in stream if e[1] == c):
            if ev[0] == "push":
                reused |= ev[3] in held
                held[ev[3]] = ev[4]
                q[ev[2]].append(ev[4])
            elif ev[0] == "sync":
                q = {o: [s for s in v if s > ev[3]] for o, v in q.items()}
                held = {b: s for b, s in held.items() if s > ev[3]}
            worst_q = max(worst_q, *(len(v) for v in q.values()))
            worst_bd = max(worst_bd, len(held))

    # Which checks must fail, recomputed.
    want_fail = set()
    tiles = sorted(int(t) for t in budget["kernel_stack"][fam] if t.isdigit())
    if arr["core_rows"] != 1 or not arr["memtile_row"] < arr["first_core_row"] <= arr["memtile_row"] + 4:
        want_fail.add("array: one core per column")
    if arr["max_columns"] > 8 or arr["shim_row"] != 0 or arr["memtile_row"] != 1:
        want_fail.add("array: the description's columns")
    if [k for k in d.get("host_written", {}) if k != "about"] != ["cs"]:
        want_fail.add("host_written")
    if any(t < PAIR or t > MAX_ROW or (t - PAIR) % LANES for t in tiles):
        want_fail.add(f"family {fam} tiles")
    stack = budget["kernel_stack"][fam][str(ne0)]
    core_total = sum(depth(core_f[o]) * ne0 * 4 for o in ("x", "cs", "y")) + 4 * cp["rtp_word_count"] + stack + \
        budget["kernel_data_bytes"]
    core_limit = min(budget["core_data_bytes"], CORE_BYTES)
    if core_total > core_limit: want_fail.add("core data memory")
    if cp["rtp_core_address"] % 4 or cp["rtp_core_address"] + 4 * cp["rtp_word_count"] > core_limit:
        want_fail.add("RTP words inside")
    mem_total = sum(depth(shim_f[o]) * ne0 * 4 for o in ("x", "cs", "y"))
    if mem_total > min(budget["memtile_bytes"], MEMTILE_BYTES): want_fail.add("memory tile")
    chans = {o: shim_f[o]["shim_channel"]["channel"] for o in shim_f}
    if chans["x"] == chans["cs"] or not all(0 <= v < 2 for v in chans.values()): want_fail.add("shim channel numbers")
    want_fail |= kernel_ok(d)
    if not 1 <= wrap <= WRAP: want_fail.add("limits.wrap_max")
    if not 1 <= smax <= STRIDE_MAX: want_fail.add("limits.stride_max")
    if not 1 <= lim["iteration_max"] <= ITER_MAX: want_fail.add("limits.iteration_max")
    if not 0 <= lim.get("repeat_max", 0) <= REPEAT_MAX: want_fail.add("limits.repeat_max")
    for op, hs, ts in (("x", xhs, xts), ("y", yhs, yts)):
        if heads > 1 and not ne0 <= hs <= smax: want_fail.add(f"{op} head stride")
        if tokens > 1 and not 1 <= ts <= smax: want_fail.add(f"{op} token stride")
    # y's head rows, every one of them as an interval of floats, sorted: a row starting before the end of
    # the one before it overlaps it (the host also refuses the rare disjoint rows that are neither
    # token-major nor head-major; none of the shapes here are such).
    y_rows = sorted(t * yts + h * yhs for t in range(tokens) for h in range(heads))
    if any(b < a + ne0 for a, b in zip(y_rows, y_rows[1:])): want_fail.add("y head rows")
    if len(slots) != F or any(not s.get(o) and s.get(o) != 0 for s in slots for o in ("x", "cs", "y")):
        want_fail.add("shim BD slots")
    if F != IN_FLIGHT: want_fail.add("shim: steps in flight")
    every_id = [i for s in slots for o in ("x", "cs", "y") for i in (s.get(o) if isinstance(s.get(o), list) else [s.get(o)])]
    if len(set(map(str, every_id))) != len(every_id) or any(not isinstance(i, int) or not 0 <= i < shim["bds"] for i in every_id):
        want_fail.add("shim BD ids")
    if shim["bds"] > BDS: want_fail.add("shim: the description's bds")
    if F * 3 > min(shim["bds"], BDS): want_fail.add("shim BDs in flight")
    if any(nh > wrap or nt * nh > cp["rtp_word_max"] for (_, nt), (_, nh) in grid): want_fail.add("columns: a segment")
    if worst_q > QUEUE: want_fail.add("shim task queue")
    if reused: want_fail.add("shim BDs: reused")
    every = [b for col in bds for b in col]
    if any(not b["linear"] and b["sizes"][0] > wrap for b in every): want_fail.add("shim BDs: d0")
    if any(not b["linear"] and b["sizes"][1] > wrap for b in every): want_fail.add("shim BDs: d1")
    if any(not b["linear"] and any(b["sizes"][i] > 1 and not 1 <= b["strides"][i] <= smax for i in range(3)) for b in every):
        want_fail.add("shim BDs: strides")
    if any(b["sizes"][0] * b["sizes"][1] * b["sizes"][2] > LENGTH_MAX for b in every): want_fail.add("shim BDs: buffer length")
    if sorted(words_idx) != sorted(["contract", "tokens", "heads", "n_dims", "version"]) or \
            sorted(words_idx.values()) != list(range(cp["rtp_word_count"])):
        want_fail.add("RTP words: contract")
    if cp["rtp_word_max"] > INT32_MAX or any(v > cp["rtp_word_max"] for w in rtp for v in w.values()):
        want_fail.add("RTP words fit")
    bar = cp["barrier"]
    after = bar["set_value"] + bar["release"]["value"]
    if bar["acquire"]["mode"] != "equal": want_fail.add("barrier: the core waits")
    if bar["set_value"] != bar["acquire"]["value"]: want_fail.add("barrier: the sequence's set")
    if bar["release"]["value"] <= 0 or after == bar["acquire"]["value"]: want_fail.add("barrier: released")
    if after > bar["max_value"]: want_fail.add("barrier: lock values")

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

    # The plan against the recomputation.
    if plan["tile"] != ne0 or plan["n_dims"] != n_dims or plan["contract"] != d["families"][fam][0]:
        err(f"tile {plan['tile']}, n_dims {plan['n_dims']}, contract {plan['contract']}")
    if plan["core_bytes"]["total"] != core_total or plan["memtile_bytes"]["total"] != mem_total:
        err(f"core {plan['core_bytes']['total']} / memory tile {plan['memtile_bytes']['total']} bytes, recomputed "
            f"{core_total} / {mem_total}")
    ch = plan["channels"]
    got = [(ch[t][k]["used"], ch[t][k]["available"]) for t, k in (("core", "S2MM"), ("core", "MM2S"), ("memory tile", "S2MM"),
                                                                  ("memory tile", "MM2S"), ("shim", "MM2S"), ("shim", "S2MM"))]
    if got != [(2, 2), (1, 2), (3, 6), (3, 6), (2, 2), (1, 2)]:
        err(f"channels {got}")
    if [(v["used"], v["available"]) for v in plan["streams"].values()] != [(2, 6), (1, 4), (2, 6), (1, 4)]:
        err(f"stream ports {plan['streams']}")
    g = plan["grid"]
    key = next(k for k in g if k.startswith("column c"))
    if (g["token blocks R"], g["head segments S"], g["columns used"]) != (R, S, used) or \
            [(tuple(a), tuple(b)) for a, b in g[key]] != grid:
        err(f"grid {g}, recomputed R {R} S {S} {grid[:4]}")
    if plan["rtp"]["per used column"] != rtp:
        err(f"RTP words {plan['rtp']['per used column'][:2]}..., recomputed {rtp[:2]}...")
    if len(plan["per_column"]) != used:
        err(f"{len(plan['per_column'])} columns planned, {used} used")
        return plan
    for c, pc in enumerate(plan["per_column"]):
        got_b = [{k: b[k] for k in ("step", "what", "bd", "offset", "sizes", "strides", "token", "linear")} for b in pc["bds"]]
        if got_b != bds[c]:
            i = next((j for j, (a, b) in enumerate(zip(got_b, bds[c])) if a != b), min(len(got_b), len(bds[c])))
            err(f"column {c}: BD {i}: {got_b[i:i + 1]}, recomputed {bds[c][i:i + 1]} ({len(got_b)} vs {len(bds[c])} BDs)")
    if plan["stream"] != stream:
        i = next((j for j, (a, b) in enumerate(zip(plan["stream"], stream)) if a != b), min(len(plan["stream"]), len(stream)))
        err(f"stream event {i}: {plan['stream'][i:i + 2]}, recomputed {stream[i:i + 2]} ({len(plan['stream'])} vs {len(stream)})")
    sch = plan["schedule"]
    if (sch["steps"], sch["tasks queued per channel (at most)"], sch["shim BDs in use per column (at most)"],
            sch["steps per column"]) != (n_steps, worst_q, worst_bd, [len(s) for s in col_steps]):
        err(f"schedule {sch}, recomputed {n_steps} steps, queues {worst_q}, BDs {worst_bd}")

    # Replay the plan's own stream: queues, BD reuse, syncs once each in order, RTP before pushes.
    replay_err = err if not want_fail & {"shim BD slots", "shim: steps in flight", "shim BD ids", "shim BDs: reused"} \
        else (lambda e: None)
    first_push = next((i for i, e in enumerate(plan["stream"]) if e[0] == "push"), len(plan["stream"]))
    if any(e[0] in ("rtp", "barrier") for e in plan["stream"][first_push:]):
        err("an RTP write or barrier value after the first push")
    for c in range(used):
        q, held, synced = {"x": [], "cs": [], "y": []}, {}, []
        for ev in (e for e in plan["stream"] if e[1] == c):
            counts["stream events"] += 1
            if ev[0] == "push":
                if ev[3] in held:
                    replay_err(f"column {c}: BD {ev[3]} pushed for step {ev[4]} while step {held[ev[3]]} holds it")
                held[ev[3]] = ev[4]
                q[ev[2]].append(ev[4])
                if len(q[ev[2]]) > QUEUE:
                    replay_err(f"column {c}: {len(q[ev[2]])} tasks queued on {ev[2]}'s channel")
                if ev[5] != (ev[2] == "y"):
                    err(f"column {c}: push {ev}: only y's task carries the token")
            elif ev[0] == "sync":
                if ev[2] != y_ch:
                    err(f"column {c}: sync on channel {ev[2]}, y's is {y_ch}")
                synced.append(ev[3])
                q = {o: [s for s in v if s > ev[3]] for o, v in q.items()}
                held = {b: s for b, s in held.items() if s > ev[3]}
        if synced != list(range(len(col_steps[c]))):
            err(f"column {c}: syncs {synced[:6]}, every step once in order expected")

    # Operands and traffic.
    ext = lambda hs, ts: max(0, (tokens - 1) * ts + (heads - 1) * hs + ne0)
    args_of = {o["name"]: o["arg"] for o in d["operands"]}
    want_t = {f"x (arg {args_of['x']})": ext(xhs, xts), f"cs (arg {args_of['cs']})": tokens * ne0,
              f"y (arg {args_of['y']})": ext(yhs, yts)}
    if plan["tensors"] != want_t:
        err(f"tensors {plan['tensors']}, recomputed {want_t}")
    rows_b = 4 * tokens * heads * ne0
    cs_b = 4 * ne0 * sum(nt for (_, nt), _ in grid)
    want_tr = {"x read (bytes)": rows_b, "cs read (bytes)": cs_b, "y written (bytes)": rows_b,
               "read (bytes)": rows_b + cs_b, "written (bytes)": rows_b, "columns used": used,
               "kernel calls on the busiest core": max(nt * nh for (_, nt), (_, nh) in grid), "steps": n_steps}
    if plan["traffic"] != want_tr:
        err(f"traffic {plan['traffic']}, recomputed {want_tr}")

    # Element by element, for the small shapes whose strides a BD takes: through the BDs in push order,
    # the core program as the RTP words drive it, and back.
    if words and not want_fail & {"x head stride", "x token stride", "y head stride", "y token stride"}:
        wrote = {}       # y word -> (x word, cs word)
        x_rows_read = []
        for c, pc in enumerate(plan["per_column"]):
            stream_c = [e for e in plan["stream"] if e[1] == c]
            vec = next(e[3] for e in stream_c if e[0] == "rtp")
            nt_w, nh_w, nd_w = vec[words_idx["tokens"]], vec[words_idx["heads"]], vec[words_idx["n_dims"]]
            if nd_w != n_dims:
                err(f"column {c}: n_dims word {nd_w}")
            order = {(e[2], e[4]): i for i, e in enumerate(stream_c) if e[0] == "push"}
            by_push = sorted(pc["bds"], key=lambda b: order.get((b["what"], b["step"]), 1 << 30))
            wd = {o: [w for b in by_push if b["what"] == o for w in words_of(b["sizes"], b["strides"], b["offset"] // 4)]
                  for o in ("x", "cs", "y")}
            cut = lambda ws: [ws[i:i + ne0] for i in range(0, len(ws), ne0)]
            xo, co, yo = cut(wd["x"]), cut(wd["cs"]), cut(wd["y"])
            (tf, nt), (h0, nh) = grid[c]
            want_x = [[t * xts + h * xhs + i for i in range(ne0)] for t in range(tf, tf + nt) for h in range(h0, h0 + nh)]
            want_cs = [[t * ne0 + i for i in range(ne0)] for t in range(tf, tf + nt)]
            if xo != want_x:
                err(f"column {c}: x's head rows into the core are not its tokens x segment heads, in order")
            if co != want_cs:
                err(f"column {c}: the angle rows into the core are not its tokens' rows, once each, in order")
            # The core program: per token one angle row, per head one x row in and one y row out.
            out, xi, ci = [], 0, 0
            for _ in range(nt_w):
                if ci >= len(co):
                    err(f"column {c}: the core waits for an angle row never sent")
                    break
                cs_row = co[ci]
                ci += 1
                for _ in range(nh_w):
                    if xi >= len(xo):
                        err(f"column {c}: the core waits for an x row never sent")
                        break
                    out.append((xo[xi], cs_row))
                    xi += 1
            if xi != len(xo) or ci != len(co) or len(out) != len(yo):
                err(f"column {c}: the core takes {xi} of {len(xo)} x rows, {ci} of {len(co)} angle rows, writes "
                    f"{len(out)} rows where y's BDs take {len(yo)}")
            x_rows_read += [r[0] for r in xo]
            for (xr, cr), yr in zip(out, yo):
                for i in range(ne0):
                    if yr[i] in wrote:
                        err(f"y word {yr[i]} written twice")
                        break
                    wrote[yr[i]] = (xr[i], cr[i])
            counts["replayed words"] += len(wd["x"]) + len(wd["cs"]) + len(wd["y"])
        if sorted(x_rows_read) != sorted(t * xts + h * xhs for t in range(tokens) for h in range(heads)):
            err("x: not every head row read once")
        want_w = {t * yts + h * yhs + i: (t * xts + h * xhs + i, t * ne0 + i)
                  for t in range(tokens) for h in range(heads) for i in range(ne0)}
        if len(want_w) == tokens * heads * ne0 and wrote != want_w:
            bad = sorted(set(wrote) ^ set(want_w))[:3] or [k for k in want_w if wrote.get(k) != want_w[k]][:3]
            err(f"y: not every head row written once at its place with its x row and angle row, nothing else "
                f"(e.g. words {bad})")

    for k, v in (expect or {}).items():
        got_v = {"used": plan["grid"]["columns used"],
                 "grid": [(tuple(a), tuple(b)) for a, b in plan["grid"][key]],
                 "steps": plan["traffic"]["steps"], "calls": plan["traffic"]["kernel calls on the busiest core"],
                 "x bytes": plan["traffic"]["x read (bytes)"], "cs bytes": plan["traffic"]["cs read (bytes)"],
                 "y bytes": plan["traffic"]["y written (bytes)"],
                 "bds1": [(b["what"], b["bd"], b["offset"], b["sizes"], b["strides"])
                          for b in plan["per_column"][min(1, used - 1)]["bds"]],
                 "bds0": [(b["what"], b["bd"], b["offset"], b["sizes"], b["strides"]) for b in plan["per_column"][0]["bds"]],
                 "pushes0": [(e[0], e[2], e[3], e[4]) if e[0] == "push" else (e[0], e[3])
                             for e in plan["stream"] if e[1] == 0 and e[0] in ("push", "sync")],
                 "rtp": plan["rtp"]["per used column"], "failed": len(failed)}[k]
        if got_v != v:
            err(f"{k}: {got_v}, computed by hand {v}")
    if expect:
        counts["anchors"] += 1
    lines.append(f"{label}: {used} column(s) ({R} x {S}), steps {n_steps}, {len(failed)} failing check(s) as recomputed")
    return plan


rng = random.Random(20250611)
real = json.load(open(REAL))
FAMS = [k for k in real["families"] if k != "about"]


def random_view(tokens, heads, ne0, kind):
    """x and y strides (head, token) of a view of the given kind."""
    packed = (ne0, heads * ne0)
    if kind == "packed":
        return packed, packed
    if kind == "head gaps":       # heads apart by more than a row, tokens by more than their heads
        hs = ne0 + 16 * rng.randint(1, 8)
        return (hs, heads * hs + 16 * rng.randint(0, 5)), packed
    if kind == "fused qkv":       # the K of a row of Q, K and V heads: the token stride is the whole row
        n_q = heads * rng.choice([1, 4, 8])
        return (ne0, (n_q + 2 * heads) * ne0), packed
    if kind == "y gaps":
        return packed, (ne0 + 32, heads * (ne0 + 32) + 64)
    if kind == "token inner":     # heads outermost: [heads][tokens][ne0]
        return (tokens * ne0, ne0), (tokens * ne0, ne0)
    raise ValueError(kind)


# 1. The real description over many shapes: both families, every tile, rotations from 32 to the row
#    (partial ones too), strided views, decode (1 token) to prefill (512 tokens), 1..8 columns.
SHAPES = []
for fam in FAMS:
    tiles = sorted(int(t) for t in real["core_budget"]["kernel_stack"][fam] if t.isdigit())
    for i in range(60):
        ne0 = tiles[i % len(tiles)]
        n_dims = rng.choice([n for n in range(PAIR, ne0 + 1, PAIR) if fits(n, ne0)])
        tokens = rng.choice([1, 1, 1, 2, 3, 5, 8, 9, 13, 37, 64, 100, 255, 256, 257, 300, 512])
        heads = rng.choice([1, 2, 3, 4, 6, 8, 12, 32, 40, 64])
        columns = rng.randint(1, 8)
        x, y = random_view(tokens, heads, ne0, rng.choice(["packed", "head gaps", "fused qkv", "y gaps", "token inner"]))
        SHAPES.append((fam, tokens, heads, ne0, n_dims, x, y, columns))
# Partial rotation (32 of 80, Phi-2) with gaps between heads and tokens, and packed; the fewest rotated
# dims at every tile; the largest row.
SHAPES += [("norm", 9, 3, 80, 32, (96, 400), (96, 400), 8), ("norm", 2, 32, 80, 32, None, None, 8),
           ("neox", 5, 4, 96, 96, (96, 1152), None, 3), ("neox", 512, 8, 128, 64, None, None, 8),
           ("norm", 1, 8, 512, 256, (640, 8000), (512, 4096), 8), ("neox", 300, 2, 64, 32, None, None, 1)]
for t in sorted(int(k) for k in real["core_budget"]["kernel_stack"]["norm"] if k.isdigit()):
    SHAPES.append(("norm", 3, 5, t, 32, None, None, 8))
# What fails its checks: strides short of the row, a token stride of 0 or past the stride field, a head
# stride past it, more heads on a column than the d1 wrap (1 token x 2000 heads on 1 column: the host
# refuses it even though the BD is one contiguous run; on 2 columns 1000 each pass).
SHAPES += [("norm", 2, 4, 128, 128, (100, 512), None, 8), ("norm", 2, 4, 128, 128, None, (128, 0), 8),
           ("neox", 3, 1, 64, 64, (10, 5000000), None, 2), ("neox", 1, 3, 64, 64, (2000000, 1), None, 2),
           ("norm", 1, 2000, 64, 64, None, None, 1), ("norm", 1, 2000, 64, 64, None, None, 2),
           ("norm", 1, 1, 64, 64, (1, 0), (-5, -7), 8), ("norm", 40, 3, 64, 64, (64, -200), None, 4)]
for fam, tokens, heads, ne0, n_dims, x, y, columns in SHAPES:
    verify(REAL, fam, tokens, heads, ne0, n_dims, x, y, columns, words=tokens * heads * ne0 <= 40000)

# 2. Anchors, by hand.
# A decode token's 32 query heads of 128 on 8 columns: R = 1, S = min(32, 8 // 1) = 8; 4 heads each; column 1
# heads 4..7 at 4 x 128 x 4 = 2048 bytes, one token (d2 1, stride 0), contiguous (d1 stride 128 = d0); its
# angle row to all 8 columns: 8 x 128 x 4 = 4096 bytes; x 32 x 128 x 4 = 16384.
verify(REAL, "norm", 1, 32, 128, expect={
    "used": 8, "steps": 1, "calls": 4, "x bytes": 16384, "cs bytes": 4096, "y bytes": 16384,
    "bds1": [("x", 0, 2048, [128, 4, 1], [1, 128, 0]), ("cs", 1, 0, [128, 1, 1], [1, 128, 0]),
             ("y", 2, 2048, [128, 4, 1], [1, 128, 0])]})
# 37 tokens x 8 heads of 128: R = 8, S = 1; 37 = 8 x 4 + 5: blocks of 5 (columns 0..4) and 4 (5..7); the
# busiest core 5 x 8 = 40 calls; 37 angle rows: 37 x 512 = 18944 bytes; column 1 starts at token 5: x at
# 5 x 1024 x 4 = 20480 bytes, 5 tokens of 8 heads (one run), cs at 5 x 128 x 4 = 2560.
verify(REAL, "neox", 37, 8, 128, expect={
    "used": 8, "steps": 1, "calls": 40, "cs bytes": 18944, "x bytes": 151552,
    "grid": [((0, 5), (0, 8)), ((5, 5), (0, 8)), ((10, 5), (0, 8)), ((15, 5), (0, 8)), ((20, 5), (0, 8)),
             ((25, 4), (0, 8)), ((29, 4), (0, 8)), ((33, 4), (0, 8))],
    "bds1": [("x", 0, 20480, [128, 8, 5], [1, 128, 1024]), ("cs", 1, 2560, [128, 1, 5], [1, 128, 128]),
             ("y", 2, 20480, [128, 8, 5], [1, 128, 1024])]})
# 600 tokens x 2 heads of 64 on one column: steps of 256, 256, 88 on slots 0, 1, 0 (BDs 0 1 2, 8 9 10, 0 1 2);
# syncs one behind: after step 1's pushes step 0, after step 2's step 1, then step 2; 1200 calls; the third
# step's x at token 512: 512 x 128 x 4 = 262144 bytes, 88 tokens.
verify(REAL, "neox", 600, 2, 64, columns=1, expect={
    "used": 1, "steps": 3, "calls": 1200, "cs bytes": 600 * 64 * 4,
    "pushes0": [("push", "x", 0, 0), ("push", "cs", 1, 0), ("push", "y", 2, 0), ("push", "x", 8, 1), ("push", "cs", 9, 1),
                ("push", "y", 10, 1), ("sync", 0), ("push", "x", 0, 2), ("push", "cs", 1, 2), ("push", "y", 2, 2),
                ("sync", 1), ("sync", 2)],
    "bds0": [("x", 0, 0, [64, 2, 256], [1, 64, 128]), ("cs", 1, 0, [64, 1, 256], [1, 64, 64]),
             ("y", 2, 0, [64, 2, 256], [1, 64, 128]), ("x", 8, 131072, [64, 2, 256], [1, 64, 128]),
             ("cs", 9, 65536, [64, 1, 256], [1, 64, 64]), ("y", 10, 131072, [64, 2, 256], [1, 64, 128]),
             ("x", 0, 262144, [64, 2, 88], [1, 64, 128]), ("cs", 1, 131072, [64, 1, 88], [1, 64, 64]),
             ("y", 2, 262144, [64, 2, 88], [1, 64, 128])]})
# The host's test's other shapes: 1 token x 6 heads of 64: 6 columns of one head, 6 angle rows; 3 tokens x 8
# heads: R = 3, S = min(8, 8 // 3) = 2: 6 columns of 4 heads, 6 angle rows.
verify(REAL, "norm", 1, 6, 64, expect={"used": 6, "steps": 1, "calls": 1, "cs bytes": 6 * 64 * 4})
verify(REAL, "norm", 3, 8, 128, expect={"used": 6, "steps": 1, "calls": 4, "cs bytes": 6 * 128 * 4,
                                        "grid": [((0, 1), (0, 4)), ((0, 1), (4, 4)), ((1, 1), (0, 4)), ((1, 1), (4, 4)),
                                                 ((2, 1), (0, 4)), ((2, 1), (4, 4))]})
# Phi-2's partial rotation, 32 of 80 dims, 9 tokens x 3 heads, heads 96 apart and tokens 400: R = 8, S = 1,
# blocks 2 (column 0) and 1; column 1 takes token 2: x at 2 x 400 x 4 = 3200 bytes, one token (d2 stride 0),
# heads 96 apart (not contiguous); its RTP words n_dims 32, tokens 1, heads 3.
verify(REAL, "norm", 9, 3, 80, 32, (96, 400), (96, 400), expect={
    "used": 8, "calls": 6, "failed": 0,
    "bds1": [("x", 0, 3200, [80, 3, 1], [1, 96, 0]), ("cs", 1, 640, [80, 1, 1], [1, 80, 0]),
             ("y", 2, 3200, [80, 3, 1], [1, 96, 0])],
    "rtp": [{"contract": 0, "tokens": 2, "heads": 3, "n_dims": 32, "version": 1}] +
           [{"contract": 0, "tokens": 1, "heads": 3, "n_dims": 32, "version": 1}] * 7})
# One token of 2000 heads on one column: 2000 > 1023 heads in a column's BD (d1): one failing check.
verify(REAL, "norm", 1, 2000, 64, columns=1, expect={"failed": 1})

# 3. Variants of the description (written by check_design_rope.sh): what each must fail, recomputed.
before = counts["plans"]
for name in sorted(os.listdir(vdir)):
    if not name.endswith(".json") or name.startswith("refused-"):
        continue
    path = os.path.join(vdir, name)
    for fam, tokens, heads, ne0, n_dims, columns in (("norm", 1, 32, 128, None, 8), ("neox", 600, 2, 64, None, 1),
                                                     ("norm", 37, 8, 80, 64, 3)):
        verify(path, fam, tokens, heads, ne0, n_dims, columns=columns, words=tokens * heads * ne0 <= 40000)
counts["variant plans"] = counts["plans"] - before

for e in errors[:40]:
    print(f"  {e}")
if len(errors) > 40:
    print(f"  ... and {len(errors) - 40} more")
print(f"plans: {counts['plans']} recomputed ({counts['variant plans']} of variant descriptions, {counts['anchors']} held to "
      f"numbers by hand); replayed {counts['stream events']} stream events and {counts['replayed words']} words "
      f"through the BDs and the core program; {len(errors)} disagreement(s); e.g.")
failing = [l for l in lines if " 0 failing" not in l]
for line in lines[:2] + lines[60::40][:2] + failing[:2] + [l for l in failing if not l.startswith("dataflow.json")][::4][:4]:
    print(f"  {line}")
sys.exit(1 if errors else 0)
