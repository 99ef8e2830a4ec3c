#!/usr/bin/env python3
"""Whole-array matmul for XDNA2 (NPU2, AIE2P): the data movement of the NPU program.

C[token][row] += sum_k A[token][k] * W[row][k], on tiles of the ABI in aie/include/xdna_aie/matmul_tiles.h:
W tiles of 64 rows x TK, activation (A) tiles of TN tokens x TK, C tiles fp32 [TN][64].

Layouts of the work (columns c = 0..cols-1, compute rows r = 0..3, i.e. tiles (c, 2 + r)); each is its
own xclbin (dataflow.json "layouts", --layout), the instruction stream is built for one, and the timing
model picks the faster per shape:
  - m_split (decode): M is split across the cores: weight rows are taken in groups of 4 row tiles (256
    rows); group q = j * cols + c (round j) belongs to column c, and its row tile 4q + r to core (c, r),
    all 4 on the same token tile. Per column, the shim streams the 4 cores' W tiles interleaved per K
    step into the memory tile, which splits each 4-tile object to the 4 cores (and, being 2 objects
    deep, stages the next K step while the cores work); the same activation tile goes to all 4 cores
    (broadcast). W is streamed once per token tile.
  - n_split (prefill, N in whole groups of 4 token tiles): row tile m = j * cols + c belongs to column c,
    token tile 4g + r of group g to core (c, r). The row tile's W window of each K step is broadcast to
    the column's 4 cores; the 4 token tiles' A tiles of each K step are staged in the memory tile and
    split to the cores. W is streamed once per group of 4 token tiles, A once per row tile.
  - n_shared (prefill on the whole array, --cols 8 only): n_split with the activations shared by the
    columns. W and C as in n_split, per column; A is streamed once per step for the whole array, by
    column 0's shim into memory tile (0, 1), whose MM2S channel r sends part r to core row r of every
    column (the A panels of mlir-aie's whole_array matmul). Every column takes every A object, so every
    column has a row tile in every round: in a last round with fewer row tiles than columns, column c
    recomputes row tile m_tiles - 1 and writes the same values to the same place. A is read 1/8 as often
    as in n_split; the duplicate W fills and C drains are paid for.
  - In every layout every core owns whole 64-row output tiles (no reduction across cores) and walks K inside:
    it zeroes its C tile once per output tile (mm_zero_c_n<TN>), then adds one (W, A) tile pair per K
    tile into it (the kernels only ever add into C). The 4 C tiles are joined in the memory tile and
    drained to the shim, which writes them into the fp32 output.
  - One core program per family: the family's kernels are linked into every core and a runtime
    parameter (RTP) written by the instruction stream selects the contract, so one xclbin serves all
    of the family's contracts; each contract has its own instruction stream.

Nothing here needs mlir-aie except the MLIR emission: `--help`, `--list-contracts` and `--print-plan`
run with a bare Python 3 (no numpy), so CI can check the plan. The IRON code targets mlir-aie >= 1.4
(callback Runtime, TaskGroup, handle.fill/drain, Buffer RTPs, WorkerRuntimeBarrier).
"""

import argparse
import json
import os
import re
import sys
from dataclasses import asdict, dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ABI_HEADER = os.path.normpath(os.path.join(HERE, "..", "include", "xdna_aie", "matmul_tiles.h"))

# ---------------------------------------------------------------------------------------------------
# The tile ABI, mirrored from aie/include/xdna_aie/matmul_tiles.h (namespace xdna_aie::fmt). The mirror
# lets the plan run anywhere; `abi_check` parses the header and compares every format field by field,
# and compares the computed tile sizes with the header's own static_asserts, so the two cannot drift.
# ---------------------------------------------------------------------------------------------------
TILE_M = 64        # kTileM: weight rows per tile
PLANE_ALIGN = 64   # kPlaneAlign: every plane starts 64-byte aligned
K_STEP = 16        # kKStep: K per int4 B operand; activation sums are per 16 codes

# Plane: ("q4"|"q2"|"h1"|"q8"|"v16"|"v32",) or ("field", unit_bytes, units).
WEIGHT_FORMATS = {
    # name: (tile_k, block_values, block_bytes, act_block, planes)
    "q4_0": (256, 32, 18, 32, [("q4",), ("field", 2, 1)]),
    "q4_1": (256, 32, 20, 32, [("q4",), ("field", 2, 1), ("field", 2, 1)]),
    "q5_0": (256, 32, 22, 32, [("q4",), ("h1",), ("field", 2, 1)]),
    "q5_1": (256, 32, 24, 32, [("q4",), ("h1",), ("field", 2, 1), ("field", 2, 1)]),
    "q8_0": (256, 32, 34, 32, [("q8",), ("field", 2, 1)]),
    "q2_K": (256, 256, 84, 256, [("q2",), ("field", 1, 16), ("field", 2, 1), ("field", 2, 1)]),
    "q3_K": (256, 256, 110, 256, [("q2",), ("h1",), ("field", 1, 12), ("field", 2, 1)]),
    "q4_K": (256, 256, 144, 256, [("q4",), ("field", 1, 12), ("field", 2, 1), ("field", 2, 1)]),
    "q5_K": (256, 256, 176, 256, [("q4",), ("h1",), ("field", 1, 12), ("field", 2, 1), ("field", 2, 1)]),
    "q6_K": (256, 256, 210, 256, [("q4",), ("q2",), ("field", 1, 16), ("field", 2, 1)]),
    "f16": (128, 1, 2, 0, [("v16",)]),
    "bf16": (128, 1, 2, 0, [("v16",)]),
    "f32": (64, 1, 4, 0, [("v32",)]),
}


def align_up(x, a):
    return (x + a - 1) // a * a


def plane_bytes(tile_k, block_values, plane):
    elements = TILE_M * tile_k
    kind = plane[0]
    if kind == "field":
        return TILE_M * (tile_k // block_values) * plane[2] * plane[1]
    return {"q4": elements // 2, "q2": elements // 4, "h1": elements // 8, "q8": elements,
            "v16": elements * 2, "v32": elements * 4}[kind]


def weight_tile_bytes(fmt_name):
    tile_k, block_values, _, _, planes = WEIGHT_FORMATS[fmt_name]
    return sum(align_up(plane_bytes(tile_k, block_values, p), PLANE_ALIGN) for p in planes)


def quant_act_tile_bytes(tile_n, tile_k, act_block):
    """ActTileFormat::tile_bytes(): int8 codes, fp32 scales per act_block values, int16 sums per 16."""
    codes = align_up(tile_n * tile_k, PLANE_ALIGN)
    scales = align_up(tile_n * (tile_k // act_block) * 4, PLANE_ALIGN)
    sums = align_up(tile_n * (tile_k // K_STEP) * 2, PLANE_ALIGN)
    return codes + scales + sums


def float_act_tile_bytes(tile_n, tile_k, value_bytes):
    """FloatActTileFormat::tile_bytes()."""
    return align_up(tile_n * tile_k * value_bytes, PLANE_ALIGN)


def block_act_tile_bytes(tile_n, tile_k):
    """BlockActTileFormat::tile_bytes(): bfp16ebs8 blocks of 8 values, 9 bytes each, then one non-finite
    flag byte per token (prefill contracts v3)."""
    return align_up(tile_n * (tile_k // 8) * 9 + tile_n, PLANE_ALIGN)


def c_tile_bytes(tile_n):
    return tile_n * TILE_M * 4


@dataclass(frozen=True)
class Contract:
    name: str        # contract name in the kernel manifest
    symbol: str      # kernel symbol without the _n<TN> suffix (the kernel ABI)
    fmt: str         # key of WEIGHT_FORMATS
    act_value_bytes: int = 0  # float contracts: bytes per activation value; 0 for int8 activations
    act_bfp16: bool = False   # prefill contracts v3: bfp16 activation blocks
    tiles: tuple = (4, 32)    # token tiles the core program has

    @property
    def tile_k(self):
        return WEIGHT_FORMATS[self.fmt][0]

    def w_bytes(self):
        return weight_tile_bytes(self.fmt)

    def a_parts(self, tile_n):
        """A objects per K tile (the runtime's act_k_parts): the bfp16 A tile of a whole K tile at 64
        tokens would not fit the core double-buffered beside W and C, so it comes in two K halves and the
        core calls the kernel once per half with the same W."""
        return 2 if self.act_bfp16 and tile_n == 64 else 1

    def a_bytes(self, tile_n):
        """Bytes of one A object (one K part)."""
        tile_k, _, _, act_block, _ = WEIGHT_FORMATS[self.fmt]
        if self.act_bfp16:
            return block_act_tile_bytes(tile_n, tile_k // self.a_parts(tile_n))
        if self.act_value_bytes:
            return float_act_tile_bytes(tile_n, tile_k, self.act_value_bytes)
        return quant_act_tile_bytes(tile_n, tile_k, act_block)


# The data movement written once (aie/matmul/dataflow.json): the runtime's instruction-stream builder and
# the simulator's DMA interpreter read the same file, so the numbers below cannot drift from theirs.
DATAFLOW_PATH = os.path.join(HERE, "dataflow.json")
with open(DATAFLOW_PATH, encoding="utf-8") as _f:
    DATAFLOW = json.load(_f)

# Contract names: quantized weights use the new mm_<w>_a8 names (int8 activations, contract v2); the
# float contracts keep their names. The order inside a family (dataflow.json) is the value of the
# contract RTP; this table adds what the plan needs of each contract.
_CONTRACTS = {
    "mm_q4_K_a8": Contract("mm_q4_K_a8", "mm_q4_K_a8", "q4_K"),
    "mm_q5_K_a8": Contract("mm_q5_K_a8", "mm_q5_K_a8", "q5_K"),
    "mm_q6_K_a8": Contract("mm_q6_K_a8", "mm_q6_K_a8", "q6_K"),
    "mm_q4_0_a8": Contract("mm_q4_0_a8", "mm_q4_0_a8", "q4_0"),
    "mm_q4_1_a8": Contract("mm_q4_1_a8", "mm_q4_1_a8", "q4_1"),
    "mm_q5_0_a8": Contract("mm_q5_0_a8", "mm_q5_0_a8", "q5_0"),
    "mm_q5_1_a8": Contract("mm_q5_1_a8", "mm_q5_1_a8", "q5_1"),
    "mm_q8_0_a8": Contract("mm_q8_0_a8", "mm_q8_0_a8", "q8_0"),
    "mm_q2_K_a8": Contract("mm_q2_K_a8", "mm_q2_K_a8", "q2_K"),
    "mm_q3_K_a8": Contract("mm_q3_K_a8", "mm_q3_K_a8", "q3_K"),
    "mm_f16_f16": Contract("mm_f16_f16", "mm_f16", "f16", act_value_bytes=2),
    "mm_bf16_bf16": Contract("mm_bf16_bf16", "mm_bf16", "bf16", act_value_bytes=2),
    "mm_f32_f32": Contract("mm_f32_f32", "mm_f32", "f32", act_value_bytes=4),
    "mm_q4_K_bfp16": Contract("mm_q4_K_bfp16", "mm_q4_K_bfp16", "q4_K", act_bfp16=True, tiles=(32, 64)),
    "mm_q5_K_bfp16": Contract("mm_q5_K_bfp16", "mm_q5_K_bfp16", "q5_K", act_bfp16=True, tiles=(32, 64)),
    "mm_q6_K_bfp16": Contract("mm_q6_K_bfp16", "mm_q6_K_bfp16", "q6_K", act_bfp16=True, tiles=(32,)),
    "mm_q4_0_bfp16": Contract("mm_q4_0_bfp16", "mm_q4_0_bfp16", "q4_0", act_bfp16=True, tiles=(32,)),
    "mm_q4_1_bfp16": Contract("mm_q4_1_bfp16", "mm_q4_1_bfp16", "q4_1", act_bfp16=True, tiles=(32,)),
    "mm_q5_0_bfp16": Contract("mm_q5_0_bfp16", "mm_q5_0_bfp16", "q5_0", act_bfp16=True, tiles=(32,)),
    "mm_q5_1_bfp16": Contract("mm_q5_1_bfp16", "mm_q5_1_bfp16", "q5_1", act_bfp16=True, tiles=(32,)),
    "mm_q8_0_bfp16": Contract("mm_q8_0_bfp16", "mm_q8_0_bfp16", "q8_0", act_bfp16=True, tiles=(32,)),
    "mm_q2_K_bfp16": Contract("mm_q2_K_bfp16", "mm_q2_K_bfp16", "q2_K", act_bfp16=True, tiles=(32,)),
    "mm_q3_K_bfp16": Contract("mm_q3_K_bfp16", "mm_q3_K_bfp16", "q3_K", act_bfp16=True, tiles=(32,)),
    "mm_f16_bfp16": Contract("mm_f16_bfp16", "mm_f16_bfp16", "f16", act_bfp16=True, tiles=(32,)),
    "mm_bf16_bfp16": Contract("mm_bf16_bfp16", "mm_bf16_bfp16", "bf16", act_bfp16=True, tiles=(32,)),
    "mm_f32_bfp16": Contract("mm_f32_bfp16", "mm_f32_bfp16", "f32", act_bfp16=True, tiles=(32,)),
}
_SOURCES = {"kquant": "mm_kquant.cc", "legacy": "mm_legacy.cc", "kquant_low": "mm_kquant_low.cc",
            "float": "mm_float.cc", "kquant_bfp16": "mm_kquant_bfp16.cc", "legacy_bfp16": "mm_legacy_bfp16.cc",
            "kquant_low_bfp16": "mm_kquant_low_bfp16.cc", "float_bfp16": "mm_float_bfp16.cc",
            "f32_bfp16": "mm_float_bfp16.cc"}
FAMILIES = {name: (_SOURCES[name], [_CONTRACTS[c] for c in names])
            for name, names in DATAFLOW["families"].items() if name != "about"}
ZERO_SOURCE = "zero.cc"  # mm_zero_c_n<TN>, linked into every core program


@dataclass(frozen=True)
class Layout:
    """How a step's work lies over a column's cores (dataflow.json "layouts"; each its own xclbin)."""
    name: str
    w_parts: int   # row tiles per step: the W object's tiles (split over the cores when > 1)
    a_parts: int   # token tiles per step: the A object's tiles (split over the cores when > 1)
    about: str
    # A's FIFOs are one for the whole array ("shared_by_columns", n_shared): column 0's shim streams A
    # into memory tile (0, 1), whose split part r goes to core row r of every column. Every column then
    # takes every A object, so every column has a row tile in every round, and the layout is built for
    # the whole array only.
    a_shared: bool = False
    # ("shared_by_columns": "rows", n_rows) One A FIFO per core row instead: core row r's in column r's
    # shim and memory tile, each object broadcast along the row; the array's A over ROWS shim channels.
    a_rows: bool = False


def _layouts():
    out = {}
    rows = DATAFLOW["array"]["core_rows"]
    for spec in DATAFLOW["layouts"]:
        fifos = {f["name"]: f for f in spec["fifos"]}
        shared = [n for n, f in fifos.items() if f.get("shared_by_columns")]
        per_row = [n for n, f in fifos.items() if f.get("shared_by_columns") == "rows"]
        if shared and sorted(shared) != ["a_l2l1", "a_l3l2"]:
            raise SystemExit(f"{DATAFLOW_PATH}: layout {spec['name']}: only a_l3l2 and a_l2l1 (both) can be "
                             f"shared by the columns, not {shared}")
        if per_row and (sorted(per_row) != ["a_l2l1", "a_l3l2"] or fifos["a_l2l1"].get("link") != "broadcast" or
                        fifos["a_l3l2"]["object"]["count"] != 1):
            raise SystemExit(f"{DATAFLOW_PATH}: layout {spec['name']}: A shared per core row must be one unit per "
                             "object in both FIFOs, broadcast along the row")
        if shared and not per_row and (fifos["a_l2l1"].get("link") != "split" or fifos["w_l3l2"]["object"]["count"] != 1):
            raise SystemExit(f"{DATAFLOW_PATH}: layout {spec['name']}: A shared by the columns must be split "
                             "over the core rows, W broadcast")
        a_parts = rows if per_row else fifos["a_l3l2"]["object"]["count"]  # token tiles per step
        out[spec["name"]] = Layout(spec["name"], fifos["w_l3l2"]["object"]["count"], a_parts,
                                   spec["about"], bool(shared), bool(per_row))
    return out


LAYOUTS = _layouts()
DEFAULT_LAYOUT = DATAFLOW["layouts"][0]["name"]

# ---------------------------------------------------------------------------------------------------
# NPU2 hardware limits the plan is checked against (sources in aie/matmul/README.md).
# ---------------------------------------------------------------------------------------------------
ROWS = DATAFLOW["array"]["core_rows"]            # compute rows per column (tiles (c, 2..5))
MAX_COLS = DATAFLOW["array"]["max_columns"]      # NPU2: 8 columns (Strix, Strix Halo, Krackan)
CORE_DATA_BYTES = DATAFLOW["core_budget"]["core_data_bytes"]  # core data memory, 8 banks
MEMTILE_BYTES = DATAFLOW["core_budget"]["memtile_bytes"]      # memory tile, per column
CORE_S2MM, CORE_MM2S = 2, 2       # DMA channels of a compute tile
MEMTILE_S2MM, MEMTILE_MM2S = 6, 6
SHIM_MM2S, SHIM_S2MM = 2, 2
SHIM_BDS = DATAFLOW["shim"]["bds"]  # shim buffer descriptors: 16 per channel, budgeted per tile (stricter)
BD_WRAP_MAX = DATAFLOW["limits"]["wrap_max"]           # d0 / d1 sizes of a non-linear shim transfer (words)
BD_ITER_MAX = DATAFLOW["limits"]["iteration_max"]      # iteration (outermost) size of a shim transfer
BD_STRIDE_MAX = DATAFLOW["limits"]["stride_max"]       # strides of a shim transfer (32-bit words)
# Starts a shim channel's task queue holds (src/control/shim-bd.h ShimLimits::max_queue_depth; mlir-aie
# polls before a fifth push). A transfer of kc iterations is one task (one BD run kc times: each execution
# moves one iteration), so a step queues one task per K chunk on each fill channel.
SHIM_QUEUE_DEPTH = 4

# RTP words of every core, written by the instruction stream before it releases the core's barrier.
_PROG = DATAFLOW["core_program"]
RTP_CONTRACT, RTP_OUT_TILES, RTP_K_TILES, RTP_VERSION = (_PROG["rtp_words"][k] for k in
                                                         ("contract", "out_tiles", "k_tiles", "version"))
RTP_WORDS = _PROG["rtp_word_count"]
RTP_LAYOUT_VERSION = _PROG["rtp_layout_version"]
RTP_WORD_MAX = _PROG["rtp_word_max"]  # the core reads the words as int32
# The barrier of every core (aie/matmul/README.md, "The runtime-parameter barrier"): the sequence writes
# the RTP words, then BARRIER_SET into the lock (barrier.set); the core waits (wait_for_value: an acquire
# that leaves the lock's value as it is), reads the words and releases (release_with_value: adds to the
# lock), so its next pass waits for the next invocation's set instead of reading these words again.
_BARRIER = _PROG["barrier"]
BARRIER_SET = _BARRIER["set_value"]
BARRIER_ACQUIRE_MODE, BARRIER_ACQUIRE = _BARRIER["acquire"]["mode"], _BARRIER["acquire"]["value"]
BARRIER_RELEASE = _BARRIER["release"]["value"]
LOCK_MAX_VALUE = _BARRIER["max_value"]
PARAMS_WORDS = DATAFLOW["params_words"]  # the runtime's params BO (src/runtime/invocation-args.h); passed, not read by DMA


class PlanError(Exception):
    pass


# ---------------------------------------------------------------------------------------------------
# ABI check: parse the header and compare.
# ---------------------------------------------------------------------------------------------------
_FMT_RE = re.compile(r"constexpr\s+WeightTileFormat\s+(\w+)\s*=\s*\{\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,"
                     r"\s*(\d+)\s*,\s*(\d+)\s*,\s*\{(.*?)\}\s*\}\s*;", re.S)
_PLANE_RE = re.compile(r"code\(PlaneKind::(\w+)\)|field\((\d+)\s*,\s*(\d+)\s*,\s*(\d+)\)")
_ASSERT_RE = re.compile(r"static_assert\(fmt::(\w+)\.tile_bytes\(\)\s*==\s*([\d\s*]+),")
_CONST_RE = re.compile(r"constexpr\s+int\s+(kTileM|kPlaneAlign|kKStep)\s*=\s*(\d+)\s*;")


def abi_check(header_path):
    """Returns a list of (check, ok, detail). Every mirrored number is compared with the header."""
    checks = []
    try:
        with open(header_path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        return [("ABI header readable", False, f"{header_path}: {e.strerror}")]

    consts = {m.group(1): int(m.group(2)) for m in _CONST_RE.finditer(text)}
    for name, mine in (("kTileM", TILE_M), ("kPlaneAlign", PLANE_ALIGN), ("kKStep", K_STEP)):
        got = consts.get(name)
        checks.append((f"ABI {name}", got == mine, f"header {got}, design {mine}"))

    parsed = {}
    for m in _FMT_RE.finditer(text):
        name = m.group(1)
        planes = []
        for p in _PLANE_RE.finditer(m.group(7)):
            planes.append((p.group(1),) if p.group(1) else ("field", int(p.group(2)), int(p.group(3))))
        n_planes = int(m.group(6))
        parsed[name] = (int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)), planes)
        if n_planes != len(planes):
            checks.append((f"ABI fmt::{name} plane count", False, f"n_planes {n_planes}, {len(planes)} listed"))
    for name, mine in WEIGHT_FORMATS.items():
        got = parsed.get(name)
        checks.append((f"ABI fmt::{name}", got == mine,
                       "matches the header" if got == mine else f"header {got}, design {mine}"))
    for m in _ASSERT_RE.finditer(text):
        name = m.group(1)
        expected = 1
        for factor in m.group(2).split("*"):
            expected *= int(factor)
        mine = weight_tile_bytes(name) if name in WEIGHT_FORMATS else None
        checks.append((f"ABI tile_bytes({name})", mine == expected, f"header static_assert {expected}, design {mine}"))
    return checks


# ---------------------------------------------------------------------------------------------------
# The plan: buffers, channels, and the shim transfers of one invocation shape.
# ---------------------------------------------------------------------------------------------------
@dataclass
class Fifo:
    name: str
    path: str          # e.g. "shim -> memtile"
    obj_bytes: int     # bytes of one object
    depth: int
    home: str          # where the buffers live: "memtile" or "core"
    channels: str      # DMA channels it takes at each end
    note: str = ""

    @property
    def bytes(self):
        return self.obj_bytes * self.depth


@dataclass
class Transfer:
    what: str
    sizes: list        # outermost first, in 32-bit words (the shim's address unit)
    strides: list
    linear: bool


@dataclass
class Plan:
    family: str
    tile_n: int
    cols: int
    dev: str
    contract: str
    contract_index: int
    exact: bool
    m_tiles: int
    n_tiles: int
    k_tiles: int
    out_row_stride: int
    stack_bytes: int
    kernel_data_bytes: int
    l2_depth: int
    layout: str = DEFAULT_LAYOUT
    w_tile_bytes: dict = field(default_factory=dict)   # contract -> bytes (ABI)
    w_obj_bytes: int = 0
    a_obj_bytes: int = 0
    a_parts: int = 1   # A objects per K tile (Contract.a_parts)
    c_obj_bytes: int = 0
    c_depth: int = 0
    fifos: list = field(default_factory=list)
    core_bytes: dict = field(default_factory=dict)
    memtile_bytes: dict = field(default_factory=dict)
    channels: dict = field(default_factory=dict)
    transfers: list = field(default_factory=list)
    schedule: dict = field(default_factory=dict)
    traffic: dict = field(default_factory=dict)
    tensors: dict = field(default_factory=dict)
    core_program: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)


def _shim_channel(layout, fifo):
    """The shim DMA channel dataflow.json gives a shim FIFO of a layout."""
    spec = next(l for l in DATAFLOW["layouts"] if l["name"] == layout)
    return next(f for f in spec["fifos"] if f["name"] == fifo)["shim_channel"]["channel"]


def family_contracts(family):
    return FAMILIES[family][1]


def word_chunk(total_words):
    """Largest d0 <= BD_WRAP_MAX that divides total_words: a contiguous run split into d1 x d0."""
    for d0 in range(min(total_words, BD_WRAP_MAX), 0, -1):
        if total_words % d0 == 0:
            return d0
    return 1


def rounds_of_column(c, cols, m_groups):
    """Rounds j in which column c owns group q = j * cols + c."""
    return 0 if c >= m_groups else (m_groups - c + cols - 1) // cols


def unit_of_column(j, c, cols, m_units, shared):
    """The row unit (m_split: group of 4 row tiles; n_split: row tile) column c works on in round j, or
    None when it has none. n_shared (A shared by the columns) gives every column one in every round: a
    column past the last one recomputes it, and its C drain writes the same values to the same place."""
    q = j * cols + c
    if q < m_units:
        return q
    return m_units - 1 if shared and m_units > 0 else None


def family_tiles(family):
    """The token tiles a family has a core program for (dataflow.json kernel_stack keys)."""
    k = DATAFLOW["core_budget"]["kernel_stack"][family]
    return [tn for tn in (4, 32, 64) if str(tn) in k]


def kernel_stack_bytes(family, tile_n):
    """The stack (scratch + spills + frames) the family's kernel needs at tile_n: dataflow.json, which
    takes it from the kernel source's budget comment."""
    return DATAFLOW["core_budget"]["kernel_stack"][family][str(tile_n)]


def make_plan(family, tile_n, cols, dev="npu2", contract=None, exact=False, m_tiles=64, n_tiles=1,
              k_tiles=None, out_row_stride=None, stack_bytes=None,
              kernel_data_bytes=DATAFLOW["core_budget"]["kernel_data_bytes"], l2_depth=2,
              abi_header=DEFAULT_ABI_HEADER, layout=DEFAULT_LAYOUT):
    if family not in FAMILIES:
        raise PlanError(f"unknown family {family!r}")
    if layout not in LAYOUTS:
        raise PlanError(f"unknown layout {layout!r} ({', '.join(LAYOUTS)})")
    lay = LAYOUTS[layout]
    if dev != "npu2":
        raise PlanError(f"device {dev!r}: this design targets npu2 (AIE2P) only")
    if not 1 <= cols <= MAX_COLS:
        raise PlanError(f"--cols {cols}: npu2 has 1..{MAX_COLS} columns")
    if lay.a_shared and cols != MAX_COLS:
        # Column 0's memory tile fans A out along the core rows of all the columns the xclbin has; with
        # fewer columns it would be another xclbin and another traffic, which nothing asks for.
        raise PlanError(f"--cols {cols}: layout {layout} shares A across the whole array and is built for "
                        f"all {MAX_COLS} columns only (use --cols {MAX_COLS}, or layout n_split)")
    contracts = family_contracts(family)
    names = [c.name for c in contracts]
    # The xclbin of a token tile serves the family's contracts that take it (a Q4_K/Q5_K xclbin at 64
    # tokens is not sized to Q6_K, which has no 64-token program).
    takes = [c for c in contracts if tile_n in c.tiles]
    if not takes:
        raise PlanError(f"no contract of family {family} takes token tile {tile_n}")
    chosen = takes[0] if contract is None else next((c for c in contracts if c.name == contract), None)
    if chosen is None:
        raise PlanError(f"contract {contract!r} is not in family {family} ({', '.join(names)})")
    if tile_n not in chosen.tiles:
        raise PlanError(f"contract {chosen.name} has no program for token tile {tile_n} (it has {chosen.tiles})")
    if k_tiles is None:
        k_tiles = 4096 // chosen.tile_k
    if stack_bytes is None:
        stack_bytes = kernel_stack_bytes(family, tile_n)
    if out_row_stride is None:
        out_row_stride = m_tiles * TILE_M

    p = Plan(family=family, tile_n=tile_n, cols=cols, dev=dev, contract=chosen.name,
             contract_index=names.index(chosen.name), exact=exact, m_tiles=m_tiles, n_tiles=n_tiles,
             k_tiles=k_tiles, out_row_stride=out_row_stride, stack_bytes=stack_bytes,
             kernel_data_bytes=kernel_data_bytes, l2_depth=l2_depth, layout=layout)
    check = lambda what, ok, detail: p.checks.append((what, bool(ok), detail))

    # ABI, and the sizes every FIFO is built from.
    for what, ok, detail in abi_check(abi_header):
        check(what, ok, detail)
    p.w_tile_bytes = {c.name: c.w_bytes() for c in takes}  # the contracts this token tile's xclbin has
    served = [chosen] if exact else takes
    # One xclbin serves the family, so its buffers (and the DMA lengths of the memory tile and cores,
    # which are fixed in the xclbin) are sized to the family's largest tile; see "W window" below.
    p.w_obj_bytes = max(c.w_bytes() for c in served)
    a_sizes = {c.a_bytes(tile_n) for c in served}
    if len(a_sizes) != 1:
        check("A tile size uniform in family", False, f"{sorted(a_sizes)}")
    p.a_obj_bytes = max(a_sizes)
    a_parts = {c.a_parts(tile_n) for c in served}
    if len(a_parts) != 1:
        check("A parts per K tile uniform in family", False, f"{sorted(a_parts)}")
    p.a_parts = max(a_parts)
    p.c_obj_bytes = c_tile_bytes(tile_n)

    # Core data memory: double-buffered W and A, the C tile, the RTP words, the kernel's stack (its
    # scratch arrays live there: the family's real figure, not a flat reserve), kernel static data.
    fixed = 2 * p.w_obj_bytes + 2 * p.a_obj_bytes + RTP_WORDS * 4 + stack_bytes + kernel_data_bytes
    # C is double-buffered when it fits (the drain of one output tile overlaps the next one's K loop);
    # otherwise single: the core then waits for the C drain (TN*256 bytes) once per output tile.
    c_max = DATAFLOW["depths"]["c_max"]
    p.c_depth = c_max if fixed + c_max * p.c_obj_bytes <= CORE_DATA_BYTES else 1
    p.core_bytes = {
        "W L1 (2 x W tile)": 2 * p.w_obj_bytes,
        ("A L1 (2 x A tile)" if p.a_parts == 1 else f"A L1 (2 x A object, 1/{p.a_parts} of a K tile)"): 2 * p.a_obj_bytes,
        f"C L1 ({p.c_depth} x C tile)": p.c_depth * p.c_obj_bytes,
        "RTP words": RTP_WORDS * 4,
        f"stack ({FAMILIES[family][0]}, scratch + frames)": stack_bytes,
        "kernel static data": kernel_data_bytes,
    }
    core_total = sum(p.core_bytes.values())
    p.core_bytes["total"] = core_total
    check("core data memory", core_total <= CORE_DATA_BYTES,
          f"{core_total} of {CORE_DATA_BYTES} bytes ({CORE_DATA_BYTES - core_total} free)")

    pw, pa = lay.w_parts, lay.a_parts
    # n_shared: only memory tile (0, 1) stages A; n_rows: memory tiles (r, 1), r < 4, one A tile each
    # (core row r's). Their figures are the busiest memory tile's.
    a_where = ", memory tiles (r,1), r < 4, one row's each" if lay.a_rows else ", memory tile (0,1) only" if lay.a_shared else ""
    a_staged = 1 if lay.a_rows else pa  # A units per memory-tile object
    p.memtile_bytes = {
        f"W L2 ({l2_depth} x {pw} W tile{'s' if pw > 1 else ''})": l2_depth * pw * p.w_obj_bytes,
        f"A L2 ({l2_depth} x {a_staged} A tile{'s' if a_staged > 1 else ''}{a_where})": l2_depth * a_staged * p.a_obj_bytes,
        f"C L2 ({l2_depth} x {ROWS} C tiles)": l2_depth * ROWS * p.c_obj_bytes,
    }
    mem_total = sum(p.memtile_bytes.values())
    p.memtile_bytes["total"] = mem_total
    if lay.a_shared:
        first = ROWS if lay.a_rows else 1  # the first column whose memory tile stages no A
        busiest = "memory tiles (r,1), r < 4, the busiest" if lay.a_rows else "memory tile (0,1), the busiest"
        check(busiest, mem_total <= MEMTILE_BYTES, f"{mem_total} of {MEMTILE_BYTES} bytes")
        other = mem_total - l2_depth * a_staged * p.a_obj_bytes
        p.memtile_bytes[f"total of memory tiles (c,1), c > {first - 1} (no A)"] = other
        check(f"memory tiles (c,1), c > {first - 1}", other <= MEMTILE_BYTES, f"{other} of {MEMTILE_BYTES} bytes")
    else:
        check("memory tile", mem_total <= MEMTILE_BYTES, f"{mem_total} of {MEMTILE_BYTES} bytes")

    w_ch, a_ch = _shim_channel(layout, "w_l3l2"), _shim_channel(layout, "a_l3l2")
    c_ch = _shim_channel(layout, "c_l2l3")
    if pw > 1:  # m_split: W split over the cores, A broadcast
        w_core = Fifo("w_l2l1_<c>_<r>", "memtile(c,1) -> core(c,2+r), split", p.w_obj_bytes, 2, "core",
                      "memtile MM2S 1 per core (4), core S2MM 1", "shares the memtile buffers of w_l3l2")
        a_core = Fifo("a_l2l1_<c>", "memtile(c,1) -> 4 cores of column c, broadcast", p.a_obj_bytes, 2, "core",
                      "memtile MM2S 1 (one stream, fanned out by the switches), core S2MM 1",
                      "shares the memtile buffers of a_l3l2")
        w_note, a_note = "one object = the 4 cores' W tiles of one K step", ""
        c_note = "one object = the 4 cores' C tiles [r][t][64] (row tiles 4q + r)"
    else:  # n_split: W broadcast down the column, A split over the cores
        w_core = Fifo("w_l2l1_<c>", "memtile(c,1) -> 4 cores of column c, broadcast", p.w_obj_bytes, 2, "core",
                      "memtile MM2S 1 (one stream, fanned out by the switches), core S2MM 1",
                      "shares the memtile buffers of w_l3l2")
        a_core = Fifo("a_l2l1_<c>_<r>", "memtile(c,1) -> core(c,2+r), split", p.a_obj_bytes, 2, "core",
                      "memtile MM2S 1 per core (4), core S2MM 1", "shares the memtile buffers of a_l3l2")
        w_note, a_note = "one object = the row tile's W window of one K step", "one object = the 4 cores' A tiles of one K step"
        c_note = "one object = the 4 cores' C tiles [r][t][64] (token tiles 4g + r)"
    a_mem = Fifo("a_l3l2_<c>", "shim(c,0) -> memtile(c,1)", pa * p.a_obj_bytes, l2_depth, "memtile",
                 f"shim MM2S {a_ch}, memtile S2MM 1", a_note)
    if lay.a_rows:  # n_rows: as n_shared, with one A FIFO per core row r in column r
        a_mem = Fifo("a_l3l2_<r>", "shim(r,0) -> memtile(r,1), r < 4: one per core row", p.a_obj_bytes, l2_depth,
                     "memtile", f"shim (r,0) MM2S {a_ch}, memtile (r,1) S2MM 1",
                     "one object = token tile 4g + r's A tile of one K step; the other columns' shims and memory "
                     "tiles move no A")
        a_core = Fifo("a_l2l1_<r>", f"memtile(r,1) -> core(c,2+r) of all {cols} columns c, row broadcast",
                      p.a_obj_bytes, 2, "core",
                      f"memtile (r,1) MM2S 1, fanned out by the switches along core row r to its {cols} cores; "
                      "core S2MM 1", "shares the memory-tile buffers of a_l3l2_<r>")
    elif lay.a_shared:  # n_shared: as n_split, with one A FIFO for the array in column 0
        a_mem = Fifo("a_l3l2", "shim(0,0) -> memtile(0,1), one for the array", pa * p.a_obj_bytes, l2_depth,
                     "memtile", f"shim (0,0) MM2S {a_ch}, memtile (0,1) S2MM 1",
                     "one object = the 4 core rows' A tiles of one K step (token tiles 4g + r); "
                     "the other columns' shims and memory tiles move no A")
        a_core = Fifo("a_l2l1_<r>", f"memtile(0,1) -> core(c,2+r) of all {cols} columns c, split + row broadcast",
                      p.a_obj_bytes, 2, "core",
                      f"memtile (0,1) MM2S 1 per core row (4), each fanned out by the switches along the row "
                      f"to its {cols} cores; core S2MM 1", "shares the memory-tile buffers of a_l3l2")
    p.fifos = [
        Fifo("w_l3l2_<c>", "shim(c,0) -> memtile(c,1)", pw * p.w_obj_bytes, l2_depth, "memtile",
             f"shim MM2S {w_ch}, memtile S2MM 1", w_note),
        w_core,
        a_mem,
        a_core,
        Fifo("c_l1l2_<c>_<r>", "core(c,2+r) -> memtile(c,1), join", p.c_obj_bytes, p.c_depth, "core",
             "core MM2S 1, memtile S2MM 1 per core (4)"),
        Fifo("c_l2l3_<c>", "memtile(c,1) -> shim(c,0)", ROWS * p.c_obj_bytes, l2_depth, "memtile",
             f"memtile MM2S 1, shim S2MM {c_ch}", c_note),
    ]

    if lay.a_rows:  # columns 0-3's memory tiles and shims also carry one core row's A each
        p.channels = {
            "core (each)": {"S2MM": (2, CORE_S2MM, "W, A"), "MM2S": (1, CORE_MM2S, "C")},
            "memory tile (r,1), r < 4": {"S2MM": (1 + 1 + ROWS, MEMTILE_S2MM, "W in, A in, 4 x C in"),
                                         "MM2S": (1 + 1 + 1, MEMTILE_MM2S,
                                                  "W broadcast, A out (along core row r, to every column), C out")},
            "memory tile (c,1), c > 3": {"S2MM": (1 + ROWS, MEMTILE_S2MM, "W in, 4 x C in"),
                                         "MM2S": (1 + 1, MEMTILE_MM2S, "W broadcast, C out")},
            "shim (r,0), r < 4": {"MM2S": (2, SHIM_MM2S, "W, A (core row r's)"), "S2MM": (1, SHIM_S2MM, "C")},
            "shim (c,0), c > 3": {"MM2S": (1, SHIM_MM2S, "W"), "S2MM": (1, SHIM_S2MM, "C")},
        }
    elif lay.a_shared:  # column 0's memory tile and shim also carry the array's A; the others only W and C
        p.channels = {
            "core (each)": {"S2MM": (2, CORE_S2MM, "W, A"), "MM2S": (1, CORE_MM2S, "C")},
            "memory tile (0,1)": {"S2MM": (1 + 1 + ROWS, MEMTILE_S2MM, "W in, A in, 4 x C in"),
                                  "MM2S": (1 + ROWS + 1, MEMTILE_MM2S,
                                           "W broadcast, 4 x A out (one per core row, to every column), C out")},
            "memory tile (c,1), c > 0": {"S2MM": (1 + ROWS, MEMTILE_S2MM, "W in, 4 x C in"),
                                         "MM2S": (1 + 1, MEMTILE_MM2S, "W broadcast, C out")},
            "shim (0,0)": {"MM2S": (2, SHIM_MM2S, "W, A (the array's)"), "S2MM": (1, SHIM_S2MM, "C")},
            "shim (c,0), c > 0": {"MM2S": (1, SHIM_MM2S, "W"), "S2MM": (1, SHIM_S2MM, "C")},
        }
    else:
        p.channels = {
            "core (each)": {"S2MM": (2, CORE_S2MM, "W, A"), "MM2S": (1, CORE_MM2S, "C")},
            "memory tile (each column)": {"S2MM": (1 + 1 + ROWS, MEMTILE_S2MM, "W in, A in, 4 x C in"),
                                          "MM2S": (ROWS + 1 + 1, MEMTILE_MM2S,
                                                   "4 x W out, A broadcast, C out" if pw > 1 else "W broadcast, 4 x A out, C out")},
            "shim (each column)": {"MM2S": (2, SHIM_MM2S, "W, A"), "S2MM": (1, SHIM_S2MM, "C")},
        }
    for tile, dirs in p.channels.items():
        for d, (used, avail, _) in dirs.items():
            check(f"DMA channels {tile} {d}", used <= avail, f"{used} of {avail}")

    _plan_shape(p, chosen, check)
    _plan_core_program(p, check)
    return p


def _plan_core_program(p, check):
    """The RTP words of this invocation and the barrier every core passes once per invocation."""
    out_tiles = p.schedule["output tiles per core (RTP)"]
    words = {"contract": p.contract_index, "output tiles (largest of a core)": max(out_tiles, default=0),
             "K tiles": p.k_tiles, "layout version": RTP_LAYOUT_VERSION}
    # The lock's value after a core's pass: an equal acquire leaves the set value, the release adds to it.
    equal = BARRIER_ACQUIRE_MODE == "equal"
    after = (BARRIER_SET if equal else BARRIER_SET - BARRIER_ACQUIRE) + BARRIER_RELEASE
    p.core_program = {
        "RTP words": words,
        "barrier lock": _BARRIER["lock"],
        "sequence: barrier.set": BARRIER_SET,
        f"core: wait_for_value (acquire {BARRIER_ACQUIRE_MODE})": BARRIER_ACQUIRE,
        "core: release_with_value, after the RTP reads": BARRIER_RELEASE,
        "lock after a core's pass": after,
    }
    check("barrier: the core waits as IRON's wait_for_value does", equal,
          f"acquire mode {BARRIER_ACQUIRE_MODE!r} (wait_for_value is aie.use_lock Acquire: acquire_equal)")
    check("barrier: the sequence's set opens the core's wait", BARRIER_SET == BARRIER_ACQUIRE,
          f"set {BARRIER_SET}, wait_for_value {BARRIER_ACQUIRE}")
    check("barrier: released after the RTP words are read", BARRIER_RELEASE > 0 and after != BARRIER_ACQUIRE,
          f"release_with_value({BARRIER_RELEASE}) leaves the lock at {after}: " +
          ("the core's next pass waits for the next invocation's set" if BARRIER_RELEASE > 0 and after != BARRIER_ACQUIRE
           else "the core's next pass would not wait and would read this invocation's RTP words again"))
    check("barrier: lock values within the lock's range", 0 <= after <= LOCK_MAX_VALUE,
          f"{after} of 0..{LOCK_MAX_VALUE}")
    check("RTP words fit the core's int32 words", all(0 <= v <= RTP_WORD_MAX for v in words.values()),
          f"largest {max(words.values())} <= {RTP_WORD_MAX}")


def _plan_shape(p, chosen, check):
    """The shim transfers of one invocation of (m_tiles, n_tiles, k_tiles) and what they cost."""
    T = chosen.w_bytes()
    W = p.w_obj_bytes
    A = p.a_obj_bytes      # one A object
    P = p.a_parts          # A objects per K tile, consecutive in memory
    AK = A * P             # A per token tile and K tile
    tn = p.tile_n
    lay = LAYOUTS[p.layout]
    pw, pa = lay.w_parts, lay.a_parts

    # A step takes pw row tiles (m_split: a group of 4, one per core) by pa token tiles (n_split: a
    # group of 4, one per core).
    check(f"shape: M in whole groups of {pw} row tile{'s' if pw > 1 else ''}", p.m_tiles > 0 and p.m_tiles % pw == 0,
          f"m_tiles {p.m_tiles} (the memory tile splits and joins {pw} W tiles per object)")
    check(f"shape: N in whole groups of {pa} token tile{'s' if pa > 1 else ''}", p.n_tiles > 0 and p.n_tiles % pa == 0,
          f"n_tiles {p.n_tiles} (layout {p.layout}: {pa} A tiles per object)")
    check("shape: n_tiles, k_tiles positive", p.n_tiles > 0 and p.k_tiles > 0,
          f"n_tiles {p.n_tiles}, k_tiles {p.k_tiles}")
    check("shape: output row stride covers M", p.out_row_stride >= p.m_tiles * TILE_M,
          f"out_row_stride {p.out_row_stride} floats, M {p.m_tiles * TILE_M}")
    m_units = max(p.m_tiles // pw, 0)
    n_units = max(p.n_tiles // pa, 0)
    rounds = (m_units + p.cols - 1) // p.cols if m_units else 0
    # Rounds each column works: its own row tiles, or (n_shared) every round, since every column takes
    # every A object: a column past the last row tile recomputes it (unit_of_column).
    col_rounds = [rounds if lay.a_shared else rounds_of_column(c, p.cols, m_units) for c in range(p.cols)]

    # K runs longer than the iteration limit are sent as several transfers per step (the strided A
    # transfer of n_split / n_shared iterates over K tiles x A parts; a linear one is one iteration).
    a_iter = P if pa > 1 and not lay.a_rows else 1
    k_chunk = min(p.k_tiles, BD_ITER_MAX // a_iter) if p.k_tiles > 0 else 1
    n_chunks = (p.k_tiles + k_chunk - 1) // k_chunk if p.k_tiles > 0 else 0
    bds_per_step = 2 * n_chunks + 1  # W and A per chunk, one C drain (n_shared: column 0's; the others W and C)
    # Steps queued before the oldest is awaited (the host's build_matmul_sequence): 2, or 1 where two
    # steps' K chunks would overfill a fill channel's task queue.
    in_flight = max(1, min(len(DATAFLOW["shim"]["bd_slots"]), SHIM_QUEUE_DEPTH // max(n_chunks, 1)))
    p.in_flight = in_flight
    steps = rounds * n_units
    p.schedule = {
        "layout": f"{p.layout}: {lay.about}",
        "row tiles x token tiles per step": f"{pw} x {pa}",
        "rounds (j)": rounds,
        "steps (j, token unit) in order": steps,
        "active columns in the last round": (p.cols if lay.a_shared else m_units - (rounds - 1) * p.cols) if rounds else 0,
    }
    if lay.a_shared:
        p.schedule["row tile of column c in round j"] = "min(j * cols + c, m_tiles - 1)"
        p.schedule["duplicate row tiles (last round, recomputing row tile m_tiles - 1)"] = \
            rounds * p.cols - m_units if rounds else 0
    p.schedule.update({
        "K chunks per step": n_chunks,
        "K tiles per chunk": k_chunk,
        "shim BDs per column per step": bds_per_step,
        "steps in flight": in_flight,
        "output tiles per core (RTP)": [n_units * col_rounds[c] for c in range(p.cols)],
    })
    check(f"shim BDs in flight ({in_flight} steps)", in_flight * bds_per_step <= SHIM_BDS,
          f"{in_flight * bds_per_step} of {SHIM_BDS} (K up to {3 * (BD_ITER_MAX // a_iter)} tiles)")
    check("K chunks per step: the BD slots' W and A ids", n_chunks <= DATAFLOW["shim"]["max_k_chunks"],
          f"{n_chunks} <= {DATAFLOW['shim']['max_k_chunks']}")
    check(f"fill tasks queued per channel ({in_flight} steps of {n_chunks} K chunks)",
          in_flight * n_chunks <= SHIM_QUEUE_DEPTH, f"{in_flight * n_chunks} <= {SHIM_QUEUE_DEPTH}")

    # W: one window of W (= family max) bytes per tile, d1 x d0 words, for the step's pw row tiles, for k
    # in the chunk. A window longer than the tile reads into the next tile: the weights buffer must stay
    # readable for (W - T) bytes after its last tile (the tensor below includes them).
    win_words = W // 4
    d0 = word_chunk(win_words)
    w_xfer = Transfer("W fill, per column per (step, K chunk)",
                      [k_chunk, pw, win_words // d0, d0],
                      [T // 4, p.k_tiles * T // 4, d0, 1], linear=False)
    a_what = "A fill, columns 0-3 (column r: token tile 4g + r), per (step, K chunk)" if lay.a_rows else \
        "A fill, column 0 only (the array's A), per (step, K chunk)" if lay.a_shared else \
        "A fill, per column per (step, K chunk)"
    if pa == 1 or lay.a_rows:  # one token tile: its K run is contiguous (its A parts included)
        a_xfer = Transfer(a_what, [1, 1, 1, k_chunk * AK // 4], [0, 0, 0, 1], linear=True)
    else:  # per K part of each K tile, the step's pa token tiles' A objects back to back
        a_words = A // 4
        ad0 = word_chunk(a_words)
        a_xfer = Transfer(a_what, [k_chunk * P, pa, a_words // ad0, ad0],
                          [A // 4, p.k_tiles * AK // 4, ad0, 1], linear=False)
    if pw > 1:  # C object [r][t][64]: part r is row tile r of the group
        c_xfer = Transfer("C drain, per column per step", [1, ROWS, tn, TILE_M], [0, TILE_M, p.out_row_stride, 1],
                          linear=False)
    else:  # part r is token tile r of the group: pa x TN consecutive tokens of one row tile
        c_xfer = Transfer("C drain, per column per step", [1, 1, pa * tn, TILE_M], [0, 0, p.out_row_stride, 1],
                          linear=False)
    p.transfers = [w_xfer, a_xfer, c_xfer]
    for t in p.transfers:
        if t.linear:
            continue
        s3, s2, s1, s0 = t.sizes
        st3, st2, st1, _ = t.strides
        check(f"{t.what}: d0 size", s0 <= BD_WRAP_MAX, f"{s0} <= {BD_WRAP_MAX} words")
        check(f"{t.what}: d1 size", s1 <= BD_WRAP_MAX, f"{s1} <= {BD_WRAP_MAX}")
        check(f"{t.what}: iteration size", s3 <= BD_ITER_MAX, f"{s3} <= {BD_ITER_MAX}")
        check(f"{t.what}: strides", max(st3, st2, st1) <= BD_STRIDE_MAX,
              f"max {max(st3, st2, st1)} <= {BD_STRIDE_MAX} words")
    check("W window covers the tile", W >= T and W % 4 == 0 and T % 4 == 0, f"window {W}, tile {T} bytes")

    # Operand tensors of the runtime sequence (bytes; C in floats), in the order of the manifest's args.
    p.tensors = {
        "weights (bo0, group 3)": p.m_tiles * p.k_tiles * T + (W - T),
        "activations (bo1, group 4)": p.n_tiles * p.k_tiles * AK,
        "output floats (bo2, group 5)": (p.n_tiles * tn - 1) * p.out_row_stride + p.m_tiles * TILE_M,
        "params words (bo3, group 6)": PARAMS_WORDS,
    }

    # DRAM traffic: the bytes of every shim transfer the sequence queues (what the runtime's stream
    # builder counts from its BDs and the timing model charges: src/sim/design-traffic.h), per column.
    # Per step and column: the W and A fills of every K chunk (a chunk's transfer covers k_chunk K tiles
    # in its outermost size, so one K tile's share is the rest), and one C drain. n_shared: every column
    # every round (a duplicate row tile's W fill and C drain are moved bytes too), A only on column 0.
    w_step = p.k_tiles * 4 * words(w_xfer.sizes[1:])
    a_step = p.k_tiles * 4 * words(a_xfer.sizes) // k_chunk
    c_step = 4 * words(c_xfer.sizes)
    col_w, col_a, col_c = [0] * p.cols, [0] * p.cols, [0] * p.cols
    for c in range(p.cols):
        steps_c = col_rounds[c] * n_units
        col_w[c], col_c[c] = steps_c * w_step, steps_c * c_step
        if lay.a_rows:  # column r < 4: core row r's token tile, every step
            col_a[c] = steps * a_step if c < ROWS else 0
        else:
            col_a[c] = (steps if c == 0 else 0) * a_step if lay.a_shared else steps_c * a_step
    read_w, read_a, written_c = sum(col_w), sum(col_a), sum(col_c)
    w_tiles = read_w // W if W else 0
    useful_w = w_tiles * T
    p.traffic = {
        "W read (bytes)": read_w,
        "W of the ABI (bytes)": useful_w,
        "W over-fetch (%)": round(100.0 * (read_w - useful_w) / useful_w, 1) if useful_w else 0.0,
        "W re-read per token tile": w_tiles // (p.m_tiles * p.k_tiles) if p.m_tiles * p.k_tiles else 0,
        "A read (bytes)": read_a,
        "C written (bytes)": written_c,
        "busiest shim channel (bytes)": max(col_w + col_a + col_c),
    }


def words(sizes):
    n = 1
    for x in sizes:
        n *= x
    return n


# ---------------------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------------------
def kib(n):
    return f"{n} B ({n / 1024:.2f} KiB)"


def print_plan_text(p, out=sys.stdout):
    w = out.write
    mode = "exact (this contract only)" if p.exact else "family (buffers sized to the family's largest tile)"
    w(f"design: whole-array matmul, family {p.family}, TN {p.tile_n}, {p.cols} column(s) x {ROWS} rows, {p.dev}\n")
    w(f"xclbin mode: {mode}; layout {p.layout} ({LAYOUTS[p.layout].about})\n")
    w(f"runtime sequence for: {p.contract} (contract RTP = {p.contract_index}), "
      f"m_tiles {p.m_tiles}, n_tiles {p.n_tiles}, k_tiles {p.k_tiles}, out_row_stride {p.out_row_stride}\n\n")

    w("tile bytes (ABI, aie/include/xdna_aie/matmul_tiles.h):\n")
    for c in family_contracts(p.family):
        if p.tile_n not in c.tiles:
            w(f"  {c.name:14s} W {c.w_bytes():6d}  no program at TN={p.tile_n} (not in this xclbin)\n")
            continue
        parts = f" x {c.a_parts(p.tile_n)} K parts" if c.a_parts(p.tile_n) > 1 else ""
        w(f"  {c.name:14s} W {c.w_bytes():6d}  A(TN={p.tile_n}) {c.a_bytes(p.tile_n):6d}{parts}  "
          f"C {c_tile_bytes(p.tile_n):6d}  TK {c.tile_k}\n")
    w(f"  FIFO objects: W {p.w_obj_bytes}, A {p.a_obj_bytes}, C {p.c_obj_bytes}\n\n")

    w("FIFOs (per column c, row r; n_rows' A FIFOs: one per core row):\n" if LAYOUTS[p.layout].a_rows
      else "FIFOs (per column c, row r; n_shared's A FIFOs: one for the array):\n" if LAYOUTS[p.layout].a_shared
      else "FIFOs (per column c, row r):\n")
    for f in p.fifos:
        w(f"  {f.name:16s} {f.path}\n")
        w(f"  {'':16s} object {f.obj_bytes} B x depth {f.depth} = {f.bytes} B in the {f.home}; {f.channels}\n")
        if f.note:
            w(f"  {'':16s} {f.note}\n")
    w("\ncore data memory (each of the cores):\n")
    for k, v in p.core_bytes.items():
        w(f"  {k:32s} {kib(v)}\n")
    if LAYOUTS[p.layout].a_rows:
        w("memory tiles (r,1), r < 4, the busiest (each stages one core row's A):\n")
    elif LAYOUTS[p.layout].a_shared:
        w("memory tile (0,1), the busiest (it alone stages the array's A):\n")
    else:
        w("memory tile (each column):\n")
    for k, v in p.memtile_bytes.items():
        w(f"  {k:32s} {kib(v)}\n")
    w("\nDMA channels:\n")
    for tile, dirs in p.channels.items():
        for d, (used, avail, what) in dirs.items():
            w(f"  {tile:26s} {d}: {used} of {avail} ({what})\n")
    w("\nshim transfers (sizes / strides outermost first, 32-bit words):\n")
    for t in p.transfers:
        kind = "linear" if t.linear else "4-D"
        w(f"  {t.what}: sizes {t.sizes} strides {t.strides} ({kind})\n")
    w("schedule:\n")
    for k, v in p.schedule.items():
        w(f"  {k}: {v}\n")
    w("runtime sequence operands:\n")
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
    d["checks"] = [{"check": w, "ok": ok, "detail": det} for w, ok, det in p.checks]
    d["limits"] = {"core_data_bytes": CORE_DATA_BYTES, "memtile_bytes": MEMTILE_BYTES, "rows": ROWS}
    return d


# ---------------------------------------------------------------------------------------------------
# MLIR emission (needs mlir-aie >= 1.4 and numpy)
# ---------------------------------------------------------------------------------------------------
def emit_mlir(p, kernel_object):
    try:
        import numpy as np
        import aie.iron.device as iron_devices
        from aie.helpers.dialects.scf import else_, if_
        from aie.helpers.taplib import TensorAccessPattern
        from aie.iron import (Buffer, Kernel, ObjectFifo, Program, Runtime, TaskGroup, Worker,
                              WorkerRuntimeBarrier)
        from aie.iron.controlflow import range_
        from aie.iron.device import Tile
    except ImportError as e:
        raise PlanError(f"emitting MLIR needs mlir-aie >= 1.4 (python package 'aie') and numpy: {e}")

    # The kernels this xclbin links: the family's contracts with a program at this token tile (no
    # mm_q6_K_bfp16_n64), or the exact xclbin's one.
    contracts = [c for c in family_contracts(p.family)
                 if (not p.exact or c.name == p.contract) and p.tile_n in c.tiles]
    chosen = next(c for c in family_contracts(p.family) if c.name == p.contract)
    tn, cols = p.tile_n, p.cols
    T = chosen.w_bytes()
    W, A, C = p.w_obj_bytes, p.a_obj_bytes, p.c_obj_bytes
    P = p.a_parts
    lay = LAYOUTS[p.layout]
    pw, pa = lay.w_parts, lay.a_parts
    m_units = p.m_tiles // pw

    i8, f32, i32 = np.dtype[np.int8], np.dtype[np.float32], np.dtype[np.int32]
    w_l1_ty = np.ndarray[(W,), i8]
    w_l2_ty = np.ndarray[(pw * W,), i8]
    a_ty = np.ndarray[(A,), i8]
    a_l2_ty = np.ndarray[(pa * A,), i8]
    c_l1_ty = np.ndarray[(C // 4,), f32]
    c_l2_ty = np.ndarray[(ROWS * C // 4,), f32]
    rtp_ty = np.ndarray[(RTP_WORDS,), i32]
    w_len = p.tensors["weights (bo0, group 3)"]
    a_len = p.tensors["activations (bo1, group 4)"]
    c_len = p.tensors["output floats (bo2, group 5)"]
    W_ty = np.ndarray[(w_len,), i8]
    A_ty = np.ndarray[(a_len,), i8]
    C_ty = np.ndarray[(c_len,), f32]
    P_ty = np.ndarray[(PARAMS_WORDS,), i32]

    # The kernels take raw pointers (kernel ABI), so declaring them on the family-sized buffers is exact
    # for every contract: a kernel reads only its own tile's bytes from the start of the buffer.
    zero = Kernel(f"mm_zero_c_n{tn}", kernel_object, [c_l1_ty])
    # Where A comes in K parts the kernel also takes the part's index (mm_kquant_bfp16.cc, n64).
    mm_args = [w_l1_ty, a_ty, c_l1_ty] + ([np.int32] if P > 1 else [])
    mms = [Kernel(f"{c.symbol}_n{tn}", kernel_object, mm_args) for c in contracts]
    index_of = {c.name: i for i, c in enumerate(family_contracts(p.family))}
    selectors = [index_of[c.name] for c in contracts]

    def dispatch(kernels, sel, args, i=0):
        # The contract RTP selects the kernel: a chain of compares, a few scalar cycles per K tile.
        if i == len(kernels) - 1:
            kernels[i](*args)
            return
        with if_(sel == selectors[i]) as taken:
            kernels[i](*args)
        with else_(taken):
            dispatch(kernels, sel, args, i + 1)

    def core_fn(w_in, a_in, c_out, rtp, barrier, zero_k, *kernels):
        # Once per invocation: the instruction stream writes the RTP words, then sets the barrier.
        # wait_for_value is aie.use_lock(Acquire), an acquire_equal: it waits for the value and leaves it
        # in the lock (mlir-aie python/iron/worker.py, WorkerRuntimeBarrier; UG1583 acquire_equal). The
        # Worker loops over this body, so without the release below the next pass would not wait and
        # would read these words again for the next invocation (amd/IRON iron/operators/flm/gemm/README.md,
        # "Runtime parameters"). Releasing before the work is safe: the stream sets the barrier again
        # only after it has drained this invocation's C.
        barrier.wait_for_value(BARRIER_ACQUIRE)
        sel = rtp[RTP_CONTRACT]
        out_tiles = rtp[RTP_OUT_TILES]
        k_tiles = rtp[RTP_K_TILES]
        barrier.release_with_value(BARRIER_RELEASE)
        for _ in range_(out_tiles):
            c = c_out.acquire(1)
            zero_k(c)
            for _ in range_(k_tiles):
                w = w_in.acquire(1)
                if P == 1:
                    a = a_in.acquire(1)
                    dispatch(kernels, sel, (w, a, c))
                    a_in.release(1)
                else:
                    # A in K parts: the same W with each part's A object, the part index a constant of
                    # the unrolled loop.
                    for part in range(P):
                        a = a_in.acquire(1)
                        dispatch(kernels, sel, (w, a, c, part))
                        a_in.release(1)
                w_in.release(1)
            c_out.release(1)

    workers, rtps, barriers = [], [], []
    w_prods, a_prods, c_conses = [], [], []
    if lay.a_shared and not lay.a_rows:
        # n_shared: one A FIFO for the array (dataflow.json "shared_by_columns"), from column 0's shim
        # (MM2S 1) into memory tile (0, 1), split there into one FIFO per core row: a_shared_parts[r] is
        # sent on memory tile (0, 1)'s MM2S channel r and consumed by core (c, 2 + r) of every column c
        # (one .cons() per core below, so IRON builds a broadcast FIFO with `cols` consumers, routed along
        # the row by the switches: the A panels of mlir-aie's programming_examples/basic/
        # matrix_multiplication/whole_array, fed here from one memory tile instead of one per row).
        # Unverified against mlir-aie, like the rest of this function: in particular whether its router
        # finds 4 row-wide fan-outs from one memory tile next to the 8 columns' W and C routes.
        a_shared_l3l2 = ObjectFifo(a_l2_ty, name="a_l3l2", depth=p.l2_depth)
        a_shared_parts = a_shared_l3l2.cons().split([r * A for r in range(ROWS)], obj_types=[a_ty] * ROWS,
                                                    names=[f"a_l2l1_{r}" for r in range(ROWS)],
                                                    depths=[2] * ROWS, tile=Tile(0, 1))
        a_prods.append(a_shared_l3l2.prod(tile=Tile(0, 0)))
    if lay.a_rows:
        # n_rows: one A FIFO per core row r, from column r's shim (MM2S 1) into memory tile (r, 1),
        # forwarded on one MM2S channel and consumed by core (c, 2 + r) of every column c (a broadcast
        # with `cols` consumers, routed along the row): the A panels of mlir-aie's programming_examples/
        # basic/matrix_multiplication/whole_array, one memory tile per row. Unverified against mlir-aie.
        a_row_l3l2 = [ObjectFifo(a_ty, name=f"a_l3l2_{r}", depth=p.l2_depth) for r in range(ROWS)]
        a_row_l2l1 = [a_row_l3l2[r].cons().forward(obj_type=a_ty, depth=2, name=f"a_l2l1_{r}", tile=Tile(r, 1))
                      for r in range(ROWS)]
        a_prods.extend(a_row_l3l2[r].prod(tile=Tile(r, 0)) for r in range(ROWS))
    for col in range(cols):
        # The layout's memory-tile links (dataflow.json "layouts"): the split operand's object holds one
        # part per core row, each sent on its own MM2S channel; the other is one stream broadcast to the
        # column's 4 cores by the switches.
        w_l3l2 = ObjectFifo(w_l2_ty, name=f"w_l3l2_{col}", depth=p.l2_depth)
        if lay.a_rows:  # n_rows: W as n_split, A from the row's FIFO above
            w_l2l1 = w_l3l2.cons().forward(obj_type=w_l1_ty, depth=2, name=f"w_l2l1_{col}", tile=Tile(col, 1))
            w_core, a_core = (lambda r: w_l2l1.cons()), (lambda r: a_row_l2l1[r].cons())
        elif lay.a_shared:  # n_shared: W as n_split, A from the array's FIFO above
            w_l2l1 = w_l3l2.cons().forward(obj_type=w_l1_ty, depth=2, name=f"w_l2l1_{col}", tile=Tile(col, 1))
            w_core, a_core = (lambda r: w_l2l1.cons()), (lambda r: a_shared_parts[r].cons())
        elif pw > 1:  # m_split
            a_l3l2 = ObjectFifo(a_l2_ty, name=f"a_l3l2_{col}", depth=p.l2_depth)
            w_parts = w_l3l2.cons().split([r * W for r in range(ROWS)], obj_types=[w_l1_ty] * ROWS,
                                          names=[f"w_l2l1_{col}_{r}" for r in range(ROWS)], depths=[2] * ROWS,
                                          tile=Tile(col, 1))
            a_l2l1 = a_l3l2.cons().forward(obj_type=a_ty, depth=2, name=f"a_l2l1_{col}", tile=Tile(col, 1))
            w_core, a_core = (lambda r: w_parts[r].cons()), (lambda r: a_l2l1.cons())
        else:  # n_split
            a_l3l2 = ObjectFifo(a_l2_ty, name=f"a_l3l2_{col}", depth=p.l2_depth)
            w_l2l1 = w_l3l2.cons().forward(obj_type=w_l1_ty, depth=2, name=f"w_l2l1_{col}", tile=Tile(col, 1))
            a_parts = a_l3l2.cons().split([r * A for r in range(ROWS)], obj_types=[a_ty] * ROWS,
                                          names=[f"a_l2l1_{col}_{r}" for r in range(ROWS)], depths=[2] * ROWS,
                                          tile=Tile(col, 1))
            w_core, a_core = (lambda r: w_l2l1.cons()), (lambda r: a_parts[r].cons())
        c_l2l3 = ObjectFifo(c_l2_ty, name=f"c_l2l3_{col}", depth=p.l2_depth)
        c_parts = c_l2l3.prod().join([r * (C // 4) for r in range(ROWS)], obj_types=[c_l1_ty] * ROWS,
                                     names=[f"c_l1l2_{col}_{r}" for r in range(ROWS)],
                                     depths=[p.c_depth] * ROWS, tile=Tile(col, 1))
        w_prods.append(w_l3l2.prod(tile=Tile(col, 0)))
        if not lay.a_shared:
            a_prods.append(a_l3l2.prod(tile=Tile(col, 0)))
        c_conses.append(c_l2l3.cons(tile=Tile(col, 0)))
        for r in range(ROWS):
            rtp = Buffer(rtp_ty, name=f"rtp_{col}_{r}", initial_value=np.zeros(RTP_WORDS, dtype=np.int32),
                         use_write_rtp=True)
            barrier = WorkerRuntimeBarrier()
            rtps.append((col, rtp))
            barriers.append(barrier)
            workers.append(Worker(core_fn, [w_core(r), a_core(r), c_parts[r].prod(), rtp, barrier,
                                            zero, *mms],
                                  tile=Tile(col, 2 + r), stack_size=p.stack_bytes))

    (w_sz, w_st), (a_sz, a_st), (c_sz, c_st) = [(t.sizes, t.strides) for t in p.transfers]
    k_chunk = p.schedule["K tiles per chunk"]
    out_tiles = p.schedule["output tiles per core (RTP)"]

    def bytes_tap(tensor_len, offset, sizes_words, strides_words):
        # int8 tensors: the taps count bytes; the innermost run and every stride stay whole words.
        return TensorAccessPattern((tensor_len,), offset, [sizes_words[0], sizes_words[1], sizes_words[2],
                                                           sizes_words[3] * 4],
                                   [strides_words[0] * 4, strides_words[1] * 4, strides_words[2] * 4, 1])

    def sequence(Wt, At, Ct, Pt, w_hs, a_hs, c_hs):
        for (col, rtp), barrier in zip(rtps, barriers):
            rtp[RTP_CONTRACT] = p.contract_index
            rtp[RTP_OUT_TILES] = out_tiles[col]
            rtp[RTP_K_TILES] = p.k_tiles
            rtp[RTP_VERSION] = RTP_LAYOUT_VERSION  # names the layout to whoever reads core memory
            barrier.set(BARRIER_SET)  # after the words: the core reads them once the lock holds this value
        pending = []
        for j in range(p.schedule["rounds (j)"]):
            for u in range(p.n_tiles // pa):
                group = TaskGroup()
                for col in range(cols):
                    # n_shared: every column has a row tile every round (it takes every A object); past
                    # the last row tile it recomputes that one, and its drain rewrites the same values.
                    q = unit_of_column(j, col, cols, m_units, lay.a_shared)
                    if q is None:
                        continue
                    m0, n0 = pw * q, pa * u  # the step's first row tile and first token tile
                    for k0 in range(0, p.k_tiles, k_chunk):
                        kc = min(k_chunk, p.k_tiles - k0)
                        w_off = (m0 * p.k_tiles + k0) * T
                        w_hs[col].fill(Wt, tap=bytes_tap(w_len, w_off, [kc] + w_sz[1:], w_st),
                                       group=group)
                        if lay.a_shared and (col >= ROWS if lay.a_rows else col != 0):
                            continue  # n_shared: the array's A from column 0's shim; n_rows: row r's from column r's
                        a_tile = n0 + (col if lay.a_rows else 0)
                        a_off = (a_tile * p.k_tiles + k0) * A * P
                        a_sizes = [1, 1, 1, kc * A * P // 4] if pa == 1 or lay.a_rows else [kc * P] + a_sz[1:]
                        a_hs[col].fill(At, tap=bytes_tap(a_len, a_off, a_sizes, a_st), group=group)
                    c_off = n0 * tn * p.out_row_stride + m0 * TILE_M
                    c_hs[col].drain(Ct, tap=TensorAccessPattern((c_len,), c_off, c_sz, c_st),
                                    wait=True, group=group)
                # p.in_flight steps in flight (2: the next step's W streams while this one's C drains;
                # 1 where two steps' K chunks would overfill a fill channel's task queue).
                pending.append(group)
                if len(pending) >= p.in_flight:
                    pending.pop(0).finish()
        for g in pending:
            g.finish()

    rt = Runtime(sequence, [W_ty, A_ty, C_ty, P_ty, w_prods, a_prods, c_conses])
    device = iron_devices.NPU2() if cols == MAX_COLS else getattr(iron_devices, f"NPU2Col{cols}")()
    return Program(device, rt, workers=workers).resolve_program()


# ---------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------
def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Whole-array matmul design for XDNA2 (NPU2): prints the data-movement plan, or emits "
                    "MLIR with mlir-aie >= 1.4 (IRON).")
    ap.add_argument("--family", required=True, choices=sorted(FAMILIES))
    ap.add_argument("--tile-n", type=int, choices=[4, 32, 64], default=32, help="token tile TN (default 32)")
    ap.add_argument("--cols", type=int, default=MAX_COLS, help=f"array columns, 1..{MAX_COLS} (default {MAX_COLS})")
    ap.add_argument("--dev", default="npu2", choices=["npu2"])
    ap.add_argument("--contract", help="contract whose instruction stream to emit (default: the family's first)")
    ap.add_argument("--layout", default=DEFAULT_LAYOUT, choices=sorted(LAYOUTS),
                    help=f"how a step's work lies over a column's cores, i.e. which xclbin (default {DEFAULT_LAYOUT}): "
                         "m_split (4 row tiles x 1 token tile, W split, A broadcast), n_split (1 row tile x 4 "
                         "token tiles, W broadcast, A split), n_shared (n_split with A read once for the whole "
                         "array and fanned out along the core rows; --cols 8 only) or n_rows (n_shared with core row "
                         "r's A from column r's shim and memory tile; --cols 8 only); the timing model picks the "
                         "faster per shape")
    ap.add_argument("--exact", action="store_true",
                    help="size the W buffers to this contract's tile: an xclbin for this contract only")
    ap.add_argument("--m-tiles", type=int, default=64, help="weight row tiles of 64 (default 64: M = 4096)")
    ap.add_argument("--n-tiles", type=int, default=1, help="token tiles of TN (default 1)")
    ap.add_argument("--k-tiles", type=int, help="K tiles of TK (default: K = 4096)")
    ap.add_argument("--out-row-stride", type=int, help="floats between tokens in the output (default M)")
    ap.add_argument("--l2-depth", type=int, default=DATAFLOW["depths"]["l2"],
                    help=f"memory-tile FIFO depth (default {DATAFLOW['depths']['l2']})")
    ap.add_argument("--stack-bytes", type=int,
                    help="core stack (default: the family's kernel_stack at --tile-n in dataflow.json)")
    ap.add_argument("--kernel-data-bytes", type=int, default=DATAFLOW["core_budget"]["kernel_data_bytes"],
                    help="core memory reserved for the kernels' static data (default from dataflow.json)")
    ap.add_argument("--kernel-object", help="object file of the core program (default xdna_mm_<family>.o)")
    ap.add_argument("--abi-header", default=DEFAULT_ABI_HEADER, help="the tile ABI header to check against")
    ap.add_argument("--print-plan", action="store_true", help="print the data-movement plan (no mlir-aie needed)")
    ap.add_argument("--format", choices=["text", "json"], default="text", help="plan format")
    ap.add_argument("--list-contracts", action="store_true",
                    help="print 'contract symbol tile_k source tiles' per contract of the family (tiles: the "
                         "token tiles it has a program for, comma-separated)")
    ap.add_argument("--list-tiles", action="store_true", help="print the token tiles the family has a program for")
    ap.add_argument("-o", "--output", help="write the MLIR here (default stdout)")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.list_tiles:
        print(" ".join(str(tn) for tn in family_tiles(args.family)))
        return 0
    if args.tile_n not in family_tiles(args.family):
        print(f"family {args.family} has no core program for token tile {args.tile_n} "
              f"(it has {family_tiles(args.family)})", file=sys.stderr)
        return 2
    if args.list_contracts:
        source = FAMILIES[args.family][0]
        for c in family_contracts(args.family):
            print(f"{c.name} {c.symbol} {c.tile_k} {source} {','.join(str(t) for t in c.tiles)}")
        return 0
    try:
        plan = make_plan(args.family, args.tile_n, args.cols, args.dev, args.contract, args.exact, args.m_tiles,
                         args.n_tiles, args.k_tiles, args.out_row_stride, args.stack_bytes,
                         args.kernel_data_bytes, args.l2_depth, args.abi_header, args.layout)
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
        module = emit_mlir(plan, args.kernel_object or f"xdna_mm_{args.family}.o")
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
