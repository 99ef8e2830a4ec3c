#!/usr/bin/env python3
"""The scatter design's IRON program (aie/set_rows/design.py emit_mlir) run on stand-ins of IRON's classes
(tests/aie/check_barrier.py's, with the ones this program needs beside them: a numpy of types only, FIFOs
that record their links, fills and drains, kernels that record their calls, RTP buffers that record their
reads and writes, task groups that record when they open and finish, loops that record where they open
and close), and checked against the description (aie/set_rows/dataflow.json) read here:

  - per column of the array: x's memory-tile FIFO (one chunk of tile fp32 values, the description's name
    and depth) split in one part to the core's FIFO, the core's y FIFO (one chunk in the family's format,
    as 32-bit words) joined in one part into y's memory-tile FIFO, both links on the column's memory tile;
    the shim ends (x produced, y consumed) on the column's shim, handed to the Runtime per column; the
    runtime sequence's two tensors, x's fp32 values and y's words, in the operands' order;
  - one worker per column on its core, with its FIFO ends, its RTP buffer (the description's word count,
    written by the runtime), its barrier and the family's one kernel (f32_to_f16 or f32_to_q8_0) declared
    (x chunk, y chunk, int32), its stack the family's at the tile;
  - the core program as traced: wait on the barrier, read every RTP word, release the barrier, then a loop
    over the chunks word: acquire x and y, one call of the kernel on them with n = the tile, release both;
  - the runtime sequence: every used column's RTP words (contract 0, its block's rows x its segment's
    chunks, the layout version), then its barrier set, before any DMA; nothing for a column without rows;
  - the fills and drains, recomputed from the ids here: per used column and step, one fill of x (the step's
    rows), then a drain of y per run, only the step's last awaited; replayed word by word: the words filled,
    cut into chunks of the tile, are chunks of rows of x, and the words drained, cut into chunks of the
    family's format, are those chunks' places in the rows of y the ids name, every word of every id's row
    once; d0 within the wrap (the tile of 1024 as 512 words);
  - task groups: step j of every used column in group j, never more open than the description's steps in
    flight, each finished once, in order.

    set_rows_iron_check.py <repo root> <check_barrier.py>
"""

import importlib.util
import json
import sys
import types

root, barrier_py = sys.argv[1], sys.argv[2]


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# A numpy of types only (no numpy here, and the real one would not say what a type's shape is any better).
fake_np = types.ModuleType("numpy")


class _NdArray:
    def __class_getitem__(cls, item):
        return ("ndarray", tuple(item[0]), item[1])


class _Dtype:
    def __class_getitem__(cls, item):
        return ("dtype", item)


fake_np.ndarray, fake_np.dtype = _NdArray, _Dtype
fake_np.float32, fake_np.int32, fake_np.uint8 = "float32", "int32", "uint8"
fake_np.zeros = lambda n, dtype=None: ("zeros", n, dtype)
sys.modules["numpy"] = fake_np

cb = load("check_barrier", barrier_py)
cb.install_stand_ins()
design = load("xdna_scatter_design_under_test", f"{root}/aie/set_rows/design.py")
LINKS, FIFOS, DMAS, GROUPS = [], {}, [], []


class Fifo:
    def __init__(self, obj_type=None, name=None, depth=None, **kwargs):
        self.name, self.depth, self.obj_type = name, depth, obj_type
        FIFOS[name] = self

    def prod(self, *args, tile=None, **kwargs):
        return Handle(self, "prod", tile)

    def cons(self, *args, tile=None, **kwargs):
        return Handle(self, "cons", tile)


class Obj:  # an acquired object
    def __init__(self, handle):
        self.handle = handle


class Handle(cb.FifoHandle):
    def __init__(self, fifo, end, tile):
        self.fifo, self.end, self.tile = fifo, end, tile

    def acquire(self, n=1):
        cb.record("acquire", self, n)
        return Obj(self)

    def release(self, n=1):
        cb.record("release", self, n)

    def split(self, offsets, obj_types=None, names=None, depths=None, tile=None, **kwargs):
        LINKS.append(("split", self.fifo.name, self.end, list(offsets), list(names), list(depths), tile))
        return [Fifo(t, name=x, depth=dp) for t, x, dp in zip(obj_types, names, depths)]

    def join(self, offsets, obj_types=None, names=None, depths=None, tile=None, **kwargs):
        LINKS.append(("join", self.fifo.name, self.end, list(offsets), list(names), list(depths), tile))
        return [Fifo(t, name=x, depth=dp) for t, x, dp in zip(obj_types, names, depths)]

    def fill(self, tensor, tap=None, group=None, wait=False, **kwargs):
        cb.record("dma", self)
        DMAS.append((self.fifo.name, "fill", tensor, tap, group, wait))

    def drain(self, tensor, tap=None, group=None, wait=False, **kwargs):
        cb.record("dma", self)
        DMAS.append((self.fifo.name, "drain", tensor, tap, group, wait))


class Tap:
    def __init__(self, shape, offset, sizes, strides):
        self.shape, self.offset, self.sizes, self.strides = tuple(shape), offset, list(sizes), list(strides)

    def elements(self):
        (a, b, c, d), (sa, sb, sc, sd) = self.sizes, self.strides
        o = self.offset
        return [o + i * sa + j * sb + k * sc + m * sd for i in range(a) for j in range(b) for k in range(c)
                for m in range(d)]


class Kernel:
    def __init__(self, name, obj, arg_types):
        self.name, self.obj, self.arg_types = name, obj, list(arg_types)

    def __call__(self, *args):
        cb.record("call", self, args)


class Word(cb.Anything):  # an RTP word read in the core
    def __init__(self, i):
        self.i = i


class Buffer(cb.Buffer):
    def __init__(self, obj_type=None, name=None, initial_value=None, use_write_rtp=False, **kwargs):
        super().__init__(name=name, use_write_rtp=use_write_rtp)
        self.obj_type, self.initial_value = obj_type, initial_value

    def __getitem__(self, i):
        cb.record("read", self, i)
        return Word(i)

    def __setitem__(self, i, v):
        cb.record("write", self, (i, v))


class Worker(cb.Worker):
    def __init__(self, core_fn, fn_args=None, *args, tile=None, stack_size=None, **kwargs):
        super().__init__(core_fn, fn_args)
        self.tile, self.stack_size = tile, stack_size


class TaskGroup:
    def __init__(self):
        self.finished = 0
        GROUPS.append(self)
        cb.record("group", self)

    def finish(self):
        self.finished += 1
        cb.record("finish", self)


def range_(bound, *args, **kwargs):
    cb.record("loop", None, bound)
    yield cb.Anything()
    cb.record("end loop", None, bound)


iron = sys.modules["aie.iron"]
iron.ObjectFifo, iron.Worker, iron.Kernel, iron.Buffer, iron.TaskGroup = Fifo, Worker, Kernel, Buffer, TaskGroup
iron.Program = cb.TensorProgram
sys.modules["aie.iron.device"].Tile = lambda c, r: (c, r)
sys.modules["aie.helpers.taplib"].TensorAccessPattern = Tap
sys.modules["aie.iron.controlflow"].range_ = range_

errors = []
PATH = f"{root}/aie/set_rows/dataflow.json"
D = json.load(open(PATH))


def parts(total, n):
    """n consecutive blocks of `total`, the first total % n one larger: (first, size) each."""
    q, m = divmod(total, n)
    out, at = [], 0
    for i in range(n):
        out.append((at, q + (i < m)))
        at += q + (i < m)
    return out


def check(fam, ids, row_len, columns, xs=None, yr=None, ys=None, tile=None):
    LINKS.clear(); FIFOS.clear(); DMAS.clear(); GROUPS.clear()
    cb.EVENTS.clear(); cb.PROGRAM.clear()
    label = f"{fam} {len(ids)} row(s) {ids[:4]}{'...' if len(ids) > 4 else ''} of {row_len}, {columns} column(s)" + \
        (f", x stride {xs}" if xs else "") + (f", y {yr} rows {ys} B apart" if ys else "") + (f", tile {tile}" if tile else "")
    err = lambda e: errors.append(f"{label}: {e}")
    desc = design.load_description(PATH)
    plan = design.make_plan(desc, ids, None, row_len, xs, yr, ys, columns, tile, fam)
    if [c for c in plan.checks if not c[1]]:
        err(f"the plan fails {[c[0] for c in plan.checks if not c[1]]}")
        return label
    design.emit_mlir(desc, plan, "stand-in.o")
    if len(cb.PROGRAM) != 1:
        err("emit_mlir did not resolve one Program")
        return label
    prog = cb.PROGRAM[0]

    # The description, read here.
    lay = next(l for l in D["layouts"] if l["name"] == fam)
    x_mem = next(f for f in lay["fifos"] if f["from"] == "shim")
    y_mem = next(f for f in lay["fifos"] if f["to"] == "shim")
    x_core = next(f for f in lay["fifos"] if f.get("source") == x_mem["name"])
    y_core = next(f for f in lay["fifos"] if f.get("sink") == y_mem["name"])
    depth = lambda f: D["depths"][f["depth"]] if isinstance(f["depth"], str) else f["depth"]
    stacks = D["core_budget"]["kernel_stack"][fam]
    T = tile or max(int(t) for t in stacks if t.isdigit() and row_len % int(t) == 0)
    unit = D["units"][y_mem["object"]["unit"]]
    ychunk = unit * T if isinstance(unit, int) else unit["bytes"] * T // unit["values"]
    yw = ychunk // 4
    n, chunks = len(ids), row_len // T
    xs = xs or row_len
    yr = yr or max(ids) + 1
    ys = ys or chunks * ychunk
    arr, cp = D["array"], D["core_program"]
    idx = cp["rtp_words"]
    F = D["shim"]["steps_in_flight"]
    per = len(D["shim"]["bd_slots"][0]["y"])
    wrap = D["limits"]["wrap_max"]
    x_t = ("ndarray", (T,), ("dtype", "float32"))
    y_t = ("ndarray", (yw,), ("dtype", "int32"))
    contract = D["families"][fam][0]

    # FIFOs and links, per column.
    want_links = []
    for c in range(columns):
        mt = (c, arr["memtile_row"])
        want_links += [("split", f"{x_mem['name']}_{c}", "cons", [0], [f"{x_core['name']}_{c}"], [depth(x_core)], mt),
                       ("join", f"{y_mem['name']}_{c}", "prod", [0], [f"{y_core['name']}_{c}"], [depth(y_core)], mt)]
        for f, t in ((x_mem, x_t), (x_core, x_t), (y_core, y_t), (y_mem, y_t)):
            got = FIFOS.get(f"{f['name']}_{c}")
            if got is None or got.depth != depth(f) or got.obj_type != t:
                err(f"{f['name']}_{c}: missing, or not depth {depth(f)} of {t}")
    if LINKS != want_links:
        err(f"links {LINKS[:2]}..., expected {want_links[:2]}...")
    ends = prog.rt.arg_types[2:]
    want_ends = [[(f"{x_mem['name']}_{c}", "prod", (c, arr["shim_row"])) for c in range(columns)],
                 [(f"{y_mem['name']}_{c}", "cons", (c, arr["shim_row"])) for c in range(columns)]]
    if [[(h.fifo.name, h.end, h.tile) for h in hs] for hs in ends] != want_ends:
        err("shim ends: the shim produces x and consumes y, one end per column on its shim")
    x_len = (n - 1) * xs + row_len
    y_words = ((yr - 1) * ys + chunks * ychunk) // 4
    if prog.rt.arg_types[:2] != [("ndarray", (x_len,), ("dtype", "float32")), ("ndarray", (y_words,), ("dtype", "int32"))]:
        err(f"runtime sequence tensors {prog.rt.arg_types[:2]}, expected x {x_len} fp32, y {y_words} words")

    # The grid (the host's), for the RTP words and the DMAs.
    R = min(n, columns)
    S = 1 if n >= columns else max(1, min(chunks, columns // n))
    blocks, segs = parts(n, R), parts(chunks, S)
    grid = [(blocks[c // S], segs[c % S]) for c in range(R * S)]

    # Workers: one per column, its FIFO ends, RTP buffer, barrier, kernel; the traced core program.
    if [w.tile for w in prog.workers] != [(c, arr["first_core_row"]) for c in range(columns)]:
        err(f"workers on {[w.tile for w in prog.workers]}")
    seq = [e for e in cb.EVENTS if e[0] == "sequence"]
    first_dma = next((i for i, e in enumerate(seq) if e[1] == "dma"), len(seq))
    bar = cp["barrier"]
    for i, w in enumerate(prog.workers):
        if len(w.fn_args) != 5:
            err(f"worker {i}: {len(w.fn_args)} arguments")
            continue
        xe, ye, rtp, barrier, k = w.fn_args
        if (xe.fifo.name, xe.end, ye.fifo.name, ye.end) != (f"{x_core['name']}_{i}", "cons", f"{y_core['name']}_{i}", "prod"):
            err(f"worker {i}: FIFO ends {xe.fifo.name} {xe.end}, {ye.fifo.name} {ye.end}")
        if not isinstance(rtp, Buffer) or not rtp.rtp or rtp.obj_type != ("ndarray", (cp["rtp_word_count"],), ("dtype", "int32")):
            err(f"worker {i}: no RTP buffer of {cp['rtp_word_count']} int32 words written by the runtime")
        if not isinstance(k, Kernel) or (k.name, k.obj, k.arg_types) != (contract, "stand-in.o", [x_t, y_t, "int32"]):
            err(f"worker {i}: kernel {getattr(k, 'name', k)}, expected {contract}(x chunk, y chunk, int32)")
        if w.stack_size != stacks[str(T)]:
            err(f"worker {i}: stack {w.stack_size}, the family's at tile {T} is {stacks[str(T)]}")
        ev = [(e[1], e[2], e[3]) for e in cb.EVENTS if e[0] == f"core {i}"]
        got = [("wait", ev[0][2])] if ev and ev[0][0] == "wait" and ev[0][1] is barrier else []
        for kind, o, v in ev[len(got):]:
            if kind == "read" and o is rtp:
                got.append(("read", v))
            elif kind == "release" and o is barrier:
                got.append(("barrier release", v))
            elif kind == "loop":
                got.append(("loop", v.i if isinstance(v, Word) else v))
            elif kind == "end loop":
                got.append(("end loop",))
            elif kind in ("acquire", "release"):
                got.append((kind, o.fifo.name, v))
            elif kind == "call":
                got.append(("call", o.name, [a.handle.fifo.name if isinstance(a, Obj) else a for a in v]))
            else:
                got.append((kind,))
        xn, yn = f"{x_core['name']}_{i}", f"{y_core['name']}_{i}"
        want = [("wait", bar["acquire"]["value"])] + [("read", j) for j in range(cp["rtp_word_count"])] + \
            [("barrier release", bar["release"]["value"]), ("loop", idx["chunks"]), ("acquire", xn, 1), ("acquire", yn, 1),
             ("call", contract, [xn, yn, T]), ("release", xn, 1), ("release", yn, 1), ("end loop",)]
        if got != want:
            j = next((j for j, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            err(f"core {i}: program differs at event {j}: {got[j:j + 2]}, expected {want[j:j + 2]}")
        # The sequence: this core's words, then its set, before any DMA; nothing for a column without rows.
        writes = [(j, e[3]) for j, e in enumerate(seq) if e[1] == "write" and e[2] is rtp]
        sets = [j for j, e in enumerate(seq) if e[1] == "set" and e[2] is barrier]
        if i >= len(grid):
            if writes or sets:
                err(f"column {i}: a column without rows gets RTP words or a set")
            continue
        (_, rows), (_, g) = grid[i]
        words = {idx["contract"]: 0, idx["chunks"]: rows * g, idx["version"]: cp["rtp_layout_version"]}
        if dict(v for _, v in writes) != words or len(writes) != len(words):
            err(f"column {i}: RTP words {[v for _, v in writes]}, expected {words}")
        if len(sets) != 1 or seq[sets[0]][3] != bar["set_value"] or not writes or sets[0] < max(j for j, _ in writes) \
                or sets[0] > first_dma:
            err(f"column {i}: the barrier is not set once, after the words and before the first DMA")

    # Fills and drains, per column, recomputed from the ids; replayed word by word.
    for c in range(columns):
        mine = [x for x in DMAS if x[0] in (f"{x_mem['name']}_{c}", f"{y_mem['name']}_{c}")]
        if c >= len(grid):
            if mine:
                err(f"column {c}: moves data, the column has no rows")
            continue
        (first, count), (c0, g) = grid[c]
        runs, r = [], first
        while r < first + count:
            k = 1
            while r + k < first + count and k < 256 and ids[r + k] == ids[r + k - 1] + 1:
                k += 1
            runs.append((r, k))
            r += k
        want, got = [], []
        for s in range(0, len(runs), per):
            step = runs[s:s + per]
            want.append(("fill", s // per, False))
            want += [("drain", s // per, j == len(step) - 1) for j in range(len(step))]
        for name, kind, tensor, tap, group, wait in mine:
            got.append((kind, GROUPS.index(group) if group in GROUPS else None, wait))
            if tensor.index != (0 if kind == "fill" else 1):
                err(f"column {c}: a {kind} of tensor {tensor.index}")
            if tap.sizes[3] > wrap or tap.sizes[2] > wrap or tap.strides[3] != 1 or tap.strides[2] != tap.sizes[3]:
                err(f"column {c}: {kind} tap sizes {tap.sizes} strides {tap.strides}: not chunks within the wrap")
        if got != want:
            j = next((j for j, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            err(f"column {c}: DMA {j}: {got[j:j + 1]}, expected {want[j:j + 1]} ({len(got)} vs {len(want)})")
        xw = [e for x in mine if x[1] == "fill" for e in x[3].elements()]
        yws = [e for x in mine if x[1] == "drain" for e in x[3].elements()]
        expect = {}
        for rr in range(first, first + count):
            for q in range(c0, c0 + g):
                expect[rr * xs + q * T] = [ids[rr] * ys // 4 + q * yw + j for j in range(yw)]
        cx = [xw[j:j + T] for j in range(0, len(xw), T)]
        cy = [yws[j:j + yw] for j in range(0, len(yws), yw)]
        if len(cx) != len(cy) or any(a != list(range(a[0], a[0] + T)) for a in cx) or \
                {a[0]: b for a, b in zip(cx, cy)} != expect or len(cx) != len(expect):
            err(f"column {c}: the taps do not move row r's chunks to row ids[r] of y, each once")

    # Task groups in flight, each finished once, in order.
    open_groups, worst, finished = [], 0, []
    for e in seq:
        if e[1] == "group":
            open_groups.append(e[2])
            worst = max(worst, len(open_groups))
        elif e[1] == "finish":
            if e[2] in open_groups:
                open_groups.remove(e[2])
            finished.append(GROUPS.index(e[2]))
    if worst > F or any(g.finished != 1 for g in GROUPS) or finished != list(range(len(GROUPS))):
        err(f"{worst} task groups open at once (the description has {F} steps in flight), finished {finished[:6]}")
    return label


done = []
for shape in (("f16", [517], 1024, 8), ("q8_0", [517], 1024, 8), ("q8_0", [3], 4096, 8), ("f16", [7], 14336, 8),
              ("q8_0", [7], 14336, 8),
              ("f16", list(range(512)), 256, 8), ("f16", list(range(600)), 128, 1), ("q8_0", list(range(7, -1, -1)), 128, 1),
              ("f16", [5, 6, 7, 100], 1024, 8, None, 4096, 8192), ("q8_0", [10, 11, 2], 256, 1),
              ("q8_0", [40, 41, 42, 3, 9, 8, 100, 101, 7, 60, 61], 2048, 3, 2112, 200, 4352, 512),
              ("f16", [0, 1, 5, 6, 7], 2048, 1, 3000), ("f16", list(range(300, 0, -1)) + [400, 401], 128, 5),
              ("q8_0", [2, 0, 1], 384, 8)):
    done.append(check(*shape))
for e in errors[:20]:
    print(f"  {e}")
print(f"IRON program on stand-ins: {len(done)} programs " +
      (f"FAILED ({len(errors)} error(s))" if errors else "as the description says"))
sys.exit(1 if errors else 0)
