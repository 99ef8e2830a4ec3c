#!/usr/bin/env python3
"""The "scatter" design for XDNA2 (NPU2, AIE2P): SET_ROWS of fp32 rows into an F16 or Q8_0 KV cache, the
IRON program of its data-movement description (aie/set_rows/dataflow.json).

    y[ids[r]] = f16(x[r])     r < rows, rows of row_len fp32 values      family f16,  contract f32_to_f16
    y[ids[r]] = q8_0(x[r])                                               family q8_0, contract f32_to_q8_0
    y[r] = f16(x[r])          CPY of fp32 rows to F16 rows: ids 0..rows-1 (no --ids)

What the program is, all of it read from the description (--dataflow), the one the host's stream builder
(src/runtime/scatter-sequence.h) and the simulator's DMA interpreter read too; no number of the data
movement is written here:
  - One family per output format (f16, q8_0), one program each (kernels/f32_to_f16.cc, f32_to_q8_0.cc: the
    family's kernel_stack "source"), one xclbin per family and tile (values per chunk: the numeric keys of
    the family's kernel_stack, 128 to 1024). The host takes the largest tile that divides the row; a row
    that no tile divides is not the design's. The layout is the one named after the family: its y objects
    are the family's format (units: "half", 2 bytes per value; "q8_0", 34 bytes per 32 values).
  - Per column c (shim (c, shim_row), memory tile (c, memtile_row), core (c, first_core_row); array.core_rows
    is 1, so a group is one chunk): the shim's MM2S channel streams x rows into a memory-tile FIFO (x_l3l2)
    of one-chunk objects (tile fp32 values), split in one part to the column's core (x_l2l1); the core
    converts each chunk into the family's format (one kernel call, n = the tile) and writes it to y_l1l2,
    joined in one part into the memory-tile FIFO y_l2l3 that the shim's S2MM channel drains into y. The
    memory tile and the core see a stream of chunks only: which rows of y they land in is the shim BDs'
    business, so one xclbin per family and tile serves every id list.
  - The ids are data (llama.cpp's KV-cache rows are a graph input written before the graph runs): the host
    reads them at submission and builds the instruction stream from them. This program's runtime sequence
    is the host's schedule for one id list (--ids), in IRON's words.
  - The work, as the host deals it (the rows design's grid, src/runtime/rows-sequence.cpp): groups = row /
    tile chunks; R = min(rows, columns) row blocks x S segments of each row's chunks, S = 1 when rows >=
    columns, else max(1, min(groups, columns // rows)); column c takes row block c // S and segment c % S
    (consecutive blocks, the first ones one larger: block_first / block_count). So a decode token's one K
    row spreads over the columns when it has several chunks, and many rows go to the columns in blocks.
  - Per used column, before any data moves: the core's RTP words (a BlockWrite of rtp_word_count words at
    rtp_core_address: contract 0, chunks = the block's rows x the segment's chunks, version), then its
    barrier lock's value (barrier.set_value); every column's, before the first step.
  - Per column, its block's rows are cut into runs of consecutive ids (ids[r] = ids[r - 1] + 1, at most
    HOST_ROWS_PER_RUN rows); a step takes as many runs as a BD slot has y BD ids (2), on the slots in turn:
    one x task over the step's rows (consecutive rows of x: one BD, slot.x[0]) and one y task per run at the
    row its first id names (slot.y[i]), the step's last y task pushed with the completion token. The
    stream pushes step k of every column, then syncs step k - 1 of every column that had one (on its shim
    S2MM channel), and the last step at the end: a channel completes its tasks in order, so the token of
    a step's last y task says its x task and earlier y tasks are done too, and two steps are in flight.
  - A BD moves rows of its segment in chunks: sizes (d0, d1, d2) = (chunk, segment / chunk, rows),
    strides (1, chunk, row stride) in 32-bit words, a one-row BD without a row stride (0); x's chunk is the
    tile (fp32 values), y's the tile's bytes in the family's format as words (1024 values: 512 words of
    F16, 272 of Q8_0 blocks). A segment is contiguous, so d0 may be any divisor of the chunk: one past the
    d0 wrap (1024 > limits.wrap_max 1023) is halved until it fits, as the host's rows_bd does.
  - Refused, as the host refuses them: no ids, an id outside y's rows, two rows with one id (two columns'
    DMAs would write that row in no defined order; the CPU's last row wins), a row no tile divides.

`--print-plan` prints the plan and checks it against the AIE2P limits: core and memory-tile memory, the DMA
channels and stream-switch ports, what the kernels' signatures and loop-count hints allow at this tile, the
y chunk in whole 32-bit words, the RTP words and the barrier protocol, the shim BDs (ids, slots, BDs in
flight), the shim's task queues, the BD fields of every BD of the invocation (d0 and d1 wraps, strides,
length) and the row strides (x's of more than one row, y's of more than one row, y's in whole words). It
needs only a bare Python 3 (no numpy, no mlir-aie), so CI can check the plan
(tests/aie/check_design_set_rows.sh). Exit status: 0 when every check passes, 1 when one fails (the failed
ones printed), 2 for a shape or description the design refuses (the reason on stderr). Without --print-plan
the IRON program is emitted (mlir-aie >= 1.4: callback Runtime, TaskGroup, handle.fill/drain, Buffer RTPs,
WorkerRuntimeBarrier, as ../add/design.py); a plan with a failed check is not.

Status, plainly: the plan's numbers are checked against a recomputation of the rules above
(tests/aie/set_rows_plan_verify.py: grid, runs, steps, BD ids and patterns, RTP words, the stream's pushes
and syncs, a replay of the stream and of the BDs row by row and, for small shapes, byte by byte through a
conversion that keeps value indices). They were compared with the host's stream builder
(src/runtime/scatter-sequence.cpp, being written beside this script, and rows_bd) by reading it, not by
running it. Where the two may part: this plan requires every BD's d1 within the wrap, where the host's
shim_bd_from_pattern takes a contiguous BD (one row, or rows back to back) as a plain length whatever its
wraps (a segment of more than 511 chunks of 1024 values); the host counts its steps in flight as its BD
slots and syncs one step behind, which the plan checks the description says too. The IRON program
(emit_mlir) has only been run on stand-ins of IRON's classes (tests/aie/set_rows_iron_check.py, on
tests/aie/check_barrier.py's). Unverified: the tile= keyword of split, join, prod and cons (as
../add/design.py writes it), a drain with wait=False inside a task group, the y tensor and objects as
int32 words (the Q8_0 kernel takes uint8_t *: a bare pointer, so the memref's element type does not reach
the C ABI; every y chunk is whole words, which the plan checks), FIFO handles of unused columns handed to the
Runtime without a fill or drain, the NPU2Col<n> device names. Never run by the real mlir-aie python
package, never compiled by aiecc, never linked with Peano's objects of the kernels, never run on an NPU.
"""

import argparse
import json
import os
import re
import sys
from dataclasses import asdict, dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
AIE_DIR = os.path.normpath(os.path.join(HERE, ".."))
DEFAULT_DATAFLOW = os.path.join(HERE, "dataflow.json")
INCLUDE_DIR = os.path.join(AIE_DIR, "include")

# ---------------------------------------------------------------------------------------------------
# AIE2P hardware limits the plan is checked against: facts of the device, not of this design's data
# movement, so they live here (as in ../get_rows/design.py), not in dataflow.json.
# ---------------------------------------------------------------------------------------------------
CORE_S2MM, CORE_MM2S = 2, 2        # DMA channels of a compute tile (AM027)
MEMTILE_S2MM, MEMTILE_MM2S = 6, 6  # AM027 "AIE-ML v2 Memory Tile DMA": six S2MM and six MM2S channels
SHIM_MM2S, SHIM_S2MM = 2, 2        # shim DMA: two each way
NPU2_COLUMNS = 8                   # npu2's columns (each a shim, a memory tile, four cores)
NPU2_SHIM_ROW, NPU2_MEMTILE_ROW = 0, 1
NPU2_CORE_ROWS = (2, 5)            # npu2's core rows, first and last
CORE_DATA_BYTES = 64 * 1024        # a compute tile's data memory
MEMTILE_BYTES = 512 * 1024         # a memory tile's data memory
# Stream-switch ports between vertically adjacent tiles (mlir-aie AIE2TargetModel, as ../add/design.py).
UP_PORTS, DOWN_PORTS = 6, 4
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
WORD = 4                           # a shim BD addresses 32-bit words
# The host's stream builder's cap on a run's rows (kScatterRunRows = kRowsPerStep, src/runtime/
# scatter-sequence.h), not a number of the description: a step's x task covers its runs' rows, and the
# rows design's steps take at most that many. tests/aie/check_design_set_rows.sh checks the two agree.
HOST_ROWS_PER_RUN = 256
# The host's stream syncs step k - 1 after it has pushed step k, whatever the description says: two
# steps in flight. The plan checks the description says the same (shim.steps_in_flight, its BD slots).
HOST_STEPS_IN_FLIGHT = 2
# The tiles the kernels take: their loops promise the compiler 4 trips of 32 values
# (AIE_LOOP_MIN_ITERATION_COUNT(4), checked from the sources too), and a core holds chunks of at most
# xdna_aie::kSetRowsChunk values (aie/include/xdna_aie/set_rows_tiles.h).
TILE_MIN, TILE_MAX = 128, 1024
# What the core program passes each kernel: the x object, the y object, n (the tile).
KERNEL_PASSES = ("x: one chunk of fp32 (pointer)", "y: one chunk in the family's format (pointer)", "n: int32")
KERNEL_KINDS = ["pointer", "pointer", "int32"]
COUNT_WORDS = ("contract", "chunks", "version")


class PlanError(Exception):
    pass


# ---------------------------------------------------------------------------------------------------
# The description (dataflow.json), read once and checked for what this program can build.
# ---------------------------------------------------------------------------------------------------
@dataclass
class Layout:
    """One family's layout: x shim -> memory tile -> core, y core -> memory tile -> shim."""
    name: str
    x_mem: dict            # x_l3l2
    x_core: dict           # x_l2l1 (a split of one part)
    y_core: dict           # y_l1l2 (a join of one part)
    y_mem: dict            # y_l2l3
    depths: dict           # FIFO name -> depth
    y_unit: str            # the unit of y's objects (the family's format)


@dataclass
class Description:
    path: str
    raw: dict
    design: str
    layouts: dict          # family -> Layout (the layout named after it)
    x_operand: str
    y_operand: str
    x_arg: int
    y_arg: int
    core_rows: int


def _depth(raw, value, where):
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    depths = raw.get("depths", {})
    if value not in depths or not isinstance(depths[value], int):
        raise PlanError(f"{where}: depth {value!r} is neither a number nor a key of \"depths\"")
    return depths[value]


def load_description(path=DEFAULT_DATAFLOW):
    try:
        return _load_description(path)
    except (KeyError, TypeError, AttributeError, StopIteration, ValueError) as e:
        raise PlanError(f"{path}: not a scatter description (the movement this program builds): {type(e).__name__} {e}")


def _load_description(path):
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError) as e:
        raise PlanError(f"{path}: {e}")
    if raw.get("format") != "xdna-dataflow" or not isinstance(raw.get("design"), str):
        raise PlanError(f"{path}: not a dataflow description (format \"xdna-dataflow\" with a \"design\")")
    if raw.get("movement") != "scatter":
        raise PlanError(f"{path}: movement {raw.get('movement')!r}: this program builds the \"scatter\" movement")
    operands = sorted(raw["operands"], key=lambda o: o["arg"])
    if len(operands) != 2:
        raise PlanError(f"{path}: operands {[o['name'] for o in operands]}: a scatter has one input and one output")
    arg = {o["name"]: o["arg"] for o in operands}
    units = raw["units"]
    layouts = {spec["name"]: spec for spec in raw["layouts"]}
    families = {k: v for k, v in raw["families"].items() if k != "about"}
    out, names = {}, None
    for family in families:
        # One layout per family, named after it (the host's parser wants the same): its y objects are
        # the family's format.
        if family not in layouts:
            raise PlanError(f"{path}: family {family} has no layout named after it (layouts: {', '.join(layouts)}); "
                            "a scatter's layout is its family's output format")
        spec = layouts[family]
        where = f"{path}: layout {family}"
        fifos = list(spec["fifos"])
        by = lambda frm, to: [f for f in fifos if (f.get("from"), f.get("to")) == (frm, to)]
        ends = [by("shim", "memtile"), by("memtile", "core"), by("core", "memtile"), by("memtile", "shim")]
        if len(fifos) != 4 or any(len(e) != 1 for e in ends):
            raise PlanError(f"{where}: FIFOs {[(f['name'], f.get('from'), f.get('to')) for f in fifos]}: a scatter has "
                            "x shim -> memtile -> core and y core -> memtile -> shim, one FIFO each")
        x_mem, x_core, y_core, y_mem = (e[0] for e in ends)
        if x_core.get("link") != "split" or x_core.get("source") != x_mem["name"]:
            raise PlanError(f"{where}: {x_core['name']} is linked by {x_core.get('link')!r} from "
                            f"{x_core.get('source')!r}; this program splits {x_mem['name']} to the column's one core "
                            "(link \"split\")")
        if y_core.get("link") != "join" or y_core.get("sink") != y_mem["name"]:
            raise PlanError(f"{where}: {y_core['name']} is linked by {y_core.get('link')!r} into {y_core.get('sink')!r}; "
                            f"this program joins the core's objects into {y_mem['name']} (link \"join\")")
        for f, direction in ((x_mem, "mm2s"), (y_mem, "s2mm")):
            ch = f.get("shim_channel") or {}
            if ch.get("direction") != direction or not isinstance(ch.get("channel"), int):
                raise PlanError(f"{where}: {f['name']} needs a shim channel of direction {direction!r}")
            if f.get("operand") not in arg:
                raise PlanError(f"{where}: {f['name']} names operand {f.get('operand')!r}, not one of the description's")
        if x_mem["operand"] == y_mem["operand"]:
            raise PlanError(f"{where}: {x_mem['name']} and {y_mem['name']} move the same operand {x_mem['operand']!r}")
        if names is not None and names != (x_mem["operand"], y_mem["operand"]):
            raise PlanError(f"{where}: operands {x_mem['operand']}, {y_mem['operand']}; layout {next(iter(out))} moves "
                            f"{names[0]}, {names[1]}")
        names = (x_mem["operand"], y_mem["operand"])
        for f in (x_mem, x_core, y_core, y_mem):
            if f["object"]["count"] != 1:
                raise PlanError(f"{where}: {f['name']}: objects of {f['object']['count']} units; this program moves "
                                "one chunk per object (a column's one core takes one chunk per call)")
            if f["object"]["unit"] not in units:
                raise PlanError(f"{where}: {f['name']}'s unit {f['object']['unit']!r} is not in \"units\"")
        # x is fp32: its chunk is tile values of 4 bytes, the kernels' const float *.
        if x_mem["object"]["unit"] != x_core["object"]["unit"] or units[x_mem["object"]["unit"]] != 4:
            raise PlanError(f"{where}: {x_mem['name']}, {x_core['name']}: units {x_mem['object']['unit']!r}, "
                            f"{x_core['object']['unit']!r}; this program reads fp32 rows (one unit of 4 bytes per value)")
        if y_mem["object"]["unit"] != y_core["object"]["unit"]:
            raise PlanError(f"{where}: {y_core['name']} and {y_mem['name']} hold different units: the join hands the "
                            "core's objects on whole")
        depths = {f["name"]: _depth(raw, f["depth"], f"{where}: {f['name']}") for f in (x_mem, x_core, y_core, y_mem)}
        out[family] = Layout(family, x_mem, x_core, y_core, y_mem, depths, y_mem["object"]["unit"])
    if not out:
        raise PlanError(f"{path}: no families")
    cr = raw["array"]["core_rows"]
    if not isinstance(cr, int) or isinstance(cr, bool) or cr < 0:
        raise PlanError(f"{path}: array.core_rows {cr!r}")
    for name, spec in units.items():
        ok = (isinstance(spec, int) and not isinstance(spec, bool) and spec > 0) or \
            (isinstance(spec, dict) and all(isinstance(spec.get(k), int) and spec[k] > 0 for k in ("bytes", "values")))
        if name != "about" and not ok:
            raise PlanError(f"{path}: units.{name} {spec!r}: bytes per value, or {{\"bytes\": B, \"values\": V}}")
    X, Y = names
    return Description(path, raw, raw["design"], out, X, Y, arg[X], arg[Y], cr)


def families_of(desc):
    return {k: v for k, v in desc.raw["families"].items() if k != "about"}


def family_tiles(desc, family):
    """The tiles a family has an xclbin for: the numeric keys of its kernel_stack."""
    return sorted(int(t) for t in desc.raw["core_budget"]["kernel_stack"][family] if str(t).isdigit())


def default_tile(desc, family, row_len):
    """The host's choice (rows_tile_for with core_rows 1): the largest tile that divides the row."""
    fits = [t for t in family_tiles(desc, family) if row_len > 0 and row_len % t == 0]
    return fits[-1] if fits else None


def unit_bytes(spec, tile):
    """Bytes of `tile` values in a unit: an integer is bytes per value, {"bytes": B, "values": V} is B bytes
    per V values (the tile then a multiple of V). None when the tile is not whole units."""
    if isinstance(spec, dict):
        b, v = spec["bytes"], spec["values"]
        return b * (tile // v) if tile % v == 0 else None
    return spec * tile


# ---------------------------------------------------------------------------------------------------
# What the kernels take and promise (their sources, not the data movement).
# ---------------------------------------------------------------------------------------------------
_HINT_RE = re.compile(r"AIE_LOOP_MIN_ITERATION_COUNT\((\d+)\)")
_STEP_RE = re.compile(r"for\s*\([^;]*;\s*\w+\s*<\s*n\s*;\s*\w+\s*\+=\s*([\w:]+)\s*\)")
_INCLUDE_RE = re.compile(r'#include\s+"(xdna_aie/[\w.-]+)"')


def family_source(desc, family):
    """The family's kernel file (its kernel_stack "source")."""
    return desc.raw["core_budget"]["kernel_stack"][family].get("source")


def kernels_dir(desc, family):
    """kernels/ beside the description holding the family's source, else (a copy of a description
    elsewhere) aie/<design>/kernels; None when neither has it."""
    source = family_source(desc, family)
    if not source:
        return None
    for d in (os.path.join(os.path.dirname(os.path.abspath(desc.path)), "kernels"),
              os.path.join(AIE_DIR, desc.design, "kernels")):
        if os.path.isfile(os.path.join(d, source)):
            return d
    return None


def kernel_source(desc, family, symbol):
    """(file name, parameter list, body text from the definition on, whole text) of the kernel defining
    `symbol`: the family's source first, then the other .cc files of its directory."""
    d = kernels_dir(desc, family)
    if d is None:
        return None
    source = family_source(desc, family)
    for n in [source] + sorted(x for x in os.listdir(d) if x.endswith(".cc") and x != source):
        with open(os.path.join(d, n), encoding="utf-8") as f:
            text = f.read()
        m = re.search(r"\bvoid\s+" + re.escape(symbol) + r"\s*\(([^)]*)\)\s*\{", text)
        if m:
            return n, [x.strip() for x in m.group(1).split(",") if x.strip()], text[m.end():], text


def _constant(name, text):
    """The value of `constexpr int name = N;` in the kernel's text or an xdna_aie header it includes."""
    name = name.split("::")[-1]
    pat = re.compile(r"constexpr\s+int\s+" + re.escape(name) + r"\s*=\s*(\d+)\s*;")
    m = pat.search(text)
    if m:
        return int(m.group(1)), "its source"
    for inc in _INCLUDE_RE.findall(text):
        try:
            with open(os.path.join(INCLUDE_DIR, inc), encoding="utf-8") as f:
                m = pat.search(f.read())
        except OSError:
            continue
        if m:
            return int(m.group(1)), inc
    return None


def _param_kind(param):
    if "*" in param:
        return "pointer"
    if re.search(r"\bint32_t\b", param):
        return "int32"
    return param


def kernel_checks(desc, family, contracts, tile):
    """Per kernel of the family: it takes what the core program passes (x, y, n), its loop steps through the
    tile in whole steps, and keeps its AIE_LOOP_MIN_ITERATION_COUNT(h) promise at n = tile (the compiled
    loop may have no path for fewer trips; the host build defines the hint away, so the simulator cannot
    show it)."""
    checks = []
    for symbol in contracts:
        found = kernel_source(desc, family, symbol)
        if found is None:
            checks.append((f"kernel {symbol}", False,
                           f"no .cc file of the directory of family {family}'s source {family_source(desc, family)!r} "
                           f"(kernels/ beside {desc.path}, or aie/{desc.design}/kernels) defines {symbol}"))
            continue
        source, params, body, text = found
        kinds = [_param_kind(x) for x in params]
        checks.append((f"kernel {symbol} ({source}) takes what the core program passes",
                       kinds == KERNEL_KINDS and "float" in params[0],
                       f"{symbol}({', '.join(params)}); the core program passes ({'; '.join(KERNEL_PASSES)})"))
        step = _STEP_RE.search(body)
        lanes = _constant(step.group(1), text) if step else None
        if lanes is None:
            checks.append((f"kernel {symbol} ({source}) loop step", False,
                           f"{source}: no loop over n whose step is a constexpr int of its own or of an xdna_aie header"))
            continue
        lanes, at = lanes
        checks.append((f"kernel {symbol} ({source}) tile in whole steps of its loop", tile % lanes == 0,
                       f"tile {tile}, steps of {lanes} values ({step.group(1)}, in {at})"))
        hint = _HINT_RE.search(body)
        if hint is None:
            continue
        h, trips = int(hint.group(1)), tile // lanes
        checks.append((f"kernel {symbol} ({source}) loop keeps its min_iteration_count at n = tile", trips >= h,
                       f"{tile} / {lanes} = {trips} trip(s), AIE_LOOP_MIN_ITERATION_COUNT({h})" +
                       ("" if trips >= h else f": not defined on the NPU below tile {h * lanes}")))
    return checks


# ---------------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------------
@dataclass
class Fifo:
    name: str
    path: str
    obj_bytes: int
    depth: int
    home: str
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
    contract_index: int
    kernel: str
    tile: int
    columns: int
    rows: int
    row_len: int
    x_stride: int
    y_rows: int
    y_stride: int
    ids: list
    chunks: int            # chunks per row (groups: core_rows is 1)
    x_chunk_bytes: int
    y_unit: str
    y_chunk_bytes: int
    y_row_bytes: int
    stack_bytes: int
    fifos: list = field(default_factory=list)
    core_bytes: dict = field(default_factory=dict)
    memtile_bytes: dict = field(default_factory=dict)
    channels: dict = field(default_factory=dict)
    streams: dict = field(default_factory=dict)
    grid: dict = field(default_factory=dict)
    rtp: list = field(default_factory=list)
    per_column: list = field(default_factory=list)
    stream: list = field(default_factory=list)
    schedule: dict = field(default_factory=dict)
    tensors: dict = field(default_factory=dict)
    traffic: dict = field(default_factory=dict)
    core_program: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)


def block_first(total, parts, i):
    """The host's block_first: where block i of `total` dealt to `parts` consecutive blocks starts."""
    return total // parts * i + min(i, total % parts)


def block_count(total, parts, i):
    """The host's block_count: the size of block i (the first total % parts one larger)."""
    return total // parts + (1 if i < total % parts else 0)


def cut_runs(ids, first, count, cap):
    """A block's rows of x cut into runs of consecutive ids, at most `cap` rows each: (first row of x,
    first id, rows) per run, in the order of x."""
    runs = []
    for r in range(first, first + count):
        if runs and runs[-1][2] < cap and ids[r] == ids[r - 1] + 1:
            runs[-1] = (runs[-1][0], runs[-1][1], runs[-1][2] + 1)
        else:
            runs.append((r, ids[r], 1))
    return runs


def d0_of(chunk_words, wrap):
    """rows_bd's d0: the chunk, halved while past the wrap (a segment is contiguous, so any divisor of it
    moves the same words in the same order)."""
    d0 = chunk_words
    while d0 > wrap and d0 % 2 == 0:
        d0 //= 2
    return d0


def bd_pattern(offset_bytes, rows, seg_words, chunk_words, stride_words, wrap):
    """A shim BD of `rows` rows of a segment of seg_words words in chunks of chunk_words, outermost first:
    [iteration, d2, d1, d0] (no iteration: 1); one row has no row stride."""
    d0 = max(1, d0_of(chunk_words, wrap))  # a y chunk of no whole word (its check fails) moves nothing
    return {"offset (bytes)": offset_bytes, "sizes": [1, rows, seg_words // d0, d0],
            "strides": [0, stride_words if rows > 1 else 0, d0, 1]}


def make_plan(desc, ids=None, rows=None, row_len=1024, x_stride=None, y_rows=None, y_stride=None, columns=None,
              tile=None, family=None):
    raw = desc.raw
    families = families_of(desc)
    family = family or next(iter(families))
    if family not in families:
        raise PlanError(f"unknown family {family!r} ({', '.join(families)})")
    contracts = families[family]
    if len(contracts) != 1:
        raise PlanError(f"family {family}: programs {contracts}; a scatter family is one program (its output format)")
    if raw["device"] != "npu2":
        raise PlanError(f"{desc.path}: device {raw['device']!r}: this design targets npu2 (AIE2P) only")
    max_cols = raw["array"]["max_columns"]
    columns = max_cols if columns is None else columns
    if not 1 <= columns <= max_cols:
        raise PlanError(f"--cols {columns}: npu2 has 1..{max_cols} columns")
    if ids is None:
        # No ids: a CPY, row r to row r.
        ids = list(range(1 if rows is None else rows))
    ids = list(ids)
    if not ids:
        raise PlanError("no ids: the scatter takes one id per row of x")
    if any(not isinstance(i, int) or isinstance(i, bool) for i in ids):
        raise PlanError(f"ids {ids[:8]}: ids are integers")
    rows = len(ids) if rows is None else rows
    if rows != len(ids):
        raise PlanError(f"{len(ids)} id(s) for {rows} row(s) of x: one id per row")
    if row_len <= 0:
        raise PlanError(f"a row of {row_len} values: the design takes rows of a positive number of values")
    y_rows = max(ids) + 1 if y_rows is None else y_rows
    if y_rows < 1:
        raise PlanError(f"--y-rows {y_rows}: y has at least one row")
    for r, i in enumerate(ids):
        if not 0 <= i < y_rows:
            raise PlanError(f"id {i} of row {r} is outside the {y_rows} rows of y (the host fails the run before any "
                            "row is written)")
    seen = {}
    for r, i in enumerate(ids):
        if i in seen:
            raise PlanError(f"id {i} names rows {seen[i]} and {r} of x: two columns' DMAs would write that row of y in "
                            "no defined order (the CPU's last row wins)")
        seen[i] = r
    tiles = family_tiles(desc, family)
    if tile is None:
        tile = default_tile(desc, family, row_len)
        if tile is None:
            raise PlanError(f"a row of {row_len} values: no tile of {tiles} divides it (a row must be a whole number "
                            "of chunks)")
    if tile not in tiles:
        raise PlanError(f"family {family} has no xclbin for tile {tile} (it has {', '.join(map(str, tiles))})")
    if row_len % tile:
        raise PlanError(f"a row of {row_len} values is not a whole number of chunks of tile {tile}")
    x_stride = row_len if x_stride is None else x_stride
    for name, s in (("--x-stride", x_stride), ("--y-stride", y_stride)):
        if s is not None and s < 0:
            raise PlanError(f"{name} {s}: a row stride is not negative")

    L = desc.layouts[family]
    units = raw["units"]
    x_chunk = units[L.x_mem["object"]["unit"]] * tile
    y_chunk_exact = unit_bytes(units[L.y_unit], tile)
    y_chunk = y_chunk_exact if y_chunk_exact is not None else 0
    chunks = row_len // tile
    y_row_bytes = chunks * y_chunk
    y_stride = y_row_bytes if y_stride is None else y_stride
    stack = raw["core_budget"]["kernel_stack"][family][str(tile)]
    p = Plan(dataflow=desc.path, design=desc.design, layout=L.name, family=family, contract=contracts[0],
             contract_index=0, kernel=(kernel_source(desc, family, contracts[0]) or ["?"])[0], tile=tile,
             columns=columns, rows=rows, row_len=row_len, x_stride=x_stride, y_rows=y_rows, y_stride=y_stride,
             ids=ids, chunks=chunks, x_chunk_bytes=x_chunk, y_unit=L.y_unit, y_chunk_bytes=y_chunk,
             y_row_bytes=y_row_bytes, stack_bytes=stack)
    check = lambda what, ok, detail: p.checks.append((what, bool(ok), detail))
    arr = raw["array"]

    check("array: one core per column, npu2's rows and columns",
          desc.core_rows == 1 and 1 <= max_cols <= NPU2_COLUMNS and arr["shim_row"] == NPU2_SHIM_ROW and
          arr["memtile_row"] == NPU2_MEMTILE_ROW and NPU2_CORE_ROWS[0] <= arr["first_core_row"] <= NPU2_CORE_ROWS[1],
          f"array.core_rows {desc.core_rows} (a group is one chunk, one core per column), max_columns {max_cols} of "
          f"{NPU2_COLUMNS}, shim row {arr['shim_row']}, memory tile row {arr['memtile_row']}, core row "
          f"{arr['first_core_row']}")
    check(f"family tiles: powers of two, {TILE_MIN} to {TILE_MAX}",
          all(t & (t - 1) == 0 and TILE_MIN <= t <= TILE_MAX for t in tiles), f"{family}: {tiles}")
    for what, ok, detail in kernel_checks(desc, family, contracts, tile):
        check(what, ok, detail)
    spec = units[L.y_unit]
    check("y chunk: the tile in whole units of the family's format", y_chunk_exact is not None,
          f"unit {L.y_unit!r} {json.dumps(spec)}, tile {tile}" +
          ("" if y_chunk_exact is not None else f": {tile} values are not whole units of {spec['values']}"))
    check("y chunk in whole 32-bit words", y_chunk > 0 and y_chunk % WORD == 0,
          f"{y_chunk} bytes ({L.y_unit} at tile {tile})" +
          (f" = {y_chunk // WORD} words" if y_chunk and y_chunk % WORD == 0 else
           ": a shim BD moves whole words, and a core's object is whole words"))

    # FIFOs, from the description.
    shim_at, mem_at, core_at = f"(c,{arr['shim_row']})", f"(c,{arr['memtile_row']})", f"(c,{arr['first_core_row']})"
    xch, ych = L.x_mem["shim_channel"]["channel"], L.y_mem["shim_channel"]["channel"]
    D = L.depths
    p.fifos = [
        Fifo(f"{L.x_mem['name']}_<c>", f"shim{shim_at} -> memtile{mem_at}", x_chunk, D[L.x_mem["name"]], "memtile",
             f"shim MM2S {xch}, memtile S2MM 1", L.x_mem.get("about", "")),
        Fifo(f"{L.x_core['name']}_<c>", f"memtile{mem_at} -> core{core_at}, split of one part", x_chunk,
             D[L.x_core["name"]], "core", "memtile MM2S 1, core S2MM 1", L.x_core.get("about", "")),
        Fifo(f"{L.y_core['name']}_<c>", f"core{core_at} -> memtile{mem_at}, join of one part", y_chunk,
             D[L.y_core["name"]], "core", "core MM2S 1, memtile S2MM 1", L.y_core.get("about", "")),
        Fifo(f"{L.y_mem['name']}_<c>", f"memtile{mem_at} -> shim{shim_at}", y_chunk, D[L.y_mem["name"]], "memtile",
             f"memtile MM2S 1, shim S2MM {ych}", L.y_mem.get("about", "")),
    ]
    # Core data memory: the core FIFOs' buffers, the RTP words, the kernel's stack, its static data.
    budget = raw["core_budget"]
    prog = raw["core_program"]
    rtp_count = prog["rtp_word_count"]
    for f in p.fifos:
        if f.home == "core":
            p.core_bytes[f"{f.name} ({f.depth} x {f.obj_bytes} B)"] = f.bytes
    p.core_bytes["RTP words"] = WORD * rtp_count
    p.core_bytes[f"stack ({family_source(desc, family)}'s kernel_stack at tile {tile})"] = stack
    p.core_bytes["kernel static data"] = budget["kernel_data_bytes"]
    core_total = sum(p.core_bytes.values())
    p.core_bytes["total"] = core_total
    core_limit = min(budget["core_data_bytes"], CORE_DATA_BYTES)
    check("core data memory", core_total <= core_limit,
          f"{core_total} of {budget['core_data_bytes']} bytes (the description's; the core has {CORE_DATA_BYTES})")
    rtp_at = prog["rtp_core_address"]
    check("RTP words inside core data memory", rtp_at % WORD == 0 and rtp_at + WORD * rtp_count <= core_limit,
          f"[{rtp_at}, {rtp_at + WORD * rtp_count}) of {core_limit} (the IRON build does not pin the buffer there yet)")
    for f in p.fifos:
        if f.home == "memtile":
            p.memtile_bytes[f"{f.name} ({f.depth} x {f.obj_bytes} B)"] = f.bytes
    mem_total = sum(p.memtile_bytes.values())
    p.memtile_bytes["total"] = mem_total
    check("memory tile", mem_total <= min(budget["memtile_bytes"], MEMTILE_BYTES),
          f"{mem_total} of {budget['memtile_bytes']} bytes (the description's; the tile has {MEMTILE_BYTES})")

    X, Y = desc.x_operand, desc.y_operand
    p.channels = {
        "core (each)": {"S2MM": (1, CORE_S2MM, f"{X}"), "MM2S": (1, CORE_MM2S, f"{Y}")},
        "memory tile (each column)": {"S2MM": (2, MEMTILE_S2MM, f"{X} from the shim, {Y} from the core"),
                                      "MM2S": (2, MEMTILE_MM2S, f"{X} to the core, {Y} to the shim")},
        "shim (each column)": {"MM2S": (1, SHIM_MM2S, f"{X} on channel {xch}"),
                               "S2MM": (1, SHIM_S2MM, f"{Y} on channel {ych}")},
    }
    for tile_name, dirs in p.channels.items():
        for d, (used, avail, what) in dirs.items():
            check(f"DMA channels {tile_name} {d}", used <= avail, f"{used} of {avail} ({what})")
    check("shim channel numbers in range", 0 <= xch < SHIM_MM2S and 0 <= ych < SHIM_S2MM,
          f"{X} MM2S {xch} of 0..{SHIM_MM2S - 1}, {Y} S2MM {ych} of 0..{SHIM_S2MM - 1}")
    p.streams = {"shim -> memory tile (up)": (1, SHIM_UP_PORTS), "memory tile -> shim (down)": (1, SHIM_DOWN_PORTS),
                 f"memory tile -> core row {arr['first_core_row']} (up)": (1, UP_PORTS),
                 f"core row {arr['first_core_row']} -> memory tile (down)": (1, DOWN_PORTS)}
    for what, (used, avail) in p.streams.items():
        check(f"stream-switch ports {what}", used <= avail, f"{used} stream(s) of {avail} ports")

    _plan_shape(desc, p, check)
    _plan_core_program(desc, p, check)
    return p


def _plan_shape(desc, p, check):
    """The grid, RTP words, runs, steps, BDs, stream and traffic of one invocation, as the host's scatter
    stream builder makes them from the ids."""
    raw = desc.raw
    lim, shim, prog = raw["limits"], raw["shim"], raw["core_program"]
    wrap, stride_max = lim["wrap_max"], lim["stride_max"]
    X, Y = desc.x_operand, desc.y_operand
    L = desc.layouts[p.family]
    check("limits.wrap_max within the shim BD's d0 and d1 wraps", 1 <= wrap <= SHIM_WRAP_MAX,
          f"{wrap} of 1..{SHIM_WRAP_MAX}")
    check("limits.stride_max within the shim BD's stride field", 1 <= stride_max <= SHIM_STRIDE_MAX,
          f"{stride_max} of 1..{SHIM_STRIDE_MAX} words")
    check("limits.iteration_max within the shim BD's iteration count", 1 <= lim["iteration_max"] <= SHIM_ITERATION_MAX,
          f"{lim['iteration_max']} of 1..{SHIM_ITERATION_MAX} (a scatter's BDs use no iteration)")
    check("limits.repeat_max within the push queue's repeat count", 0 <= lim["repeat_max"] <= SHIM_REPEAT_MAX,
          f"{lim['repeat_max']} of 0..{SHIM_REPEAT_MAX} (a scatter's tasks repeat never)")
    # Row strides, as the host checks them: x's of more than one row of x, y's of more than one row of y;
    # a BD addresses y in words, so its stride is whole words whatever the rows.
    xs, ys = p.x_stride, p.y_stride
    one_x = f"one row of {X}: no row stride"
    check(f"{X} row stride covers the row", p.rows <= 1 or xs >= p.row_len,
          f"stride {xs}, row {p.row_len} values" if p.rows > 1 else one_x)
    check(f"{X} row stride within the shim's stride", p.rows <= 1 or xs <= stride_max,
          f"stride {xs} <= {stride_max} words" if p.rows > 1 else one_x)
    check(f"{Y} row stride in whole 32-bit words", ys % WORD == 0, f"stride {ys} bytes")
    one_y = f"one row of {Y}: no row stride"
    check(f"{Y} row stride covers the row", p.y_rows <= 1 or ys >= p.y_row_bytes,
          f"stride {ys}, row {p.y_row_bytes} bytes" if p.y_rows > 1 else one_y)
    check(f"{Y} row stride within the shim's stride", p.y_rows <= 1 or ys // WORD <= stride_max,
          f"stride {ys // WORD} <= {stride_max} words" if p.y_rows > 1 else one_y)

    # BD slots: per step in flight one set: x's BD (one task per step) and y's (a task per run).
    slots, F = shim["bd_slots"], shim["steps_in_flight"]
    as_list = lambda v: v if isinstance(v, list) else [v]
    x_ids = [as_list(s.get(X, [])) for s in slots]
    y_ids = [as_list(s.get(Y, [])) for s in slots]
    per = min((len(v) for v in y_ids), default=0)   # runs per step (unequal slots fail their check)
    in_flight = len(slots)                          # the host takes its slots as its steps in flight
    check(f"shim BD slots: one per step in flight, an {X} BD and the same number of {Y} BDs in each",
          len(slots) == F and per >= 1 and len({len(v) for v in y_ids}) == 1 and all(x_ids),
          f"{len(slots)} set(s) for {F} step(s) in flight: " +
          "; ".join(f"{X} {a}, {Y} {b}" for a, b in zip(x_ids, y_ids)))
    check("shim steps in flight: the host's stream keeps 2", F == HOST_STEPS_IN_FLIGHT and in_flight == HOST_STEPS_IN_FLIGHT,
          f"shim.steps_in_flight {F}, {in_flight} BD slot(s); the host syncs step k - 1 after pushing step k")
    ids_all = [i for a, b in zip(x_ids, y_ids) for i in a + b]
    check("shim BD ids distinct and in range",
          len(set(map(str, ids_all))) == len(ids_all) and
          all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < shim["bds"] for i in ids_all),
          f"{ids_all} of 0..{shim['bds'] - 1}")
    check("shim: the description's bds within the shim tile's", shim["bds"] <= SHIM_BDS, f"{shim['bds']} of {SHIM_BDS}")
    check("shim BDs in flight", in_flight * (1 + per) <= min(shim["bds"], SHIM_BDS),
          f"{in_flight} step(s) x (1 {X} + {per} {Y}) = {in_flight * (1 + per)} of {min(shim['bds'], SHIM_BDS)}")
    # A channel holds the tasks of every step in flight: one x task per step, a y task per run.
    check(f"shim task queue per channel: {X}", in_flight <= SHIM_TASK_QUEUE,
          f"{in_flight} step(s) in flight x 1 task per step = {in_flight} of {SHIM_TASK_QUEUE} queued")
    check(f"shim task queue per channel: {Y}", in_flight * per <= SHIM_TASK_QUEUE,
          f"{in_flight} step(s) in flight x {per} run(s) per step = {in_flight * per} of {SHIM_TASK_QUEUE} queued")

    # The grid: R row blocks x S segments of each row's chunks, one column each.
    n, groups, avail = p.rows, p.chunks, p.columns
    R = min(n, avail)
    S = 1 if n >= avail else max(1, min(groups, avail // n))
    used = R * S
    cols = []
    for c in range(used):
        cols.append(((block_first(n, R, c // S), block_count(n, R, c // S)),
                     (block_first(groups, S, c % S), block_count(groups, S, c % S))))
    p.grid = {"chunks per row": groups, "row blocks R x segments S": [R, S], "columns used": used,
              "column c: row block (first row, rows), segment (first chunk, chunks)": [[list(b), list(s)] for b, s in cols]}

    # 1. The RTP words and the barrier, per used column's core, before any step.
    idx = prog["rtp_words"]
    bar = prog["barrier"]
    row = raw["array"]["first_core_row"]
    stream = []
    calls = []
    for c, ((_, nrows), (_, seg)) in enumerate(cols):
        words = [0] * prog["rtp_word_count"]
        values = {"contract": p.contract_index, "chunks": nrows * seg, "version": prog["rtp_layout_version"]}
        for k, v in values.items():
            if 0 <= idx.get(k, -1) < len(words):
                words[idx[k]] = v
        calls.append(nrows * seg)
        p.rtp.append({"column": c, "core": [c, row], "address": prog["rtp_core_address"], "words": words,
                      "chunks": nrows * seg, "barrier": {"lock": bar["lock"], "value": bar["set_value"]}})
        stream.append(["rtp", c, row, prog["rtp_core_address"], words])
        stream.append(["barrier", c, row, bar["lock"], bar["set_value"]])

    # 2. Per column: runs, steps, BDs.
    y_words = p.y_chunk_bytes // WORD
    per_step = max(per, 1)
    p.per_column = []
    for c, ((first, count), (ch0, seg)) in enumerate(cols):
        runs = cut_runs(p.ids, first, count, HOST_ROWS_PER_RUN)
        steps = [list(range(k, min(k + per_step, len(runs)))) for k in range(0, len(runs), per_step)]
        bds = []
        for s, members in enumerate(steps):
            slot = s % len(slots)
            r0 = runs[members[0]][0]
            step_rows = sum(runs[i][2] for i in members)
            bds.append(dict(what=X, step=s, run=None, bd=x_ids[slot][0], token=False,
                            **bd_pattern((r0 * xs + ch0 * p.tile) * WORD, step_rows, seg * p.tile, p.tile, xs, wrap)))
            for j, i in enumerate(members):
                _, id0, m = runs[i]
                bds.append(dict(what=Y, step=s, run=i, bd=y_ids[slot][j], token=j == len(members) - 1,
                                **bd_pattern(id0 * ys + ch0 * p.y_chunk_bytes, m, seg * y_words, y_words,
                                             ys // WORD, wrap)))
        p.per_column.append({"column": c, "block (first row, rows)": [first, count],
                             "segment (first chunk, chunks)": [ch0, seg],
                             "runs (first row of x, first id, rows)": [list(r) for r in runs], "steps": steps,
                             "bds": bds})

    # 3. The stream: step k of every column (x, then its y tasks), then the syncs of step k - 1.
    ych = L.y_mem["shim_channel"]["channel"]
    shim_row = raw["array"]["shim_row"]
    most = max((len(pc["steps"]) for pc in p.per_column), default=0)

    def syncs(k):
        for pc in p.per_column:
            if k < len(pc["steps"]):
                stream.append(["sync", pc["column"], shim_row, "s2mm", ych, k])

    for k in range(most):
        for pc in p.per_column:
            for b in pc["bds"]:
                if b["step"] == k:
                    stream.append(["push", pc["column"], b["what"], b["bd"], k, b["token"], 0])
        if k > 0:
            syncs(k - 1)
    if most:
        syncs(most - 1)
    p.stream = stream

    # What a channel holds and which BDs are in use, from the stream itself: a sync on a column's step
    # completes that step and every earlier one of the column (a channel runs its queue in order).
    worst = {X: 0, Y: 0, "bds": 0}
    open_steps = {c: [] for c in range(used)}
    tasks = {}
    for ev in stream:
        if ev[0] == "push":
            c, what, _, k = ev[1:5]
            if k not in open_steps[c]:
                open_steps[c].append(k)
            tasks.setdefault((c, k), []).append((what, ev[3]))
        elif ev[0] == "sync":
            c, k = ev[1], ev[5]
            open_steps[c] = [x for x in open_steps[c] if x > k]
        else:
            continue
        for c2, ks in open_steps.items():
            held = [t for k in ks for t in tasks[(c2, k)]]
            worst[X] = max(worst[X], sum(1 for w, _ in held if w == X))
            worst[Y] = max(worst[Y], sum(1 for w, _ in held if w == Y))
            worst["bds"] = max(worst["bds"], len(held))
    steps_of = [len(pc["steps"]) for pc in p.per_column]
    p.schedule = {
        "rows per run (at most)": HOST_ROWS_PER_RUN,
        "runs per step (at most)": per,
        "steps in flight": in_flight,
        "runs per column": [len(pc["runs (first row of x, first id, rows)"]) for pc in p.per_column],
        "steps per column": steps_of,
        "steps (most of a column)": most,
        f"{X} tasks queued per channel (at most)": worst[X],
        f"{Y} tasks queued per channel (at most)": worst[Y],
        "shim BDs in use per column (at most)": worst["bds"],
    }

    # The BD fields of every BD of the invocation (one check per field, the first offender named).
    fails = {k: [] for k in ("d0", "d1", "length", "strides")}
    moved = {X: 0, Y: 0}
    for pc in p.per_column:
        for b in pc["bds"]:
            _, d2, d1, d0 = b["sizes"]
            if d0 > wrap:
                fails["d0"].append((pc["column"], b))
            if d1 > wrap:
                fails["d1"].append((pc["column"], b))
            if d0 * d1 * d2 > SHIM_LENGTH_MAX:
                fails["length"].append((pc["column"], b))
            if max(b["strides"]) > stride_max:
                fails["strides"].append((pc["column"], b))
            moved[b["what"]] += WORD * d0 * d1 * d2
    nbd = sum(len(pc["bds"]) for pc in p.per_column)

    def detail(kind, ok_text, what):
        bad = fails[kind]
        if not bad:
            return ok_text
        c, b = bad[0]
        return (f"{len(bad)} BD(s), e.g. column {c} step {b['step']} {b['what']} BD {b['bd']}: sizes {b['sizes']} "
                f"strides {b['strides']}: {what}")
    xd0, yd0 = d0_of(p.tile, wrap), d0_of(y_words, wrap)
    check("shim BDs: d0 size (the chunk, halved while past the wrap)", not fails["d0"],
          detail("d0", f"{X} {xd0}, {Y} {yd0} <= {wrap} words" +
                 (f" ({X}'s chunk {p.tile} as {p.tile // xd0} x {xd0})" if xd0 != p.tile else "") +
                 (f" ({Y}'s chunk {y_words} as {y_words // yd0} x {yd0})" if y_words and yd0 != y_words else ""),
                 f"past {wrap} words"))
    check("shim BDs: d1 size (d0 runs of a segment)", not fails["d1"],
          detail("d1", f"every BD's d1 <= {wrap}", f"d1 past {wrap} (a segment of more chunks than the wrap holds)"))
    check("shim BDs: buffer length", not fails["length"],
          detail("length", f"{nbd} BD(s) of at most {SHIM_LENGTH_MAX} words", f"past {SHIM_LENGTH_MAX} words"))
    check("shim BDs: strides", not fails["strides"],
          detail("strides", f"{nbd} BD(s), strides at most {stride_max} words", f"past {stride_max} words"))

    # The runtime sequence's operands: x's fp32 values, y's bytes.
    p.tensors = {f"{X} (arg {desc.x_arg}, fp32 values)": (p.rows - 1) * xs + p.row_len,
                 f"{Y} (arg {desc.y_arg}, bytes)": (p.y_rows - 1) * ys + p.y_row_bytes}
    # DRAM traffic as the host counts it: every BD's words.
    p.traffic = {f"{X} read (bytes)": moved[X], f"{Y} written (bytes)": moved[Y], "columns used": used,
                 "kernel calls on the busiest core": max(calls, default=0), "steps (most of a column)": most}
    want_x, want_y = WORD * p.rows * p.row_len, p.rows * p.y_row_bytes
    check("traffic: every row read once and written once, converted", moved[X] == want_x and moved[Y] == want_y,
          f"{X} {moved[X]} of {p.rows} x {p.row_len} x 4 = {want_x}, {Y} {moved[Y]} of {p.rows} x {p.y_row_bytes} = "
          f"{want_y} bytes")


def _plan_core_program(desc, p, check):
    """The RTP words of this invocation and the barrier every core passes once per invocation."""
    prog = desc.raw["core_program"]
    bar = prog["barrier"]
    mode, acquire, release, set_value = bar["acquire"]["mode"], bar["acquire"]["value"], bar["release"]["value"], bar["set_value"]
    equal = mode == "equal"
    after = (set_value if equal else set_value - acquire) + release
    chunks = [r["chunks"] for r in p.rtp]
    L = desc.layouts[p.family]
    p.core_program = {
        "RTP words": {"contract": p.contract_index, "chunks (largest of a core)": max(chunks, default=0),
                      "version": prog["rtp_layout_version"]},
        "RTP word index": dict(prog["rtp_words"]),
        "barrier lock": bar["lock"],
        "sequence: barrier.set": set_value,
        f"core: wait_for_value (acquire {mode})": acquire,
        "core: release_with_value, after the RTP reads": release,
        "lock after a core's pass": after,
        "per chunk": f"acquire {L.x_core['name']} and {L.y_core['name']}; {p.contract}(x, y, n = {p.tile}); release them",
    }
    index = prog["rtp_words"]
    check("RTP words: contract, chunks and version, distinct, within the word count",
          sorted(index) == sorted(COUNT_WORDS) and sorted(index.values()) == list(range(prog["rtp_word_count"])),
          f"{index}, {prog['rtp_word_count']} words")
    check("barrier: the core waits as IRON's wait_for_value does", equal,
          f"acquire mode {mode!r} (wait_for_value is aie.use_lock Acquire: acquire_equal)")
    check("barrier: the sequence's set opens the core's wait", set_value == acquire,
          f"set {set_value}, wait_for_value {acquire}")
    check("barrier: released after the RTP words are read", release > 0 and after != acquire,
          f"release_with_value({release}) leaves the lock at {after}: " +
          ("the core's next pass waits for the next invocation's set" if release > 0 and after != acquire
           else "the core's next pass would not wait and would read this invocation's RTP words again"))
    check("barrier: lock values within the lock's range", 0 <= after <= bar["max_value"],
          f"{after} of 0..{bar['max_value']}")
    words = [p.contract_index, prog["rtp_layout_version"]] + chunks
    check("RTP words fit the core's int32 words", all(0 <= v <= prog["rtp_word_max"] for v in words),
          f"largest {max(words)} <= {prog['rtp_word_max']} (chunks: the block's rows x the segment's chunks)")


# ---------------------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------------------
def kib(n):
    return f"{n} B ({n / 1024:.2f} KiB)"


def _short(lst, n=6):
    return str(lst) if len(lst) <= n else f"{str(lst[:n])[:-1]}, ... ({len(lst)} in all)]"


def print_plan_text(p, out=sys.stdout):
    w = out.write
    w(f"design: scatter ({p.design}), family {p.family} ({p.contract} in {p.kernel}, contract RTP = {p.contract_index}), "
      f"tile {p.tile} values ({p.x_chunk_bytes} B in, {p.y_chunk_bytes} B of {p.y_unit} out), {p.columns} column(s), npu2\n")
    w(f"description: {p.dataflow}, layout {p.layout}\n")
    w(f"invocation: {p.rows} row(s) of {p.row_len} values ({p.chunks} chunk(s)), x stride {p.x_stride} values; ids "
      f"{_short(p.ids, 12)} of {p.y_rows} rows of y, {p.y_row_bytes} B each, y stride {p.y_stride} B\n")
    w("\nFIFOs (per column c):\n")
    for f in p.fifos:
        w(f"  {f.name:16s} {f.path}\n")
        w(f"  {'':16s} object {f.obj_bytes} B x depth {f.depth} = {f.bytes} B in the {f.home}; {f.channels}\n")
    w("core data memory (each core):\n")
    for k, v in p.core_bytes.items():
        w(f"  {k:52s} {kib(v)}\n")
    w("memory tile (each column):\n")
    for k, v in p.memtile_bytes.items():
        w(f"  {k:52s} {kib(v)}\n")
    w("\nDMA channels:\n")
    for tile_name, dirs in p.channels.items():
        for d, (used, avail, what) in dirs.items():
            w(f"  {tile_name:26s} {d}: {used} of {avail} ({what})\n")
    w("stream-switch ports (per column):\n")
    for what, (used, avail) in p.streams.items():
        w(f"  {what:36s} {used} of {avail}\n")
    w("\ngrid:\n")
    for k, v in p.grid.items():
        w(f"  {k}: {_short(v, 8) if isinstance(v, list) else v}\n")
    w("schedule:\n")
    for k, v in p.schedule.items():
        w(f"  {k}: {_short(v, 8) if isinstance(v, list) else v}\n")
    for r in p.rtp[:2]:
        w(f"RTP of column {r['column']}: core {r['core']}, words {r['words']} at {r['address']}, then lock "
          f"{r['barrier']['lock']} = {r['barrier']['value']}\n")
    for col in p.per_column[:4]:
        w(f"column {col['column']}: rows {col['block (first row, rows)']}, chunks {col['segment (first chunk, chunks)']}, "
          f"runs (first row of x, first id, rows) {_short(col['runs (first row of x, first id, rows)'], 4)}\n")
        for b in col["bds"][:4]:
            w(f"  step {b['step']} {b['what']} BD {b['bd']}: offset {b['offset (bytes)']} B sizes {b['sizes']} strides "
              f"{b['strides']}{', token' if b['token'] else ''}\n")
        if len(col["bds"]) > 4:
            w(f"  ... {len(col['bds'])} BDs in all\n")
    if len(p.per_column) > 4:
        w(f"... {len(p.per_column)} columns in all\n")
    w(f"stream: {_short([' '.join(map(str, e)) for e in p.stream], 8)}\n")
    w("runtime sequence operands:\n")
    for k, v in p.tensors.items():
        w(f"  {k}: {v}\n")
    w("DRAM traffic of this invocation:\n")
    for k, v in p.traffic.items():
        w(f"  {k}: {v}\n")
    w("core program (every used core, once per invocation):\n")
    for k, v in p.core_program.items():
        w(f"  {k}: {v}\n")
    w("\nchecks:\n")
    for what, ok, det in p.checks:
        w(f"  [{'ok' if ok else 'FAIL'}] {what}: {det}\n")


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
def emit_mlir(desc, p, kernel_object):
    try:
        import numpy as np
        import aie.iron.device as iron_devices
        from aie.helpers.taplib import TensorAccessPattern
        from aie.iron import (Buffer, Kernel, ObjectFifo, Program, Runtime, TaskGroup, Worker,
                              WorkerRuntimeBarrier)
        from aie.iron.controlflow import range_
        from aie.iron.device import Tile
    except ImportError as e:
        raise PlanError(f"emitting MLIR needs mlir-aie >= 1.4 (python package 'aie') and numpy: {e}")

    raw = desc.raw
    arr, prog = raw["array"], raw["core_program"]
    bar = prog["barrier"]
    L = desc.layouts[p.family]
    shim_row, mem_row, core_row = arr["shim_row"], arr["memtile_row"], arr["first_core_row"]
    idx = prog["rtp_words"]
    rtp_count = prog["rtp_word_count"]
    X, Y = desc.x_operand, desc.y_operand

    f32, i32 = np.dtype[np.float32], np.dtype[np.int32]
    x_ty = np.ndarray[(p.tile,), f32]
    # y's objects and tensor as 32-bit words: the plan has checked every y chunk, row stride and offset is
    # whole words, so y's taps are the host's BDs word for word.
    y_ty = np.ndarray[(p.y_chunk_bytes // WORD,), i32]
    rtp_ty = np.ndarray[(rtp_count,), i32]
    x_len = p.tensors[f"{X} (arg {desc.x_arg}, fp32 values)"]
    y_len = p.tensors[f"{Y} (arg {desc.y_arg}, bytes)"] // WORD
    # The family's one kernel (f32_to_f16 or f32_to_q8_0): (const float * x, y, int32_t n).
    kernel = Kernel(p.contract, kernel_object, [x_ty, y_ty, np.int32])

    def core_fn(x_in, y_out, rtp, barrier, convert):
        # Once per invocation: the stream writes the RTP words, then sets the barrier. wait_for_value is an
        # acquire_equal that leaves the value in the lock; without the release the Worker's next pass
        # would not wait and would run on this invocation's words again (../matmul/design.py). The
        # release comes before the first object is taken. Every word is read, in the block's order, as
        # the simulator's core model reads a set of words; only chunks is used (one contract per family).
        barrier.wait_for_value(bar["acquire"]["value"])
        words = {name: rtp[i] for name, i in sorted(idx.items(), key=lambda kv: kv[1])}
        barrier.release_with_value(bar["release"]["value"])
        for _ in range_(words["chunks"]):
            x = x_in.acquire(1)
            y = y_out.acquire(1)
            convert(x, y, p.tile)
            x_in.release(1)
            y_out.release(1)

    # Per column: its FIFOs, one worker on its core, its RTP buffer and barrier. Every column of the array
    # gets them (the xclbin serves every id list); the sequence drives the used ones.
    workers, rtps, barriers, x_ends, y_ends = [], [], [], [], []
    for col in range(p.columns):
        mem_tile = Tile(col, mem_row)
        x_l2 = ObjectFifo(x_ty, name=f"{L.x_mem['name']}_{col}", depth=L.depths[L.x_mem["name"]])
        x_l1 = x_l2.cons().split([0], obj_types=[x_ty], names=[f"{L.x_core['name']}_{col}"],
                                 depths=[L.depths[L.x_core["name"]]], tile=mem_tile)[0]
        y_l2 = ObjectFifo(y_ty, name=f"{L.y_mem['name']}_{col}", depth=L.depths[L.y_mem["name"]])
        y_l1 = y_l2.prod().join([0], obj_types=[y_ty], names=[f"{L.y_core['name']}_{col}"],
                                depths=[L.depths[L.y_core["name"]]], tile=mem_tile)[0]
        # IRON assigns the shim channels itself; the description's are what the host's stream uses.
        x_ends.append(x_l2.prod(tile=Tile(col, shim_row)))
        y_ends.append(y_l2.cons(tile=Tile(col, shim_row)))
        rtp = Buffer(rtp_ty, name=f"rtp_{col}", initial_value=np.zeros(rtp_count, dtype=np.int32), use_write_rtp=True)
        barrier = WorkerRuntimeBarrier()
        rtps.append((col, rtp))
        barriers.append(barrier)
        workers.append(Worker(core_fn, [x_l1.cons(), y_l1.prod(), rtp, barrier, kernel],
                              tile=Tile(col, core_row), stack_size=p.stack_bytes))

    words = {r["column"]: r["words"] for r in p.rtp}
    in_flight = raw["shim"]["steps_in_flight"]
    most = p.schedule["steps (most of a column)"]
    lengths = {X: x_len, Y: y_len}

    def tap(what, bd):
        # The host's BD, in elements of the tensor: x's fp32 values, y's 32-bit words.
        return TensorAccessPattern((lengths[what],), bd["offset (bytes)"] // WORD, bd["sizes"], bd["strides"])

    def sequence(*args):
        tensors = dict(zip(sorted((X, Y), key=lambda o: desc.x_arg if o == X else desc.y_arg), args[:2]))
        xs, ys = args[2], args[3]
        # The host builds the real stream from the ids at submission (src/runtime/scatter-sequence.h) and
        # only the xclbin of a build is used; this sequence is the host's schedule for this id list in
        # IRON's words: every used column's RTP words, then its barrier set, before any DMA; then step j of
        # every used column in task group j: the x fill over the step's rows, a y drain per run, the
        # step's last awaited (the host's token); as many groups in flight as the description's steps
        # (IRON picks its own BD ids).
        for (col, rtp), barrier in zip(rtps, barriers):
            if col not in words:
                continue  # a column without rows is left at its barrier, as the host's stream leaves it
            for i, v in enumerate(words[col]):
                rtp[i] = v
            barrier.set(bar["set_value"])  # after the words: the core reads them once the lock holds this
        pending = []
        for j in range(most):
            group = TaskGroup()
            for pc in p.per_column:
                c = pc["column"]
                for bd in pc["bds"]:
                    if bd["step"] != j:
                        continue
                    if bd["what"] == X:
                        xs[c].fill(tensors[X], tap=tap(X, bd), group=group)
                    else:
                        ys[c].drain(tensors[Y], tap=tap(Y, bd), wait=bd["token"], group=group)
            pending.append(group)
            if len(pending) >= in_flight:
                pending.pop(0).finish()
        for group in pending:
            group.finish()

    types = {X: np.ndarray[(x_len,), f32], Y: np.ndarray[(y_len,), i32]}
    ordered = sorted((X, Y), key=lambda o: desc.x_arg if o == X else desc.y_arg)
    rt = Runtime(sequence, [types[o] for o in ordered] + [x_ends, y_ends])
    device = iron_devices.NPU2() if p.columns == arr["max_columns"] else getattr(iron_devices, f"NPU2Col{p.columns}")()
    return Program(device, rt, workers=workers).resolve_program()


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
        description="The scatter design (SET_ROWS of fp32 rows into an F16 or Q8_0 KV cache, CPY of fp32 rows to F16) "
                    "for XDNA2 (NPU2): prints the data-movement plan of one id list, or emits MLIR with mlir-aie >= 1.4 "
                    "(IRON).")
    ap.add_argument("--dataflow", default=DEFAULT_DATAFLOW,
                    help="the data-movement description (default aie/set_rows/dataflow.json; another file only to try "
                         "a change to one)")
    ap.add_argument("--family", help="family: the output format, f16 or q8_0 (default the description's first)")
    ap.add_argument("--tile", type=int,
                    help="values per chunk, i.e. which xclbin (default: the largest that divides --row-len, as the "
                         "host picks)")
    ap.add_argument("--ids", help="the ids, comma-separated, one per row of x (default: 0..rows-1, a CPY)")
    ap.add_argument("--rows", type=int, help="rows of x (default: one per id; without --ids, 1)")
    ap.add_argument("--row-len", type=int, default=1024, help="fp32 values per row (default 1024)")
    ap.add_argument("--x-stride", type=int, help="values between rows of x (default --row-len)")
    ap.add_argument("--y-rows", type=int, help="rows of y an id may name (default the largest id + 1)")
    ap.add_argument("--y-stride", type=int, help="bytes between rows of y (default its row: a KV-cache view has more)")
    ap.add_argument("--cols", type=int, help="array columns, 1..max_columns (default max_columns)")
    ap.add_argument("--kernel-object", help="object file of the core program (default xdna_<design>_<family>.o)")
    ap.add_argument("--print-plan", action="store_true", help="print the data-movement plan (no mlir-aie needed)")
    ap.add_argument("--format", choices=["text", "json"], default="text", help="plan format")
    ap.add_argument("--list-tiles", action="store_true", help="print the tiles the family has an xclbin for")
    ap.add_argument("--list-contracts", action="store_true",
                    help="print 'contract source' per contract of the family (source: the kernel file defining it)")
    ap.add_argument("-o", "--output", help="write the MLIR here (default stdout)")
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
            for c in families[family]:
                found = kernel_source(desc, family, c)
                print(f"{c} {found[0] if found else '?'}")
            return 0
        ids = None if args.ids is None else parse_ids(args.ids)
        plan = make_plan(desc, ids, args.rows, args.row_len, args.x_stride, args.y_rows, args.y_stride, args.cols,
                         args.tile, family)
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
        module = emit_mlir(desc, plan, args.kernel_object or f"xdna_{desc.design}_{family}.o")
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
