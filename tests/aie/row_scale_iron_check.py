#!/usr/bin/env python3
"""The IRON program aie/add/design.py builds for aie/row_scale/dataflow.json, run on stand-ins of IRON's classes
(tests/aie/check_barrier.py's, with FIFOs, taps, kernels and RTP words of this file's own that record what
they are given), with a bare Python 3 (no mlir-aie, no numpy):

  - per column, x split to the 2 core rows (offsets 0 and the tile), w's memory-tile FIFO of one-value
    objects forwarded to one FIFO both cores consume (IRON's broadcast), y joined; the depths of the
    description; one worker per core with its ends (x and w consumed, y produced), its kernel declared
    (x chunk, y chunk, int32 n, float32 w);
  - each core's program as traced: the barrier's wait, the 4 RTP words read, its release; then a loop over
    the word rows: acquire w, read its value (object[0]), a loop over the word row_chunks: acquire x and y,
    row_scale_f32(x, y, tile, the value), release x and y; after that loop, release w;
  - the sequence: each working core's words (contract 0, rows and row_chunks of its column as the host's
    grid gives them, version), then its barrier set, before any fill; nothing for a column without work;
  - a replay: the fills of x and w are fed, in the order the sequence issues them, through the memory tile
    (x objects of 2 chunks split, chunk k to core row k; w objects of one value to both cores) into each
    core's program as traced, run with the words the sequence wrote (its loops, acquires and releases in
    their order: a core that takes an object it has not got, releases one it does not hold or reads a
    value it has released fails by name); y's chunks joined per group and scattered by the drains; every
    output value must be x * w of its own row (w of row r at r x w stride, or the one value), every value
    between rows untouched, every object consumed. The products are plain IEEE float32 products, not the
    core's emulated multiply (aie/row_scale/kernels/row_scale.cc): the replay checks where each value
    comes from and goes, not the kernel's rounding.

    row_scale_iron_check.py <repo root> <check_barrier.py>
"""

import importlib.util
import sys
import types
from array import array

root, barrier_py = sys.argv[1], sys.argv[2]
REAL = f"{root}/aie/row_scale/dataflow.json"


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# A numpy of types only, so that the FIFOs' and kernels' declared types can be compared.
fake_np = types.ModuleType("numpy")


class _NdArray:
    def __class_getitem__(cls, item):
        return ("ndarray", tuple(item[0]), item[1])


class _Dtype:
    def __class_getitem__(cls, item):
        return ("dtype", item)


fake_np.ndarray, fake_np.dtype = _NdArray, _Dtype
fake_np.float32, fake_np.int32 = "float32", "int32"
fake_np.zeros = lambda n, dtype=None: ("zeros", n, dtype)
sys.modules["numpy"] = fake_np

cb = load("check_barrier", barrier_py)
cb.install_stand_ins()  # before design.py's emit_mlir imports IRON
design = load("xdna_rows_design", f"{root}/aie/add/design.py")
LINKS, FIFOS, DMAS = [], {}, []


class Fifo:
    def __init__(self, obj_type=None, name=None, depth=None, **kwargs):
        self.obj_type, self.name, self.depth = obj_type, name, depth
        FIFOS[name] = self

    def prod(self, *args, **kwargs):
        return Handle(self, "prod")

    def cons(self, *args, **kwargs):
        return Handle(self, "cons")


class Obj:  # an acquired object; indexing it is a load of one value
    def __init__(self, handle):
        self.handle = handle

    def __getitem__(self, i):
        load_ = Load(self, i)
        cb.record("load", self.handle, load_)
        return load_


class Load:
    def __init__(self, obj, i):
        self.obj, self.i = obj, i


class Handle(cb.FifoHandle):
    def __init__(self, fifo, end):
        self.fifo, self.end = fifo, end

    def acquire(self, n=1):
        obj = Obj(self)
        cb.record("acquire", self, (n, obj))
        return obj

    def release(self, n=1):
        cb.record("release", self, n)

    def split(self, offsets, obj_types=None, names=None, depths=None, **kwargs):
        LINKS.append(("split", self.fifo.name, list(offsets), list(names), list(depths), list(obj_types)))
        return [Fifo(t, x, dp) for t, x, dp in zip(obj_types, names, depths)]

    def join(self, offsets, obj_types=None, names=None, depths=None, **kwargs):
        LINKS.append(("join", self.fifo.name, list(offsets), list(names), list(depths), list(obj_types)))
        return [Fifo(t, x, dp) for t, x, dp in zip(obj_types, names, depths)]

    def forward(self, obj_type=None, depth=None, name=None, **kwargs):
        LINKS.append(("forward", self.fifo.name, None, [name], [depth], [obj_type]))
        return Fifo(obj_type, name, depth)

    def fill(self, tensor, tap=None, **kwargs):
        cb.record("dma", self)
        DMAS.append((self.fifo.name, tap))

    def drain(self, tensor, tap=None, **kwargs):
        cb.record("dma", self)
        DMAS.append((self.fifo.name, tap))


class Tap:
    def __init__(self, shape, offset, sizes, strides):
        self.shape, self.offset, self.sizes, self.strides = shape, offset, list(sizes), list(strides)


class Kernel:
    def __init__(self, name, obj, arg_types):
        self.name, self.arg_types = name, list(arg_types)

    def __call__(self, *args):
        cb.record("call", self, args)


class Word(cb.Anything):  # an RTP word read in the core: which word it is
    def __init__(self, i):
        self.i = i

    def __eq__(self, other):
        return ("word ==", self.i, other)

    __hash__ = object.__hash__


class Buffer(cb.Buffer):
    def __getitem__(self, i):
        cb.record("read", self, i)
        return Word(i)

    def __setitem__(self, i, v):
        cb.record("write", self, (i, v))


class Worker(cb.Worker):
    def __init__(self, core_fn, fn_args=None, *args, tile=None, **kwargs):
        super().__init__(core_fn, fn_args)
        self.tile = tile


def range_(bound, *args, **kwargs):
    cb.record("loop", None, bound)
    yield cb.Anything()  # IRON traces a loop body once
    cb.record("end loop", None, bound)


iron = sys.modules["aie.iron"]
iron.ObjectFifo, iron.Worker, iron.Kernel, iron.Buffer = Fifo, Worker, Kernel, Buffer
sys.modules["aie.iron.device"].Tile = lambda c, r: (c, r)
sys.modules["aie.helpers.taplib"].TensorAccessPattern = Tap
sys.modules["aie.iron.controlflow"].range_ = range_
for name in ("aie.dialects", "aie.dialects.arith", "aie.ir"):
    sys.modules[name] = cb.StubModule(name)
    sys.modules[name].__path__ = []
sys.modules["aie"].dialects, sys.modules["aie"].ir = sys.modules["aie.dialects"], sys.modules["aie.ir"]
errors = []


def blocks(total, n):
    q, m = divmod(total, n)
    out, at = [], 0
    for i in range(n):
        out.append((at, q + (1 if i < m else 0)))
        at += q + (1 if i < m else 0)
    return out


def addresses(t):
    """The tensor addresses a tap moves, in order (sizes and strides outermost first, 4 dimensions)."""
    (s3, s2, s1, s0), (t3, t2, t1, t0) = t.sizes, t.strides
    return [t.offset + i3 * t3 + i2 * t2 + i1 * t1 + i0 * t0
            for i3 in range(s3) for i2 in range(s2) for i1 in range(s1) for i0 in range(s0)]


def f32(values):
    return list(array("f", values))


class Fault(Exception):
    pass


def read(tensor, addrs, what):
    if any(not 0 <= a < len(tensor) for a in addrs):
        raise Fault(f"{what}'s fills read past the tensor of {len(tensor)} values")
    return [tensor[a] for a in addrs]


def tree(events):
    """The traced body as nested steps: ("loop", word, [steps]) or the event (kind, object, value)."""
    stack = [[]]
    for kind, obj, value in events:
        if kind == "loop":
            stack.append([])
            stack[-2].append(("loop", value, stack[-1]))
        elif kind == "end loop":
            stack.pop()
        else:
            stack[-1].append((kind, obj, value))
    return stack[0]


def run_core(steps, words, queues, out, tile, name):
    """Runs a core's traced program: loops by the RTP words written, acquires from the core's input queues
    (an object the memory tile sent it) or of a new output object, loads, kernel calls, releases in the
    FIFO's order (the oldest held first)."""
    held = {}     # FIFO name -> its held objects, oldest first
    concrete = {}  # id(Obj) -> the object it stands for in this iteration
    loaded = {}   # id(Load) -> the value it read
    calls = [0]

    def run(body):
        for kind, obj, value in body:
            if kind == "loop":  # (loop, its bound's word, its body)
                for _ in range(words[obj.i]):
                    run(value)
            elif kind == "acquire":
                fifo = obj.fifo.name
                if obj.end == "cons":
                    if not queues.get(fifo):
                        raise Fault(f"{name}: acquires {fifo}, which the memory tile has no more objects of")
                    o = {"data": queues[fifo].pop(0), "live": True}
                else:
                    o = {"data": [None] * tile, "live": True}
                held.setdefault(fifo, []).append(o)
                concrete[id(value[1])] = o
            elif kind == "load":
                o = concrete.get(id(value.obj))
                if o is None or not o["live"]:
                    raise Fault(f"{name}: reads {obj.fifo.name}'s value from an object it has released")
                loaded[id(value)] = o["data"][value.i]
            elif kind == "release":
                fifo = obj.fifo.name
                if not held.get(fifo):
                    raise Fault(f"{name}: releases {fifo}, of which it holds no object")
                o = held[fifo].pop(0)
                o["live"] = False
                if obj.end == "prod":
                    out.append(o["data"])
            elif kind == "call":
                x_obj, y_obj, n, w = value
                x, y = concrete[id(x_obj)], concrete[id(y_obj)]
                if not (x["live"] and y["live"]) or not isinstance(w, Load) or id(w) not in loaded:
                    raise Fault(f"{name}: a kernel call on objects it does not hold, or a value it did not read")
                if n != tile:
                    raise Fault(f"{name}: a kernel call with n = {n}, the tile is {tile}")
                y["data"][:] = f32([a * loaded[id(w)] for a in x["data"]])
                calls[0] += 1
    run(steps)
    left = {f: len(q) for f, q in queues.items() if q}
    if left or any(held.values()):
        raise Fault(f"{name}: objects left unconsumed {left} or still held {[f for f, h in held.items() if h]}")
    return calls[0]


def check(tile, cols, rows, row_len, stride=None, w_stride=1, replay=False):
    LINKS.clear(); FIFOS.clear(); DMAS.clear()
    stride = stride or row_len
    label = f"row_scale tile {tile} cols {cols} rows {rows}x{row_len} stride {stride} w stride {w_stride}"
    err = lambda e: errors.append(f"{label}: {e}")
    desc = design.load_description(REAL)
    raw = desc.raw
    p = design.make_plan(desc, tile=tile, cols=cols, rows=rows, row_len=row_len, row_stride=stride, w_stride=w_stride)
    failing = [c[0] for c in p.checks if not c[1]]
    if failing:
        err(f"the plan fails {failing}")
        return 0
    cb.EVENTS.clear(); cb.PROGRAM.clear()
    design.emit_mlir(desc, p, "stand-in.o")
    prog = cb.PROGRAM[0]
    P = raw["array"]["core_rows"]
    idx = raw["core_program"]["rtp_words"]
    fifo = {f["name"]: f for f in raw["layouts"][0]["fifos"]}
    depth = lambda f: raw["depths"][f["depth"]] if isinstance(f["depth"], str) else f["depth"]
    f32_t = ("dtype", "float32")
    chunk_t = lambda n: ("ndarray", (n * tile,), f32_t)
    value_t = ("ndarray", (1,), f32_t)

    # The host's grid, written again.
    groups = row_len // (P * tile)
    R = min(rows, cols)
    S = 1 if rows >= cols else max(1, min(groups, cols // rows))
    rb, sb = blocks(rows, R), blocks(groups, S)
    grid = [(rb[c // S], sb[c % S]) for c in range(R * S)]

    # FIFOs and links.
    want_links = []
    for c in range(cols):
        want_links += [("split", f"x_l3l2_{c}", [k * tile for k in range(P)], [f"x_l2l1_{c}_{k}" for k in range(P)],
                        [depth(fifo["x_l2l1"])] * P, [chunk_t(1)] * P),
                       ("forward", f"v_l3l2_{c}", None, [f"v_l2l1_{c}"], [depth(fifo["v_l2l1"])], [value_t]),
                       ("join", f"y_l2l3_{c}", [k * tile for k in range(P)], [f"y_l1l2_{c}_{k}" for k in range(P)],
                        [depth(fifo["y_l1l2"])] * P, [chunk_t(1)] * P)]
        for name, t in (("x_l3l2", chunk_t(P)), ("v_l3l2", value_t), ("y_l2l3", chunk_t(P))):
            f = FIFOS.get(f"{name}_{c}")
            if f is None or (f.obj_type, f.depth) != (t, depth(fifo[name])):
                err(f"{name}_{c}: {f and (f.obj_type, f.depth)}, expected {(t, depth(fifo[name]))}")
    if LINKS != want_links:
        bad = next(i for i, (a, b) in enumerate(zip(LINKS + [None] * len(want_links), want_links)) if a != b)
        err(f"link {bad}: {LINKS[bad] if bad < len(LINKS) else None}, expected {want_links[bad]}")

    # Workers, their ends and kernels, and each core's program as traced.
    if [w.tile for w in prog.workers] != [(c, raw["array"]["first_core_row"] + k) for c in range(cols) for k in range(P)]:
        err(f"workers on {[w.tile for w in prog.workers]}")
    seq = [e for e in cb.EVENTS if e[0] == "sequence"]
    first_dma = next((i for i, e in enumerate(seq) if e[1] == "dma"), len(seq))
    bodies, words_of = {}, {}
    for i, w in enumerate(prog.workers):
        c, k = divmod(i, P)
        ends, (rtp, bar), ks = w.fn_args[:3], w.fn_args[3:5], w.fn_args[5:]
        want_ends = [(f"x_l2l1_{c}_{k}", "cons"), (f"v_l2l1_{c}", "cons"), (f"y_l1l2_{c}_{k}", "prod")]
        if [(h.fifo.name, h.end) for h in ends] != want_ends:
            err(f"core {w.tile}: ends {[(h.fifo.name, h.end) for h in ends]}, expected {want_ends}")
        want_types = [chunk_t(1), chunk_t(1), "int32", "float32"]
        if [(x.name, x.arg_types) for x in ks] != [("row_scale_f32", want_types)]:
            err(f"core {w.tile}: kernels {[(x.name, x.arg_types) for x in ks]}, expected row_scale_f32 of {want_types}")
        ev = [e for e in cb.EVENTS if e[0] == f"core {i}"]
        rel = next((j for j, e in enumerate(ev) if e[1] == "release" and e[2] is bar), len(ev))
        head = [e[1] for e in ev[:rel]]
        if head != ["wait"] + ["read"] * len(idx) or rel == len(ev):
            err(f"core {w.tile}: before its barrier's release {head}, expected a wait and {len(idx)} reads")
        body = [(e[1], e[2], e[3]) for e in ev[rel + 1:]]
        bodies[i] = tree(body)
        # The program's form: per row (loop on the word rows) the w acquire and its value read, the row's
        # chunks (loop on row_chunks: x and y acquired, the call with n = tile and the value, x and y
        # released), then w released.
        xn, vn, yn = (h.fifo.name for h in ends)
        got = []
        for kind, o, v in body:
            if kind == "loop":
                got.append(("loop", v.i if isinstance(v, Word) else v))
            elif kind == "end loop":
                got.append(("end loop",))
            elif kind in ("acquire", "release"):
                got.append((kind, o.fifo.name))
            elif kind == "load":
                got.append(("load", o.fifo.name, v.i))
            elif kind == "call":
                got.append(("call", o.name, [a.handle.fifo.name if isinstance(a, Obj) else
                                             ("value of", a.obj.handle.fifo.name) if isinstance(a, Load) else a
                                             for a in v]))
            else:
                got.append((kind,))
        want = [("loop", idx["rows"]), ("acquire", vn), ("load", vn, 0), ("loop", idx["row_chunks"]),
                ("acquire", xn), ("acquire", yn), ("call", "row_scale_f32", [xn, yn, tile, ("value of", vn)]),
                ("release", xn), ("release", yn), ("end loop",), ("release", vn), ("end loop",)]
        if got != want:
            diff = next((j for j, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            err(f"core {w.tile}: the core program differs at event {diff}: {got[diff:diff + 2]}, expected "
                f"{want[diff:diff + 2]} (per row: acquire w, its value, the row's chunks, release w)")
        # The sequence: the words of its column (the host's), then the set, before any DMA.
        writes = [(j, e[3]) for j, e in enumerate(seq) if e[1] == "write" and e[2] is rtp]
        sets = [j for j, e in enumerate(seq) if e[1] == "set" and e[2] is bar]
        if c >= len(grid):
            if writes or sets:
                err(f"core {w.tile}: a column without work gets RTP words or a set")
            continue
        (_, n), (_, g) = grid[c]
        want_words = {idx["contract"]: 0, idx["rows"]: n, idx["row_chunks"]: g,
                      idx["version"]: raw["core_program"]["rtp_layout_version"]}
        words_of[i] = dict(v for _, v in writes)
        if words_of[i] != want_words or len(writes) != len(idx):
            err(f"core {w.tile}: RTP words {words_of[i]}, expected {want_words}")
        if len(sets) != 1 or sets[0] < max(j for j, _ in writes) or sets[0] > first_dma:
            err(f"core {w.tile}: the barrier is not set once, after the words and before the first DMA")

    # The fills of w: per column and step, the values of the step's rows at w's stride from its first row
    # (no segment offset), or the one value once per row.
    per_step = min(256, raw["limits"]["repeat_max"] + 1)
    for c, ((first, n), _) in enumerate(grid):
        got = [a for f, t in DMAS if f == f"v_l3l2_{c}" for a in addresses(t)]
        want = [0] * n if w_stride == 0 else [r * w_stride for r in range(first, first + n)]
        if got != want:
            err(f"column {c}: w's fills read values {got[:4]}..., expected {want[:4]}... (rows {first}..{first + n - 1})")
        taps = [t for f, t in DMAS if f == f"v_l3l2_{c}"]
        if w_stride and len(taps) != -(-n // per_step):
            err(f"column {c}: {len(taps)} w fills, expected one per step")
        if any(t.sizes[0] > raw["limits"]["iteration_max"] for t in taps):
            err(f"column {c}: a w fill past iteration_max")
    # x's fills and y's drains: per column and step, the step's rows of the column's segment as runs of d0
    # (the tile, halved while past the wrap), at the row's stride; none for a column without work.
    wrap = raw["limits"]["wrap_max"]
    d0 = tile
    while d0 > wrap and d0 % 2 == 0:
        d0 //= 2
    for c in range(cols):
        if c >= len(grid):
            if any(f.endswith(f"_{c}") for f, _ in DMAS):
                err(f"column {c}: DMAs for a column without work")
            continue
        (first, n), (g0, g) = grid[c]
        want = [(r0 * stride + g0 * P * tile, [1, min(per_step, first + n - r0), g * P * tile // d0, d0], [0, stride, d0, 1])
                for r0 in range(first, first + n, per_step)]
        for name in ("x_l3l2", "y_l2l3"):
            got = [(t.offset, t.sizes, t.strides) for f, t in DMAS if f == f"{name}_{c}"]
            if got != want:
                err(f"column {c}: {name} taps {got[:2]}..., expected {want[:2]}...")
    if not replay:
        return 1

    # The replay: x and w through the memory tile and the cores' programs, y back through the join and
    # the drains.
    x = f32([((i * 7) % 65521 + 1) / 64.0 for i in range((rows - 1) * stride + row_len)])
    w = f32([1.0 + j / 1024.0 for j in range(1 if w_stride == 0 else (rows - 1) * w_stride + 1)])
    y = [None] * ((rows - 1) * stride + row_len)
    total = 0
    try:
        for c in range(len(grid)):
            xs = read(x, [a for f, t in DMAS if f == f"x_l3l2_{c}" for a in addresses(t)], f"column {c}: x")
            ws = read(w, [a for f, t in DMAS if f == f"v_l3l2_{c}" for a in addresses(t)], f"column {c}: w")
            group = P * tile
            if len(xs) % group:
                raise Fault(f"column {c}: x's fills move {len(xs)} values, not whole objects of {group}")
            outs = []
            for k in range(P):
                queues = {f"x_l2l1_{c}_{k}": [xs[o + k * tile:o + (k + 1) * tile] for o in range(0, len(xs), group)],
                          f"v_l2l1_{c}": [[v] for v in ws]}
                outs.append([])
                total += run_core(bodies[c * P + k], words_of[c * P + k], queues, outs[k], tile, f"core ({c}, {k})")
            if len({len(o) for o in outs}) != 1:
                raise Fault(f"column {c}: its cores wrote {[len(o) for o in outs]} chunks: the join would stall")
            joined = [v for j in range(len(outs[0])) for k in range(P) for v in outs[k][j]]
            addrs = [a for f, t in DMAS if f == f"y_l2l3_{c}" for a in addresses(t)]
            if any(not 0 <= a < len(y) for a in addrs):
                raise Fault(f"column {c}: y's drains write past the tensor of {len(y)} values")
            if len(addrs) != len(joined):
                raise Fault(f"column {c}: y's drains take {len(addrs)} values, its cores wrote {len(joined)}")
            for a, v in zip(addrs, joined):
                if y[a] is not None:
                    raise Fault(f"y[{a}] written twice")
                y[a] = v
    except Fault as e:
        err(f"replay: {e}")
        return 0
    bad = []
    for r in range(rows):
        wr = w[0 if w_stride == 0 else r * w_stride]
        want = f32([x[r * stride + i] * wr for i in range(row_len)])
        got = y[r * stride:r * stride + row_len]
        if got != want:
            i = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
            bad.append(f"row {r} value {i}: {got[i]}, x * w of its row is {want[i]}")
        gap = y[r * stride + row_len:(r + 1) * stride] if r + 1 < rows else []
        if any(v is not None for v in gap):
            bad.append(f"row {r}: written between rows")
    if bad:
        err(f"replay: {len(bad)} row(s) wrong, e.g. {bad[:2]}")
    if total * tile != rows * row_len:
        err(f"replay: {total} kernel calls of {tile} values for {rows} x {row_len} values")
    return 1


done = 0
# The program's form over every tile, 1, 3 and 8 columns, w one value per row (5 apart) or one for all rows.
for tile in (64, 128, 256, 512, 1024):
    for cols in (1, 3, 8):
        done += check(tile, cols, 64, 4 * 2 * tile)
        done += check(tile, cols, 3, 7 * 2 * tile, w_stride=0)
        done += check(tile, cols, 3, 7 * 2 * tile, w_stride=5)  # 3 rows over 8 columns: 2 segments a row
# The replay, on shapes of tests/kernels/test_row_scale_stream.cpp and a few more: 8 expert rows; one long
# row over 2 columns (each reading the row's value: no segment offset); strided rows and values; one column
# of 300 rows (2 steps, the second of 44 rows) with values 2 apart; one value for every row (3 rows per
# column; 300 rows in one column: fills of at most iteration_max rows); 2 rows over 8 columns (4 segments
# each, strided rows).
replayed = [(1024, 8, 8, 2048, None, 1), (1024, 8, 1, 4096, None, 0), (256, 8, 37, 1536, 1600, 3),
            (64, 1, 300, 128, None, 2), (1024, 8, 24, 2048, None, 0), (64, 1, 300, 128, None, 0),
            (128, 8, 2, 2048, 2100, 5)]
for tile, cols, rows, row_len, stride, w_stride in replayed:
    done += check(tile, cols, rows, row_len, stride, w_stride, replay=True)
for e in errors[:20] + [e for e in errors[20:] if "replay" in e][:3]:
    print(f"  {e}")
values = sum(r * n for _, _, r, n, _, _ in replayed)
print(f"row_scale IRON program on stand-ins: {done} programs, {len(replayed)} replayed value by value ({values} values) " +
      (f"FAILED ({len(errors)} error(s))" if errors else "as the description says, every output x * w of its row"))
sys.exit(1 if errors else 0)
