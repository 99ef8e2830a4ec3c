#!/usr/bin/env python3
"""The attention design's plans (aie/flash_attn/design.py make_plan, from aie/flash_attn/dataflow.json)
against a recomputation written here, apart from design.py's planning code, and its core program replayed
against the simulator's engine:

  - the split (src/ops/flash_attn/sim/sim-flash-attn.cpp flash_attn_split, restated here from its text),
    the placement (a column takes 4 // parts tasks per round, core row slot x parts + part), the rounds, the
    steps, every core's RTP words, the objects (from flash_attn_tiles.h's constants, read here), the core and
    memory-tile memory and the DMA channels, over a few hundred shapes (decode and prefill, GQA ratios 1..8,
    every head dim, n_kv from 1 to 40000, both caches, both programs, 1..8 columns);
  - design.replay_core (the same core_program IRON traces, run on a core's words) against the engine's
    calls: per core and round, the task's calls as run_part and the merge loop make them (fa_prepare_q_bfp16
    with the bfp16 programs, fa_init_f32, one block call per block of the part with its valid rows n, then on
    part 0 the parts' states merged in part order and fa_finish_f32), each with its rows, head dim, n and
    scale, and the buffers they take (the query rows, the acquired block object and its V and mask views,
    the round's output object; the states read back from the state steps' objects, in order); the kv and out
    objects acquired as the column's lockstep needs (1 + steps + state_steps and 1 or 2 per round);
  - a few plans held to numbers worked out by hand;
  - each description variant in <variants dir> (written by check_design_flash_attn.sh) fails the checks its
    name says (exit 1), or is refused (exit 2) when its name starts with "refused-".

    flash_attn_plan_verify.py <repo root> <variants dir>
"""

import importlib.util
import math
import os
import random
import re
import sys

root, variants = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("xdna_flash_attn_design", f"{root}/aie/flash_attn/design.py")
design = importlib.util.module_from_spec(spec)
spec.loader.exec_module(design)
errors = []
header_text = open(f"{root}/aie/include/xdna_aie/flash_attn_tiles.h").read()
K = {n: int(re.search(r"constexpr int " + n + r" = (\d+);", header_text).group(1))
     for n in ("kFaLanes", "kFaKvBlock", "kFaMaxRows", "kFaMaxHead")}
BLK, ROWS = K["kFaKvBlock"], K["kFaMaxRows"]
desc = design.load_description()


def engine_split(n_head, n_head_kv, tokens, n_seq, n_kv, cores):
    """flash_attn_split, as sim-flash-attn.cpp writes it."""
    cores = max(1, min(cores, 32))
    group_rows = max(1, n_head // n_head_kv * tokens)
    chunks = (group_rows + 15) // 16
    chunk_rows = (group_rows + chunks - 1) // chunks
    groups = n_seq * n_head_kv * chunks
    blocks = (n_kv + 31) // 32
    parts = max(1, min(4, cores // groups, blocks)) if groups < cores else 1
    return chunks, chunk_rows, groups, blocks, parts


def engine_parts(blocks, parts):
    """The engine's loop: part p takes blocks / parts blocks, the first blocks % parts one more."""
    out, nxt = [], 0
    for part in range(parts):
        n = blocks // parts + (1 if part < blocks % parts else 0)
        out.append((nxt, n))
        nxt += n
    return out


def sizes(family, d):
    rb = 2 * d if family == "f16" else d // 32 * 34
    state = 4 * (2 * ROWS + ROWS * d)
    kv = max(2 * BLK * rb + ROWS * BLK * 2, 4 * ROWS * d + 4 * ROWS, state)
    return rb, kv, state


def engine_calls(family, contract, d, rows, n_kv, part_list, scale):
    """The engine's kernel calls for one task: per part (run_part) prepare, init, blocks; merges; finish."""
    bfp16 = contract == 0
    prog = {("f16", True): "fa_block_f16_bfp16", ("f16", False): "fa_block_f16",
            ("q8_0", True): "fa_block_q8_0_bfp16", ("q8_0", False): "fa_block_q8_0"}[(family, bfp16)]
    per_part = []
    for b0, n in part_list:
        calls = ([("fa_prepare_q_bfp16", rows, d)] if bfp16 else []) + [("fa_init_f32", rows, d)]
        calls += [(prog, rows, d, min(32, n_kv - 32 * b), scale) for b in range(b0, b0 + n)]
        per_part.append(calls)
    merges = [("fa_merge_f32", rows, d)] * (len(part_list) - 1)
    return per_part, merges + [("fa_finish_f32", rows, d, d)]


def kernel_view(call):
    """A replayed kernel call without its buffers: name, rows, d, then n and scale where it has them."""
    name, args = call[0], call[1:]
    ints = [a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)]
    return (name,) + tuple(ints)


def check_shape(family, d, contract, n_head, n_head_kv, tokens, n_kv, n_seq=1, cols=8, mask=True, replay=True):
    scale = 1.0 / math.sqrt(d)
    shape = design.Shape(d=d, n_kv=n_kv, n_tokens=tokens, n_head=n_head, n_head_kv=n_head_kv, n_seq=n_seq,
                         n_seq_kv=1, has_mask=mask, scale=scale)
    label = f"{family} d{d} c{contract} {tokens}x{n_head}/{n_head_kv} kv{n_kv} seq{n_seq} cols{cols}"
    p = design.make_plan(desc, family, d, shape, cols, contract)
    bad = [f"{w}: {det}" for w, ok, det in p.checks if not ok]
    if bad:
        errors.append(f"{label}: checks failed: {bad}")
    chunks, chunk_rows, groups, blocks, parts = engine_split(n_head, n_head_kv, tokens, n_seq, n_kv, cols * 4)
    want_split = {"chunk_rows": chunk_rows, "chunks": chunks, "groups": groups, "blocks": blocks, "parts": parts}
    if p.split != want_split:
        errors.append(f"{label}: split {p.split}, the engine's {want_split}")
        return p
    slots = 4 // parts
    rounds = -(-groups // (cols * slots))
    rb, kv, state = sizes(family, d)
    spo = kv // state
    state_steps = 0 if parts == 1 else -(-parts // spo)
    plist = engine_parts(blocks, parts)
    if (p.slots, p.rounds, p.states_per_object) != (slots, rounds, spo) or p.objects["kv"] != kv or p.objects["state"] != state:
        errors.append(f"{label}: slots {p.slots}, rounds {p.rounds}, spo {p.states_per_object}, objects {p.objects}; "
                      f"expected {slots}, {rounds}, {spo}, kv {kv} state {state}")
    group_rows = n_head // n_head_kv * tokens
    # The core memory: the FIFO objects, the core's own buffers, words, stack.
    mem = 2 * kv + state + 4 * ROWS * d + 4 * ROWS + 4 * ROWS * BLK + (d // 8) * 2 * 3 * 72 + 4 * 17 + 2688
    if family == "q8_0":
        mem += 8 * d + (8 * 2 * BLK * (d // 32) + (d // 32) * 4 * 3 * 128 + 4 * 4 * 64)
    if sum(p.core_bytes.values()) != mem:
        errors.append(f"{label}: core memory {sum(p.core_bytes.values())}, recomputed {mem}")
    if sum(p.memtile_bytes.values()) != 2 * 4 * (kv + state):
        errors.append(f"{label}: memory tile {sum(p.memtile_bytes.values())}, recomputed {2 * 4 * (kv + state)}")
    # The DRAM traffic and the shim's chains: every kv and state object moved whole, the real bytes in them.
    def runs(row0, n):
        t0, t1 = row0 // ratio, (row0 + n - 1) // ratio
        if t0 == t1:
            return 1
        first, last = int(row0 % ratio != 0), int((row0 + n) % ratio != 0)
        return first + last + int(t1 - t0 + 1 - first - last > 0)

    ratio = n_head // n_head_kv
    task_rows = [min(chunk_rows, group_rows - (g % chunks) * chunk_rows) for g in range(groups)]
    all_rows = sum(task_rows)
    real = {"q": 4 * d * all_rows * parts, "slopes": 4 * all_rows * parts, "k": groups * n_kv * rb,
            "v": groups * n_kv * rb, "mask": 64 * blocks * all_rows if mask else 0,
            "partials read": groups * parts * state if parts > 1 else 0}
    objects_in = columns_rounds = cols * rounds * 4
    objects_in *= 1 + plist[0][1] + state_steps
    want_traffic = dict(real, **{"filler read": objects_in * kv - sum(real.values()), "out": 4 * d * all_rows,
                                 "partials written": groups * parts * state if parts > 1 else 0})
    want_traffic["discarded"] = columns_rounds * (1 if parts == 1 else 2) * state - want_traffic["out"] - \
        want_traffic["partials written"]
    got = {kk: p.traffic[kk] for kk in want_traffic}
    if got != want_traffic:
        errors.append(f"{label}: traffic {got}, recomputed {want_traffic}")
    q_chain = block_chain = 0
    for kk in range(rounds):
        for c in range(cols):
            qc = bc = 0
            for r in range(4):
                slot, part = divmod(r, parts)
                g = (kk * cols + c) * slots + slot
                if slot >= slots or g >= groups:
                    qc, bc = qc + 1, bc + 1
                    continue
                row0 = (g % chunks) * chunk_rows
                n = task_rows[g]
                pad = int(n < ROWS)
                qc += 2 * runs(row0, n) + 2 * pad + 1
                one_row = row0 // ratio == (row0 + n - 1) // ratio
                bc += 2 + (runs(row0, n) + pad if mask and not one_row else 1)
            q_chain, block_chain = max(q_chain, qc), max(block_chain, bc)
    if (p.bds["q step chain (largest)"], p.bds["block step chain (largest)"]) != (q_chain, block_chain):
        errors.append(f"{label}: shim chains q {p.bds['q step chain (largest)']}, blocks "
                      f"{p.bds['block step chain (largest)']}; recomputed {q_chain}, {block_chain}")
    for ci, core in enumerate(p.cores):
        c, r = divmod(ci, 4)
        slot, part = divmod(r, parts)
        active = slot < slots
        tasks = [g for g in ((k * cols + c) * slots + slot for k in range(rounds)) if active and g < groups]
        b0, nb = plist[part] if active else (0, 0)
        want = {"contract": contract, "rounds": rounds, "tasks": len(tasks),
                "first_chunk": (c * slots + slot) % chunks, "chunk_step": cols * slots % chunks, "chunks": chunks,
                "chunk_rows": chunk_rows, "last_rows": group_rows - (chunks - 1) * chunk_rows,
                "part": part if active else 0, "parts": parts, "block0": b0, "part_blocks": nb, "steps": plist[0][1],
                "n_kv": n_kv, "scale": scale, "state_steps": state_steps, "version": 1}
        if core["words"] != want or (core["column"], core["row"]) != (c, 2 + r):
            errors.append(f"{label}: core {ci} ({core['column']}, {core['row']}) words {core['words']}, expected {want}")
            return p
        if not replay:
            continue
        events = design.replay_core(p, ci)
        kv_acq = sum(1 for e in events if e == ("acquire", "kv"))
        out_acq = sum(1 for e in events if e == ("acquire", "out"))
        if kv_acq != rounds * (1 + plist[0][1] + state_steps) or out_acq != rounds * (1 if parts == 1 else 2):
            errors.append(f"{label}: core {ci} acquires {kv_acq} kv and {out_acq} out objects, the column's lockstep "
                          f"needs {rounds * (1 + plist[0][1] + state_steps)} and {rounds * (1 if parts == 1 else 2)}")
            return p
        calls = [kernel_view(e) for e in events if e[0].startswith("fa_")]
        want_calls = []
        for g in tasks:
            chunk = g % chunks
            rows = min(chunk_rows, group_rows - chunk * chunk_rows)
            per_part, merged = engine_calls(family, contract, d, rows, n_kv, plist, scale)
            want_calls += per_part[part] + (merged if part == 0 else [])
        if calls != want_calls:
            errors.append(f"{label}: core {ci} calls {calls[:6]}..., the engine's {want_calls[:6]}... "
                          f"({len(calls)} against {len(want_calls)})")
            return p
        # The buffers: the blocks on the object just acquired (V, mask at 32 and 64 rows), the state the round's
        # first output object; the merge on the second output object, from the state steps' objects in order.
        rw = rb // 4
        kv_seen, out_seen, states = 0, 0, []
        for e in events:
            if e == ("acquire", "kv"):
                kv_seen += 1
            elif e == ("acquire", "out"):
                out_seen += 1
            elif e[0].startswith("fa_block"):
                obj = f"kv:{kv_seen}"
                k_arg = 3 if e[0].endswith("bfp16") else 2
                if e[k_arg:k_arg + 2] != (obj, f"{obj}+{BLK * rw}") or f"{obj}+{2 * BLK * rw}" not in e \
                        or f"out:{out_seen}" not in e or e[1] != "q":
                    errors.append(f"{label}: core {ci} {e[0]} on {e[1:]} while holding {obj} and out:{out_seen}")
                    return p
            elif e[0] == "copy" and e[1].startswith("out:") and e[3].startswith("kv:"):
                states.append((e[3], e[4]))
            elif e[0] == "fa_merge_f32":
                states.append(e[2])
                if e[1] != f"out:{out_seen}":
                    errors.append(f"{label}: core {ci} merges into {e[1]}, not its output object out:{out_seen}")
                    return p
        if parts > 1 and part == 0 and tasks:
            sw = state // 4
            first = 1 + plist[0][1] + 1  # the q step, the block steps: the first state step object
            want_states = []
            for j in range(parts):
                obj = f"kv:{first + j // spo}"
                want_states.append((obj, 0) if j == 0 else (obj if j % spo == 0 else f"{obj}+{j % spo * sw}"))
            if states[:parts] != want_states:
                errors.append(f"{label}: core {ci} takes the states {states[:parts]}, in part order they are {want_states}")
    return p


def hand(label, p, got, want):
    if got != want:
        errors.append(f"by hand, {label}: {got}, expected {want}")


rng = random.Random(20261206)
count = 0
# Llama-3.1-8B decode (32/8 heads, one token, head dim 128, 4096 positions): 8 tasks of 4 rows, 128 blocks, 4
# parts of 32 blocks on a column each; part 0 merges 4 states, 2 per kv object (17408 / 8320).
p = check_shape("f16", 128, 0, 32, 8, 1, 4096)
hand("8B decode split", p, (p.split["parts"], p.split["blocks"], p.slots, p.rounds, p.steps["states"]), (4, 128, 1, 1, 2))
hand("8B decode column 3 row 4", p, (p.cores[14]["words"]["block0"], p.cores[14]["words"]["part_blocks"]), (64, 32))
hand("F16 128 core memory", p, sum(p.core_bytes.values()), 63108)
# Filler per column: the q step 4 x (17408 - 2048 - 16), 32 block steps 4 x 32 x (17408 - 16384 - 256), the
# state steps 2 x 17408 - 4 x 8320 on part 0 and 2 x 17408 on the others; 8 columns.
hand("8B decode filler read", p, p.traffic["filler read"], 8 * (4 * 15344 + 4 * 32 * 768 + 1536 + 3 * 34816))
hand("8B decode chains: q 4 x (2 + 2 + 1), blocks 4 x 3", p,
     (p.bds["q step chain (largest)"], p.bds["block step chain (largest)"]), (20, 12))
p = check_shape("q8_0", 128, 0, 32, 8, 1, 1000)
hand("Q8_0 128 core memory", p, sum(p.core_bytes.values()), 57988)
hand("1000 positions: 32 blocks of 8 per part, last block 8 rows", p, (p.split["blocks"], p.steps["blocks"]), (32, 8))
p = check_shape("f16", 64, 1, 32, 8, 1, 70)
hand("70 positions: 3 parts, one task per column, row 5 idle", p,
     (p.split["parts"], p.slots, p.cores[3]["words"]["tasks"], p.cores[0]["words"]["part_blocks"]), (3, 1, 0, 1))
hand("F16 64 core memory", p, sum(p.core_bytes.values()), 35076)
p = check_shape("f16", 128, 0, 24, 12, 1, 512)
hand("12 tasks: 2 parts, 2 tasks per column", p, (p.split["parts"], p.slots, p.rounds), (2, 2, 1))
p = check_shape("f16", 128, 0, 36, 9, 1, 512)
hand("9 tasks: 3 parts, 2 rounds, column 0's tasks 0 and 8", p,
     (p.split["parts"], p.rounds, p.cores[0]["words"]["tasks"], p.cores[4]["words"]["tasks"]), (3, 2, 2, 1))
p = check_shape("f16", 128, 0, 32, 8, 512, 512)
hand("pp512: 128 chunks of 16 rows per KV head, 1024 tasks, 32 rounds", p,
     (p.split["chunks"], p.split["groups"], p.split["parts"], p.rounds), (128, 1024, 1, 32))
count += 7
for _ in range(320):
    family = rng.choice(["f16", "q8_0"])
    d = rng.choice([32, 64, 128] if family == "f16" else [64, 128])
    ratio = rng.randint(1, 8)
    n_head_kv = rng.choice([1, 2, 4, 8])
    tokens = rng.choice([1, 1, 1, 2, 3, 4, 7, 16, 33, 100])
    n_kv = rng.choice([1, 2, 31, 32, 33, 64, 95, 100, 256, 1000, 4096, rng.randint(1, 40000)])
    cols = rng.choice([8, 8, 8, 1, 2, 4, 5])
    big = tokens * ratio * n_head_kv * ((n_kv + 31) // 32) > 40000
    check_shape(family, d, rng.randint(0, 1), ratio * n_head_kv, n_head_kv, tokens, n_kv, rng.choice([1, 1, 2]), cols,
                rng.random() < 0.8, replay=not big)
    count += 1

# Description variants: a name says which check must fail (or that it is refused).
expect = {"kv-size": "objects: the description's kv and state", "depth3": "core data memory",
          "no-slopes": "host_written", "tile256": "family f16 tiles", "no-release": "barrier: released",
          "kv-bds8": "block chain fits its BD ids", "lanes16": "attention constants",
          "kv-order": "kv object layout"}
for name in sorted(os.listdir(variants)):
    path = os.path.join(variants, name)
    stem = name[:-5]
    try:
        vd = design.load_description(path)
        vp = design.make_plan(vd, "f16", 128, design.Shape(d=128, n_kv=4096, scale=0.088))
    except design.PlanError as e:
        if not stem.startswith("refused-"):
            errors.append(f"variant {stem}: refused ({e}), expected a failing check")
        continue
    if stem.startswith("refused-"):
        errors.append(f"variant {stem}: planned, expected a refusal")
        continue
    failed = [w for w, ok, _ in vp.checks if not ok]
    if not any(expect[stem] in w for w in failed):
        errors.append(f"variant {stem}: failed {failed}, expected '{expect[stem]}'")

print(f"flash_attn plans: {count} shapes recomputed and replayed, {len(os.listdir(variants))} variants")
if errors:
    for e in errors[:20]:
        print("FAIL:", e)
    sys.exit(1)
