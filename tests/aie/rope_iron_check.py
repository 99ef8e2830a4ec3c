#!/usr/bin/env python3
"""The rope design's IRON program (aie/rope/design.py emit_mlir) run on stand-ins of IRON's classes
(tests/aie/check_barrier.py's, with the ones this program needs beside them: a numpy of types only, FIFOs
that record their links, fills and drains, loops and branches that record where they open and close, task
groups that record when they open and finish), and checked against the description (aie/rope/dataflow.json)
read here:

  - per column of the array: x's and cs's memory-tile FIFOs, each split in one part to the core's FIFO, and
    y's core FIFO joined in one part into its memory-tile FIFO, of the description's names and depths, all
    of one head row (ne0 fp32 values) per object; the shim ends (x and cs produced, y consumed, on the
    column's shim), handed to the Runtime per operand and column; the runtime sequence's tensors (x and y
    the views' extents, cs one row per token) in the operands' "arg" order;
  - one worker per column on its core row, with its FIFO ends (x and cs consumed, y produced), its RTP
    buffer (rtp_word_count int32 words written by the runtime), its barrier, the family's program of
    rope.cc declared (x, cs, y as head rows, n_dims and ne0 int32) and the family's stack;
  - the core program as traced: wait on the barrier, read every RTP word, release the barrier, then a
    loop over the word tokens: acquire cs once, a loop over the word heads: acquire x and y, one call
    (x, cs, y, the word n_dims, ne0), release x and y; release cs after the heads;
  - the runtime sequence: every used column's RTP words (the host's: contract 0, its block's tokens, its
    segment's heads, n_dims, the layout version), then its barrier set, before any DMA, nothing for a
    column without work; per step and used column a fill of x, a fill of cs and an awaited drain of y
    in step j's task group, the taps replayed word by word: x's words, in order, the column's tokens x
    segment heads head row by head row, cs's its tokens' angle rows, y's the same head rows of y as x's;
    over the columns every head row of x and y once; never more task groups open than the description's
    steps in flight, each finished once, in order;
  - the shapes include the sample invocation scripts/build-npu-kernels.sh emits every xclbin with (64 tokens
    of 8 heads, each family and head row length).

    rope_iron_check.py <repo root> <check_barrier.py>
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
fake_np.float32, fake_np.int32 = "float32", "int32"
fake_np.zeros = lambda n, dtype=None: ("zeros", n, dtype)
sys.modules["numpy"] = fake_np

cb = load("check_barrier", barrier_py)
cb.install_stand_ins()
design = load("xdna_rope_design_under_test", f"{root}/aie/rope/design.py")
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

    def forward(self, *args, **kwargs):
        LINKS.append(("forward", self.fifo.name))
        return Fifo(name="forward")

    def fill(self, tensor, tap=None, group=None, wait=False, **kwargs):
        cb.record("dma", self)
        DMAS.append((self.fifo.name, "fill", tensor, tap, group, wait))

    def drain(self, tensor, tap=None, group=None, wait=False, **kwargs):
        cb.record("dma", self)
        DMAS.append((self.fifo.name, "drain", tensor, tap, group, wait))


class Tap:
    def __init__(self, shape, offset, sizes, strides):
        self.shape, self.offset, self.sizes, self.strides = tuple(shape), offset, list(sizes), list(strides)

    def words(self):
        o, (s3, s2, s1, s0), (n3, n2, n1, n0) = self.offset, self.strides, self.sizes
        return [o + a * s3 + b * s2 + c * s1 + e * s0 for a in range(n3) for b in range(n2) for c in range(n1)
                for e in range(n0)]


class Kernel:
    def __init__(self, name, obj, arg_types):
        self.name, self.obj, self.arg_types = name, obj, list(arg_types)

    def __call__(self, *args):
        cb.record("call", self, args)


class Word(cb.Anything):  # an RTP word read in the core
    def __init__(self, i):
        self.i = i

    def __eq__(self, other):
        return ("word ==", self.i, other)

    __hash__ = object.__hash__


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


class if_:
    def __init__(self, cond, *args, **kwargs):
        self.cond = cond

    def __enter__(self):
        cb.record("if", None, self.cond)
        return self

    def __exit__(self, *exc):
        cb.record("end if", None)
        return False


class else_:
    def __init__(self, taken, *args, **kwargs):
        pass

    def __enter__(self):
        cb.record("else", None)
        return self

    def __exit__(self, *exc):
        cb.record("end else", None)
        return False


iron = sys.modules["aie.iron"]
iron.ObjectFifo, iron.Worker, iron.Kernel, iron.Buffer, iron.TaskGroup = Fifo, Worker, Kernel, Buffer, TaskGroup
sys.modules["aie.iron.device"].Tile = lambda c, r: (c, r)
sys.modules["aie.helpers.taplib"].TensorAccessPattern = Tap
sys.modules["aie.iron.controlflow"].range_ = range_
sys.modules["aie.helpers.dialects.scf"].if_ = if_
sys.modules["aie.helpers.dialects.scf"].else_ = else_
# The sequence's tensors: one stand-in per operand type, by position, so a fill can be told which it names.
iron.Program = cb.TensorProgram

errors = []
d = json.load(open(f"{root}/aie/rope/dataflow.json"))


def deal(total, parts):
    out, at = [], 0
    for i in range(parts):
        k = total // parts + (1 if i < total % parts else 0)
        out.append((at, k))
        at += k
    return out


def check(fam, tokens, heads, ne0, n_dims=None, x=None, y=None, columns=8):
    LINKS.clear(); FIFOS.clear(); DMAS.clear(); GROUPS.clear()
    cb.EVENTS.clear(); cb.PROGRAM.clear()
    n_dims = ne0 if n_dims is None else n_dims
    xhs, xts = x or (ne0, heads * ne0)
    yhs, yts = y or (ne0, heads * ne0)
    label = f"{fam} {tokens} token(s) x {heads} head(s) of {ne0} (n_dims {n_dims}), x ({xhs}, {xts}) y ({yhs}, {yts}), " \
            f"{columns} column(s)"
    err = lambda e: errors.append(f"{label}: {e}")
    desc = design.load_description(f"{root}/aie/rope/dataflow.json")
    plan = design.make_plan(desc, fam, tokens, heads, ne0, n_dims, xhs, xts, yhs, yts, columns)
    if [c for c in plan.checks if not c[1]]:
        err(f"the plan fails a check: {[c[0] for c in plan.checks if not c[1]]}")
        return label
    design.emit_mlir(desc, plan, "stand-in.o")
    if len(cb.PROGRAM) != 1:
        err("emit_mlir did not resolve one Program")
        return label
    prog = cb.PROGRAM[0]

    arr, cp = d["array"], d["core_program"]
    idx, bar = cp["rtp_words"], cp["barrier"]
    fifo = {f["name"]: f for f in d["layouts"][0]["fifos"]}
    depth = lambda f: d["depths"][f["depth"]] if isinstance(f["depth"], str) else f["depth"]
    shim_fifo = {f["operand"]: f["name"] for f in fifo.values() if "operand" in f}
    core_fifo = {op: next(f["name"] for f in fifo.values() if shim_fifo[op] in (f.get("source"), f.get("sink")))
                 for op in ("x", "cs", "y")}
    args_of = {o["name"]: o["arg"] for o in d["operands"]}
    row_t = ("ndarray", (ne0,), ("dtype", "float32"))
    contract = d["families"][fam][0]

    # FIFOs and links, per column.
    want_links = []
    for c in range(columns):
        for op in ("x", "cs", "y"):
            kind, end = ("join", "prod") if op == "y" else ("split", "cons")
            want_links.append((kind, f"{shim_fifo[op]}_{c}", end, [0], [f"{core_fifo[op]}_{c}"], [depth(fifo[core_fifo[op]])],
                               (c, arr["memtile_row"])))
            for name in (shim_fifo[op], core_fifo[op]):
                f = FIFOS.get(f"{name}_{c}")
                if f is None or f.depth != depth(fifo[name]) or f.obj_type != row_t:
                    err(f"{name}_{c}: missing, or not depth {depth(fifo[name])} of head rows of {ne0}")
    if LINKS != want_links:
        err(f"links {LINKS[:3]}..., expected {want_links[:3]}...")
    order = sorted(("x", "cs", "y"), key=lambda o: args_of[o])
    tensors, ends = prog.rt.arg_types[:3], prog.rt.arg_types[3:]
    want_ends = [[(f"{shim_fifo[op]}_{c}", "cons" if op == "y" else "prod", (c, arr["shim_row"])) for c in range(columns)]
                 for op in ("x", "cs", "y")]
    if [[(h.fifo.name, h.end, h.tile) for h in hs] for hs in ends] != want_ends:
        err("shim ends: the shim produces x and cs and consumes y, one end per column on its shim")
    length = {"x": (tokens - 1) * xts + (heads - 1) * xhs + ne0, "cs": tokens * ne0,
              "y": (tokens - 1) * yts + (heads - 1) * yhs + ne0}
    if [t[1] for t in tensors] != [(length[o],) for o in order]:
        err(f"runtime sequence tensors {[t[1] for t in tensors]}, expected {[(length[o],) for o in order]}")

    # The grid, recomputed.
    R = min(tokens, columns)
    S = 1 if tokens >= columns else max(1, min(heads, columns // tokens))
    tb, hb = deal(tokens, R), deal(heads, S)
    grid = [(tb[c // S], hb[c % S]) for c in range(R * S)]

    # Workers and the core program.
    if [w.tile for w in prog.workers] != [(c, arr["first_core_row"]) for c in range(columns)]:
        err(f"workers on {[w.tile for w in prog.workers]}")
    seq = [e for e in cb.EVENTS if e[0] == "sequence"]
    first_dma = next((i for i, e in enumerate(seq) if e[1] == "dma"), len(seq))
    want_kernel = [(contract, [row_t, row_t, row_t, "int32", "int32"])]
    for c, w in enumerate(prog.workers):
        x_in, cs_in, y_out, rtp, barrier, *ks = w.fn_args
        got_ends = [(h.fifo.name, h.end) for h in (x_in, cs_in, y_out)]
        if got_ends != [(f"{core_fifo['x']}_{c}", "cons"), (f"{core_fifo['cs']}_{c}", "cons"), (f"{core_fifo['y']}_{c}", "prod")]:
            err(f"core {c}: FIFO ends {got_ends}")
        if not (rtp.rtp and rtp.obj_type == ("ndarray", (cp["rtp_word_count"],), ("dtype", "int32"))):
            err(f"core {c}: the RTP buffer is not {cp['rtp_word_count']} int32 words written by the runtime")
        if [(k.name, k.arg_types) for k in ks] != want_kernel:
            err(f"core {c}: kernels {[(k.name, k.arg_types) for k in ks]}, expected {want_kernel}")
        if w.stack_size != d["core_budget"]["kernel_stack"][fam][str(ne0)]:
            err(f"core {c}: stack {w.stack_size}")
        ev = [e for e in cb.EVENTS if e[0] == f"core {c}"]

        def show(e):
            kind, obj, v = e[1], e[2], e[3]
            name = lambda o: o.handle.fifo.name if isinstance(o, Obj) else f"word {o.i}" if isinstance(o, Word) else o
            if kind in ("acquire", "release") and isinstance(obj, Handle):
                return f"{kind} {obj.fifo.name}"
            if kind in ("wait", "release"):
                return f"barrier {kind} {v}" if obj is barrier else f"{kind} ?"
            if kind == "read":
                return f"read {v}" if obj is rtp else "read ?"
            if kind == "call":
                return f"{obj.name}({', '.join(str(name(a)) for a in v)})"
            if kind == "loop":
                return f"loop word {v.i}" if isinstance(v, Word) else f"loop {v}"
            return kind
        trace = [show(e) for e in ev]
        xn, csn, yn = (f"{core_fifo[op]}_{c}" for op in ("x", "cs", "y"))
        want = [f"barrier wait {bar['acquire']['value']}"] + [f"read {i}" for i in sorted(idx.values())] + \
            [f"barrier release {bar['release']['value']}",
             f"loop word {idx['tokens']}", f"acquire {csn}",
             f"loop word {idx['heads']}", f"acquire {xn}", f"acquire {yn}",
             f"{contract}({xn}, {csn}, {yn}, word {idx['n_dims']}, {ne0})", f"release {xn}", f"release {yn}", "end loop",
             f"release {csn}", "end loop"]
        if trace != want:
            i = next((j for j, (a, b) in enumerate(zip(trace, want)) if a != b), min(len(trace), len(want)))
            err(f"core {c}: program differs at event {i}: {trace[i:i + 3]}, expected {want[i:i + 3]}")

        # The sequence's words and set for this core.
        writes = [(j, e[3]) for j, e in enumerate(seq) if e[1] == "write" and e[2] is rtp]
        sets = [j for j, e in enumerate(seq) if e[1] == "set" and e[2] is barrier]
        if c >= len(grid):
            if writes or sets:
                err(f"core {c}: a column without work gets RTP words or a set")
            continue
        (_, nt), (_, nh) = grid[c]
        want_words = {idx["contract"]: 0, idx["tokens"]: nt, idx["heads"]: nh, idx["n_dims"]: n_dims,
                      idx["version"]: cp["rtp_layout_version"]}
        if dict(v for _, v in writes) != want_words or len(writes) != len(idx):
            err(f"core {c}: RTP words {dict(v for _, v in writes)}, the host's {want_words}")
        if len(sets) != 1 or seq[sets[0]][3] != bar["set_value"] or sets[0] < max(j for j, _ in writes) or sets[0] > first_dma:
            err(f"core {c}: the barrier is not set once, after the words and before the first DMA")

    # Fills and drains per column, replayed word by word.
    x_rows, y_rows = [], []
    for c in range(columns):
        mine = [x for x in DMAS if x[0] in (f"{shim_fifo[op]}_{c}" for op in ("x", "cs", "y"))]
        if c >= len(grid):
            if mine:
                err(f"column {c}: moves data, the column has no work")
            continue
        (tf, nt), (h0, nh) = grid[c]
        want_x = [t * xts + h * xhs + i for t in range(tf, tf + nt) for h in range(h0, h0 + nh) for i in range(ne0)]
        want_cs = [t * ne0 + i for t in range(tf, tf + nt) for i in range(ne0)]
        want_y = [t * yts + h * yhs + i for t in range(tf, tf + nt) for h in range(h0, h0 + nh) for i in range(ne0)]
        got = {}
        for op, kind, tensor in (("x", "fill", "x"), ("cs", "fill", "cs"), ("y", "drain", "y")):
            taps = [m for m in mine if m[0] == f"{shim_fifo[op]}_{c}"]
            if any(m[1] != kind or m[5] != (op == "y") or getattr(m[2], "index", None) != order.index(tensor) for m in taps):
                err(f"column {c}: {op}: not {kind}s of tensor {tensor}" + (", awaited" if op == "y" else ""))
            got[op] = [w for m in taps for w in m[3].words()]
            if len(taps) != -(-nt // 256):
                err(f"column {c}: {len(taps)} {op} task(s) for {nt} token(s) in steps of 256")
        if (got["x"], got["cs"], got["y"]) != (want_x, want_cs, want_y):
            err(f"column {c}: the taps do not move its tokens x heads of x, its tokens' angle rows and the same rows of y, "
                "in order")
        x_rows += got["x"][::ne0]
        y_rows += got["y"][::ne0]
        # Step j of the column in task group j: x, cs, y.
        steps = [[GROUPS.index(m[4]) for m in mine if m[0] == f"{shim_fifo[op]}_{c}"] for op in ("x", "cs", "y")]
        if not steps[0] == steps[1] == steps[2] == list(range(len(steps[0]))):
            err(f"column {c}: task groups of its x, cs, y tasks {steps}")
    if sorted(x_rows) != sorted(t * xts + h * xhs for t in range(tokens) for h in range(heads)) or \
            sorted(y_rows) != sorted(t * yts + h * yhs for t in range(tokens) for h in range(heads)):
        err("over the columns, not every head row of x and y moved once")

    # Task groups in flight, each finished once, in order.
    flight = d["shim"]["steps_in_flight"]
    open_groups, worst, finished = [], 0, []
    for e in seq:
        if e[1] == "group":
            open_groups.append(e[2])
            worst = max(worst, len(open_groups))
        elif e[1] == "finish":
            if e[2] in open_groups:
                open_groups.remove(e[2])
            finished.append(GROUPS.index(e[2]))
    if worst > flight or any(g.finished != 1 for g in GROUPS) or finished != list(range(len(GROUPS))):
        err(f"{worst} task groups open at once (the description has {flight} steps in flight), finished {finished[:6]}")
    return label


done = []
for shape in (("norm", 1, 32, 128), ("neox", 37, 8, 128, None, None, None, 8), ("neox", 600, 2, 64, None, None, None, 1),
              ("norm", 9, 3, 80, 32, (96, 400), (96, 400), 3), ("neox", 5, 4, 96, 64, (96, 1152), None, 8),
              ("norm", 3, 8, 128, 96, None, (160, 2000), 8), ("norm", 300, 3, 32, 32, (300 * 32, 32), (300 * 32, 32), 2),
              ("neox", 2, 1, 512, 512, None, None, 5), ("norm", 513, 1, 64, 32, None, None, 2)):
    done.append(check(*shape))
# The invocation scripts/build-npu-kernels.sh emits each xclbin with: 64 tokens of 8 packed heads, every family
# and head row length, n_dims design.py's default (the most the row takes).
for fam in (k for k in d["families"] if k != "about"):
    for t in sorted(int(k) for k in d["core_budget"]["kernel_stack"][fam] if k.isdigit()):
        done.append(check(fam, 64, 8, t, max(n for n in range(32, t + 1, 32) if (t - n) % 16 == 0)))
for e in errors[:20]:
    print(f"  {e}")
print(f"IRON program on stand-ins: {len(done)} programs " +
      (f"FAILED ({len(errors)} error(s))" if errors else "as the description says"))
sys.exit(1 if errors else 0)
