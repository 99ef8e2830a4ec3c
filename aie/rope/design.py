#!/usr/bin/env python3
"""The "rope" design for XDNA2 (NPU2, AIE2P): ROPE over fp32 head rows, the IRON program of its
data-movement description (aie/rope/dataflow.json).

    y[t][h] = rot(x[t][h]) by the angles of token t's position      family "norm": rope_norm_f32
                                                                     family "neox": rope_neox_f32
    (aie/rope/kernels/rope.cc: rope_<mode>_f32(x, cs, y, n_dims, ne0), one head row per call)

What the program is, all of it read from the description (--dataflow), the one the host's stream builder
(src/runtime/rope-sequence.cpp) and the simulator's DMA interpreter read too; no number of the data
movement is written here:
  - Families ("norm", "neox"), one program each, one xclbin per family and head row length (the tile, ne0
    fp32 values: the numeric keys of the family's core_budget.kernel_stack, 32 to 512). A head row and its
    token's angle row are one object each. n_dims, the rotated dims, is an RTP word, so one xclbin serves
    every rotation its row length takes (xdna_aie::rope_row_fits, aie/include/xdna_aie/rope_tiles.h: a
    multiple of 32 from dim 0, at most the row, the copied rest a multiple of 16, rows of at most 512).
  - Per column c (shim (c, shim_row), memory tile (c, memtile_row), one core (c, first_core_row)): the
    shim's MM2S channels stream x and the angle rows cs into memory-tile FIFOs of one-row objects, each
    handed on to the core (a split of one part); the core writes each rotated head row into y's FIFO,
    joined in the memory tile and drained by the shim's S2MM channel.
  - The angle rows are an operand the host writes at submission (.host_written "cs"): per token the row
    of its position in the rope configuration's angle table (cos of the n_dims / 2 angles, then their sin,
    zeros to the row's length), one row per token in token order. The core has no vector sin or cos, and a
    table of every position in device memory would take 64 MB per configuration at 128k positions; so the
    stream never depends on the positions and is reused across tokens.
  - The work, as the host deals it (the rows designs' grid, src/runtime/rows-sequence.h rows_grid): the
    columns take R token blocks x S segments of each token's heads, R = min(tokens, columns), S = 1 if
    tokens >= columns else max(1, min(heads, columns // tokens)); the blocks (and segments) differ by at
    most one, the first ones larger (block_first / block_count). Column c takes token block c // S and
    head segment c % S. So a decode token's 32 query heads go 4 to each of 8 columns, and a prefill
    ubatch's tokens go to the columns in blocks, every head of a token on one column.
  - Per column and step (at most HOST_TOKENS_PER_STEP of its tokens, the host's kRowsPerStep), on the
    BD ids of the step's slot (shim.bd_slots[step % slots]), three tasks in this order: x over the
    step's tokens x the segment's heads (a 3-D pattern, innermost first: the head row, the heads at
    their stride, the tokens at theirs, so views with gaps and the K of a fused QKV row need no copy);
    cs over the step's angle rows (the host's rows_bd: ne0 values, one chunk, the rows ne0 apart); y like
    x at y's strides, pushed with the token the stream syncs on. After every column's tasks of step k the
    stream syncs on step k - 1's tokens (one per column that had that step), and on the last step's at
    the end: two steps in flight (HOST_STEPS_IN_FLIGHT) whatever the description says, so the plan
    checks that the description says two as well. Before any step, per used column's core: its RTP
    words (a block write at rtp_core_address), then the barrier lock's value.
  - The core program, per pass: wait on the barrier (IRON WorkerRuntimeBarrier, acquire_equal), read the
    RTP words (contract, tokens, heads, n_dims, version), release the barrier; then per token: acquire cs;
    per head: acquire x and y, one kernel call (x, cs, y, n_dims the word, ne0 the tile), release x and y;
    release cs. The core holds a token's angle row for all of its heads.
  - A runtime sequence for one invocation shape (--tokens, --heads, --ne0, --n-dims, the strides, --cols;
    n_dims by default the most rotated dims the row takes, 64 of 80: an RTP word, it changes no xclbin).
    The host builds the real streams itself (src/runtime/rope-sequence.cpp), so only the xclbin of a
    build is used; this sequence is the host's schedule (the same grid, steps, RTP words and DRAM
    traffic) in IRON's words (IRON picks its own BD ids and shim channels).

`--print-plan` prints the plan and checks it against the AIE2P limits: core data memory (the core FIFOs,
the RTP words, the kernel stack), memory-tile memory, the DMA channels of cores, memory tiles and shims,
stream-switch ports, the kernels' signature and loop-count hint (read from their source), the family's
tiles against rope_row_fits, the RTP words, the barrier protocol, the BD slots and ids, every BD of the
invocation (d0 and d1 wraps, strides, length), the shim's task queues and BD reuse (the stream replayed),
and the strides of x and y as the host checks them. It needs only a bare Python 3 (no numpy, no
mlir-aie), so CI can check the plan (tests/aie/check_design_rope.sh). Exit status: 0 when every check
passes, 1 when one fails (a plan with a failed check is not emitted), 2 for a shape or description the
design refuses (the reason on stderr): no xclbin for the row length, rotated dims the program does not
take, no tokens or heads, a description of another movement. Without --print-plan the IRON program is
emitted (mlir-aie >= 1.4: callback Runtime, TaskGroup, handle.fill/drain, Buffer RTPs,
WorkerRuntimeBarrier, as ../rms_norm/design.py).

Status, plainly: the plan's numbers are checked against a recomputation written apart from this script
(tests/aie/rope_plan_verify.py: the grid, steps, every BD's id, offset and pattern, the stream of RTP
writes, pushes and syncs, replayed through the shim queues and element by element into the core program
and back), and a few shapes against the numbers the host's own test expects
(tests/kernels/test_rope_stream.cpp ColumnsStepsCallsAndBytesAreTheDesigns). They were compared with
src/runtime/rope-sequence.cpp by reading it, not by running it beside this script. The IRON program
(emit_mlir) has only been run on stand-ins of IRON's classes (tests/aie/rope_iron_check.py, on
tests/aie/check_barrier.py's; among its shapes the sample every xclbin would be emitted with, 64 tokens of
8 heads at each family and row length). Never run by the real mlir-aie python package, never compiled by aiecc,
never linked with Peano's object of rope.cc (never built with Peano here), never run on an NPU. In
particular unverified: an object acquired in an outer range_ loop (cs) held across an inner one whose
bound is another RTP word (the heads), an RTP word passed straight to a kernel's int32 argument, the
split and join of one part with these keywords (as ../rms_norm/design.py writes them), a TAP whose
dimension of size 1 has stride 0, the NPU2Col<n> device names.
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
INCLUDE_DIR = os.path.join(AIE_DIR, "include")
TILES_HEADER = "xdna_aie/rope_tiles.h"

# ---------------------------------------------------------------------------------------------------
# AIE2P hardware limits the plan is checked against: facts of the device, not of this design's data
# movement, so they live here (as in ../add/design.py), not in dataflow.json.
# ---------------------------------------------------------------------------------------------------
CORE_S2MM, CORE_MM2S = 2, 2        # DMA channels of a compute tile (AM027)
MEMTILE_S2MM, MEMTILE_MM2S = 6, 6  # AM027 "AIE-ML v2 Memory Tile DMA": six S2MM and six MM2S channels
SHIM_MM2S, SHIM_S2MM = 2, 2        # shim DMA: two each way
NPU2_COLUMNS = 8                   # npu2's columns
NPU2_CORE_ROWS = 4                 # npu2: rows 0 (shim), 1 (memory tiles), 2..5 (cores)
NPU2_SHIM_ROW, NPU2_MEMTILE_ROW = 0, 1
MEMTILE_BYTES = 512 * 1024         # a memory tile's data memory
CORE_DATA_BYTES = 64 * 1024        # a core tile's data memory
# Stream-switch ports between vertically adjacent tiles (mlir-aie AIE2TargetModel, as ../add/design.py).
UP_PORTS, DOWN_PORTS = 6, 4
SHIM_UP_PORTS, SHIM_DOWN_PORTS = 6, 4
# Shim BD fields and queues (mlir-aie's AIEX verifier, lib/Dialect/AIEX/IR/AIEXDialect.cpp; AM027): the
# description's limits are checked against these.
SHIM_WRAP_MAX = 1023               # d0 and d1 wraps: 10 bits
SHIM_ITERATION_MAX = 64            # the iteration size: 6 bits
SHIM_REPEAT_MAX = 255              # "Repeat count exceeds the [0:255] range"
SHIM_STRIDE_MAX = 1 << 20          # strides: 20 bits of words
SHIM_LENGTH_MAX = (1 << 32) - 1    # buffer_length (32-bit words)
SHIM_BDS = 16                      # BDs of a shim tile
SHIM_TASK_QUEUE = 4                # tasks a shim DMA channel's queue holds
# The host's stream builder's constants, not numbers of the description: a column's tokens per step at
# most (kRowsPerStep, src/runtime/rows-sequence.h), and the steps it keeps in flight (it syncs on step
# k - 1 after queueing step k, src/runtime/rope-sequence.cpp). tests/aie/check_design_rope.sh checks the
# first against the header and the second against the builder's text.
HOST_TOKENS_PER_STEP = 256
HOST_STEPS_IN_FLIGHT = 2
# The operands the host's builder looks up by name (shim_fifo_of("x"), ("cs"), ("y")) and the order the
# kernels take them in.
OPERANDS = ("x", "cs", "y")
# The RTP words the host writes (rope-sequence.cpp: the contract, the column's tokens and heads, the
# parameter block's n_dims, the layout version); a description with others is not this program's.
RTP_NAMES = ("contract", "tokens", "heads", "n_dims", "version")
KERNEL_PARAMS = (("x: one head row", "pointer"), ("cs: the token's angle row", "pointer"),
                 ("y: one head row", "pointer"), ("n_dims: the RTP word", "int32"), ("ne0: the tile", "int32"))


class PlanError(Exception):
    pass


# ---------------------------------------------------------------------------------------------------
# The description (dataflow.json), read once and checked for what this program can build.
# ---------------------------------------------------------------------------------------------------
@dataclass
class OperandPath:
    """One operand's two FIFOs: shim <-> memory tile, memory tile <-> core."""
    operand: str
    arg: int
    inbound: bool          # x, cs: shim -> memory tile -> core; y: core -> memory tile -> shim
    mem: dict              # x_l3l2, cs_l3l2, y_l2l3
    core: dict             # x_l2l1, cs_l2l1, y_l1l2
    shim_channel: int
    mem_depth: int
    core_depth: int


@dataclass
class Description:
    path: str
    raw: dict
    design: str
    layout: str
    paths: dict            # operand -> OperandPath


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
        raise PlanError(f"{path}: not a rope description (the movement this program builds): {type(e).__name__} {e}")


def _load_description(path, layout):
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError) as e:
        raise PlanError(f"{path}: {e}")
    if raw.get("format") != "xdna-dataflow" or not isinstance(raw.get("design"), str):
        raise PlanError(f"{path}: not a dataflow description (format \"xdna-dataflow\" with a \"design\")")
    if raw.get("movement") != "rope":
        raise PlanError(f"{path}: movement {raw.get('movement')!r}: this program builds the \"rope\" movement")
    layouts = {spec["name"]: spec for spec in raw["layouts"]}
    name = layout or raw["layouts"][0]["name"]
    if name not in layouts:
        raise PlanError(f"{path}: no layout {name!r} ({', '.join(layouts)})")
    fifos = list(layouts[name]["fifos"])
    where = f"{path}: layout {name}"
    args = {o["name"]: o["arg"] for o in raw["operands"]}
    if sorted(args) != sorted(OPERANDS) or sorted(args.values()) != list(range(len(OPERANDS))):
        raise PlanError(f"{where}: operands {args}: this program takes x, cs and y, args 0..2 (the host's builder "
                        "finds them by these names)")
    paths = {}
    for op in OPERANDS:
        inbound = op != "y"
        shim = [f for f in fifos if f.get("operand") == op and "shim_channel" in f]
        if len(shim) != 1:
            raise PlanError(f"{where}: operand {op} needs exactly one FIFO with a shim channel")
        mem = shim[0]
        want = ("shim", "memtile", "mm2s") if inbound else ("memtile", "shim", "s2mm")
        if (mem["from"], mem["to"], mem["shim_channel"]["direction"]) != want:
            raise PlanError(f"{where}: {mem['name']} runs {mem['from']} -> {mem['to']} on "
                            f"{mem['shim_channel']['direction']}, expected {want[0]} -> {want[1]} on {want[2]}")
        key = "source" if inbound else "sink"
        core = [f for f in fifos if f.get(key) == mem["name"]]
        if len(core) != 1:
            raise PlanError(f"{where}: {mem['name']} needs exactly one core FIFO linked to it")
        core = core[0]
        link = "split" if inbound else "join"
        # One core per column: the memory tile hands each object on to it whole (a split or join of one
        # part); a broadcast or forward is not what the host's parser and interpreter know of this movement.
        if core.get("link") != link:
            raise PlanError(f"{where}: {core['name']} is linked by {core.get('link')!r}; this program links "
                            f"{op} by a {link} of one part (one core per column)")
        # A head row (and a token's angle row) is one object of one chunk of the tile, at both ends.
        for f in (mem, core):
            if f["object"]["unit"] != "chunk" or f["object"]["count"] != 1:
                raise PlanError(f"{where}: {f['name']}: objects of {f['object']['count']} {f['object']['unit']}(s); "
                                "this program moves one head row (one chunk of the tile) per object")
        paths[op] = OperandPath(op, args[op], inbound, mem, core, mem["shim_channel"]["channel"],
                                _depth(raw, mem["depth"], f"{where}: {mem['name']}"),
                                _depth(raw, core["depth"], f"{where}: {core['name']}"))
    return Description(path, raw, raw["design"], name, paths)


def families_of(desc):
    return {k: v for k, v in desc.raw["families"].items() if k != "about"}


def family_tiles(desc, family):
    """The head row lengths a family has an xclbin for: the numeric keys of its kernel_stack."""
    return sorted(int(t) for t in desc.raw["core_budget"]["kernel_stack"][family] if str(t).isdigit())


@functools.lru_cache(maxsize=None)
def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def tiles_header():
    """kRopeLanes, kRopePairLanes and kRopeMaxRow of aie/include/xdna_aie/rope_tiles.h: the constants
    rope_row_fits (what the core program takes) is written with."""
    try:
        text = _read(os.path.join(INCLUDE_DIR, TILES_HEADER))
    except OSError as e:
        raise PlanError(f"{TILES_HEADER}: {e}")
    out = {}
    for name in ("kRopeLanes", "kRopePairLanes", "kRopeMaxRow"):
        m = re.search(r"constexpr\s+int\s+" + name + r"\s*=\s*(\d+)\s*;", text)
        if m is None:
            raise PlanError(f"{TILES_HEADER} defines no {name}")
        out[name] = int(m.group(1))
    return out


def row_fits(n_dims, ne0, k):
    """xdna_aie::rope_row_fits: the rotated dims fill whole steps of kRopePairLanes, the copied rest whole
    vectors of kRopeLanes, the row at most kRopeMaxRow."""
    return (n_dims > 0 and n_dims % k["kRopePairLanes"] == 0 and n_dims <= ne0 and ne0 <= k["kRopeMaxRow"] and
            (ne0 - n_dims) % k["kRopeLanes"] == 0)


# ---------------------------------------------------------------------------------------------------
# What the kernels take and promise (their sources, not the data movement).
# ---------------------------------------------------------------------------------------------------
_HINT_RE = re.compile(r"AIE_LOOP_MIN_ITERATION_COUNT\((\d+)\)")


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


def kernel_source(desc, family, symbol):
    """(file name, parameter list, body of the definition) of the kernel defining `symbol`: the family's
    source first, then the other .cc files of its directory; None when none does."""
    d = kernels_dir(desc, family)
    if d is None:
        return None
    source = family_source(desc, family)
    for n in [source] + sorted(n for n in os.listdir(d) if n.endswith(".cc") and n != source):
        text = _read(os.path.join(d, n))
        m = re.search(r"\bvoid\s+" + re.escape(symbol) + r"\s*\(([^)]*)\)\s*\{", text)
        if m:
            return n, [" ".join(x.split()) for x in m.group(1).split(",") if x.strip()], _body(text, m.end())
    return None


def _param_kind(param):
    if "*" in param:
        return "pointer"
    if re.search(r"\bint32_t\b", param):
        return "int32"
    if re.search(r"\bfloat\b", param):
        return "float"
    return param


def kernel_checks(desc, family, k):
    """Per program of the family (every one linked into the xclbin): it takes what the core passes, and its
    rotation loop, which runs n_dims / kRopePairLanes times (NORM: n_dims in steps of 2 x 16; NEOX:
    n_dims / 2 in steps of 16), keeps its AIE_LOOP_MIN_ITERATION_COUNT(h) promise at the fewest rotated
    dims any invocation may give (kRopePairLanes): the hint lets the compiler drop the path for fewer
    trips, and n_dims is a runtime word. The host build defines the hint away, so the simulator cannot
    show a broken promise."""
    checks = []
    want = [kind for _, kind in KERNEL_PARAMS]
    for symbol in families_of(desc)[family]:
        found = kernel_source(desc, family, symbol)
        if found is None:
            checks.append((f"kernel {symbol}", False,
                           f"no .cc file of the directory of family {family}'s source {family_source(desc, family)!r} "
                           f"(kernels/ beside {desc.path}, or aie/{desc.design}/kernels) defines {symbol}"))
            continue
        source, params, body = found
        checks.append((f"kernel {symbol} ({source}) takes what the core program passes",
                       [_param_kind(x) for x in params] == want,
                       f"{symbol}({', '.join(params)}); the core program passes "
                       f"({'; '.join(w for w, _ in KERNEL_PARAMS)})"))
        hint = _HINT_RE.search(body)
        if hint is not None:
            h, fewest = int(hint.group(1)), k["kRopePairLanes"]
            trips = fewest // k["kRopePairLanes"]
            checks.append((f"kernel {symbol} ({source}) loop keeps its min_iteration_count at the fewest rotated dims",
                           trips >= h, f"n_dims {fewest} / {k['kRopePairLanes']} = {trips} trip(s), "
                                       f"AIE_LOOP_MIN_ITERATION_COUNT({h})"))
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
    tile: int              # ne0: values per head row, the xclbin's row length
    n_dims: int
    tokens: int
    heads: int
    columns: int
    strides: dict          # operand -> {"head": floats, "token": floats} (x, y)
    chunk_bytes: int
    stack_bytes: int
    kernel_data_bytes: int
    kernels: dict = field(default_factory=dict)
    fifos: list = field(default_factory=list)
    core_bytes: dict = field(default_factory=dict)
    memtile_bytes: dict = field(default_factory=dict)
    channels: dict = field(default_factory=dict)
    streams: dict = field(default_factory=dict)
    grid: dict = field(default_factory=dict)
    rtp: dict = field(default_factory=dict)
    per_column: list = field(default_factory=list)
    stream: list = field(default_factory=list)
    schedule: dict = field(default_factory=dict)
    tensors: dict = field(default_factory=dict)
    traffic: dict = field(default_factory=dict)
    core_program: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)


GRID = "column c: token block (first token, tokens), head segment (first head, heads)"


def block_first(total, parts, i):
    """The host's block_first: where block i of `total` dealt to `parts` blocks starts."""
    return total // parts * i + min(i, total % parts)


def block_count(total, parts, i):
    """The host's block_count: the size of block i (the first total % parts one larger)."""
    return total // parts + (1 if i < total % parts else 0)


def head_rows_pattern(tokens, heads, ne0, head_stride, token_stride):
    """The host's head_rows_bd: innermost first, the head row (d0), the heads (d1), the tokens (d2); a
    dimension of one head or one token takes the stride a single row has (ne0, 0)."""
    return [ne0, heads, tokens], [1, head_stride if heads > 1 else ne0, token_stride if tokens > 1 else 0]


def angle_rows_pattern(tokens, ne0):
    """The host's rows_bd(tokens, ne0, ne0, ne0): the angle row in runs of d0 (ne0, halved while past the
    shim's 10-bit wrap: never for a row of at most 512), the rows ne0 apart."""
    d0 = ne0
    while d0 > SHIM_WRAP_MAX and d0 % 2 == 0:
        d0 //= 2
    return [d0, ne0 // d0, tokens], [1, d0, ne0 if tokens > 1 else 0]


def is_linear(sizes, strides):
    """A contiguous run (shim_bd_from_pattern): buffer_length alone, no wraps or steps."""
    return strides[0] == 1 and (sizes[1] == 1 or strides[1] == sizes[0]) and \
        (sizes[2] == 1 or strides[2] == sizes[0] * sizes[1])


def make_plan(desc, family=None, tokens=1, heads=32, ne0=128, n_dims=None, x_head_stride=None, x_token_stride=None,
              y_head_stride=None, y_token_stride=None, columns=None, stack_bytes=None, kernel_data_bytes=None):
    raw = desc.raw
    families = families_of(desc)
    family = family or next(iter(families))
    if family not in families:
        raise PlanError(f"unknown family {family!r} ({', '.join(families)})")
    contracts = families[family]
    if not contracts:
        raise PlanError(f"family {family} has no program")
    if raw["device"] != "npu2":
        raise PlanError(f"{desc.path}: device {raw['device']!r}: this design targets npu2 (AIE2P) only")
    max_cols = raw["array"]["max_columns"]
    columns = max_cols if columns is None else columns
    if not 1 <= columns <= max_cols:
        raise PlanError(f"--cols {columns}: npu2 has 1..{max_cols} columns")
    if tokens < 1 or heads < 1:
        raise PlanError(f"{tokens} token(s) x {heads} head(s): the design takes at least one of each")
    tiles = family_tiles(desc, family)
    if ne0 not in tiles:
        raise PlanError(f"family {family} has no xclbin for head rows of {ne0} values (it has "
                        f"{', '.join(map(str, tiles))})")
    k = tiles_header()
    if n_dims is None:
        # The most rotated dims the row takes (every dim where it can; 64 of 80): n_dims is an RTP word, so
        # it changes no xclbin, and a default the program refuses (80 of 80) would fail the build's sample.
        n_dims = max([n for n in range(k["kRopePairLanes"], ne0 + 1, k["kRopePairLanes"]) if row_fits(n, ne0, k)],
                     default=ne0)
    if not row_fits(n_dims, ne0, k):
        raise PlanError(f"{n_dims} rotated dims of {ne0}: the program rotates a multiple of {k['kRopePairLanes']} "
                        f"from dim 0 (at most the row) and copies a multiple of {k['kRopeLanes']}, rows of at most "
                        f"{k['kRopeMaxRow']} values (xdna_aie::rope_row_fits)")
    budget = raw["core_budget"]
    stack_bytes = budget["kernel_stack"][family][str(ne0)] if stack_bytes is None else stack_bytes
    kernel_data_bytes = budget["kernel_data_bytes"] if kernel_data_bytes is None else kernel_data_bytes
    strides = {"x": {"head": ne0 if x_head_stride is None else x_head_stride,
                     "token": heads * ne0 if x_token_stride is None else x_token_stride},
               "y": {"head": ne0 if y_head_stride is None else y_head_stride,
                     "token": heads * ne0 if y_token_stride is None else y_token_stride}}
    chunk = raw["units"]["chunk"] * ne0
    p = Plan(dataflow=desc.path, design=desc.design, layout=desc.layout, family=family, contract=contracts[0],
             contract_index=0, tile=ne0, n_dims=n_dims, tokens=tokens, heads=heads, columns=columns,
             strides=strides, chunk_bytes=chunk, stack_bytes=stack_bytes, kernel_data_bytes=kernel_data_bytes)
    for c in contracts:
        found = kernel_source(desc, family, c)
        p.kernels[c] = found[0] if found else None
    check = lambda what, ok, detail: p.checks.append((what, bool(ok), detail))
    arr = raw["array"]

    check("array: one core per column above the memory tile",
          arr["core_rows"] == 1 and
          arr["memtile_row"] < arr["first_core_row"] < arr["memtile_row"] + 1 + NPU2_CORE_ROWS,
          f"array.core_rows {arr['core_rows']}, core row {arr['first_core_row']}" +
          ("" if arr["core_rows"] == 1 else ": the layout feeds one core (a split and a join of one part), while "
                                            "the host writes RTP words to every core row the description has"))
    check("array: the description's columns and rows are npu2's",
          1 <= max_cols <= NPU2_COLUMNS and arr["shim_row"] == NPU2_SHIM_ROW and arr["memtile_row"] == NPU2_MEMTILE_ROW,
          f"max_columns {max_cols} of {NPU2_COLUMNS}, shim row {arr['shim_row']}, memory tile row {arr['memtile_row']}")
    written = [o for o in raw.get("host_written", {}) if o != "about"]
    check("host_written: the angle rows cs, and only they", written == ["cs"],
          f"host_written {written}" + ("" if written == ["cs"] else
                                       ": the host writes the angle rows at submission (its parser refuses a rope "
                                       "description without cs there), and x and y are tensors of the graph"))
    bad_tiles = [t for t in tiles if not row_fits(k["kRopePairLanes"], t, k)]
    check(f"family {family} tiles: head rows the kernels take", not bad_tiles,
          f"{tiles}" + (f": {bad_tiles} take no rotation (rope_row_fits: rows of {k['kRopePairLanes']} to "
                        f"{k['kRopeMaxRow']} values in steps of {k['kRopeLanes']})" if bad_tiles else
                        f" (rope_row_fits: {k['kRopePairLanes']} to {k['kRopeMaxRow']} values in steps of "
                        f"{k['kRopeLanes']})"))

    # FIFOs, from the description.
    shim_at, mem_at, core_at = f"(c,{arr['shim_row']})", f"(c,{arr['memtile_row']})", f"(c,{arr['first_core_row']})"
    for op in OPERANDS:
        path = desc.paths[op]
        m, c = path.mem, path.core
        if path.inbound:
            p.fifos.append(Fifo(f"{m['name']}_<c>", f"shim{shim_at} -> memtile{mem_at}", chunk, path.mem_depth,
                                "memtile", f"shim MM2S {path.shim_channel}, memtile S2MM 1", m.get("about", "")))
            p.fifos.append(Fifo(f"{c['name']}_<c>", f"memtile{mem_at} -> core{core_at}, split of one part", chunk,
                                path.core_depth, "core", "memtile MM2S 1, core S2MM 1", c.get("about", "")))
        else:
            p.fifos.append(Fifo(f"{c['name']}_<c>", f"core{core_at} -> memtile{mem_at}, join of one part", chunk,
                                path.core_depth, "core", "core MM2S 1, memtile S2MM 1", c.get("about", "")))
            p.fifos.append(Fifo(f"{m['name']}_<c>", f"memtile{mem_at} -> shim{shim_at}", chunk, path.mem_depth,
                                "memtile", f"memtile MM2S 1, shim S2MM {path.shim_channel}", m.get("about", "")))

    # Core data memory: the core FIFOs' buffers, the RTP words, the stack, the kernels' static data.
    prog = raw["core_program"]
    for f in p.fifos:
        if f.home == "core":
            p.core_bytes[f"{f.name} ({f.depth} x {ne0} values)"] = f.bytes
    p.core_bytes["RTP words"] = 4 * prog["rtp_word_count"]
    p.core_bytes[f"stack ({family_source(desc, family)}'s kernel_stack at {ne0})"] = stack_bytes
    p.core_bytes["kernel static data"] = kernel_data_bytes
    core_total = sum(p.core_bytes.values())
    p.core_bytes["total"] = core_total
    core_limit = min(budget["core_data_bytes"], CORE_DATA_BYTES)
    check("core data memory", core_total <= core_limit,
          f"{core_total} of {core_limit} bytes ({core_limit - core_total} free)")
    rtp_at = prog["rtp_core_address"]
    check("RTP words inside core data memory", rtp_at % 4 == 0 and rtp_at + 4 * prog["rtp_word_count"] <= core_limit,
          f"[{rtp_at}, {rtp_at + 4 * prog['rtp_word_count']}) of {core_limit} (the IRON build does not pin the "
          "buffer there yet)")
    for f in p.fifos:
        if f.home == "memtile":
            p.memtile_bytes[f"{f.name} ({f.depth} x {ne0} values)"] = f.bytes
    mem_total = sum(p.memtile_bytes.values())
    p.memtile_bytes["total"] = mem_total
    mem_limit = min(budget["memtile_bytes"], MEMTILE_BYTES)
    check("memory tile", mem_total <= mem_limit, f"{mem_total} of {mem_limit} bytes")

    # DMA channels and stream-switch ports: x and cs in, y out, one core per column.
    ch = {op: desc.paths[op].shim_channel for op in OPERANDS}
    p.channels = {
        "core": {"S2MM": (2, CORE_S2MM, "x, cs"), "MM2S": (1, CORE_MM2S, "y")},
        "memory tile": {"S2MM": (3, MEMTILE_S2MM, "x, cs from the shim; y from the core"),
                        "MM2S": (3, MEMTILE_MM2S, "x, cs to the core; y to the shim")},
        "shim": {"MM2S": (2, SHIM_MM2S, f"x on {ch['x']}, cs on {ch['cs']}"),
                 "S2MM": (1, SHIM_S2MM, f"y on {ch['y']}")},
    }
    for tile_name, dirs in p.channels.items():
        for d, (used, avail, what) in dirs.items():
            check(f"DMA channels {tile_name} {d}", used <= avail, f"{used} of {avail} ({what})")
    check("shim channel numbers distinct and in range",
          ch["x"] != ch["cs"] and all(0 <= ch[o] < SHIM_MM2S for o in ("x", "cs")) and 0 <= ch["y"] < SHIM_S2MM,
          f"MM2S x {ch['x']}, cs {ch['cs']} of 0..{SHIM_MM2S - 1}; S2MM y {ch['y']} of 0..{SHIM_S2MM - 1}")
    p.streams = {"shim -> memory tile (up)": (2, SHIM_UP_PORTS), "memory tile -> shim (down)": (1, SHIM_DOWN_PORTS),
                 f"memory tile -> core row {arr['first_core_row']} (up)": (2, UP_PORTS),
                 f"core row {arr['first_core_row']} -> memory tile (down)": (1, DOWN_PORTS)}
    for what, (used, avail) in p.streams.items():
        check(f"stream-switch ports {what}", used <= avail, f"{used} stream(s) of {avail} ports")

    for what, ok, detail in kernel_checks(desc, family, k):
        check(what, ok, detail)

    _plan_shape(desc, p, check)
    _plan_core_program(desc, p, check)
    return p


def _plan_shape(desc, p, check):
    """The grid, RTP words, steps, BDs, stream and traffic of one invocation, as the host's
    build_rope_sequence makes them."""
    raw = desc.raw
    lim, shim, prog, arr = raw["limits"], raw["shim"], raw["core_program"], raw["array"]
    wrap, stride_max = lim["wrap_max"], lim["stride_max"]
    ne0 = p.tile
    check("limits.wrap_max within the shim BD's d0 and d1 wraps", 1 <= wrap <= SHIM_WRAP_MAX,
          f"{wrap} of 1..{SHIM_WRAP_MAX}")
    check("limits.stride_max within the shim BD's stride field", 1 <= stride_max <= SHIM_STRIDE_MAX,
          f"{stride_max} of 1..{SHIM_STRIDE_MAX} words")
    check("limits.iteration_max within the shim BD's iteration count", 1 <= lim["iteration_max"] <= SHIM_ITERATION_MAX,
          f"{lim['iteration_max']} of 1..{SHIM_ITERATION_MAX} (the rope's BDs use no iteration)")
    check("limits.repeat_max within the push queue's repeat count", 0 <= lim.get("repeat_max", 0) <= SHIM_REPEAT_MAX,
          f"{lim.get('repeat_max')} of 0..{SHIM_REPEAT_MAX} (the rope's tasks repeat never)")

    # The strides, as the host checks them: a stride of a dimension the invocation has.
    for op in ("x", "y"):
        hs, ts = p.strides[op]["head"], p.strides[op]["token"]
        check(f"{op} head stride: at least the head row, within the shim's stride",
              p.heads <= 1 or ne0 <= hs <= stride_max,
              f"{hs} floats between heads, rows of {ne0}, at most {stride_max}" if p.heads > 1 else
              "one head: no head stride")
        check(f"{op} token stride: within the shim's stride", p.tokens <= 1 or 1 <= ts <= stride_max,
              f"{ts} floats between tokens, 1..{stride_max}" if p.tokens > 1 else "one token: no token stride")
    # y's head rows must not overlap (the host refuses it: the columns would write them in no defined order;
    # x may overlap, it is only read). The host takes token-major rows (a token's heads, then the next
    # token's) and head-major ones.
    hs, ts = p.strides["y"]["head"], p.strides["y"]["token"]
    if p.tokens == 1 or p.heads == 1:
        disjoint = p.tokens == 1 or ts >= ne0
    else:
        disjoint = ts >= (p.heads - 1) * hs + ne0 or (hs >= (p.tokens - 1) * ts + ne0 and ts >= ne0)
    check("y head rows: disjoint, token-major or head-major", disjoint,
          f"{hs} floats between heads, {ts} between tokens, rows of {ne0}")

    # BD slots: one per step in flight; an id for x, cs and y in each (the host takes each list's first).
    slots, F = shim["bd_slots"], shim["steps_in_flight"]
    as_list = lambda v: v if isinstance(v, list) else [v]
    check("shim BD slots: one set per step in flight, an id for x, cs and y in each",
          len(slots) == F and all(as_list(s.get(o, [])) for s in slots for o in OPERANDS),
          f"{len(slots)} set(s) for {F} step(s) in flight: " +
          "; ".join(", ".join(f"{o} {s.get(o)}" for o in OPERANDS) for s in slots))
    check("shim: steps in flight as the host's stream keeps them", F == HOST_STEPS_IN_FLIGHT,
          f"{F}; the host queues step k, then syncs on step k - 1's tokens: {HOST_STEPS_IN_FLIGHT} in flight" +
          ("" if F == HOST_STEPS_IN_FLIGHT else ", whatever the description says"))
    ids = [i for s in slots for o in OPERANDS for i in as_list(s.get(o, []))]
    check("shim BD ids distinct and in range",
          len(set(map(str, ids))) == len(ids) and all(isinstance(i, int) and 0 <= i < shim["bds"] for i in ids),
          f"{ids} of 0..{shim['bds'] - 1}")
    check("shim: the description's bds within the shim tile's", shim["bds"] <= SHIM_BDS, f"{shim['bds']} of {SHIM_BDS}")
    check("shim BDs in flight", F * len(OPERANDS) <= min(shim["bds"], SHIM_BDS),
          f"{F} step(s) x 3 (x, cs, y) = {F * len(OPERANDS)} of {min(shim['bds'], SHIM_BDS)}")
    slot_ids = [{o: (as_list(s.get(o, [])) or [None])[0] for o in OPERANDS} for s in slots] or [dict.fromkeys(OPERANDS)]

    # The grid: R token blocks x S segments of each token's heads, one column each.
    avail = p.columns
    R = min(p.tokens, avail)
    S = 1 if p.tokens >= avail else max(1, min(p.heads, avail // p.tokens))
    cols = [((block_first(p.tokens, R, c // S), block_count(p.tokens, R, c // S)),
             (block_first(p.heads, S, c % S), block_count(p.heads, S, c % S))) for c in range(R * S)]
    p.grid = {"token blocks R": R, "head segments S": S, "columns used": len(cols),
              GRID: [[list(a), list(b)] for a, b in cols]}

    # RTP words per used column, in the order of their index; then the steps.
    idx = prog["rtp_words"]
    words_of = {"contract": p.contract_index, "n_dims": p.n_dims, "version": prog["rtp_layout_version"]}
    per_col_words = []
    over = []
    for c, ((_, nt), (_, nh)) in enumerate(cols):
        w = dict(words_of, tokens=nt, heads=nh)
        per_col_words.append({n: w.get(n) for n in sorted(idx, key=idx.get)})
        if nh > wrap or nt * nh > prog["rtp_word_max"]:
            over.append((c, nt, nh))
    p.rtp = {"per used column": per_col_words}
    check("columns: a segment's heads within the d1 wrap, a core's calls within an int32 word", not over,
          f"at most {max(h for _, (_, h) in cols)} head(s) of {wrap}, "
          f"{max(t * h for (_, t), (_, h) in cols)} call(s) of {prog['rtp_word_max']}" if not over else
          f"column {over[0][0]}: {over[0][1]} token(s) x {over[0][2]} head(s) pass a BD's d1 wrap {wrap} or the "
          f"core's int32 words {prog['rtp_word_max']} (the host refuses the shape)")

    ch_y = desc.paths["y"].shim_channel
    stream = p.stream
    for c, w in enumerate(per_col_words):
        for r in range(arr["core_rows"]):
            row = arr["first_core_row"] + r
            vec = [0] * prog["rtp_word_count"]
            for n, i in idx.items():
                if isinstance(i, int) and 0 <= i < len(vec) and isinstance(w.get(n), int):
                    vec[i] = w[n]
            stream.append(["rtp", c, row, vec])
            stream.append(["barrier", c, row, prog["barrier"]["set_value"]])
    per = HOST_TOKENS_PER_STEP
    steps = math.ceil(cols[0][0][1] / per)
    p.per_column = [{"column": c, "tokens (first, count)": list(cols[c][0]), "heads (first, count)": list(cols[c][1]),
                     "steps": math.ceil(cols[c][0][1] / per), "bds": []} for c in range(len(cols))]
    moved = {o: 0 for o in OPERANDS}
    xs, ys = p.strides["x"], p.strides["y"]

    def syncs(k):
        for c, ((_, nt), _) in enumerate(cols):
            if k * per < nt:
                stream.append(["sync", c, ch_y, k])

    for k in range(steps):
        ids_k = slot_ids[k % len(slot_ids)]
        for c, ((tf, nt), (hf, nh)) in enumerate(cols):
            done = k * per
            if done >= nt:
                continue
            n, t0 = min(per, nt - done), tf + done
            tasks = (("x", head_rows_pattern(n, nh, ne0, xs["head"], xs["token"]), t0 * xs["token"] + hf * xs["head"]),
                     ("cs", angle_rows_pattern(n, ne0), t0 * ne0),
                     ("y", head_rows_pattern(n, nh, ne0, ys["head"], ys["token"]), t0 * ys["token"] + hf * ys["head"]))
            for what, (sizes, strides), at in tasks:
                bd = {"step": k, "what": what, "bd": ids_k[what], "offset": 4 * at, "sizes": sizes, "strides": strides,
                      "token": what == "y", "linear": is_linear(sizes, strides)}
                p.per_column[c]["bds"].append(bd)
                stream.append(["push", c, what, ids_k[what], k, what == "y"])
                moved[what] += 4 * sizes[0] * sizes[1] * sizes[2]
        if k > 0:
            syncs(k - 1)
    if steps > 0:
        syncs(steps - 1)

    # The stream replayed per column: a channel's queue holds its unfinished tasks; a step's y token says
    # every task of that step (and the earlier ones: a channel runs its queue in order) is done, and frees
    # their BDs. A BD pushed while an unsynced step holds it would be rewritten under a running task.
    worst_q, worst_bd, reuse = 0, 0, []
    for c in range(len(cols)):
        queued, held = {o: [] for o in OPERANDS}, {}
        for ev in stream:
            if ev[1] != c:
                continue
            if ev[0] == "push":
                _, _, what, bd, k, _ = ev
                if bd in held and not reuse:
                    reuse.append((c, bd, k, held[bd]))
                held[bd] = k
                queued[what].append(k)
            elif ev[0] == "sync":
                k = ev[3]
                queued = {o: [x for x in q if x > k] for o, q in queued.items()}
                held = {b: x for b, x in held.items() if x > k}
            worst_q = max([worst_q] + [len(q) for q in queued.values()])
            worst_bd = max(worst_bd, len(held))
    check("shim task queue per channel", worst_q <= SHIM_TASK_QUEUE,
          f"at most {worst_q} task(s) queued of {SHIM_TASK_QUEUE} (replayed)")
    check("shim BDs: reused only after the sync that frees them", not reuse,
          f"at most {worst_bd} BD(s) in use per column (replayed)" if not reuse else
          f"column {reuse[0][0]}: BD {reuse[0][1]} pushed for step {reuse[0][2]} while step {reuse[0][3]} holds it, "
          f"not yet synced: the host would rewrite a running task's BD")
    p.schedule = {"tokens per step (at most)": per, "steps": steps,
                  "steps per column": [pc["steps"] for pc in p.per_column], "steps in flight": HOST_STEPS_IN_FLIGHT,
                  "tasks queued per channel (at most)": worst_q,
                  "shim BDs in use per column (at most)": worst_bd, "shim BDs per column per step": len(OPERANDS)}

    # Every BD of the invocation against the description's limits (one check per field, the first
    # offender named); a contiguous one is a plain length, exempt from the wraps and steps.
    fails = {k: [] for k in ("d0", "d1", "strides", "length")}
    for pc in p.per_column:
        for bd in pc["bds"]:
            s, st = bd["sizes"], bd["strides"]
            if s[0] * s[1] * s[2] > SHIM_LENGTH_MAX:
                fails["length"].append((pc["column"], bd))
            if bd["linear"]:
                continue
            if s[0] > wrap:
                fails["d0"].append((pc["column"], bd))
            if s[1] > wrap:
                fails["d1"].append((pc["column"], bd))
            if any(s[d] > 1 and not 1 <= st[d] <= stride_max for d in range(3)):
                fails["strides"].append((pc["column"], bd))
    nbd = sum(len(pc["bds"]) for pc in p.per_column)

    def detail(kind, ok_text):
        if not fails[kind]:
            return ok_text
        c, b = fails[kind][0]
        return (f"{len(fails[kind])} BD(s), e.g. column {c} step {b['step']} {b['what']} BD {b['bd']}: "
                f"sizes {b['sizes']} strides {b['strides']}")
    check("shim BDs: d0 size", not fails["d0"], detail("d0", f"{nbd} BD(s), d0 {ne0} <= {wrap} words"))
    check("shim BDs: d1 size", not fails["d1"], detail("d1", f"{nbd} BD(s), d1 (heads) at most {wrap}"))
    check("shim BDs: strides", not fails["strides"],
          detail("strides", f"{nbd} BD(s), each stride of a dimension it steps in 1..{stride_max} words"))
    check("shim BDs: buffer length", not fails["length"],
          detail("length", f"{nbd} BD(s) of at most {SHIM_LENGTH_MAX} words"))

    # The runtime sequence's operands (fp32 values): the views' extents, the angle rows one per token.
    ext = lambda s: max(0, (p.tokens - 1) * s["token"] + (p.heads - 1) * s["head"] + ne0)
    p.tensors = {f"x (arg {desc.paths['x'].arg})": ext(xs), f"cs (arg {desc.paths['cs'].arg})": p.tokens * ne0,
                 f"y (arg {desc.paths['y'].arg})": ext(ys)}
    calls = [t * h for (_, t), (_, h) in cols]
    p.traffic = {"x read (bytes)": moved["x"], "cs read (bytes)": moved["cs"], "y written (bytes)": moved["y"],
                 "read (bytes)": moved["x"] + moved["cs"], "written (bytes)": moved["y"], "columns used": len(cols),
                 "kernel calls on the busiest core": max(calls), "steps": steps}
    rows = 4 * p.tokens * p.heads * ne0
    cs_rows = sum(t for (_, t), _ in cols)
    check("traffic: every head row read and written once, a token's angle row once per column taking it",
          moved["x"] == rows and moved["y"] == rows and moved["cs"] == 4 * cs_rows * ne0,
          f"x {moved['x']}, y {moved['y']} bytes of {p.tokens} x {p.heads} x {ne0} x 4 = {rows}; cs {moved['cs']} "
          f"bytes: {cs_rows} angle row(s)")


def _plan_core_program(desc, p, check):
    """The RTP words of this invocation and the barrier every core passes once per invocation."""
    prog = desc.raw["core_program"]
    bar = prog["barrier"]
    idx = prog["rtp_words"]
    mode, acquire = bar["acquire"]["mode"], bar["acquire"]["value"]
    release, set_value = bar["release"]["value"], bar["set_value"]
    equal = mode == "equal"
    after = (set_value if equal else set_value - acquire) + release
    p.core_program = {
        "RTP word index": dict(idx),
        "barrier lock": bar["lock"],
        "sequence: barrier.set": set_value,
        f"core: wait_for_value (acquire {mode})": acquire,
        "core: release_with_value, after the RTP reads": release,
        "lock after a core's pass": after,
        "per token": f"acquire cs; per head: acquire x, y; {p.contract}(x, cs, y, n_dims = word {idx.get('n_dims')}, "
                     f"ne0 = {p.tile}); release x, y; release cs",
    }
    check("RTP words: contract, tokens, heads, n_dims and version, distinct, within the word count",
          sorted(idx) == sorted(RTP_NAMES) and sorted(idx.values()) == list(range(prog["rtp_word_count"])),
          f"{idx}, {prog['rtp_word_count']} words")
    values = [v for w in p.rtp["per used column"] for v in w.values() if isinstance(v, int)]
    check("RTP words fit the core's int32 words", all(0 <= v <= prog["rtp_word_max"] for v in values) and
          prog["rtp_word_max"] <= 2 ** 31 - 1,
          f"largest {max(values, default=0)} <= {prog['rtp_word_max']} (of int32's {2 ** 31 - 1})")
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


# ---------------------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------------------
def kib(n):
    return f"{n} B ({n / 1024:.2f} KiB)"


def _short(lst, n=6):
    return str(lst) if len(lst) <= n else f"{str(lst[:n])[:-1]}, ... ({len(lst)} in all)]"


def print_plan_text(p, out=sys.stdout):
    w = out.write
    w(f"design: rope ({p.design}), family {p.family} ({p.contract}, contract RTP = {p.contract_index}; kernels "
      f"{', '.join(f'{c} in {s}' for c, s in p.kernels.items())}), head rows of {p.tile} values ({p.chunk_bytes} B), "
      f"{p.columns} column(s) x 1 core, npu2\n")
    w(f"description: {p.dataflow}, layout {p.layout}\n")
    w(f"invocation: {p.tokens} token(s) x {p.heads} head(s), n_dims {p.n_dims} of {p.tile}; x strides (head, token) "
      f"{p.strides['x']['head']}, {p.strides['x']['token']}; y {p.strides['y']['head']}, {p.strides['y']['token']} "
      "floats; the angle rows one per token, host-written\n\n")
    w("FIFOs (per column c):\n")
    for f in p.fifos:
        w(f"  {f.name:12s} {f.path}\n")
        w(f"  {'':12s} object {f.obj_bytes} B x depth {f.depth} = {f.bytes} B in the {f.home}; {f.channels}\n")
    w("\ncore data memory (each core):\n")
    for k, v in p.core_bytes.items():
        w(f"  {k:40s} {kib(v)}\n")
    w("memory tile (each column):\n")
    for k, v in p.memtile_bytes.items():
        w(f"  {k:40s} {kib(v)}\n")
    w("\nDMA channels (each column):\n")
    for tile_name, dirs in p.channels.items():
        for d, (used, avail, what) in dirs.items():
            w(f"  {tile_name:12s} {d}: {used} of {avail} ({what})\n")
    w("stream-switch ports (per column):\n")
    for what, (used, avail) in p.streams.items():
        w(f"  {what:36s} {used} of {avail}\n")
    w("\ngrid:\n")
    w(f"  {p.grid['token blocks R']} token block(s) x {p.grid['head segments S']} head segment(s) = "
      f"{p.grid['columns used']} of {p.columns} columns\n")
    w(f"  {GRID}: {_short(p.grid[GRID], 8)}\n")
    w(f"  RTP words per used column: {_short(p.rtp['per used column'], 3)}\n")
    w("schedule:\n")
    for k, v in p.schedule.items():
        w(f"  {k}: {_short(v, 8) if isinstance(v, list) else v}\n")
    w("shim BDs (offset in bytes; sizes / strides innermost first, 32-bit words):\n")
    for pc in p.per_column[:3]:
        for b in pc["bds"][:3]:
            w(f"  column {pc['column']} step {b['step']} {b['what']:2s} BD {b['bd']}: offset {b['offset']} "
              f"sizes {b['sizes']} strides {b['strides']}{', token' if b['token'] else ''}"
              f"{', contiguous' if b['linear'] else ''}\n")
    if len(p.per_column) > 3 or any(len(pc["bds"]) > 3 for pc in p.per_column):
        w(f"  ... {sum(len(pc['bds']) for pc in p.per_column)} BDs in all\n")
    w(f"stream: {_short([' '.join(map(str, e)) for e in p.stream], 8)}\n")
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
        from aie.helpers.dialects.scf import else_, if_
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
    ne0, columns = p.tile, p.columns
    shim_row, mem_row, core_row0 = arr["shim_row"], arr["memtile_row"], arr["first_core_row"]
    idx = prog["rtp_words"]
    rtp_count = prog["rtp_word_count"]

    f32_t, i32_t = np.dtype[np.float32], np.dtype[np.int32]
    row_ty = np.ndarray[(ne0,), f32_t]
    rtp_ty = np.ndarray[(rtp_count,), i32_t]
    by_arg = sorted(OPERANDS, key=lambda o: desc.paths[o].arg)  # the runtime sequence's arguments, in "arg" order
    lengths = {o: p.tensors[f"{o} (arg {desc.paths[o].arg})"] for o in OPERANDS}
    tensor_tys = [np.ndarray[(lengths[o],), f32_t] for o in by_arg]

    # The family's programs, linked into every core (one object of rope.cc); the contract word picks one
    # (a family of one program: no compare). The kernel ABI the plan checked against the source: the x, cs
    # and y objects, n_dims, ne0.
    kinds = {"pointer": row_ty, "int32": np.int32}
    kernels = [Kernel(sym, kernel_object, [kinds[kd] for _, kd in KERNEL_PARAMS])
               for sym in families_of(desc)[p.family]]

    def dispatch(sel, args, i=0):
        if i == len(kernels) - 1:
            kernels[i](*args)
            return
        with if_(sel == i) as taken:
            kernels[i](*args)
        with else_(taken):
            dispatch(sel, args, i + 1)

    def core_fn(x_in, cs_in, y_out, rtp, barrier, *ks):
        # Once per invocation: the stream writes the RTP words, then sets the barrier. wait_for_value is an
        # acquire_equal that leaves the value in the lock; without the release below the Worker's next pass
        # would not wait and would run again on this invocation's words (../matmul/design.py). The release
        # comes before the first object: the stream sets the barrier again only after it has drained this
        # invocation's y.
        barrier.wait_for_value(bar["acquire"]["value"])
        # Every word, in index order, as the simulator's core model reads a set of words.
        word = {name: rtp[i] for name, i in sorted(idx.items(), key=lambda kv: kv[1])}
        barrier.release_with_value(bar["release"]["value"])
        for _ in range_(word["tokens"]):
            # The token's angle row, held for all of its heads: one angle row moved per token and column,
            # where reading it per head would move it heads times.
            cs = cs_in.acquire(1)
            for _ in range_(word["heads"]):
                x = x_in.acquire(1)
                y = y_out.acquire(1)
                dispatch(word["contract"], (x, cs, y, word["n_dims"], ne0))
                x_in.release(1)
                y_out.release(1)
            cs_in.release(1)

    # Per column: its FIFOs, one worker on its core row, its RTP buffer and barrier. Every column of the
    # array gets them (the xclbin serves every shape); the sequence drives the used ones.
    workers, rtps, barriers = [], [], []
    handles = {o: [] for o in OPERANDS}  # the shim ends, per column
    for col in range(columns):
        mem_tile = Tile(col, mem_row)
        core_ends = {}
        for o in OPERANDS:
            path = desc.paths[o]
            l2 = ObjectFifo(row_ty, name=f"{path.mem['name']}_{col}", depth=path.mem_depth)
            if path.inbound:
                parts = l2.cons().split([0], obj_types=[row_ty], names=[f"{path.core['name']}_{col}"],
                                        depths=[path.core_depth], tile=mem_tile)
                core_ends[o] = parts[0].cons()
                handles[o].append(l2.prod(tile=Tile(col, shim_row)))
            else:
                parts = l2.prod().join([0], obj_types=[row_ty], names=[f"{path.core['name']}_{col}"],
                                       depths=[path.core_depth], tile=mem_tile)
                core_ends[o] = parts[0].prod()
                handles[o].append(l2.cons(tile=Tile(col, shim_row)))
        rtp = Buffer(rtp_ty, name=f"rtp_{col}", initial_value=np.zeros(rtp_count, dtype=np.int32), use_write_rtp=True)
        barrier = WorkerRuntimeBarrier()
        rtps.append(rtp)
        barriers.append(barrier)
        workers.append(Worker(core_fn, [core_ends[o] for o in OPERANDS] + [rtp, barrier, *kernels],
                              tile=Tile(col, core_row0), stack_size=p.stack_bytes))

    words = p.rtp["per used column"]
    in_flight = raw["shim"]["steps_in_flight"]

    def tap(o, bd):
        # The host's BD pattern, outermost first (IRON's order): no iteration, the tokens, the heads (for
        # cs: one chunk), the row; the offset in values.
        return TensorAccessPattern((lengths[o],), bd["offset"] // 4, [1] + bd["sizes"][::-1], [0] + bd["strides"][::-1])

    def sequence(*args):
        tensors = dict(zip(by_arg, args[:len(OPERANDS)]))
        ends = dict(zip(OPERANDS, args[len(OPERANDS):]))
        # The words, then the set, per used column's core, before any DMA; a column without work is left at
        # its barrier, as the host's stream leaves it.
        for col, w in enumerate(words):
            for name, i in idx.items():
                rtps[col][i] = w[name]
            barriers[col].set(bar["set_value"])  # after the words: the core reads them once the lock holds this
        # Step k of every used column in one task group (x, cs, then y awaited), as many in flight as the
        # description's steps (IRON picks its own BD ids and shim channels).
        pending = []
        for k in range(p.schedule["steps"]):
            group = TaskGroup()
            for pc in p.per_column:
                col = pc["column"]
                for bd in (b for b in pc["bds"] if b["step"] == k):
                    o = bd["what"]
                    if desc.paths[o].inbound:
                        ends[o][col].fill(tensors[o], tap=tap(o, bd), group=group)
                    else:
                        ends[o][col].drain(tensors[o], tap=tap(o, bd), wait=True, group=group)
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
        description="The rope design (ROPE over fp32 head rows, NORM and NEOX) for XDNA2 (NPU2): prints the "
                    "data-movement plan of one invocation shape, or emits MLIR with mlir-aie >= 1.4 (IRON).")
    ap.add_argument("--dataflow", default=DEFAULT_DATAFLOW,
                    help="the data-movement description (default aie/rope/dataflow.json; another file only to try "
                         "a change to one)")
    ap.add_argument("--layout", help="layout of the description (default its first)")
    ap.add_argument("--family", help="family: norm or neox (default the description's first)")
    ap.add_argument("--ne0", "--tile", dest="ne0", type=int, default=128,
                    help="values per head row, i.e. which xclbin (a key of the family's kernel_stack; default 128)")
    ap.add_argument("--n-dims", type=int,
                    help="rotated dims, the RTP word n_dims (default the most the row takes: --ne0 where it can, 64 of "
                         "80)")
    ap.add_argument("--tokens", type=int, default=1, help="tokens of the invocation (default 1: a decode token)")
    ap.add_argument("--heads", type=int, default=32, help="heads of each token (default 32)")
    ap.add_argument("--x-head-stride", type=int, help="floats between x's heads (default --ne0)")
    ap.add_argument("--x-token-stride", type=int, help="floats between x's tokens (default heads x ne0)")
    ap.add_argument("--y-head-stride", type=int, help="floats between y's heads (default --ne0)")
    ap.add_argument("--y-token-stride", type=int, help="floats between y's tokens (default heads x ne0)")
    ap.add_argument("--cols", type=int, help="array columns, 1..max_columns (default max_columns)")
    ap.add_argument("--stack-bytes", type=int, help="core stack (default: the family's kernel_stack at --ne0)")
    ap.add_argument("--kernel-data-bytes", type=int,
                    help="core memory for the kernels' static data (default from the description)")
    ap.add_argument("--kernel-object", help="object file of the core program (default xdna_<design>_<family>.o, e.g. "
                                            "xdna_rope_norm.o)")
    ap.add_argument("--print-plan", action="store_true", help="print the data-movement plan (no mlir-aie needed)")
    ap.add_argument("--format", choices=["text", "json"], default="text", help="plan format")
    ap.add_argument("--list-tiles", action="store_true", help="print the head row lengths the family has an xclbin for")
    ap.add_argument("--list-contracts", action="store_true",
                    help="print 'contract source' per program of the family (source: the kernel file defining it)")
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
        plan = make_plan(desc, family, args.tokens, args.heads, args.ne0, args.n_dims, args.x_head_stride,
                         args.x_token_stride, args.y_head_stride, args.y_token_stride, args.cols, args.stack_bytes,
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
