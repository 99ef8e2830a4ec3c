#!/usr/bin/env python3
"""The "rows" designs for XDNA2 (NPU2, AIE2P): elementwise ops of fp32 rows, the IRON program of every
description of that data movement.

    --dataflow aie/add/dataflow.json (default)  family "binary"
        y[r][i] = a[r][i] + b[r][i]             contract add_f32 (aie/add/kernels/add.cc)
        y[r][i] = a[r][i] * b[r][i]             contract mul_f32 (aie/add/kernels/mul.cc)
    --dataflow aie/glu/dataflow.json            family "swiglu"
        y[r][i] = silu(a[r][i]) * b[r][i]       contract swiglu_f32 (aie/glu/kernels/swiglu.cc)
    --dataflow aie/scale/dataflow.json          family "scale"
        y[r][i] = x[r][i] * s + b               contract scale_f32 (aie/scale/kernels/scale.cc), s and b
                                                fp32 runtime words (--scale, --bias)
    --dataflow aie/hadamard/dataflow.json       family "hadamard"
        y[r] = H_n x[r], n = the row length     contract fwht_f32 (aie/hadamard/kernels/fwht.cc), the
                                                orthonormal Walsh-Hadamard transform of each row, its
                                                scale 1 / sqrtf(n) an fp32 runtime word (--hadamard-scale)
    --dataflow aie/row_scale/dataflow.json      family "row_scale"
        y[r][i] = x[r][i] * w[r]                contract row_scale_f32 (aie/row_scale/kernels/row_scale.cc),
                                                w one value per row (--w-stride; 0: one for every row)

In add's and glu's descriptions b has one row per row, or one row for all. Every llama.cpp layer adds its
attention and FFN outputs to the residual stream with such an ADD, and gates its FFN with such a SwiGLU;
SCALE is the attention scale of the non-flash path and MoE weight normalisation; the Hadamard rotation
turns q, k, v and the attention output around a quantized KV cache; row_scale is MoE's expert outputs
times their routing weights (ggml's MUL by one value per row). On the NPU they run in the same
submission as the ops around them (README.md). The inputs are the description's operands the shim
streams in (its MM2S FIFOs), one or two, the output the one it drains (its S2MM FIFO). A binary kernel
takes (a, b, y, n) over one chunk of n values, a unary one (x, y, n, s, b, with_bias): after n it takes
the description's fp32 RTP words (core_program.rtp_float_words) in their order and, when b is one of
them, with_bias = (b != 0). A row transform (ROW_TRANSFORMS: hadamard's fwht_f32) takes
(x, y, rows, n, scale): rows = 1 before n, as its kernel transforms whole rows and a chunk is one row.
An input of one value per row (a FIFO whose unit is of fixed bytes, {"fixed_bytes": 4}: row_scale's w)
is no pointer of the kernel: the core reads the row's value from the object it holds and passes it after
n, as row_scale_f32(x, y, n, w) takes it. So one program serves every description; only the inputs, the
family, its kernels, the fp32 words, the core program's form and the numbers of the description differ.

What the program is, all of it read from the description (--dataflow), the one the host's stream
builder (src/runtime/rows-sequence.cpp) and the simulator's DMA interpreter read too; no number of the
data movement is written here:
  - Families ("binary": add_f32, mul_f32; "swiglu": swiglu_f32; "scale": scale_f32; "hadamard":
    fwht_f32; "row_scale": row_scale_f32), one xclbin per tile (values per chunk: the numeric keys of the
    family's kernel_stack: 64 to 512 for add and glu, 128 to 1024 for scale, 64 to 256 for hadamard,
    where the tile is the transform length n, 64 to 1024 for row_scale). The kernels are found from the family's kernel_stack "source", in kernels/ beside
    the description (a copy of a description elsewhere: aie/<its "design">/kernels); a contract the
    source does not define is looked up in the other .cc files there (mul_f32 in mul.cc). Every contract
    of the family is linked into every core; the RTP word "contract" (the contract's position in the
    family) selects the kernel.
  - Per column c (shim (c, shim_row), memory tile (c, memtile_row), core rows (c, first_core_row + k),
    k < array.core_rows): each input's shim MM2S channel streams it into a memory-tile FIFO whose
    objects are a group of core_rows chunks; the memory tile splits each object, chunk k to core row k
    on an MM2S channel of its own; each core writes one chunk of y per call, joined in the memory tile
    into group objects the shim's S2MM channel drains.
  - Why the inputs are split over 2 core rows (array.core_rows is 2 in add's and scale's descriptions;
    the other core rows of a column stay unused; glu's is 4, below): a split takes one memory-tile MM2S
    channel per core row it feeds, and the memory tile has 6 MM2S channels. Two inputs over 2 core rows:
    a 2 + b 2 + y 1 (to the shim) = 5 of 6, and 4 upward streams through 6 switch ports; over 4 core
    rows: 4 + 4 + 1 = 9 of 6 and 8 streams through 6 ports, so a plan of that description fails those
    two checks by name and is not emitted. One input (scale) over 2 core rows takes x 2 + y 1 = 3 of 6
    channels and 2 upward streams; it could feed 4 (4 + 1 = 5 of 6, 4 streams) but keeps add's 2 core
    rows, so that one program and the host's one rows stream serve it. Broadcasting b whole instead (one
    MM2S channel, fanned out by the switches) was rejected for add's kernels: every core would hold the
    whole group and must read chunk k of it, but an IRON kernel call passes the acquired object's base
    pointer and add's kernels take (a, b, y, n), no offset; the plan fails such a description at the
    kernels' signature check. glu's kernel takes the offset (swiglu_f32(a, b, y, n, b_at)), and glu's
    description broadcasts b over 4 core rows: a 4 + b 1 + y 1 = 6 of 6 MM2S channels, 5 upward streams.
  - One core row (hadamard's description: x 1 + y 1 = 2 of 6 MM2S channels, 1 upward stream): a
    transform needs its whole row, so a chunk is one row and a group one chunk. A row transform's plan
    fails by name with more core rows (a group of two chunks would be two rows back to back, which the
    host's strided views of q, k and v are not) and with a row length other than its tile (the host
    takes a row of n values at tile n only). The split and the join are then of one part at offset 0,
    the link IRON's own forward() builds (a split at [0]).
  - One value per row (row_scale's description: w, a unit of {"fixed_bytes": 4}, one value per object):
    the memory tile broadcasts each row's value to both core rows, one MM2S channel fanned out by the
    switches and one upward stream through every boundary, so x 2 + w 1 + y 1 = 4 of the 6 MM2S
    channels, 3 upward streams into the first core row; each core takes x and w on its 2 S2MM channels.
    Its objects are 4 bytes, depth 2 in the memory tile and in each core. A per-row input must be an
    input, broadcast (each core row needs the value for its chunks of the row), one value per object of
    4 bytes (the host's stream moves one 32-bit word per row of such a unit); a description otherwise is
    refused when read.
  - The work, as the host deals it: a row is cut into groups of core_rows chunks (a row transform's row
    is one group of one chunk); the columns take a grid of R row blocks x S segments of each row's
    groups, one column each, R = min(rows, columns),
    S = 1 if rows >= columns else max(1, min(groups per row, columns // rows)); the sizes of the blocks
    (and of the segments) differ by at most one, the first ones larger. Column c takes row block c // S
    and segment c % S; each of its cores takes one chunk per group of each of its rows (the RTP word
    "chunks" = the block's rows x the segment's groups; in the rows form, "rows" = the block's rows and
    "row_chunks" = the segment's groups), so nothing is padded or duplicated. So one long
    row (a decode token's) spreads over the array, and many rows go to the columns in blocks.
  - Per column and step, at most min(kRowsPerStep, limits.repeat_max + 1) rows of its block (the host's
    kRowsPerStep is 256, src/runtime/rows-sequence.h; a one-row b is read again per row by a
    queue-push repeat of at most repeat_max): one shim task per operand; as many steps in flight as the
    description's shim.steps_in_flight. A per-row input's task is the step's rows' values, one per row
    at its stride from the step's first row (r0 x stride, no segment offset: every column taking a
    segment of a row reads the row's value), the host's rows_bd(n, 1, stride, 1); with a stride of 0 the
    one value, pushed again per row.
  - The core program, per pass: wait on the RTP barrier (IRON WorkerRuntimeBarrier, acquire_equal),
    read every RTP word of the description's rtp_words, bitcast its fp32 words (rtp_float_words: scale's
    s and b, hadamard's scale) from i32 to f32 and, with a word b, compute with_bias = (b != 0.0) as a
    float compare (arith.cmpf une: -0.0 gives 0, a NaN 1, as the host's `b != 0.0f`), release the
    barrier; then, by the RTP words the description has (as the host's stream builder tells them apart):
    with "chunks", `chunks` times: acquire each input and y, one kernel call (a row transform's rows = 1,
    n = the tile, then the fp32 words and with_bias), release them; with "rows" and "row_chunks" (the
    rows form, row_scale's), `rows` times: acquire each per-row input and read its value (object[0]),
    then `row_chunks` times: acquire the chunked inputs and y, one kernel call (n = the tile, the row's
    values), release them; after the row's chunks, release the per-row inputs (the host's core program,
    RowScaleRole in src/ops/row_scale/sim/sim-row-scale.cpp). A per-row input needs the rows form: the
    plan fails by name without it, as it fails a description with neither form.
  - A runtime sequence for one invocation shape (--rows, --row-len, --row-stride, --one-b-row, --w-stride,
    --cols;
    --scale and --bias, or --hadamard-scale, for the fp32 words, written as their IEEE bits, struct '<f'
    read as '<I'; hadamard's scale defaults to 1 / sqrtf(tile) in fp32, as the host computes it). The
    host builds the real streams itself, so only the xclbin of a build is used; this sequence is the
    host's schedule (the same grid, steps, per-core chunk counts and DRAM traffic) in IRON's words (IRON
    picks its own BD ids and shim channels, and a one-row b repeats in a fill's iteration dimension,
    which IRON's fill has in place of a queue-push repeat count, as does one value for every row). --one-b-row
    is refused for a description of one input and for a per-row second input (--w-stride 0 is its one
    value for every row); --w-stride for a description without a per-row input.

`--print-plan` prints the plan and checks it against the AIE2P limits: core data memory (the core
FIFOs, the RTP words, the family's kernel stack), memory-tile memory, DMA channels of cores, memory
tiles and shims, stream-switch ports between the rows, what the kernels' signatures and loop-count
hints allow at this tile, the RTP words (counts within the int32 words' limit, fp32 words any 32-bit
pattern), the barrier protocol, the shim BDs and the transfer limits of the shape. `--list-tiles`,
`--list-contracts` and `--print-plan` need only a bare Python 3 (no numpy, no mlir-aie), so CI can check
the plan (tests/aie/check_design_add.sh). The IRON emission targets mlir-aie >= 1.4 (callback Runtime,
TaskGroup, handle.fill/drain, Buffer RTPs, WorkerRuntimeBarrier), as ../matmul/design.py does.

Status, plainly: the plan's numbers are checked against a recomputation from the descriptions and
against the numbers the host's own tests expect of a few shapes (tests/kernels/test_add_stream.cpp,
test_row_scale_stream.cpp); the
grid rule was compared with src/runtime/rows-sequence.cpp by reading it (the C++ was not run beside this
script). The IRON program (emit_mlir) has only been run on stand-ins of IRON's classes (tests/aie/check_design_add.sh,
with tests/aie/check_barrier.py's stand-ins and its own of mlir's arith and types), for
aie/add/dataflow.json, aie/glu/dataflow.json, aie/scale/dataflow.json, aie/hadamard/dataflow.json and
aie/row_scale/dataflow.json (its fills replayed through the traced core programs:
tests/aie/row_scale_iron_check.py).
It has never been run by the real mlir-aie python package, never compiled by aiecc, never linked with
Peano's objects of the kernels (which were never built with Peano here), and never run on an NPU. In
particular unverified: that IRON accepts the split / join offsets and names as written, a fill whose
iteration dimension has stride 0 (the one-row b), the NPU2Col<n> device names, a split and a join of one
part (hadamard's one core row); for scale and hadamard, the builders of mlir's python arith dialect as
called here inside a Worker's function (bitcast, constant, cmpf with CmpFPredicate.UNE, extui), a Kernel
declared with np.float32 scalar arguments taking their f32 values, and an RTP word with its sign bit set
written as a negative int32 into the i32 RTP buffer (its two's-complement bits being the fp32 bits); for
row_scale, a broadcast object FIFO of 4-byte objects (one f32: the memory tile's and the cores' DMAs at
that size, the forward to two consumers), reading a value from an acquired object by indexing it
(object[0], a memref load inside the Worker's function), an acquire (w) held across the loop of other
acquires and releases (x, y) and released after it, a fill of one word per row (sizes [1, n, 1, 1]) and
one of one word repeated in the iteration dimension (stride 0). At
tiles whose kernel loop would run fewer times than its AIE_LOOP_MIN_ITERATION_COUNT hint promises, the
compiled loop is not defined; the descriptions' tiles keep the promise (add, glu and row_scale: 2 trips
of 32 lanes from 64 values; scale: 4 trips from 128; fwht_f32 makes no such promise), and the plan checks it
from the kernels' sources.
"""


import argparse
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

# ---------------------------------------------------------------------------------------------------
# AIE2P hardware limits the plan is checked against. They are facts of the device, not of this design's
# data movement, so they live here (as in ../matmul/design.py), not in dataflow.json.
# ---------------------------------------------------------------------------------------------------
CORE_S2MM, CORE_MM2S = 2, 2        # DMA channels of a compute tile (AM027)
MEMTILE_S2MM, MEMTILE_MM2S = 6, 6  # AM027 "AIE-ML v2 Memory Tile DMA": six S2MM and six MM2S channels
SHIM_MM2S, SHIM_S2MM = 2, 2        # shim DMA: two each way
NPU2_CORE_ROWS = 4                 # npu2: rows 0 (shim), 1 (memory tiles), 2..5 (cores)
# Stream-switch ports between vertically adjacent tiles (mlir-aie AIE2TargetModel::getNum{Dest,Source}
# SwitchboxConnections, which npu2's BaseNPU2TargetModel inherits): upward a memory or core tile has 6
# North masters against the core tile above's 6 South slaves; downward a core tile has 4 South masters
# against 4 North slaves. Each memory-tile MM2S stream to a core row crosses every boundary below it.
UP_PORTS, DOWN_PORTS = 6, 4
SHIM_UP_PORTS, SHIM_DOWN_PORTS = 6, 4  # shim -> memory tile (6 North masters), memory tile -> shim (4 South masters)
# mlir-aie's push-queue verifier (AIEX): "Repeat count exceeds the [0:255] range". The description's
# limits.repeat_max is used; this is the device's bound on it, and what the host's parser
# (src/runtime/design-description.cpp) takes when a description does not give one.
SHIM_REPEAT_MAX = 255
SHIM_LENGTH_MAX = (1 << 32) - 1  # a shim BD's buffer_length field (32-bit words)
# The host's stream builder's constant (src/runtime/rows-sequence.h kRowsPerStep), not a number of the
# description: a column's rows per step, at most (and at most limits.repeat_max + 1).
# tests/aie/check_design_add.sh checks that the two agree.
HOST_ROWS_PER_STEP = 256
# An RTP word of a count (contract, chunks, version) is an int32 the core compares and loops on; an fp32
# word (core_program.rtp_float_words) is the bits of a float, any 32-bit pattern.
WORD_BITS = 32

# The fp32 RTP words this program knows: the option giving each, and its value when not given, of the
# tile (s = 1, b = 0: SCALE's identity; scale = 1 / sqrtf(n): the Hadamard transform's, n the tile). A
# description naming another fp32 word is refused, not run with a guess.
FLOAT_WORDS = {"s": ("--scale", lambda tile: 1.0), "b": ("--bias", lambda tile: 0.0),
               "scale": ("--hadamard-scale", lambda tile: inverse_sqrtf(tile))}
# The fp32 word whose being non-zero the core program passes as the kernel's last argument, with_bias:
# with b = 0 the kernel issues no add, as the CPU then only scales (ggml-cpu ggml_compute_forward_scale_f32)
# and as the host's engine decides it (src/ops/scale/sim/sim-scale.cpp: b != 0.0f).
BIAS_WORD = "b"
# The RTP words the stream computes: contract, version and the core's work, which the host's stream builder
# (src/runtime/rows-sequence.cpp) tells apart by the words a description has: "chunks", its kernel calls;
# or, without it, "rows" and "row_chunks", its rows and the chunks of each row's segment, for a core program
# that holds a value per row (a per-row input, row_scale's w) for all of its row's chunks. None of them may
# be an fp32 word.
CHUNK_WORDS = ("chunks",)
ROW_WORDS = ("rows", "row_chunks")
STREAM_WORDS = ("contract",) + CHUNK_WORDS + ROW_WORDS + ("version",)
# The one per-row unit this program moves: one fp32 value (the host's stream moves one 32-bit word per row
# of a fixed-bytes unit, rows_bd(n, 1, stride, 1), whatever the unit's bytes).
PER_ROW_BYTES = 4
# Families whose kernel transforms whole rows: (x, y, rows, n, <fp32 words>), the core passing rows = 1
# before n, so a chunk is one row and the tile its length (fwht_f32: aie/hadamard/kernels/fwht.cc). Their
# plans take one core row (a group is one chunk) and a row length equal to the tile: the host cuts no
# transform, and takes a row of n values at tile n only (src/ops/hadamard/runtime/hadamard-invocation.cpp).
ROW_TRANSFORMS = ("hadamard",)
# The row length of the sample invocation when --row-len is not given (a row transform's: the tile).
SAMPLE_ROW_LEN = 4096


class PlanError(Exception):
    pass


def f32_bits(v, what="value"):
    """The IEEE bits of v rounded to fp32 (as the host holds an op's float parameter), an unsigned 32-bit
    word; a value past fp32's range is refused, not turned into an infinity."""
    try:
        return struct.unpack("<I", struct.pack("<f", v))[0]
    except OverflowError:
        raise PlanError(f"{what} {v!r} is past fp32's range")


def f32(v):
    """v rounded to fp32, as a Python float."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


def inverse_sqrtf(n):
    """1.0f / sqrtf(n) in fp32 arithmetic, as the host computes the Hadamard transform's scale (ggml-cpu
    ops.cpp ggml_compute_forward_fwht_f32): the square root and the quotient each rounded to fp32. A
    double's correctly rounded root or quotient of fp32 operands, rounded again to fp32, is fp32's own
    correctly rounded result (53 >= 2 x 24 + 2 bits), so no numpy is needed."""
    return f32(1.0 / f32(math.sqrt(n)))


def as_i32(bits):
    """An unsigned 32-bit word as the int32 the RTP buffer (i32 words) holds with the same bits."""
    return bits - (1 << WORD_BITS) if bits >= 1 << (WORD_BITS - 1) else bits


# ---------------------------------------------------------------------------------------------------
# The description (dataflow.json), read once and checked for what this program can build.
# ---------------------------------------------------------------------------------------------------
@dataclass
class OperandPath:
    """One operand's two FIFOs: shim <-> memory tile, memory tile <-> cores."""
    operand: str
    arg: int
    inbound: bool          # a, b or x: shim -> memory tile -> cores; y: cores -> memory tile -> shim
    link: str              # "split" or "broadcast" (inputs), "join" (the output)
    mem: dict              # the memory-tile FIFO (a_l3l2, b_l3l2, x_l3l2, y_l2l3)
    core: dict             # the core FIFO (a_l2l1, b_l2l1, x_l2l1, y_l1l2)
    shim_channel: int
    mem_chunks: int        # chunks per memory-tile object (the group)
    core_chunks: int       # chunks per core object: 1 (split, join) or the group (broadcast)
    mem_depth: int
    core_depth: int
    # One value per row (a unit of fixed bytes: row_scale's w), not chunks of the row: mem_chunks and
    # core_chunks then count that unit (one each), of unit_bytes bytes.
    per_row: bool = False
    unit_bytes: int = 0


@dataclass
class Description:
    path: str
    raw: dict
    design: str            # the description's "design" (add, glu, scale): where its kernels are
    layout: str
    paths: list            # OperandPath per operand, in the order of the kernel's arguments
    parts: int             # P: chunks per group = array.core_rows, the core rows per column the program uses
    float_words: list = field(default_factory=list)  # core_program.rtp_float_words, in the kernel's order

    @property
    def inputs(self):
        return [p for p in self.paths if p.inbound]

    @property
    def outputs(self):
        return [p for p in self.paths if not p.inbound]

    @property
    def chunked(self):
        """The operands moved in chunks of the rows (every one but a per-row input), in argument order."""
        return [p for p in self.paths if not p.per_row]

    @property
    def per_row(self):
        """The inputs of one value per row (row_scale's w), in argument order."""
        return [p for p in self.paths if p.per_row]

    @property
    def work_words(self):
        """The core's work words, as the host's builder picks them: ("chunks",) when the description has that
        word, else ("rows", "row_chunks") when it has both; None when it has neither."""
        words = self.raw["core_program"]["rtp_words"]
        if all(w in words for w in CHUNK_WORDS):
            return CHUNK_WORDS
        if all(w in words for w in ROW_WORDS):
            return ROW_WORDS
        return None


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
    except (KeyError, TypeError, AttributeError) as e:
        # A description of another movement (a matmul's) lacks what a rows layout has.
        raise PlanError(f"{path}: not a rows description (the elementwise movement this program builds): "
                        f"{type(e).__name__} {e}")


def _load_description(path, layout):
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError) as e:
        raise PlanError(f"{path}: {e}")
    if raw.get("format") != "xdna-dataflow" or not isinstance(raw.get("design"), str):
        raise PlanError(f"{path}: not a dataflow description (format \"xdna-dataflow\" with a \"design\")")
    try:
        layouts = {spec["name"]: spec for spec in raw["layouts"]}
        P = raw["array"]["core_rows"]
        operands = sorted(raw["operands"], key=lambda o: o["arg"])
    except (KeyError, TypeError) as e:
        raise PlanError(f"{path}: no {e} (layouts, array.core_rows, operands)")
    name = layout or raw["layouts"][0]["name"]
    if name not in layouts:
        raise PlanError(f"{path}: no layout {name!r} ({', '.join(layouts)})")
    fifos = list(layouts[name]["fifos"])
    where = f"{path}: layout {name}"
    if not isinstance(P, int) or P < 1:
        raise PlanError(f"{where}: array.core_rows {P!r}")
    paths = []
    for op in operands:
        shim = [f for f in fifos if f.get("operand") == op["name"]]
        if len(shim) != 1 or "shim_channel" not in shim[0]:
            raise PlanError(f"{where}: operand {op['name']} needs exactly one FIFO with a shim channel")
        mem = shim[0]
        inbound = mem["from"] == "shim"
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
        # A split hands each core its own chunk, a broadcast the whole group (the core takes its chunk of
        # it), a join collects one chunk per core; a forward of single chunks would give every core the
        # same chunk, which is not this computation.
        if link not in (("split", "broadcast") if inbound else ("join",)):
            raise PlanError(f"{where}: {core['name']} is linked by {link!r}; this program takes an input by a "
                            "split or a broadcast, and gives its output by a join")
        units = {mem["object"]["unit"], core["object"]["unit"]}
        fixed = _fixed_unit(raw, units, f"{where}: {mem['name']}, {core['name']}")
        if fixed is not None:
            # One value per row, as the host's stream moves it (moves_a_value_per_row): an input, one unit per
            # object, to every core row of the column (each core scales its own chunks of the row by it).
            if not inbound:
                raise PlanError(f"{where}: {mem['name']} moves a unit of fixed bytes (one value per row) to the shim; "
                                "only an input can be one value per row")
            if link != "broadcast":
                raise PlanError(f"{where}: {core['name']} is linked by {link!r}; an input of one value per row "
                                f"({op['name']}) goes whole to each of the {P} core rows, which each need it for their "
                                "chunks of the row: a broadcast")
            if fixed != PER_ROW_BYTES:
                raise PlanError(f"{where}: {mem['name']}: a unit of {fixed} fixed bytes; the host's stream moves one "
                                f"32-bit word per row of such a unit, so only {PER_ROW_BYTES} (one fp32 value) is moved whole")
            if mem["object"]["count"] != 1 or core["object"]["count"] != 1:
                raise PlanError(f"{where}: {mem['name']} objects of {mem['object']['count']}, {core['name']} of "
                                f"{core['object']['count']} values: one value per row is one value per object")
        elif units != {"chunk"}:
            raise PlanError(f"{where}: {mem['name']}, {core['name']}: objects counted in {sorted(units)}, "
                            "the program counts chunks, or one unit of fixed bytes per row")
        paths.append(OperandPath(op["name"], op["arg"], inbound, link, mem, core, mem["shim_channel"]["channel"],
                                 mem["object"]["count"], core["object"]["count"],
                                 _depth(raw, mem["depth"], f"{where}: {mem['name']}"),
                                 _depth(raw, core["depth"], f"{where}: {core['name']}"),
                                 fixed is not None, fixed or 0))
    # The inputs are the operands the shim streams in (MM2S), the output the one it drains (S2MM); the
    # kernels take them in that order, as the host's stream patches them.
    if [p.inbound for p in paths] not in ([True, False], [True, True, False]):
        raise PlanError(f"{where}: operands {[(p.operand, 'in' if p.inbound else 'out') for p in paths]}: this "
                        "program takes one or two inputs (shim MM2S), then one output (shim S2MM)")
    # The group is array.core_rows chunks, as the host's stream builder cuts the rows (its parser wants a
    # split's or join's memory-tile object to be one core object per core row, a broadcast's the core
    # object itself); every core takes one chunk of each operand per kernel call.
    for p in (p for p in paths if not p.per_row):
        want_core = P if p.link == "broadcast" else 1
        if p.mem_chunks != P or p.core_chunks != want_core:
            raise PlanError(f"{where}: {p.mem['name']} objects of {p.mem_chunks} chunks, {p.core['name']} of "
                            f"{p.core_chunks}: a {p.link} over array.core_rows = {P} core rows with one chunk per "
                            f"core and call needs {P} and {want_core}")
    return Description(path, raw, raw["design"], name, paths, P, _float_words(raw, path))


def _fixed_unit(raw, units, where):
    """The bytes of the FIFOs' unit when it is one of fixed bytes ({"fixed_bytes": B}: B bytes at any tile,
    the host's form of one value per row), None when it is not; both FIFOs of an operand in one unit."""
    table = raw.get("units", {})
    fixed = [u for u in units if isinstance(table.get(u), dict) and "fixed_bytes" in table[u]]
    if not fixed:
        return None
    if len(units) != 1:
        raise PlanError(f"{where}: objects counted in {sorted(units)}: a unit of fixed bytes on one side only")
    spec = table[fixed[0]]
    if set(spec) != {"fixed_bytes"} or not isinstance(spec["fixed_bytes"], int) or spec["fixed_bytes"] < 1:
        raise PlanError(f"{where}: unit {fixed[0]} {spec}: a fixed-bytes unit is {{\"fixed_bytes\": B}}, B > 0, alone")
    return spec["fixed_bytes"]


def _float_words(raw, path):
    """core_program.rtp_float_words: words of rtp_words, none of the counts the stream computes, each once."""
    prog = raw["core_program"]
    floats = prog.get("rtp_float_words", [])
    words = prog["rtp_words"]
    if not isinstance(floats, list):
        raise PlanError(f"{path}: core_program.rtp_float_words is not a list of RTP word names")
    for w in floats:
        if w not in words or w in STREAM_WORDS or floats.count(w) != 1:
            raise PlanError(f"{path}: core_program.rtp_float_words: {w!r} is not one parameter word of rtp_words "
                            f"({', '.join(k for k in words if k not in STREAM_WORDS) or 'none'})")
    return list(floats)


def families_of(desc):
    return {k: v for k, v in desc.raw["families"].items() if k != "about"}


def family_tiles(desc, family):
    """The tiles a family has an xclbin for: the numeric keys of its kernel_stack."""
    k = desc.raw["core_budget"]["kernel_stack"][family]
    return sorted(int(t) for t in k if t.isdigit())


def default_tile(desc, family, row_len):
    """The runtime's choice (rows_tile_for): the largest tile whose group of core_rows chunks divides the row;
    for a row transform the row length itself, the only tile the host takes it at."""
    tiles = family_tiles(desc, family)
    if family in ROW_TRANSFORMS:
        return row_len if row_len in tiles else None
    fits = [t for t in tiles if row_len > 0 and row_len % (desc.parts * t) == 0]
    return fits[-1] if fits else None


# ---------------------------------------------------------------------------------------------------
# What the kernels take and promise (their sources, not the data movement).
# ---------------------------------------------------------------------------------------------------
_HINT_RE = re.compile(r"AIE_LOOP_MIN_ITERATION_COUNT\((\d+)\)")
_LANES_REF_RE = re.compile(r"xdna_aie::(k\w*Lanes)\b")
_INCLUDE_RE = re.compile(r'#include\s+"(xdna_aie/[\w.-]+)"')


def family_source(desc, family):
    """The family's kernel file (its kernel_stack "source")."""
    return desc.raw["core_budget"]["kernel_stack"][family].get("source")


def kernels_dir(desc, family):
    """The directory holding the family's source: kernels/ beside the description, else (a copy of a
    description elsewhere) aie/<design>/kernels; None when neither has it."""
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
    names = [source] + sorted(n for n in os.listdir(d) if n.endswith(".cc") and n != source)
    for n in names:
        with open(os.path.join(d, n), encoding="utf-8") as f:
            text = f.read()
        m = re.search(r"\bvoid\s+" + re.escape(symbol) + r"\s*\(([^)]*)\)\s*\{", text)
        if m:
            params = [x.strip() for x in m.group(1).split(",") if x.strip()]
            return n, params, text[m.end():], text
    return None


def kernel_lanes(text):
    """(lanes, where) of a kernel's vectors: the xdna_aie::k...Lanes constant it names, from the
    xdna_aie header it includes that defines it; None when not found."""
    m = _LANES_REF_RE.search(text)
    if m is None:
        return None
    name = m.group(1)
    for inc in _INCLUDE_RE.findall(text):
        try:
            with open(os.path.join(INCLUDE_DIR, inc), encoding="utf-8") as f:
                v = re.search(r"constexpr\s+int\s+" + re.escape(name) + r"\s*=\s*(\d+)\s*;", f.read())
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


def kernel_params(desc, family):
    """What the core program passes each kernel of the family, as (what, kind): its chunked operands'
    objects, a row transform's rows (1), n, per broadcast input of chunks the offset (in values) of the
    core's chunk in that input's object, per input of one value per row that value (read by the core from
    the object it holds for the row: row_scale_f32(x, y, n, w)), the description's fp32 RTP words in their
    order, then with_bias when b is one of them."""
    params = [(f"{p.operand}: {p.core_chunks} chunk{'s' if p.core_chunks > 1 else ''}", "pointer") for p in desc.chunked]
    if family in ROW_TRANSFORMS:
        params.append(("rows: 1, the chunk's one row", "int32"))
    params.append(("n", "int32"))
    params += [(f"offset of the core's chunk in {p.operand}'s object", "int32")
               for p in desc.chunked if p.inbound and p.link == "broadcast"]
    params += [(f"{p.operand}: the row's value, read from the object held for the row", "float") for p in desc.per_row]
    params += [(f"{w}: fp32 RTP word", "float") for w in desc.float_words]
    if BIAS_WORD in desc.float_words:
        params.append((f"with_bias: {BIAS_WORD} != 0", "int32"))
    return params


def kernel_checks(desc, family, contracts, tile):
    """Per kernel of the xclbin: it takes what the core program passes, its vectors tile the chunk, and
    its loop, which runs n / lanes times, keeps its AIE_LOOP_MIN_ITERATION_COUNT(h) promise at n = tile.
    The hint tells the compiler (clang loop min_iteration_count under Peano) the loop runs at least h
    times, so the pipelined loop may have no path for fewer; the host build defines the hint away, so
    the simulator cannot show it."""
    checks = []
    want = kernel_params(desc, family)
    want_kinds = [k for _, k in want]
    for symbol in contracts:
        found = kernel_source(desc, family, symbol)
        if found is None:
            checks.append((f"kernel {symbol}", False,
                           f"no .cc file of the directory of family {family}'s source {family_source(desc, family)!r} "
                           f"(kernels/ beside {desc.path}, or aie/{desc.design}/kernels) defines {symbol}"))
            continue
        source, params, body, text = found
        ok = [_param_kind(x) for x in params] == want_kinds
        detail = f"{symbol}({', '.join(params)}); the core program passes ({'; '.join(w for w, _ in want)})"
        if not ok and len(want) > len(params) and any(p.link == "broadcast" for p in desc.chunked):
            # A broadcast input's object holds every core row's chunk. An IRON kernel call passes an acquired
            # object whole (its base pointer), and the core function has no pointer arithmetic of its own;
            # a memref subview carries its offset in a descriptor that a bare-pointer kernel call does not
            # pass (unverified with mlir-aie), so the kernel has to be told where its chunk starts.
            detail += (": core row k reads chunk k of a broadcast object, which a kernel taking (a, b, y, n) "
                       "cannot be pointed at from IRON; the kernel must take the chunk's offset")
        checks.append((f"kernel {symbol} ({source}) takes what the core program passes", ok, detail))
        lanes = kernel_lanes(text)
        if lanes is None:
            checks.append((f"kernel {symbol} ({source}) lanes", False,
                           f"{source} names no xdna_aie::k...Lanes constant of a header it includes"))
            continue
        lanes, lanes_at = lanes
        checks.append((f"kernel {symbol} ({source}) tile in whole vectors", tile % lanes == 0,
                       f"tile {tile}, {lanes} lanes ({lanes_at})"))
        hint = _HINT_RE.search(body)
        if hint is None:
            continue
        h, trips = int(hint.group(1)), tile // lanes
        checks.append((f"kernel {symbol} ({source}) loop keeps its min_iteration_count at n = tile", trips >= h,
                       f"{tile} / {lanes} lanes = {trips} trip(s), AIE_LOOP_MIN_ITERATION_COUNT({h})" +
                       ("" if trips >= h else f": not defined on the NPU below tile {h * lanes}; lower the hint to "
                                              f"{trips} or drop the tiles below {h * lanes}")))
    return checks


# ---------------------------------------------------------------------------------------------------
# The plan: buffers, channels, ports, and the shim transfers of one invocation shape.
# ---------------------------------------------------------------------------------------------------
@dataclass
class Fifo:
    name: str
    path: str
    obj_bytes: int
    depth: int
    home: str          # where its buffers are: "memtile" or "core"
    channels: str
    note: str = ""

    @property
    def bytes(self):
        return self.obj_bytes * self.depth


@dataclass
class Transfer:
    what: str
    sizes: list        # [iteration, d2, d1, d0], 32-bit words (= fp32 values)
    strides: list
    repeat: int = 0    # queue-push repeat count (the task runs repeat + 1 times)
    # One contiguous run (one row, or whole rows back to back): the host's BD then has no wraps, its
    # buffer_length alone describes it (src/control/shim-bd.cpp shim_bd_from_pattern), which lifts the
    # wraps' 1023 words, as mlir-aie's verifier lifts them for a linear transfer.
    linear: bool = False
    # One value per row (w): d0 and d1 one word each (the host's rows_bd(n, 1, stride, 1)), no chunks.
    per_row: bool = False


@dataclass
class Plan:
    dataflow: str
    design: str
    layout: str
    family: str
    contract: str
    contract_index: int
    tile: int
    cols: int
    parts: int
    chunk_bytes: int
    rows: int
    row_len: int
    row_stride: int
    one_b_row: bool
    stack_bytes: int
    kernel_data_bytes: int
    # Values between the rows' values of an input of one value per row (w), 0 for one value for every row;
    # None for a description without such an input.
    w_stride: int = None
    inputs: list = field(default_factory=list)  # the operands the shim streams in (a, b; x)
    per_row: list = field(default_factory=list)  # the inputs of one value per row (w)
    float_words: dict = field(default_factory=dict)  # fp32 RTP word -> {"value", "bits"} of this invocation
    links: dict = field(default_factory=dict)   # operand -> split / broadcast / join
    kernels: dict = field(default_factory=dict)  # contract -> its source file
    fifos: list = field(default_factory=list)
    core_bytes: dict = field(default_factory=dict)
    memtile_bytes: dict = field(default_factory=dict)
    channels: dict = field(default_factory=dict)
    streams: dict = field(default_factory=dict)
    transfers: list = field(default_factory=list)
    schedule: dict = field(default_factory=dict)
    tensors: dict = field(default_factory=dict)
    traffic: dict = field(default_factory=dict)
    core_program: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)


def near_equal_parts(total, parts):
    """(first, count) of each of `parts` parts of `total` that differ by at most one, the first
    total % parts one larger: the host's first_of / count_of (src/runtime/rows-sequence.cpp)."""
    q, m = divmod(total, parts)
    return [(q * i + min(i, m), q + (1 if i < m else 0)) for i in range(parts)]


def rows_grid(rows, groups, columns):
    """The host's grid (build_rows_sequence): R row blocks x S segments of each row's groups, one column
    each; column c takes row block c // S and segment c % S. Returns R, S and per used column
    ((first row, rows), (first group, groups))."""
    if rows <= 0 or groups <= 0 or columns <= 0:
        return 0, 0, []
    R = min(rows, columns)
    S = 1 if rows >= columns else max(1, min(groups, columns // rows))
    blocks, segments = near_equal_parts(rows, R), near_equal_parts(groups, S)
    return R, S, [(blocks[c // S], segments[c % S]) for c in range(R * S)]


def float_word_values(desc, tile, given=None):
    """{word: (value, bits)} of the description's fp32 RTP words: the value given (by FLOAT_WORDS' option),
    else its default at the tile. A value given for a word the description does not have is refused, as is
    a description's fp32 word this program has no option for."""
    given = {k: v for k, v in (given or {}).items() if v is not None}
    for w in given:
        if w not in desc.float_words:
            opt = FLOAT_WORDS[w][0] if w in FLOAT_WORDS else w
            raise PlanError(f"{opt}: {desc.path} has no fp32 RTP word {w!r} (its fp32 words: "
                            f"{', '.join(desc.float_words) or 'none'})")
    out = {}
    for w in desc.float_words:
        if w not in FLOAT_WORDS:
            raise PlanError(f"{desc.path}: fp32 RTP word {w!r}: this program knows {', '.join(FLOAT_WORDS)} "
                            f"({', '.join(o for o, _ in FLOAT_WORDS.values())})")
        opt, default = FLOAT_WORDS[w]
        v = float(given[w]) if w in given else default(tile)
        out[w] = (v, f32_bits(v, opt))
    return out


def make_plan(desc, family=None, tile=None, cols=None, contract=None, rows=64, row_len=None, row_stride=None,
              one_b_row=False, stack_bytes=None, kernel_data_bytes=None, floats=None, w_stride=None):
    """The plan of one invocation shape; floats: {fp32 RTP word: value} (s, b; scale), the others at their
    default; w_stride: values between the rows' values of a per-row input (default 1; 0: one value for every
    row). Without a row length, the sample's: SAMPLE_ROW_LEN in whole groups of the tile, a row
    transform's the tile (its largest without a tile)."""
    raw = desc.raw
    families = families_of(desc)
    family = family or next(iter(families))
    if family not in families:
        raise PlanError(f"unknown family {family!r} ({', '.join(families)})")
    contracts = families[family]
    contract = contract or contracts[0]
    if contract not in contracts:
        raise PlanError(f"contract {contract!r} is not in family {family} ({', '.join(contracts)})")
    if raw["device"] != "npu2":
        raise PlanError(f"{desc.path}: device {raw['device']!r}: this design targets npu2 (AIE2P) only")
    if one_b_row and len(desc.inputs) < 2:
        raise PlanError(f"--one-b-row: {desc.path} has one input ({desc.inputs[0].operand}); a one-row b needs "
                        "a second input to give as one row for all")
    if one_b_row and desc.inputs[1].per_row:
        raise PlanError(f"--one-b-row: {desc.path}'s second input ({desc.inputs[1].operand}) is one value per row; "
                        "--w-stride 0 gives one value for every row")
    if desc.per_row:
        w_stride = 1 if w_stride is None else w_stride
        if w_stride < 0:
            raise PlanError(f"--w-stride {w_stride}: values between the rows' values, or 0 for one value for every row")
    elif w_stride is not None:
        raise PlanError(f"--w-stride: {desc.path} has no input of one value per row")
    max_cols = raw["array"]["max_columns"]
    cols = max_cols if cols is None else cols
    if not 1 <= cols <= max_cols:
        raise PlanError(f"--cols {cols}: npu2 has 1..{max_cols} columns")
    P = desc.parts
    tiles = family_tiles(desc, family)
    transform = family in ROW_TRANSFORMS
    if tile is None:
        length = SAMPLE_ROW_LEN if row_len is None else row_len
        if transform and row_len is None:
            tile = tiles[-1] if tiles else None
        else:
            tile = default_tile(desc, family, length)
        if tile is None:
            raise PlanError(f"row length {length}: " +
                            (f"a {family} row is one transform of a tile, and no tile of {tiles} is its length"
                             if transform else f"no tile of {tiles} has a group of {P} chunks dividing it"))
    if tile not in tiles:
        raise PlanError(f"family {family} has no xclbin for tile {tile} (it has {', '.join(map(str, tiles))})")
    if row_len is None:
        row_len = tile if transform else -(-SAMPLE_ROW_LEN // (P * tile)) * P * tile
    float_values = float_word_values(desc, tile, floats)
    budget = raw["core_budget"]
    if stack_bytes is None:
        stack_bytes = budget["kernel_stack"][family][str(tile)]
    if kernel_data_bytes is None:
        kernel_data_bytes = budget["kernel_data_bytes"]
    row_stride = row_len if row_stride is None else row_stride
    chunk = raw["units"]["chunk"] * tile
    p = Plan(dataflow=desc.path, design=desc.design, layout=desc.layout, family=family, contract=contract,
             contract_index=contracts.index(contract), tile=tile, cols=cols, parts=P, chunk_bytes=chunk,
             rows=rows, row_len=row_len, row_stride=row_stride, one_b_row=one_b_row, stack_bytes=stack_bytes,
             kernel_data_bytes=kernel_data_bytes, w_stride=w_stride, inputs=[op.operand for op in desc.inputs],
             per_row=[op.operand for op in desc.per_row],
             float_words={w: {"value": v, "bits": b} for w, (v, b) in float_values.items()},
             links={op.operand: op.link for op in desc.paths})
    for c in contracts:
        found = kernel_source(desc, family, c)
        p.kernels[c] = found[0] if found else None
    check = lambda what, ok, detail: p.checks.append((what, bool(ok), detail))
    arr = raw["array"]
    shim_at, mem_at, core_at = f"(c,{arr['shim_row']})", f"(c,{arr['memtile_row']})", arr["first_core_row"]
    check("array: the core rows the program uses", 1 <= P <= NPU2_CORE_ROWS and core_at > arr["memtile_row"],
          f"core rows {core_at}..{core_at + P - 1} (array.core_rows {P}) of npu2's {NPU2_CORE_ROWS} above the memory tile")
    if transform:
        # A group of P chunks is P rows back to back in the memory tile's object; the host's rows are
        # views (q, k and v of a fused QKV row) a whole row apart.
        check("array: a row transform's group is one chunk (array.core_rows 1)", P == 1,
              f"array.core_rows {P}: {', '.join(contracts)} transforms the whole row of its chunk" +
              ("" if P == 1 else f", so a group of {P} chunks would be {P} rows back to back, which the host's "
                                 "strided rows are not; dataflow.json must have one core row"))

    # FIFOs, from the description.
    # The bytes of a FIFO's objects: chunks of the tile, or units of fixed bytes (one value per row).
    obj_bytes = lambda op, count: count * (op.unit_bytes if op.per_row else chunk)
    for op in desc.paths:
        m, c = op.mem, op.core
        mem_fifo = Fifo(f"{m['name']}_<c>", f"shim{shim_at} -> memtile{mem_at}" if op.inbound else
                        f"memtile{mem_at} -> shim{shim_at}", obj_bytes(op, op.mem_chunks), op.mem_depth, "memtile",
                        f"shim MM2S {op.shim_channel}, memtile S2MM 1" if op.inbound else
                        f"memtile MM2S 1, shim S2MM {op.shim_channel}", m.get("about", ""))
        if op.link == "split":
            core_fifo = Fifo(f"{c['name']}_<c>_<k>", f"memtile{mem_at} -> core(c,{core_at}+k), split",
                             chunk, op.core_depth, "core", f"memtile MM2S 1 per core row ({P}), core S2MM 1",
                             c.get("about", ""))
        elif op.link == "broadcast":
            core_fifo = Fifo(f"{c['name']}_<c>", f"memtile{mem_at} -> the {P} cores of column c, broadcast" +
                             (" (one value per row)" if op.per_row else ""),
                             obj_bytes(op, op.core_chunks), op.core_depth, "core",
                             "memtile MM2S 1 (one stream, fanned out by the switches), core S2MM 1", c.get("about", ""))
        else:
            core_fifo = Fifo(f"{c['name']}_<c>_<k>", f"core(c,{core_at}+k) -> memtile{mem_at}, join",
                             chunk, op.core_depth, "core", f"core MM2S 1, memtile S2MM 1 per core row ({P})",
                             c.get("about", ""))
        p.fifos += [mem_fifo, core_fifo] if op.inbound else [core_fifo, mem_fifo]

    # Core data memory: the core FIFOs' buffers, the RTP words, the kernels' stack, their static data.
    prog = raw["core_program"]
    rtp_words = prog["rtp_word_count"]
    what = lambda op, n: (f"{n} value{'s' if n > 1 else ''} of {op.unit_bytes} B" if op.per_row else
                          f"{n} chunk{'s' if n > 1 else ''}")
    for f, op in zip([f for f in p.fifos if f.home == "core"], desc.paths):
        p.core_bytes[f"{f.name} ({f.depth} x {what(op, op.core_chunks)})"] = f.bytes
    p.core_bytes["RTP words"] = 4 * rtp_words
    source = family_source(desc, family) or "?"
    p.core_bytes[f"stack ({source}'s kernel_stack at tile {tile})"] = stack_bytes
    p.core_bytes["kernel static data"] = kernel_data_bytes
    core_total = sum(p.core_bytes.values())
    p.core_bytes["total"] = core_total
    core_limit = budget["core_data_bytes"]
    check("core data memory", core_total <= core_limit,
          f"{core_total} of {core_limit} bytes ({core_limit - core_total} free)")
    rtp_at = prog["rtp_core_address"]
    check("RTP words inside core data memory", rtp_at % 4 == 0 and rtp_at + 4 * rtp_words <= core_limit,
          f"[{rtp_at}, {rtp_at + 4 * rtp_words}) of {core_limit} (the IRON build does not pin the buffer there yet)")

    for f, op in zip([f for f in p.fifos if f.home == "memtile"], desc.paths):
        p.memtile_bytes[f"{f.name} ({f.depth} x {what(op, op.mem_chunks)})"] = f.bytes
    mem_total = sum(p.memtile_bytes.values())
    p.memtile_bytes["total"] = mem_total
    check("memory tile", mem_total <= budget["memtile_bytes"], f"{mem_total} of {budget['memtile_bytes']} bytes")

    # DMA channels. A split takes one memory-tile MM2S channel per core row it feeds (the memory tile sends
    # each part on its own channel), a broadcast one (the switches fan the stream out), a join one S2MM
    # channel per core row it collects.
    ins, outs = desc.inputs, desc.outputs
    mm2s_of = lambda op: P if op.link == "split" else 1
    names = lambda ops: ", ".join(op.operand for op in ops)
    p.channels = {
        "core (each)": {"S2MM": (len(ins), CORE_S2MM, names(ins)), "MM2S": (len(outs), CORE_MM2S, names(outs))},
        "memory tile (each column)": {
            "S2MM": (len(ins) + P * len(outs), MEMTILE_S2MM,
                     f"{names(ins)} from the shim; {P} x {names(outs)} from the core rows (join)"),
            "MM2S": (sum(mm2s_of(op) for op in ins) + len(outs), MEMTILE_MM2S,
                     " + ".join(f"{mm2s_of(op)} x {op.operand} ({op.link})" for op in ins) +
                     f" + {len(outs)} x {names(outs)} to the shim"),
        },
        "shim (each column)": {"MM2S": (len(ins), SHIM_MM2S, names(ins)), "S2MM": (len(outs), SHIM_S2MM, names(outs))},
    }
    for tile_name, dirs in p.channels.items():
        for d, (used, avail, what) in dirs.items():
            detail = f"{used} of {avail} ({what})"
            if used > avail and tile_name.startswith("memory tile"):
                detail += (f": a split or join over {P} core rows takes one memory-tile {d} channel per core row, "
                           f"and the memory tile has {avail}; dataflow.json must change (fewer core rows: "
                           "array.core_rows and the groups' chunk counts)")
            check(f"DMA channels {tile_name} {d}", used <= avail, detail)
    for direction, ops, limit in (("MM2S", ins, SHIM_MM2S), ("S2MM", outs, SHIM_S2MM)):
        chans = [op.shim_channel for op in ops]
        check(f"shim {direction} channel numbers distinct and in range",
              len(set(chans)) == len(chans) and all(0 <= ch < limit for ch in chans),
              f"{', '.join(f'{op.operand} {op.shim_channel}' for op in ops)} of 0..{limit - 1}")

    # Stream-switch ports: a split's part for core row k is a stream of its own from the memory tile up to
    # row k, so the boundary below row k carries the parts of rows k and above; a broadcast is one stream
    # up the column; each core's y is a stream of its own down to the memory tile.
    up = [sum((P - k) if op.link == "split" else 1 for op in ins) for k in range(P)]
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

    # Every kernel of the family is linked into the xclbin, so every one must take what the core passes.
    for what, ok, detail in kernel_checks(desc, family, contracts, tile):
        check(what, ok, detail)

    if desc.per_row:
        # A core learns where a row ends only from the rows form's words; with "chunks" alone it could not
        # tell when to release the row's value and take the next.
        check("core program: a value per row is held for its row's chunks (RTP words rows and row_chunks)",
              desc.work_words == ROW_WORDS,
              f"{', '.join(op.operand for op in desc.per_row)} one value per row; the core's work words: " +
              (", ".join(desc.work_words) if desc.work_words else "none") +
              ("" if desc.work_words == ROW_WORDS else
               ": the core program must count rows and each row's chunks to hold a row's value for its chunks"))
    _plan_shape(desc, p, check)
    _plan_core_program(desc, p, check)
    return p


GRID = "column c: row block (first row, rows), segment (first group, groups)"


def rows_per_step(desc):
    """A column's rows per step, at most: the host's min(kRowsPerStep, repeat_max + 1)."""
    return min(HOST_ROWS_PER_STEP, desc.raw["limits"].get("repeat_max", SHIM_REPEAT_MAX) + 1)


def bd_d0(tile, wrap):
    """The d0 of a shim BD moving chunks of `tile` values, as the host's rows_bd picks it: a row's segment
    is contiguous, so d0 may be any divisor of the chunk; it is the tile, halved while it passes the wrap
    (scale's 1024 values as 2 x 512 words), and d1 counts the segment's runs of d0. An odd tile past the
    wrap stays whole: only a contiguous run can move it."""
    d0 = tile
    while d0 > wrap and d0 % 2 == 0:
        d0 //= 2
    return d0


def column_steps(p, c, per_step):
    """Column c's steps: (first row, rows) of each, in the order the host streams them."""
    (first, count), _ = p.schedule[GRID][c]
    return [(first + done, min(per_step, count - done)) for done in range(0, count, per_step)]


def _check_chunk_dims(t, tile, wrap, check):
    """A chunked transfer's d0 and d1 against the wraps, as the host's stream builder and mlir-aie's verifier
    take them."""
    it, d2, d1, d0 = t.sizes
    # d0 is the tile or, past the wrap, a half of it (bd_d0), so strided rows of scale's 1024 move as
    # 2 x 512; only a tile the halving cannot bring within the wrap needs a contiguous run.
    check(f"{t.what}: d0 size", d0 <= wrap or t.linear,
          (f"{d0} <= {wrap} words" + ("" if d0 == tile else f" (the tile {tile} as {tile // d0} runs)"))
          if d0 <= wrap else
          f"{d0} words in one contiguous run (no wraps: buffer_length alone)" if t.linear else
          f"{d0} > {wrap} words, and the step is not one contiguous run (rows not back to back): "
          f"the host's stream builder refuses the BD as mlir-aie's verifier does; a smaller tile moves it")
    # The host refuses a segment of more chunks than the wrap whatever the run; a split chunk makes d1
    # the segment's runs (twice its chunks at 1024), which only a strided step's wraps must hold.
    chunks = d1 * d0 // tile
    if d0 == tile:
        check(f"{t.what}: d1 size (chunks of a segment)", d1 <= wrap, f"{d1} <= {wrap}")
    else:
        check(f"{t.what}: d1 size (runs of {d0} words of a segment)",
              chunks <= wrap and (d1 <= wrap or t.linear),
              f"a segment of {chunks} chunks > {wrap}: the host's stream builder refuses it" if chunks > wrap else
              f"{d1} <= {wrap} ({chunks} chunks of {tile // d0} runs)" if d1 <= wrap else
              f"{d1} runs in one contiguous run (no wraps: buffer_length alone; {chunks} chunks <= {wrap})"
              if t.linear else
              f"{d1} > {wrap} ({chunks} chunks of {tile // d0} runs), and the step is not one contiguous run "
              f"(rows not back to back): the host's stream builder refuses the BD as mlir-aie's verifier does")


def _plan_shape(desc, p, check):
    """The grid, steps, shim transfers, BDs and traffic of one invocation of rows x row_len, as the host's
    build_rows_sequence makes them."""
    raw = desc.raw
    lim, shim = raw["limits"], raw["shim"]
    P, tile = p.parts, p.tile
    wrap, iters, stride_max = lim["wrap_max"], lim["iteration_max"], lim["stride_max"]
    repeat_max = lim.get("repeat_max", SHIM_REPEAT_MAX)
    check("limits.repeat_max within the push queue's repeat count", 0 <= repeat_max <= SHIM_REPEAT_MAX,
          f"{repeat_max} of 0..{SHIM_REPEAT_MAX}")
    check("shape: rows and row length positive", p.rows > 0 and p.row_len > 0, f"rows {p.rows}, row length {p.row_len}")
    whole = p.row_len > 0 and p.row_len % (P * tile) == 0
    check(f"shape: a row in whole groups of {P} chunks", whole, f"row length {p.row_len}, group {P} x {tile} values")
    if p.family in ROW_TRANSFORMS:
        check("shape: a row transform's row is one chunk (row length = the tile)", p.row_len == tile,
              f"row length {p.row_len}, tile {tile}" +
              ("" if p.row_len == tile else f": the kernel would transform each chunk of {tile} values on its own, "
                                            f"not the row; the host takes a row of n values at tile n only"))
    check("shape: row stride covers the row", p.row_stride >= p.row_len, f"stride {p.row_stride}, row {p.row_len}")
    check("shape: row stride within the shim's stride", p.row_stride <= stride_max,
          f"stride {p.row_stride} <= {stride_max} words")
    if desc.per_row:
        # The host's rule for a per-row operand: a stride of at least its one value, at most the shim's stride
        # field, or 0 for one value read again for every row.
        names = ", ".join(op.operand for op in desc.per_row)
        check(f"shape: {names} stride within the shim's stride (0: one value for every row)", p.w_stride <= stride_max,
              f"{names} stride {p.w_stride} <= {stride_max} words")
    groups = p.row_len // (P * tile) if whole else 0
    R, S, grid = rows_grid(p.rows, groups, p.cols)
    per_step = rows_per_step(desc)
    used = len(grid)
    check("grid: the columns it uses are the array's", used <= p.cols,
          f"{R} row block(s) x {S} segment(s) = {used} of {p.cols} columns")
    core_chunks = [n * g for (_, n), (_, g) in grid] + [0] * (p.cols - used)
    p.schedule = {
        "groups per row": groups,
        "grid (row blocks R x segments S)": [R, S],
        "columns used": used,
        GRID: [[list(b), list(s)] for b, s in grid],
        "chunks per core of column c (RTP chunks)": core_chunks,
    }
    if desc.work_words == ROW_WORDS:
        # The rows form's words: a core's rows (its column's block) and the chunks of each row's segment
        # (one per group), whose product is its kernel calls.
        p.schedule["rows per core of column c (RTP rows)"] = [n for (_, n), _ in grid] + [0] * (p.cols - used)
        p.schedule["chunks of a row per core of column c (RTP row_chunks)"] = [g for _, (_, g) in grid] + \
            [0] * (p.cols - used)
    p.schedule.update({
        "kernel calls on the busiest core": max(core_chunks, default=0),
        "rows per step (at most)": per_step,
        "steps": math.ceil(grid[0][0][1] / per_step) if grid else 0,
        "steps in flight": shim["steps_in_flight"],
    })
    # Each column's step as the memory tile cuts it: chunks of the tile (d0, halved while past the wrap:
    # bd_d0), the segment's chunks (d1, its runs of d0), the step's rows (d2). The largest is column 0's
    # first (the first blocks and segments are the larger).
    n0 = min(per_step, grid[0][0][1]) if grid else 0
    seg0 = grid[0][1][1] * P if grid else 0
    d0 = bd_d0(tile, wrap)
    row_dims = [seg0 * tile // d0, d0]
    one_row = lambda op: p.one_b_row and len(desc.inputs) > 1 and op is desc.inputs[1]
    p.transfers = []
    for op in desc.paths:
        if op.per_row and p.w_stride == 0:
            # One value for every row: one word, pushed again per row (the host's queue-push repeat).
            p.transfers.append(Transfer(f"{op.operand} fill (one value for every row), per column per step: the value, "
                                        "pushed again per row", [1, 1, 1, 1], [0, 0, 1, 1], repeat=max(n0 - 1, 0),
                                        linear=True, per_row=True))
            continue
        if op.per_row:
            # The values of the step's rows, one per row at w's stride, whatever the column's segment.
            p.transfers.append(Transfer(f"{op.operand} fill, per column per step: one value per row", [1, n0, 1, 1],
                                        [0, p.w_stride, 1, 1], linear=n0 <= 1 or p.w_stride == 1, per_row=True))
            continue
        if one_row(op):
            p.transfers.append(Transfer(f"{op.operand} fill (one row for all), per column per step: the segment of "
                                        "the row, pushed again per row", [1, 1] + row_dims, [0, 0, d0, 1],
                                        repeat=max(n0 - 1, 0), linear=True))
            continue
        what = (f"{op.operand} fill, per column per step" if op.inbound else f"{op.operand} drain, per column per step")
        if op is desc.paths[0]:
            what += " (the largest: column 0's first)"
        p.transfers.append(Transfer(what, [1, n0] + row_dims, [0, p.row_stride, d0, 1],
                                    linear=n0 <= 1 or p.row_stride == seg0 * tile))
    for t in p.transfers:
        it, d2, d1, d0 = t.sizes
        if t.per_row:
            # One word per row: within every wrap; the stride, the length and the repeat are checked below.
            check(f"{t.what}: one value per row (d0 and d1 one word)", d0 == 1 and d1 == 1, f"d0 {d0}, d1 {d1}")
        else:
            _check_chunk_dims(t, tile, wrap, check)
        check(f"{t.what}: buffer length", d0 * d1 * d2 <= SHIM_LENGTH_MAX, f"{d0 * d1 * d2} <= {SHIM_LENGTH_MAX} words")
        check(f"{t.what}: iteration size", it <= iters, f"{it} <= {iters}")
        check(f"{t.what}: strides", max(t.strides) <= stride_max, f"max {max(t.strides)} <= {stride_max} words")
        if t.repeat:
            check(f"{t.what}: queue-push repeat", t.repeat <= repeat_max, f"{t.repeat} <= {repeat_max}")

    # BD slots: per step in flight one set, per operand its BD ids; the sets are disjoint.
    slots = shim["bd_slots"]
    ids = []
    for s in slots:
        for op in desc.paths:
            v = s.get(op.operand, [])
            ids.extend(v if isinstance(v, list) else [v])
    check("shim BD slots: one set per step in flight, an id for every operand",
          len(slots) == shim["steps_in_flight"] and all(op.operand in s for s in slots for op in desc.paths),
          f"{len(slots)} sets, {shim['steps_in_flight']} steps in flight")
    check("shim BD ids distinct and in range", len(set(ids)) == len(ids) and all(0 <= i < shim["bds"] for i in ids),
          f"{sorted(ids)} of 0..{shim['bds'] - 1}")
    p.schedule["shim BDs per column per step"] = len(ids) // max(len(slots), 1)

    # The runtime sequence's operands (fp32 values), in the order of the kernel's arguments; a second
    # input (b) may be one row for all.
    a_len = (p.rows - 1) * p.row_stride + p.row_len if p.rows > 0 else 0
    w_len = (1 if p.w_stride == 0 else (p.rows - 1) * p.w_stride + 1) if p.rows > 0 and desc.per_row else 0
    p.tensors = {f"{op.operand} (arg {op.arg})": w_len if op.per_row else p.row_len if one_row(op) else a_len
                 for op in desc.paths}
    # DRAM traffic as the host counts it: per step and column, a BD's pass times the push's runs (a one-row
    # b: the row's segment, pushed once per row of the step; a per-row input: a value per row of every
    # column, so each column taking a segment of a row reads its value).
    moved = {op.operand: 0 for op in desc.paths}
    for c, (_, (_, g)) in enumerate(grid):
        seg_bytes = 4 * g * P * tile
        for _, n in column_steps(p, c, per_step):
            for op in desc.paths:
                moved[op.operand] += (op.unit_bytes if op.per_row else seg_bytes) * n
    p.traffic = {f"{op.operand} {'read' if op.inbound else 'written'} (bytes)": moved[op.operand] for op in desc.paths}
    p.traffic["read (bytes)"] = sum(moved[op.operand] for op in desc.inputs)
    p.traffic["written (bytes)"] = sum(moved[op.operand] for op in desc.outputs)
    p.traffic["busiest shim channel (bytes)"] = 4 * grid[0][0][1] * seg0 * tile if grid else 0


def _plan_core_program(desc, p, check):
    """The RTP words of this invocation and the barrier every core passes once per invocation."""
    prog = desc.raw["core_program"]
    bar = prog["barrier"]
    form = desc.work_words
    largest = lambda key: max(p.schedule[key], default=0)
    calls_most = largest("chunks per core of column c (RTP chunks)")
    words = {"contract": p.contract_index}
    if form == ROW_WORDS:
        words["rows (largest of a core)"] = largest("rows per core of column c (RTP rows)")
        words["row_chunks (largest of a core)"] = largest("chunks of a row per core of column c (RTP row_chunks)")
    else:
        words["chunks (largest of a core)"] = calls_most
    words["version"] = prog["rtp_layout_version"]
    mode, acquire, release, set_value = bar["acquire"]["mode"], bar["acquire"]["value"], bar["release"]["value"], bar["set_value"]
    equal = mode == "equal"
    after = (set_value if equal else set_value - acquire) + release
    floats = p.float_words
    calls = " or ".join(families_of(desc)[p.family])
    offsets = [f"{op.operand} + {p.tile} k" for op in desc.chunked if op.inbound and op.link == "broadcast"]
    operands = ", ".join(op.operand for op in desc.chunked)
    held = ", ".join(op.operand for op in desc.per_row)
    extra = [f"{op.operand} = the value of {op.operand}'s object" for op in desc.per_row]
    extra += [f"{w} = f32(word {w}) = {f['value']!r}" for w, f in floats.items()]
    if BIAS_WORD in floats:
        # The host's test (b != 0.0f): true for -0.0 never, for a NaN always (an unordered compare).
        extra.append(f"with_bias = ({BIAS_WORD} != 0.0) = {int(floats[BIAS_WORD]['value'] != 0.0)}")
    p.core_program = {
        "RTP words": words,
        "RTP word index": dict(prog["rtp_words"]),
        "barrier lock": bar["lock"],
        "sequence: barrier.set": set_value,
        f"core: wait_for_value (acquire {mode})": acquire,
        "core: release_with_value, after the RTP reads": release,
        "lock after a core's pass": after,
    }
    call = f"acquire {operands}; {calls} by the contract word, " + \
        ("rows = 1, " if p.family in ROW_TRANSFORMS else "") + f"n = {p.tile}" + \
        (f", at {', '.join(offsets)}" if offsets else "") + (f", {', '.join(extra)}" if extra else "") + \
        f"; release {operands}"
    if form == ROW_WORDS:
        # The rows form: the row's values held (acquired) for all of its chunks, released after them.
        p.core_program["per row (RTP rows), core row k"] = (f"acquire {held}, read its value; " if held else "") + \
            "the row's chunks; " + (f"release {held}" if held else "")
        p.core_program["per chunk of the row (RTP row_chunks), core row k"] = call
    else:
        p.core_program["per chunk, core row k"] = call
    if floats:
        p.core_program["RTP fp32 words (the sequence writes their bits)"] = {
            w: f"{f['value']!r}: 0x{f['bits']:08x}" for w, f in floats.items()}
    index = prog["rtp_words"]
    # The counts the stream computes: contract, the core's work (chunks, or rows and row_chunks: the
    # host's builder takes "chunks" when there is one), version; then the fp32 words.
    counts = ["contract"] + list(form or ["chunks (or rows and row_chunks)"]) + ["version"]
    names = counts + [f"fp32 {w}" for w in desc.float_words]
    check(f"RTP words: {', '.join(names[:-1])} and {names[-1]}, distinct, within the word count",
          form is not None and sorted(index) == sorted(counts + desc.float_words) and
          sorted(index.values()) == list(range(prog["rtp_word_count"])),
          f"{index}, {prog['rtp_word_count']} words" +
          (f", fp32: {', '.join(desc.float_words)}" if desc.float_words else "") +
          ("" if form else ": neither a 'chunks' word nor 'rows' and 'row_chunks': the host's stream builder refuses "
                           "it, and the core would not know its work"))
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
    # The host refuses a core of more kernel calls than an int32 word holds in either form.
    counted = list(words.values()) + [calls_most]
    check("RTP words fit the core's int32 words", all(0 <= v <= prog["rtp_word_max"] for v in counted),
          f"largest {max(counted)} <= {prog['rtp_word_max']}" +
          (" (the counts; the fp32 words are bit patterns)" if floats else ""))
    if floats:
        # Any 32-bit pattern is an fp32 word (a sign bit set, an infinity, a NaN): the sequence writes the
        # bits, the core only bitcasts them.
        check("RTP fp32 words: 32-bit patterns", all(0 <= f["bits"] < 1 << WORD_BITS for f in floats.values()),
              ", ".join(f"{w} 0x{f['bits']:08x}" for w, f in floats.items()))


# ---------------------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------------------
def kib(n):
    return f"{n} B ({n / 1024:.2f} KiB)"


def print_plan_text(p, out=sys.stdout):
    w = out.write
    w(f"design: rows ({p.design}), family {p.family} ({p.contract}, contract RTP = {p.contract_index}; kernels "
      f"{', '.join(f'{c} in {s}' for c, s in p.kernels.items())}), tile {p.tile} values ({p.chunk_bytes} B chunks), "
      f"{p.cols} column(s) x {p.parts} core row(s), npu2\n")
    w(f"description: {p.dataflow}, layout {p.layout} ({', '.join(f'{k} {v}' for k, v in p.links.items())})\n")
    second = (f", {p.inputs[1]} {'one row for all' if p.one_b_row else 'one row per row'}"
              if len(p.inputs) > 1 and p.inputs[1] not in p.per_row else "")
    second += "".join(f", {w} one value per row, " +
                      ("stride 0 (one value for every row)" if p.w_stride == 0 else f"stride {p.w_stride}")
                      for w in p.per_row)
    fp32 = "".join(f", {w} = {f['value']!r} (0x{f['bits']:08x})" for w, f in p.float_words.items())
    w(f"runtime sequence for: {p.rows} rows x {p.row_len} values, row stride {p.row_stride}{second}{fp32}\n\n")
    w("FIFOs (per column c, core row k):\n")
    for f in p.fifos:
        w(f"  {f.name:16s} {f.path}\n")
        w(f"  {'':16s} object {f.obj_bytes} B x depth {f.depth} = {f.bytes} B in the {f.home}; {f.channels}\n")
        if f.note:
            w(f"  {'':16s} {f.note}\n")
    w("\ncore data memory (each core):\n")
    for k, v in p.core_bytes.items():
        w(f"  {k:40s} {kib(v)}\n")
    w("memory tile (each column):\n")
    for k, v in p.memtile_bytes.items():
        w(f"  {k:40s} {kib(v)}\n")
    w("\nDMA channels:\n")
    for tile_name, dirs in p.channels.items():
        for d, (used, avail, what) in dirs.items():
            w(f"  {tile_name:26s} {d}: {used} of {avail} ({what})\n")
    w("stream-switch ports (per column):\n")
    for what, (used, avail) in p.streams.items():
        w(f"  {what:36s} {used} of {avail}\n")
    w("\nshim transfers (sizes / strides outermost first, 32-bit words):\n")
    for t in p.transfers:
        rep = f", queue-push repeat {t.repeat}" if t.repeat else ""
        w(f"  {t.what}: sizes {t.sizes} strides {t.strides}{rep}{', one contiguous run' if t.linear else ''}\n")
    w("schedule:\n")
    for k, v in p.schedule.items():
        w(f"  {k}: {v}\n")
    w("runtime sequence operands (fp32 values):\n")
    for k, v in p.tensors.items():
        w(f"  {k}: {v}\n")
    w("DRAM traffic of this invocation:\n")
    for k, v in p.traffic.items():
        w(f"  {k}: {v}\n")
    w("core program (every core, once per invocation):\n")
    for k, v in p.core_program.items():
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
def emit_mlir(desc, p, kernel_object):
    try:
        import numpy as np
        import aie.iron.device as iron_devices
        from aie.dialects import arith
        from aie.helpers.dialects.scf import else_, if_
        from aie.helpers.taplib import TensorAccessPattern
        from aie.ir import F32Type, IntegerType
        from aie.iron import (Buffer, Kernel, ObjectFifo, Program, Runtime, TaskGroup, Worker,
                              WorkerRuntimeBarrier)
        from aie.iron.controlflow import range_
        from aie.iron.device import Tile
    except ImportError as e:
        raise PlanError(f"emitting MLIR needs mlir-aie >= 1.4 (python package 'aie') and numpy: {e}")

    raw = desc.raw
    arr, prog = raw["array"], raw["core_program"]
    bar = prog["barrier"]
    P, tile, cols = p.parts, p.tile, p.cols
    shim_row, mem_row, core_row0 = arr["shim_row"], arr["memtile_row"], arr["first_core_row"]
    idx = prog["rtp_words"]
    rtp_count = prog["rtp_word_count"]

    f32, i32 = np.dtype[np.float32], np.dtype[np.int32]
    ty = lambda chunks: np.ndarray[(chunks * tile,), f32]
    # An operand's objects: chunks of the tile, or of a per-row input its values (fp32: PER_ROW_BYTES).
    obj_ty = lambda op, count: np.ndarray[(count,), f32] if op.per_row else ty(count)
    rtp_ty = np.ndarray[(rtp_count,), i32]
    lengths = [p.tensors[f"{op.operand} (arg {op.arg})"] for op in desc.paths]
    tensor_tys = [np.ndarray[(n,), f32] for n in lengths]

    # Every contract of the family is linked into every core (the kernel sources in one object), so one
    # xclbin serves them all; the contract word picks one per invocation. The kernel ABI (kernel_params,
    # which the plan has checked against the sources): the operands' core objects, a row transform's
    # rows (always 1: the chunk is one row), n (here always the tile), per broadcast input of chunks the
    # offset of the core's chunk in its object (the plan fails while the kernels do not take it), per
    # per-row input the row's value (an f32 the core reads from the object it holds), the fp32 RTP words,
    # with_bias.
    contracts = families_of(desc)[p.family]
    broadcast = [op for op in desc.chunked if op.inbound and op.link == "broadcast"]
    scalar_ty = {"int32": np.int32, "float": np.float32}
    arg_tys = [ty(op.core_chunks) for op in desc.chunked] + \
        [scalar_ty[k] for _, k in kernel_params(desc, p.family)[len(desc.chunked):]]
    counts = (1, tile) if p.family in ROW_TRANSFORMS else (tile,)
    kernels = [Kernel(sym, kernel_object, arg_tys) for sym in contracts]
    n_ends = len(desc.paths)
    chunk_at = [i for i, op in enumerate(desc.paths) if not op.per_row]  # the ends of the chunked operands
    row_at = [i for i, op in enumerate(desc.paths) if op.per_row]        # the ends of the per-row inputs
    if desc.work_words is None or (row_at and desc.work_words != ROW_WORDS):
        raise PlanError(f"{desc.path}: no core program for RTP words {sorted(idx)} with per-row inputs "
                        f"{[desc.paths[i].operand for i in row_at]}")

    def dispatch(ks, sel, args, i=0):
        # The contract word selects the kernel: a chain of compares, a few scalar cycles per chunk (none
        # for a family of one contract).
        if i == len(ks) - 1:
            ks[i](*args)
            return
        with if_(sel == i) as taken:
            ks[i](*args)
        with else_(taken):
            dispatch(ks, sel, args, i + 1)

    def core_program(k):
        # Core row k's program: the same but for the offset of its chunk in a broadcast object, a
        # constant of its own code.
        offsets = [k * tile] * len(broadcast)

        def core_fn(*args):
            # The FIFO ends (the inputs', then y's), the RTP buffer, the barrier, the kernels.
            ends, (rtp, barrier), ks = args[:n_ends], args[n_ends:n_ends + 2], args[n_ends + 2:]
            # Once per invocation: the stream writes the RTP words, then sets the barrier. wait_for_value
            # is an acquire_equal that leaves the value in the lock; without the release below the
            # Worker's next pass would not wait and would run again on this invocation's words
            # (../matmul/design.py). The release comes before the chunks: the stream sets the barrier
            # again only after it has drained this invocation's y.
            barrier.wait_for_value(bar["acquire"]["value"])
            # Every word, in the order of the block, so that a pass takes one set's words as the
            # simulator's core model (src/sim/core-locks.cpp) reads them; nothing here depends on the
            # version.
            word = {name: rtp[i] for name, i in sorted(idx.items(), key=lambda kv: kv[1])}
            sel = word["contract"]
            # The fp32 words hold the host's bits in i32 words: a bitcast, no conversion. with_bias is the
            # host's b != 0.0f: an unordered not-equal (une), so -0.0 gives 0 and a NaN 1, as C's != does
            # (an ordered one would drop a NaN bias the CPU adds).
            floats = [arith.bitcast(F32Type.get(), word[w]) for w in desc.float_words]
            if BIAS_WORD in desc.float_words:
                b = floats[desc.float_words.index(BIAS_WORD)]
                floats.append(arith.extui(IntegerType.get_signless(32),
                                          arith.cmpf(arith.CmpFPredicate.UNE, b, arith.constant(F32Type.get(), 0.0))))
            barrier.release_with_value(bar["release"]["value"])
            chunk_ends = [ends[i] for i in chunk_at]
            if desc.work_words == CHUNK_WORDS:
                for _ in range_(word["chunks"]):
                    objs = [end.acquire(1) for end in chunk_ends]
                    dispatch(ks, sel, (*objs, *counts, *offsets, *floats))
                    for end in chunk_ends:
                        end.release(1)
                return
            # The rows form (the host's RowScaleRole, src/ops/row_scale/sim/sim-row-scale.cpp): per row, its
            # per-row inputs' objects acquired and their values read (one f32 load each), held for all of
            # the row's chunks (the memory tile's next object is the next row's), released after them.
            row_ends = [ends[i] for i in row_at]
            for _ in range_(word["rows"]):
                held = [end.acquire(1) for end in row_ends]
                values = [obj[0] for obj in held]
                for _ in range_(word["row_chunks"]):
                    objs = [end.acquire(1) for end in chunk_ends]
                    dispatch(ks, sel, (*objs, *counts, *offsets, *values, *floats))
                    for end in chunk_ends:
                        end.release(1)
                for end in row_ends:
                    end.release(1)
        return core_fn

    workers, rtps, barriers = [], [], []
    handles = {op.operand: [] for op in desc.paths}  # the shim ends, per column
    # Part k of a group: chunk k, core row k. With one core row (a row transform) the split and the join
    # are of one part at offset 0: what IRON's forward() builds (a split at [0]), a link of one FIFO to
    # one that mlir-aie's verifier takes with the one side's offsets.
    split_at = [k * tile for k in range(P)]
    for col in range(cols):
        mem_tile = Tile(col, mem_row)
        core_ends = {}  # operand -> per core row k, that core's FIFO end
        for op in desc.paths:
            l2 = ObjectFifo(obj_ty(op, op.mem_chunks), name=f"{op.mem['name']}_{col}", depth=op.mem_depth)
            if op.link == "split":
                parts = l2.cons().split(split_at, obj_types=[ty(1)] * P,
                                        names=[f"{op.core['name']}_{col}_{k}" for k in range(P)],
                                        depths=[op.core_depth] * P, tile=mem_tile)
                core_ends[op.operand] = [parts[k].cons() for k in range(P)]
            elif op.link == "broadcast":
                # One FIFO with a consumer per core row: IRON builds the broadcast from the .cons() calls (a
                # per-row input's objects are its values).
                l1 = l2.cons().forward(obj_type=obj_ty(op, op.core_chunks), depth=op.core_depth,
                                       name=f"{op.core['name']}_{col}", tile=mem_tile)
                core_ends[op.operand] = [l1.cons() for _ in range(P)]
            else:
                parts = l2.prod().join(split_at, obj_types=[ty(1)] * P,
                                       names=[f"{op.core['name']}_{col}_{k}" for k in range(P)],
                                       depths=[op.core_depth] * P, tile=mem_tile)
                core_ends[op.operand] = [parts[k].prod() for k in range(P)]
            # IRON assigns the shim channels itself; the description's are what the host's stream uses.
            handles[op.operand].append(l2.prod(tile=Tile(col, shim_row)) if op.inbound else
                                       l2.cons(tile=Tile(col, shim_row)))
        for k in range(P):
            rtp = Buffer(rtp_ty, name=f"rtp_{col}_{k}", initial_value=np.zeros(rtp_count, dtype=np.int32),
                         use_write_rtp=True)
            barrier = WorkerRuntimeBarrier()
            rtps.append((col, rtp))
            barriers.append(barrier)
            workers.append(Worker(core_program(k),
                                  [core_ends[op.operand][k] for op in desc.paths] + [rtp, barrier, *kernels],
                                  tile=Tile(col, core_row0 + k), stack_size=p.stack_bytes))

    grid = p.schedule[GRID]
    used = len(grid)
    core_chunks = p.schedule["chunks per core of column c (RTP chunks)"]
    per_step = p.schedule["rows per step (at most)"]
    steps = [column_steps(p, c, per_step) for c in range(used)]
    in_flight = raw["shim"]["steps_in_flight"]
    iters = raw["limits"]["iteration_max"]
    one_row = [p.one_b_row and len(desc.inputs) > 1 and op is desc.inputs[1] for op in desc.paths]
    wrap = raw["limits"]["wrap_max"]
    d0 = bd_d0(tile, wrap)

    def runs_of(g):
        # A segment of g groups as runs of d0 words (its chunks, or halves of them past the wrap).
        return g * P * tile // d0

    def one_run(g):
        # Wraps the shim cannot hold (a tile the halving cannot bring within the wrap, or more runs of a
        # segment than d1 wraps): the plan has checked the step is one contiguous run, so it goes as one,
        # the form mlir-aie's verifier exempts from the wraps, as the host's BD is then a plain length.
        return d0 > wrap or runs_of(g) > wrap

    def rows_tap(length, row0, n, seg):
        # n rows from row0, of each the segment (first group, groups) in runs of d0 (bd_d0): the order the
        # memory tile cuts into groups, and the pattern of the host's rows_bd; the words and their order
        # are the same as one run's.
        g0, g = seg
        at = row0 * p.row_stride + g0 * P * tile
        if one_run(g):
            return TensorAccessPattern((length,), at, [1, 1, 1, n * g * P * tile], [0, 0, 0, 1])
        return TensorAccessPattern((length,), at, [1, n, runs_of(g), d0], [0, p.row_stride, d0, 1])

    def sequence(*args):
        tensors, shim_ends = args[:len(desc.paths)], args[len(desc.paths):]
        # The cores of a column without work are left at their barrier, as the host's stream leaves them.
        for (col, rtp), barrier in zip(rtps, barriers):
            if col >= used:
                continue
            rtp[idx["contract"]] = p.contract_index
            if desc.work_words == ROW_WORDS:
                # The host's words of the rows form: the column's block of rows, each row's chunks per core.
                rtp[idx["rows"]] = p.schedule["rows per core of column c (RTP rows)"][col]
                rtp[idx["row_chunks"]] = p.schedule["chunks of a row per core of column c (RTP row_chunks)"][col]
            else:
                rtp[idx["chunks"]] = core_chunks[col]
            # The fp32 words' bits, as the int32 of the i32 buffer with the same bits (a sign bit set
            # makes it negative).
            for w, f in p.float_words.items():
                rtp[idx[w]] = as_i32(f["bits"])
            rtp[idx["version"]] = prog["rtp_layout_version"]
            barrier.set(bar["set_value"])  # after the words: the core reads them once the lock holds this
        pending = []
        for j in range(p.schedule["steps"]):
            group = TaskGroup()
            for col in range(used):
                if j >= len(steps[col]):
                    continue
                row0, n = steps[col][j]
                g0, g = grid[col][1]
                for op, t, ends, length, once in zip(desc.paths, tensors, shim_ends, lengths, one_row):
                    if op.per_row and p.w_stride == 0:
                        # One value for every row: the host pushes its one-word BD again per row (a
                        # queue-push repeat); here, as a one-row b, the iteration dimension repeats it
                        # (stride 0), at most iteration_max rows per fill.
                        for r in range(0, n, iters):
                            ends[col].fill(t, tap=TensorAccessPattern((length,), 0, [min(iters, n - r), 1, 1, 1],
                                                                      [0, 0, 0, 1]), group=group)
                    elif op.per_row:
                        # The step's rows' values, one per row at w's stride from its first row: the host's
                        # rows_bd(n, 1, stride, 1) at r0 * stride, with no segment offset (every column of a
                        # row's segments reads the row's value).
                        ends[col].fill(t, tap=TensorAccessPattern((length,), row0 * p.w_stride, [1, n, 1, 1],
                                                                  [0, p.w_stride, 1, 1]), group=group)
                    elif once:
                        # The host pushes the one row's segment again per row (a queue-push repeat); IRON's
                        # fill has no repeat count, so here the segment repeats in the iteration dimension
                        # (stride 0), at most iteration_max rows per fill; the segment in runs of d0,
                        # or as one run past the wraps, as rows_tap.
                        for r in range(0, n, iters):
                            m = min(iters, n - r)
                            sizes, strides = (([1, 1, g * P * tile], [0, 0, 1]) if one_run(g) else
                                              ([1, runs_of(g), d0], [0, d0, 1]))
                            ends[col].fill(t, tap=TensorAccessPattern((length,), g0 * P * tile, [m] + sizes,
                                                                      [0] + strides), group=group)
                    elif op.inbound:
                        ends[col].fill(t, tap=rows_tap(length, row0, n, grid[col][1]), group=group)
                    else:
                        ends[col].drain(t, tap=rows_tap(length, row0, n, grid[col][1]), wait=True, group=group)
            # Steps in flight (the description's "shim"): the next step streams while this one drains.
            pending.append(group)
            if len(pending) >= in_flight:
                pending.pop(0).finish()
        for group in pending:
            group.finish()

    rt = Runtime(sequence, tensor_tys + [handles[op.operand] for op in desc.paths])
    device = iron_devices.NPU2() if cols == arr["max_columns"] else getattr(iron_devices, f"NPU2Col{cols}")()
    return Program(device, rt, workers=workers).resolve_program()


# ---------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------
def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="The rows designs (elementwise ops of fp32 rows: aie/add's ADD / MUL, aie/glu's SwiGLU, "
                    "aie/scale's SCALE, aie/hadamard's Walsh-Hadamard rotation, aie/row_scale's MUL by one value per "
                    "row) for XDNA2 (NPU2): prints the "
                    "data-movement plan, or emits MLIR with mlir-aie >= 1.4 (IRON).")
    ap.add_argument("--dataflow", default=DEFAULT_DATAFLOW,
                    help="the data-movement description (default aie/add/dataflow.json; aie/glu/dataflow.json for "
                         "SwiGLU, aie/scale/dataflow.json for SCALE, aie/hadamard/dataflow.json for the Hadamard "
                         "rotation, aie/row_scale/dataflow.json for the MUL by one value per row; another file only "
                         "to try a change to one)")
    ap.add_argument("--layout", help="layout of the description (default its first)")
    ap.add_argument("--family", help="family (default the description's first)")
    ap.add_argument("--contract", help="contract of the runtime sequence (default the family's first)")
    ap.add_argument("--tile", type=int,
                    help="values per chunk, i.e. which xclbin (default: the largest whose group of chunks divides "
                         "--row-len, as the runtime picks; a row transform's: --row-len itself, or the largest)")
    ap.add_argument("--cols", type=int, help="array columns, 1..max_columns (default max_columns)")
    ap.add_argument("--rows", type=int, default=64, help="rows of the runtime sequence's invocation (default 64)")
    ap.add_argument("--row-len", type=int,
                    help=f"values per row (default {SAMPLE_ROW_LEN}, in whole groups of the tile; a row transform's "
                         "(hadamard's): the tile, the transform length n)")
    ap.add_argument("--row-stride", type=int,
                    help="values between rows of every operand of rows (a, b and y; x and y) (default the row length)")
    ap.add_argument("--one-b-row", action="store_true",
                    help="b is one row for all rows (a description of two inputs of rows only; refused for scale's one "
                         "and for row_scale's w, one value per row: see --w-stride)")
    ap.add_argument("--w-stride", type=int,
                    help="values between the rows' values of an input of one value per row (row_scale's w; default 1), "
                         "0 for one value for every row (descriptions with such an input only)")
    ap.add_argument("--scale", type=float,
                    help="SCALE's s, the fp32 RTP word s (descriptions with that word only: scale's; default 1.0); "
                         "the sequence writes its IEEE bits")
    ap.add_argument("--bias", type=float,
                    help="SCALE's b, the fp32 RTP word b (default 0.0, which the core passes as with_bias = 0; "
                         "-0.0 too); the sequence writes its IEEE bits")
    ap.add_argument("--hadamard-scale", type=float,
                    help="the Hadamard transform's scale, the fp32 RTP word scale (descriptions with that word only: "
                         "hadamard's; default 1 / sqrtf(tile) in fp32, as the host computes it); the sequence writes "
                         "its IEEE bits")
    ap.add_argument("--stack-bytes", type=int, help="core stack (default: the family's kernel_stack at the tile)")
    ap.add_argument("--kernel-data-bytes", type=int,
                    help="core memory for the kernels' static data (default from the description)")
    ap.add_argument("--kernel-object",
                    help="object file of the core program (default xdna_<design>_<family>.o, e.g. xdna_add_binary.o, "
                         "xdna_scale_scale.o, xdna_hadamard_hadamard.o, xdna_row_scale_row_scale.o)")
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
        plan = make_plan(desc, family, args.tile, args.cols, args.contract, args.rows, args.row_len,
                         args.row_stride, args.one_b_row, args.stack_bytes, args.kernel_data_bytes,
                         {"s": args.scale, "b": args.bias, "scale": args.hadamard_scale}, args.w_stride)
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
