#!/usr/bin/env python3
"""The "gather" design for XDNA2 (NPU2, AIE2P): GET_ROWS of fp32 rows, the IRON program of its
data-movement description (aie/get_rows/dataflow.json).

    y[r] = src[ids[r]]      r < n_ids, rows of row_len fp32 values          contract get_rows_f32

A gather is data movement only: no core program (array.core_rows 0), no kernel, no RTP words.

What the program is, all of it read from the description (--dataflow), the one the host's stream builder
(src/runtime/gather-sequence.h) and the simulator's DMA interpreter read too; no number of the data
movement is written here:
  - One family ("gather": get_rows_f32), one xclbin per tile (values per memory-tile object: the
    description's xclbin_tiles, 32 to 1024). The host takes the largest tile that divides the row; a
    row that no tile divides (not a whole number of chunks) is not the design's.
  - Per column c (shim (c, shim_row), memory tile (c, memtile_row)): the shim's MM2S channel reads source
    rows into a memory-tile FIFO (src_l3l2) of one-chunk objects, which the memory tile hands on unchanged
    (a forward link: one buffer set, its S2MM filling what its MM2S drains) as y_l2l3 to the shim's S2MM
    channel, which writes y rows. The memory tile sees only a stream of chunks: which rows they are is
    the shim BDs' business, so one xclbin per tile serves every id list.
  - The ids are data (a graph input written before the graph runs): the host reads them at submission
    and builds the instruction stream from them, so the plan of a shape is reused across tokens while
    each run's BD addresses are that token's rows. This program's runtime sequence is the host's
    schedule for one id list (--ids), in IRON's words.
  - The work, as the host deals it: R = min(n_ids, columns) columns used; column c takes the block of
    consecutive rows of y starting at n_ids // R * c + min(c, n_ids % R), of n_ids // R rows plus one for
    the first n_ids % R columns. Per column, its rows are cut into runs of consecutive ids (ids[r + 1] =
    ids[r] + 1), each at most HOST_ROWS_PER_RUN rows: one source BD per run, the run's rows at
    ids[first] x src row stride. A step takes as many runs as a BD slot has source BD ids (shim.bd_slots:
    2) and one y BD over the step's rows (consecutive rows of y), its task pushed with the completion
    token. shim.steps_in_flight steps in flight on the slots in turn: after queueing step s the stream
    syncs on step s - (steps_in_flight - 1)'s y token, and on the last steps at the end. A step's y task
    completes only after every byte of its source tasks went through the memory tile, so its token frees
    all of the step's BDs.
  - A BD moves rows of row_len words in chunks of the tile: sizes (d0, d1, d2) = (tile, row_len / tile,
    rows), strides (1, tile, row stride), in 32-bit words; a one-row BD has d2 = 1 and no row stride (0).
    A row is contiguous, so d0 may be any divisor of it: a tile past the d0 wrap (1024 > limits.wrap_max
    1023) is halved until it fits (2 x 512 words), as the host's rows_bd does (src/runtime/rows-sequence.cpp);
    the words and their order are the same, and the memory tile still cuts them into objects of the tile.
  - What the forward does not do: hold a row whole. Its objects are one chunk, shim.steps_in_flight
    steps queued, so the first chunks of a row reach y while its last are still read, and a later row's
    source is read while earlier rows are being written; a gather whose y overlaps source rows it has
    yet to read does not see them as the CPU's row-by-row loop would (aie/get_rows/README.md says a row is
    read whole into the memory tile before it is written: not with this description).
  - Why runs and not one BD per row: a run of consecutive ids (llama.cpp's inp_out_ids at prefill: the
    last token, or every token) is one task of any length, where a task per row would queue n_ids tasks
    on a channel that holds 4; the cap on a run's rows is the host's (HOST_ROWS_PER_RUN), not a field of
    the shim BD, whose d2 count comes from its 32-bit length.

`--print-plan` prints the plan and checks it against the AIE2P limits: memory-tile memory (one buffer set),
the DMA channels of shims and memory tiles, the stream-switch ports, the shim BDs (ids, slots, BDs in
flight), the shim's task queues, the BD fields of every BD of the invocation against the description's
limits (d0 and d1 wraps, strides, length), the row strides (of an operand of more than one row: the
source's rows, y's ids, as the host checks them), the ids against the source's rows and the row against
the tile. It needs only a bare Python 3 (no numpy, no mlir-aie), so CI can check the plan
(tests/aie/check_design_get_rows.sh). Exit status: 0 when every check passes, 1 when one fails (the failed
ones printed), 2 for a shape or description the design refuses (the reason on stderr). Without --print-plan
the IRON program is emitted (mlir-aie >= 1.4: callback Runtime, TaskGroup, handle.fill/drain, as
../rms_norm/design.py); a plan with a failed check is not.

Status, plainly: the plan's numbers are checked against a recomputation of the rules above
(tests/aie/check_design_get_rows.sh: grid, runs, steps, BD ids and patterns, the stream's pushes and
syncs, a replay of the BDs row by row and word by word). They were compared with the host's stream
builder (src/runtime/gather-sequence.cpp and rows_bd) by reading it, not by running it beside this
script; where the two part: the host syncs one step behind whatever the description says and takes the
number of BD slots as its steps in flight, where this plan reads shim.steps_in_flight (the same for this
description: 2 steps, 2 slots). The IRON program (emit_mlir) has only been run on stand-ins of IRON's
classes (tests/aie/check_barrier.py's). Checked against mlir-aie's sources (python/iron) and its 1.4
guide: ObjectFifoHandle.forward(obj_type=, depth=, name=) on a consumer handle builds the linked FIFO (a
split of one part: the MLIR object_fifo_link); a Program may have no workers (programming_examples'
passthrough_dmas); Runtime(sequence, [types..., handles]) with handle.fill(tensor, group=) and
handle.drain(tensor, wait=True, group=), TaskGroup().finish(). Unverified: the tile= keyword of forward,
prod and cons (the versions read name it placement=; ../rms_norm/design.py and ../add/design.py write
tile= too), fill and drain's tap= keyword, a TAP whose row dimension of size 1 has stride 0, FIFO handles
of unused columns handed to the Runtime without a fill or drain, the NPU2Col<n> device names. Never run
by the real mlir-aie python package, never compiled by aiecc, never run on an NPU.
"""

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATAFLOW = os.path.join(HERE, "dataflow.json")

# ---------------------------------------------------------------------------------------------------
# AIE2P hardware limits the plan is checked against: facts of the device, not of this design's data
# movement, so they live here (as in ../rms_norm/design.py), not in dataflow.json.
# ---------------------------------------------------------------------------------------------------
MEMTILE_S2MM, MEMTILE_MM2S = 6, 6  # AM027 "AIE-ML v2 Memory Tile DMA": six S2MM and six MM2S channels
SHIM_MM2S, SHIM_S2MM = 2, 2        # shim DMA: two each way
NPU2_COLUMNS = 8                   # npu2's columns (each a shim, a memory tile, four cores)
NPU2_SHIM_ROW, NPU2_MEMTILE_ROW = 0, 1
MEMTILE_BYTES = 512 * 1024         # a memory tile's data memory
# Stream-switch ports between the shim and the memory tile (mlir-aie AIE2TargetModel, as ../add/design.py).
SHIM_UP_PORTS, SHIM_DOWN_PORTS = 6, 4
# Shim BD fields and queues (mlir-aie's AIEX verifier, lib/Dialect/AIEX/IR/AIEXDialect.cpp; AM027): the
# description's limits are checked against these.
SHIM_WRAP_MAX = 1023               # d0 and d1 wraps: 10 bits
SHIM_ITERATION_MAX = 64            # the iteration size: 6 bits, 1..64
SHIM_REPEAT_MAX = 255              # "Repeat count exceeds the [0:255] range"
SHIM_STRIDE_MAX = 1 << 20          # strides: 20 bits of words
SHIM_LENGTH_MAX = (1 << 32) - 1    # buffer_length (32-bit words)
SHIM_BDS = 16                      # BDs of a shim tile
SHIM_TASK_QUEUE = 4                # tasks a shim DMA channel's queue holds
# The host's stream builder's cap on a run's rows (kGatherRunRows, src/runtime/gather-sequence.h), not a
# number of the description: the shim BD has no d2 wrap (its rows come from the 32-bit length), so the
# cap is the host's choice. tests/aie/check_design_get_rows.sh checks that the two agree.
HOST_ROWS_PER_RUN = 256


class PlanError(Exception):
    pass


# ---------------------------------------------------------------------------------------------------
# The description (dataflow.json), read once and checked for what this program can build.
# ---------------------------------------------------------------------------------------------------
@dataclass
class Description:
    path: str
    raw: dict
    design: str
    layout: str
    src: dict              # the shim -> memory tile FIFO (src_l3l2)
    y: dict                # the memory tile -> shim FIFO forwarded from it (y_l2l3)
    src_operand: str       # operand names, as the BD slots name them too
    y_operand: str
    src_arg: int
    y_arg: int
    src_depth: int
    y_depth: int
    core_rows: int


def _depth(raw, value, where):
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    depths = raw.get("depths", {})
    if value not in depths or not isinstance(depths[value], int):
        raise PlanError(f"{where}: depth {value!r} is neither a number nor a key of \"depths\"")
    return depths[value]


def load_description(path=DEFAULT_DATAFLOW, layout=None):
    try:
        return _load_description(path, layout)
    except (KeyError, TypeError, AttributeError, StopIteration, ValueError) as e:
        raise PlanError(f"{path}: not a gather description (the movement this program builds): {type(e).__name__} {e}")


def _load_description(path, layout):
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError) as e:
        raise PlanError(f"{path}: {e}")
    if raw.get("format") != "xdna-dataflow" or not isinstance(raw.get("design"), str):
        raise PlanError(f"{path}: not a dataflow description (format \"xdna-dataflow\" with a \"design\")")
    if raw.get("movement") != "gather":
        raise PlanError(f"{path}: movement {raw.get('movement')!r}: this program builds the \"gather\" movement")
    layouts = {spec["name"]: spec for spec in raw["layouts"]}
    name = layout or raw["layouts"][0]["name"]
    if name not in layouts:
        raise PlanError(f"{path}: no layout {name!r} ({', '.join(layouts)})")
    fifos = list(layouts[name]["fifos"])
    where = f"{path}: layout {name}"
    core = [f["name"] for f in fifos if "core" in (f.get("from"), f.get("to"))]
    if core:
        raise PlanError(f"{where}: FIFO(s) {', '.join(core)} run to or from a core; a gather has no core program "
                        "(its FIFOs run between the shim and the memory tile only)")
    operands = sorted(raw["operands"], key=lambda o: o["arg"])
    if len(operands) != 2:
        raise PlanError(f"{where}: operands {[o['name'] for o in operands]}: a gather has a source and an output")
    ins = [f for f in fifos if (f.get("from"), f.get("to")) == ("shim", "memtile")]
    outs = [f for f in fifos if (f.get("from"), f.get("to")) == ("memtile", "shim")]
    if len(ins) != 1 or len(outs) != 1 or len(fifos) != 2:
        raise PlanError(f"{where}: FIFOs {[f['name'] for f in fifos]}: a gather has one shim -> memtile FIFO and one "
                        "memtile -> shim FIFO forwarded from it")
    src, y = ins[0], outs[0]
    if y.get("link") != "forward" or y.get("source") != src["name"]:
        raise PlanError(f"{where}: {y['name']} is linked by {y.get('link')!r} from {y.get('source')!r}; this program "
                        f"forwards {src['name']} to the shim (link \"forward\", source {src['name']!r})")
    for f, direction in ((src, "mm2s"), (y, "s2mm")):
        ch = f.get("shim_channel") or {}
        if ch.get("direction") != direction or not isinstance(ch.get("channel"), int):
            raise PlanError(f"{where}: {f['name']} needs a shim channel of direction {direction!r}")
        if f.get("operand") not in [o["name"] for o in operands]:
            raise PlanError(f"{where}: {f['name']} names operand {f.get('operand')!r}, not one of the description's")
        # A forward hands each object on whole: both ends move one chunk per object.
        if f["object"]["unit"] != "chunk" or f["object"]["count"] != 1:
            raise PlanError(f"{where}: {f['name']}: objects of {f['object']['count']} {f['object']['unit']}(s); this "
                            "program forwards objects of one chunk")
    if src["operand"] == y["operand"]:
        raise PlanError(f"{where}: {src['name']} and {y['name']} move the same operand {src['operand']!r}")
    arg = {o["name"]: o["arg"] for o in operands}
    cr = raw["array"]["core_rows"]
    if not isinstance(cr, int) or cr < 0:
        raise PlanError(f"{where}: array.core_rows {cr!r}")
    return Description(path, raw, raw["design"], name, src, y, src["operand"], y["operand"], arg[src["operand"]],
                       arg[y["operand"]], _depth(raw, src["depth"], f"{where}: {src['name']}"),
                       _depth(raw, y["depth"], f"{where}: {y['name']}"), cr)


def families_of(desc):
    return {k: v for k, v in desc.raw["families"].items() if k != "about"}


def family_tiles(desc, family):
    """The tiles a family has an xclbin for: its list in xclbin_tiles (a design without a core program
    has no kernel_stack to key them)."""
    return sorted(desc.raw["xclbin_tiles"][family])


def default_tile(desc, family, row_len):
    """The host's choice: the largest tile that divides the row."""
    fits = [t for t in family_tiles(desc, family) if row_len > 0 and row_len % t == 0]
    return fits[-1] if fits else None


# ---------------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------------
@dataclass
class Fifo:
    name: str
    path: str
    obj_bytes: int
    depth: int
    channels: str
    note: str = ""

    @property
    def bytes(self):
        return self.obj_bytes * self.depth


@dataclass
class Plan:
    dataflow: str
    design: str
    layout: str
    family: str
    contract: str
    tile: int
    columns: int
    chunk_bytes: int
    ids: list
    n_ids: int
    src_rows: int
    row_len: int
    chunks: int
    strides: dict
    fifos: list = field(default_factory=list)
    memtile_bytes: dict = field(default_factory=dict)
    channels: dict = field(default_factory=dict)
    streams: dict = field(default_factory=dict)
    grid: dict = field(default_factory=dict)
    schedule: dict = field(default_factory=dict)
    per_column: list = field(default_factory=list)
    tensors: dict = field(default_factory=dict)
    traffic: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)


def first_of(total, parts, i):
    """The host's first_of: where part i of `total` split in `parts` near-equal parts starts."""
    return total // parts * i + min(i, total % parts)


def count_of(total, parts, i):
    """The host's count_of: the size of part i (the first total % parts one larger)."""
    return total // parts + (1 if i < total % parts else 0)


def cut_runs(ids, first, count, cap):
    """A block's rows of y cut into runs of consecutive ids, at most `cap` rows each: (first row of y,
    first id, rows) per run, in the order of y."""
    runs = []
    for r in range(first, first + count):
        if runs:
            y0, id0, n = runs[-1]
            if n < cap and ids[r] == id0 + n:
                runs[-1] = (y0, id0, n + 1)
                continue
        runs.append((r, ids[r], 1))
    return runs


def bd_pattern(offset, rows, row_len, tile, stride, wrap):
    """A shim BD of `rows` rows of row_len words in chunks of the tile (halved while past the d0 wrap: a
    row is contiguous, so any divisor of it moves the same words in the same order), outermost first:
    [iteration, d2, d1, d0] (no iteration: 1); one row has no row stride."""
    d0 = tile
    while d0 > wrap and d0 % 2 == 0:
        d0 //= 2
    return {"offset": offset, "sizes": [1, rows, row_len // d0, d0], "strides": [0, stride if rows > 1 else 0, d0, 1]}


def make_plan(desc, ids, src_rows=None, row_len=4096, src_stride=None, y_stride=None, columns=None, tile=None,
              family=None):
    raw = desc.raw
    families = families_of(desc)
    family = family or next(iter(families))
    if family not in families:
        raise PlanError(f"unknown family {family!r} ({', '.join(families)})")
    if raw["device"] != "npu2":
        raise PlanError(f"{desc.path}: device {raw['device']!r}: this design targets npu2 (AIE2P) only")
    max_cols = raw["array"]["max_columns"]
    columns = max_cols if columns is None else columns
    if not 1 <= columns <= max_cols:
        raise PlanError(f"--cols {columns}: npu2 has 1..{max_cols} columns")
    ids = list(ids)
    if not ids:
        raise PlanError("no ids: the gather takes at least one")
    src_rows = max(max(ids) + 1, 1) if src_rows is None else src_rows
    if src_rows < 1:
        raise PlanError(f"--src-rows {src_rows}: the source has at least one row")
    if row_len <= 0:
        raise PlanError(f"a row of {row_len} values: the design takes rows of a positive number of values")
    src_stride = row_len if src_stride is None else src_stride
    y_stride = row_len if y_stride is None else y_stride
    for name, s in (("--src-stride", src_stride), ("--y-stride", y_stride)):
        if s < 0:
            raise PlanError(f"{name} {s}: a row stride is not negative")
    tiles = family_tiles(desc, family)
    if tile is None:
        tile = default_tile(desc, family, row_len)
        if tile is None:
            raise PlanError(f"a row of {row_len} values: no tile of {tiles} divides it (a row must be a whole number "
                            "of chunks)")
    if tile not in tiles:
        raise PlanError(f"family {family} has no xclbin for tile {tile} (it has {', '.join(map(str, tiles))})")
    chunk = raw["units"]["chunk"] * tile
    p = Plan(dataflow=desc.path, design=desc.design, layout=desc.layout, family=family, contract=families[family][0],
             tile=tile, columns=columns, chunk_bytes=chunk, ids=ids, n_ids=len(ids), src_rows=src_rows,
             row_len=row_len, chunks=row_len // tile if row_len % tile == 0 else 0,
             strides={desc.src_operand: src_stride, desc.y_operand: y_stride})
    check = lambda what, ok, detail: p.checks.append((what, bool(ok), detail))
    arr = raw["array"]

    check("array: no cores and no core program", desc.core_rows == 0 and "core_program" not in raw,
          f"array.core_rows {desc.core_rows}" + (", a core_program" if "core_program" in raw else "") +
          ("" if desc.core_rows == 0 and "core_program" not in raw else
           ": a gather is DMAs only; its layout has no core FIFOs for a core to take, and the host's parser refuses "
           "a gather with cores"))
    check("array: the description's columns and rows are npu2's",
          1 <= max_cols <= NPU2_COLUMNS and arr["shim_row"] == NPU2_SHIM_ROW and arr["memtile_row"] == NPU2_MEMTILE_ROW,
          f"max_columns {max_cols} of {NPU2_COLUMNS}, shim row {arr['shim_row']}, memory tile row {arr['memtile_row']}")
    check("family tiles: powers of two", all(isinstance(t, int) and t > 0 and t & (t - 1) == 0 for t in tiles),
          f"{family}: {tiles}")

    # FIFOs: one buffer set in the memory tile, the forward's.
    shim_at, mem_at = f"(c,{arr['shim_row']})", f"(c,{arr['memtile_row']})"
    src_ch, y_ch = desc.src["shim_channel"]["channel"], desc.y["shim_channel"]["channel"]
    depth = max(desc.src_depth, desc.y_depth)
    p.fifos = [
        Fifo(f"{desc.src['name']}_<c>", f"shim{shim_at} -> memtile{mem_at}", chunk, desc.src_depth,
             f"shim MM2S {src_ch}, memtile S2MM 1", desc.src.get("about", "")),
        Fifo(f"{desc.y['name']}_<c>", f"memtile{mem_at} -> shim{shim_at}, forward of {desc.src['name']}", chunk,
             desc.y_depth, f"memtile MM2S 1, shim S2MM {y_ch}", desc.y.get("about", "")),
    ]
    p.memtile_bytes = {f"{desc.src['name']} -> {desc.y['name']} (one buffer set: {depth} x 1 chunk)": depth * chunk}
    p.memtile_bytes["total"] = depth * chunk
    budget = raw["core_budget"]["memtile_bytes"]
    check("memory tile: one buffer set", depth * chunk <= min(budget, MEMTILE_BYTES),
          f"{depth * chunk} of {budget} bytes (the description's; the tile has {MEMTILE_BYTES})")
    check("memory tile: the description's budget within the tile's memory", budget <= MEMTILE_BYTES,
          f"{budget} of {MEMTILE_BYTES} bytes")

    p.channels = {
        "memory tile": {"S2MM": (1, MEMTILE_S2MM, f"{desc.src_operand} from the shim"),
                        "MM2S": (1, MEMTILE_MM2S, f"{desc.y_operand} to the shim (the forward)")},
        "shim": {"MM2S": (1, SHIM_MM2S, f"{desc.src_operand} on channel {src_ch}"),
                 "S2MM": (1, SHIM_S2MM, f"{desc.y_operand} on channel {y_ch}")},
    }
    for tile_name, dirs in p.channels.items():
        for d, (used, avail, what) in dirs.items():
            check(f"DMA channels {tile_name} {d}", used <= avail, f"{used} of {avail} ({what})")
    check("shim channel numbers in range", 0 <= src_ch < SHIM_MM2S and 0 <= y_ch < SHIM_S2MM,
          f"{desc.src_operand} MM2S {src_ch} of 0..{SHIM_MM2S - 1}, {desc.y_operand} S2MM {y_ch} of 0..{SHIM_S2MM - 1}")
    p.streams = {"shim -> memory tile (up)": (1, SHIM_UP_PORTS), "memory tile -> shim (down)": (1, SHIM_DOWN_PORTS)}
    for what, (used, avail) in p.streams.items():
        check(f"stream-switch ports {what}", used <= avail, f"{used} stream(s) of {avail} ports")

    _plan_shape(desc, p, check)
    return p


def _plan_shape(desc, p, check):
    """The grid, runs, steps, BDs, stream and traffic of one invocation, as the host's gather stream
    builder makes them from the ids."""
    raw = desc.raw
    lim, shim = raw["limits"], raw["shim"]
    tile, row_len = p.tile, p.row_len
    wrap, stride_max = lim["wrap_max"], lim["stride_max"]
    S, Y = desc.src_operand, desc.y_operand
    ss, ys = p.strides[S], p.strides[Y]
    check("limits.wrap_max within the shim BD's d0 and d1 wraps", 1 <= wrap <= SHIM_WRAP_MAX,
          f"{wrap} of 1..{SHIM_WRAP_MAX}")
    check("limits.stride_max within the shim BD's stride field", 1 <= stride_max <= SHIM_STRIDE_MAX,
          f"{stride_max} of 1..{SHIM_STRIDE_MAX} words")
    check("limits.iteration_max within the shim BD's iteration count", 1 <= lim["iteration_max"] <= SHIM_ITERATION_MAX,
          f"{lim['iteration_max']} of 1..{SHIM_ITERATION_MAX} (a gather's BDs use no iteration)")
    check("limits.repeat_max within the push queue's repeat count", 0 <= lim["repeat_max"] <= SHIM_REPEAT_MAX,
          f"{lim['repeat_max']} of 0..{SHIM_REPEAT_MAX} (a gather's tasks repeat never)")
    check("shape: the row in whole chunks of the tile", row_len % tile == 0, f"row of {row_len} values, tile {tile}")
    bad = [i for i in p.ids if not 0 <= i < p.src_rows]
    check("ids inside the source's rows", not bad,
          f"{p.n_ids} id(s) in [{min(p.ids)}, {max(p.ids)}], the source has rows 0..{p.src_rows - 1}" +
          (f": {_short(sorted(set(bad)))} outside (the host fails the run before any row moves)" if bad else ""))
    # A row stride is a BD field of an operand of more than one row (the source's rows, y's ids); one row
    # has none, as the host checks them.
    for name, s, rows in ((S, ss, p.src_rows), (Y, ys, p.n_ids)):
        one = f"one row of {name}: no row stride"
        check(f"{name} row stride covers the row", rows <= 1 or s >= row_len,
              f"stride {s}, row {row_len} words" if rows > 1 else one)
        check(f"{name} row stride within the shim's stride", rows <= 1 or s <= stride_max,
              f"stride {s} <= {stride_max} words" if rows > 1 else one)

    # BD slots: per step in flight one set of the source's BD ids (a step's runs) and y's one.
    slots, F = shim["bd_slots"], shim["steps_in_flight"]
    as_list = lambda v: v if isinstance(v, list) else [v]
    per_slot = [len(as_list(s.get(S, []))) for s in slots]
    runs_per_step = min(per_slot) if per_slot else 0
    ids_all = [i for s in slots for k in (S, Y) for i in as_list(s.get(k, []))]
    check(f"shim BD slots: one set per step in flight, the same number of {S} BDs in each, one {Y} BD",
          len(slots) == F and runs_per_step >= 1 and len(set(per_slot)) == 1 and
          all(isinstance(s.get(Y), int) for s in slots),
          f"{len(slots)} set(s) for {F} step(s) in flight: " +
          "; ".join(f"{S} {as_list(s.get(S, []))}, {Y} {s.get(Y)}" for s in slots))
    check("shim BD ids distinct and in range",
          len(set(map(str, ids_all))) == len(ids_all) and
          all(isinstance(i, int) and 0 <= i < shim["bds"] for i in ids_all),
          f"{ids_all} of 0..{shim['bds'] - 1}")
    check("shim: the description's bds within the shim tile's", shim["bds"] <= SHIM_BDS, f"{shim['bds']} of {SHIM_BDS}")
    check("shim BDs in flight", F * (runs_per_step + 1) <= min(shim["bds"], SHIM_BDS),
          f"{F} step(s) x ({runs_per_step} {S} + 1 {Y}) = {F * (runs_per_step + 1)} of {min(shim['bds'], SHIM_BDS)}")
    # The stream syncs on step s - (F - 1)'s token after queueing step s, so a channel holds the tasks of F
    # steps: F x runs per step on the source's channel, F on y's.
    check(f"shim task queue per channel: {S}", F * runs_per_step <= SHIM_TASK_QUEUE,
          f"{F} step(s) in flight x {runs_per_step} run(s) per step = {F * runs_per_step} of {SHIM_TASK_QUEUE} queued")
    check(f"shim task queue per channel: {Y}", F <= SHIM_TASK_QUEUE,
          f"{F} step(s) in flight x 1 task per step = {F} of {SHIM_TASK_QUEUE} queued")

    # The grid: R columns, column c a block of consecutive rows of y.
    n = p.n_ids
    R = min(n, p.columns)
    blocks = [(first_of(n, R, c), count_of(n, R, c)) for c in range(R)]
    p.grid = {"columns used": R, "blocks (first row, rows)": [list(b) for b in blocks]}
    cap = HOST_ROWS_PER_RUN
    per_step = max(runs_per_step, 1)
    slot_ids = [(as_list(s.get(S, [])), s.get(Y)) for s in slots] or [([], None)]
    moved = {S: 0, Y: 0}
    worst = {"src queued": 0, "y queued": 0, "bds": 0}
    field_fail = {k: [] for k in ("d0", "d1", "length", "strides")}
    p.per_column = []
    for c, (first, count) in enumerate(blocks):
        runs = cut_runs(p.ids, first, count, cap)
        steps, bds, stream = [], [], []
        for s, k in enumerate(range(0, len(runs), per_step)):
            members = list(range(k, min(k + per_step, len(runs))))
            src_bds, y_bd = slot_ids[s % len(slot_ids)]
            y0, rows = runs[members[0]][0], sum(runs[i][2] for i in members)
            step = {"slot": s % len(slot_ids), "runs": members, "y rows (first, rows)": [y0, rows],
                    f"{S} BDs": [src_bds[j] if j < len(src_bds) else None for j in range(len(members))],
                    f"{Y} BD": y_bd}
            steps.append(step)
            for j, i in enumerate(members):
                _, id0, m = runs[i]
                bd = dict(what=S, step=s, run=i, bd=step[f"{S} BDs"][j], token=False,
                          **bd_pattern(id0 * ss, m, row_len, tile, ss, wrap))
                bds.append(bd)
                stream.append(["push", S, bd["bd"], s])
                moved[S] += 4 * m * row_len
            bd = dict(what=Y, step=s, run=None, bd=y_bd, token=True,
                      **bd_pattern(y0 * ys, rows, row_len, tile, ys, wrap))
            bds.append(bd)
            stream.append(["push", Y, y_bd, s])
            moved[Y] += 4 * rows * row_len
            if s >= F - 1:
                stream.append(["sync", s - (F - 1)])
        for s in range(max(len(steps) - (F - 1), 0), len(steps)):
            stream.append(["sync", s])
        # What a channel holds and which BDs are in use, from the stream itself: a sync on a step's token
        # completes that step (and every earlier one: the channel runs its queue in order).
        open_steps, done = [], -1
        for ev in stream:
            if ev[0] == "push" and ev[3] not in open_steps:
                open_steps.append(ev[3])
            elif ev[0] == "sync":
                done = max(done, ev[1])
                open_steps = [s for s in open_steps if s > done]
            held = [steps[s] for s in open_steps]
            worst["src queued"] = max(worst["src queued"], sum(len(h["runs"]) for h in held))
            worst["y queued"] = max(worst["y queued"], len(held))
            worst["bds"] = max(worst["bds"], sum(len(h["runs"]) + 1 for h in held))
        for bd in bds:
            _, d2, d1, d0 = bd["sizes"]
            if d0 > wrap:
                field_fail["d0"].append((c, bd))
            if d1 > wrap:
                field_fail["d1"].append((c, bd))
            if d0 * d1 * d2 > SHIM_LENGTH_MAX:
                field_fail["length"].append((c, bd))
            if max(bd["strides"]) > stride_max:
                field_fail["strides"].append((c, bd))
        p.per_column.append({"column": c, "block (first row, rows)": [first, count],
                             "runs (first row of y, first id, rows)": [list(r) for r in runs], "steps": steps,
                             "bds": bds, "stream": stream})

    all_runs = [len(col["runs (first row of y, first id, rows)"]) for col in p.per_column]
    all_steps = [len(col["steps"]) for col in p.per_column]
    p.schedule = {
        "rows per run (at most)": cap,
        "runs per step (at most)": runs_per_step,
        "steps in flight": F,
        "runs per column": all_runs,
        "steps per column": all_steps,
        "steps (most of a column)": max(all_steps),
        f"{S} tasks queued per channel (at most)": worst["src queued"],
        f"{Y} tasks queued per channel (at most)": worst["y queued"],
        "shim BDs in use per column (at most)": worst["bds"],
    }
    # The BD fields of every BD of the invocation (one check per field, the first offender named).
    def bad_detail(kind, what, ok_text):
        bad = field_fail[kind]
        if not bad:
            return ok_text
        c, b = bad[0]
        return (f"{len(bad)} BD(s), e.g. column {c} step {b['step']} {b['what']} BD {b['bd']}: sizes {b['sizes']} "
                f"strides {b['strides']}: {what}")
    nbd = sum(len(col["bds"]) for col in p.per_column)
    d0 = bd_pattern(0, 1, row_len, tile, 0, wrap)["sizes"][3]
    check("shim BDs: d0 size (the tile, halved while past the wrap)", not field_fail["d0"],
          bad_detail("d0", f"d0 {d0} > {wrap} words", f"{d0} <= {wrap} words" +
                     (f" (the tile {tile} as {tile // d0} x {d0})" if d0 != tile else "")))
    check("shim BDs: d1 size (d0 runs of a row)", not field_fail["d1"],
          bad_detail("d1", f"{row_len // d0} > {wrap}", f"{row_len // d0} <= {wrap}"))
    check("shim BDs: buffer length", not field_fail["length"],
          bad_detail("length", f"past {SHIM_LENGTH_MAX} words", f"{nbd} BD(s) of at most {SHIM_LENGTH_MAX} words"))
    check("shim BDs: strides", not field_fail["strides"],
          bad_detail("strides", f"past {stride_max} words", f"{nbd} BD(s), strides at most {stride_max} words"))

    # The runtime sequence's operands (fp32 values): the source's rows, y's n_ids rows.
    p.tensors = {f"{S} (arg {desc.src_arg})": (p.src_rows - 1) * ss + row_len,
                 f"{Y} (arg {desc.y_arg})": (n - 1) * ys + row_len}
    # DRAM traffic as the host counts it: every BD's rows x the row.
    p.traffic = {f"{S} read (bytes)": moved[S], f"{Y} written (bytes)": moved[Y], "read (bytes)": moved[S],
                 "written (bytes)": moved[Y]}
    want = 4 * n * row_len
    check("traffic: every id's row read once and written once", moved[S] == want and moved[Y] == want,
          f"{S} {moved[S]}, {Y} {moved[Y]} bytes; {n} x {row_len} x 4 = {want}")


# ---------------------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------------------
def kib(n):
    return f"{n} B ({n / 1024:.2f} KiB)"


def _short(lst, n=6):
    return str(lst) if len(lst) <= n else f"{str(lst[:n])[:-1]}, ... ({len(lst)} in all)]"


def print_plan_text(p, out=sys.stdout):
    w = out.write
    S, Y = list(p.strides)
    w(f"design: gather ({p.design}), family {p.family} ({p.contract}: DMAs only, no core program), tile {p.tile} "
      f"values ({p.chunk_bytes} B chunks), {p.columns} column(s), npu2\n")
    w(f"description: {p.dataflow}, layout {p.layout}\n")
    w(f"invocation: {p.n_ids} id(s) {_short(p.ids, 12)} of {p.src_rows} source rows, rows of {p.row_len} values "
      f"({p.chunks} chunk(s) of {p.tile}), {S} stride {p.strides[S]}, {Y} stride {p.strides[Y]}\n")
    w("\nFIFOs (per column c):\n")
    for f in p.fifos:
        w(f"  {f.name:16s} {f.path}\n")
        w(f"  {'':16s} object {f.obj_bytes} B x depth {f.depth}; {f.channels}\n")
    w("memory tile (each column):\n")
    for k, v in p.memtile_bytes.items():
        w(f"  {k:52s} {kib(v)}\n")
    w("\nDMA channels (each column):\n")
    for tile_name, dirs in p.channels.items():
        for d, (used, avail, what) in dirs.items():
            w(f"  {tile_name:12s} {d}: {used} of {avail} ({what})\n")
    w("stream-switch ports (per column):\n")
    for what, (used, avail) in p.streams.items():
        w(f"  {what:36s} {used} of {avail}\n")
    w("\ngrid:\n")
    w(f"  columns used: {p.grid['columns used']} of {p.columns}\n")
    w(f"  blocks (first row, rows) per column: {_short(p.grid['blocks (first row, rows)'], 8)}\n")
    w("schedule:\n")
    for k, v in p.schedule.items():
        w(f"  {k}: {_short(v, 8) if isinstance(v, list) else v}\n")
    for col in p.per_column[:4]:
        w(f"column {col['column']}: rows {col['block (first row, rows)']}, runs (first row of y, first id, rows) "
          f"{_short(col['runs (first row of y, first id, rows)'], 4)}\n")
        for b in col["bds"][:3]:
            w(f"  step {b['step']} {b['what']:4s} BD {b['bd']}: offset {b['offset']} sizes {b['sizes']} strides "
              f"{b['strides']}{', token' if b['token'] else ''}\n")
        if len(col["bds"]) > 3:
            w(f"  ... {len(col['bds'])} BDs in all\n")
        w(f"  stream: {_short([' '.join(map(str, e)) for e in col['stream']], 6)}\n")
    if len(p.per_column) > 4:
        w(f"... {len(p.per_column)} columns in all\n")
    w("runtime sequence operands (fp32 values):\n")
    for k, v in p.tensors.items():
        w(f"  {k}: {v}\n")
    w("DRAM traffic of this invocation:\n")
    for k, v in p.traffic.items():
        w(f"  {k}: {v}\n")
    w("\nchecks:\n")
    for what, ok, detail in p.checks:
        w(f"  [{'ok' if ok else 'FAIL'}] {what}: {detail}\n")


def plan_json(p):
    d = asdict(p)
    d["fifos"] = [dict(asdict(f), bytes=f.bytes) for f in p.fifos]
    d["channels"] = {t: {k: {"used": u, "available": a, "what": s} for k, (u, a, s) in dirs.items()}
                     for t, dirs in p.channels.items()}
    d["streams"] = {k: {"used": u, "available": a} for k, (u, a) in p.streams.items()}
    d["checks"] = [{"check": w, "ok": ok, "detail": det} for w, ok, det in p.checks]
    d["checks failed"] = [f"{w}: {det}" for w, ok, det in p.checks if not ok]
    return d


# ---------------------------------------------------------------------------------------------------
# MLIR emission (needs mlir-aie >= 1.4 and numpy)
# ---------------------------------------------------------------------------------------------------
def emit_mlir(desc, p):
    try:
        import numpy as np
        import aie.iron.device as iron_devices
        from aie.helpers.taplib import TensorAccessPattern
        from aie.iron import ObjectFifo, Program, Runtime, TaskGroup
        from aie.iron.device import Tile
    except ImportError as e:
        raise PlanError(f"emitting MLIR needs mlir-aie >= 1.4 (python package 'aie') and numpy: {e}")

    raw = desc.raw
    arr = raw["array"]
    shim_row, mem_row = arr["shim_row"], arr["memtile_row"]
    S, Y = desc.src_operand, desc.y_operand
    f32 = np.dtype[np.float32]
    chunk_ty = np.ndarray[(p.tile,), f32]
    lengths = [p.tensors[f"{S} (arg {desc.src_arg})"], p.tensors[f"{Y} (arg {desc.y_arg})"]]
    tensor_tys = [np.ndarray[(n,), f32] for n in lengths]

    # Per column: the source's FIFO into the memory tile, forwarded to the shim as y. Every column of the
    # array gets its FIFOs (the xclbin serves every id list); the sequence drives the columns with rows.
    src_ends, y_ends = [], []
    for col in range(p.columns):
        src = ObjectFifo(chunk_ty, name=f"{desc.src['name']}_{col}", depth=desc.src_depth)
        y = src.cons().forward(obj_type=chunk_ty, depth=desc.y_depth, name=f"{desc.y['name']}_{col}",
                               tile=Tile(col, mem_row))
        src_ends.append(src.prod(tile=Tile(col, shim_row)))
        y_ends.append(y.cons(tile=Tile(col, shim_row)))

    def tap(length, bd):
        # The host's BD pattern (d0 within the wrap, a one-row BD without a row stride).
        return TensorAccessPattern((length,), bd["offset"], bd["sizes"], bd["strides"])

    in_flight = raw["shim"]["steps_in_flight"]
    most = p.schedule["steps (most of a column)"]

    def sequence(src_t, y_t, src_hs, y_hs):
        # The host builds the real stream from the ids at submission (src/runtime/gather-sequence.h) and
        # only the xclbin of a build is used; this sequence is the host's schedule for this id list in
        # IRON's words: per step, a fill per source run and a drain of the step's rows of y, the drain
        # awaited; step j of every used column in one task group, as many groups in flight as the
        # description's steps (IRON picks its own BD ids).
        pending = []
        for j in range(most):
            group = TaskGroup()
            for col in p.per_column:
                c = col["column"]
                for bd in col["bds"]:
                    if bd["step"] != j:
                        continue
                    if bd["what"] == S:
                        src_hs[c].fill(src_t, tap=tap(lengths[0], bd), group=group)
                    else:
                        y_hs[c].drain(y_t, tap=tap(lengths[1], bd), wait=True, group=group)
            pending.append(group)
            if len(pending) >= in_flight:
                pending.pop(0).finish()
        for group in pending:
            group.finish()

    rt = Runtime(sequence, tensor_tys + [src_ends, y_ends])
    device = iron_devices.NPU2() if p.columns == arr["max_columns"] else getattr(iron_devices, f"NPU2Col{p.columns}")()
    return Program(device, rt).resolve_program()


# ---------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------
def parse_ids(text):
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise PlanError(f"--ids {text!r}: a comma-separated list of integers")


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="The gather design (GET_ROWS of fp32 rows, DMAs only) for XDNA2 (NPU2): prints the data-movement "
                    "plan of one id list, or emits MLIR with mlir-aie >= 1.4 (IRON).")
    ap.add_argument("--dataflow", default=DEFAULT_DATAFLOW,
                    help="the data-movement description (default aie/get_rows/dataflow.json; another file only to "
                         "try a change to one)")
    ap.add_argument("--layout", help="layout of the description (default its first)")
    ap.add_argument("--family", help="family (default the description's first)")
    ap.add_argument("--tile", type=int,
                    help="values per chunk, i.e. which xclbin (default: the largest that divides --row-len, as the "
                         "host picks)")
    ap.add_argument("--ids", default="5", help="the ids, comma-separated (default 5)")
    ap.add_argument("--src-rows", type=int, help="rows of the source (default the largest id + 1)")
    ap.add_argument("--row-len", type=int, default=4096, help="values per row (default 4096)")
    ap.add_argument("--src-stride", type=int, help="values between rows of the source (default --row-len)")
    ap.add_argument("--y-stride", type=int, help="values between rows of y (default --row-len)")
    ap.add_argument("--cols", type=int, help="array columns, 1..max_columns (default max_columns)")
    ap.add_argument("--print-plan", action="store_true", help="print the data-movement plan (no mlir-aie needed)")
    ap.add_argument("--format", choices=["text", "json"], default="text", help="plan format")
    ap.add_argument("--list-tiles", action="store_true", help="print the tiles the family has an xclbin for")
    ap.add_argument("--list-contracts", action="store_true",
                    help="print 'contract source' per contract of the family; the source is '-': a gather has no "
                         "kernel")
    ap.add_argument("-o", "--output", help="write the MLIR here (default stdout)")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        desc = load_description(args.dataflow, args.layout)
        families = families_of(desc)
        family = args.family or next(iter(families))
        if family not in families:
            raise PlanError(f"unknown family {family!r} ({', '.join(families)})")
        if args.list_tiles:
            print(" ".join(str(t) for t in family_tiles(desc, family)))
            return 0
        if args.list_contracts:
            for c in families[family]:
                print(f"{c} -")
            return 0
        plan = make_plan(desc, parse_ids(args.ids), args.src_rows, args.row_len, args.src_stride, args.y_stride,
                         args.cols, args.tile, family)
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
            if failed:
                print(f"\n{len(failed)} check(s) failed:")
                for what, _, detail in failed:
                    print(f"  {what}: {detail}")
        return 1 if failed else 0
    if failed:
        for what, _, detail in failed:
            print(f"design.py: check failed: {what}: {detail}", file=sys.stderr)
        return 1
    try:
        module = emit_mlir(desc, plan)
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
