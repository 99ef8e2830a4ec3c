#!/usr/bin/env python3
"""The attention design's plans (aie/flash_attn/design.py make_plan, from aie/flash_attn/dataflow.json)
against a recomputation written here, apart from design.py's planning code, and its core program replayed
against the simulator's engine:

  - the split (src/ops/flash_attn/sim/sim-flash-attn.cpp flash_attn_split, restated here from its text),
    the placement (the (task, part) pairs dealt to the cores in order, a round's cores column by column), the
    task order (task g's sequence, KV head and chunk: chunk-major when the rounds are several and a round's
    tasks are a multiple of n_seq x n_head_kv, else the engine's chunk-fastest order; every task placed once;
    each core's first_chunk and chunk_step counting its tasks' chunks; the sweep taking both orders over
    several rounds, with and without a profile, over one sequence and several), the
    rounds, the step table (per round each core's own block steps: its part's blocks its task needs, and each
    column's, the most of its cores'), every core's RTP words, the objects (from flash_attn_tiles.h's
    constants, read here), the core and memory-tile memory, the columns the tasks fill, the shim's phases BD
    by BD (the q step's step words from the core's entry of the slopes operand's table, the block groups of up
    to 64 steps on the columns with steps left, each repeating its chain over its own; each kv object's BDs
    adding up to the object; each computing core handed its part's blocks in order on its own steps and only
    blocks of its part past them) and the DRAM traffic they move, the slopes operand's layout (each task's 16
    values its rows' heads', then the zero region and the step table), over a few hundred shapes (decode and
    prefill, GQA ratios 1..8, every head dim, n_kv from 1 to 40000, both caches, both programs, with and
    without a mask, the default columns or 1..8, without a profile and under a causal one over N0 earlier
    positions), each on the layout of fewest task_tokens that holds its tasks (decode: kv_decode objects of
    one mask row, a block step's tail read with its filler, a 1024-byte mask buffer per core) and one-token
    shapes again on the attention layout, forced;
  - design.replay_core (the same core_program IRON traces, run on a core's words and on the objects its
    stream hands it, the q steps' step words the plan's table's) against the engine's calls: per core and
    round, the task's calls as run_part and the merge loop make them (fa_prepare_q_bfp16 with the bfp16
    programs, fa_init_f32, one block call per block of the part the task needs, with its valid rows n for
    the block the stream hands it on that step, then on part 0 every part's state merged in part order and
    fa_finish_f32; across a task's parts, its needed blocks each called once), each with its rows, head dim, n and
    scale, and the buffers they take (the query rows, the acquired block object and its V and mask views,
    the round's output object; the states read back from the state steps' objects, in order); the q step's
    copies (the slopes from word 0, the query rows from word 16); the mask widening modelled copy by copy
    (every copy a whole mask row within the block object's mask rows, none without a mask, and at each block
    call row i holding token (row0 + i) / ratio's row; in the decode layout every copy the step's one row into
    the core's mask buffer, which the block call takes, its rows written on that step); the kv and out
    objects acquired as the column's lockstep needs (per round 1 + the column's steps + state_steps, and 1
    or 2);
  - a few plans held to numbers worked out by hand (among them one in chunk-major order: each core's tasks of
    rounds 0 and 1, its words, the lockstep); the layout each shape takes; the decode layout forced on
    a task of 2 tokens refused; a mask per head refused;
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
# (task order, several rounds, a causal profile, several sequences) of every shape recomputed: the sweep must
# take both orders over several rounds, with and without a profile, over one sequence and several.
orders_seen = set()
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
    root = 0
    while (root + 1) ** 2 <= 2 * blocks:
        root += 1
    parts = max(1, min(cores // groups, blocks, max(4, root))) if groups < cores else 1
    return chunks, chunk_rows, groups, blocks, parts


def deal(groups, parts, columns, rounds):
    """The pairs (task, part), task-major, dealt to the cores: each round whole tasks, as many as its
    columns x 4 cores hold, to cores 0, 1, ... (core = column x 4 + row). {(round, core): (task, part)}."""
    pairs = [(g, q) for g in range(groups) for q in range(parts)]
    per = (columns * 4 // parts) * parts
    table = {}
    for k in range(rounds):
        for i, pair in enumerate(pairs[k * per:(k + 1) * per]):
            table[(k, i)] = pair
    return table


def placed_tasks(n_seq, n_head_kv, chunks, tasks_round, rounds):
    """Which task (sequence, KV head, chunk) the placement's task g is, for g = 0 .. groups - 1, and the order's
    name. Placement v2: chunk-major (the chunk index slowest, then the KV head, then the sequence) when there
    are several rounds and a round's tasks_round tasks are whole chunk indices (a multiple of the
    n_seq x n_head_kv tasks sharing one); otherwise the engine's job order, the chunk fastest."""
    shared = n_seq * n_head_kv
    if rounds > 1 and tasks_round % shared == 0:
        return "chunk-major", [(s, h, c) for c in range(chunks) for s in range(n_seq) for h in range(n_head_kv)]
    return "chunk-fastest", [(s, h, c) for s in range(n_seq) for h in range(n_head_kv) for c in range(chunks)]


def chunk_counting(first, step, chunks, rounds):
    """The chunks a core's program walks through: first, then step added a round, modulo chunks."""
    return [(first + k * step) % chunks for k in range(rounds)]


def engine_parts(blocks, parts):
    """The engine's loop: part p takes blocks / parts blocks, the first blocks % parts one more."""
    out, nxt = [], 0
    for part in range(parts):
        n = blocks // parts + (1 if part < blocks % parts else 0)
        out.append((nxt, n))
        nxt += n
    return out


def sizes(family, d, layout="attention"):
    """Row bytes, the layout's kv object, the state, the layout's mask rows per block step: the attention
    layout's object holds a block step of 16 mask rows; the decode layout's (kv_decode) one of a single mask
    row, and as many states as the attention layout's (so as many state steps)."""
    rb = 2 * d if family == "f16" else d // 32 * 34
    state = 4 * (2 * ROWS + ROWS * d)
    kv = max(2 * BLK * rb + ROWS * BLK * 2, 4 * ROWS * d + 4 * ROWS, state)
    if layout == "attention":
        return rb, kv, state, ROWS
    return rb, max(2 * BLK * rb + BLK * 2, 4 * ROWS * d + 4 * ROWS, kv // state * state), state, 1


def expected_layout(n_head, n_head_kv, tokens, n_seq):
    """The layout of fewest task_tokens (decode 1, attention 16) that holds the largest task's tokens."""
    ratio = n_head // n_head_kv
    chunks, chunk_rows = engine_split(n_head, n_head_kv, tokens, n_seq, 1, 32)[:2]
    gr = ratio * tokens
    most = max((c * chunk_rows + min(chunk_rows, gr - c * chunk_rows) - 1) // ratio - c * chunk_rows // ratio + 1
               for c in range(chunks))
    return "decode" if most <= 1 else "attention"


def need_of(row0, n, ratio, blocks, causal):
    """The blocks, from block 0, a task computes: without a profile every one; with a causal mask over N0
    earlier positions, up to the block holding its last token's last visible position (N0 + that token)."""
    if causal is None:
        return blocks
    return min(blocks, (causal + (row0 + n - 1) // ratio) // BLK + 1)


def engine_calls(family, contract, d, rows, n_kv, part_list, scale, need):
    """The engine's kernel calls for one task: per part (run_part) prepare, init, its blocks the task needs
    (none past `need`: wholly masked); the merges of every part's state, in part order; finish."""
    bfp16 = contract == 0
    prog = {("f16", True): "fa_block_f16_bfp16", ("f16", False): "fa_block_f16",
            ("q8_0", True): "fa_block_q8_0_bfp16", ("q8_0", False): "fa_block_q8_0"}[(family, bfp16)]
    per_part = []
    for b0, n in part_list:
        calls = ([("fa_prepare_q_bfp16", rows, d)] if bfp16 else []) + [("fa_init_f32", rows, d)]
        calls += [(prog, rows, d, min(32, n_kv - 32 * b), scale) for b in range(b0, min(b0 + n, need))]
        per_part.append(calls)
    merges = [("fa_merge_f32", rows, d)] * (len(part_list) - 1)
    return per_part, merges + [("fa_finish_f32", rows, d, d)]


def kernel_view(call):
    """A replayed kernel call without its buffers: name, rows, d, then n and scale where it has them."""
    name, args = call[0], call[1:]
    ints = [a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)]
    return (name,) + tuple(ints)


def run_rows(row0, n, ratio):
    """The rows of each BD run of a task's query rows: a token cut by the chunk's start or end is a run of its
    own, the whole tokens between them one run (heads x tokens)."""
    if row0 // ratio == (row0 + n - 1) // ratio:
        return [n]
    first = ratio - row0 % ratio if row0 % ratio else 0
    last = (row0 + n) % ratio
    return [x for x in (first, n - first - last, last) if x > 0]


def bd(use, nbytes, at=None, first=None, iterations=None):
    """A shim BD as design.Bd's fields: use, bytes per step, a step-words BD's offset, a block BD's first
    block and iteration."""
    return (use, nbytes, at, first, iterations)


class Stream:
    """One shape's objects and rules, for the chains of its cores: kv, state, the row bytes, the mask rows a
    block step carries."""

    def __init__(self, family, d, mask, ratio, parts, state_steps, layout):
        self.d, self.mask, self.ratio, self.parts, self.state_steps = d, mask, ratio, parts, state_steps
        self.rb, self.kv, self.state, self.tt = sizes(family, d, layout)
        self.spo = self.kv // self.state

    def q(self, task, at):
        """A q step: slopes, the query rows by runs, filler for the rows past the task's, the step words (8
        bytes at `at` of the slopes operand), filler to the object's end; an idle core filler around its step
        words."""
        room = 4 * ROWS + 4 * ROWS * self.d
        rest = [bd("filler", self.kv - room - 8)] if self.kv > room + 8 else []
        if task is None:
            return [bd("filler", room), bd("steps", 8, at)] + rest
        row0, n, _ = task
        out = [bd("slopes", 4 * ROWS)] + [bd("q", 4 * self.d * r) for r in run_rows(row0, n, self.ratio)]
        if n < ROWS:
            out.append(bd("filler", 4 * self.d * (ROWS - n)))
        return out + [bd("steps", 8, at)] + rest

    def block(self, task, b0, own, s0, n):
        """A core's chain in the block group from step s0 (n steps): K, V and mask rows from its part's block
        b0 + s0 over what is left of its own (past them its part's first block again, one block per
        iteration), or filler on a core that computes nothing."""
        if task is None or own == 0:
            return [bd("filler", self.kv)]
        first, its = (b0 + s0, min(n, own - s0)) if s0 < own else (b0, 1)
        out = [bd("k", BLK * self.rb, None, first, its), bd("v", BLK * self.rb, None, first, its)]
        # Past K, V and the layout's mask rows: the decode object's tail, read with the mask rows' filler.
        tail = self.kv - 2 * BLK * self.rb - self.tt * 2 * BLK
        if not self.mask:
            return out + [bd("filler", self.tt * 2 * BLK + tail)]
        row0, rows, _ = task
        tokens = (row0 + rows - 1) // self.ratio - row0 // self.ratio + 1
        out.append(bd("mask", tokens * 2 * BLK, None, first, its))
        if (self.tt - tokens) * 2 * BLK + tail > 0:
            out.append(bd("filler", (self.tt - tokens) * 2 * BLK + tail))
        return out

    def states(self, task, j):
        if task is None or task[2] != 0:
            return [bd("filler", self.kv)]
        n_j = min(self.spo, self.parts - j * self.spo)
        return [bd("partials_read", n_j * self.state)] + \
            ([bd("filler", self.kv - n_j * self.state)] if self.kv > n_j * self.state else [])

    def drain(self, task):
        if task is None or task[2] != 0:
            return [bd("discarded", self.state)]
        row0, n, _ = task
        return [bd("out", 4 * self.d * r) for r in run_rows(row0, n, self.ratio)] + \
            [bd("discarded", self.state - 4 * self.d * n)]


def phases_of(st, core_tasks, own, col, plist, steps_at):
    """The stream's phases, in issue order: per round the q step, the block groups of up to 64 steps (each
    taking the columns with steps left, each repeating its chain over its own steps of the group), on a split
    round the partial states' drain and the state steps, the drain. core_tasks[k][i]: core i's (row0, rows,
    part) in round k or None; own, col: the step table; steps_at(k, i): a core's step words' offset."""
    out = []
    columns = len(col[0])
    for k, tasks in enumerate(core_tasks):
        per_col = lambda c: tasks[4 * c:4 * c + 4]
        out.append(("q", k, 0, [(c, 1, [st.q(t, steps_at(k, 4 * c + r)) for r, t in enumerate(per_col(c))])
                                for c in range(columns)]))
        for s0 in range(0, max(col[k]), 64):
            group = []
            for c in range(columns):
                n = min(64, col[k][c] - s0)
                if n > 0:
                    group.append((c, n, [st.block(t, plist[t[2]][0] if t else 0, own[k][4 * c + r], s0, n)
                                         for r, t in enumerate(per_col(c))]))
            out.append(("block", k, s0, group))
        if st.parts > 1:
            out.append(("partials drain", k, 0, [(c, 1, [[bd("partials_written", 4 * st.state)]])
                                                 for c in range(columns)]))
        for j in range(st.state_steps):
            out.append(("state", k, j, [(c, 1, [st.states(t, j) for t in per_col(c)]) for c in range(columns)]))
        out.append(("drain", k, 0, [(c, 1, [st.drain(t) for t in per_col(c)]) for c in range(columns)]))
    return out


def delivered_blocks(phases, k, core, col_steps):
    """The block the stream's K BD hands core `core` at each of round k's block steps (None: filler), with
    its V and mask BDs on the same block."""
    c, r = divmod(core, 4)
    out = []
    for s in range(col_steps):
        s0 = s - s % 64
        chain = next(cores[r] for kind, rnd, step, cols in phases if (kind, rnd, step) == ("block", k, s0)
                     for cc, _, cores in cols if cc == c)
        rows = [x for x in chain if x[0] in ("k", "v", "mask")]
        if not rows:
            out.append(None)
            continue
        if len({(x[3], x[4]) for x in rows}) != 1:
            return f"its K, V and mask BDs step differently: {rows}"
        out.append(rows[0][3] + (s - s0) % rows[0][4])
    return out


TRAFFIC_KEYS = {"q", "slopes", "steps", "k", "v", "mask", "filler", "partials_read", "out", "partials_written",
                "discarded", "read", "written"}
READ_KEYS = ("q", "slopes", "steps", "k", "v", "mask", "filler", "partials_read")


def check_shape(family, d, contract, n_head, n_head_kv, tokens, n_kv, n_seq=1, cols=None, mask=True, replay=True,
                layout=None, causal=None):
    scale = 1.0 / math.sqrt(d)
    shape = design.Shape(d=d, n_kv=n_kv, n_tokens=tokens, n_head=n_head, n_head_kv=n_head_kv, n_seq=n_seq,
                         n_seq_kv=1, has_mask=mask, scale=scale, causal=causal)
    label = (f"{family} d{d} c{contract} {tokens}x{n_head}/{n_head_kv} kv{n_kv} seq{n_seq} cols{cols} mask{int(mask)} "
             f"layout {layout or 'default'} causal {causal}")
    p = design.make_plan(desc, family, d, shape, cols, contract, layout)
    lay = layout or expected_layout(n_head, n_head_kv, tokens, n_seq)
    if p.layout != lay:
        errors.append(f"{label}: layout {p.layout}, the fewest task_tokens holding its tasks give {lay}")
        return p
    bad = [f"{w}: {det}" for w, ok, det in p.checks if not ok]
    if bad:
        errors.append(f"{label}: checks failed: {bad}")
    # Without --cols the engine's split over all 32 cores, and the columns its tasks fill.
    chunks, chunk_rows, groups, blocks, parts = engine_split(n_head, n_head_kv, tokens, n_seq, n_kv,
                                                             32 if cols is None else cols * 4)
    want_split = {"chunk_rows": chunk_rows, "chunks": chunks, "groups": groups, "blocks": blocks, "parts": parts}
    if p.split != want_split:
        errors.append(f"{label}: split {p.split}, the engine's {want_split}")
        return p
    columns = cols if cols is not None else min(8, -(-groups * parts // 4))
    if p.columns != columns:
        errors.append(f"{label}: {p.columns} columns, the pairs fill {columns}")
        return p
    tasks_round = columns * 4 // parts
    rounds = -(-groups // tasks_round)
    dealt = deal(groups, parts, columns, rounds)
    rb, kv, state, tt = sizes(family, d, lay)
    spo = kv // state
    state_steps = 0 if parts == 1 else -(-parts // spo)
    plist = engine_parts(blocks, parts)
    if (p.tasks_per_round, p.rounds, p.states_per_object) != (tasks_round, rounds, spo) or p.objects["kv"] != kv or \
            p.objects["state"] != state:
        errors.append(f"{label}: tasks per round {p.tasks_per_round}, rounds {p.rounds}, spo {p.states_per_object}, "
                      f"objects {p.objects}; expected {tasks_round}, {rounds}, {spo}, kv {kv} state {state}")
    ratio = n_head // n_head_kv
    group_rows = ratio * tokens
    order, placed = placed_tasks(n_seq, n_head_kv, chunks, tasks_round, rounds)
    row0_of = [c * chunk_rows for _, _, c in placed]
    task_rows = [min(chunk_rows, group_rows - row0_of[g]) for g in range(groups)]
    if p.task_order != order or \
            [design.task_of(shape, p.split, g, p.task_order) for g in range(groups)] != \
            [placed[g] + (row0_of[g], task_rows[g]) for g in range(groups)]:
        errors.append(f"{label}: task order {p.task_order}, recomputed {order}; its tasks "
                      f"{[design.task_of(shape, p.split, g, p.task_order)[:3] for g in range(min(groups, 6))]}, "
                      f"recomputed {placed[:6]}")
        return p
    orders_seen.add((order, rounds > 1, causal is not None, n_seq > 1))
    need = [need_of(row0_of[g], task_rows[g], ratio, blocks, causal) for g in range(groups)]
    # The step table: per round each core's own steps (its part's blocks its task needs), each column's the
    # most of its 4 cores'.
    own = [[0] * (4 * columns) for _ in range(rounds)]
    for (k, i), (g, q) in dealt.items():
        own[k][i] = max(0, min(need[g] - plist[q][0], plist[q][1]))
    col = [[max(own[k][4 * c:4 * c + 4]) for c in range(columns)] for k in range(rounds)]
    table = [w for k in range(rounds) for i in range(4 * columns) for w in (col[k][i // 4], own[k][i])]
    if (p.own, p.col_steps, design.step_words(p)) != (own, col, table):
        errors.append(f"{label}: step table own {p.own[:2]}, columns {p.col_steps[:2]}; recomputed {own[:2]}, "
                      f"{col[:2]}")
        return p
    lockstep = sum(max(x) for x in col)
    busiest = max(sum(own[k][i] for k in range(rounds)) for i in range(4 * columns))
    if (p.steps["lockstep block steps"], p.steps["block calls (busiest core)"], p.steps["states"]) != \
            (lockstep, busiest, state_steps):
        errors.append(f"{label}: steps {p.steps}; recomputed lockstep {lockstep}, busiest core {busiest}, "
                      f"{state_steps} state steps")
    # The core memory: the FIFO objects, the core's own buffers, 16 words, stack.
    mem = 2 * kv + state + 4 * ROWS * d + 4 * ROWS + 4 * ROWS * BLK + (d // 8) * 2 * 3 * 72 + 4 * 16 + 2688
    if tt < ROWS:
        mem += ROWS * BLK * 2  # the decode layout's mask buffer: 16 rows of 32 halves
    if family == "q8_0":
        mem += 8 * d + (8 * 2 * BLK * (d // 32) + (d // 32) * 4 * 3 * 128 + 4 * 4 * 64)
    if sum(p.core_bytes.values()) != mem:
        errors.append(f"{label}: core memory {sum(p.core_bytes.values())}, recomputed {mem}")
    if sum(p.memtile_bytes.values()) != 2 * 4 * (kv + state):
        errors.append(f"{label}: memory tile {sum(p.memtile_bytes.values())}, recomputed {2 * 4 * (kv + state)}")
    # The slopes operand: the slopes, the zero region (the largest kv object of either layout, one operand for
    # both), then 2 step words per round and core of the stream.
    per = 16 + ratio
    zero_at = -(-4 * n_head_kv * per // 64) * 64
    zeros = max(sizes(family, d, "attention")[1], sizes(family, d, "decode")[1])
    want_slopes = {"per KV head": per, "zero region at": zero_at, "zero region bytes": zeros,
                   "steps_offset": zero_at + zeros, "step words": 2 * rounds * 4 * columns,
                   "bytes": zero_at + zeros + 8 * rounds * 4 * columns}
    if p.slopes != want_slopes:
        errors.append(f"{label}: slopes operand {p.slopes}, recomputed {want_slopes}")
    # The shim's phases, BD by BD: the traffic is their bytes (a block group's chain repeated over its steps),
    # the chains their BD counts per column.
    st = Stream(family, d, mask, ratio, parts, state_steps, lay)
    core_tasks = [[(row0_of[dealt[(k, i)][0]], task_rows[dealt[(k, i)][0]], dealt[(k, i)][1])
                   if (k, i) in dealt else None for i in range(4 * columns)] for k in range(rounds)]
    phases = phases_of(st, core_tasks, own, col, plist, lambda k, i: zero_at + zeros + 8 * (k * 4 * columns + i))
    got = [(ph.kind, ph.round, ph.step, [(c, n, [[(x.use, x.bytes, x.at, x.first, x.iterations) for x in bds]
                                                 for bds in cores]) for c, n, cores in ph.columns])
           for ph in design.shim_phases(p, shape, 64)]
    if got != phases:
        diff = next((i for i, (a, b) in enumerate(zip(got, phases)) if a != b), min(len(got), len(phases)))
        errors.append(f"{label}: shim phase {diff} is {got[diff] if diff < len(got) else None}, recomputed "
                      f"{phases[diff] if diff < len(phases) else None}")
        return p
    want_traffic = dict.fromkeys(TRAFFIC_KEYS - {"read", "written"}, 0)
    chains = {"q": 0, "block": 0, "state": 0, "drain": 0}
    for kind, _, _, group in phases:
        whole = state if kind == "drain" else kv
        for _, n, cores in group:
            for core in cores:
                for x in core:
                    want_traffic[x[0]] += n * x[1]
                if kind != "partials drain" and sum(x[1] for x in core) != whole:
                    errors.append(f"{label}: a {kind} object's BDs {core} move {sum(x[1] for x in core)} bytes, not "
                                  f"{whole}")
                    return p
            if kind in chains:
                chains[kind] = max(chains[kind], sum(len(core) for core in cores))
    want_traffic["read"] = sum(want_traffic[x] for x in READ_KEYS)
    want_traffic["written"] = want_traffic["out"] + want_traffic["partials_written"] + want_traffic["discarded"]
    if set(p.traffic) != TRAFFIC_KEYS or p.traffic != want_traffic:
        errors.append(f"{label}: traffic {p.traffic}, recomputed {want_traffic}")
    # What the data must come to: each query row once per part, each output row once, each core's step words
    # once a round, 32 K and V rows per column step of every core computing, every task's needed blocks
    # computed once between its parts.
    all_rows = n_seq * n_head * tokens
    computing = sum(col[k][c] * sum(1 for x in own[k][4 * c:4 * c + 4] if x) for k in range(rounds)
                    for c in range(columns))
    computed = [0] * groups
    for (k, i), (g, _) in dealt.items():
        computed[g] += own[k][i]
    if (want_traffic["q"], want_traffic["out"]) != (4 * d * all_rows * parts, 4 * d * all_rows) or \
            want_traffic["k"] != computing * BLK * rb or want_traffic["steps"] != 8 * rounds * 4 * columns or \
            computed != need:
        errors.append(f"{label}: recomputed traffic {want_traffic} does not move each row as it must")
    block_phases = [sum(1 for ph in phases if ph[:2] == ("block", k)) for k in range(rounds)]
    got_chains = {"q": p.bds["q step chain (largest)"], "block": p.bds["block step chain (largest)"],
                  "state": p.bds["state step chain (largest)"], "drain": p.bds["drain chain (largest)"]}
    if got_chains != chains or (p.bds["block phases"], p.bds["block phases in a round (most)"]) != \
            (sum(block_phases), max(block_phases)) or \
            any(n != -(-max(col[k]) // 64) for k, n in enumerate(block_phases)):
        errors.append(f"{label}: shim chains {p.bds}; recomputed {chains}, block phases per round {block_phases}")
    # Each computing core's K, V and mask BDs hand it its part's blocks in order for its own steps, and past
    # them only blocks of its part it has already had (a reread, never a neighbour's block).
    delivered = {}
    for (k, i), (g, q) in dealt.items():
        blocks_k = delivered_blocks(phases, k, i, col[k][i // 4])
        b0 = plist[q][0]
        if isinstance(blocks_k, str) or blocks_k[:own[k][i]] != list(range(b0, b0 + own[k][i])) or \
                any(b is not None and not b0 <= b < b0 + max(own[k][i], 1) for b in blocks_k[own[k][i]:]) or \
                (own[k][i] == 0 and any(b is not None for b in blocks_k)):
            errors.append(f"{label}: round {k} core {i} (part {q}, own {own[k][i]}) is handed blocks {blocks_k}")
            return p
        delivered[(k, i)] = blocks_k
    # The slopes operand: a task's 16 values from slope_index are its rows' heads' slopes.
    values = [h * ratio + i % ratio for h in range(n_head_kv) for i in range(per)]  # each value's query head
    for g in range(groups):
        kv_head, row0 = placed[g][1], row0_of[g]
        at = design.slope_index(shape, kv_head, row0)
        got_slopes = values[at:at + ROWS]
        if len(got_slopes) != ROWS or at + ROWS > (kv_head + 1) * per or \
                any(got_slopes[i] != kv_head * ratio + (row0 + i) % ratio for i in range(task_rows[g])):
            errors.append(f"{label}: task {g} reads slopes of heads {got_slopes} from {at}")
            break
    mask_w = 2 * BLK * rb // 4  # the mask rows, in words, of a block step
    called = [[] for _ in range(groups)]  # per task, the blocks its cores' block calls took
    for ci, core in enumerate(p.cores):
        c, r = divmod(ci, 4)
        mine = [dealt[(k, ci)] for k in range(rounds) if (k, ci) in dealt]
        tasks = [g for g, _ in mine]
        active = bool(mine)
        part = mine[0][1] if active else 0
        if len({q for _, q in mine}) > 1:
            errors.append(f"{label}: core {ci} takes parts {mine}: one part a core, every round")
        b0 = plist[part][0] if active else 0
        # A core's first chunk is its round-0 slot's task's (slot ci // parts, counting the idle cores' too); a
        # round moves every core on by the tasks a round holds: chunk-major the chunk indices they span (a
        # round holds tasks_round / (n_seq n_head_kv) whole ones), chunk fastest tasks_round chunks.
        slot, shared = ci // parts, n_seq * n_head_kv
        first_chunk, chunk_step = (slot // shared, tasks_round // shared) if order == "chunk-major" else \
            (slot % chunks, tasks_round % chunks)
        counted = chunk_counting(first_chunk, chunk_step, chunks, rounds)
        if any(counted[k] != placed[g][2] for k, g in enumerate(tasks)):
            errors.append(f"{label}: core {ci} counts chunks {counted}, its tasks' are "
                          f"{[placed[g][2] for g in tasks]}")
            return p
        want = {"contract": contract, "rounds": rounds, "tasks": len(tasks),
                "first_chunk": first_chunk, "chunk_step": chunk_step, "chunks": chunks,
                "chunk_rows": chunk_rows, "last_rows": group_rows - (chunks - 1) * chunk_rows,
                "part": part if active else 0, "parts": parts, "block0": b0, "n_kv": n_kv, "scale": scale,
                "state_steps": state_steps, "mask_ratio": ratio if mask else 0, "version": 3}
        if core["words"] != want or (core["column"], core["row"]) != (c, 2 + r):
            errors.append(f"{label}: core {ci} ({core['column']}, {core['row']}) words {core['words']}, expected {want}")
            return p
        if not replay:
            continue
        problem = check_replay(label, p, ci, tasks, part, own, col, state_steps, plist, need, row0_of, task_rows,
                               ratio, mask, rb, kv, state, tt, mask_w, family, contract, d, n_kv, scale, delivered,
                               called)
        if problem:
            errors.append(f"{label}: core {ci} {problem}")
            return p
    if replay and any(sorted(called[g]) != list(range(need[g])) for g in range(groups)):
        g = next(g for g in range(groups) if sorted(called[g]) != list(range(need[g])))
        errors.append(f"{label}: task {g}'s block calls took blocks {sorted(called[g])}, it needs 0..{need[g] - 1}")
    return p


def check_replay(label, p, ci, tasks, part, own, col, state_steps, plist, need, row0_of, task_rows, ratio, mask,
                 rb, kv, state, tt, mask_w, family, contract, d, n_kv, scale, delivered, called):
    """design.replay_core's core `ci` on the objects the stream hands it against the engine: what is wrong, or
    None. Adds the blocks its calls take to called[task]."""
    c = ci // 4
    rounds = len(own)
    try:
        events = design.replay_core(p, ci)
    except design.PlanError as e:
        return f"cannot run on the objects its stream hands it: {e}"
    # The objects the core takes, per round: the q step, its column's block steps, the state steps.
    sched = []
    for k in range(rounds):
        sched += [("q", k, 0)] + [("block", k, s) for s in range(col[k][c])] + \
            [("state", k, j) for j in range(state_steps)]
    kv_acq = sum(1 for e in events if e == ("acquire", "kv"))
    out_acq = sum(1 for e in events if e == ("acquire", "out"))
    parts = len(plist)
    if kv_acq != len(sched) or out_acq != rounds * (1 if parts == 1 else 2):
        return (f"acquires {kv_acq} kv and {out_acq} out objects, the column's lockstep needs {len(sched)} and "
                f"{rounds * (1 if parts == 1 else 2)}")
    calls = [kernel_view(e) for e in events if e[0].startswith("fa_")]
    want_calls = []
    for g in tasks:
        per_part, merged = engine_calls(family, contract, d, task_rows[g], n_kv, plist, scale, need[g])
        want_calls += per_part[part] + (merged if part == 0 else [])
    if calls != want_calls:
        return f"calls {calls[:6]}..., the engine's {want_calls[:6]}... ({len(calls)} against {len(want_calls)})"
    # The buffers: the slopes from word 0 and the query rows from word 16 of the q step; the blocks on the
    # object just acquired (V, mask at 32 and 64 rows), its mask rows widened before the call (in place, or
    # in the decode layout copied into the core's mask buffer: every row of the task the step's one row,
    # the filler's zeros without a mask), the state the round's first output object; the merge on the
    # second output object, from the state steps' objects in order.
    rw = rb // 4
    apart = tt < ROWS
    mask_buf = [None] * ROWS  # the decode layout's buffer: per row (the step that wrote it, its token)
    kv_seen, out_seen, states = 0, 0, []
    mask_rows = None  # the current block step's mask rows: the token each holds, None for filler
    for e in events:
        if e == ("acquire", "kv"):
            kv_seen += 1
            kind, rnd, s = sched[kv_seen - 1]
            mask_rows = None
            # A core computes a block step's rows only on its own steps: the task's mask rows are its to widen.
            if kind == "block" and rnd < len(tasks) and s < own[rnd][ci]:
                row0 = row0_of[tasks[rnd]]
                t0, nt = row0 // ratio, (row0 + task_rows[tasks[rnd]] - 1) // ratio - row0 // ratio + 1
                mask_rows = [t0 + j if mask and j < nt else None for j in range(ROWS)]
        elif e == ("acquire", "out"):
            out_seen += 1
        elif e[0] == "copy" and e[1] in ("slopes", "q"):
            want_copy = ("slopes", 0, f"kv:{kv_seen}", 0, ROWS) if e[1] == "slopes" else \
                ("q", 0, f"kv:{kv_seen}", ROWS, ROWS * d)
            if e[1:] != want_copy or sched[kv_seen - 1][0] != "q":
                return f"copies {e[1:]}, the q step's layout gives {want_copy}"
        elif e[0] == "copy" and e[1] == "mask":
            _, dst, at, src, src_at, n = e
            if not apart or mask_rows is None or src != f"kv:{kv_seen}" or src_at != mask_w or n != BLK // 2 or \
                    at % (BLK // 2) or not 0 <= at // (BLK // 2) < ROWS:
                return (f"copies {e[1:]} (the step's one mask row is words {mask_w} to {mask_w + BLK // 2} of "
                        f"kv:{kv_seen}, the buffer {ROWS} rows of {BLK // 2} words)")
            mask_buf[at // (BLK // 2)] = (kv_seen, mask_rows[0])
        elif e[0] == "copy" and e[1].startswith("kv:"):
            _, dst, at, src, src_at, n = e
            inside = lambda w: mask_w <= w and w + BLK // 2 <= mask_w + ROWS * BLK // 2 and \
                (w - mask_w) % (BLK // 2) == 0 and w + BLK // 2 <= kv // 4
            if apart or mask_rows is None or not mask or dst != src or dst != f"kv:{kv_seen}" or n != BLK // 2 or \
                    not inside(at) or not inside(src_at):
                return (f"copies {e[1:]} (a block step's mask rows are words {mask_w} to {mask_w + ROWS * BLK // 2} "
                        f"of kv:{kv_seen}, {'a' if mask else 'no'} mask)")
            mask_rows[(at - mask_w) // (BLK // 2)] = mask_rows[(src_at - mask_w) // (BLK // 2)]
        elif e[0].startswith("fa_block"):
            obj = f"kv:{kv_seen}"
            kind, rnd, s = sched[kv_seen - 1]
            k_arg = 3 if e[0].endswith("bfp16") else 2
            mask_arg = "mask" if apart else f"{obj}+{2 * BLK * rw}"
            if kind != "block" or e[k_arg:k_arg + 2] != (obj, f"{obj}+{BLK * rw}") or mask_arg not in e \
                    or f"out:{out_seen}" not in e or e[1] != "q":
                return f"{e[0]} on {e[1:]} while holding {obj} ({kind}) and out:{out_seen}"
            row0 = row0_of[tasks[rnd]]
            want_rows = [(row0 + i) // ratio if mask else None for i in range(task_rows[tasks[rnd]])]
            seen = mask_buf[:len(want_rows)] if apart else mask_rows and mask_rows[:len(want_rows)]
            want_seen = [(kv_seen, t) for t in want_rows] if apart else want_rows
            if mask_rows is None or seen != want_seen:
                return f"calls {e[0]} on mask rows of tokens {seen}, its query rows need {want_seen}"
            # The block the stream hands it on this step, and the rows the call is told are valid there.
            block = delivered[(rnd, ci)][s]
            if block is None or kernel_view(e)[3] != min(BLK, n_kv - BLK * block):
                return f"calls {e[0]} with n {kernel_view(e)[3]} on step {s}, where the stream hands it block {block}"
            called[tasks[rnd]].append(block)
        elif e[0] == "copy" and e[1].startswith("out:") and e[3].startswith("kv:"):
            states.append((e[3], e[4]))
        elif e[0] == "fa_merge_f32":
            states.append(e[2])
            if e[1] != f"out:{out_seen}":
                return f"merges into {e[1]}, not its output object out:{out_seen}"
    if parts > 1 and part == 0 and tasks:
        sw = state // 4
        spo = kv // state
        state_objs = [i + 1 for i, x in enumerate(sched) if x[0] == "state" and x[1] == 0]
        want_states = []
        for j in range(parts):
            obj = f"kv:{state_objs[j // spo]}"
            want_states.append((obj, 0) if j == 0 else (obj if j % spo == 0 else f"{obj}+{j % spo * sw}"))
        if states[:parts] != want_states:
            return f"takes the states {states[:parts]}, in part order they are {want_states}"
    return None


def hand(label, p, got, want):
    if got != want:
        errors.append(f"by hand, {label}: {got}, expected {want}")


rng = random.Random(20261206)
count = 0
# Llama-3.1-8B decode (32/8 heads, one token, head dim 128, 4096 positions, a mask): 8 tasks of 4 rows (one
# token, mask_ratio 4), 128 blocks, 4 parts of 32 blocks on a column each; part 0 merges 4 states, 2 per kv
# object (17408 / 8320). The attention layout, forced (a one-token shape takes the decode layout, below).
p = check_shape("f16", 128, 0, 32, 8, 1, 4096, layout="attention")
hand("8B decode split", p, (p.split["parts"], p.split["blocks"], p.tasks_per_round, p.rounds, p.columns,
                            p.steps["states"]), (4, 128, 8, 1, 8, 2))
hand("8B decode column 3 row 4", p, (p.cores[14]["words"]["block0"], p.own[0][14], p.col_steps[0][3],
                                     p.cores[14]["words"]["mask_ratio"]), (64, 32, 32, 4))
hand("8B decode: every column 32 block steps, 32 in lockstep, 32 block calls on a core", p,
     (p.col_steps, p.steps["lockstep block steps"], p.steps["block calls (busiest core)"]), ([[32] * 8], 32, 32))
hand("F16 128 core memory: 63112 less the 2 RTP words layout 3 dropped", p, sum(p.core_bytes.values()), 63104)
# Per column, all 4 cores on the task: q step 4 x (17408 - 64 slopes - 2048 query bytes - 8 step words: 6144
# for the 12 rows past the task's, 9144 past the step words); 32 block steps of 4 x 15 mask rows of 64 bytes
# (one token's row moved, 15 filler); 2 state steps, part 0 2 x 8320 + 768 filler each, the 3 others 17408
# each. 8 columns.
hand("8B decode filler", p, p.traffic["filler"], 8 * (4 * (6144 + 9144) + 32 * 4 * 960 + 2 * 768 + 3 * 2 * 17408))
hand("8B decode filler, summed", p, p.traffic["filler"], 2320128)
# 32 cores x 32 steps x 32 rows x 256 bytes: exactly the 8 heads x 4096 rows; one 64-byte mask row per step;
# 8 bytes of step words per core.
hand("8B decode k, v, mask, q, slopes, steps", p,
     tuple(p.traffic[x] for x in ("k", "v", "mask", "q", "slopes", "steps")),
     (8388608, 8388608, 65536, 65536, 2048, 256))
# Read: 8 columns x 4 cores x (1 + 32 + 2) objects of 17408; written: 8 x 4 x 2 objects of 8320, of which the
# partial states 8 x 4 x 8320 and the rows 8 x 4 x 512.
hand("8B decode read, written, partials, out", p,
     (p.traffic["read"], p.traffic["written"], p.traffic["partials_read"], p.traffic["partials_written"],
      p.traffic["out"], p.traffic["discarded"]), (19496960, 532480, 266240, 266240, 16384, 249856))
hand("8B decode chains: q 4 x (slopes, 1 run, filler, step words, filler) in 2 tasks, blocks 4 x (K, V, mask, "
     "filler), states 2 + 3, drain 2 + 3", p,
     (p.bds["q step chain (largest)"], p.bds["q step tasks (largest)"], p.bds["block step chain (largest)"],
      p.bds["state step chain (largest)"], p.bds["drain chain (largest)"]), (20, 2, 16, 5, 5))
hand("8B decode slopes operand: 8 x (16 + 4) fp32 = 640 bytes, then 17408 zeros, then 32 cores' 8 bytes", p,
     (p.slopes["zero region at"], p.slopes["steps_offset"], p.slopes["bytes"]), (640, 18048, 18304))
# The same shape on the decode layout (the default for one token): kv_decode 16640 = 2 states of 8320 (a block
# step of one mask row is 16448, 192 bytes of tail). Per column: q step 4 x (16640 - 64 - 2048); 32 block steps
# of 4 x (K, V, one mask row, the 192-byte tail); 2 state steps, part 0 2 x 8320 and no filler, the 3 others
# 16640 each. Core memory: 2 x 16640 + 8320 + the same buffers + the 1024-byte mask buffer.
p = check_shape("f16", 128, 0, 32, 8, 1, 4096)
hand("8B decode, decode layout: layout, kv object, block bytes", p, (p.layout, p.objects["kv"], p.objects["block"]),
     ("decode", 16640, 16448))
hand("8B decode, decode layout: filler", p, p.traffic["filler"], 8 * (4 * 14520 + 32 * 4 * 192 + 3 * 2 * 16640))
hand("8B decode, decode layout: read, written, mask", p, (p.traffic["read"], p.traffic["written"], p.traffic["mask"]),
     (8 * 4 * 35 * 16640, 532480, 65536))
hand("8B decode, decode layout: read 18636800, filler 1459968", p, (p.traffic["read"], p.traffic["filler"]),
     (18636800, 1459968))
hand("8B decode, decode layout: chains q 20, blocks 4 x (K, V, mask, tail), states 1 + 3, drain 5", p,
     (p.bds["q step chain (largest)"], p.bds["block step chain (largest)"], p.bds["state step chain (largest)"],
      p.bds["drain chain (largest)"]), (20, 16, 4, 5))
hand("F16 128 decode layout core memory: 63104 - 2 x 768 + 1024", p, sum(p.core_bytes.values()), 62592)
hand("8B decode, decode layout: the same slopes operand (17408 zeros, the larger object)", p,
     (p.slopes["zero region at"], p.slopes["steps_offset"], p.slopes["bytes"]), (640, 18048, 18304))
# Q8_0 128 on the decode layout: kv_decode 8768 = the block step of one mask row (2 x 32 x 136 + 64), no tail,
# one state per object (4 state steps, part 0's with 448 filler, the 3 others 8768 each).
p = check_shape("q8_0", 128, 0, 32, 8, 1, 4096)
hand("Q8_0 8B decode, decode layout: kv, filler, read", p,
     (p.layout, p.objects["kv"], p.steps["states"], p.traffic["filler"], p.traffic["read"]),
     ("decode", 8768, 4, 8 * (4 * (8768 - 64 - 2048 - 8) + 4 * (448 + 3 * 8768)), 8 * 4 * 37 * 8768))
hand("Q8_0 8B decode, decode layout: block chain 4 x (K, V, mask)", p, p.bds["block step chain (largest)"], 12)
# Two sequences over one KV sequence, 8/2 heads at head dim 64, 700 positions (22 blocks): 4 tasks of one token,
# 6 parts (32 // 4 = 8 cores a task, isqrt(44) = 6: blocks 4, 4, 4, 4, 3, 3), 24 pairs on 6 columns, the
# second task's parts on cores 6..11 (columns 1 and 2); kv_decode 8448 (block 8256, tail 192), 2 states per
# object, 3 state steps.
p = check_shape("f16", 64, 0, 8, 2, 1, 700, n_seq=2)
hand("2 sequences, decode layout: columns, parts, steps, state steps", p,
     (p.layout, p.columns, p.split["parts"], p.steps["blocks (most of a column and round)"], p.steps["states"]),
     ("decode", 6, 6, 4, 3))
hand("2 sequences, decode layout: task 1 across columns 1 and 2", p,
     [(c["column"], c["words"]["part"]) for c in p.cores if c["task"] == 1], [(1, q) for q in range(2)] + [(2, q) for q in range(2, 6)])
# 24 cores: q step 7352 filler each (8448 - 64 slopes - 4 rows x 256 - 8 step words); every column 4 block
# steps (each holds a part of 4 blocks) of a 192-byte tail; 3 state steps, the 4 merging cores read 2 states
# each (no filler), the 20 others 8448 each.
hand("2 sequences, decode layout: column steps", p, p.col_steps, [[4] * 6])
hand("2 sequences, decode layout: filler", p, p.traffic["filler"],
     24 * (8448 - 64 - 4 * 64 * 4 - 8) + 4 * 24 * 192 + 20 * 3 * 8448)
# 7 tokens of 4/2 heads at head dim 64, 256 positions: 2 tasks of 14 rows (7 tokens), 8 blocks in 4 parts of 2:
# 2 columns. Per core a block step: K, V 32 x 128 bytes, 7 mask rows and 9 x 64 filler (9216 in all).
p = check_shape("f16", 64, 0, 4, 2, 7, 256)
hand("7 tokens, 2 KV heads: columns, parts, steps, mask_ratio", p,
     (p.columns, p.split["parts"], p.col_steps, p.cores[0]["words"]["mask_ratio"]), (2, 4, [[2, 2]], 2))
hand("7 tokens, 2 KV heads: traffic", p, p.traffic,
     {"q": 8 * 14 * 256, "slopes": 8 * 64, "steps": 8 * 8, "k": 8 * 2 * 32 * 128, "v": 8 * 2 * 32 * 128,
      "mask": 8 * 2 * 7 * 64, "filler": 8 * (9216 - 64 - 3584 - 8) + 8 * 2 * 9 * 64 + 2 * (2 * 768 + 3 * 2 * 9216),
      "partials_read": 2 * 4 * 4224, "out": 2 * 3584, "partials_written": 2 * 4 * 4224,
      "discarded": 2 * (640 + 3 * 4224), "read": 2 * 4 * 5 * 9216, "written": 2 * 4 * 2 * 4224})
hand("7 tokens, 2 KV heads: read 368640, filler 167360", p, (p.traffic["read"], p.traffic["filler"]), (368640, 167360))
# Q8_0 decode without a mask, 8/8 heads: one row per task, 1000 positions = 32 blocks, 8 per part; the last
# block's 32 rows read whole (1024 rows of 136 bytes per KV head, 1000 of them data); one state per kv object.
p = check_shape("q8_0", 128, 0, 8, 8, 1, 1000, mask=False, layout="attention")
hand("Q8_0 128 core memory: 57992 less the 2 RTP words layout 3 dropped", p, sum(p.core_bytes.values()), 57984)
hand("1000 positions: 32 blocks of 8 per part, 4 state steps, no mask", p,
     (p.split["blocks"], p.steps["blocks (most of a column and round)"], p.steps["states"],
      p.cores[0]["words"]["mask_ratio"]), (32, 8, 4, 0))
hand("Q8_0 decode without a mask: traffic", p, tuple(p.traffic[x] for x in sorted(p.traffic)),
     tuple(dict(q=32 * 512, slopes=32 * 64, steps=32 * 8, k=32 * 8 * 32 * 136, v=32 * 8 * 32 * 136, mask=0,
                filler=32 * (9728 - 64 - 512 - 8) + 32 * 8 * 1024 + 8 * (4 * 1408 + 3 * 4 * 9728),
                partials_read=8 * 4 * 8320, out=8 * 512, partials_written=8 * 4 * 8320,
                discarded=8 * (7808 + 3 * 8320), read=8 * 4 * 13 * 9728, written=8 * 4 * 2 * 8320)[x]
           for x in sorted(p.traffic)))
hand("Q8_0 decode without a mask: chains (K, V, one filler BD per core)", p,
     (p.bds["q step chain (largest)"], p.bds["block step chain (largest)"]), (20, 12))
# The same on the decode layout: kv_decode 8768, a block step's mask row 64 bytes of filler and no tail.
p = check_shape("q8_0", 128, 0, 8, 8, 1, 1000, mask=False)
hand("Q8_0 decode without a mask, decode layout: filler, read, core memory", p,
     (p.traffic["filler"], p.traffic["read"], sum(p.core_bytes.values())),
     (32 * (8768 - 64 - 512 - 8) + 32 * 8 * 64 + 8 * (4 * 448 + 3 * 4 * 8768), 8 * 4 * 13 * 8768,
      57984 - 2 * 960 + 1024))
hand("Q8_0 decode without a mask, decode layout: chains (K, V, one filler BD per core)", p,
     (p.bds["q step chain (largest)"], p.bds["block step chain (largest)"]), (20, 12))
# F16 128 without a mask on the decode layout: the 64 bytes of the mask row's zeros and the 192-byte tail in one
# filler BD, 256 bytes a step.
p = check_shape("f16", 128, 0, 8, 8, 1, 1000, mask=False)
hand("F16 decode without a mask, decode layout: block chain 4 x (K, V, filler), block filler", p,
     (p.bds["block step chain (largest)"], p.traffic["filler"] - 32 * (16640 - 64 - 512 - 8) - 8 * (3 * 2 * 16640)),
     (12, 32 * 8 * 256))
p = check_shape("f16", 64, 1, 32, 8, 1, 70, cols=8, layout="attention")
# 3 blocks: 3 parts of one block each (32 // 8 = 4 cores a task, but no part without a block): 8 tasks a
# round on 24 cores; core 3 (column 0, row 3) the second task's first part, cores 24..31 idle: columns 6 and 7
# take no block step (no block phase), the others one.
hand("70 positions: 3 parts of a block, core 3 task 1 part 0, core 24 idle", p,
     (p.split["parts"], p.tasks_per_round, p.cores[3]["task"], p.cores[3]["words"]["part"],
      p.own[0][0], p.cores[24]["words"]["tasks"]), (3, 10, 1, 0, 1, 0))
hand("70 positions: the idle columns take no block step", p, p.col_steps, [[1, 1, 1, 1, 1, 1, 0, 0]])
hand("F16 64 core memory: 35080 less the 2 RTP words layout 3 dropped", p, sum(p.core_bytes.values()), 35072)
p = check_shape("f16", 128, 0, 24, 12, 1, 512)
# 32 // 12 = 2 parts: 24 pairs on 6 columns, 16 tasks a round's 6 columns could hold.
hand("12 tasks: 2 parts, 6 columns", p, (p.split["parts"], p.tasks_per_round, p.rounds, p.columns),
     (2, 12, 1, 6))
p = check_shape("f16", 128, 0, 36, 9, 1, 512)
# 32 // 9 = 3 parts (16 blocks, isqrt(32) = 5): 27 pairs on ceil(27 / 4) = 7 columns in one round, task 1 on
# cores 3..5 (columns 0 and 1), core 27 idle.
hand("9 tasks: 3 parts, 7 columns, 1 round, task 1 across columns, core 27 idle", p,
     (p.split["parts"], p.columns, p.rounds, [c["task"] for c in p.cores[3:6]], p.cores[27]["words"]["tasks"]),
     (3, 7, 1, [1, 1, 1], 0))
# Qwen3-30B-A3B decode (32/4 heads, head dim 128, 4096 positions): 4 tasks of 8 rows, 8 parts of 16 blocks
# (32 // 4 = 8, isqrt(256) = 16): the whole array, a task on 2 columns, 4 state steps.
p = check_shape("f16", 128, 0, 32, 4, 1, 4096)
hand("30B-A3B decode: parts, columns, steps, state steps, task 1's columns", p,
     (p.split["parts"], p.columns, p.steps["blocks (most of a column and round)"], p.steps["states"],
      sorted({c["column"] for c in p.cores if c["task"] == 1})), (8, 8, 16, 4, [2, 3]))
p = check_shape("f16", 128, 0, 32, 8, 512, 512)
hand("pp512: 128 chunks of 16 rows per KV head, 1024 tasks, 32 rounds", p,
     (p.split["chunks"], p.split["groups"], p.split["parts"], p.rounds), (128, 1024, 1, 32))
# Ratio 3 (48/16 heads, 7 tokens: 21 rows, 2 chunks of 11 and 10, 32 tasks: one part, 4 per column): chunk 0
# (rows 0..10) is tokens 0..2 whole and 2 rows of token 3, chunk 1 (rows 11..20) a row of token 3 and tokens 4..6
# whole: 2 runs and 4 tokens each. 100 positions: 4 block steps. Mask: 32 tasks x 4 steps x 4 rows x 64; the q
# step 4 x (slopes, 2 runs, the rows' filler, the step words, filler), the drain 4 x (2 runs, the discarded
# bytes).
p = check_shape("f16", 64, 0, 48, 16, 7, 100)
hand("ratio 3, chunks cut inside tokens: mask bytes, q step (4 x slopes, 2 runs, filler, step words, filler) "
     "and drain chains", p, (p.traffic["mask"], p.bds["q step chain (largest)"], p.bds["drain chain (largest)"]),
     (32768, 24, 12))
# The layout: decode for every one-token shape, attention once a task holds two tokens; and by the rule
# (fewest task_tokens holding the largest task), decode too when every chunk is one token's heads (16 heads per
# KV head, 2 tokens: 2 chunks of 16 rows).
for n_head, n_head_kv, tokens, want in ((32, 8, 1, "decode"), (8, 8, 1, "decode"), (64, 2, 1, "decode"),
                                        (32, 8, 2, "attention"), (8, 8, 2, "attention"), (32, 8, 512, "attention"),
                                        (28, 4, 3, "attention"), (32, 2, 2, "decode"), (48, 2, 2, "attention")):
    lp = design.make_plan(desc, "f16", 64, design.Shape(d=64, n_kv=256, n_tokens=tokens, n_head=n_head,
                                                         n_head_kv=n_head_kv, scale=0.125))
    hand(f"layout of {tokens} token(s), {n_head}/{n_head_kv} heads", lp, lp.layout, want)
# Forcing the decode layout on a task of two tokens is refused; the attention layout takes any.
try:
    design.make_plan(desc, "f16", 64, design.Shape(d=64, n_kv=256, n_tokens=2, n_head=8, n_head_kv=8, scale=0.1),
                     layout="decode")
    errors.append("the decode layout was planned for a task of 2 tokens")
except design.PlanError as e:
    if "this shape's largest task has 2" not in str(e):
        errors.append(f"the decode layout for 2 tokens refused as {e}")
count += 21

# A causal profile (--causal N0: token t sees positions 0 .. N0 + t). pp of 64 tokens, 32/8 heads, head dim 128,
# 256 positions, an empty cache: 16 chunks of 4 tokens per KV head, 128 tasks of one part on 8 columns, 4
# rounds of 32 tasks, a multiple of the 8 KV heads: chunk-major. Chunk c's last token 4 c + 3 sees up to
# position 4 c + 3: one block for chunks 0..7, two for 8..15. Core i of round k takes task 32 k + i, chunk
# (32 k + i) // 8 = 4 k + i // 8, KV head i % 8: round k holds chunks 4 k .. 4 k + 3, so rounds 0 and 1 take one
# block step on every column, rounds 2 and 3 two: 6 in lockstep (the engine's order, chunk (32 k + i) % 16,
# would give every round columns of 1 and 2 steps: 8; 8 a round without the profile), 6 block calls on every
# core, 48 column steps.
p = check_shape("f16", 128, 0, 32, 8, 64, 256, causal=0)
hand("pp64 causal 0: task order", p, p.task_order, "chunk-major")
hand("pp64 causal 0: column steps per round", p, p.col_steps, [[1] * 8, [1] * 8, [2] * 8, [2] * 8])
hand("pp64 causal 0: lockstep, busiest core's calls, column steps, block phases", p,
     (p.steps["lockstep block steps"], p.steps["block calls (busiest core)"], p.steps["column block steps"],
      p.bds["block phases"]), (6, 6, 48, 4))
# 128 q steps (16 rows each, 17408 - 64 - 8192 - 8 = 9144 filler past the step words); 48 column steps x 4
# cores of K, V (32 x 256 bytes each), 4 tokens' mask rows (256 bytes) and 12 rows of filler (768); 128
# outputs of 16 rows (8192 bytes, 128 discarded).
hand("pp64 causal 0: traffic", p, p.traffic,
     {"q": 128 * 8192, "slopes": 128 * 64, "steps": 128 * 8, "k": 48 * 4 * 8192, "v": 48 * 4 * 8192,
      "mask": 48 * 4 * 256, "filler": 128 * 9144 + 48 * 4 * 768, "partials_read": 0,
      "out": 128 * 8192, "partials_written": 0, "discarded": 128 * 128,
      "read": (128 + 48 * 4) * 17408, "written": 128 * 8320})
hand("pp64 causal 0: slopes operand (640 bytes of slopes, 17408 zeros, 4 rounds x 32 cores x 8)", p,
     (p.slopes["steps_offset"], p.slopes["bytes"]), (18048, 19072))
# Decode over a cache of 300 positions (512 rows): 8 tasks, 16 blocks in 4 parts of 4; the token sees up to
# position 300, block 9: 10 blocks needed, parts 0 and 1 compute 4, part 2 two, part 3 none (its steps
# filler). Every column still takes 4 steps (parts 0 and 1): the lockstep does not change, only K and V move
# less (3 cores a column x 4 steps).
p = check_shape("f16", 128, 0, 32, 8, 1, 512, causal=300)
hand("decode causal 300: own, column steps, lockstep", p, (p.own, p.col_steps, p.steps["lockstep block steps"]),
     ([[4, 4, 2, 0] * 8], [[4] * 8], 4))
hand("decode causal 300: k, filler (q steps, tails of 3 computing cores, part 3's steps, state steps)", p,
     (p.traffic["k"], p.traffic["filler"]),
     (8 * 3 * 4 * 8192, 32 * (16640 - 64 - 2048 - 8) + 8 * 3 * 4 * 192 + 8 * 4 * 16640 + 8 * 3 * 2 * 16640))
# 7 tokens of 4/2 heads over a cache of 100 (256 positions): the last token sees position 106, block 3: 4 blocks
# needed of 8 in 4 parts of 2, so parts 0 and 1 compute 2 each, parts 2 and 3 none; 2 steps a column.
p = check_shape("f16", 64, 0, 4, 2, 7, 256, causal=100)
hand("7 tokens causal 100: own, column steps", p, (p.own, p.col_steps), ([[2, 2, 0, 0, 2, 2, 0, 0]], [[2, 2]]))
hand("7 tokens causal 100: k, mask, filler", p, (p.traffic["k"], p.traffic["mask"], p.traffic["filler"]),
     (2 * 2 * 2 * 4096, 2 * 2 * 2 * 7 * 64,
      8 * (9216 - 64 - 3584 - 8) + 4 * 2 * 9 * 64 + 4 * 2 * 9216 + 2 * (2 * 768 + 3 * 2 * 9216)))
# Block groups: 40000 positions (1250 blocks) for 8 tasks of one row in 4 parts of 313, 313, 312, 312 blocks; a
# cache of 13184 positions: the token sees block 412, 413 blocks needed: part 0 computes 313, part 1 100, parts
# 2 and 3 none. Every column takes 313 steps in 5 groups (64 x 4 + 57); in the second group part 1's K BD
# starts at block 313 + 64 and steps over 36 blocks (its last own), the repeat rereading them.
p = check_shape("f16", 128, 0, 8, 8, 1, 40000, causal=13184)
hand("40000 positions causal 13184: own, column steps, block phases", p,
     (p.own, p.col_steps, p.bds["block phases"]), ([[313, 100, 0, 0] * 8], [[313] * 8], 5))
second = next(ph for ph in design.shim_phases(p, design.Shape(d=128, n_kv=40000, n_head=8, n_head_kv=8, causal=13184),
                                              64) if ph.kind == "block" and ph.step == 64)
hand("40000 positions causal 13184: part 1's K BD in the second group", p,
     [(bd.first, bd.iterations) for bd in second.columns[0][2][1] if bd.use == "k"] + [second.columns[0][1]],
     [(313 + 64, 36), 64])
# More causal shapes: decode (several caches, both layouts, split tasks), prefill (one part and several),
# two sequences, fewer columns.
for args, kw in ((("f16", 128, 0, 32, 8, 1, 4096), dict(causal=0)),
                 (("f16", 128, 1, 32, 8, 1, 4096), dict(causal=1000)),
                 (("f16", 128, 0, 32, 8, 1, 4096), dict(causal=4095)),
                 (("q8_0", 128, 0, 32, 8, 1, 4096), dict(causal=2047, layout="attention")),
                 (("f16", 128, 0, 32, 4, 1, 4096), dict(causal=3000)),
                 (("f16", 64, 0, 8, 2, 100, 1000), dict(causal=500)),
                 (("f16", 64, 1, 8, 2, 100, 1000), dict(causal=0, cols=3)),
                 (("q8_0", 64, 0, 8, 2, 3, 700), dict(n_seq=2, causal=300)),
                 (("f16", 32, 0, 4, 4, 2, 95), dict(causal=31)),
                 (("f16", 128, 0, 32, 8, 512, 512), dict(causal=0, replay=False)),
                 (("f16", 128, 0, 32, 8, 33, 4096), dict(causal=4000))):
    check_shape(*args, **kw)
count += 15

# The task order by hand. 64 tokens of 32/8 heads, head dim 128, 256 positions, an empty cache, 2 columns: 256
# rows per KV head in 16 chunks of 16 (4 tokens each), 128 tasks; 8 blocks, split over 8 cores (128 tasks: one
# part). 8 tasks a round, 16 rounds; the 8 tasks sharing a chunk index (1 sequence x 8 KV heads) divide a
# round's 8: chunk-major. Core i (column i // 4, row 2 + i % 4) takes task 8 k + i in round k: chunk k, KV head i,
# sequence 0. Round 0: cores 0..7 chunk 0 (rows 0..15, tokens 0..3) of KV heads 0..7; round 1: cores 0..7 chunk
# 1 (rows 16..31, tokens 4..7) of KV heads 0..7. Every core's words: first_chunk 0 // 8 .. 7 // 8 = 0,
# chunk_step 8 // 8 = 1 (the engine's order would give first_chunk i and chunk_step 8). Chunk k's last token
# 4 k + 3 sees block (4 k + 3) // 32: 1 block for rounds 0..7, 2 for rounds 8..15, on every core: column steps
# [1, 1] eight times then [2, 2] eight times, 8 + 16 = 24 in lockstep, 24 block calls on every core, 48 column
# steps. (Chunk fastest, round k would hold chunks 8 k % 16 .. 8 k % 16 + 7 of one KV head: rounds of 1 and 2
# steps in turn, 24 as well: at 2 columns the orders take as many steps, their tasks differ.) The traffic is
# the 8-column plan's above: 128 q steps, 48 column steps of 4 computing cores, 128 outputs; the step table
# 16 rounds x 8 cores x 8 bytes.
p = check_shape("f16", 128, 0, 32, 8, 64, 256, cols=2, causal=0)
shape6 = design.Shape(**p.shape)
tasks_of_round = lambda k: [design.task_of(shape6, p.split, design.pair_of(p.split, 2, 4, k, i // 4, i % 4)[0],
                                           p.task_order)[:4] for i in range(8)]
hand("pp64 on 2 columns: order, tasks a round, rounds", p, (p.task_order, p.tasks_per_round, p.rounds),
     ("chunk-major", 8, 16))
hand("pp64 on 2 columns: round 0's tasks (sequence, KV head, chunk, first row)", p, tasks_of_round(0),
     [(0, h, 0, 0) for h in range(8)])
hand("pp64 on 2 columns: round 1's tasks", p, tasks_of_round(1), [(0, h, 1, 16) for h in range(8)])
hand("pp64 on 2 columns: first_chunk and chunk_step of every core", p,
     [(c["words"]["first_chunk"], c["words"]["chunk_step"]) for c in p.cores], [(0, 1)] * 8)
hand("pp64 on 2 columns: column steps, lockstep, busiest core's calls, column steps", p,
     (p.col_steps, p.steps["lockstep block steps"], p.steps["block calls (busiest core)"],
      p.steps["column block steps"]), ([[1, 1]] * 8 + [[2, 2]] * 8, 24, 24, 48))
hand("pp64 on 2 columns: traffic", p, p.traffic,
     {"q": 128 * 8192, "slopes": 128 * 64, "steps": 128 * 8, "k": 48 * 4 * 8192, "v": 48 * 4 * 8192,
      "mask": 48 * 4 * 256, "filler": 128 * 9144 + 48 * 4 * 768, "partials_read": 0,
      "out": 128 * 8192, "partials_written": 0, "discarded": 128 * 128,
      "read": (128 + 48 * 4) * 17408, "written": 128 * 8320})
# pp512 on 8B from an empty cache: 32 rounds of 32 tasks, chunk-major, round k chunks 4 k .. 4 k + 3 (tokens
# 16 k .. 16 k + 15, all within block k // 2): k // 2 + 1 block steps, 2 (1 + .. + 16) = 272 in lockstep, where
# the engine's order (32 consecutive chunks of one KV head a round, tokens 128 (k % 4) .. + 127) takes 4, 8,
# 12, 16 in turn: 320.
p = check_shape("f16", 128, 0, 32, 8, 512, 512, causal=0, replay=False)
hand("pp512 causal 0: order, lockstep", p, (p.task_order, p.steps["lockstep block steps"]), ("chunk-major", 272))
# Both orders over several rounds, with and without a profile, one sequence and several: chunk-major when a
# round's tasks are a multiple of n_seq x n_head_kv (32 of 8; 12 of 2 x 2; 32 of 2 x 2; 4 of 4; 16 of 8, its
# last round chunk 2 alone on half the cores), else chunk fastest (20 of 8 on 5 columns; 32 of 3 x 2; 4 of 8 on
# one column; 16 of 2 x 3).
count += 2
for args, kw, want in ((("f16", 128, 0, 32, 8, 64, 256), dict(cols=2), "chunk-major"),
                       (("f16", 128, 0, 32, 8, 64, 256), dict(cols=5, causal=0), "chunk-fastest"),
                       (("f16", 128, 0, 32, 8, 64, 256), dict(cols=5), "chunk-fastest"),
                       (("f16", 64, 1, 8, 2, 40, 300), dict(n_seq=2, causal=100), "chunk-major"),
                       (("f16", 64, 1, 8, 2, 40, 300), dict(n_seq=2), "chunk-major"),
                       (("f16", 64, 0, 8, 2, 100, 1000), dict(n_seq=2, cols=3, causal=500), "chunk-major"),
                       (("f16", 64, 0, 8, 2, 100, 1000), dict(mask=False), "chunk-major"),
                       (("q8_0", 64, 0, 8, 2, 40, 500), dict(n_seq=3, causal=200), "chunk-fastest"),
                       (("q8_0", 64, 0, 8, 2, 40, 500), dict(n_seq=3), "chunk-fastest"),
                       (("f16", 32, 1, 4, 4, 40, 70), dict(cols=1), "chunk-major"),
                       (("f16", 32, 1, 4, 4, 40, 70), dict(cols=1, causal=30), "chunk-major"),
                       (("f16", 32, 0, 16, 8, 10, 200), dict(cols=1, causal=50), "chunk-fastest"),
                       (("f16", 128, 1, 32, 8, 10, 512), dict(cols=4, causal=0), "chunk-major"),
                       (("f16", 64, 0, 12, 3, 20, 256), dict(n_seq=2, cols=4, causal=100), "chunk-fastest"),
                       (("f16", 64, 0, 12, 3, 20, 256), dict(n_seq=2, cols=4), "chunk-fastest")):
    p = check_shape(*args, **kw)
    hand(f"task order of {args} {kw}", p, (p.task_order, p.rounds > 1), (want, True))
    count += 1
causal_rng = random.Random(20261207)  # apart from rng: the shapes without a profile stay the ones they were
for _ in range(320):
    family = rng.choice(["f16", "q8_0"])
    d = rng.choice([32, 64, 128] if family == "f16" else [64, 128])
    ratio = rng.randint(1, 8)
    n_head_kv = rng.choice([1, 2, 4, 8])
    tokens = rng.choice([1, 1, 1, 2, 3, 4, 7, 16, 33, 100])
    n_kv = rng.choice([1, 2, 31, 32, 33, 64, 95, 100, 256, 1000, 4096, rng.randint(1, 40000)])
    cols = rng.choice([None, None, None, 8, 1, 2, 4, 5])
    big = tokens * ratio * n_head_kv * ((n_kv + 31) // 32) > 40000
    contract, n_seq, mask = rng.randint(0, 1), rng.choice([1, 1, 2]), rng.random() < 0.8
    check_shape(family, d, contract, ratio * n_head_kv, n_head_kv, tokens, n_kv, n_seq, cols, mask, replay=not big)
    count += 1
    if tokens == 1:
        # The attention layout still takes one-token shapes (forced): both layouts on every decode shape.
        check_shape(family, d, contract, ratio * n_head_kv, n_head_kv, tokens, n_kv, n_seq, cols, mask,
                    replay=not big, layout="attention")
        count += 1
    if mask and n_kv >= tokens and causal_rng.random() < 0.4:
        # The same shape under a causal mask over a cache of N0 positions: none, some, all it can hold.
        n0 = causal_rng.choice([0, causal_rng.randint(0, n_kv - tokens), n_kv - tokens])
        check_shape(family, d, contract, ratio * n_head_kv, n_head_kv, tokens, n_kv, n_seq, cols, mask,
                    replay=not big, causal=n0)
        count += 1
wanted = {(o, True, c, q) for o in ("chunk-major", "chunk-fastest") for c in (False, True) for q in (False, True)}
if wanted - orders_seen:
    errors.append(f"no shape of several rounds recomputed for (order, rounds > 1, causal, sequences > 1) "
                  f"{sorted(wanted - orders_seen)}")
# A mask per head is refused.
try:
    design.make_plan(desc, "f16", 128, design.Shape(d=128, n_kv=256, mask_heads=8, scale=0.1))
    errors.append("a mask of 8 heads was planned")
except design.PlanError as e:
    if "a mask per head is not this design's" not in str(e):
        errors.append(f"a mask of 8 heads refused as {e}")

# Description variants: a name says which check must fail (or that it is refused).
expect = {"kv-size": "objects: the description's kv and state", "depth3": "core data memory",
          "no-slopes": "host_written", "tile256": "family f16 tiles", "no-release": "barrier: released",
          "phase17": "shim: a phase's BD ids", "phase-twice": "shim: a phase's BD ids",
          "lanes16": "attention constants", "kv-order": "kv object layout", "q-order": "kv object layout",
          "rtp-v1": "RTP words: the core program's", "rtp-v2": "RTP words: the core program's",
          "rtp-version2": "RTP words: layout version", "q-no-steps": "kv object layout",
          "kv-decode-size": "objects: the description's kv and state",
          "decode-tokens0": "layouts: task_tokens", "attention-tokens17": "layouts: task_tokens",
          "kv-decode-odd": "objects: whole 32-bit words"}
for name in sorted(os.listdir(variants)):
    path = os.path.join(variants, name)
    stem = name[:-5]
    # On a decode shape (one token) and a prefill one (4 tokens of 4 heads per KV head): both layouts.
    for tokens in (1, 4):
        try:
            vd = design.load_description(path)
            vp = design.make_plan(vd, "f16", 128, design.Shape(d=128, n_kv=4096, n_tokens=tokens, scale=0.088))
        except design.PlanError as e:
            if not stem.startswith("refused-"):
                errors.append(f"variant {stem}, {tokens} token(s): refused ({e}), expected a failing check")
            continue
        if stem.startswith("refused-"):
            errors.append(f"variant {stem}, {tokens} token(s): planned, expected a refusal")
            continue
        failed = [w for w, ok, _ in vp.checks if not ok]
        if not any(expect[stem] in w for w in failed):
            errors.append(f"variant {stem}, {tokens} token(s) ({vp.layout}): failed {failed}, expected '{expect[stem]}'")

print(f"flash_attn plans: {count} shapes recomputed and replayed, {len(os.listdir(variants))} variants")
if errors:
    for e in errors[:20]:
        print("FAIL:", e)
    sys.exit(1)
