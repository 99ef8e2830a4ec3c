#!/usr/bin/env python3
"""The quant design's plans (aie/act_quant/design.py --print-plan --format json) against a recomputation
written here from the rules of the quant movement, sharing no code with design.py (design.py is only run,
through its command line, in this process for speed):

  - the shape (T = ceil(n / tile_n) x k / tile_k tiles), the grid (C = min(T, columns) columns, column c
    the block of T // C tiles, one more for the first T % C), the segments (runs of one token tile, at most
    limits.iteration_max), one step each on the BD slots in turn, every BD's id, chain, offset, sizes,
    strides and repeat count, the stream of each column (pushes, the token's syncs), the queue and BD
    counts, the RTP words, the kernel calls, the runtime sequence's operands and the traffic;
  - the plan's stream replayed here: a channel never holds more tasks than its queue (4), a BD (or the
    zeros BD a pushed chain runs) is never pushed while an unsynced step holds it, every step synced once,
    in order;
  - the plan's BDs replayed row by row (every shape) and word by word (the small ones): per column, the
    x channel's pushes (each chain pass: x's next iteration, then its zeros) cut into group objects and
    tiles of tile_n rows, the tiles BDs' bytes cut into tiles: the k-th tile the core builds is written to
    the k-th tile slot, tile t = nt x k_tiles + kt gets x rows nt x tile_n .. of K tile kt (the valid
    rows, in order) and then zeros (the padding rows, inside the zeros block), every tile written once,
    by the column whose block holds it;
  - which checks fail: exactly those the recomputation says must, for the real description and for
    variants of it (written to <tmp> by the caller), and the exit status (0 or 1) with them;
  - a few shapes held to numbers computed by hand (the comments show the arithmetic).

    act_quant_plan_verify.py <repo root> <directory of variant descriptions>
"""

import contextlib
import importlib.util
import io
import json
import os
import re
import sys

root, vdir = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("xdna_quant_design_under_test", f"{root}/aie/act_quant/design.py")
design = importlib.util.module_from_spec(spec)
spec.loader.exec_module(design)
REAL = f"{root}/aie/act_quant/dataflow.json"

# AIE2P facts and the host's stream rules, written here again.
CORE_BYTES, MEMTILE_BYTES = 65536, 524288
WRAP, ITER_MAX, REPEAT_MAX, STRIDE_MAX, LENGTH_MAX, BDS, QUEUE = 1023, 64, 255, 1 << 20, (1 << 32) - 1, 16, 4
HOST_IN_FLIGHT = 2
SIGNATURE = ["const float *", "uint8_t *", "int32_t"]

errors, lines = [], []
counts = {"plans": 0, "variant plans": 0, "anchors": 0, "replayed tiles": 0, "replayed rows": 0, "replayed words": 0,
          "stream events": 0, "padded steps": 0, "steps": 0, "capped segments": 0}
seen = {"families": set(), "k tiles": set(), "columns": set(), "most tiles in a column": 0}


def run(desc_path, args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = design.main(["--dataflow", desc_path, "--print-plan", "--format", "json"] + args)
    return rc, out.getvalue(), err.getvalue()


def blocks_of(total, columns):
    used = min(total, columns)
    out, at = [], 0
    for c in range(used):
        k = total // used + (1 if c < total % used else 0)
        out.append((at, k))
        at += k
    assert at == total
    return out


def segments_of(first, count, k_tiles, cap):
    """Runs of one token tile, at most cap each: (first tile, token tile, first K tile, tiles)."""
    out = []
    for t in range(first, first + count):
        nt, kt = t // k_tiles, t % k_tiles
        if out and out[-1][1] == nt and out[-1][3] < cap:
            out[-1] = (out[-1][0], nt, out[-1][2], out[-1][3] + 1)
        else:
            out.append((t, nt, kt, 1))
    return out


def signature(desc_path, d, family, contract):
    """(file, [parameter types]) of the kernel's definition, looked up as the build does: the family's
    source beside the description first, then the design's kernels/."""
    src = d["core_budget"]["kernel_stack"][family].get("source")
    for kdir in (os.path.join(os.path.dirname(os.path.abspath(desc_path)), "kernels"),
                 os.path.join(root, "aie", d["design"], "kernels")):
        if src and os.path.isfile(os.path.join(kdir, src)):
            names = [src] + sorted(n for n in os.listdir(kdir) if n.endswith(".cc") and n != src)
            for n in names:
                text = open(os.path.join(kdir, n)).read()
                m = re.search(r"void\s+" + contract + r"\s*\(([^)]*)\)\s*\{", text)
                if m:
                    types = []
                    for prm in m.group(1).split(","):
                        toks = prm.replace("*", " * ").split()
                        if toks and toks[-1] not in ("*", "const", "float", "int32_t", "uint8_t"):
                            toks = toks[:-1]
                        types.append(" ".join(toks))
                    return n, types
            return None
    return None


def verify(desc_path, family, n, k, columns, rs=None, expect=None, words=False):
    d = json.load(open(desc_path))
    args = ["--family", family, "--rows", str(n), "--k", str(k), "--cols", str(columns)]
    if rs is not None:
        args += ["--row-stride", str(rs)]
    name = "dataflow.json" if desc_path == REAL else os.path.basename(desc_path)
    label = f"{name} {' '.join(args)}"
    err = lambda e: errors.append(f"{label}: {e}")
    rc, out, stderr = run(desc_path, args)
    if rc not in (0, 1):
        err(f"--print-plan exited {rc}: {stderr.strip()}")
        return None
    plan = json.loads(out)
    counts["plans"] += 1

    # The description, read here.
    ob = d["objects"][family]
    tn, tk, gt, G, tb = ob["tokens"], ob["tile_k"], ob["group_tokens"], ob["group"], ob["tile"]
    contract = d["families"][family][0]
    rs = k if rs is None else rs
    fifos = {f["name"]: f for f in d["layouts"][0]["fifos"]}
    X = next(f["operand"] for f in fifos.values() if f["from"] == "shim")
    Tn = next(f["operand"] for f in fifos.values() if f["to"] == "shim")
    Z = next(o["name"] for o in d["operands"] if o["name"] not in (X, Tn))
    arg = {o["name"]: o["arg"] for o in d["operands"]}
    depth = lambda f: d["depths"][f["depth"]] if isinstance(f["depth"], str) else f["depth"]
    mem_x = depth(next(f for f in fifos.values() if f["from"] == "shim"))
    mem_t = depth(next(f for f in fifos.values() if f["to"] == "shim"))
    lim, shim, cp, budget = d["limits"], d["shim"], d["core_program"], d["core_budget"]
    slots, F = shim["bd_slots"], shim["steps_in_flight"]
    cap = max(1, lim["iteration_max"])
    zb = d["zeros_bytes"]
    stack = budget["kernel_stack"][family].get(str(tn), 0)
    kernel_data = budget.get("kernel_data_bytes", 0)
    stack_keys = sorted(int(x) for x in budget["kernel_stack"][family] if x.isdigit())

    # The shape and the schedule, recomputed.
    n_tiles, k_tiles = (n + tn - 1) // tn, k // tk
    T = n_tiles * k_tiles
    blocks = blocks_of(T, columns) if T else []
    cols = []
    for c, (first, count) in enumerate(blocks):
        segs = segments_of(first, count, k_tiles, cap)
        bds, stream, steps = [], [], []
        for s, (t0, nt, kt0, m) in enumerate(segs):
            slot = slots[s % len(slots)]
            a, b = (slot[X] + [None, None])[:2]
            v = min(tn, n - nt * tn)
            pad = tn - v
            steps.append((t0, nt, kt0, m, v, pad))
            # (no stride on a dimension of one: one valid row, one K tile)
            bds.append((X, s, a, b if pad else None, (nt * tn * rs + kt0 * tk) * 4, [m, 1, v, tk],
                        [tk if m > 1 else 0, 0, rs if v > 1 else 0, 1], m - 1, False))
            if pad:
                bds.append((Z, s, b, None, 0, [1, 1, 1, pad * tk], [0, 0, 0, 1], None, False))
            bds.append((Tn, s, slot[Tn], None, t0 * tb, [1, 1, 1, m * tb // 4], [0, 0, 0, 1], 0, True))
            stream += [["push", X, a, s, m - 1], ["push", Tn, slot[Tn], s, 0]]
            if s >= F - 1:
                stream.append(["sync", s - (F - 1)])
        stream += [["sync", s] for s in range(max(0, len(segs) - (F - 1)), len(segs))]
        cols.append((segs, steps, bds, stream))
        counts["steps"] += len(segs)
        counts["padded steps"] += sum(1 for x in steps if x[5])
        counts["capped segments"] += sum(1 for x in segs if x[3] == cap and x[3] < k_tiles)
        seen["most tiles in a column"] = max(seen["most tiles in a column"], count)

    # Which checks must fail, recomputed: exact check names.
    want = set()
    arr = d["array"]
    if not (arr["core_rows"] == 1 and arr["shim_row"] == 0 and arr["memtile_row"] == 1 and 1 < arr["first_core_row"] < 6):
        want.add("array: one core per column, npu2's rows")
    if arr["max_columns"] > 8:
        want.add("array: the description's columns within npu2's")
    if G != gt * tk * 4:
        want.add("family objects: a group is group_tokens x tile_k fp32")
    if tn % gt:
        want.add("family objects: a tile's tokens in whole groups")
    if tb % 4:
        want.add("family objects: the tile in whole 32-bit words")
    if stack_keys != [tn]:
        want.add("family: one token tile, its objects' tokens")
    sig = signature(desc_path, d, family, contract)
    if sig is None:
        want.add(f"kernel {contract}: defined in the family's source")
    elif sig[1] != SIGNATURE:
        want.add(f"kernel {contract} ({sig[0]}) takes what the core passes")
    if zb < (tn - 1) * tk * 4:
        want.add("zeros: the block holds the family's largest padding")
    if zb <= 0 or zb % 4:
        want.add("zeros: the block in whole 32-bit words")
    core_x = depth(next(f for f in fifos.values() if f["to"] == "core"))
    core_t = depth(next(f for f in fifos.values() if f["from"] == "core"))
    core_total = core_x * G + core_t * tb + 4 * cp["rtp_word_count"] + stack + kernel_data
    if core_total > min(budget["core_data_bytes"], CORE_BYTES):
        want.add("core data memory")
    if budget["core_data_bytes"] > CORE_BYTES:
        want.add("core: the description's budget within the tile's memory")
    if stack <= 0:
        want.add("core: a stack for the family's token tile")
    if cp["rtp_core_address"] % 4 or cp["rtp_core_address"] + 4 * cp["rtp_word_count"] > budget["core_data_bytes"]:
        want.add("RTP words inside core data memory")
    mem_total = mem_x * G + mem_t * tb
    if mem_total > min(budget["memtile_bytes"], MEMTILE_BYTES):
        want.add("memory tile")
    if budget["memtile_bytes"] > MEMTILE_BYTES:
        want.add("memory tile: the description's budget within the tile's memory")
    xch = next(f for f in fifos.values() if f["from"] == "shim")["shim_channel"]["channel"]
    tch = next(f for f in fifos.values() if f["to"] == "shim")["shim_channel"]["channel"]
    if not (0 <= xch < 2 and 0 <= tch < 2):
        want.add("shim channel numbers in range")
    if not 1 <= lim["wrap_max"] <= WRAP:
        want.add("limits.wrap_max within the shim BD's d0 and d1 wraps")
    if not 1 <= lim["iteration_max"] <= ITER_MAX:
        want.add("limits.iteration_max within the shim BD's iteration count")
    if not 0 <= lim["repeat_max"] <= REPEAT_MAX:
        want.add("limits.repeat_max within the push queue's repeat count")
    if not 1 <= lim["stride_max"] <= STRIDE_MAX:
        want.add("limits.stride_max within the shim BD's stride field")
    if k % tk or k < tk:
        want.add("shape: k in whole K tiles")
    if n > 1 and rs < k:
        want.add(f"{X} row stride covers the row")
    if n > 1 and rs > lim["stride_max"]:
        want.add(f"{X} row stride within the shim's stride field")
    xs = [s.get(X, []) if isinstance(s.get(X, []), list) else [s.get(X)] for s in slots]
    if len(slots) != F or any(len(x) != 2 for x in xs) or any(not isinstance(s.get(Tn), int) for s in slots):
        want.add(f"shim BD slots: one set per step in flight, 2 {X} BDs (its BD, the {Z} chained), 1 {Tn} BD")
    flat = [i for s, x in zip(slots, xs) for i in x + [s.get(Tn)]]
    if len(set(map(str, flat))) != len(flat) or any(not isinstance(i, int) or not 0 <= i < shim["bds"] for i in flat):
        want.add("shim BD ids distinct and in range")
    if shim["bds"] > BDS:
        want.add("shim: the description's bds within the shim tile's")
    if 3 * F > min(shim["bds"], BDS):
        want.add("shim BDs in flight")
    if F != HOST_IN_FLIGHT:
        want.add("shim: steps in flight as the host streams them")
    if F > QUEUE:
        want.add(f"shim task queue per channel: {X}")
        want.add(f"shim task queue per channel: {Tn}")
    every = [b for _, _, bds, _ in cols for b in bds]
    if any(b[0] == X and b[5][3] > lim["wrap_max"] for b in every):
        want.add(f"shim BDs: d0 size ({X}: a K tile of a row)")
    if any(b[0] == X and b[5][2] > lim["wrap_max"] for b in every):
        want.add(f"shim BDs: d1 size ({X}: the valid rows of a token tile)")
    if any(not 1 <= b[5][0] <= lim["iteration_max"] for b in every):
        want.add("shim BDs: iteration count (a step's K tiles)")
    if any(b[7] is not None and b[7] > lim["repeat_max"] for b in every):
        want.add("shim BDs: queue-push repeat (a step's K tiles - 1)")
    if any(max(b[6]) > lim["stride_max"] for b in every):
        want.add("shim BDs: strides")
    if any(b[5][1] * b[5][2] * b[5][3] > LENGTH_MAX for b in every):
        want.add("shim BDs: buffer length")
    if k % tk:
        want.add(f"traffic: every value of {X} read once, the padding from {Z}, every tile written once")
    if sorted(cp["rtp_words"]) != ["contract", "tiles", "version"] or \
            sorted(cp["rtp_words"].values()) != list(range(cp["rtp_word_count"])):
        want.add("RTP words: contract, tiles and version, distinct, within the word count")
    bar = cp["barrier"]
    if bar["acquire"]["mode"] != "equal":
        want.add("barrier: the core waits as IRON's wait_for_value does")
    if bar["set_value"] != bar["acquire"]["value"]:
        want.add("barrier: the sequence's set opens the core's wait")
    after = (bar["set_value"] if bar["acquire"]["mode"] == "equal" else bar["set_value"] - bar["acquire"]["value"]) + \
        bar["release"]["value"]
    if not (bar["release"]["value"] > 0 and after != bar["acquire"]["value"]):
        want.add("barrier: released after the RTP words are read")
    if not 0 <= after <= bar["max_value"]:
        want.add("barrier: lock values within the lock's range")
    rtp_cols = [{"contract": 0, "tiles": cnt, "version": cp["rtp_layout_version"]} for _, cnt in blocks]
    if max((max(w.values()) for w in rtp_cols), default=0) > cp["rtp_word_max"] or cp["rtp_word_max"] > (1 << 31) - 1:
        want.add("RTP words fit the core's int32 words")

    failed = {c["check"] for c in plan["checks"] if not c["ok"]}
    for f in sorted(failed - want):
        err(f"check failed that should pass: {f}")
    for w in sorted(want - failed):
        err(f"check passed that must fail: {w}")
    if rc != (1 if failed else 0):
        err(f"design.py exited {rc} with {len(failed)} failed check(s)")
    if plan["checks failed"] != [f"{c['check']}: {c['detail']}" for c in plan["checks"] if not c["ok"]]:
        err("'checks failed' is not the failed checks")

    # Shape, budgets.
    got = (plan["tile_n"], plan["tile_k"], plan["group_tokens"], plan["group_bytes"], plan["tile_bytes"],
           plan["n_tiles"], plan["k_tiles"], plan["tiles"], plan["padding_rows"], plan["contract"])
    if got != (tn, tk, gt, G, tb, n_tiles, k_tiles, T, n_tiles * tn - n, contract):
        err(f"shape {got}")
    if plan["core_bytes"]["total"] != core_total:
        err(f"core data {plan['core_bytes']['total']}, recomputed {core_total}")
    if plan["memtile_bytes"]["total"] != mem_total:
        err(f"memory tile {plan['memtile_bytes']['total']}, recomputed {mem_total}")
    ch = plan["channels"]
    got = [(ch[t][dd]["used"], ch[t][dd]["available"]) for t in ("core", "memory tile", "shim") for dd in ch[t]]
    if got != [(1, 2), (1, 2), (2, 6), (2, 6), (1, 2), (1, 2)]:
        err(f"channels {got}")

    # The grid, segments, steps, BDs, stream.
    if [tuple(b) for b in plan["grid"]["blocks (first tile, tiles)"]] != blocks or plan["grid"]["columns used"] != len(blocks):
        err(f"grid {plan['grid']}, recomputed {blocks}")
    if len(plan["per_column"]) != len(cols):
        err(f"{len(plan['per_column'])} columns planned, {len(cols)} used")
        return plan
    for c, ((segs, steps, bds, stream), pc) in enumerate(zip(cols, plan["per_column"])):
        got_s = [tuple(x) for x in pc["segments (first tile, token tile, first K tile, tiles)"]]
        if got_s != segs:
            err(f"column {c}: segments {got_s[:4]}..., recomputed {segs[:4]}...")
        got_st = [(x["first tile"], x["token tile"], x["first K tile"], x["tiles"], x["valid rows"], x["padding rows"])
                  for x in pc["steps"]]
        if got_st != steps:
            err(f"column {c}: steps {got_st[:3]}..., recomputed {steps[:3]}...")
        got_b = [(b["what"], b["step"], b["bd"], b["next_bd"], b["offset (bytes)"], b["sizes"], b["strides"], b["repeat"],
                  b["token"]) for b in pc["bds"]]
        if got_b != bds:
            diff = next((j for j, (x, y) in enumerate(zip(got_b, bds)) if x != y), min(len(got_b), len(bds)))
            err(f"column {c}: BD {diff}: {got_b[diff:diff + 1]}, recomputed {bds[diff:diff + 1]} ({len(got_b)} vs {len(bds)} BDs)")
        if pc["stream"] != stream:
            diff = next((j for j, (x, y) in enumerate(zip(pc["stream"], stream)) if x != y), min(len(pc["stream"]), len(stream)))
            err(f"column {c}: stream event {diff}: {pc['stream'][diff:diff + 2]}, recomputed {stream[diff:diff + 2]}")

    # Replay the plan's stream: queues, BDs in use, syncs. A description whose queue or BD checks fail may
    # overflow them (the plan says so); any other plan must not.
    bad_slots = want & {f"shim task queue per channel: {X}", f"shim task queue per channel: {Tn}", "shim BDs in flight",
                        "shim BD ids distinct and in range", "shim: steps in flight as the host streams them",
                        f"shim BD slots: one set per step in flight, 2 {X} BDs (its BD, the {Z} chained), 1 {Tn} BD"}
    replay_err = (lambda e: None) if bad_slots else err
    worst = {X: 0, Tn: 0, "bds": 0}
    for c, pc in enumerate(plan["per_column"]):
        chain = {(b["step"], b["bd"]): b["next_bd"] for b in pc["bds"] if b["what"] == X}
        queued, held, synced = {X: [], Tn: []}, {}, []
        for ev in pc["stream"]:
            counts["stream events"] += 1
            if ev[0] == "push":
                _, what, bd, s, _rep = ev
                for b in [bd] + ([chain[(s, bd)]] if what == X and chain.get((s, bd)) is not None else []):
                    if b in held:
                        replay_err(f"column {c}: BD {b} pushed for step {s} while step {held[b]} holds it (not synced)")
                    held[b] = s
                queued[what].append(s)
                if len(queued[what]) > QUEUE:
                    replay_err(f"column {c}: {len(queued[what])} tasks queued on {what}'s channel, its queue holds {QUEUE}")
            else:
                s = ev[1]
                if synced and s != synced[-1] + 1 or not synced and s != 0:
                    err(f"column {c}: sync on step {s} after {synced[-1:]}")
                synced.append(s)
                # A step's tiles token: its x chain has run (the tiles came from it) and so have the earlier steps.
                for key in queued:
                    queued[key] = [x for x in queued[key] if x > s]
                held = {b: x for b, x in held.items() if x > s}
            worst[X] = max(worst[X], len(queued[X]))
            worst[Tn] = max(worst[Tn], len(queued[Tn]))
            worst["bds"] = max(worst["bds"], len(held))
        if synced != list(range(len(pc["steps"]))):
            err(f"column {c}: syncs {synced[:6]}..., every step once in order expected")
    sch = plan["schedule"]
    # (With bad slots two unsynced steps may share a BD id: the replay counts ids, the plan BDs of steps.)
    if (sch[f"{X} tasks queued per channel (at most)"], sch[f"{Tn} tasks queued per channel (at most)"],
            sch["shim BDs in use per column (at most)"]) != (worst[X], worst[Tn], worst["bds"]) and not bad_slots:
        err(f"queues and BDs in use {sch}, replayed {worst}")
    if sch["tiles per step (at most)"] != cap or sch["steps in flight"] != F or \
            sch["steps per column"] != [len(x[0]) for x in cols]:
        err(f"schedule {sch}")

    # Replay the plan's BDs into the tile objects, row by row: per column, the x channel's pushes in order
    # (each pass of a chain: x's BD at its next iteration, then the BD it chains to), rows of tile_k words;
    # the core takes tile_n / group_tokens group objects of group bytes per tile.
    z_words = zb // 4
    # A plan whose objects, shape or zeros block fail their checks moves bytes no tile is made of (or past
    # the block); the replay holds the others to the tiles.
    replay = not (want & {"family objects: a group is group_tokens x tile_k fp32", "family objects: a tile's tokens in whole groups",
                          "family objects: the tile in whole 32-bit words", "shape: k in whole K tiles",
                          f"{X} row stride covers the row", "zeros: the block holds the family's largest padding",
                          "zeros: the block in whole 32-bit words"})
    written = []
    for c, pc in enumerate(plan["per_column"] if replay else []):
        by_id = {(b["step"], b["bd"]): b for b in pc["bds"]}
        rows, slots_w = [], []
        for ev in pc["stream"]:
            if ev[0] != "push":
                continue
            _, what, bd, s, rep = ev
            b = by_id[(s, bd)]
            if what == Tn:
                off, length = b["offset (bytes)"], 4 * b["sizes"][1] * b["sizes"][2] * b["sizes"][3]
                if b["strides"] != [0, 0, 0, 1] or off % tb or length % tb or rep != 0:
                    err(f"column {c}: tiles BD of step {s} is not whole tiles, once: offset {off}, {length} bytes")
                    break
                slots_w += [off // tb + j for j in range(length // tb)]
                continue
            chain = [b] + ([by_id[(s, b["next_bd"])]] if b["next_bd"] is not None else [])
            it_at = {id(x): 0 for x in chain}
            for _pass in range(rep + 1):
                for x in chain:
                    it, d2, d1, d0 = x["sizes"]
                    its, s2, s1, s0 = x["strides"]
                    base = x["offset (bytes)"] // 4 + (it_at[id(x)] % it) * its
                    it_at[id(x)] += 1
                    if x["what"] == X:
                        if d0 != tk or s0 != 1 or d2 != 1:
                            err(f"column {c}: x BD of step {s} does not move rows of a K tile: {x['sizes']} {x['strides']}")
                            break
                        rows += [("x", base + j * s1) for j in range(d1)]
                    else:
                        length = d2 * d1 * d0
                        if x["strides"][1:] != [0, 0, 1] or length % tk or x["offset (bytes)"] + 4 * length > zb:
                            err(f"column {c}: zeros BD of step {s}: {length} words from byte {x['offset (bytes)']}, "
                                f"not rows of {tk} inside the {zb}-byte block")
                            break
                        rows += [("z", base + j * tk) for j in range(length // tk)]
        first, count = blocks[c]
        if slots_w != list(range(first, first + count)):
            err(f"column {c}: tile slots written {slots_w[:6]}..., the block is {first}..{first + count - 1}")
        if len(rows) != count * tn:
            err(f"column {c}: {len(rows)} rows through the memory tile, {count} tiles x {tn} expected")
        for j, t in enumerate(slots_w[:count]):
            nt, kt = t // k_tiles, t % k_tiles
            v = min(tn, n - nt * tn)
            exp = [("x", (nt * tn + r) * rs + kt * tk) for r in range(v)]
            got_r = rows[j * tn:(j + 1) * tn]
            if got_r[:v] != exp or any(r[0] != "z" for r in got_r[v:]):
                err(f"column {c}: tile {t} (token tile {nt}, K tile {kt}) gets {got_r[:2]}..{got_r[-1:]}, expected "
                    f"{v} rows of x from {exp[:1]} then {tn - v} zero rows")
                break
            counts["replayed tiles"] += 1
        counts["replayed rows"] += len(rows)
        written += slots_w
        # ... word by word for the small shapes: every word of each tile's x as the BDs address it.
        if words:
            got_w, exp_w = [], []
            for kind, at in rows:
                got_w += [(kind, at + i) if kind == "x" else ("z", 0 <= at + i < z_words) for i in range(tk)]
            for t in range(first, first + count):
                nt, kt = t // k_tiles, t % k_tiles
                for r in range(tn):
                    row = nt * tn + r
                    exp_w += [("x", row * rs + kt * tk + i) if row < n else ("z", True) for i in range(tk)]
            if got_w != exp_w:
                err(f"column {c}: the words through the memory tile are not each tile's rows of x, then zeros")
            counts["replayed words"] += len(got_w)
    if replay and sorted(written) != list(range(T)):
        err("tiles: not every tile written once")

    # RTP words, calls, operands, traffic.
    if plan["rtp"]["per used column"] != rtp_cols:
        err(f"RTP words {plan['rtp']['per used column'][:3]}, recomputed {rtp_cols[:3]}")
    calls = [cnt * (tn // gt) for _, cnt in blocks]
    if plan["calls"] != {"per tile": tn // gt, "per column": calls, "kernel calls on the busiest core": max(calls, default=0)}:
        err(f"calls {plan['calls']}")
    want_t = {f"{X} (arg {arg[X]}, fp32 values)": (n - 1) * rs + k, f"{Tn} (arg {arg[Tn]}, bytes)": T * tb,
              f"{Z} (arg {arg[Z]}, bytes)": zb}
    if plan["tensors"] != want_t:
        err(f"tensors {plan['tensors']}, recomputed {want_t}")
    xb, zbytes, tbytes = n * k_tiles * tk * 4, (n_tiles * tn - n) * tk * 4 * k_tiles, T * tb
    want_tr = {f"{X} read (bytes)": xb, f"{Z} read (bytes)": zbytes, f"{Tn} written (bytes)": tbytes,
               "read (bytes)": xb + zbytes, "written (bytes)": tbytes}
    if plan["traffic"] != want_tr:
        err(f"traffic {plan['traffic']}, recomputed {want_tr}")

    for key, val in (expect or {}).items():
        pcs = plan["per_column"]
        got_v = {"blocks": [tuple(b) for b in plan["grid"]["blocks (first tile, tiles)"]],
                 "segments": [[tuple(s) for s in pc["segments (first tile, token tile, first K tile, tiles)"]] for pc in pcs],
                 "bds0": [(b["what"], b["bd"], b["next_bd"], b["offset (bytes)"], b["sizes"], b["strides"], b["repeat"])
                          for b in pcs[0]["bds"]] if pcs else [],
                 "stream0": pcs[0]["stream"] if pcs else [], "traffic": plan["traffic"],
                 "rtp": [w["tiles"] for w in plan["rtp"]["per used column"]], "failed": sorted(failed),
                 "core": plan["core_bytes"]["total"], "steps": plan["schedule"]["steps per column"]}[key]
        if got_v != val:
            err(f"{key}: {got_v}, computed by hand {val}")
    if expect:
        counts["anchors"] += 1
    if desc_path == REAL:
        seen["families"].add(family)
        seen["k tiles"].add(k_tiles)
        seen["columns"].add(columns)
    lines.append(f"{label}: {T} tiles, {len(blocks)} column(s), steps {[len(x[0]) for x in cols][:8]}, "
                 f"{len(failed)} failing check(s) as recomputed")
    return plan


# 1. The real description: every family; n = 1, tile_n - 1, tile_n, tile_n + 1 and several token tiles (one
#    of them short); k over 1..60 K tiles and past the 64-tile cap; 1, 3 and 8 columns; strided rows.
D = json.load(open(REAL))
FAMILIES = [f for f in D["families"] if f != "about"]
for fi, fam in enumerate(FAMILIES):
    ob = D["objects"][fam]
    tn, tk = ob["tokens"], ob["tile_k"]
    ns = [1, max(1, tn - 1), tn, tn + 1, 3 * tn + 2, 4 * tn]
    for ni, n in enumerate(ns):
        for ci, columns in enumerate((1, 3, 8)):
            j = ni * 3 + ci
            # Every K tile count of 1..60 across a family's 18 shapes (and the next family's offset), some past 64.
            kts = [1 + (fi * 7 + j * 10 + x) % 60 for x in (0, 3)] + [[64, 65, 71, 130][(fi + j) % 4]]
            for kt in kts:
                small = n * kt * tk <= 60000 and kt <= 8
                verify(REAL, fam, n, kt * tk, columns, words=small)
    # Strided rows: a row stride past the row (an activation view), one row with a short stride (never
    # stepped over), and strides that fail.
    verify(REAL, fam, tn + 3, 5 * tk, 3, rs=5 * tk + 7, words=True)
    verify(REAL, fam, 2 * tn, 3 * tk, 8, rs=4096 * 3, words=True)
    verify(REAL, fam, 1, 2 * tk, 1, rs=3)
    verify(REAL, fam, 1, 2 * tk, 2, rs=(1 << 20) + 5)
    verify(REAL, fam, 3, 2 * tk, 2, rs=2 * tk - 1)
    verify(REAL, fam, 2, tk, 1, rs=(1 << 20) + 1)
    # k not a whole number of K tiles (the plan moves the whole ones; its checks fail).
    verify(REAL, fam, 5, tk + 32, 3)
    verify(REAL, fam, 5, tk // 2, 3)
# Every K tile count 1..60 on one family, 1 and 8 columns, a short last token tile.
for kt in range(1, 61):
    for columns in (1, 8):
        verify(REAL, "a8_b32_n32", 37, kt * 256, columns, words=kt <= 4)

# 2. Anchors, by hand.
# a8_b32_n32, 33 rows x 4096 on 3 columns: 2 token tiles x 16 K tiles = 32 tiles; 32 = 3 x 10 + 2: blocks
# (0, 11), (11, 11), (22, 10). Column 1: tiles 11..15 of token tile 0 (K 11..15) and 16..21 of token tile 1
# (K 0..5): two steps; column 2: tiles 22..31, token tile 1 from K 6, one row valid: x BD at (32 x 4096 + 6 x
# 256) x 4 = 530432 bytes, [10, 1, 1, 256] / [256, 0, 4096, 1], repeat 9, chained to 31 x 256 = 7936 zero
# words. x read 33 x 4096 x 4 = 540672 B, zeros 31 x 256 x 4 x 16 = 507904 B, tiles 32 x 10240 = 327680 B.
verify(REAL, "a8_b32_n32", 33, 4096, 3,
       expect={"blocks": [(0, 11), (11, 11), (22, 10)], "rtp": [11, 11, 10],
               "segments": [[(0, 0, 0, 11)], [(11, 0, 11, 5), (16, 1, 0, 6)], [(22, 1, 6, 10)]],
               "traffic": {"x read (bytes)": 540672, "zeros read (bytes)": 507904, "tiles written (bytes)": 327680,
                           "read (bytes)": 1048576, "written (bytes)": 327680},
               "stream0": [["push", "x", 0, 0, 10], ["push", "tiles", 2, 0, 0], ["sync", 0]]})
verify(REAL, "a8_b32_n32", 33, 4096, 3, expect={"core": 2 * 4096 + 2 * 10240 + 12 + 1024})
# f32_n4, 1 row x 64 values on 8 columns: one tile, one column; x [1, 1, 1, 64] at 0 (one K tile, one row:
# no strides), chained to BD 1: 3 x 64 = 192 zero words; the tile 1024 B = 256 words at 0 with the token.
verify(REAL, "f32_n4", 1, 64, 8,
       expect={"blocks": [(0, 1)], "bds0": [("x", 0, 1, 0, [1, 1, 1, 64], [0, 0, 0, 1], 0),
                                            ("zeros", 1, None, 0, [1, 1, 1, 192], [0, 0, 0, 1], None),
                                            ("tiles", 2, None, 0, [1, 1, 1, 256], [0, 0, 0, 1], 0)]})
# f32_n32, 32 rows x 130 K tiles of 64 on one column: one token tile, 130 = 64 + 64 + 2: three steps on slots
# 0, 1, 0; repeats 63, 63, 1; the third step's BDs reused after the sync on step 0.
verify(REAL, "f32_n32", 32, 130 * 64, 1,
       expect={"segments": [[(0, 0, 0, 64), (64, 0, 64, 64), (128, 0, 128, 2)]], "steps": [3],
               "stream0": [["push", "x", 0, 0, 63], ["push", "tiles", 2, 0, 0], ["push", "x", 8, 1, 63],
                           ["push", "tiles", 10, 1, 0], ["sync", 0], ["push", "x", 0, 2, 1], ["push", "tiles", 2, 2, 0],
                           ["sync", 1], ["sync", 2]]})
# bfp16_k128_n64, 65 rows x 256 on 8 columns: 2 token tiles x 2 K tiles = 4 tiles on 4 columns; column 3's tile
# 3 (token tile 1, K tile 1): x at (64 x 256 + 128) x 4 = 66048 bytes, 1 row, then 63 x 128 = 8064 zero words.
p = verify(REAL, "bfp16_k128_n64", 65, 256, 8, expect={"blocks": [(0, 1), (1, 1), (2, 1), (3, 1)]})
if p and [(b["offset (bytes)"], b["sizes"]) for b in p["per_column"][3]["bds"][:2]] != [(66048, [1, 1, 1, 128]), (0, [1, 1, 1, 8064])]:
    errors.append(f"bfp16_k128_n64 65 x 256: column 3's BDs {p['per_column'][3]['bds'][:2]}")
# Strided: bfp16_n32, 40 rows x 512 at a row stride of 1000: token tile 1 has 8 valid rows, its x BD at
# (32 x 1000 + 0) x 4 = 128000 bytes with d1 stride 1000.
p = verify(REAL, "bfp16_n32", 40, 512, 1, rs=1000,
           expect={"segments": [[(0, 0, 0, 2), (2, 1, 0, 2)]], "failed": []})
if p and p["per_column"][0]["bds"][2]["offset (bytes)"] != 128000:
    errors.append(f"bfp16_n32 40 x 512 stride 1000: step 1's x BD at {p['per_column'][0]['bds'][2]['offset (bytes)']}")

# 3. Variants of the description (written by check_design_act_quant.sh): what each must fail, recomputed.
before = counts["plans"]
for name in sorted(os.listdir(vdir)):
    path = os.path.join(vdir, name)
    if os.path.isdir(path) and os.path.isfile(os.path.join(path, "dataflow.json")):
        path = os.path.join(path, "dataflow.json")
    elif not name.endswith(".json") or name.startswith("refused-"):
        continue
    vd = json.load(open(path))
    # Every fifth family, and those the variants edit (f32_n4, f16_n4, a8_b32_n4) or of the largest objects.
    fams = [f for f in vd["families"] if f != "about"][::5]
    for fam in fams + [f for f in ("f32_n4", "f16_n4", "f32_n32", "bfp16_k128_n64") if f not in fams]:
        ob = vd["objects"][fam]
        for n, kt, columns in ((1, 3, 8), (ob["tokens"] + 1, 70, 1), (3 * ob["tokens"] - 5, 20, 3)):
            verify(path, fam, n, kt * ob["tile_k"], columns)
counts["variant plans"] = counts["plans"] - before

if set(FAMILIES) - seen["families"] or set(range(1, 61)) - seen["k tiles"] or {1, 3, 8} - seen["columns"]:
    errors.append(f"coverage: families {sorted(set(FAMILIES) - seen['families'])}, K tile counts "
                  f"{sorted(set(range(1, 61)) - seen['k tiles'])}, columns {sorted({1, 3, 8} - seen['columns'])} never planned")
if seen["most tiles in a column"] <= 64:
    errors.append("coverage: no column of more than 64 tiles")
for e in errors[:40]:
    print(f"  {e}")
if len(errors) > 40:
    print(f"  ... and {len(errors) - 40} more")
print(f"plans: {counts['plans']} recomputed ({counts['variant plans']} of variant descriptions, {counts['anchors']} held to "
      f"numbers by hand; {len(seen['families'])} families, K tiles {min(seen['k tiles'])}..{max(seen['k tiles'])}, up to "
      f"{seen['most tiles in a column']} tiles in a column); {counts['steps']} steps ({counts['padded steps']} with zeros, "
      f"{counts['capped segments']} cut by the iteration cap); replayed {counts['stream events']} stream events, "
      f"{counts['replayed tiles']} tiles, {counts['replayed rows']} rows and {counts['replayed words']} words through the "
      f"BDs; {len(errors)} disagreement(s); e.g.")
for line in lines[:2] + [l for l in lines if not l.startswith("dataflow.json")][::9][:4]:
    print(f"  {line}")
sys.exit(1 if errors else 0)
