#!/usr/bin/env python3
"""The "attention" design for XDNA2 (NPU2, AIE2P): FLASH_ATTN_EXT over an F16 or Q8_0 KV cache, the IRON
program of its data-movement description (aie/flash_attn/dataflow.json).

    out[r] = sum_j softmax_j(scale * q[r].k[j] + slope[r] * mask[r][j]) v[j]
    (aie/flash_attn/kernels/flash_attn.cc: fa_init_f32, fa_prepare_q_bfp16, the block programs, fa_merge_f32,
    fa_finish_f32)

What the program is, the numbers of its data movement read from the description (--dataflow):
  - Families "f16" and "q8_0" (the KV cache type), one xclbin per family and head dim (the tile: the numeric
    keys of its kernel_stack); the contract RTP word picks the block program: 0 the bfp16 one, 1 the fp32 one.
  - The work is the simulator engine's (src/ops/flash_attn/sim/sim-flash-attn.cpp): flash_attn_split gives
    tasks (sequence, KV head, chunk of at most 16 query rows: the heads of a token next to each other, then
    the next token) and, with fewer tasks than cores, parts: a task's blocks of 32 KV rows in `parts` ranges
    of whole blocks (the first blocks % parts one block longer), merged in order by part 0.
  - Placement (this design's): the cores of a round, column by column and row by row (core i = column x 4 +
    row - first_core_row), take the (task, part) pairs in order: core i takes part i % parts of task
    k x tasks_per_round + i // parts in round k, tasks_per_round = columns x 4 // parts. A task's parts sit
    on consecutive cores, in one column or across two (their partial states meet in the partials operand). A
    column's cores run in lockstep (one split, one join), whatever tasks they hold.
    Task order: task g is (sequence, KV head, chunk) chunk-major (chunk g // G, G = n_seq x n_head_kv the tasks
    of one chunk index, then the KV head, then the sequence) when the rounds are several and a round holds
    whole chunk indices (tasks_per_round % G == 0): a round then holds a few chunks of every KV head and
    sequence, whose needs under a causal mask are nearly equal, so its block phases, which sync every column,
    end with the columns' work (a round of one KV head's consecutive chunks waits on its latest chunks'
    column). Otherwise chunk fastest (the engine's job order). The core counts its chunk the same way in
    both (first_chunk, plus chunk_step a round, modulo chunks); only the two words differ.
  - Per column: kv_l3l2 (shim MM2S -> memory tile, one step of the 4 cores per object) split into kv_l2l1
    (one kv object per core, double-buffered); out_l1l2 (the core's state / finished rows) joined into
    out_l2l3 (memory tile -> shim S2MM).
  - Layouts (the description's .layouts): the same FIFOs, their kv object per layout. "attention" (kv objects,
    task_tokens 16: a block step carries 16 mask rows) and "decode" (kv_decode objects, task_tokens 1: one
    mask row, the object padded to hold as many states as a kv object, the rest of a block step a tail
    filler). A stream takes the layout of fewest task_tokens that holds its largest task's tokens (decode for
    one query token), or the one --layout names. In the decode layout the core copies the step's one mask
    row to each query row of a 16 x 32-half buffer of its own (no room to widen it in the object).
  - Per core and round: the q step (the task's 16 slopes, then its query rows, copied into the core's buffers,
    then the round's two step words: the column's block steps and the core's own), the column's block steps
    (a block: K rows, V rows, the mask rows of the task's tokens, which the core widens in place to one row
    per query row when mask_ratio > 0, or in the decode layout into its mask buffer; the steps past its own
    passed over), then
    unsplit: fa_finish_f32 over the query rows, copied into the output object; split: the partial state
    released (written to the partials operand), a second output object, and on part 0 the parts' states read
    back in order (states_per_object per kv object), the first copied in, the others merged (fa_merge_f32),
    fa_finish_f32 and the copy. The engine's calls, in the engine's order: tests/aie/flash_attn_plan_verify.py
    replays this program (replay_core) against a recomputation of the engine.
  - RTP words per core (the description's names): its rounds and tasks, the chunk bookkeeping (first_chunk,
    chunk_step, chunks, chunk_rows, last_rows), its part, parts, block0, n_kv, scale (fp32 bits), state_steps,
    mask_ratio, version. Every per-token value (n_kv and the blocks) is a word or a step word: no xclbin
    depends on the context length. mask_ratio is the query rows per token of a mask shared by the
    heads (n_head / n_head_kv), 0 without a mask: the host moves one mask row per token (a shim BD cannot
    repeat a row, a stride of 0 is not encodable) and the core copies each to the query rows that share it.
    Without a mask the mask rows are filler (the slopes operand's zero region) and the block programs are
    called on them as with a mask: slope x 0 added to each score. A mask per head is refused (the host path).
  - Columns: --cols, or as many as the pairs fill (min(max_columns, ceil(tasks x parts / 4)), the split over
    all 32 cores as the engine makes it, or over --max-cols' cores): a column without a task would only move filler.
  - Block steps (the profile): a task needs the blocks from block 0 up to the last one a visible position of
    its tokens lies in (--causal N0: token t sees positions 0 .. N0 + t; without a profile every block). The
    split does not change (the engine's merge order); per round a core's own steps are its part's blocks the
    task needs (0 on an idle core), a column's steps the most of its cores' own (its cores run in lockstep).
    The host writes both per round and core into the slopes operand's step table, and the q step reads them
    into the core.
  - The shim (one phase of a round in flight, each phase's BDs from all 16): the q step chain, per group of up
    to iteration_max block steps a chain per column of steps left repeated by the BDs' iteration, on a split
    round the partial states' drain and the state steps, the drain of the finished rows; a block step chain of
    more BDs than a phase has is refused. The plan's traffic counts every byte these chains move: the kv
    objects whole (fillers from the zero region), 32 K and V rows per column step of every core with blocks
    of its own, the output objects whole.

`--print-plan` prints the plan and its checks (core and memory-tile memory, DMA channels and BDs of cores,
memory tiles and shims, the description's objects against the kernel header, RTP words, barrier), the step
table (per round each column's block steps and each core's own; the block steps the rounds take in lockstep
and the busiest core's block calls) and the DRAM traffic per use. Exit status:
0 when every check passes, 1 when one fails, 2 for a shape or description the design refuses. Without
--print-plan the IRON program is emitted (mlir-aie >= 1.4).

Status, plainly: never run by mlir-aie, never compiled by aiecc, never run on an NPU; the IRON program was run
on stand-ins of IRON's classes only (tests/aie/flash_attn_iron_check.py). Unverified in particular: the views
of one kv object at word offsets passed to a kernel's pointer arguments (`view` below), element copies in a
core body, a worker holding an output object across a loop whose bound is a word of an object it has
released (kept in a scalar slot). The host's stream
builder (src/ops/flash_attn/runtime/flash-attn-sequence.cpp) builds the chains this plan counts; the simulator's stream mode
runs them.
"""

import argparse
import functools
import json
import math
import os
import re
import sys
from dataclasses import asdict, dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
AIE_DIR = os.path.normpath(os.path.join(HERE, ".."))
DEFAULT_DATAFLOW = os.path.join(HERE, "dataflow.json")
TILES_HEADER = os.path.join(AIE_DIR, "include", "xdna_aie", "flash_attn_tiles.h")

# AIE2P limits (facts of the device, as ../rope/design.py).
CORE_S2MM, CORE_MM2S = 2, 2
MEMTILE_S2MM, MEMTILE_MM2S = 6, 6
SHIM_MM2S, SHIM_S2MM = 2, 2
CORE_BDS, MEMTILE_BDS, SHIM_BDS = 16, 48, 16
CORE_LOCKS = 16
NPU2_CORE_ROWS = 4
FIFOS = ("kv_l3l2", "kv_l2l1", "out_l1l2", "out_l2l3")
OPERANDS = ("q", "k", "v", "mask", "out", "slopes", "partials")
# The regions of a kv object, in the order core_program reads them.
KV_OBJECT = {"block": ["k", "v", "mask"], "q_step": ["slopes", "q", "steps"], "state_step": ["partials"]}
RTP_NAMES = ("contract", "rounds", "tasks", "first_chunk", "chunk_step", "chunks", "chunk_rows", "last_rows", "part",
             "parts", "block0", "n_kv", "scale", "state_steps", "mask_ratio", "version")
# The layout of RTP_NAMES: the core reads its block steps from the q step, not from its words.
RTP_LAYOUT_VERSION = 3
# The q step's step words (uint32): the column's block steps this round, the core's own.
STEP_WORDS = 2
# The plan's DRAM traffic, bytes: what the shim's chains read (the sum is every kv object whole) and write
# (every output object whole).
TRAFFIC_READ = ("q", "slopes", "steps", "k", "v", "mask", "filler", "partials_read")
TRAFFIC_WRITTEN = ("out", "partials_written", "discarded")


class PlanError(Exception):
    pass


# ---------------------------------------------------------------------------------------------------
# The description
# ---------------------------------------------------------------------------------------------------
@dataclass
class Layout:
    name: str
    task_tokens: int  # the tokens a task may hold: the mask rows a block step carries
    kv_unit: str      # the unit of its kv FIFOs: "kv" (16 mask rows) or "kv_decode" (one)
    fifos: dict


@dataclass
class Description:
    path: str
    raw: dict
    fifos: dict       # the first layout's (the attention layout's)
    layouts: list = field(default_factory=list)


def load_description(path=DEFAULT_DATAFLOW):
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError) as e:
        raise PlanError(f"{path}: {e}")
    try:
        return _check_description(path, raw)
    except (KeyError, TypeError, AttributeError, StopIteration, ValueError) as e:
        raise PlanError(f"{path}: not an attention description: {type(e).__name__} {e}")


def _check_description(path, raw):
    if raw.get("format") != "xdna-dataflow" or raw.get("movement") != "attention":
        raise PlanError(f"{path}: movement {raw.get('movement')!r}: this program builds the \"attention\" movement")
    layouts = []
    for lay in raw["layouts"]:
        fifos = {f["name"]: f for f in lay["fifos"]}
        missing = [n for n in FIFOS if n not in fifos]
        if missing:
            raise PlanError(f"{path}: layout {lay['name']} lacks {', '.join(missing)}")
        # Every layout has the same FIFO graph; only the kv FIFOs' object differs (kv or kv_decode), the same in
        # both kv FIFOs since the split hands each core a slice of the memory tile's object.
        kv_unit = fifos["kv_l3l2"]["object"]["unit"]
        want = {"kv_l3l2": ("shim", "memtile", None, kv_unit), "kv_l2l1": ("memtile", "core", "split", kv_unit),
                "out_l1l2": ("core", "memtile", "join", "state"), "out_l2l3": ("memtile", "shim", None, "state")}
        if kv_unit not in ("kv", "kv_decode"):
            raise PlanError(f"{path}: layout {lay['name']}: kv FIFOs of {kv_unit} objects; this program takes kv or "
                            "kv_decode")
        for n, (a, b, link, unit) in want.items():
            f = fifos[n]
            if (f["from"], f["to"], f.get("link"), f["object"]["unit"]) != (a, b, link, unit):
                raise PlanError(f"{path}: layout {lay['name']}: fifo {n} runs {f['from']} -> {f['to']} ({f.get('link')}, "
                                f"{f['object']['unit']}); this program takes {a} -> {b} ({link}, {unit})")
        tokens = lay.get("task_tokens", raw["attention"]["max_rows"])
        if not isinstance(tokens, int):
            raise PlanError(f"{path}: layout {lay['name']}: task_tokens {tokens!r} is not a count")
        layouts.append(Layout(lay["name"], tokens, kv_unit, fifos))
    if not layouts or len({x.name for x in layouts}) != len(layouts):
        raise PlanError(f"{path}: layouts {[x.name for x in layouts]}: this program takes one or more, named apart")
    args = {o["name"]: o["arg"] for o in raw["operands"]}
    if sorted(args) != sorted(OPERANDS) or sorted(args.values()) != list(range(len(OPERANDS))):
        raise PlanError(f"{path}: operands {args}: this program takes {', '.join(OPERANDS)}, args 0..{len(OPERANDS) - 1}")
    return Description(path, raw, layouts[0].fifos, layouts)


def families_of(desc):
    return {k: v for k, v in desc.raw["families"].items() if k != "about"}


def family_tiles(desc, family):
    return sorted(int(t) for t in desc.raw["core_budget"]["kernel_stack"][family] if str(t).isdigit())


@functools.lru_cache(maxsize=None)
def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def header():
    """The constants and head-dim rules of aie/include/xdna_aie/flash_attn_tiles.h."""
    try:
        text = _read(TILES_HEADER)
    except OSError as e:
        raise PlanError(f"flash_attn_tiles.h: {e}")
    out = {}
    for name in ("kFaLanes", "kFaKvBlock", "kFaMaxRows", "kFaMaxHead"):
        m = re.search(r"constexpr\s+int\s+" + name + r"\s*=\s*(\d+)\s*;", text)
        if m is None:
            raise PlanError(f"flash_attn_tiles.h defines no {name}")
        out[name] = int(m.group(1))
    for fn, key in (("fa_head_fits", "heads"), ("fa_q8_0_head_fits", "q8_0_heads")):
        m = re.search(r"bool\s+" + fn + r"\(int d\)\s*\{\s*return\s+([^;]*);", text)
        out[key] = sorted(int(x) for x in re.findall(r"d\s*==\s*(\d+)", m.group(1))) if m else []
    return out


def row_bytes(family, d):
    """A K or V row of d values: F16 halves, or Q8_0 blocks of 34 bytes per 32 values."""
    return 2 * d if family == "f16" else d // 32 * 34


def objects(family, d, k, task_tokens=None):
    """The kv and state objects from the kernels' constants (the description's .attention.objects about): kv
    holds a block step of 16 mask rows, kv_decode one of a single mask row (a decode layout's, whose tasks hold
    one token) and as many states as kv does, so a split task takes as many state steps in either layout.
    block: a block step's bytes with task_tokens mask rows (default 16); q_step: the slopes, the query rows and
    the step words."""
    rows, blk = k["kFaMaxRows"], k["kFaKvBlock"]
    state = 4 * (2 * rows + rows * d)
    kv_rows = 2 * blk * row_bytes(family, d)
    q_step = 4 * rows * d + 4 * rows + 4 * STEP_WORDS
    kv = max(kv_rows + rows * blk * 2, q_step, state)
    kv_decode = max(kv_rows + blk * 2, q_step, kv // state * state)
    block = kv_rows + (rows if task_tokens is None else task_tokens) * blk * 2
    return {"kv": kv, "state": state, "kv_decode": kv_decode, "block": block, "q_step": q_step}


def scratch_bytes(family, d, k):
    """Per core, beside the FIFOs: the query rows and slopes, the scores, the bfp16 query operands, and on a
    Q8_0 cache the scale words (K's and V's, uint32 per row and Q8_0 block) and fa_q8_0_scratch_bytes."""
    rows, blk = k["kFaMaxRows"], k["kFaKvBlock"]
    out = {"query rows (16 x d fp32)": 4 * rows * d, "slopes (16 fp32)": 4 * rows, "scores (16 x 32 fp32)": 4 * rows * blk,
           "bfp16 query operands (fa_q_bfp16_bytes)": (d // 8) * ((rows + 7) // 8) * 3 * 72}
    if family == "q8_0":
        out["scale words (2 x d / 32 x 32 uint32)"] = 2 * 4 * (d // 32) * blk
        out["scratch (fa_q8_0_scratch_bytes)"] = (4 * (2 * blk * (d // 32)) * 2 + (d // 32) * (blk // 8) * 3 * 64 * 2 +
                                                   (blk // 8) * 4 * 64)
    return out


# ---------------------------------------------------------------------------------------------------
# The shape and the split
# ---------------------------------------------------------------------------------------------------
@dataclass
class Shape:
    d: int
    n_kv: int
    n_tokens: int = 1
    n_head: int = 32
    n_head_kv: int = 8
    n_seq: int = 1
    n_seq_kv: int = 1
    has_mask: bool = True
    mask_heads: int = 1
    scale: float = 0.0
    # The mask's profile: None, none known (every block is moved); N0, a causal mask over a cache of N0
    # earlier positions (token t, in every sequence, sees positions 0 .. N0 + t).
    causal: int = None

    @property
    def ratio(self):
        return self.n_head // self.n_head_kv

    @property
    def group_rows(self):
        return self.ratio * self.n_tokens


def split(s, cores, k):
    """flash_attn_split: chunks of equal size (at most kFaMaxRows rows), tasks, blocks, parts."""
    cores = max(1, min(cores, 32))
    gr = max(1, s.group_rows)
    chunks = (gr + k["kFaMaxRows"] - 1) // k["kFaMaxRows"]
    chunk_rows = (gr + chunks - 1) // chunks
    groups = s.n_seq * s.n_head_kv * chunks
    blocks = (s.n_kv + k["kFaKvBlock"] - 1) // k["kFaKvBlock"]
    # Fewer tasks than cores: each task's context in parts (every part at least one block), as many as the
    # cores hold, up to 4 or isqrt(2 x blocks) (past it the state steps, ceil(parts / 2) kv objects, cost a
    # core more than its blocks save). The cores take (task, part) pairs in order, so a task's parts may sit
    # in two columns.
    parts = max(1, min(cores // groups, blocks, max(4, math.isqrt(2 * blocks)))) if groups < cores else 1
    return {"chunk_rows": chunk_rows, "chunks": chunks, "groups": groups, "blocks": blocks, "parts": parts}


def pair_of(sp, columns, cpc, rnd, column, row):
    """The (task, part) core `row` of `column` takes in round `rnd`, or None: the cores of a round take the
    pairs in order (task-major), tasks_per_round = columns x cpc // parts of them, so a task's parts sit on
    consecutive cores, in one column or across two."""
    parts = sp["parts"]
    per_round = columns * cpc // parts
    i = column * cpc + row
    if i // parts >= per_round:
        return None
    g = rnd * per_round + i // parts
    return (g, i % parts) if g < sp["groups"] else None


def part_range(blocks, parts, i):
    """Part i's blocks [first, first + n): the first blocks % parts parts one block longer."""
    n = blocks // parts + (1 if i < blocks % parts else 0)
    return blocks // parts * i + min(i, blocks % parts), n


CHUNK_MAJOR, CHUNK_FASTEST = "chunk-major", "chunk-fastest"


def chunk_sharers(s):
    """The tasks that share a chunk index: one per sequence and KV head."""
    return s.n_seq * s.n_head_kv


def task_order(s, per_round, rounds):
    """Chunk-major when a round holds whole chunk indices and there is more than one round (one round holds
    every task, whatever the order); else chunk fastest, the engine's job order."""
    return CHUNK_MAJOR if rounds > 1 and per_round % chunk_sharers(s) == 0 else CHUNK_FASTEST


def task_of(s, sp, g, order):
    """Task g: (sequence, KV head, chunk, first row, rows). Chunk-major: the chunk slowest, then the KV head,
    then the sequence; chunk fastest: the engine's job order (chunk, KV head, sequence)."""
    if order == CHUNK_MAJOR:
        chunk, r = divmod(g, chunk_sharers(s))
        seq, kv = divmod(r, s.n_head_kv)
    else:
        chunk = g % sp["chunks"]
        kv = (g // sp["chunks"]) % s.n_head_kv
        seq = g // (sp["chunks"] * s.n_head_kv)
    row0 = chunk * sp["chunk_rows"]
    return seq, kv, chunk, row0, min(sp["chunk_rows"], s.group_rows - row0)


def row_runs(s, row0, rows):
    """A task's query rows as BD runs: per token its heads (a run of consecutive heads), whole tokens of
    all the KV head's heads merged into one run of tokens (a 3-D pattern: d values, heads, tokens)."""
    per_token = []
    for i in range(row0, row0 + rows):
        t, h = divmod(i, s.ratio)
        if per_token and per_token[-1][0] == t:
            per_token[-1][2] += 1
        else:
            per_token.append([t, h, 1])
    runs = []
    for t, h, n in per_token:
        whole = h == 0 and n == s.ratio
        if runs and whole and runs[-1]["whole"]:
            runs[-1]["tokens"] += 1
        else:
            runs.append({"token": t, "head": h, "heads": n, "tokens": 1, "whole": whole})
    return runs


def task_tokens(s, row0, rows):
    """The tokens a task's rows belong to: the mask rows its block steps carry (one per token)."""
    return (row0 + rows - 1) // s.ratio - row0 // s.ratio + 1


def task_need(s, sp, row0, rows, blk):
    """The blocks, from block 0, a task must compute: up to the last one a visible position of its tokens lies
    in. Its last token sees the most (a causal mask), so it alone counts; without a profile every block."""
    if s.causal is None:
        return sp["blocks"]
    last_token = (row0 + rows - 1) // s.ratio
    return min(sp["blocks"], (s.causal + last_token) // blk + 1)


def chunk_words(s, sp, slot, per_round, order):
    """A core's first_chunk and chunk_step: the chunk of its round-0 slot's task and the chunks a round moves
    it on (modulo chunks). Chunk-major: slot // G and per_round // G, since task k per_round + slot is chunk
    k per_round // G + slot // G; chunk fastest: slot and per_round modulo chunks."""
    if order == CHUNK_MAJOR:
        return slot // chunk_sharers(s), per_round // chunk_sharers(s)
    return slot % sp["chunks"], per_round % sp["chunks"]


def core_steps(s, sp, pair, blk, order):
    """A core's own block steps in a round: the blocks of its part its task needs (its part's first ones,
    since a task needs blocks from block 0 on); 0 on a core without a pair."""
    if pair is None:
        return 0
    g, part = pair
    _, _, _, row0, rows = task_of(s, sp, g, order)
    first, n = part_range(sp["blocks"], sp["parts"], part)
    return max(0, min(task_need(s, sp, row0, rows, blk) - first, n))


def step_table(s, sp, columns, cpc, rounds, blk, order):
    """Per round, each core's own block steps (cores in stream order) and each column's: the most of its
    cores' own, since the column's cores take its block objects in lockstep."""
    own, col_steps = [], []
    for rnd in range(rounds):
        mine = [core_steps(s, sp, pair_of(sp, columns, cpc, rnd, c, r), blk, order)
                for c in range(columns) for r in range(cpc)]
        own.append(mine)
        col_steps.append([max(mine[c * cpc:(c + 1) * cpc]) for c in range(columns)])
    return own, col_steps


def step_words(p):
    """The slopes operand's step table as the host writes it: per round k and core i of the stream, at
    2 (k cores + i), the column's block steps and the core's own."""
    return [w for rnd in range(p.rounds) for i, core in enumerate(p.cores)
            for w in (p.col_steps[rnd][core["column"]], p.own[rnd][i])]


def slopes_layout(s, kv_bytes, rounds, cores_used):
    """The host-written slopes operand: per KV head 16 + ratio fp32 slopes, value i that of head
    g ratio + i % ratio, so that any 16 consecutive rows of the KV head's tasks read theirs as one run;
    then, 64-byte aligned, kv_bytes of zeros (the largest kv object of any layout: one operand for every
    layout), every filler's source; then the step table, a core's step words per round and core (they depend
    on the stream, so they are written with it)."""
    per_head = 16 + s.ratio
    zero_at = (4 * s.n_head_kv * per_head + 63) // 64 * 64
    steps_at = zero_at + kv_bytes
    return {"per KV head": per_head, "zero region at": zero_at, "zero region bytes": kv_bytes,
            "steps_offset": steps_at, "step words": STEP_WORDS * rounds * cores_used,
            "bytes": steps_at + 4 * STEP_WORDS * rounds * cores_used}


def step_words_at(p, rnd, core):
    """The byte offset of core `core`'s step words of round `rnd` in the slopes operand."""
    return p.slopes["steps_offset"] + 4 * STEP_WORDS * (rnd * len(p.cores) + core)


def slope_index(s, kv_head, row0):
    """The value a task's first slope is read from: its first row's head, in its KV head's run."""
    return kv_head * (16 + s.ratio) + row0 % s.ratio


# ---------------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------------
@dataclass
class Plan:
    dataflow: str
    family: str
    contract: str
    contract_index: int
    tile: int
    columns: int
    layout: str        # the description's layout the stream takes (its kv FIFOs' object, its task_tokens)
    shape: dict
    split: dict
    objects: dict      # kv: the layout's kv object (kv or kv_decode), the bytes of every input object
    task_tokens: int = 0
    tasks_per_round: int = 0
    rounds: int = 0
    task_order: str = CHUNK_FASTEST  # chunk-major or chunk-fastest: which task g is (task_of)
    states_per_object: int = 0
    steps: dict = field(default_factory=dict)
    col_steps: list = field(default_factory=list)  # per round, per column: its block steps
    own: list = field(default_factory=list)        # per round, per core: its own block steps (block calls)
    cores: list = field(default_factory=list)      # per core: column, row, RTP words
    core_bytes: dict = field(default_factory=dict)
    memtile_bytes: dict = field(default_factory=dict)
    channels: dict = field(default_factory=dict)
    bds: dict = field(default_factory=dict)
    traffic: dict = field(default_factory=dict)
    slopes: dict = field(default_factory=dict)
    partials_bytes: int = 0
    stack_bytes: int = 0
    checks: list = field(default_factory=list)


def largest_task_tokens(s, sp):
    """The most tokens any task holds: tasks differ only in their chunk."""
    return max(task_tokens(s, c * sp["chunk_rows"], min(sp["chunk_rows"], s.group_rows - c * sp["chunk_rows"]))
               for c in range(sp["chunks"]))


def choose_layout(desc, s, sp, name=None):
    """The layout with the fewest task_tokens that holds the largest task's tokens (the first such in the
    description), or the one named, refused when its objects cannot carry a task's mask rows."""
    need = largest_task_tokens(s, sp)
    if name is not None:
        lay = next((x for x in desc.layouts if x.name == name), None)
        if lay is None:
            raise PlanError(f"--layout {name}: the description has layouts {', '.join(x.name for x in desc.layouts)}")
        if lay.task_tokens < need:
            raise PlanError(f"--layout {name}: its tasks hold {lay.task_tokens} token(s), this shape's largest task "
                            f"has {need}")
        return lay
    fits = [x for x in desc.layouts if x.task_tokens >= need]
    if not fits:
        raise PlanError(f"no layout holds a task of {need} token(s) (task_tokens "
                        f"{[(x.name, x.task_tokens) for x in desc.layouts]})")
    return min(fits, key=lambda x: x.task_tokens)


def make_plan(desc, family=None, d=128, shape=None, columns=None, contract=0, layout=None, max_columns=None):
    raw = desc.raw
    families = families_of(desc)
    family = family or next(iter(families))
    if family not in families:
        raise PlanError(f"unknown family {family!r} ({', '.join(families)})")
    if d not in family_tiles(desc, family):
        raise PlanError(f"family {family} has no xclbin for head dim {d} (it has {family_tiles(desc, family)})")
    if not 0 <= contract < len(families[family]):
        raise PlanError(f"contract {contract}: family {family} has {len(families[family])} programs")
    s = shape or Shape(d=d, n_kv=256)
    s.d = d
    if (s.n_kv < 1 or s.n_tokens < 1 or s.n_head_kv < 1 or s.n_head % s.n_head_kv or s.n_seq_kv < 1 or
            s.n_seq % s.n_seq_kv or (s.has_mask and s.mask_heads < 1)):
        raise PlanError(f"{s.n_tokens} token(s), {s.n_head}/{s.n_head_kv} heads, {s.n_seq}/{s.n_seq_kv} sequences, "
                        f"{s.n_kv} KV rows: not a shape the design takes")
    if s.causal is not None and not s.has_mask:
        raise PlanError(f"--causal {s.causal}: a causal profile describes a mask, and this shape has none")
    if s.causal is not None and not 0 <= s.causal <= s.n_kv - s.n_tokens:
        raise PlanError(f"--causal {s.causal}: {s.causal} earlier positions and {s.n_tokens} token(s) need at least "
                        f"{s.causal + s.n_tokens} KV rows, this shape has {s.n_kv}" if s.causal >= 0 else
                        f"--causal {s.causal}: the earlier positions are a count (0 or more)")
    if s.has_mask and s.mask_heads > 1:
        # The core widens one row per token to the token's heads; rows that differ per head would need a
        # BD per query row and block.
        raise PlanError(f"a mask of {s.mask_heads} heads: a mask per head is not this design's (the host path)")
    arr = raw["array"]
    if columns is not None and not 1 <= columns <= arr["max_columns"]:
        raise PlanError(f"--cols {columns}: npu2 has 1..{arr['max_columns']} columns")
    if max_columns is not None and not 1 <= max_columns <= arr["max_columns"]:
        raise PlanError(f"--max-cols {max_columns}: npu2 has 1..{arr['max_columns']} columns")
    k = header()
    att = raw["attention"]
    cpc = att["cores_per_column"]
    # Without --cols the split is the engine's over every core, and the stream takes only the columns its
    # tasks fill (the rest would move filler only).
    # --max-cols (a design whose other columns have other roles): the split over those columns' cores, the
    # stream on the ones its tasks fill.
    usable = columns if columns is not None else (max_columns if max_columns is not None else arr["max_columns"])
    sp = split(s, usable * cpc, k)
    if columns is None:
        columns = min(usable, math.ceil(sp["groups"] * sp["parts"] / cpc))
    lay = choose_layout(desc, s, sp, layout)
    obj = objects(family, d, k)
    described = att["objects"][family][str(d)]
    if lay.kv_unit not in described:
        raise PlanError(f"layout {lay.name}: family {family} head dim {d} has no {lay.kv_unit} object")
    # The layout's kv object is every input object's size: its bytes are the description's (checked below
    # against the kernels'), its block step the one of task_tokens mask rows.
    kv_bytes = described[lay.kv_unit]
    p = Plan(dataflow=desc.path, family=family, contract=families[family][contract], contract_index=contract, tile=d,
             columns=columns, layout=lay.name, shape=asdict(s), split=sp,
             objects={"kv": kv_bytes, "state": obj["state"],
                      "block": objects(family, d, k, lay.task_tokens)["block"], "q_step": obj["q_step"]},
             task_tokens=lay.task_tokens)
    check = lambda what, ok, detail: p.checks.append((what, bool(ok), detail))

    # The description against the kernel header.
    units = ["kv", "state"] + (["kv_decode"] if "kv_decode" in described or
                               any(x.kv_unit == "kv_decode" for x in desc.layouts) else [])
    kernels_objs = {u: obj[u] for u in units}
    check("objects: the description's kv and state are the kernels'", described == kernels_objs,
          f"described {described}, from flash_attn_tiles.h kv {obj['kv']} (block {obj['block']}, q step {obj['q_step']}, "
          f"state {obj['state']}), state {obj['state']}" +
          (f", kv_decode {obj['kv_decode']} (a block step of one mask row "
           f"{objects(family, d, k, 1)['block']}, {obj['kv'] // obj['state']} states)" if "kv_decode" in units else ""))
    every = [(f, t, u, v) for f, per in att["objects"].items() for t, o in per.items() for u, v in o.items()]
    check("objects: whole 32-bit words (a shim BD and the split address words)",
          all(isinstance(v, int) and v > 0 and v % 4 == 0 for _, _, _, v in every),
          f"{[(f, t, u, v) for f, t, u, v in every if not (isinstance(v, int) and v > 0 and v % 4 == 0)] or 'all'}")
    bad_tokens = [(x.name, x.kv_unit, x.task_tokens) for x in desc.layouts
                  if x.task_tokens < 1 or (x.kv_unit == "kv" and x.task_tokens != k["kFaMaxRows"]) or
                  (x.kv_unit == "kv_decode" and x.task_tokens != 1)]
    check("layouts: task_tokens the objects carry (kv: 16 mask rows, kv_decode: one)", not bad_tokens,
          f"{[(x.name, x.kv_unit, x.task_tokens) for x in desc.layouts]}")
    spo_of = {x.name: described[x.kv_unit] // obj["state"] for x in desc.layouts if x.kv_unit in described}
    check("layouts: the same states per kv object in every layout (as many state steps)", len(set(spo_of.values())) == 1,
          f"{spo_of}")
    check(f"kv object of layout {lay.name}: holds a block step of {lay.task_tokens} mask row(s), the q step and a state",
          kv_bytes >= max(p.objects["block"], obj["q_step"], obj["state"]),
          f"{lay.kv_unit} {kv_bytes}, block {p.objects['block']} (a tail of {kv_bytes - p.objects['block']} filler), "
          f"q step {obj['q_step']}, state {obj['state']}")
    heads = k["heads"] if family == "f16" else k["q8_0_heads"]
    check(f"family {family} tiles: head dims the programs take", family_tiles(desc, family) == heads,
          f"{family_tiles(desc, family)}; {'fa_head_fits' if family == 'f16' else 'fa_q8_0_head_fits'} {heads}")
    layout = {n: att["kv_object"][n] for n in ("block", "q_step", "state_step")}
    check("kv object layout: the core program's", layout == KV_OBJECT,
          f"{layout}; the core program takes {KV_OBJECT} (K at 0, V at 32 rows, the mask at 64; the slopes, "
          "then the query rows, then the step words; the states in part order)")
    check("kv object: a block step fills it (the shim's block chain moves no tail)", obj["block"] == obj["kv"],
          f"block {obj['block']}, kv {obj['kv']}")
    check("attention constants: the kernels'", (att["kv_block"], att["max_rows"], att["lanes"]) ==
          (k["kFaKvBlock"], k["kFaMaxRows"], k["kFaLanes"]),
          f"kv_block {att['kv_block']}, max_rows {att['max_rows']}, lanes {att['lanes']}; header {k['kFaKvBlock']}, "
          f"{k['kFaMaxRows']}, {k['kFaLanes']}")
    check("array: 4 cores per column, the split's", arr["core_rows"] == cpc == 4 and arr["core_rows"] <= NPU2_CORE_ROWS,
          f"core_rows {arr['core_rows']}, cores_per_column {cpc}")
    written = [o for o in raw.get("host_written", {}) if o != "about"]
    check("host_written: the slopes, and only they", written == ["slopes"], f"{written}")
    scratch = [o for o in raw.get("device_scratch", {}) if o != "about"]
    check("device_scratch: the partial states, and only they", scratch == ["partials"], f"{scratch}")

    # Placement and rounds.
    parts = sp["parts"]
    p.tasks_per_round = columns * cpc // parts
    p.rounds = math.ceil(sp["groups"] / p.tasks_per_round)
    p.task_order = task_order(s, p.tasks_per_round, p.rounds)
    p.states_per_object = kv_bytes // obj["state"]
    state_steps = 0 if parts == 1 else math.ceil(parts / p.states_per_object)
    p.own, p.col_steps = step_table(s, sp, columns, cpc, p.rounds, k["kFaKvBlock"], p.task_order)
    p.steps = {"q": 1, "blocks (most of a column and round)": max(max(x) for x in p.col_steps),
               "lockstep block steps": sum(max(x) for x in p.col_steps),
               "block calls (busiest core)": max(sum(x[i] for x in p.own) for i in range(columns * cpc)),
               "column block steps": sum(sum(x) for x in p.col_steps), "states": state_steps,
               "out objects per round": 1 if parts == 1 else 2}
    _need_checks(s, sp, p, cpc, k["kFaKvBlock"], check)
    version = raw["core_program"]["rtp_layout_version"]
    for c in range(columns):
        for r in range(cpc):
            first = pair_of(sp, columns, cpc, 0, c, r)
            active = first is not None
            part = first[1] if active else 0
            tasks = sum(1 for kk in range(p.rounds) if pair_of(sp, columns, cpc, kk, c, r) is not None)
            b0 = part_range(sp["blocks"], parts, part)[0] if active else 0
            first_chunk, chunk_step = chunk_words(s, sp, (c * cpc + r) // parts, p.tasks_per_round, p.task_order)
            words = {"contract": contract, "rounds": p.rounds, "tasks": tasks,
                     "first_chunk": first_chunk, "chunk_step": chunk_step, "chunks": sp["chunks"],
                     "chunk_rows": sp["chunk_rows"],
                     "last_rows": s.group_rows - (sp["chunks"] - 1) * sp["chunk_rows"], "part": part if active else 0,
                     "parts": parts, "block0": b0, "n_kv": s.n_kv, "scale": s.scale, "state_steps": state_steps,
                     "mask_ratio": s.ratio if s.has_mask else 0,
                     "version": version}
            p.cores.append({"column": c, "row": arr["first_core_row"] + r, "task": first[0] if active else None,
                            "words": words})
    _order_checks(s, sp, p, cpc, check)
    idx = raw["core_program"]["rtp_words"]
    check("RTP words: the core program's, distinct, within the word count",
          sorted(idx) == sorted(RTP_NAMES) and sorted(idx.values()) == list(range(raw["core_program"]["rtp_word_count"])),
          f"{len(idx)} words of {raw['core_program']['rtp_word_count']}")
    check(f"RTP words: layout version {RTP_LAYOUT_VERSION} (the block steps in the q step's step words)",
          version == RTP_LAYOUT_VERSION, f"rtp_layout_version {version}")
    check("RTP words: scale as fp32 bits, the others counts",
          raw["core_program"].get("rtp_float_words") == ["scale"], f"rtp_float_words {raw['core_program'].get('rtp_float_words')}")
    wmax = raw["core_program"]["rtp_word_max"]
    big = max(v for c in p.cores for n, v in c["words"].items() if n != "scale")
    check("RTP words fit the core's int32 words", big <= wmax <= 2 ** 31 - 1, f"largest {big} <= {wmax}")
    _barrier_checks(raw["core_program"]["barrier"], check)

    # Core memory: the FIFOs' objects, the core's own buffers, the RTP words, the stack.
    fifo = lay.fifos
    budget = raw["core_budget"]
    p.stack_bytes = budget["kernel_stack"][family][str(d)]
    p.core_bytes = {f"kv_l2l1 ({fifo['kv_l2l1']['depth']} x {lay.kv_unit})": fifo["kv_l2l1"]["depth"] * kv_bytes,
                    f"out_l1l2 ({fifo['out_l1l2']['depth']} x state)": fifo["out_l1l2"]["depth"] * obj["state"]}
    p.core_bytes.update(scratch_bytes(family, d, k))
    if mask_apart(p, k):
        # The object carries fewer mask rows than the block programs read (one per query row): the core widens
        # them into a buffer of its own.
        p.core_bytes["mask rows (16 x 32 halves)"] = k["kFaMaxRows"] * k["kFaKvBlock"] * 2
    p.core_bytes["RTP words"] = 4 * raw["core_program"]["rtp_word_count"]
    p.core_bytes["stack"] = p.stack_bytes
    p.core_bytes["kernels' static data"] = budget["kernel_data_bytes"]
    total = sum(p.core_bytes.values())
    rtp_at = raw["core_program"]["rtp_core_address"]
    check("core data memory", total <= budget["core_data_bytes"] and budget["core_data_bytes"] <= 65536,
          f"{total} of {budget['core_data_bytes']} bytes")
    below = total - p.core_bytes["RTP words"]
    check("RTP words above the core's other data", below <= rtp_at and
          rtp_at + p.core_bytes["RTP words"] <= budget["core_data_bytes"],
          f"{below} bytes below the words at {rtp_at}, the words' end {rtp_at + p.core_bytes['RTP words']}")
    l2 = raw["depths"]["l2"]
    p.memtile_bytes = {f"kv_l3l2 ({l2} x 4 {lay.kv_unit})": l2 * 4 * kv_bytes,
                       f"out_l2l3 ({l2} x 4 state)": l2 * 4 * obj["state"]}
    check("memory tile data memory", sum(p.memtile_bytes.values()) <= budget["memtile_bytes"] <= 524288,
          f"{sum(p.memtile_bytes.values())} of {budget['memtile_bytes']} bytes")

    # DMA channels (per column) and BDs (per tile) of the FIFO graph: one BD per buffer of a FIFO end.
    p.channels = {"core S2MM": (1, CORE_S2MM), "core MM2S": (1, CORE_MM2S), "memtile S2MM": (1 + cpc, MEMTILE_S2MM),
                  "memtile MM2S": (cpc + 1, MEMTILE_MM2S), "shim MM2S": (1, SHIM_MM2S), "shim S2MM": (1, SHIM_S2MM)}
    for name, (used, avail) in p.channels.items():
        check(f"DMA channels: {name}", used <= avail, f"{used} of {avail}")
    core_bds = fifo["kv_l2l1"]["depth"] + fifo["out_l1l2"]["depth"]
    mem_bds = l2 + cpc * l2 + cpc * l2 + l2  # kv in, kv parts out, out parts in, out to the shim
    check("core BDs", core_bds <= CORE_BDS, f"{core_bds} of {CORE_BDS}")
    check("memory tile BDs", mem_bds <= MEMTILE_BDS, f"{mem_bds} of {MEMTILE_BDS}")
    locks = 2 * 2  # a producer/consumer pair per FIFO end on the core, the barrier apart
    check("core locks", locks + 1 <= CORE_LOCKS, f"{locks} for the FIFOs and the barrier's")
    _shim_plan(desc, p, s, sp, k, check)
    return p


def _need_checks(s, sp, p, cpc, blk, check):
    """Every task's parts compute, between them, exactly the blocks it needs, each once (the parts' ranges
    are consecutive from block 0 and a core computes its range's first own blocks), and every column takes
    as many block objects as its busiest core computes."""
    computed = [0] * sp["groups"]
    for rnd in range(p.rounds):
        for i in range(p.columns * cpc):
            pair = pair_of(sp, p.columns, cpc, rnd, i // cpc, i % cpc)
            if pair is not None:
                computed[pair[0]] += p.own[rnd][i]
    need = [task_need(s, sp, *task_of(s, sp, g, p.task_order)[3:], blk) for g in range(sp["groups"])]
    wrong = [(g, computed[g], need[g]) for g in range(sp["groups"]) if computed[g] != need[g]]
    check("steps: each task's parts compute the blocks it needs (the profile's), each once", not wrong,
          f"{wrong[:4] or 'all'} (task, computed, needed); needed from {min(need)} to {max(need)} of "
          f"{sp['blocks']} blocks")
    short = [(rnd, c) for rnd in range(p.rounds) for c in range(p.columns)
             if p.col_steps[rnd][c] != max(p.own[rnd][c * cpc:(c + 1) * cpc])]
    check("steps: a column's block steps are its busiest core's", not short, f"{short[:4] or 'all'}")


def counted_chunks(words, rounds):
    """The chunk a core's program takes each round from its words: first_chunk, then chunk_step added a
    round, chunks taken off once past the last (core_program's counting)."""
    chunk, out = words["first_chunk"], []
    for _ in range(rounds):
        out.append(chunk)
        chunk += words["chunk_step"]
        if chunk >= words["chunks"]:
            chunk -= words["chunks"]
    return out


def _order_checks(s, sp, p, cpc, check):
    """The task order places every task once, and each core's chunk counting (its words) lands on its task's
    chunk in every round it has one: the core knows its task only by that count."""
    placed, off = [], []
    for i, core in enumerate(p.cores):
        counted = counted_chunks(core["words"], p.rounds)
        for rnd in range(p.rounds):
            pair = pair_of(sp, p.columns, cpc, rnd, i // cpc, i % cpc)
            if pair is None:
                continue
            seq, kv, chunk = task_of(s, sp, pair[0], p.task_order)[:3]
            if pair[1] == 0:
                placed.append((seq, kv, chunk))
            if counted[rnd] != chunk:
                off.append((rnd, i, counted[rnd], chunk))
    every = [(q, h, c) for q in range(s.n_seq) for h in range(s.n_head_kv) for c in range(sp["chunks"])]
    check(f"placement ({p.task_order}): every task (sequence, KV head, chunk) placed once", sorted(placed) == every,
          f"{len(placed)} placed, {len(set(placed))} distinct, of {len(every)}")
    check("placement: each core's chunk counting (first_chunk, chunk_step, modulo chunks) gives its tasks' chunks",
          not off, f"{off[:4] or 'all'} (round, core, counted, its task's)")


def mask_apart(p, k):
    """Whether the core widens the mask rows into a buffer of its own: its layout's kv object carries fewer
    mask rows than a core's query rows, no room to widen them in place."""
    return p.task_tokens < k["kFaMaxRows"]


def _barrier_checks(bar, check):
    equal = bar["acquire"]["mode"] == "equal"
    after = (bar["set_value"] if equal else bar["set_value"] - bar["acquire"]["value"]) + bar["release"]["value"]
    check("barrier: the core waits as IRON's wait_for_value does", equal, f"acquire {bar['acquire']['mode']}")
    check("barrier: the sequence's set opens the core's wait", bar["set_value"] == bar["acquire"]["value"],
          f"set {bar['set_value']}, wait {bar['acquire']['value']}")
    check("barrier: released after the RTP words are read", bar["release"]["value"] > 0 and after != bar["acquire"]["value"],
          f"lock after a pass {after}")


@dataclass(frozen=True)
class Bd:
    """A shim BD of a chain: the traffic use its bytes count as and its bytes per step; a step-words BD its byte
    offset in the slopes operand; a K, V or mask BD the block its first step reads and the blocks its iteration
    steps over before it wraps (a chain repeated past them rereads them)."""
    use: str
    bytes: int
    at: int = None
    first: int = None
    iterations: int = None


@dataclass
class Phase:
    """The chains of one phase of a round: per column taking part, (column, the times its chain repeats, per
    core its BDs); block phases and state steps also name their first step."""
    kind: str   # "q", "block", "partials drain", "state" or "drain"
    round: int
    step: int
    columns: list


def _q_bds(p, s, sp, pair, at, k):
    """A core's q step: its slopes, its query rows by runs and their filler, its step words (the slopes
    operand's table, its own entry), the rest of the object filler; a core without a task the step words
    alone between fillers (it still takes its column's block objects)."""
    rows_max, d, kv_obj = k["kFaMaxRows"], p.tile, p.objects["kv"]
    words = Bd("steps", 4 * STEP_WORDS, at=at)
    room = 4 * rows_max + 4 * rows_max * d  # the slopes and the query rows a q step has room for
    rest = [Bd("filler", kv_obj - room - words.bytes)] if kv_obj > room + words.bytes else []
    if pair is None:
        return [Bd("filler", room), words] + rest
    _, _, _, row0, rows = task_of(s, sp, pair[0], p.task_order)
    bds = [Bd("slopes", 4 * rows_max)]
    bds += [Bd("q", 4 * d * run["heads"] * run["tokens"]) for run in row_runs(s, row0, rows)]
    if rows < rows_max:
        bds.append(Bd("filler", 4 * d * (rows_max - rows)))
    return bds + [words] + rest


def _block_bds(p, s, sp, pair, own, s0, n, k):
    """A core's BDs of a block phase whose group starts at step s0 and repeats n times: K, V and the mask
    rows of its task's tokens stepping over its own blocks from s0 on (past its own, rereading its part's
    first block), or one filler BD on a core that computes none."""
    kv_obj = p.objects["kv"]
    if pair is None or own == 0:
        return [Bd("filler", kv_obj)]
    blk, rb = k["kFaKvBlock"], row_bytes(p.family, p.tile)
    first = part_range(sp["blocks"], sp["parts"], pair[1])[0]
    base, iterations = (first + s0, min(n, own - s0)) if s0 < own else (first, 1)
    rows_bd = lambda use, nbytes: Bd(use, nbytes, first=base, iterations=iterations)
    bds = [rows_bd("k", blk * rb), rows_bd("v", blk * rb)]
    # Past K, V and the task_tokens mask rows: a decode object's tail (padded to hold as many states as the
    # attention layout's), read with the mask rows' filler in one BD.
    mask_row = 2 * blk
    tail = kv_obj - p.objects["block"]
    if not s.has_mask:
        return bds + [Bd("filler", p.task_tokens * mask_row + tail)]
    _, _, _, row0, rows = task_of(s, sp, pair[0], p.task_order)
    tokens = task_tokens(s, row0, rows)
    rest = (p.task_tokens - tokens) * mask_row + tail
    return bds + [rows_bd("mask", tokens * mask_row)] + ([Bd("filler", rest)] if rest > 0 else [])


def _state_bds(p, sp, pair, j):
    """A core's BDs of state step j: on a task's part 0 the parts' partial states it carries and filler, one
    filler BD on any other core."""
    kv_obj, st, spo = p.objects["kv"], p.objects["state"], p.states_per_object
    if pair is None or pair[1] != 0:
        return [Bd("filler", kv_obj)]
    n = min(spo, sp["parts"] - j * spo)
    return [Bd("partials_read", n * st)] + ([Bd("filler", kv_obj - n * st)] if kv_obj > n * st else [])


def _drain_bds(p, s, sp, pair):
    """A core's output object drained: on a task's part 0 its finished rows by runs, then the bytes past them;
    any other core's discarded whole (its partial state went out with the partial states' drain)."""
    st, d = p.objects["state"], p.tile
    if pair is None or pair[1] != 0:
        return [Bd("discarded", st)]
    _, _, _, row0, rows = task_of(s, sp, pair[0], p.task_order)
    return [Bd("out", 4 * d * run["heads"] * run["tokens"]) for run in row_runs(s, row0, rows)] + \
        [Bd("discarded", st - 4 * d * rows)]


def shim_phases(p, s, it_max):
    """The shim's phases of every round, in the order the stream issues them, each column's chain per core.
    A round's block steps go in groups of at most it_max (a BD's iteration limit); a group's phase takes the
    columns with steps left, each repeating its chain over its own steps of the group, and syncs them all."""
    k, sp, cpc = header(), p.split, len(p.cores) // p.columns
    pairs = lambda rnd, c: [pair_of(sp, p.columns, cpc, rnd, c, r) for r in range(cpc)]
    out = []
    for rnd in range(p.rounds):
        out.append(Phase("q", rnd, 0, [
            (c, 1, [_q_bds(p, s, sp, pair, step_words_at(p, rnd, c * cpc + r), k)
                    for r, pair in enumerate(pairs(rnd, c))]) for c in range(p.columns)]))
        for s0 in range(0, max(p.col_steps[rnd]), it_max):
            group = []
            for c in range(p.columns):
                n = min(it_max, p.col_steps[rnd][c] - s0)
                if n > 0:
                    group.append((c, n, [_block_bds(p, s, sp, pair, p.own[rnd][c * cpc + r], s0, n, k)
                                         for r, pair in enumerate(pairs(rnd, c))]))
            out.append(Phase("block", rnd, s0, group))
        if sp["parts"] > 1:
            # The column's 4 partial states, one S2MM BD, before any state step reads them back.
            out.append(Phase("partials drain", rnd, 0,
                             [(c, 1, [[Bd("partials_written", cpc * p.objects["state"])]]) for c in range(p.columns)]))
        for j in range(p.steps["states"]):
            out.append(Phase("state", rnd, j, [(c, 1, [_state_bds(p, sp, pair, j) for pair in pairs(rnd, c)])
                                               for c in range(p.columns)]))
        out.append(Phase("drain", rnd, 0, [(c, 1, [_drain_bds(p, s, sp, pair) for pair in pairs(rnd, c)])
                                           for c in range(p.columns)]))
    return out


def _shim_plan(desc, p, s, sp, k, check):
    """The shim's BD chains per phase of a round (one phase in flight, each from all of the phase's BD ids) and
    the DRAM traffic they make: every kv object moved whole, the bytes without data read from the slopes
    operand's zero region, every output object drained whole."""
    raw = desc.raw
    slots = raw["shim"]["bd_slots"]
    if len(slots) != 1 or sorted(slots[0]) != ["phase"]:
        raise PlanError(f"shim.bd_slots {slots}: this design takes one slot, the BD ids of a phase")
    phase_ids = slots[0]["phase"]
    ids = len(phase_ids)
    shim_bds = min(raw["shim"]["bds"], SHIM_BDS)
    check("shim: a phase's BD ids are the shim tile's, distinct, one phase in flight",
          len(set(phase_ids)) == ids and all(0 <= i < shim_bds for i in phase_ids) and
          raw["shim"]["steps_in_flight"] == 1, f"{ids} ids {phase_ids} of {shim_bds}, "
          f"{raw['shim']['steps_in_flight']} phase(s) in flight")
    blk, rb, d, parts = k["kFaKvBlock"], row_bytes(p.family, p.tile), p.tile, sp["parts"]
    kv_obj, st, cpc = p.objects["kv"], p.objects["state"], len(p.cores) // p.columns
    # The zero region serves every layout's fillers: the largest kv object of the family and head dim.
    described = raw["attention"]["objects"][p.family][str(d)]
    p.slopes = slopes_layout(s, max(described.get(x.kv_unit, 0) for x in desc.layouts), p.rounds, len(p.cores))
    p.partials_bytes = p.columns * 8 * st
    it_max = raw["limits"]["iteration_max"]
    phases = shim_phases(p, s, it_max)
    moved = dict.fromkeys(TRAFFIC_READ + TRAFFIC_WRITTEN, 0)
    longest = dict.fromkeys(("q", "block", "state", "drain"), 0)
    torn = []  # (phase, round, column, core, bytes) of an object its BDs do not move whole
    for ph in phases:
        whole = st if ph.kind == "drain" else kv_obj
        for c, repeat, cores in ph.columns:
            for r, bds in enumerate(cores):
                for bd in bds:
                    moved[bd.use] += repeat * bd.bytes
                if ph.kind != "partials drain" and sum(bd.bytes for bd in bds) != whole:
                    torn.append((ph.kind, ph.round, c, r, sum(bd.bytes for bd in bds)))
            if ph.kind in longest:
                longest[ph.kind] = max(longest[ph.kind], sum(len(bds) for bds in cores))
    check("shim: every core's BDs of a step move its object whole", not torn, f"{torn[:4] or 'all'}")
    if longest["block"] > ids:
        # The chain repeats over the steps by the BDs' iteration: split into tasks it would need one per step.
        raise PlanError(f"a block step's chain takes {longest['block']} BDs, a phase has {ids}: a block step "
                        "longer than a phase is not this design's (the host path)")
    block_phases = [sum(1 for ph in phases if ph.kind == "block" and ph.round == rnd) for rnd in range(p.rounds)]
    p.bds = {"phase BD ids": ids,
             "q step chain (largest)": longest["q"], "q step tasks (largest)": math.ceil(longest["q"] / ids),
             "block step chain (largest)": longest["block"],
             "block phases": sum(block_phases), "block phases in a round (most)": max(block_phases),
             "state step chain (largest)": longest["state"],
             "partial states drain chain": 1 if parts > 1 else 0,
             "drain chain (largest)": longest["drain"], "drain tasks (largest)": math.ceil(longest["drain"] / ids)}
    p.traffic = dict(moved)
    p.traffic["read"] = sum(moved[x] for x in TRAFFIC_READ)
    p.traffic["written"] = sum(moved[x] for x in TRAFFIC_WRITTEN)
    rows_all = s.n_seq * s.n_head * s.n_tokens
    check("traffic: every query row read once per part of its task, every output row written once",
          moved["q"] == 4 * rows_all * d * parts and moved["out"] == 4 * rows_all * d,
          f"q {moved['q']}, out {moved['out']} bytes of {rows_all} rows, {parts} part(s)")
    check("traffic: every core's step words read once a round",
          moved["steps"] == 4 * STEP_WORDS * p.rounds * len(p.cores) == p.slopes["bytes"] - p.slopes["steps_offset"],
          f"steps {moved['steps']} bytes, {p.rounds} round(s) x {len(p.cores)} cores, the table "
          f"{p.slopes['bytes'] - p.slopes['steps_offset']} bytes")
    computing = sum(p.col_steps[rnd][c] * sum(1 for x in p.own[rnd][c * cpc:(c + 1) * cpc] if x > 0)
                    for rnd in range(p.rounds) for c in range(p.columns))
    check("traffic: every core with blocks of its own reads 32 K and V rows per step of its column",
          moved["k"] == moved["v"] == computing * blk * rb,
          f"k {moved['k']}, v {moved['v']} bytes: {computing} core step(s) x {blk} rows x {rb} bytes")
    objects_in = sum(cpc * (1 + x + p.steps["states"]) for per_round in p.col_steps for x in per_round)
    objects_out = p.columns * p.rounds * cpc * p.steps["out objects per round"]
    check("traffic: every kv object read whole, every output object written whole",
          p.traffic["read"] == objects_in * kv_obj and p.traffic["written"] == objects_out * st,
          f"read {p.traffic['read']} = {objects_in} x {kv_obj}, written {p.traffic['written']} = {objects_out} x {st}")


# ---------------------------------------------------------------------------------------------------
# The core program, written once: traced by IRON (emit_mlir) and run on a shape's RTP words (replay_core)
# ---------------------------------------------------------------------------------------------------
def core_program(ops, words, kv_in, out, bufs, d, family, spo, k, apart=False):
    """One pass of a core's program after its barrier, sizes in 32-bit words. `ops` gives the control flow
    (range, if/else, scalar slots, copies, views of an object at a word offset, the kernels): IRON's or a
    replay's. apart: the layout's block step carries one mask row (a task of one token), which the core copies
    to each query row of bufs["mask"] (16 rows of 32 halves); else the rows are widened in place."""
    rows_max, blk = k["kFaMaxRows"], k["kFaKvBlock"]
    rw = row_bytes(family, d) // 4
    state_w = 2 * rows_max + rows_max * d
    bfp16 = ops.eq(words["contract"], 0)
    ops.store("chunk", words["first_chunk"])
    for kk in ops.range(words["rounds"]):
        active = ops.lt(kk, words["tasks"])
        ops.if_(ops.eq(ops.load("chunk"), words["chunks"] - 1),
                lambda: ops.store("rows", words["last_rows"]), lambda: ops.store("rows", words["chunk_rows"]))
        rows = ops.load("rows")
        # The task's first row, before the chunk moves on to the next round's: the block steps' mask widening
        # reads it.
        ops.store("row0", ops.mul(ops.load("chunk"), words["chunk_rows"]))
        ops.store("chunk", ops.add(ops.load("chunk"), words["chunk_step"]))
        ops.if_(ops.ge(ops.load("chunk"), words["chunks"]),
                lambda: ops.store("chunk", ops.sub(ops.load("chunk"), words["chunks"])))
        o = out.acquire(1)
        step = kv_in.acquire(1)  # the q step: the slopes, the query rows, the step words
        # The round's block steps, kept past the q step's release: the column's (the block objects to take,
        # an idle core too, or its column's lockstep stalls) and the core's own (the blocks to compute).
        words_w = rows_max + rows_max * d
        ops.store("col_steps", ops.word(step, words_w))
        ops.store("own", ops.word(step, words_w + 1))

        def take_q():
            ops.copy(bufs["slopes"], 0, step, 0, rows_max)
            ops.copy(bufs["q"], 0, step, rows_max, rows_max * d)
            ops.if_(bfp16, lambda: ops.call("fa_prepare_q_bfp16", bufs["q"], bufs["qb"], rows, d))
            ops.call("fa_init_f32", o, rows, d)
        ops.if_(active, take_q)
        kv_in.release(1)
        mask_w = 2 * blk * rw  # the mask rows' word offset in a block step, rows of blk halves
        row_w = blk // 2

        def widen(b):
            # The step holds one mask row per token of the task, its first token first; query row i needs the
            # row of token (row0 + i) / ratio. That token's row sits at tau <= i, so rows from the last down
            # read only rows not yet overwritten.
            row0, ratio = ops.load("row0"), words["mask_ratio"]
            t0 = ops.div(row0, ratio)
            for i in ops.range(rows):
                at = ops.sub(ops.sub(rows, 1), i)
                tau = ops.sub(ops.div(ops.add(row0, at), ratio), t0)
                ops.if_(ops.ne(tau, at), lambda: ops.copy(b, ops.add(mask_w, ops.mul(at, row_w)), b,
                                                          ops.add(mask_w, ops.mul(tau, row_w)), row_w))

        for s in ops.range(ops.load("col_steps")):
            b = kv_in.acquire(1)  # a block step: K rows, V rows, the mask rows

            def block():
                if apart:
                    # Every query row takes the one token's row. Without a mask that row is the filler's zeros,
                    # copied all the same: the buffer would otherwise hold a previous invocation's mask.
                    for i in ops.range(rows):
                        ops.copy(bufs["mask"], ops.mul(i, row_w), b, mask_w, row_w)
                else:
                    ops.if_(ops.ne(words["mask_ratio"], 0), lambda: widen(b))
                left = ops.sub(words["n_kv"], ops.mul(ops.add(words["block0"], s), blk))
                ops.if_(ops.lt(left, blk), lambda: ops.store("n", left), lambda: ops.store("n", blk))
                n = ops.load("n")
                kb, vb = b, ops.view(b, blk * rw)
                mb = bufs["mask"] if apart else ops.view(b, mask_w)
                if family == "q8_0":
                    def q8_bfp16():
                        ops.scale_words(bufs["words"], b, rw, d, blk)
                        ops.call("fa_block_q8_0_bfp16", bufs["q"], bufs["qb"], kb, vb, bufs["words"],
                                 ops.view(bufs["words"], (d // 32) * blk), mb, bufs["slopes"], o, bufs["scores"],
                                 bufs["scratch"], rows, d, n, words["scale"])
                    ops.if_(bfp16, q8_bfp16,
                            lambda: ops.call("fa_block_q8_0", bufs["q"], kb, vb, mb, bufs["slopes"], o, bufs["scores"],
                                             rows, d, n, words["scale"]))
                else:
                    ops.if_(bfp16,
                            lambda: ops.call("fa_block_f16_bfp16", bufs["q"], bufs["qb"], kb, vb, mb, bufs["slopes"], o,
                                             bufs["scores"], rows, d, n, words["scale"]),
                            lambda: ops.call("fa_block_f16", bufs["q"], kb, vb, mb, bufs["slopes"], o, bufs["scores"],
                                             rows, d, n, words["scale"]))
            ops.if_(ops.both(active, ops.lt(s, ops.load("own"))), block)
            kv_in.release(1)

        def finish_into(state):
            ops.call("fa_finish_f32", state, bufs["q"], rows, d, d)  # over the query rows, no longer read
            ops.copy(state, 0, bufs["q"], 0, ops.mul(rows, d))

        def unsplit():
            ops.if_(active, lambda: finish_into(o))
            out.release(1)

        def split_task():
            out.release(1)  # the partial state, to the partials operand
            o2 = out.acquire(1)
            merging = ops.both(active, ops.eq(words["part"], 0))
            for t in ops.range(words["state_steps"]):
                st = kv_in.acquire(1)  # a state step: states_per_object partial states, part order
                for j in range(spo):
                    idx = ops.add(ops.mul(t, spo), j)

                    def one_state(j=j, idx=idx):
                        ops.if_(ops.eq(idx, 0), lambda: ops.copy(o2, 0, st, 0, state_w),
                                lambda: ops.call("fa_merge_f32", o2, ops.view(st, j * state_w), rows, d))
                    ops.if_(ops.both(merging, ops.lt(idx, words["parts"])), one_state)
                kv_in.release(1)
            ops.if_(merging, lambda: finish_into(o2))
            out.release(1)
        ops.if_(ops.eq(words["parts"], 1), unsplit, split_task)


class Replay:
    """The control flow on concrete words: the kernel calls and copies a core makes, in order."""

    def __init__(self):
        self.calls, self.slots = [], {}

    def range(self, n):
        return range(n)

    def if_(self, cond, then, other=None):
        if cond:
            then()
        elif other is not None:
            other()

    lt = staticmethod(lambda a, b: a < b)
    ge = staticmethod(lambda a, b: a >= b)
    eq = staticmethod(lambda a, b: a == b)
    ne = staticmethod(lambda a, b: a != b)
    div = staticmethod(lambda a, b: a // b)
    add = staticmethod(lambda a, b: a + b)
    sub = staticmethod(lambda a, b: a - b)
    mul = staticmethod(lambda a, b: a * b)
    both = staticmethod(lambda a, b: a and b)

    def store(self, name, v):
        self.slots[name] = v

    def load(self, name):
        return self.slots[name]

    def view(self, obj, offset):
        return obj if offset == 0 else f"{obj}+{offset}"

    def word(self, obj, at):
        written = getattr(obj, "words", {})
        if at not in written:
            raise PlanError(f"{obj}: the core reads word {at}, which the stream does not write there")
        return written[at]

    def copy(self, dst, at, src, src_at, n):
        self.calls.append(("copy", dst, at, src, src_at, n))

    def scale_words(self, dst, obj, rw, d, blk):
        self.calls.append(("scale_words", dst, obj))

    def call(self, name, *args):
        self.calls.append((name,) + args)


class ReplayObject(str):
    """An object a replay FIFO hands out: its name (kv:1, kv:2, ...) and the words the stream wrote into it
    that the core reads as values (word offset -> value)."""

    def __new__(cls, name, words):
        obj = super().__new__(cls, name)
        obj.words = words
        return obj


class ReplayFifo:
    """A FIFO end naming the objects it hands out (kv:1, kv:2, ...), acquisitions and releases logged; the
    n-th object carries contents[n - 1]'s words (none past them)."""

    def __init__(self, name, log, contents=()):
        self.name, self.n, self.log, self.contents = name, 0, log, contents

    def acquire(self, count):
        self.n += 1
        self.log.append(("acquire", self.name))
        return ReplayObject(f"{self.name}:{self.n}", self.contents[self.n - 1] if self.n <= len(self.contents) else {})

    def release(self, count):
        self.log.append(("release", self.name))


def core_stream(plan, core):
    """The words the stream writes into the kv objects core `core` takes, in order, that the core reads as
    values: per round the q step's step words (from the slopes operand's table, the core's entry), then its
    column's block objects and the state steps (data only)."""
    k = header()
    at = k["kFaMaxRows"] + k["kFaMaxRows"] * plan.tile
    table, column = step_words(plan), plan.cores[core]["column"]
    out = []
    for rnd in range(plan.rounds):
        entry = STEP_WORDS * (rnd * len(plan.cores) + core)
        out.append({at + j: table[entry + j] for j in range(STEP_WORDS)})
        out += [{} for _ in range(plan.col_steps[rnd][column] + plan.steps["states"])]
    return out


def replay_core(plan, core):
    """What core `core` (an index of plan.cores) does in one invocation: acquisitions, releases, copies and
    kernel calls, in order, on the objects the stream hands it."""
    rep = Replay()
    bufs = {n: n for n in ("q", "qb", "slopes", "scores", "words", "scratch", "mask")}
    k = header()
    kv_in = ReplayFifo("kv", rep.calls, core_stream(plan, core))
    core_program(rep, plan.cores[core]["words"], kv_in, ReplayFifo("out", rep.calls), bufs,
                 plan.tile, plan.family, plan.states_per_object, k, mask_apart(plan, k))
    return rep.calls


# ---------------------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------------------
def print_plan_text(p, out=sys.stdout):
    w = out.write
    w(f"design: attention, family {p.family} ({p.contract}, contract RTP = {p.contract_index}), head dim {p.tile}, "
      f"{p.columns} column(s) x 4 cores, npu2\n")
    w(f"layout: {p.layout} (tasks of up to {p.task_tokens} token(s), kv objects of {p.objects['kv']} bytes)\n")
    w(f"shape: {p.shape}\n")
    w(f"split (flash_attn_split): {p.split}\n")
    w(f"task order: {p.task_order}\n")
    w(f"placement: {p.tasks_per_round} task(s) per round, {p.rounds} round(s); steps {p.steps}; "
      f"{p.states_per_object} state(s) per kv object\n")
    w(f"objects: {p.objects}\n")
    _print_steps(p, w)
    w("\ncore data memory (each core):\n")
    for kk, v in p.core_bytes.items():
        w(f"  {kk:48s} {v}\n")
    w(f"  {'total':48s} {sum(p.core_bytes.values())}\nmemory tile (each column):\n")
    for kk, v in p.memtile_bytes.items():
        w(f"  {kk:48s} {v}\n")
    w("DMA channels (each column):\n")
    for kk, (u, a) in p.channels.items():
        w(f"  {kk:20s} {u} of {a}\n")
    w(f"shim BDs: {p.bds}\nDRAM traffic (bytes): {p.traffic}\n")
    w(f"slopes operand: {p.slopes}; partials operand: {p.partials_bytes} bytes\n")
    w("RTP words (first cores):\n")
    for c in p.cores[:8]:
        w(f"  column {c['column']} row {c['row']}: {c['words']}\n")
    w("\nchecks:\n")
    for what, ok, detail in p.checks:
        w(f"  [{'ok' if ok else 'FAIL'}] {what}: {detail}\n")


def _print_steps(p, w):
    """The step table: per round each column's block steps, then each core's own, a column's cores together."""
    cpc = len(p.cores) // p.columns
    w(f"block steps: lockstep {p.steps['lockstep block steps']} (per round the most of any column, summed), block "
      f"calls of the busiest core {p.steps['block calls (busiest core)']}, column block steps "
      f"{p.steps['column block steps']}\n")
    for rnd in range(p.rounds):
        own = " | ".join(" ".join(str(x) for x in p.own[rnd][c * cpc:(c + 1) * cpc]) for c in range(p.columns))
        w(f"  round {rnd}: col_steps {p.col_steps[rnd]}; own {own}\n")


def plan_json(p):
    dd = asdict(p)
    dd["checks"] = [{"check": w, "ok": ok, "detail": det} for w, ok, det in p.checks]
    dd["checks failed"] = [f"{w}: {det}" for w, ok, det in p.checks if not ok]
    return dd


# ---------------------------------------------------------------------------------------------------
# MLIR emission (needs mlir-aie >= 1.4 and numpy)
# ---------------------------------------------------------------------------------------------------
class IronOps:
    """core_program's control flow as IRON traces it: range_ loops and if_/else_ on RTP-word values, a
    core-local int32 buffer for the values a branch sets, element copies, views of an object."""

    SLOTS = ("chunk", "rows", "n", "row0", "col_steps", "own")

    def __init__(self, range_, if_, else_, kernels, scalars, view):
        self._range, self._if, self._else = range_, if_, else_
        self.kernels, self.scalars, self._view = kernels, scalars, view

    def range(self, n):
        return self._range(n)

    def if_(self, cond, then, other=None):
        with self._if(cond) as taken:
            then()
        if other is not None:
            with self._else(taken):
                other()

    lt = staticmethod(lambda a, b: a < b)
    ge = staticmethod(lambda a, b: a >= b)
    eq = staticmethod(lambda a, b: a == b)
    ne = staticmethod(lambda a, b: a != b)
    div = staticmethod(lambda a, b: a // b)
    add = staticmethod(lambda a, b: a + b)
    sub = staticmethod(lambda a, b: a - b)
    mul = staticmethod(lambda a, b: a * b)
    both = staticmethod(lambda a, b: a & b)

    def store(self, name, v):
        self.scalars[self.SLOTS.index(name)] = v

    def load(self, name):
        return self.scalars[self.SLOTS.index(name)]

    def view(self, obj, offset):
        return self._view(obj, offset)

    def word(self, obj, at):
        return obj[at]

    def copy(self, dst, at, src, src_at, n):
        for i in self._range(n):
            dst[at + i] = src[src_at + i]

    def scale_words(self, dst, obj, rw, d, blk):
        # The words holding each row's Q8_0 block scales, [K then V][block][row], as fa_block_q8_0_bfp16 takes
        # them (fa_q8_0_scale_word(b) = (34 b - (b % 2) 2) / 4 words into a row).
        for kv in range(2):
            for b in range(d // 32):
                at = (34 * b - (b % 2) * 2) // 4
                for r in self._range(blk):
                    dst[(kv * (d // 32) + b) * blk + r] = obj[kv * blk * rw + r * rw + at]

    def call(self, name, *args):
        self.kernels[name](*args)


def kernel_symbols(desc, family):
    """The kernels an xclbin of the family links: its block programs and the helpers."""
    return list(families_of(desc)[family]) + list(desc.raw["attention"]["helpers"])


def emit_mlir(desc, p, kernel_object):
    try:
        import numpy as np
        import aie.iron.device as iron_devices
        from aie.dialects import memref
        from aie.helpers.dialects.scf import else_, if_
        from aie.iron import Buffer, Kernel, ObjectFifo, Program, Runtime, Worker, WorkerRuntimeBarrier
        from aie.iron.controlflow import range_
        from aie.iron.device import Tile
    except ImportError as e:
        raise PlanError(f"emitting MLIR needs mlir-aie >= 1.4 (python package 'aie') and numpy: {e}")
    raw = desc.raw
    lay = next(x for x in desc.layouts if x.name == p.layout)
    arr, prog, fifo = raw["array"], raw["core_program"], lay.fifos
    bar, idx = prog["barrier"], prog["rtp_words"]
    k = header()
    apart = mask_apart(p, k)
    d, cpc, l2 = p.tile, raw["attention"]["cores_per_column"], raw["depths"]["l2"]
    i32 = np.dtype[np.int32]
    words = lambda n: np.ndarray[(n,), i32]
    kv_ty, state_ty = words(p.objects["kv"] // 4), words(p.objects["state"] // 4)
    local = {n: words(max(1, b // 4)) for n, b in (("q", 4 * k["kFaMaxRows"] * d), ("slopes", 4 * k["kFaMaxRows"]))}
    extra = scratch_bytes(p.family, d, k)
    local["scores"] = words(4 * k["kFaMaxRows"] * k["kFaKvBlock"] // 4)
    local["qb"] = words(extra["bfp16 query operands (fa_q_bfp16_bytes)"] // 4)
    local["words"] = words(max(1, extra.get("scale words (2 x d / 32 x 32 uint32)", 4) // 4))
    local["scratch"] = words(max(1, extra.get("scratch (fa_q8_0_scratch_bytes)", 4) // 4))
    local["mask"] = words(k["kFaMaxRows"] * k["kFaKvBlock"] * 2 // 4)  # a layout of one-token tasks only
    # Every pointer argument as 32-bit words (the kernels take float, uint16 and uint8 pointers into the same
    # objects; the views below hand them the right offsets), counts and the scale as int32 / fp32 scalars.
    params = {"fa_init_f32": "pii", "fa_prepare_q_bfp16": "ppii", "fa_merge_f32": "ppii", "fa_finish_f32": "ppiii",
              "fa_block_f16": "pppppppiiif", "fa_block_f16_bfp16": "ppppppppiiif", "fa_block_q8_0": "pppppppiiif",
              "fa_block_q8_0_bfp16": "pppppppppppiiif"}
    kinds = {"p": words(p.objects["kv"] // 4), "i": np.int32, "f": np.float32}
    kernels = {sym: Kernel(sym, kernel_object, [kinds[c] for c in params[sym]]) for sym in kernel_symbols(desc, p.family)}

    def view(obj, offset):
        # The object from `offset` words on, as the kernel's pointer (a strided view of the same memref).
        return memref.subview(obj, [offset], [1], [1])

    spo, rtp_count = p.states_per_object, prog["rtp_word_count"]

    def core_fn(kv_in, out, rtp, barrier, q, slopes, scores, qb, wds, scratch, scalars, *rest):
        # rest: the mask buffer when the layout widens apart, then the kernels.
        mask, ks = (rest[0], rest[1:]) if apart else (None, rest)
        barrier.wait_for_value(bar["acquire"]["value"])
        w = {name: rtp[i] for name, i in sorted(idx.items(), key=lambda kv: kv[1])}
        barrier.release_with_value(bar["release"]["value"])
        ops = IronOps(range_, if_, else_, dict(zip(kernel_symbols(desc, p.family), ks)), scalars, view)
        core_program(ops, w, kv_in, out, {"q": q, "slopes": slopes, "scores": scores, "qb": qb, "words": wds,
                                          "scratch": scratch, "mask": mask}, d, p.family, spo, k, apart)

    workers, rtps, barriers, kv_handles, out_handles = [], [], [], [], []
    for col in range(p.columns):
        mem = Tile(col, arr["memtile_row"])
        kv3 = ObjectFifo(words(cpc * p.objects["kv"] // 4), name=f"kv_l3l2_{col}", depth=l2)
        kv1 = kv3.cons().split([r * p.objects["kv"] // 4 for r in range(cpc)], obj_types=[kv_ty] * cpc,
                               names=[f"kv_l2l1_{col}_{r}" for r in range(cpc)],
                               depths=[fifo["kv_l2l1"]["depth"]] * cpc, tile=mem)
        out3 = ObjectFifo(words(cpc * p.objects["state"] // 4), name=f"out_l2l3_{col}", depth=l2)
        out1 = out3.prod().join([r * p.objects["state"] // 4 for r in range(cpc)], obj_types=[state_ty] * cpc,
                                names=[f"out_l1l2_{col}_{r}" for r in range(cpc)],
                                depths=[fifo["out_l1l2"]["depth"]] * cpc, tile=mem)
        kv_handles.append(kv3.prod(tile=Tile(col, arr["shim_row"])))
        out_handles.append(out3.cons(tile=Tile(col, arr["shim_row"])))
        for r in range(cpc):
            rtp = Buffer(words(rtp_count), name=f"rtp_{col}_{r}", initial_value=np.zeros(rtp_count, dtype=np.int32),
                         use_write_rtp=True)
            barrier = WorkerRuntimeBarrier()
            bufs = [Buffer(local[n], name=f"{n}_{col}_{r}") for n in ("q", "slopes", "scores", "qb", "words", "scratch")]
            bufs.append(Buffer(words(len(IronOps.SLOTS)), name=f"scalars_{col}_{r}"))
            if apart:
                bufs.append(Buffer(local["mask"], name=f"mask_{col}_{r}"))
            rtps.append(rtp)
            barriers.append(barrier)
            workers.append(Worker(core_fn, [kv1[r].cons(), out1[r].prod(), rtp, barrier, *bufs, *kernels.values()],
                                  tile=Tile(col, arr["first_core_row"] + r), stack_size=p.stack_bytes))

    by_arg = sorted(OPERANDS, key=lambda o: next(x["arg"] for x in raw["operands"] if x["name"] == o))
    tensor_tys = [words(1 << 20) for _ in by_arg]

    def sequence(*args):
        # Per core its words, then its barrier, before any DMA (the host's protocol, ../rope/design.py); the
        # data movement itself (the BD chains the plan counts) is the host's stream builder's.
        for i, c in enumerate(p.cores):
            for name, j in idx.items():
                rtps[i][j] = c["words"][name]
            barriers[i].set(bar["set_value"])

    rt = Runtime(sequence, tensor_tys + [kv_handles, out_handles])
    device = iron_devices.NPU2() if p.columns == arr["max_columns"] else getattr(iron_devices, f"NPU2Col{p.columns}")()
    return Program(device, rt, workers=workers).resolve_program()


# ---------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------
def parse_args(argv):
    ap = argparse.ArgumentParser(description="The attention design (FLASH_ATTN_EXT over an F16 or Q8_0 KV cache) for "
                                             "XDNA2 (NPU2): prints the plan of one invocation shape, or emits MLIR with "
                                             "mlir-aie >= 1.4 (IRON).")
    ap.add_argument("--dataflow", default=DEFAULT_DATAFLOW, help="the data-movement description")
    ap.add_argument("--family", help="f16 or q8_0 (default the description's first)")
    ap.add_argument("--tile", "--head-dim", dest="tile", type=int, default=128, help="head dim, i.e. which xclbin")
    ap.add_argument("--contract", type=int, default=0, help="the block program: 0 bfp16 (default), 1 fp32")
    ap.add_argument("--n-head", type=int, default=32)
    ap.add_argument("--n-head-kv", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=1, help="query tokens (default 1: decode)")
    ap.add_argument("--n-kv", type=int, default=256, help="KV rows (the valid length)")
    ap.add_argument("--n-seq", type=int, default=1)
    ap.add_argument("--n-seq-kv", type=int, default=1)
    ap.add_argument("--no-mask", action="store_true")
    ap.add_argument("--mask-heads", type=int, default=1)
    ap.add_argument("--causal", type=int, metavar="N0",
                    help="the mask is causal over a cache of N0 earlier positions (token t sees positions "
                         "0 .. N0 + t): each core computes, and each column moves, only the blocks its tasks need "
                         "(default: no profile, every block)")
    ap.add_argument("--scale", type=float, default=None, help="default 1/sqrt(head dim)")
    ap.add_argument("--layout", help="the description's layout (default: the one of fewest task_tokens that holds the "
                                     "largest task's tokens: decode for one query token, else attention)")
    ap.add_argument("--cols", type=int, help="array columns (default: as many as the tasks fill, at most max_columns)")
    ap.add_argument("--max-cols", type=int, help="columns the split may use, the stream taking those its tasks fill (default max_columns)")
    ap.add_argument("--kernel-object", help="object file of the core program (default xdna_flash_attn_<family>.o)")
    ap.add_argument("--print-plan", action="store_true", help="print the plan (no mlir-aie needed)")
    ap.add_argument("--format", choices=["text", "json"], default="text")
    ap.add_argument("--list-tiles", action="store_true", help="print the head dims the family has an xclbin for")
    ap.add_argument("--list-contracts", action="store_true", help="print 'contract source' per block program")
    ap.add_argument("-o", "--output")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        desc = load_description(args.dataflow)
        families = families_of(desc)
        family = args.family or next(iter(families))
        if family not in families:
            raise PlanError(f"unknown family {family!r} ({', '.join(families)})")
        if args.list_tiles:
            print(" ".join(str(t) for t in family_tiles(desc, family)))
            return 0
        if args.list_contracts:
            source = desc.raw["core_budget"]["kernel_stack"][family]["source"]
            text = _read(os.path.join(HERE, "kernels", source))
            for c in families[family]:
                print(f"{c} {source if re.search(r'void ' + c + r'[(]', text) else '?'}")
            return 0
        shape = Shape(d=args.tile, n_kv=args.n_kv, n_tokens=args.tokens, n_head=args.n_head, n_head_kv=args.n_head_kv,
                      n_seq=args.n_seq, n_seq_kv=args.n_seq_kv, has_mask=not args.no_mask, mask_heads=args.mask_heads,
                      scale=1.0 / math.sqrt(args.tile) if args.scale is None else args.scale, causal=args.causal)
        plan = make_plan(desc, family, args.tile, shape, args.cols, args.contract, args.layout, args.max_cols)
    except PlanError as e:
        print(f"design.py: {e}", file=sys.stderr)
        return 2
    failed = [c for c in plan.checks if not c[1]]
    if args.print_plan:
        if args.format == "json":
            json.dump(plan_json(plan), sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            print_plan_text(plan)
            for what, _, detail in failed:
                print(f"FAILED: {what}: {detail}")
        return 1 if failed else 0
    if failed:
        for what, _, detail in failed:
            print(f"design.py: check failed: {what}: {detail}", file=sys.stderr)
        return 1
    try:
        module = emit_mlir(desc, plan, args.kernel_object or f"xdna_flash_attn_{family}.o")
    except PlanError as e:
        print(f"design.py: {e}", file=sys.stderr)
        return 2
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(str(module))
    else:
        print(module)
    return 0


if __name__ == "__main__":
    sys.exit(main())
