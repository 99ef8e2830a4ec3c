#!/usr/bin/env python3
"""The "quant" design for XDNA2 (NPU2, AIE2P): activation quantization, fp32 activation rows into the
activation tiles of a matmul contract, the IRON program of its data-movement description
(aie/act_quant/dataflow.json).

    tiles[t] = act_quant_<family>(x rows nt*tile_n .. +tile_n, values kt*tile_k .. +tile_k),  t = nt*k_tiles + kt

What the program is, all of it read from the description (--dataflow), the one the host's stream builder
(src/runtime/quant-sequence.h) and the simulator's DMA interpreter read too; no number of the data
movement is written here:
  - One family per core program (act_quant_<family>, kernels/act_quant.cc), one xclbin each at its one
    token tile (the key of its kernel_stack). A family's objects are its own (.objects): 'group', one
    call's x (group_tokens rows of tile_k fp32 values, one row after another), and 'tile', the tile the
    calls build (its format's bytes); 'tokens' (tile_n) and 'tile_k' are the tile's shape.
  - Per column c (shim (c, shim_row), memory tile (c, memtile_row), one core (c, first_core_row)): x
    streams from the shim's MM2S channel into a memory-tile FIFO of one-group objects, handed to the core
    (a split of one part); the core builds one tile per object of a core FIFO joined (one part) into a
    memory-tile FIFO that the shim's S2MM channel writes to the tiles operand.
  - The core program, per invocation: wait on the barrier, read the RTP words (contract, tiles, version),
    release the barrier; then per tile: acquire a tile object; per group g of its tile_n / group_tokens:
    acquire x, act_quant_<family>(x, tile, g), release x; release the tile. The group loop is unrolled
    (at most 16 calls): each call's g is a constant, so no loop index is cast to the kernel's int32.
  - The work, as the host deals it: T = n_tiles x k_tiles tiles (n_tiles = ceil(n / tile_n), k_tiles =
    k / tile_k), laid out [token tile nt][K tile kt] in the tiles operand, tile t at t x tile bytes; C =
    min(T, columns) columns, column c the block of T // C tiles (one more for the first T % C) starting at
    T // C x c + min(c, T % C). A block is cut into segments: maximal runs of consecutive tiles of one
    token tile, at most limits.iteration_max each; a segment is one step.
  - Per step of m tiles of token tile nt from K tile kt0: x is one BD over the token tile's valid rows v =
    min(tile_n, n - nt x tile_n): d0 tile_k words, d1 v rows at the row stride, its iteration dimension m
    K tiles of tile_k words (a dimension of one has no stride: one valid row, one K tile); when v < tile_n
    it is chained to a BD of (tile_n - v) x tile_k words of the zeros operand (the padding rows: a shim
    DMA cannot make zeros), and the pair is pushed once with
    repeat count m - 1, so every pass runs x's next K tile and then the zeros. The step's tiles are
    consecutive in the output: one linear BD of m tiles, pushed with the completion token. BD ids from
    shim.bd_slots[step % slots]; shim.steps_in_flight steps in flight: after queueing step s the stream
    syncs on step s - 1's token, and on the last at the end.
  - Why the zeros come from DRAM: the core must get whole tiles of tile_n rows (tile_n / group_tokens
    groups per tile), a shim BD has no zero padding, and a memory tile's BDs, which could pad, are the
    xclbin's, the same for every n; so the host keeps one block of zeros_bytes zeros in device memory, the
    zeros operand, read as often as a short token tile needs it.
  - A runtime sequence for one invocation shape (--rows, --k, --row-stride, --cols). The host builds the
    real streams (src/runtime/quant-sequence.h) and only the xclbin of a build is used; this sequence is
    the host's schedule in IRON's words. IRON's fill has no BD chain, so a step of a short token tile goes
    tile by tile: a fill of its valid rows, a fill of zeros, a drain of the one tile; a step of a full token
    tile is one fill (the host's BD, its K tiles as the outermost dimension) and one drain. Task j (a step,
    or one tile of a short one) of every used column in task group j, shim.steps_in_flight groups in
    flight (at most 2 x 2 fills queued on a channel of 4). Every column of the array gets a worker (the
    xclbin serves every shape).

`--print-plan` prints the plan and checks it against the AIE2P limits: core data memory (2 x group, 2 x
tile, the RTP words, the stack), memory-tile memory, the DMA channels of cores, memory tiles and shims, the
stream-switch ports, the family's objects (a group is group_tokens x tile_k fp32, a tile whole groups and
whole 32-bit words), the zeros block against the family's largest padding, the kernel's signature in its
source, the barrier protocol, the shim BDs (ids, slots, BDs in flight), the shim's task queues, every BD of
the invocation against the description's limits (d0 and d1 wraps, strides, iteration count, repeat count,
length), the row stride, k against the K tile, and the traffic. It needs only a bare Python 3 (no numpy,
no mlir-aie), so CI can check the plan (tests/aie/check_design_act_quant.sh). Exit status: 0 when every
check passes, 1 when one fails (the failed ones printed), 2 for a shape or description the design refuses
(the reason on stderr). Without --print-plan the IRON program is emitted (mlir-aie >= 1.4: callback
Runtime, TaskGroup, handle.fill/drain, Buffer RTPs, WorkerRuntimeBarrier, as ../rms_norm/design.py); a
plan with a failed check is not.

Status, plainly: the plan's numbers are checked against a recomputation of the rules above
(tests/aie/check_design_act_quant.sh: grid, segments, steps, every BD's id, offset and pattern, the
stream's pushes and syncs, a replay of the BDs into the objects each tile receives, valid rows then
zeros). They were compared with the host's stream builder (src/runtime/quant-sequence.cpp) by reading it,
not by running it beside this script; where the two part: the host refuses an invocation whose padding
needs more than zeros_bytes, where the plan checks the family's largest padding (tile_n - 1 rows) for every
shape, and the host syncs one step behind whatever the description says, where the plan reads
shim.steps_in_flight and checks that it is 2. The IRON program (emit_mlir) has only been run on
stand-ins of IRON's classes (tests/aie/check_barrier.py's); it has never been run by the real mlir-aie
python package, never compiled by aiecc, never linked with Peano's object of the kernels (never built with
Peano here), never run on an NPU. In particular unverified: that IRON accepts a split and a join of one
part, a FIFO's shim end filled from two tensors (x and the zeros), a fill whose outermost TAP dimension
(m K tiles, stride tile_k) becomes the BD's iteration dimension (mlir-aie's dma-to-npu lowering reads it
so), a drain of a uint8 tensor with a TAP in bytes, the tile= keyword of split, join, prod and cons, and
the NPU2Col<n> device names. No estimate of the core program memory is made (one kernel, its calls
unrolled: at most 16 call sites).
"""

import argparse
import functools
import json
import os
import re
import sys
from dataclasses import asdict, dataclass, field, fields

HERE = os.path.dirname(os.path.abspath(__file__))
AIE_DIR = os.path.normpath(os.path.join(HERE, ".."))
DEFAULT_DATAFLOW = os.path.join(HERE, "dataflow.json")

# ---------------------------------------------------------------------------------------------------
# AIE2P hardware limits the plan is checked against: facts of the device, not of this design's data
# movement, so they live here (as in ../rms_norm/design.py), not in dataflow.json.
# ---------------------------------------------------------------------------------------------------
CORE_S2MM, CORE_MM2S = 2, 2        # DMA channels of a compute tile (AM027)
MEMTILE_S2MM, MEMTILE_MM2S = 6, 6  # AM027 "AIE-ML v2 Memory Tile DMA": six S2MM and six MM2S channels
SHIM_MM2S, SHIM_S2MM = 2, 2        # shim DMA: two each way
NPU2_COLUMNS = 8                   # npu2's columns
NPU2_CORE_ROWS = 4                 # npu2: rows 0 (shim), 1 (memory tiles), 2..5 (cores)
NPU2_SHIM_ROW, NPU2_MEMTILE_ROW = 0, 1
CORE_DATA_BYTES = 64 * 1024        # a compute tile's data memory
MEMTILE_BYTES = 512 * 1024         # a memory tile's data memory
# Stream-switch ports between vertically adjacent tiles (mlir-aie AIE2TargetModel, as ../add/design.py).
UP_PORTS, DOWN_PORTS = 6, 4
SHIM_UP_PORTS, SHIM_DOWN_PORTS = 6, 4
# Shim BD fields and queues (mlir-aie's AIEX verifier, lib/Dialect/AIEX/IR/AIEXDialect.cpp; AM027): the
# description's limits are checked against these. A linear BD ([*, 1, 1, len], strides [*, 0, 0, 1]) has no
# d0/d1 wraps to keep: only its length.
SHIM_WRAP_MAX = 1023               # d0 and d1 wraps: 10 bits
SHIM_ITERATION_MAX = 64            # the iteration size: 6 bits, 1..64
SHIM_REPEAT_MAX = 255              # "Repeat count exceeds the [0:255] range"
SHIM_STRIDE_MAX = 1 << 20          # strides: 20 bits of words
SHIM_LENGTH_MAX = (1 << 32) - 1    # buffer_length (32-bit words)
SHIM_BDS = 16                      # BDs of a shim tile
SHIM_TASK_QUEUE = 4                # tasks a shim DMA channel's queue holds
INT32_MAX = (1 << 31) - 1
# The host's stream builder syncs on step s - 1 after queueing step s whatever the description says: two
# steps in flight. The plan reads shim.steps_in_flight and checks that the two agree.
HOST_STEPS_IN_FLIGHT = 2

# The core program (not the data movement): what it passes the family's one kernel per call.
KERNEL_PASSES = ("x: group (const float *)", "tile: tile (uint8_t *)", "g: int32 (int32_t)")
KERNEL_PARAMS = ("const float *", "uint8_t *", "int32_t")
RTP_NAMES = ("contract", "tiles", "version")
OBJECT_KEYS = ("group", "tile", "tokens", "tile_k", "group_tokens")


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
    x_mem: dict            # x_l3l2: shim -> memory tile
    x_core: dict           # x_l2l1: memory tile -> core, split of x_l3l2
    t_core: dict           # tiles_l1l2: core -> memory tile, joined into tiles_l2l3
    t_mem: dict            # tiles_l2l3: memory tile -> shim
    x_operand: str
    tiles_operand: str
    zeros_operand: str     # the operand no FIFO names: read on x's channel, chained to x's BD
    args: dict             # operand -> runtime sequence argument
    depths: dict           # FIFO name -> depth
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
        raise PlanError(f"{path}: not a quant description (the movement this program builds): {type(e).__name__} {e}")


def _load_description(path, layout):
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError) as e:
        raise PlanError(f"{path}: {e}")
    if raw.get("format") != "xdna-dataflow" or not isinstance(raw.get("design"), str):
        raise PlanError(f"{path}: not a dataflow description (format \"xdna-dataflow\" with a \"design\")")
    if raw.get("movement") != "quant":
        raise PlanError(f"{path}: movement {raw.get('movement')!r}: this program builds the \"quant\" movement")
    layouts = {spec["name"]: spec for spec in raw["layouts"]}
    name = layout or raw["layouts"][0]["name"]
    if name not in layouts:
        raise PlanError(f"{path}: no layout {name!r} ({', '.join(layouts)})")
    fifos = list(layouts[name]["fifos"])
    where = f"{path}: layout {name}"
    cr = raw["array"]["core_rows"]
    if not isinstance(cr, int) or cr < 1:
        raise PlanError(f"{where}: array.core_rows {cr!r}: the quant movement has a core per column")
    operands = sorted(raw["operands"], key=lambda o: o["arg"])
    names = [o["name"] for o in operands]
    if len(operands) != 3 or len(set(names)) != 3:
        raise PlanError(f"{where}: operands {names}: the quant movement has x, the tiles and the zeros")
    by_end = lambda a, b: [f for f in fifos if (f.get("from"), f.get("to")) == (a, b)]
    ins, outs = by_end("shim", "memtile"), by_end("memtile", "shim")
    downs, ups = by_end("memtile", "core"), by_end("core", "memtile")
    if len(fifos) != 4 or not (len(ins) == len(outs) == len(downs) == len(ups) == 1):
        raise PlanError(f"{where}: FIFOs {[f['name'] for f in fifos]}: the quant movement has x shim -> memtile -> "
                        "core and the tiles core -> memtile -> shim, one FIFO each way and tile")
    x_mem, t_mem, x_core, t_core = ins[0], outs[0], downs[0], ups[0]
    if x_core.get("link") != "split" or x_core.get("source") != x_mem["name"]:
        raise PlanError(f"{where}: {x_core['name']} is linked by {x_core.get('link')!r} from {x_core.get('source')!r}; "
                        f"this program takes x by a split of {x_mem['name']} (link \"split\", source)")
    if t_core.get("link") != "join" or t_core.get("sink") != t_mem["name"]:
        raise PlanError(f"{where}: {t_core['name']} is linked by {t_core.get('link')!r} into {t_core.get('sink')!r}; "
                        f"this program gives the tiles by a join into {t_mem['name']} (link \"join\", sink)")
    for f, direction in ((x_mem, "mm2s"), (t_mem, "s2mm")):
        ch = f.get("shim_channel") or {}
        if ch.get("direction") != direction or not isinstance(ch.get("channel"), int):
            raise PlanError(f"{where}: {f['name']} needs a shim channel of direction {direction!r}")
        if f.get("operand") not in names:
            raise PlanError(f"{where}: {f['name']} names operand {f.get('operand')!r}, not one of the description's")
    if x_mem["operand"] == t_mem["operand"]:
        raise PlanError(f"{where}: {x_mem['name']} and {t_mem['name']} move the same operand {x_mem['operand']!r}")
    # Whole objects of the family's own units: x by groups (one call's), the tiles by tiles.
    for f, unit in ((x_mem, "group"), (x_core, "group"), (t_core, "tile"), (t_mem, "tile")):
        if f["object"]["unit"] != unit or f["object"]["count"] != 1:
            raise PlanError(f"{where}: {f['name']}: objects of {f['object']['count']} {f['object']['unit']}(s); this "
                            f"program moves objects of one {unit}")
    named = {f.get("operand") for f in fifos}
    zeros = [n for n in names if n not in named]
    if len(zeros) != 1:
        raise PlanError(f"{where}: operands {names}: exactly one (the zeros, read on x's channel) is named by no FIFO")
    depths = {f["name"]: _depth(raw, f["depth"], f"{where}: {f['name']}") for f in fifos}
    desc = Description(path, raw, raw["design"], name, x_mem, x_core, t_core, t_mem, x_mem["operand"],
                       t_mem["operand"], zeros[0], {o["name"]: o["arg"] for o in operands}, depths, cr)
    for fam, contracts in families_of(desc).items():
        if not isinstance(contracts, list) or len(contracts) != 1:
            raise PlanError(f"{where}: family {fam}: contracts {contracts!r}; a quant family is one core program")
    return desc


def families_of(desc):
    return {k: v for k, v in desc.raw["families"].items() if k != "about"}


def family_tiles(desc, family):
    """The token tiles a family has an xclbin for: the numeric keys of its kernel_stack."""
    return sorted(int(t) for t in desc.raw["core_budget"]["kernel_stack"][family] if t.isdigit())


def family_objects(desc, family):
    objs = desc.raw.get("objects", {}).get(family)
    if not isinstance(objs, dict):
        raise PlanError(f"{desc.path}: family {family} has no objects (.objects.{family}: {', '.join(OBJECT_KEYS)})")
    bad = [k for k in OBJECT_KEYS if not isinstance(objs.get(k), int) or isinstance(objs.get(k), bool) or objs[k] <= 0]
    if bad:
        raise PlanError(f"{desc.path}: family {family}: objects {', '.join(bad)} not positive integers")
    return objs


# ---------------------------------------------------------------------------------------------------
# The kernel's source (what the core calls): the family's program name defined in its kernel_stack source.
# ---------------------------------------------------------------------------------------------------
def family_source(desc, family):
    return desc.raw["core_budget"]["kernel_stack"][family].get("source")


def kernels_dir(desc, family):
    """kernels/ beside the description, else (a copy of a description elsewhere) aie/<design>/kernels."""
    source = family_source(desc, family)
    if not source:
        return None
    for d in (os.path.join(os.path.dirname(os.path.abspath(desc.path)), "kernels"),
              os.path.join(AIE_DIR, desc.design, "kernels")):
        if os.path.isfile(os.path.join(d, source)):
            return d
    return None


@functools.lru_cache(maxsize=None)
def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


@functools.lru_cache(maxsize=None)
def _kernel_in(d, source, symbol):
    names = [source] + sorted(n for n in os.listdir(d) if n.endswith(".cc") and n != source)
    for n in names:
        m = re.search(r"\bvoid\s+" + re.escape(symbol) + r"\s*\(([^)]*)\)\s*\{", _read(os.path.join(d, n)))
        if m:
            return n, tuple(" ".join(x.split()) for x in m.group(1).split(",") if x.strip())
    return None


def kernel_source(desc, family, symbol):
    """(file name, parameter list) of the definition of `symbol`: the family's source first, then the other
    .cc files of its directory."""
    d = kernels_dir(desc, family)
    return None if d is None else _kernel_in(d, family_source(desc, family), symbol)


def param_type(param):
    """A C parameter without its name, spaced as 'const float *'."""
    p = re.sub(r"\b__restrict(__)?\b|\brestrict\b", " ", param)
    p = re.sub(r"\s*\*\s*", " * ", p)
    words = p.split()
    if len(words) > 1 and re.fullmatch(r"[A-Za-z_]\w*", words[-1]) and words[-1] not in ("const", "float", "int32_t"):
        words = words[:-1]  # the parameter's name
    return " ".join(words)


# ---------------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------------
@dataclass
class Fifo:
    name: str
    path: str
    obj_bytes: int
    depth: int
    home: str          # "memtile" or "core"
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
    kernel_source: str
    columns: int
    rows: int
    k: int
    row_stride: int
    tile_n: int
    tile_k: int
    group_tokens: int
    groups_per_tile: int
    group_bytes: int
    tile_bytes: int
    n_tiles: int
    k_tiles: int
    tiles: int
    padding_rows: int
    stack_bytes: int
    kernel_data_bytes: int
    zeros_bytes: int
    fifos: list = field(default_factory=list)
    core_bytes: dict = field(default_factory=dict)
    memtile_bytes: dict = field(default_factory=dict)
    channels: dict = field(default_factory=dict)
    streams: dict = field(default_factory=dict)
    grid: dict = field(default_factory=dict)
    schedule: dict = field(default_factory=dict)
    per_column: list = field(default_factory=list)
    rtp: dict = field(default_factory=dict)
    core_program: dict = field(default_factory=dict)
    calls: dict = field(default_factory=dict)
    tensors: dict = field(default_factory=dict)
    traffic: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)


def first_of(total, parts, i):
    """The host's first_of: where part i of `total` split in `parts` near-equal parts starts."""
    return total // parts * i + min(i, total % parts)


def count_of(total, parts, i):
    """The host's count_of: the size of part i (the first total % parts one larger)."""
    return total // parts + (1 if i < total % parts else 0)


def cut_segments(first, count, k_tiles, cap):
    """A block of tiles cut into segments: maximal runs of consecutive tiles of one token tile, at most
    `cap` each, from the block's first tile on: (first tile, token tile, first K tile, tiles) per segment."""
    out, t, end = [], first, first + count
    while t < end:
        nt, kt = divmod(t, k_tiles)
        m = min(cap, end - t, k_tiles - kt)
        out.append((t, nt, kt, m))
        t += m
    return out


def make_plan(desc, rows=64, k=4096, row_stride=None, columns=None, family=None, tile=None, stack_bytes=None,
              kernel_data_bytes=None):
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
    if rows <= 0:
        raise PlanError(f"--rows {rows}: the design takes at least one token row")
    objs = family_objects(desc, family)
    tile_n, tile_k = objs["tokens"], objs["tile_k"]
    if k <= 0:
        raise PlanError(f"--k {k}: a row has a positive number of values (whole K tiles of {tile_k})")
    row_stride = k if row_stride is None else row_stride
    if row_stride < 0:
        raise PlanError(f"--row-stride {row_stride}: a row stride is not negative")
    tiles = family_tiles(desc, family)
    if tile is not None and tile not in tiles:
        raise PlanError(f"family {family} has no xclbin for token tile {tile} (it has {', '.join(map(str, tiles))})")
    budget = raw["core_budget"]
    stack_key = str(tile_n)
    if stack_bytes is None:
        stack_bytes = budget["kernel_stack"][family].get(stack_key, 0)
    if kernel_data_bytes is None:
        kernel_data_bytes = budget.get("kernel_data_bytes", 0)
    contract = families[family][0]
    found = kernel_source(desc, family, contract)
    n_tiles = -(-rows // tile_n)
    k_tiles = k // tile_k
    p = Plan(dataflow=desc.path, design=desc.design, layout=desc.layout, family=family, contract=contract,
             kernel_source=found[0] if found else None, columns=columns, rows=rows, k=k, row_stride=row_stride,
             tile_n=tile_n, tile_k=tile_k, group_tokens=objs["group_tokens"],
             groups_per_tile=tile_n // objs["group_tokens"], group_bytes=objs["group"], tile_bytes=objs["tile"],
             n_tiles=n_tiles, k_tiles=k_tiles, tiles=n_tiles * k_tiles, padding_rows=n_tiles * tile_n - rows,
             stack_bytes=stack_bytes, kernel_data_bytes=kernel_data_bytes, zeros_bytes=raw["zeros_bytes"])
    check = lambda what, ok, detail: p.checks.append((what, bool(ok), detail))
    arr = raw["array"]

    check("array: one core per column, npu2's rows",
          desc.core_rows == 1 and arr["shim_row"] == NPU2_SHIM_ROW and arr["memtile_row"] == NPU2_MEMTILE_ROW and
          arr["memtile_row"] < arr["first_core_row"] < arr["memtile_row"] + 1 + NPU2_CORE_ROWS,
          f"array.core_rows {desc.core_rows}, shim row {arr['shim_row']}, memory tile row {arr['memtile_row']}, core "
          f"row {arr['first_core_row']}" + ("" if desc.core_rows == 1 else
                                            ": a core builds whole tiles; the layout's split and join have one part"))
    check("array: the description's columns within npu2's", 1 <= max_cols <= NPU2_COLUMNS,
          f"max_columns {max_cols} of {NPU2_COLUMNS}")

    # The family: its objects, its token tile, its kernel.
    G, gt = objs["group"], objs["group_tokens"]
    check("family objects: a group is group_tokens x tile_k fp32", G == gt * tile_k * 4,
          f"{family}: group {G} bytes, {gt} x {tile_k} x 4 = {gt * tile_k * 4}")
    check("family objects: a tile's tokens in whole groups", tile_n % gt == 0,
          f"{family}: {tile_n} tokens, groups of {gt}" + ("" if tile_n % gt == 0 else
                                                       ": the memory tile's groups would straddle two tiles"))
    check("family objects: the tile in whole 32-bit words", objs["tile"] % 4 == 0,
          f"{family}: tile {objs['tile']} bytes (a shim BD moves words; tile t starts at t x tile bytes)")
    check("family: one token tile, its objects' tokens", tiles == [tile_n],
          f"{family}: kernel_stack token tile(s) {tiles}, objects' tokens {tile_n}")
    src = family_source(desc, family)
    if found is None:
        check(f"kernel {contract}: defined in the family's source", False,
              f"no .cc file of the directory of family {family}'s source {src!r} defines {contract}")
    else:
        got = tuple(param_type(x) for x in found[1])
        check(f"kernel {contract} ({found[0]}) takes what the core passes", got == KERNEL_PARAMS,
              f"{contract}({', '.join(found[1])}); the core passes ({'; '.join(KERNEL_PASSES)})")
    zeros_need = (tile_n - 1) * tile_k * 4
    zb = raw["zeros_bytes"]
    check("zeros: the block holds the family's largest padding", isinstance(zb, int) and zb >= zeros_need,
          f"zeros_bytes {zb}, ({tile_n} - 1) rows x {tile_k} x 4 = {zeros_need} bytes")
    check("zeros: the block in whole 32-bit words", isinstance(zb, int) and zb > 0 and zb % 4 == 0,
          f"zeros_bytes {zb}")

    # FIFOs, from the description.
    shim_at, mem_at, core_at = f"(c,{arr['shim_row']})", f"(c,{arr['memtile_row']})", f"(c,{arr['first_core_row']})"
    xc, tc = desc.x_mem["shim_channel"]["channel"], desc.t_mem["shim_channel"]["channel"]
    dep = desc.depths
    xm, xk, tk, tm = desc.x_mem, desc.x_core, desc.t_core, desc.t_mem
    p.fifos = [
        Fifo(f"{xm['name']}_<c>", f"shim{shim_at} -> memtile{mem_at}", G, dep[xm["name"]], "memtile",
             f"shim MM2S {xc} ({desc.x_operand}, then {desc.zeros_operand} chained), memtile S2MM 1", xm.get("about", "")),
        Fifo(f"{xk['name']}_<c>", f"memtile{mem_at} -> core{core_at}, split of 1 part", G, dep[xk["name"]], "core",
             "memtile MM2S 1, core S2MM 1", xk.get("about", "")),
        Fifo(f"{tk['name']}_<c>", f"core{core_at} -> memtile{mem_at}, join of 1 part", objs["tile"], dep[tk["name"]],
             "core", "core MM2S 1, memtile S2MM 1", tk.get("about", "")),
        Fifo(f"{tm['name']}_<c>", f"memtile{mem_at} -> shim{shim_at}", objs["tile"], dep[tm["name"]], "memtile",
             f"memtile MM2S 1, shim S2MM {tc}", tm.get("about", "")),
    ]

    # Core data memory: the core FIFOs' buffers, the RTP words, the stack and the kernel's data.
    prog = raw["core_program"]
    rtp_words = prog["rtp_word_count"]
    for f in p.fifos:
        if f.home == "core":
            p.core_bytes[f"{f.name} ({f.depth} x {f.obj_bytes} B)"] = f.bytes
    p.core_bytes["RTP words"] = 4 * rtp_words
    p.core_bytes[f"stack ({src}'s kernel_stack at {tile_n} tokens)"] = stack_bytes
    p.core_bytes["kernel data"] = kernel_data_bytes
    core_total = sum(p.core_bytes.values())
    p.core_bytes["total"] = core_total
    core_limit = budget["core_data_bytes"]
    check("core data memory", core_total <= min(core_limit, CORE_DATA_BYTES),
          f"{core_total} of {core_limit} bytes ({core_limit - core_total} free; the tile has {CORE_DATA_BYTES})")
    check("core: the description's budget within the tile's memory", core_limit <= CORE_DATA_BYTES,
          f"{core_limit} of {CORE_DATA_BYTES} bytes")
    check("core: a stack for the family's token tile", stack_bytes > 0,
          f"kernel_stack {family} at {tile_n}: {stack_bytes} bytes")
    rtp_at = prog["rtp_core_address"]
    check("RTP words inside core data memory", rtp_at % 4 == 0 and rtp_at + 4 * rtp_words <= core_limit,
          f"[{rtp_at}, {rtp_at + 4 * rtp_words}) of {core_limit} (the IRON build does not pin the buffer there yet)")
    for f in p.fifos:
        if f.home == "memtile":
            p.memtile_bytes[f"{f.name} ({f.depth} x {f.obj_bytes} B)"] = f.bytes
    mem_total = sum(p.memtile_bytes.values())
    p.memtile_bytes["total"] = mem_total
    check("memory tile", mem_total <= min(budget["memtile_bytes"], MEMTILE_BYTES),
          f"{mem_total} of {budget['memtile_bytes']} bytes (the tile has {MEMTILE_BYTES})")
    check("memory tile: the description's budget within the tile's memory", budget["memtile_bytes"] <= MEMTILE_BYTES,
          f"{budget['memtile_bytes']} of {MEMTILE_BYTES} bytes")

    # DMA channels: x in and the tiles out at every level; the zeros ride on x's shim channel (a chain).
    X, Tn, Z = desc.x_operand, desc.tiles_operand, desc.zeros_operand
    p.channels = {
        "core": {"S2MM": (1, CORE_S2MM, X), "MM2S": (1, CORE_MM2S, Tn)},
        "memory tile": {"S2MM": (2, MEMTILE_S2MM, f"{X} from the shim, {Tn} from the core"),
                        "MM2S": (2, MEMTILE_MM2S, f"{X} to the core, {Tn} to the shim")},
        "shim": {"MM2S": (1, SHIM_MM2S, f"{X} and {Z} (chained) on channel {xc}"),
                 "S2MM": (1, SHIM_S2MM, f"{Tn} on channel {tc}")},
    }
    for tile_name, dirs in p.channels.items():
        for d, (used, avail, what) in dirs.items():
            check(f"DMA channels {tile_name} {d}", used <= avail, f"{used} of {avail} ({what})")
    check("shim channel numbers in range", 0 <= xc < SHIM_MM2S and 0 <= tc < SHIM_S2MM,
          f"{X} MM2S {xc} of 0..{SHIM_MM2S - 1}, {Tn} S2MM {tc} of 0..{SHIM_S2MM - 1}")
    p.streams = {"shim -> memory tile (up)": (1, SHIM_UP_PORTS), "memory tile -> shim (down)": (1, SHIM_DOWN_PORTS),
                 f"memory tile -> core row {arr['first_core_row']} (up)": (1, UP_PORTS),
                 f"core row {arr['first_core_row']} -> memory tile (down)": (1, DOWN_PORTS)}
    for what, (used, avail) in p.streams.items():
        check(f"stream-switch ports {what}", used <= avail, f"{used} stream(s) of {avail} ports")

    _plan_shape(desc, p, check)
    _plan_core_program(desc, p, check)
    return p


def _plan_shape(desc, p, check):
    """The grid, segments, steps, BDs, stream and traffic of one invocation, as the host's quant stream
    builder makes them."""
    raw = desc.raw
    lim, shim = raw["limits"], raw["shim"]
    wrap, iters, stride_max = lim["wrap_max"], lim["iteration_max"], lim["stride_max"]
    repeat_max = lim["repeat_max"]
    X, Tn, Z = desc.x_operand, desc.tiles_operand, desc.zeros_operand
    tn, tk, n, k, rs = p.tile_n, p.tile_k, p.rows, p.k, p.row_stride
    tb = p.tile_bytes
    check("limits.wrap_max within the shim BD's d0 and d1 wraps", 1 <= wrap <= SHIM_WRAP_MAX,
          f"{wrap} of 1..{SHIM_WRAP_MAX}")
    check("limits.iteration_max within the shim BD's iteration count", 1 <= iters <= SHIM_ITERATION_MAX,
          f"{iters} of 1..{SHIM_ITERATION_MAX} (a step's K tiles)")
    check("limits.repeat_max within the push queue's repeat count", 0 <= repeat_max <= SHIM_REPEAT_MAX,
          f"{repeat_max} of 0..{SHIM_REPEAT_MAX}")
    check("limits.stride_max within the shim BD's stride field", 1 <= stride_max <= SHIM_STRIDE_MAX,
          f"{stride_max} of 1..{SHIM_STRIDE_MAX} words")
    check("shape: k in whole K tiles", k % tk == 0 and k >= tk,
          f"k {k}, K tile {tk}" + ("" if k % tk == 0 and k >= tk else
                                   f": {k // tk} whole K tile(s) and {k % tk} values the tiles cannot hold"))
    # The row stride is d1's stride of the x BDs of more than one valid row: it must cover a row and fit the
    # field when there are rows to step over (one row has none, as the host checks it).
    check(f"{X} row stride covers the row", n <= 1 or rs >= k,
          f"stride {rs}, row {k} values" if n > 1 else "one row: no row stride")
    check(f"{X} row stride within the shim's stride field", n <= 1 or rs <= stride_max,
          f"stride {rs} <= {stride_max} words" if n > 1 else "one row: no row stride")

    # BD slots: per step in flight one set: x's two (its BD and the zeros BD it chains to) and the tiles' one.
    slots, F = shim["bd_slots"], shim["steps_in_flight"]
    as_list = lambda v: v if isinstance(v, list) else [v]
    ids_all = [i for s in slots for key in (X, Tn) for i in as_list(s.get(key, []))]
    check(f"shim BD slots: one set per step in flight, 2 {X} BDs (its BD, the {Z} chained), 1 {Tn} BD",
          len(slots) == F and all(len(as_list(s.get(X, []))) == 2 and isinstance(s.get(Tn), int) for s in slots),
          f"{len(slots)} set(s) for {F} step(s) in flight: " +
          "; ".join(f"{X} {as_list(s.get(X, []))}, {Tn} {s.get(Tn)}" for s in slots))
    check("shim BD ids distinct and in range",
          len(set(map(str, ids_all))) == len(ids_all) and
          all(isinstance(i, int) and 0 <= i < shim["bds"] for i in ids_all),
          f"{ids_all} of 0..{shim['bds'] - 1}")
    check("shim: the description's bds within the shim tile's", shim["bds"] <= SHIM_BDS, f"{shim['bds']} of {SHIM_BDS}")
    check("shim BDs in flight", F * 3 <= min(shim["bds"], SHIM_BDS),
          f"{F} step(s) x (2 {X} + 1 {Tn}) = {3 * F} of {min(shim['bds'], SHIM_BDS)}")
    check("shim: steps in flight as the host streams them", F == HOST_STEPS_IN_FLIGHT,
          f"shim.steps_in_flight {F}; the host's stream syncs on step s - 1 after queueing step s: "
          f"{HOST_STEPS_IN_FLIGHT} steps in flight")
    # One task per step and channel (x's chain is one task); the stream syncs on step s - (F - 1) after
    # queueing step s, so a channel holds at most F tasks.
    check(f"shim task queue per channel: {X}", F <= SHIM_TASK_QUEUE,
          f"{F} step(s) in flight x 1 task (the chain) = {F} of {SHIM_TASK_QUEUE} queued")
    check(f"shim task queue per channel: {Tn}", F <= SHIM_TASK_QUEUE,
          f"{F} step(s) in flight x 1 task = {F} of {SHIM_TASK_QUEUE} queued")

    # The grid: C columns, column c a block of consecutive tiles.
    T = p.tiles
    C = min(T, p.columns)
    blocks = [(first_of(T, C, c), count_of(T, C, c)) for c in range(C)]
    p.grid = {"tiles": T, "token tiles": p.n_tiles, "K tiles": p.k_tiles, "columns used": C,
              "blocks (first tile, tiles)": [list(b) for b in blocks]}
    cap = max(1, iters)
    slot_ids = [(as_list(s.get(X, [])) + [None, None])[:2] + [s.get(Tn)] for s in slots] or [[None, None, None]]
    moved = {X: 0, Z: 0, Tn: 0}
    worst = {"x queued": 0, "tiles queued": 0, "bds": 0}
    field_fail = {f: [] for f in ("d0", "d1", "iteration", "repeat", "strides", "length")}
    p.per_column = []
    for c, (first, count) in enumerate(blocks):
        segs = cut_segments(first, count, p.k_tiles, cap)
        steps, bds, stream = [], [], []
        for s, (t0, nt, kt0, m) in enumerate(segs):
            a_id, b_id, t_id = slot_ids[s % len(slot_ids)]
            v = min(tn, n - nt * tn)
            pad = tn - v
            steps.append({"slot": s % len(slot_ids), "first tile": t0, "token tile": nt, "first K tile": kt0,
                          "tiles": m, "valid rows": v, "padding rows": pad,
                          f"{X} BDs": [a_id, b_id if pad else None], f"{Tn} BD": t_id, "repeat": m - 1})
            # A dimension of one (one valid row, one K tile) has no stride, as the host writes it.
            bds.append({"what": X, "step": s, "bd": a_id, "next_bd": b_id if pad else None,
                        "offset (bytes)": (nt * tn * rs + kt0 * tk) * 4, "sizes": [m, 1, v, tk],
                        "strides": [tk if m > 1 else 0, 0, rs if v > 1 else 0, 1], "repeat": m - 1, "token": False,
                        "linear": False})
            if pad:
                bds.append({"what": Z, "step": s, "bd": b_id, "next_bd": None, "offset (bytes)": 0,
                            "sizes": [1, 1, 1, pad * tk], "strides": [0, 0, 0, 1], "repeat": None, "token": False,
                            "linear": True})
            bds.append({"what": Tn, "step": s, "bd": t_id, "next_bd": None, "offset (bytes)": t0 * tb,
                        "sizes": [1, 1, 1, m * tb // 4], "strides": [0, 0, 0, 1], "repeat": 0, "token": True,
                        "linear": True})
            stream.append(["push", X, a_id, s, m - 1])
            stream.append(["push", Tn, t_id, s, 0])
            if s >= F - 1:
                stream.append(["sync", s - (F - 1)])
            moved[X] += 4 * m * v * tk
            moved[Z] += 4 * m * pad * tk
            moved[Tn] += m * tb
        for s in range(max(len(steps) - (F - 1), 0), len(steps)):
            stream.append(["sync", s])
        # What a channel holds and which BDs are in use, from the stream itself: a sync on a step's token
        # completes that step and every earlier one (a channel runs its queue in order).
        open_steps, done = [], -1
        for ev in stream:
            if ev[0] == "push" and ev[3] not in open_steps:
                open_steps.append(ev[3])
            elif ev[0] == "sync":
                done = max(done, ev[1])
                open_steps = [x for x in open_steps if x > done]
            worst["x queued"] = max(worst["x queued"], len(open_steps))
            worst["tiles queued"] = max(worst["tiles queued"], len(open_steps))
            worst["bds"] = max(worst["bds"], sum(3 if steps[x]["padding rows"] else 2 for x in open_steps))
        for bd in bds:
            it, d2, d1, d0 = bd["sizes"]
            if not bd["linear"]:
                if d0 > wrap:
                    field_fail["d0"].append((c, bd))
                if d1 > wrap:
                    field_fail["d1"].append((c, bd))
            if not 1 <= it <= iters:
                field_fail["iteration"].append((c, bd))
            if bd["repeat"] is not None and bd["repeat"] > repeat_max:
                field_fail["repeat"].append((c, bd))
            if max(bd["strides"]) > stride_max:
                field_fail["strides"].append((c, bd))
            if d2 * d1 * d0 > SHIM_LENGTH_MAX:
                field_fail["length"].append((c, bd))
        p.per_column.append({"column": c, "block (first tile, tiles)": [first, count],
                             "segments (first tile, token tile, first K tile, tiles)": [list(x) for x in segs],
                             "steps": steps, "bds": bds, "stream": stream})

    all_steps = [len(col["steps"]) for col in p.per_column]
    p.schedule = {
        "tiles per step (at most)": cap,
        "steps in flight": F,
        "steps per column": all_steps,
        "steps (most of a column)": max(all_steps, default=0),
        f"{X} tasks queued per channel (at most)": worst["x queued"],
        f"{Tn} tasks queued per channel (at most)": worst["tiles queued"],
        "shim BDs in use per column (at most)": worst["bds"],
    }

    def bad_detail(kind, what, ok_text):
        bad = field_fail[kind]
        if not bad:
            return ok_text
        c, b = bad[0]
        return (f"{len(bad)} BD(s), e.g. column {c} step {b['step']} {b['what']} BD {b['bd']}: sizes {b['sizes']} "
                f"strides {b['strides']} repeat {b['repeat']}: {what}")
    nbd = sum(len(col["bds"]) for col in p.per_column)
    check(f"shim BDs: d0 size ({X}: a K tile of a row)", not field_fail["d0"],
          bad_detail("d0", f"{tk} > {wrap} words", f"{tk} <= {wrap} words (the {Z} and {Tn} BDs are linear)"))
    check(f"shim BDs: d1 size ({X}: the valid rows of a token tile)", not field_fail["d1"],
          bad_detail("d1", f"> {wrap} rows", f"at most {min(tn, n)} <= {wrap} rows"))
    check("shim BDs: iteration count (a step's K tiles)", not field_fail["iteration"],
          bad_detail("iteration", f"past 1..{iters}", f"{nbd} BD(s), at most {min(cap, p.k_tiles)} of {iters}"))
    check("shim BDs: queue-push repeat (a step's K tiles - 1)", not field_fail["repeat"],
          bad_detail("repeat", f"past {repeat_max}", f"at most {min(cap, p.k_tiles) - 1} <= {repeat_max}"))
    check("shim BDs: strides", not field_fail["strides"],
          bad_detail("strides", f"past {stride_max} words", f"{nbd} BD(s), strides at most {stride_max} words"))
    check("shim BDs: buffer length", not field_fail["length"],
          bad_detail("length", f"past {SHIM_LENGTH_MAX} words", f"{nbd} BD(s) of at most {SHIM_LENGTH_MAX} words"))

    # The runtime sequence's operands: x in fp32 values, the tiles and the zeros in bytes.
    p.tensors = {f"{X} (arg {desc.args[X]}, fp32 values)": (n - 1) * rs + k,
                 f"{Tn} (arg {desc.args[Tn]}, bytes)": T * tb,
                 f"{Z} (arg {desc.args[Z]}, bytes)": raw["zeros_bytes"]}
    # DRAM traffic as the host counts it: every BD's bytes times its executions.
    p.traffic = {f"{X} read (bytes)": moved[X], f"{Z} read (bytes)": moved[Z], f"{Tn} written (bytes)": moved[Tn],
                 "read (bytes)": moved[X] + moved[Z], "written (bytes)": moved[Tn]}
    want_x, want_z, want_t = n * k * 4, p.padding_rows * tk * 4 * p.k_tiles, T * tb
    check(f"traffic: every value of {X} read once, the padding from {Z}, every tile written once",
          moved[X] == want_x and moved[Z] == want_z and moved[Tn] == want_t,
          f"{X} {moved[X]} of {n} x {k} x 4 = {want_x}; {Z} {moved[Z]} of {p.padding_rows} row(s) x {tk} x 4 x "
          f"{p.k_tiles} = {want_z}; {Tn} {moved[Tn]} of {T} x {tb} = {want_t}")
    calls = [cnt * p.groups_per_tile for _, cnt in blocks]
    p.calls = {"per tile": p.groups_per_tile, "per column": calls, "kernel calls on the busiest core": max(calls, default=0)}


def _plan_core_program(desc, p, check):
    """The RTP words of each used column and the barrier every core passes once per invocation."""
    prog = desc.raw["core_program"]
    bar = prog["barrier"]
    index = prog["rtp_words"]
    per_column = [{"contract": 0, "tiles": cnt, "version": prog["rtp_layout_version"]}
                  for _, cnt in p.grid["blocks (first tile, tiles)"]]
    p.rtp = {"index": dict(index), "per used column": per_column}
    mode, acquire, release, set_value = bar["acquire"]["mode"], bar["acquire"]["value"], bar["release"]["value"], bar["set_value"]
    equal = mode == "equal"
    after = (set_value if equal else set_value - acquire) + release
    p.core_program = {
        "barrier lock": bar["lock"],
        "sequence: barrier.set": set_value,
        f"core: wait_for_value (acquire {mode})": acquire,
        "core: release_with_value, after the RTP reads": release,
        "lock after a core's pass": after,
        "per tile": f"acquire a tile; {p.groups_per_tile} x (acquire x; {p.contract}(x, tile, g) with g = 0.."
                    f"{p.groups_per_tile - 1}; release x); release the tile",
    }
    check("RTP words: contract, tiles and version, distinct, within the word count",
          sorted(index) == sorted(RTP_NAMES) and sorted(index.values()) == list(range(prog["rtp_word_count"])),
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
    largest = max((max(w.values()) for w in per_column), default=0)
    check("RTP words fit the core's int32 words", largest <= prog["rtp_word_max"] <= INT32_MAX,
          f"largest {largest} <= {prog['rtp_word_max']} (int32 at most {INT32_MAX})")


# ---------------------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------------------
def kib(n):
    return f"{n} B ({n / 1024:.2f} KiB)"


def _short(lst, n=6):
    return str(lst) if len(lst) <= n else f"{str(lst[:n])[:-1]}, ... ({len(lst)} in all)]"


def print_plan_text(p, out=None):
    w = (out or sys.stdout).write  # sys.stdout at the call, so a caller's redirection holds
    w(f"design: quant ({p.design}), family {p.family} ({p.contract} in {p.kernel_source or '?'}), tiles of {p.tile_n} "
      f"tokens x {p.tile_k} values ({p.tile_bytes} B), calls of {p.group_tokens} tokens ({p.group_bytes} B), "
      f"{p.columns} column(s), npu2\n")
    w(f"description: {p.dataflow}, layout {p.layout}\n")
    w(f"invocation: {p.rows} token row(s) x {p.k} values, row stride {p.row_stride}: {p.n_tiles} token tile(s) x "
      f"{p.k_tiles} K tile(s) = {p.tiles} tiles, {p.padding_rows} padding row(s) from the zeros\n")
    w("\nFIFOs (per column c):\n")
    for f in p.fifos:
        w(f"  {f.name:16s} {f.path}\n")
        w(f"  {'':16s} object {f.obj_bytes} B x depth {f.depth} = {f.bytes} B in the {f.home}; {f.channels}\n")
    w("\ncore data memory (each core):\n")
    for k, v in p.core_bytes.items():
        w(f"  {k:48s} {kib(v)}\n")
    w("memory tile (each column):\n")
    for k, v in p.memtile_bytes.items():
        w(f"  {k:48s} {kib(v)}\n")
    w("\nDMA channels:\n")
    for tile_name, dirs in p.channels.items():
        for d, (used, avail, what) in dirs.items():
            w(f"  {tile_name:12s} {d}: {used} of {avail} ({what})\n")
    w("stream-switch ports (per column):\n")
    for what, (used, avail) in p.streams.items():
        w(f"  {what:36s} {used} of {avail}\n")
    w("\ngrid:\n")
    w(f"  columns used: {p.grid['columns used']} of {p.columns}\n")
    w(f"  blocks (first tile, tiles) per column: {_short(p.grid['blocks (first tile, tiles)'], 8)}\n")
    w("schedule:\n")
    for k, v in p.schedule.items():
        w(f"  {k}: {_short(v, 8) if isinstance(v, list) else v}\n")
    for col in p.per_column[:4]:
        w(f"column {col['column']}: tiles {col['block (first tile, tiles)']}, segments (first tile, token tile, first "
          f"K tile, tiles) {_short(col['segments (first tile, token tile, first K tile, tiles)'], 4)}\n")
        for b in col["bds"][:3]:
            chain = f" -> BD {b['next_bd']}" if b["next_bd"] is not None else ""
            rep = f", repeat {b['repeat']}" if b["repeat"] is not None else " (chained)"
            w(f"  step {b['step']} {b['what']:5s} BD {b['bd']}{chain}: offset {b['offset (bytes)']} B sizes {b['sizes']} "
              f"strides {b['strides']}{rep}{', token' if b['token'] else ''}\n")
        if len(col["bds"]) > 3:
            w(f"  ... {len(col['bds'])} BDs in all\n")
        w(f"  stream: {_short([' '.join(map(str, e)) for e in col['stream']], 6)}\n")
    if len(p.per_column) > 4:
        w(f"... {len(p.per_column)} columns in all\n")
    w("RTP words (index " + ", ".join(f"{k} {v}" for k, v in p.rtp["index"].items()) + "), per used column:\n")
    w(f"  {_short([list(x.values()) for x in p.rtp['per used column']], 8)}\n")
    w("runtime sequence operands:\n")
    for k, v in p.tensors.items():
        w(f"  {k}: {v}\n")
    w("DRAM traffic of this invocation:\n")
    for k, v in p.traffic.items():
        w(f"  {k}: {v}\n")
    w(f"kernel calls: {p.calls['per tile']} per tile, per column {_short(p.calls['per column'], 8)}, on the busiest "
      f"core {p.calls['kernel calls on the busiest core']}\n")
    w("core program (every core, once per invocation):\n")
    for k, v in p.core_program.items():
        w(f"  {k}: {v}\n")
    w("\nchecks:\n")
    for what, ok, detail in p.checks:
        w(f"  [{'ok' if ok else 'FAIL'}] {what}: {detail}\n")


def plan_json(p):
    # Shallow: the plan is only read from here on (asdict's deep copy of every BD costs more than the plan).
    d = {f.name: getattr(p, f.name) for f in fields(p)}
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
def iron_tasks(desc, p, col):
    """Column col's runtime-sequence tasks, in IRON's words (no BD chain): per group, the fills of x's FIFO
    ((operand, offset, sizes, strides) in the operand's elements: fp32 values of x and the zeros, bytes of the
    tiles) and the drain of the tiles. A
    step of a full token tile is one group (the host's x BD, its K tiles the outermost dimension); a step
    of a short one a group per tile (its valid rows, then the zeros)."""
    X, Tn, Z = desc.x_operand, desc.tiles_operand, desc.zeros_operand
    tk, tb, rs = p.tile_k, p.tile_bytes, p.row_stride
    out = []
    for st in p.per_column[col]["steps"]:
        t0, nt, kt0, m, v = st["first tile"], st["token tile"], st["first K tile"], st["tiles"], st["valid rows"]
        row0 = nt * p.tile_n * rs
        row_stride = rs if v > 1 else 0
        if not st["padding rows"]:
            out.append(([(X, row0 + kt0 * tk, [m, 1, v, tk], [tk if m > 1 else 0, 0, row_stride, 1])],
                        (Tn, t0 * tb, [1, 1, 1, m * tb], [0, 0, 0, 1])))
            continue
        for j in range(m):
            out.append(([(X, row0 + (kt0 + j) * tk, [1, 1, v, tk], [0, 0, row_stride, 1]),
                         (Z, 0, [1, 1, 1, st["padding rows"] * tk], [0, 0, 0, 1])],
                        (Tn, (t0 + j) * tb, [1, 1, 1, tb], [0, 0, 0, 1])))
    return out


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
    columns = p.columns
    shim_row, mem_row, core_row0 = arr["shim_row"], arr["memtile_row"], arr["first_core_row"]
    idx = prog["rtp_words"]
    rtp_count = prog["rtp_word_count"]
    X, Tn, Z = desc.x_operand, desc.tiles_operand, desc.zeros_operand
    groups = p.groups_per_tile

    f32_t, u8_t, i32_t = np.dtype[np.float32], np.dtype[np.uint8], np.dtype[np.int32]
    group_ty = np.ndarray[(p.group_bytes // 4,), f32_t]
    tile_ty = np.ndarray[(p.tile_bytes,), u8_t]
    rtp_ty = np.ndarray[(rtp_count,), i32_t]
    # The family's one kernel (kernels/act_quant.cc): (const float * x, uint8_t * tile, int32_t g).
    kernel = Kernel(p.contract, kernel_object, [group_ty, tile_ty, np.int32])

    def core_fn(x_in, t_out, rtp, barrier, quantize):
        # Once per invocation: the stream writes the RTP words, then sets the barrier; wait_for_value is an
        # acquire_equal that leaves the value in the lock, so the core releases it after reading the words
        # (../matmul/design.py), before it takes its first object. The contract and version words are read
        # with the tiles word, as the simulator's core model reads a set of words (one contract per program).
        barrier.wait_for_value(bar["acquire"]["value"])
        words = {name: rtp[i] for name, i in sorted(idx.items(), key=lambda kv: kv[1])}
        barrier.release_with_value(bar["release"]["value"])
        for _ in range_(words["tiles"]):
            tile = t_out.acquire(1)
            # Unrolled: each call's group index is a constant (the kernel's int32), no loop index to cast.
            for g in range(groups):
                x = x_in.acquire(1)
                quantize(x, tile, g)
                x_in.release(1)
            t_out.release(1)

    # Per column: its FIFOs, one worker on its core, its RTP buffer and barrier. Every column of the array
    # gets a worker (the xclbin serves every shape); the sequence drives the used ones.
    workers, rtps, barriers, x_ends, t_ends = [], [], [], [], []
    for col in range(columns):
        mem_tile = Tile(col, mem_row)
        x_l2 = ObjectFifo(group_ty, name=f"{desc.x_mem['name']}_{col}", depth=desc.depths[desc.x_mem["name"]])
        x_l1 = x_l2.cons().split([0], obj_types=[group_ty], names=[f"{desc.x_core['name']}_{col}"],
                                 depths=[desc.depths[desc.x_core["name"]]], tile=mem_tile)[0]
        t_l2 = ObjectFifo(tile_ty, name=f"{desc.t_mem['name']}_{col}", depth=desc.depths[desc.t_mem["name"]])
        t_l1 = t_l2.prod().join([0], obj_types=[tile_ty], names=[f"{desc.t_core['name']}_{col}"],
                                depths=[desc.depths[desc.t_core["name"]]], tile=mem_tile)[0]
        x_ends.append(x_l2.prod(tile=Tile(col, shim_row)))
        t_ends.append(t_l2.cons(tile=Tile(col, shim_row)))
        rtp = Buffer(rtp_ty, name=f"rtp_{col}", initial_value=np.zeros(rtp_count, dtype=np.int32), use_write_rtp=True)
        barrier = WorkerRuntimeBarrier()
        rtps.append((col, rtp))
        barriers.append(barrier)
        workers.append(Worker(core_fn, [x_l1.cons(), t_l1.prod(), rtp, barrier, kernel],
                              tile=Tile(col, core_row0), stack_size=p.stack_bytes))

    words = p.rtp["per used column"]
    in_flight = raw["shim"]["steps_in_flight"]
    lengths = {X: p.tensors[f"{X} (arg {desc.args[X]}, fp32 values)"],
               Tn: p.tensors[f"{Tn} (arg {desc.args[Tn]}, bytes)"],
               Z: p.tensors[f"{Z} (arg {desc.args[Z]}, bytes)"]}
    types = {X: np.ndarray[(lengths[X],), f32_t], Tn: np.ndarray[(lengths[Tn],), u8_t],
             Z: np.ndarray[(lengths[Z] // 4,), f32_t]}
    sizes_of = {X: lengths[X], Tn: lengths[Tn], Z: lengths[Z] // 4}
    ordered = sorted((X, Tn, Z), key=lambda o: desc.args[o])
    tasks = [iron_tasks(desc, p, c) for c in range(len(p.per_column))]

    def tap(operand, offset, sizes, strides):
        return TensorAccessPattern((sizes_of[operand],), offset, sizes, strides)

    def sequence(*args):
        tensors = dict(zip(ordered, args[:3]))
        xs, ts = args[3], args[4]
        # The host builds the real stream (src/runtime/quant-sequence.h) and only the xclbin of a build is
        # used; this sequence is the host's schedule in IRON's words: every used column's RTP words, then
        # its barrier set, before any DMA; then group j of every used column's tasks (iron_tasks) in task
        # group j, the drains awaited, as many groups in flight as the description's steps (IRON picks its
        # own BD ids).
        for (col, rtp), barrier in zip(rtps, barriers):
            if col >= len(words):
                continue  # a column without tiles is left at its barrier, as the host's stream leaves it
            for name, i in idx.items():
                rtp[i] = words[col][name]
            barrier.set(bar["set_value"])  # after the words: the core reads them once the lock holds this
        pending = []
        for j in range(max((len(t) for t in tasks), default=0)):
            group = TaskGroup()
            for c, col_tasks in enumerate(tasks):
                if j >= len(col_tasks):
                    continue
                fills, drain = col_tasks[j]
                for operand, off, sz, st in fills:
                    xs[c].fill(tensors[operand], tap=tap(operand, off, sz, st), group=group)
                operand, off, sz, st = drain
                ts[c].drain(tensors[operand], tap=tap(operand, off, sz, st), wait=True, group=group)
            pending.append(group)
            if len(pending) >= in_flight:
                pending.pop(0).finish()
        for group in pending:
            group.finish()

    rt = Runtime(sequence, [types[o] for o in ordered] + [x_ends, t_ends])
    device = iron_devices.NPU2() if columns == arr["max_columns"] else getattr(iron_devices, f"NPU2Col{columns}")()
    return Program(device, rt, workers=workers).resolve_program()


# ---------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------
def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="The quant design (fp32 activation rows -> a matmul contract's activation tiles) for XDNA2 "
                    "(NPU2): prints the data-movement plan of one invocation shape, or emits MLIR with mlir-aie "
                    ">= 1.4 (IRON).")
    ap.add_argument("--dataflow", default=DEFAULT_DATAFLOW,
                    help="the data-movement description (default aie/act_quant/dataflow.json; another file only to "
                         "try a change to one)")
    ap.add_argument("--layout", help="layout of the description (default its first)")
    ap.add_argument("--family", help="family, i.e. core program act_quant_<family> (default the description's first)")
    ap.add_argument("--tile", type=int, help="token tile, i.e. which xclbin (the family has one; default it)")
    ap.add_argument("--rows", type=int, default=64, help="token rows of the invocation (default 64)")
    ap.add_argument("--k", type=int, default=4096, help="fp32 values per row, whole K tiles (default 4096)")
    ap.add_argument("--row-stride", type=int, help="fp32 values between rows of x (default --k)")
    ap.add_argument("--cols", type=int, help="array columns, 1..max_columns (default max_columns)")
    ap.add_argument("--stack-bytes", type=int, help="core stack (default: the family's kernel_stack)")
    ap.add_argument("--kernel-data-bytes", type=int, help="core memory for the kernel's data (default the description's)")
    ap.add_argument("--kernel-object", help="object file of the core program (default xdna_<design>_<family>.o)")
    ap.add_argument("--print-plan", action="store_true", help="print the data-movement plan (no mlir-aie needed)")
    ap.add_argument("--format", choices=["text", "json"], default="text", help="plan format")
    ap.add_argument("--list-tiles", action="store_true", help="print the token tile the family has an xclbin for")
    ap.add_argument("--list-contracts", action="store_true",
                    help="print 'contract source' per contract of the family (the file defining its kernel, '?' "
                         "when none does)")
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
                found = kernel_source(desc, family, c)
                print(f"{c} {found[0] if found else '?'}")
            return 0
        plan = make_plan(desc, args.rows, args.k, args.row_stride, args.cols, family, args.tile, args.stack_bytes,
                         args.kernel_data_bytes)
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
