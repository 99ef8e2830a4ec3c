#!/usr/bin/env python3
"""The "norm" design for XDNA2 (NPU2, AIE2P): RMS_NORM of fp32 rows, with the MUL by its weight, the IRON
program of its data-movement description (aie/rms_norm/dataflow.json).

    y[r][i] = (x[r][i] * s_r) * w[i],  s_r = rsqrt(sum_i x[r][i]^2 * inv_cols + eps)   contract rms_norm_mul_f32
    y[r][i] =  x[r][i] * s_r                                                          contract rms_norm_f32

The weight has one row per row, or one row for every row (a layer's norm weight, llama.cpp's build_norm).

What the program is, all of it read from the description (--dataflow), the one the host's stream
builder (src/runtime/norm-sequence.cpp) and the simulator's DMA interpreter read too; no number of the
data movement is written here:
  - One family ("norm": rms_norm_mul_f32, rms_norm_f32), one xclbin per tile (values per chunk: the
    numeric keys of the family's kernel_stack, 32 to 1024). The host takes the largest tile that divides
    the row (a row is a multiple of 32 values, so one always does). Both contracts are linked into every
    core (kernels/rms_norm.cc); the RTP word "contract" (the contract's position in the family) selects
    the second pass's kernel, so one xclbin serves both, and its weight FIFO exists in both.
  - Per column c (shim (c, shim_row), memory tile (c, memtile_row), core (c, first_core_row)): x and the
    weight each stream from a shim MM2S channel into a memory-tile FIFO of one chunk objects, which hands
    each chunk on to the column's core (a split of one part); the core writes one chunk of y per call
    into a core FIFO joined (one part) into a memory-tile FIFO that the shim's S2MM channel drains.
  - Each core takes whole rows, in two passes over each (the kernels' numerics: aie/rms_norm/README.md).
    Per row: pass 1, per chunk, acquire x, rms_norm_sumsq_f32(x, partial, tile), release x; then
    rms_norm_scale_f32(partial, scale, inv_cols, eps) once; pass 2, per chunk, acquire x (and the
    weight's chunk with the weight) and y, rms_norm_apply_mul_f32(x, w, scale, y, tile) or
    rms_norm_apply_f32(x, scale, y, tile), release them. partial and scale are 32 floats each, buffers
    of the core program (kernel_data_bytes).
  - Why x is read twice from DRAM: a memory-tile FIFO hands each object on once, so the row cannot stay
    in the memory tile for the second pass; that would need an object of a whole row feeding objects of
    a chunk, which object FIFOs do not link. So nothing holds a whole row, and a row may be as long as
    the shim's BDs allow (below), longer than the host takes (kRmsNormMaxCols, 8192 values,
    aie/include/xdna_aie/rms_norm_tiles.h).
  - Why one core per column (array.core_rows 1): a split of x over the 4 core rows would make each
    memory-tile object carry 4 rows' chunks (one per core), and the last group of a column's block would
    need rows the block does not have; it would also take 4 + 4 + 1 memory-tile MM2S channels of 6. A
    description with more core rows fails those checks by name.
  - The work, as the host deals it: R = min(rows, columns) columns used; column c takes a block of
    consecutive rows, count_of(rows, R, c) = rows // R + (c < rows % R), starting at first_of(rows, R,
    c) = rows // R * c + min(c, rows % R). Per column, steps of at most limits.iteration_max rows. Per
    step of n rows: x is a chain of two shim BDs over the same n rows, each one row (cols words, a
    linear transfer) per execution with an iteration dimension of n steps of the row stride, pushed once
    with repeat count n - 1 (each pass of the chain runs each BD once, and a BD advances its iteration
    after each execution, so every row comes twice in a row); the weight one BD, one row per execution,
    iterations n (or 1: one weight row for every row), repeat n - 1; y one BD likewise, with the token
    the stream syncs on. shim.steps_in_flight steps in flight on the description's BD slots: the stream
    syncs on step s - 1's y after queueing step s.
  - RTP words per core (core_program.rtp_words): contract, rows (of this core's block), chunks
    (cols / tile), inv_cols and eps (their fp32 bits, 1.0f / cols as the host computes it), version.
  - A runtime sequence for one invocation shape (--rows, --cols, --no-weight, --one-weight-row, the row
    strides, --columns). The host builds the real streams itself, so only the xclbin of a build is used;
    this sequence is the host's schedule (the same blocks, RTP words and DRAM traffic) in IRON's words.
    IRON's fill has no BD chain, so it goes row by row: per used column and row, x filled twice (an
    outermost dimension of 2 with stride 0, a queue-push repeat), the weight row filled, y drained; a task
    group per row index, shim.steps_in_flight groups in flight. Every column of the array gets a worker
    (the xclbin serves every shape); the sequence drives the columns with rows.

`--print-plan` prints the plan and checks it against the AIE2P limits: core data memory (the core FIFOs,
the RTP words, the kernels' data and stack), the core program memory (an estimate), memory-tile memory,
DMA channels of cores, memory tiles and shims, stream-switch ports, what the kernels' signatures and
loop-count hints allow at this tile, the barrier protocol, the shim BDs, their slots and the shim's task
queues, and the transfer limits of the shape. It needs only a bare Python 3 (no numpy, no mlir-aie), so
CI can check the plan (tests/aie/check_design_rms_norm.sh). Exit status: 0 when every check passes, 1
when one fails (the failed ones printed), 2 for a shape or description the design refuses (the reason on
stderr). Without --print-plan the IRON program is emitted (mlir-aie >= 1.4: callback Runtime, TaskGroup,
handle.fill/drain, Buffer RTPs, WorkerRuntimeBarrier, as ../add/design.py); a plan with a failed check
is not.

The longest row: the shim BDs move a row as one linear transfer (a 32-bit length) and step from row to
row by the row stride, a BD field of at most limits.stride_max words that must cover the row (checked for
every operand read or written by rows, the one weight row excepted, as src/runtime/rows-sequence.cpp
refuses such strides): rows of up to 1048576 values at contiguous strides. The host takes rows up to
kRmsNormMaxCols only.

Status, plainly: the plan's numbers are checked against a recomputation of the rules above
(tests/aie/check_design_rms_norm.sh), and on five shapes against the host's stream builder's own figures
(src/runtime/norm-sequence.cpp: tile, grid, steps and bytes, as tests/kernels/test_rms_norm_stream.cpp
asserts them). The IRON program (emit_mlir) has only been run on
stand-ins of IRON's classes (tests/aie/check_design_rms_norm.sh with tests/aie/check_barrier.py's
stand-ins). It has never been run by the real mlir-aie python package, never compiled by aiecc, never
linked with Peano's objects of the kernels (never built with Peano here), and never run on an NPU. In
particular unverified: that IRON accepts a split and a join of one part, the RTP words' bitcast to f32
(aie.dialects.arith.bitcast), a fill whose outermost dimension of 2 has stride 0 (each row of x twice),
and the NPU2Col<n> device names. The core program memory is an estimate (no Peano here to measure it).
"""

import argparse
import functools
import json
import math
import os
import re
import struct
import sys
from dataclasses import asdict, dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
AIE_DIR = os.path.normpath(os.path.join(HERE, ".."))
DEFAULT_DATAFLOW = os.path.join(HERE, "dataflow.json")
INCLUDE_DIR = os.path.join(AIE_DIR, "include")
TILES_HEADER = "xdna_aie/rms_norm_tiles.h"

# ---------------------------------------------------------------------------------------------------
# AIE2P hardware limits the plan is checked against: facts of the device, not of this design's data
# movement, so they live here (as in ../add/design.py), not in dataflow.json.
# ---------------------------------------------------------------------------------------------------
CORE_S2MM, CORE_MM2S = 2, 2        # DMA channels of a compute tile (AM027)
MEMTILE_S2MM, MEMTILE_MM2S = 6, 6  # AM027 "AIE-ML v2 Memory Tile DMA": six S2MM and six MM2S channels
SHIM_MM2S, SHIM_S2MM = 2, 2        # shim DMA: two each way
NPU2_CORE_ROWS = 4                 # npu2: rows 0 (shim), 1 (memory tiles), 2..5 (cores)
# Stream-switch ports between vertically adjacent tiles (mlir-aie AIE2TargetModel, as ../add/design.py).
UP_PORTS, DOWN_PORTS = 6, 4
SHIM_UP_PORTS, SHIM_DOWN_PORTS = 6, 4
# Shim BD fields and queues (mlir-aie's AIEX verifier, lib/Dialect/AIEX/IR/AIEXDialect.cpp; AM027): the
# description's limits are checked against these.
SHIM_ITERATION_MAX = 64            # a BD's iteration size: 6 bits, 1..64
SHIM_REPEAT_MAX = 255              # "Repeat count exceeds the [0:255] range"
SHIM_STRIDE_MAX = 1 << 20          # a BD's strides: 20 bits of words
SHIM_LENGTH_MAX = (1 << 32) - 1    # a BD's buffer_length (32-bit words)
SHIM_BDS = 16                      # BDs of a shim tile
SHIM_TASK_QUEUE = 4                # tasks a shim DMA channel's queue holds
CORE_PROGRAM_BYTES = 16 * 1024     # core program memory
INT32_MAX = (1 << 31) - 1
# The kernels' rsqrt is within its bound for v >= 2^-100 (kernels/rms_norm.cc); the host's planner takes
# eps >= 2^-100 only (src/ops/rms_norm/plan/rms-norm-plan.cpp).
EPS_MIN = 2.0 ** -100

# Program memory: an estimate until Peano builds the program (no toolchain here). The loops are one
# emulated fp32 multiply each (about 32 VLIW bundles per 32 lanes, llvm-aie aie2p_vmult.h), the scale
# call twelve of them; at most 16 bytes per bundle, plus the core's lock, FIFO and loop code.
PROGRAM_ESTIMATE = 16 * (40 + 70 + 35 + 12 * 32) + 1024

# The core program (not the data movement): per contract of the family, the kernels it calls and what it
# passes them. "chunk": one acquired FIFO object (tile floats); "lanes": a 32-float buffer of the core
# program (partial, scale); "int32": n = the tile; "float": a word of the RTP block as fp32.
SUMSQ = ("rms_norm_sumsq_f32", ("x: chunk", "partial: lanes", "n: int32"))
SCALE = ("rms_norm_scale_f32", ("partial: lanes", "scale: lanes", "inv_cols: float", "eps: float"))
CONTRACTS = {
    "rms_norm_mul_f32": {"weight": True, "apply": ("rms_norm_apply_mul_f32",
                                                   ("x: chunk", "w: chunk", "scale: lanes", "y: chunk", "n: int32"))},
    "rms_norm_f32": {"weight": False, "apply": ("rms_norm_apply_f32",
                                                ("x: chunk", "scale: lanes", "y: chunk", "n: int32"))},
}
OPERANDS = ("x", "weight", "y")  # the kernels' operands, in the order of the runtime sequence's arguments
RTP_NAMES = ("contract", "rows", "chunks", "inv_cols", "eps", "version")


class PlanError(Exception):
    pass


def f32_bits(v):
    """The bits of v rounded to fp32 (round to nearest even; past the fp32 range, infinity), as an unsigned
    32-bit word."""
    try:
        return struct.unpack("<I", struct.pack("<f", v))[0]
    except OverflowError:
        return 0x7F800000 if v > 0 else 0xFF800000


def f32(v):
    return struct.unpack("<f", struct.pack("<I", f32_bits(v)))[0]


def inv_cols_bits(cols):
    """1.0f / (float)cols as the host computes it (src/ops/rms_norm/plan/rms-norm-plan.cpp): the quotient
    of the fp32 cols, rounded once to fp32 (a double quotient rounded to fp32 is the same: 53 >= 2 * 24 + 2)."""
    return f32_bits(1.0 / f32(float(cols)))


# ---------------------------------------------------------------------------------------------------
# The description (dataflow.json), read once and checked for what this program can build.
# ---------------------------------------------------------------------------------------------------
@dataclass
class OperandPath:
    """One operand's two FIFOs: shim <-> memory tile, memory tile <-> core."""
    operand: str
    arg: int
    inbound: bool          # x, weight: shim -> memory tile -> core; y: core -> memory tile -> shim
    link: str              # "split" (inputs), "join" (the output)
    mem: dict              # the memory-tile FIFO (x_l3l2, w_l3l2, y_l2l3)
    core: dict             # the core FIFO (x_l2l1, w_l2l1, y_l1l2)
    shim_channel: int
    mem_chunks: int
    core_chunks: int
    mem_depth: int
    core_depth: int


@dataclass
class Description:
    path: str
    raw: dict
    design: str
    layout: str
    paths: list            # OperandPath per operand: x, weight, y
    parts: int             # array.core_rows

    def path_of(self, operand):
        return next(p for p in self.paths if p.operand == operand)


def _depth(raw, value, where):
    if isinstance(value, int):
        return value
    depths = raw.get("depths", {})
    if value not in depths or not isinstance(depths[value], int):
        raise PlanError(f"{where}: depth {value!r} is neither a number nor a key of \"depths\"")
    return depths[value]


def load_description(path=DEFAULT_DATAFLOW, layout=None):
    try:
        return _load_description(path, layout)
    except (KeyError, TypeError, AttributeError, StopIteration) as e:
        raise PlanError(f"{path}: not a norm description (the movement this program builds): {type(e).__name__} {e}")


def _load_description(path, layout):
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError) as e:
        raise PlanError(f"{path}: {e}")
    if raw.get("format") != "xdna-dataflow" or not isinstance(raw.get("design"), str):
        raise PlanError(f"{path}: not a dataflow description (format \"xdna-dataflow\" with a \"design\")")
    if raw.get("movement") != "norm":
        raise PlanError(f"{path}: movement {raw.get('movement')!r}: this program builds the \"norm\" movement")
    layouts = {spec["name"]: spec for spec in raw["layouts"]}
    name = layout or raw["layouts"][0]["name"]
    if name not in layouts:
        raise PlanError(f"{path}: no layout {name!r} ({', '.join(layouts)})")
    fifos = list(layouts[name]["fifos"])
    where = f"{path}: layout {name}"
    P = raw["array"]["core_rows"]
    if not isinstance(P, int) or P < 1:
        raise PlanError(f"{where}: array.core_rows {P!r}")
    operands = sorted(raw["operands"], key=lambda o: o["arg"])
    if [o["name"] for o in operands] != list(OPERANDS):
        raise PlanError(f"{where}: operands {[o['name'] for o in operands]} by arg: the kernels take x, weight, y")
    paths = []
    for op in operands:
        shim = [f for f in fifos if f.get("operand") == op["name"]]
        if len(shim) != 1 or "shim_channel" not in shim[0]:
            raise PlanError(f"{where}: operand {op['name']} needs exactly one FIFO with a shim channel")
        mem = shim[0]
        inbound = op["name"] != "y"
        want = ("shim", "memtile", "mm2s") if inbound else ("memtile", "shim", "s2mm")
        if (mem["from"], mem["to"], mem["shim_channel"]["direction"]) != want:
            raise PlanError(f"{where}: {mem['name']} runs {mem['from']} -> {mem['to']} on "
                            f"{mem['shim_channel']['direction']}, expected {want[0]} -> {want[1]} on {want[2]}")
        key = "source" if inbound else "sink"
        core = [f for f in fifos if f.get(key) == mem["name"]]
        if len(core) != 1:
            raise PlanError(f"{where}: {mem['name']} needs exactly one core FIFO linked to it")
        core = core[0]
        link = core.get("link")
        if link != ("split" if inbound else "join"):
            raise PlanError(f"{where}: {core['name']} is linked by {link!r}; this program takes an input by a split "
                            "and gives its output by a join (one part per core row)")
        units = {mem["object"]["unit"], core["object"]["unit"]}
        if units != {"chunk"}:
            raise PlanError(f"{where}: {mem['name']}, {core['name']}: objects counted in {sorted(units)}, "
                            "the program counts chunks")
        p = OperandPath(op["name"], op["arg"], inbound, link, mem, core, mem["shim_channel"]["channel"],
                        mem["object"]["count"], core["object"]["count"],
                        _depth(raw, mem["depth"], f"{where}: {mem['name']}"),
                        _depth(raw, core["depth"], f"{where}: {core['name']}"))
        # Each core takes one chunk per call; a split or join over P core rows moves one chunk per core
        # row in each memory-tile object.
        if p.mem_chunks != P or p.core_chunks != 1:
            raise PlanError(f"{where}: {mem['name']} objects of {p.mem_chunks} chunks, {core['name']} of "
                            f"{p.core_chunks}: a {link} over array.core_rows = {P} core rows with one chunk per core "
                            f"and call needs {P} and 1")
        paths.append(p)
    desc = Description(path, raw, raw["design"], name, paths, P)
    for fam, contracts in families_of(desc).items():
        for c in contracts:
            if c not in CONTRACTS:
                raise PlanError(f"{where}: family {fam}: contract {c!r} has no core program here "
                                f"({', '.join(CONTRACTS)})")
    return desc


def families_of(desc):
    return {k: v for k, v in desc.raw["families"].items() if k != "about"}


def family_tiles(desc, family):
    """The tiles a family has an xclbin for: the numeric keys of its kernel_stack."""
    return sorted(int(t) for t in desc.raw["core_budget"]["kernel_stack"][family] if t.isdigit())


def default_tile(desc, family, cols):
    """The host's choice: the largest tile that divides the row."""
    fits = [t for t in family_tiles(desc, family) if cols > 0 and cols % t == 0]
    return fits[-1] if fits else None


def host_max_cols():
    """kRmsNormMaxCols of aie/include/xdna_aie/rms_norm_tiles.h: the longest row the host takes."""
    try:
        with open(os.path.join(INCLUDE_DIR, TILES_HEADER), encoding="utf-8") as f:
            m = re.search(r"kRmsNormMaxCols\s*=\s*(\d+)\s*;", f.read())
    except OSError:
        return None
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------------------------------------------
# What the kernels take and promise (their sources, not the data movement).
# ---------------------------------------------------------------------------------------------------
_HINT_RE = re.compile(r"AIE_LOOP_MIN_ITERATION_COUNT\((\d+)\)")
_LANES_REF_RE = re.compile(r"xdna_aie::(k\w*Lanes)\b")
_INCLUDE_RE = re.compile(r'#include\s+"(xdna_aie/[\w.-]+)"')


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


def _body(text, start):
    """The text of a function body whose '{' is at text[start - 1], up to its matching '}'."""
    depth = 1
    for m in re.finditer(r"[{}]", text[start:]):
        depth += 1 if m.group() == "{" else -1
        if depth == 0:
            return text[start:start + m.end()]
    return text[start:]


@functools.lru_cache(maxsize=None)
def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def kernel_source(desc, family, symbol):
    """(file name, parameter list, body of the definition, whole text) of the kernel defining `symbol`:
    the family's source first, then the other .cc files of its directory."""
    d = kernels_dir(desc, family)
    return None if d is None else _kernel_in(d, family_source(desc, family), symbol)


@functools.lru_cache(maxsize=None)
def _kernel_in(d, source, symbol):
    names = [source] + sorted(n for n in os.listdir(d) if n.endswith(".cc") and n != source)
    for n in names:
        text = _read(os.path.join(d, n))
        m = re.search(r"\bvoid\s+" + re.escape(symbol) + r"\s*\(([^)]*)\)\s*\{", text)
        if m:
            params = [" ".join(x.split()) for x in m.group(1).split(",") if x.strip()]
            return n, params, _body(text, m.end()), text
    return None


def kernel_lanes(text):
    """(lanes, where): the xdna_aie::k...Lanes constant a kernel file names, from the header defining it."""
    m = _LANES_REF_RE.search(text)
    if m is None:
        return None
    name = m.group(1)
    for inc in _INCLUDE_RE.findall(text):
        try:
            v = re.search(r"constexpr\s+int\s+" + re.escape(name) + r"\s*=\s*(\d+)\s*;", _read(os.path.join(INCLUDE_DIR, inc)))
        except OSError:
            continue
        if v:
            return int(v.group(1)), f"{name} in {inc}"
    return None


def _param_kind(param):
    """pointer, int32 or float: what a C parameter takes."""
    if "*" in param:
        return "pointer"
    if re.search(r"\bint32_t\b", param):
        return "int32"
    if re.search(r"\bfloat\b", param):
        return "float"
    return param


def family_kernels(desc, family):
    """Every kernel the core program calls, once each: (symbol, what the core passes)."""
    out = [SUMSQ, SCALE]
    for c in families_of(desc)[family]:
        out.append(CONTRACTS[c]["apply"])
    return out


def kernel_checks(desc, family, tile):
    """Per kernel of the xclbin: it takes what the core program passes (pointers to the objects and
    buffers, int32 n, fp32 words), its vectors tile the chunk, and its loop, which runs n / lanes times,
    keeps its AIE_LOOP_MIN_ITERATION_COUNT(h) promise at n = tile (the compiled loop may have no path
    for fewer trips; the host build defines the hint away, so the simulator cannot show it)."""
    checks, lanes_seen = [], None
    for symbol, passes in family_kernels(desc, family):
        found = kernel_source(desc, family, symbol)
        if found is None:
            checks.append((f"kernel {symbol}", False,
                           f"no .cc file of the directory of family {family}'s source {family_source(desc, family)!r} "
                           f"defines {symbol}"))
            continue
        source, params, body, text = found
        want = ["int32" if p.endswith("int32") else "float" if p.endswith("float") else "pointer" for p in passes]
        got = [_param_kind(p) for p in params]
        checks.append((f"kernel {symbol} ({source}) takes what the core program passes", got == want,
                       f"{symbol}({', '.join(params)}); the core program passes ({'; '.join(passes)})"))
        lanes = kernel_lanes(text)
        if lanes is None:
            checks.append((f"kernel {symbol} ({source}) lanes", False,
                           f"{source} names no xdna_aie::k...Lanes constant of a header it includes"))
            continue
        lanes, lanes_at = lanes
        lanes_seen = lanes
        hint = _HINT_RE.search(body)
        if hint is None:
            continue  # no chunk loop (rms_norm_scale_f32 works on the 32 lanes)
        checks.append((f"kernel {symbol} ({source}) tile in whole vectors", tile % lanes == 0,
                       f"tile {tile}, {lanes} lanes ({lanes_at})"))
        h, trips = int(hint.group(1)), tile // lanes
        checks.append((f"kernel {symbol} ({source}) loop keeps its min_iteration_count at n = tile", trips >= h,
                       f"{tile} / {lanes} lanes = {trips} trip(s), AIE_LOOP_MIN_ITERATION_COUNT({h})" +
                       ("" if trips >= h else f": not defined on the NPU below tile {h * lanes}")))
    return checks, lanes_seen


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
class Transfer:
    """One shim BD of a step (the largest: column 0's first), 32-bit words. sizes / strides outermost
    first: [iteration, d2, d1, d0]; a linear row is d0 = cols."""
    what: str          # "x pass 1", "x pass 2", "weight", "y"
    operand: str
    bd: int            # the BD id of step slot 0
    next_bd: int       # the BD it chains to, -1 for none
    sizes: list
    strides: list
    repeat: int        # queue-push repeat count of the task (it runs repeat + 1 times)
    token: bool        # the task issues the completion token the stream syncs on
    steps_rows: bool   # its iteration dimension steps by a row stride (not the one weight row)

    @property
    def words_per_execution(self):
        return self.sizes[1] * self.sizes[2] * self.sizes[3]


@dataclass
class Plan:
    dataflow: str
    design: str
    layout: str
    family: str
    contract: str
    contract_index: int
    weight: bool
    one_weight_row: bool
    tile: int
    columns: int
    parts: int
    chunk_bytes: int
    rows: int
    cols: int
    chunks: int
    strides: dict
    eps: float
    stack_bytes: int
    kernel_data_bytes: int
    host_max_cols: int = None
    lanes: int = 0     # the kernels' vector lanes (kRmsNormLanes): partial and scale hold this many floats
    kernels: dict = field(default_factory=dict)
    fifos: list = field(default_factory=list)
    core_bytes: dict = field(default_factory=dict)
    program_bytes: dict = field(default_factory=dict)
    memtile_bytes: dict = field(default_factory=dict)
    channels: dict = field(default_factory=dict)
    streams: dict = field(default_factory=dict)
    grid: dict = field(default_factory=dict)
    steps: dict = field(default_factory=dict)
    rtp: dict = field(default_factory=dict)
    transfers: list = field(default_factory=list)
    tensors: dict = field(default_factory=dict)
    traffic: dict = field(default_factory=dict)
    calls: dict = field(default_factory=dict)
    core_program: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)


def first_of(total, parts, i):
    """The host's first_of: where part i of `total` split in `parts` near-equal parts starts."""
    return total // parts * i + min(i, total % parts)


def count_of(total, parts, i):
    """The host's count_of: the size of part i (the first total % parts one larger)."""
    return total // parts + (1 if i < total % parts else 0)


def column_steps(p, c):
    """Column c's steps: (first row, rows) of each, in the order the host streams them."""
    first, count = p.grid["blocks (first row, rows)"][c]
    per = p.steps["rows per step (at most)"]
    return [(first + done, min(per, count - done)) for done in range(0, count, per)]


def make_plan(desc, rows=64, cols=4096, weight=True, columns=None, x_stride=None, w_stride=None, y_stride=None,
              eps=1e-6, tile=None, family=None, stack_bytes=None, kernel_data_bytes=None):
    raw = desc.raw
    families = families_of(desc)
    family = family or next(iter(families))
    if family not in families:
        raise PlanError(f"unknown family {family!r} ({', '.join(families)})")
    contracts = families[family]
    with_w = [c for c in contracts if CONTRACTS[c]["weight"] == weight]
    if not with_w:
        raise PlanError(f"family {family} has no contract {'with' if weight else 'without'} the weight")
    contract = with_w[0]
    if raw["device"] != "npu2":
        raise PlanError(f"{desc.path}: device {raw['device']!r}: this design targets npu2 (AIE2P) only")
    max_cols = raw["array"]["max_columns"]
    columns = max_cols if columns is None else columns
    if not 1 <= columns <= max_cols:
        raise PlanError(f"--columns {columns}: npu2 has 1..{max_cols} columns")
    if rows <= 0:
        raise PlanError(f"{rows} rows: the design takes at least one")
    lanes_min = min(family_tiles(desc, family))
    if cols <= 0 or cols % 32:
        raise PlanError(f"a row of {cols} values: the design takes rows of a positive multiple of 32 values "
                        f"(the kernels' 32 lanes; the smallest tile is {lanes_min})")
    x_stride = cols if x_stride is None else x_stride
    y_stride = cols if y_stride is None else y_stride
    w_stride = cols if w_stride is None else w_stride
    for name, s in (("x", x_stride), ("weight", w_stride), ("y", y_stride)):
        if s < 0 or (s == 0 and name != "weight"):
            raise PlanError(f"{name} row stride {s}: a stride is positive (0 only for the weight: one row for every row)")
    tiles = family_tiles(desc, family)
    if tile is None:
        tile = default_tile(desc, family, cols)
        if tile is None:
            raise PlanError(f"a row of {cols} values: no tile of {tiles} divides it")
    if tile not in tiles:
        raise PlanError(f"family {family} has no xclbin for tile {tile} (it has {', '.join(map(str, tiles))})")
    budget = raw["core_budget"]
    if stack_bytes is None:
        stack_bytes = budget["kernel_stack"][family][str(tile)]
    if kernel_data_bytes is None:
        kernel_data_bytes = budget["kernel_data_bytes"]
    P = desc.parts
    chunk = raw["units"]["chunk"] * tile
    one_row = weight and w_stride == 0
    p = Plan(dataflow=desc.path, design=desc.design, layout=desc.layout, family=family, contract=contract,
             contract_index=contracts.index(contract), weight=weight, one_weight_row=one_row, tile=tile,
             columns=columns, parts=P, chunk_bytes=chunk, rows=rows, cols=cols,
             chunks=cols // tile if cols % tile == 0 else 0,
             strides={"x": x_stride, "weight": (w_stride if weight else None), "y": y_stride}, eps=eps,
             stack_bytes=stack_bytes, kernel_data_bytes=kernel_data_bytes, host_max_cols=host_max_cols())
    for sym, _ in family_kernels(desc, family):
        found = kernel_source(desc, family, sym)
        p.kernels[sym] = found[0] if found else None
    check = lambda what, ok, detail: p.checks.append((what, bool(ok), detail))
    arr = raw["array"]
    shim_at, mem_at, core_at = f"(c,{arr['shim_row']})", f"(c,{arr['memtile_row']})", arr["first_core_row"]
    check("array: the core rows the program uses", 1 <= P <= NPU2_CORE_ROWS and core_at > arr["memtile_row"],
          f"core rows {core_at}..{core_at + P - 1} (array.core_rows {P}) of npu2's {NPU2_CORE_ROWS} above the memory tile")

    # FIFOs, from the description. The weight's are in the xclbin whether the invocation has a weight or
    # not: one xclbin per tile serves both contracts.
    for op in desc.paths:
        m, c = op.mem, op.core
        mem_fifo = Fifo(f"{m['name']}_<c>", f"shim{shim_at} -> memtile{mem_at}" if op.inbound else
                        f"memtile{mem_at} -> shim{shim_at}", op.mem_chunks * chunk, op.mem_depth, "memtile",
                        f"shim MM2S {op.shim_channel}, memtile S2MM 1" if op.inbound else
                        f"memtile MM2S 1, shim S2MM {op.shim_channel}", m.get("about", ""))
        if op.inbound:
            core_fifo = Fifo(f"{c['name']}_<c>", f"memtile{mem_at} -> core(c,{core_at}), split of {P} part(s)",
                             chunk, op.core_depth, "core", f"memtile MM2S {P}, core S2MM 1", c.get("about", ""))
        else:
            core_fifo = Fifo(f"{c['name']}_<c>", f"core(c,{core_at}) -> memtile{mem_at}, join of {P} part(s)",
                             chunk, op.core_depth, "core", f"core MM2S 1, memtile S2MM {P}", c.get("about", ""))
        p.fifos += [mem_fifo, core_fifo] if op.inbound else [core_fifo, mem_fifo]

    # Core data memory: the core FIFOs' buffers, the RTP words, the kernels' stack and data.
    prog = raw["core_program"]
    rtp_words = prog["rtp_word_count"]
    for f in p.fifos:
        if f.home == "core":
            p.core_bytes[f"{f.name} ({f.depth} x 1 chunk)"] = f.bytes
    p.core_bytes["RTP words"] = 4 * rtp_words
    source = family_source(desc, family) or "?"
    p.core_bytes[f"stack ({source}'s kernel_stack at tile {tile})"] = stack_bytes
    p.core_bytes["kernel data (partial sums, scale)"] = kernel_data_bytes
    core_total = sum(p.core_bytes.values())
    p.core_bytes["total"] = core_total
    core_limit = budget["core_data_bytes"]
    check("core data memory", core_total <= core_limit,
          f"{core_total} of {core_limit} bytes ({core_limit - core_total} free)")
    rtp_at = prog["rtp_core_address"]
    check("RTP words inside core data memory", rtp_at % 4 == 0 and rtp_at + 4 * rtp_words <= core_limit,
          f"[{rtp_at}, {rtp_at + 4 * rtp_words}) of {core_limit} (the IRON build does not pin the buffer there yet)")
    p.program_bytes = {"estimate": PROGRAM_ESTIMATE, "limit": CORE_PROGRAM_BYTES,
                       "what": "four chunk loops and the scale's twelve emulated multiplies, at most 16 B per bundle, "
                               "plus lock, FIFO and loop code; no Peano here to measure it"}
    check("core program memory (an estimate)", PROGRAM_ESTIMATE <= CORE_PROGRAM_BYTES,
          f"about {PROGRAM_ESTIMATE} of {CORE_PROGRAM_BYTES} bytes (estimated, not measured)")

    for f in p.fifos:
        if f.home == "memtile":
            p.memtile_bytes[f"{f.name} ({f.depth} x {P} chunk{'s' if P > 1 else ''})"] = f.bytes
    mem_total = sum(p.memtile_bytes.values())
    p.memtile_bytes["total"] = mem_total
    check("memory tile", mem_total <= budget["memtile_bytes"], f"{mem_total} of {budget['memtile_bytes']} bytes")

    # DMA channels (the xclbin's: x and the weight in, y out). A split takes one memory-tile MM2S channel
    # per core row it feeds, a join one S2MM channel per core row it collects.
    ins = [op for op in desc.paths if op.inbound]
    outs = [op for op in desc.paths if not op.inbound]
    names = lambda ops: ", ".join(op.operand for op in ops)
    p.channels = {
        "core": {"S2MM": (len(ins), CORE_S2MM, names(ins)), "MM2S": (len(outs), CORE_MM2S, names(outs))},
        "memory tile": {
            "S2MM": (len(ins) + P * len(outs), MEMTILE_S2MM,
                     f"{names(ins)} from the shim; {P} x {names(outs)} from the core row(s)"),
            "MM2S": (P * len(ins) + len(outs), MEMTILE_MM2S,
                     f"{P} x {names(ins)} to the core row(s); {names(outs)} to the shim"),
        },
        "shim": {"MM2S": (len(ins), SHIM_MM2S, names(ins)), "S2MM": (len(outs), SHIM_S2MM, names(outs))},
    }
    for tile_name, dirs in p.channels.items():
        for d, (used, avail, what) in dirs.items():
            check(f"DMA channels {tile_name} {d}", used <= avail, f"{used} of {avail} ({what})")
    for direction, ops, limit in (("MM2S", ins, SHIM_MM2S), ("S2MM", outs, SHIM_S2MM)):
        chans = [op.shim_channel for op in ops]
        check(f"shim {direction} channel numbers distinct and in range",
              len(set(chans)) == len(chans) and all(0 <= ch < limit for ch in chans),
              f"{', '.join(f'{op.operand} {op.shim_channel}' for op in ops)} of 0..{limit - 1}")

    # Stream-switch ports: each split part is a stream of its own up to its core row; each core's y one
    # down to the memory tile.
    up = [len(ins) * (P - k) for k in range(P)]
    down = [len(outs) * (P - k) for k in range(P)]
    p.streams = {
        "shim -> memory tile (up)": (len(ins), SHIM_UP_PORTS),
        "memory tile -> shim (down)": (len(outs), SHIM_DOWN_PORTS),
        f"memory tile -> core row {core_at} (up)": (up[0], UP_PORTS),
        f"core row {core_at} -> memory tile (down)": (down[0], DOWN_PORTS),
    }
    for k in range(1, P):
        p.streams[f"core row {core_at + k - 1} -> {core_at + k} (up)"] = (up[k], UP_PORTS)
        p.streams[f"core row {core_at + k} -> {core_at + k - 1} (down)"] = (down[k], DOWN_PORTS)
    for what, (used, avail) in p.streams.items():
        check(f"stream-switch ports {what}", used <= avail, f"{used} stream(s) of {avail} ports")

    # The kernels: every one of the family is linked into the xclbin.
    kchecks, lanes = kernel_checks(desc, family, tile)
    p.lanes = lanes or 0
    for what, ok, detail in kchecks:
        check(what, ok, detail)
    need = 2 * (lanes or 0) * 4
    check("kernel data: the partial sums and the scale", lanes is not None and kernel_data_bytes >= need,
          f"kernel_data_bytes {kernel_data_bytes}, partial and scale of {lanes} floats each: {need} bytes")

    _plan_shape(desc, p, check)
    _plan_core_program(desc, p, check)
    return p


def _plan_shape(desc, p, check):
    """The grid, steps, shim BDs, tasks and traffic of one invocation of rows x cols, as the host's
    norm stream builder makes them."""
    raw = desc.raw
    lim, shim = raw["limits"], raw["shim"]
    P, tile, cols = p.parts, p.tile, p.cols
    iters, stride_max = lim["iteration_max"], lim["stride_max"]
    repeat_max = lim.get("repeat_max", SHIM_REPEAT_MAX)
    check("limits.iteration_max within the shim BD's iteration count", 1 <= iters <= SHIM_ITERATION_MAX,
          f"{iters} of 1..{SHIM_ITERATION_MAX}")
    check("limits.repeat_max within the push queue's repeat count", 0 <= repeat_max <= SHIM_REPEAT_MAX,
          f"{repeat_max} of 0..{SHIM_REPEAT_MAX}")
    check("limits.stride_max within the shim BD's stride field", 1 <= stride_max <= SHIM_STRIDE_MAX,
          f"{stride_max} of 1..{SHIM_STRIDE_MAX} words")
    check("shape: the row in whole chunks of the tile", cols % tile == 0, f"row of {cols} values, tile {tile}")
    eps_ok = math.isfinite(p.eps) and f32(p.eps) >= EPS_MIN
    check("eps: at least 2^-100 (the kernels' rsqrt range)", eps_ok, f"eps {p.eps!r} (fp32 {f32(p.eps)!r})")

    # The grid: R columns, column c a block of consecutive rows.
    R = min(p.rows, p.columns)
    blocks = [(first_of(p.rows, R, c), count_of(p.rows, R, c)) for c in range(R)]
    p.grid = {"columns used": R, "blocks (first row, rows)": [list(b) for b in blocks]}
    check("array: a block's rows in whole groups of array.core_rows", all(n % P == 0 for _, n in blocks),
          f"blocks of {sorted({n for _, n in blocks})} rows, {P} core row(s) per column" +
          ("" if P == 1 else ": each memory-tile object would carry one chunk of each of P rows, and the last "
                             "group of a block would need rows the block does not have"))
    per_step = iters
    steps = math.ceil(blocks[0][1] / per_step)
    in_flight = shim["steps_in_flight"]
    p.steps = {"rows per step (at most)": per_step, "steps": steps, "steps in flight": in_flight}
    p.steps["per column (first row, rows)"] = [[list(s) for s in column_steps(p, c)] for c in range(R)]

    # BD slots: per step in flight one set; x a chain of two BDs, the weight and y one each.
    slots = shim["bd_slots"]
    ids_of = lambda s, op: (s.get(op) if isinstance(s.get(op), list) else [s.get(op)]) if op in s else []
    want_n = {"x": 2, "weight": 1, "y": 1}
    ids = [i for s in slots for op in OPERANDS for i in ids_of(s, op)]
    check("shim BD slots: one set per step in flight, 2 x BDs (the chain), 1 weight, 1 y",
          len(slots) == in_flight and all(len(ids_of(s, op)) == n for s in slots for op, n in want_n.items()),
          f"{len(slots)} set(s) for {in_flight} step(s) in flight: " +
          "; ".join(", ".join(f"{op} {ids_of(s, op)}" for op in OPERANDS) for s in slots))
    check("shim BD ids distinct and in range",
          len(set(ids)) == len(ids) and all(isinstance(i, int) and 0 <= i < shim["bds"] for i in ids),
          f"{sorted(ids, key=lambda i: (not isinstance(i, int), str(i) if not isinstance(i, int) else i))} of 0..{shim['bds'] - 1}")
    check("shim: the description's bds within the shim tile's", shim["bds"] <= SHIM_BDS,
          f"{shim['bds']} of {SHIM_BDS}")
    bds_per_step = sum(want_n.values())
    check("shim BDs in flight", in_flight * bds_per_step <= SHIM_BDS,
          f"{in_flight} step(s) x {bds_per_step} BDs (x 2, weight 1, y 1) = {in_flight * bds_per_step} of {SHIM_BDS}")
    # One task per step and channel (x's chain is one task); the stream syncs on step s - (in_flight - 1)
    # after queueing step s, so a channel holds at most in_flight tasks.
    check("shim task queue per channel", in_flight <= SHIM_TASK_QUEUE,
          f"{in_flight} step(s) in flight x 1 task per channel and step = {in_flight} of {SHIM_TASK_QUEUE} queued")
    p.steps["shim BDs per step"] = bds_per_step if p.weight else bds_per_step - 1
    p.steps["tasks queued per channel (at most)"] = min(in_flight, steps)

    # The BDs of the largest step (column 0's first). Iteration sizes count rows; a BD moves one row per
    # execution and advances its iteration after each.
    n0 = min(per_step, blocks[0][1])
    slot = slots[0] if slots else {}
    sid = lambda op, k=0: (ids_of(slot, op) + [-1, -1])[k]
    xs, ws, ys = p.strides["x"], p.strides["weight"], p.strides["y"]
    p.transfers = [
        Transfer("x pass 1", "x", sid("x", 0), sid("x", 1), [n0, 1, 1, cols], [xs, 0, 0, 1], n0 - 1, False, True),
        Transfer("x pass 2", "x", sid("x", 1), -1, [n0, 1, 1, cols], [xs, 0, 0, 1], n0 - 1, False, True),
    ]
    if p.weight:
        if p.one_weight_row:
            p.transfers.append(Transfer("weight", "weight", sid("weight"), -1, [1, 1, 1, cols], [0, 0, 0, 1],
                                        n0 - 1, False, False))
        else:
            p.transfers.append(Transfer("weight", "weight", sid("weight"), -1, [n0, 1, 1, cols], [ws, 0, 0, 1],
                                        n0 - 1, False, True))
    p.transfers.append(Transfer("y", "y", sid("y"), -1, [n0, 1, 1, cols], [ys, 0, 0, 1], n0 - 1, True, True))
    for t in p.transfers:
        it, length, stride = t.sizes[0], t.words_per_execution, t.strides[0]
        where = f"shim BD {t.what}"
        check(f"{where}: iteration count", 1 <= it <= iters, f"{it} of 1..{iters}")
        check(f"{where}: queue-push repeat", t.repeat <= repeat_max, f"{t.repeat} <= {repeat_max}")
        check(f"{where}: buffer length", length <= SHIM_LENGTH_MAX, f"{length} <= {SHIM_LENGTH_MAX} words")
        # A row stride (not the one weight row's) is a BD field and must cover the row, as the host's
        # stream builders refuse it otherwise.
        check(f"{where}: iteration stride within the shim's stride", not t.steps_rows or stride <= stride_max,
              f"{stride} <= {stride_max} words" if t.steps_rows else "the one weight row: no row stride")
        check(f"{where}: iteration stride covers the row", not t.steps_rows or stride >= cols,
              f"stride {stride}, row {cols} words" if t.steps_rows else "the one weight row: no row stride")

    # The runtime sequence's operands (fp32 values).
    span = lambda s: (p.rows - 1) * s + cols
    p.tensors = {"x (arg 0)": span(xs),
                 "weight (arg 1)": (cols if p.one_weight_row else span(ws)) if p.weight else cols,
                 "y (arg 2)": span(ys)}
    if not p.weight:
        p.tensors["weight (arg 1)"] = f"{cols} (not read: rms_norm_f32)"
    # DRAM traffic as the host counts it: per column and step, each BD's bytes per execution times the
    # executions (the task runs repeat + 1 times; a chain pass runs each of its BDs once).
    moved = {"x": 0, "weight": 0, "y": 0}
    for c in range(R):
        for _, n in column_steps(p, c):
            for t in p.transfers:
                moved[t.operand] += 4 * t.words_per_execution * n
    p.traffic = {"x read (bytes)": moved["x"], "weight read (bytes)": moved["weight"],
                 "y written (bytes)": moved["y"], "read (bytes)": moved["x"] + moved["weight"],
                 "written (bytes)": moved["y"]}
    per_row = 2 * p.chunks + 1
    calls = [n * per_row for _, n in blocks]
    apply = CONTRACTS[p.contract]["apply"][0]
    p.calls = {"per row": {SUMSQ[0]: p.chunks, SCALE[0]: 1, apply: p.chunks},
               "per column": calls, "kernel calls on the busiest core": max(calls)}


def _plan_core_program(desc, p, check):
    """The RTP words of each used column and the barrier every core passes once per invocation."""
    prog = desc.raw["core_program"]
    bar = prog["barrier"]
    index = prog["rtp_words"]
    inv, eps = inv_cols_bits(p.cols), f32_bits(p.eps)
    per_column = [{"contract": p.contract_index, "rows": n, "chunks": p.chunks, "inv_cols": inv, "eps": eps,
                   "version": prog["rtp_layout_version"]} for _, n in p.grid["blocks (first row, rows)"]]
    p.rtp = {"index": dict(index), "per used column": per_column}
    mode, acquire, release, set_value = bar["acquire"]["mode"], bar["acquire"]["value"], bar["release"]["value"], bar["set_value"]
    equal = mode == "equal"
    after = (set_value if equal else set_value - acquire) + release
    apply = CONTRACTS[p.contract]["apply"][0]
    p.core_program = {
        "barrier lock": bar["lock"],
        "sequence: barrier.set": set_value,
        f"core: wait_for_value (acquire {mode})": acquire,
        "core: release_with_value, after the RTP reads": release,
        "lock after a core's pass": after,
        "per row": f"pass 1: {p.chunks} x (acquire x; {SUMSQ[0]}(x, partial, {p.tile}); release x); "
                   f"{SCALE[0]}(partial, scale, inv_cols, eps); pass 2: {p.chunks} x (acquire x"
                   f"{', w' if p.weight else ''}, y; {apply}; release)",
    }
    check("RTP words: contract, rows, chunks, inv_cols, eps and version, distinct, within the word count",
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
    largest = max(max(w.values()) for w in per_column)
    check("RTP words fit the core's int32 words", largest <= prog["rtp_word_max"] <= INT32_MAX,
          f"largest {largest} <= {prog['rtp_word_max']} (int32 at most {INT32_MAX})")


# ---------------------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------------------
def kib(n):
    return f"{n} B ({n / 1024:.2f} KiB)"


def _short(lst, n=6):
    return str(lst) if len(lst) <= n else f"{str(lst[:n])[:-1]}, ... ({len(lst)} in all)]"


def print_plan_text(p, out=sys.stdout):
    w = out.write
    w(f"design: norm ({p.design}), family {p.family} ({p.contract}, contract RTP = {p.contract_index}; kernels "
      f"{', '.join(f'{k} in {s}' for k, s in p.kernels.items())}), tile {p.tile} values ({p.chunk_bytes} B chunks), "
      f"{p.columns} column(s) x {p.parts} core row(s), npu2\n")
    w(f"description: {p.dataflow}, layout {p.layout}\n")
    weight = ("one row for every row" if p.one_weight_row else f"one row per row, stride {p.strides['weight']}") \
        if p.weight else "none (RMS_NORM alone)"
    w(f"invocation: {p.rows} rows x {p.cols} values ({p.chunks} chunk(s) of {p.tile}), x stride {p.strides['x']}, "
      f"y stride {p.strides['y']}, weight {weight}, eps {p.eps!r}\n")
    if p.host_max_cols is not None:
        w(f"the host takes rows of up to {p.host_max_cols} values (kRmsNormMaxCols, {TILES_HEADER})" +
          (f": this row is longer, a shape of the design only\n" if p.cols > p.host_max_cols else "\n"))
    w("\nFIFOs (per column c):\n")
    for f in p.fifos:
        w(f"  {f.name:16s} {f.path}\n")
        w(f"  {'':16s} object {f.obj_bytes} B x depth {f.depth} = {f.bytes} B in the {f.home}; {f.channels}\n")
    w("\ncore data memory (each core; the weight's buffers are in the xclbin with or without the weight):\n")
    for k, v in p.core_bytes.items():
        w(f"  {k:44s} {kib(v)}\n")
    w(f"core program memory: about {p.program_bytes['estimate']} of {p.program_bytes['limit']} B, an ESTIMATE "
      f"({p.program_bytes['what']})\n")
    w("memory tile (each column):\n")
    for k, v in p.memtile_bytes.items():
        w(f"  {k:44s} {kib(v)}\n")
    w("\nDMA channels:\n")
    for tile_name, dirs in p.channels.items():
        for d, (used, avail, what) in dirs.items():
            w(f"  {tile_name:12s} {d}: {used} of {avail} ({what})\n")
    w("stream-switch ports (per column):\n")
    for what, (used, avail) in p.streams.items():
        w(f"  {what:36s} {used} of {avail}\n")
    w("\ngrid:\n")
    w(f"  columns used: {p.grid['columns used']} of {p.columns}\n")
    w(f"  blocks (first row, rows) per column: {_short(p.grid['blocks (first row, rows)'], 8)}\n")
    w("steps:\n")
    for k, v in p.steps.items():
        if k == "per column (first row, rows)":
            for c, s in enumerate(v):
                w(f"  column {c}: {_short(s)}\n")
        else:
            w(f"  {k}: {v}\n")
    w("RTP words (index " + ", ".join(f"{k} {v}" for k, v in p.rtp["index"].items()) + "), per used column:\n")
    for c, words in enumerate(p.rtp["per used column"]):
        w(f"  column {c}: " + ", ".join(f"{k} {v}" + (f" ({v:#010x})" if k in ("inv_cols", "eps") else "")
                                        for k, v in words.items()) + "\n")
    w("shim BDs of a step (the largest: column 0's first; slot 0's ids; sizes / strides outermost first, words):\n")
    for t in p.transfers:
        w(f"  {t.what:9s} BD {t.bd}{f' -> BD {t.next_bd}' if t.next_bd >= 0 else ''}: sizes {t.sizes} strides "
          f"{t.strides}, queue-push repeat {t.repeat}{', token' if t.token else ''}\n")
    w("runtime sequence operands (fp32 values):\n")
    for k, v in p.tensors.items():
        w(f"  {k}: {v}\n")
    w("DRAM traffic of this invocation:\n")
    for k, v in p.traffic.items():
        w(f"  {k}: {v}\n")
    w("kernel calls:\n")
    w(f"  per row: {p.calls['per row']}\n")
    w(f"  per column: {_short(p.calls['per column'], 8)}\n")
    w(f"  kernel calls on the busiest core: {p.calls['kernel calls on the busiest core']}\n")
    w("core program (every core, once per invocation):\n")
    for k, v in p.core_program.items():
        w(f"  {k}: {v}\n")
    w("\nchecks:\n")
    for what, ok, detail in p.checks:
        w(f"  [{'ok' if ok else 'FAIL'}] {what}: {detail}\n")


def plan_json(p):
    d = asdict(p)
    d["fifos"] = [dict(asdict(f), bytes=f.bytes) for f in p.fifos]
    d["transfers"] = [dict(asdict(t), words_per_execution=t.words_per_execution) for t in p.transfers]
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
        from aie.dialects import arith
        from aie.helpers.dialects.scf import else_, if_
        from aie.helpers.taplib import TensorAccessPattern
        from aie.ir import F32Type
        from aie.iron import (Buffer, Kernel, ObjectFifo, Program, Runtime, TaskGroup, Worker,
                              WorkerRuntimeBarrier)
        from aie.iron.controlflow import range_
        from aie.iron.device import Tile
    except ImportError as e:
        raise PlanError(f"emitting MLIR needs mlir-aie >= 1.4 (python package 'aie') and numpy: {e}")

    raw = desc.raw
    arr, prog = raw["array"], raw["core_program"]
    bar = prog["barrier"]
    tile, cols, columns = p.tile, p.cols, p.columns
    shim_row, mem_row, core_row0 = arr["shim_row"], arr["memtile_row"], arr["first_core_row"]
    idx = prog["rtp_words"]
    rtp_count = prog["rtp_word_count"]
    lanes = p.lanes  # partial and scale: one float per lane each (kernel_data_bytes holds them, checked)

    f32_t, i32_t = np.dtype[np.float32], np.dtype[np.int32]
    chunk_ty = np.ndarray[(tile,), f32_t]
    lanes_ty = np.ndarray[(lanes,), f32_t]
    rtp_ty = np.ndarray[(rtp_count,), i32_t]
    kinds = {"chunk": chunk_ty, "lanes": lanes_ty, "int32": np.int32, "float": np.float32}

    # Every kernel of the family, linked into every core (one object of rms_norm.cc): the contract word
    # picks the second pass's kernel per invocation.
    def kernel(spec):
        sym, passes = spec
        return Kernel(sym, kernel_object, [kinds[a.split(": ")[1]] for a in passes])

    contracts = families_of(desc)[p.family]
    sumsq, scale_k = kernel(SUMSQ), kernel(SCALE)
    applies = [kernel(CONTRACTS[c]["apply"]) for c in contracts]
    with_weight = [CONTRACTS[c]["weight"] for c in contracts]

    def pass2(i, x_in, w_in, y_out, scale, chunks):
        for _ in range_(chunks):
            x = x_in.acquire(1)
            w = w_in.acquire(1) if with_weight[i] else None
            y = y_out.acquire(1)
            applies[i](*([x, w, scale, y, tile] if with_weight[i] else [x, scale, y, tile]))
            x_in.release(1)
            if with_weight[i]:
                w_in.release(1)
            y_out.release(1)

    def dispatch(sel, args, i=0):
        # The contract word selects pass 2: a compare per row, not per chunk.
        if i == len(contracts) - 1:
            pass2(i, *args)
            return
        with if_(sel == i) as taken:
            pass2(i, *args)
        with else_(taken):
            dispatch(sel, args, i + 1)

    def core_fn(x_in, w_in, y_out, rtp, barrier, partial, scale, *ks):
        # Once per invocation: the stream writes the RTP words, then sets the barrier; wait_for_value is an
        # acquire_equal that leaves the value in the lock, so the core releases it after reading the words
        # (../matmul/design.py), before it takes its first object.
        barrier.wait_for_value(bar["acquire"]["value"])
        sel = rtp[idx["contract"]]
        rows = rtp[idx["rows"]]
        chunks = rtp[idx["chunks"]]
        inv_cols = arith.bitcast(F32Type.get(), rtp[idx["inv_cols"]])  # the host's fp32 bits
        eps = arith.bitcast(F32Type.get(), rtp[idx["eps"]])
        rtp[idx["version"]]  # read with the others, as the simulator's core model reads a set of words
        barrier.release_with_value(bar["release"]["value"])
        for _ in range_(rows):
            for _ in range_(chunks):  # pass 1: the sum of squares
                x = x_in.acquire(1)
                sumsq(x, partial, tile)
                x_in.release(1)
            scale_k(partial, scale, inv_cols, eps)  # also clears partial for the next row
            dispatch(sel, (x_in, w_in, y_out, scale, chunks))  # pass 2: the scaled row

    # Per column: its FIFOs, one worker on its first core row, its RTP buffer and barrier. Every column of
    # the array gets a worker (the xclbin serves every shape); the sequence drives the used ones.
    workers, rtps, barriers = [], [], []
    handles = {op: [] for op in OPERANDS}  # the shim ends, per column
    for col in range(columns):
        mem_tile = Tile(col, mem_row)
        core_ends = {}
        for op in desc.paths:
            l2 = ObjectFifo(chunk_ty, name=f"{op.mem['name']}_{col}", depth=op.mem_depth)
            if op.inbound:
                parts = l2.cons().split([0], obj_types=[chunk_ty], names=[f"{op.core['name']}_{col}"],
                                        depths=[op.core_depth], tile=mem_tile)
                core_ends[op.operand] = parts[0].cons()
                handles[op.operand].append(l2.prod(tile=Tile(col, shim_row)))
            else:
                parts = l2.prod().join([0], obj_types=[chunk_ty], names=[f"{op.core['name']}_{col}"],
                                       depths=[op.core_depth], tile=mem_tile)
                core_ends[op.operand] = parts[0].prod()
                handles[op.operand].append(l2.cons(tile=Tile(col, shim_row)))
        rtp = Buffer(rtp_ty, name=f"rtp_{col}", initial_value=np.zeros(rtp_count, dtype=np.int32), use_write_rtp=True)
        partial = Buffer(lanes_ty, name=f"partial_{col}", initial_value=np.zeros(lanes, dtype=np.float32))
        scale = Buffer(lanes_ty, name=f"scale_{col}", initial_value=np.zeros(lanes, dtype=np.float32))
        barrier = WorkerRuntimeBarrier()
        rtps.append((col, rtp))
        barriers.append(barrier)
        workers.append(Worker(core_fn, [core_ends[o] for o in OPERANDS] + [rtp, barrier, partial, scale, sumsq,
                                                                              scale_k, *applies],
                              tile=Tile(col, core_row0), stack_size=p.stack_bytes))

    blocks = p.grid["blocks (first row, rows)"]
    words = p.rtp["per used column"]
    in_flight = raw["shim"]["steps_in_flight"]
    lengths = [p.tensors["x (arg 0)"], cols if not p.weight or p.one_weight_row else p.tensors["weight (arg 1)"],
               p.tensors["y (arg 2)"]]
    tensor_tys = [np.ndarray[(n,), f32_t] for n in lengths]
    xs, ws, ys = p.strides["x"], p.strides["weight"], p.strides["y"]
    as_i32 = lambda v: v - (1 << 32) if v > INT32_MAX else v

    def sequence(x_t, w_t, y_t, x_ends, w_ends, y_ends):
        # The host builds the real streams (src/runtime/norm-sequence.cpp) and only the xclbin of a build is
        # used; this sequence is the host's schedule (the same blocks, RTP words and DRAM traffic) in IRON's
        # words. IRON's fill has no BD chain, so it goes row by row, not in steps: per used column and row,
        # x filled twice (an outermost dimension of 2 with stride 0: a queue-push repeat), the weight row
        # filled (with the weight), y drained; one task group per row index over the columns, as many in
        # flight as the description's steps (IRON picks its own BD ids and shim channels).
        for (col, rtp), barrier in zip(rtps, barriers):
            if col >= len(blocks):
                continue  # a column without work is left at its barrier, as the host's stream leaves it
            for name, i in idx.items():
                rtp[i] = as_i32(words[col][name])
            barrier.set(bar["set_value"])  # after the words: the core reads them once the lock holds this
        pending = []
        for j in range(blocks[0][1]):
            group = TaskGroup()
            for col, (first, n) in enumerate(blocks):
                if j >= n:
                    continue
                r = first + j
                x_ends[col].fill(x_t, tap=TensorAccessPattern((lengths[0],), r * xs, [2, 1, 1, cols], [0, 0, 0, 1]),
                                 group=group)
                if p.weight:
                    w0 = 0 if p.one_weight_row else r * ws
                    w_ends[col].fill(w_t, tap=TensorAccessPattern((lengths[1],), w0, [1, 1, 1, cols], [0, 0, 0, 1]),
                                     group=group)
                y_ends[col].drain(y_t, tap=TensorAccessPattern((lengths[2],), r * ys, [1, 1, 1, cols], [0, 0, 0, 1]),
                                  wait=True, group=group)
            pending.append(group)
            if len(pending) >= in_flight:
                pending.pop(0).finish()
        for group in pending:
            group.finish()

    rt = Runtime(sequence, tensor_tys + [handles[o] for o in OPERANDS])
    device = iron_devices.NPU2() if columns == arr["max_columns"] else getattr(iron_devices, f"NPU2Col{columns}")()
    return Program(device, rt, workers=workers).resolve_program()


# ---------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------
def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="The norm design (RMS_NORM of fp32 rows, with the MUL by its weight) for XDNA2 (NPU2): prints "
                    "the data-movement plan, or emits MLIR with mlir-aie >= 1.4 (IRON).")
    ap.add_argument("--dataflow", default=DEFAULT_DATAFLOW,
                    help="the data-movement description (default aie/rms_norm/dataflow.json; another file only to "
                         "try a change to one)")
    ap.add_argument("--layout", help="layout of the description (default its first)")
    ap.add_argument("--family", help="family (default the description's first)")
    ap.add_argument("--tile", type=int,
                    help="values per chunk, i.e. which xclbin (default: the largest that divides --cols, as the "
                         "host picks)")
    ap.add_argument("--rows", type=int, default=64, help="rows of the invocation (default 64)")
    ap.add_argument("--cols", type=int, default=4096,
                    help="values per row, a multiple of 32 (default 4096; the host takes up to kRmsNormMaxCols, the "
                         "design up to what the shim's row stride allows)")
    ap.add_argument("--no-weight", action="store_true", help="RMS_NORM alone (contract rms_norm_f32)")
    ap.add_argument("--one-weight-row", action="store_true",
                    help="one weight row for every row (the same as --w-row-stride 0)")
    ap.add_argument("--columns", type=int, help="array columns, 1..max_columns (default max_columns)")
    ap.add_argument("--x-row-stride", type=int, help="values between rows of x (default --cols)")
    ap.add_argument("--w-row-stride", type=int,
                    help="values between weight rows, 0 for one row for every row (default --cols: one per row)")
    ap.add_argument("--y-row-stride", type=int, help="values between rows of y (default --cols)")
    ap.add_argument("--eps", type=float, default=1e-6, help="eps of the norm (default 1e-6)")
    ap.add_argument("--stack-bytes", type=int, help="core stack (default: the family's kernel_stack at the tile)")
    ap.add_argument("--kernel-data-bytes", type=int, help="core memory for the kernels' data (default from the description)")
    ap.add_argument("--kernel-object", help="object file of the core program (default xdna_<design>_<family>.o)")
    ap.add_argument("--print-plan", action="store_true", help="print the data-movement plan (no mlir-aie needed)")
    ap.add_argument("--format", choices=["text", "json"], default="text", help="plan format")
    ap.add_argument("--list-tiles", action="store_true", help="print the tiles the family has an xclbin for")
    ap.add_argument("--list-contracts", action="store_true",
                    help="print 'contract source' per contract of the family (the file defining its kernels)")
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
                syms = [SUMSQ[0], SCALE[0], CONTRACTS[c]["apply"][0]]
                found = [kernel_source(desc, family, s) for s in syms]
                srcs = sorted({f[0] for f in found if f})
                print(f"{c} {' '.join(srcs) if srcs and all(found) else '?'}")
            return 0
        w_stride = 0 if args.one_weight_row else args.w_row_stride
        plan = make_plan(desc, args.rows, args.cols, not args.no_weight, args.columns, args.x_row_stride, w_stride,
                         args.y_row_stride, args.eps, args.tile, family, args.stack_bytes, args.kernel_data_bytes)
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
