#!/usr/bin/env python3
"""The quant design's IRON program (aie/act_quant/design.py emit_mlir) run on stand-ins of IRON's classes
(tests/aie/check_barrier.py's, with the ones this program needs beside them: a numpy of types only, FIFOs
that record their links, fills and drains, task groups that record when they open and finish, loops that
record where they open and close), and checked against the description (aie/act_quant/dataflow.json) read
here:

  - per column of the array: x's memory-tile FIFO (groups, the description's name and depth) split in one
    part to the core, the tiles' core FIFO joined in one part into the memory-tile FIFO, both on the
    column's memory tile; the shim ends (x produced, the tiles consumed) on the column's shim;
  - one worker per column on its core, with its FIFO ends, its RTP buffer (the description's word count,
    written by the runtime), its barrier and the family's kernel declared (group of fp32, tile of bytes,
    int32), its stack the family's;
  - the core program as traced: wait on the barrier, read every RTP word, release the barrier, then a loop
    over the tiles word: acquire a tile; per group g = 0 .. tile_n / group_tokens - 1: acquire x,
    act_quant_<family>(x, tile, g), release x; release the tile;
  - the runtime sequence: its three tensors in the operands' order (x fp32, the zeros, the tiles bytes), every
    used column's RTP words (contract 0, its block's tiles, the layout version), then its barrier set,
    before any DMA; nothing for a column without tiles; the fills and drains replayed word by word: per
    column, the words filled into x's FIFO, cut into tiles of tile_n rows, are each tile's valid rows of x
    then zeros (from the zeros tensor, inside it), the drains write the column's block of tiles in order;
  - task groups: never more open than the description's steps in flight, each finished once, at most 4
    fills queued on a column's x channel by the open groups.

    act_quant_iron_check.py <repo root> <check_barrier.py>
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
design = load("xdna_quant_design_under_test", f"{root}/aie/act_quant/design.py")
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
        LINKS.append(("split", self.fifo.name, list(offsets), list(names), list(depths), tile))
        return [Fifo(t, name=x, depth=dp) for t, x, dp in zip(obj_types, names, depths)]

    def join(self, offsets, obj_types=None, names=None, depths=None, tile=None, **kwargs):
        LINKS.append(("join", self.fifo.name, list(offsets), list(names), list(depths), tile))
        return [Fifo(t, name=x, depth=dp) for t, x, dp in zip(obj_types, names, depths)]

    def fill(self, tensor, tap=None, group=None, **kwargs):
        cb.record("dma", self)
        DMAS.append((self.fifo.name, "fill", tensor, tap, group, kwargs.get("wait", False)))

    def drain(self, tensor, tap=None, group=None, wait=False, **kwargs):
        cb.record("dma", self)
        DMAS.append((self.fifo.name, "drain", tensor, tap, group, wait))


class Tap:
    def __init__(self, shape, offset, sizes, strides):
        self.shape, self.offset, self.sizes, self.strides = tuple(shape), offset, list(sizes), list(strides)

    def elements(self):
        """The elements the pattern addresses, in order (outermost dimension first)."""
        (a, b, c, d), (sa, sb, sc, sd) = self.sizes, self.strides
        o = self.offset
        return [o + i * sa + j * sb + k * sc + m * sd for i in range(a) for j in range(b) for k in range(c) for m in range(d)]


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
D = json.load(open(f"{root}/aie/act_quant/dataflow.json"))


def check(family, n, k, columns, rs=None):
    LINKS.clear(); FIFOS.clear(); DMAS.clear(); GROUPS.clear()
    cb.EVENTS.clear(); cb.PROGRAM.clear()
    label = f"{family} rows {n} x {k}, {columns} column(s)" + (f", stride {rs}" if rs else "")
    err = lambda e: errors.append(f"{label}: {e}")
    desc = design.load_description(f"{root}/aie/act_quant/dataflow.json")
    plan = design.make_plan(desc, rows=n, k=k, row_stride=rs, columns=columns, family=family)
    if [c for c in plan.checks if not c[1]]:
        err("the plan fails a check")
        return label
    design.emit_mlir(desc, plan, "stand-in.o")
    prog = cb.PROGRAM[0]

    ob = D["objects"][family]
    tn, tk, gt, G, tb = ob["tokens"], ob["tile_k"], ob["group_tokens"], ob["group"], ob["tile"]
    groups = tn // gt
    fifo = {f["name"]: f for f in D["layouts"][0]["fifos"]}
    depth = lambda f: D["depths"][f["depth"]] if isinstance(f["depth"], str) else f["depth"]
    x_mem = next(f for f in fifo.values() if f["from"] == "shim")
    t_mem = next(f for f in fifo.values() if f["to"] == "shim")
    x_core = next(f for f in fifo.values() if f.get("source") == x_mem["name"])
    t_core = next(f for f in fifo.values() if f.get("sink") == t_mem["name"])
    X, Tn = x_mem["operand"], t_mem["operand"]
    ops = sorted(D["operands"], key=lambda o: o["arg"])
    Z = next(o["name"] for o in ops if o["name"] not in (X, Tn))
    cp = D["core_program"]
    idx, bar = cp["rtp_words"], cp["barrier"]
    arr = D["array"]
    rs_ = rs or k
    k_tiles, n_tiles = k // tk, -(-n // tn)
    T = n_tiles * k_tiles
    C = min(T, columns)
    blocks = [(T // C * c + min(c, T % C), T // C + (1 if c < T % C else 0)) for c in range(C)]
    group_t = ("ndarray", (G // 4,), ("dtype", "float32"))
    tile_t = ("ndarray", (tb,), ("dtype", "uint8"))

    # FIFOs and links, per column.
    want_links = []
    for c in range(columns):
        mem = (c, arr["memtile_row"])
        want_links += [("split", f"{x_mem['name']}_{c}", [0], [f"{x_core['name']}_{c}"], [depth(x_core)], mem),
                       ("join", f"{t_mem['name']}_{c}", [0], [f"{t_core['name']}_{c}"], [depth(t_core)], mem)]
        for f, ty in ((x_mem, group_t), (x_core, group_t), (t_core, tile_t), (t_mem, tile_t)):
            got = FIFOS.get(f"{f['name']}_{c}")
            if got is None or got.depth != depth(f) or got.obj_type != ty:
                err(f"{f['name']}_{c}: missing, or not depth {depth(f)} of {ty}")
    if LINKS != want_links:
        err(f"links {LINKS[:2]}..., expected {want_links[:2]}...")
    ends = prog.rt.arg_types[3:]
    want_ends = [[(f"{x_mem['name']}_{c}", "prod", (c, arr["shim_row"])) for c in range(columns)],
                 [(f"{t_mem['name']}_{c}", "cons", (c, arr["shim_row"])) for c in range(columns)]]
    if [[(h.fifo.name, h.end, h.tile) for h in hs] for hs in ends] != want_ends:
        err("shim ends: the shim produces x and consumes the tiles, one end per column on its shim")
    lengths = {X: ("ndarray", ((n - 1) * rs_ + k,), ("dtype", "float32")),
               Tn: ("ndarray", (T * tb,), ("dtype", "uint8")),
               Z: ("ndarray", (D["zeros_bytes"] // 4,), ("dtype", "float32"))}
    if prog.rt.arg_types[:3] != [lengths[o["name"]] for o in ops]:
        err(f"runtime sequence tensors {prog.rt.arg_types[:3]}, expected {[lengths[o['name']] for o in ops]}")

    # Workers and the core program.
    if [w.tile for w in prog.workers] != [(c, arr["first_core_row"]) for c in range(columns)]:
        err(f"workers on {[w.tile for w in prog.workers]}")
    seq = [e for e in cb.EVENTS if e[0] == "sequence"]
    first_dma = next((i for i, e in enumerate(seq) if e[1] == "dma"), len(seq))
    contract = D["families"][family][0]
    for c, w in enumerate(prog.workers):
        if len(w.fn_args) != 5:
            err(f"core {c}: {len(w.fn_args)} worker arguments, expected x, tiles, RTP, barrier, kernel")
            continue
        x_in, t_out, rtp, barrier, kern = w.fn_args
        if [(h.fifo.name, h.end) for h in (x_in, t_out)] != [(f"{x_core['name']}_{c}", "cons"), (f"{t_core['name']}_{c}", "prod")]:
            err(f"core {c}: FIFO ends {[(h.fifo.name, h.end) for h in (x_in, t_out)]}")
        if not (isinstance(rtp, Buffer) and rtp.rtp and rtp.obj_type == ("ndarray", (cp["rtp_word_count"],), ("dtype", "int32"))):
            err(f"core {c}: the RTP buffer is not {cp['rtp_word_count']} int32 words written by the runtime")
        if (kern.name, kern.obj, kern.arg_types) != (contract, "stand-in.o", [group_t, tile_t, "int32"]):
            err(f"core {c}: kernel {(kern.name, kern.obj, kern.arg_types)}")
        if w.stack_size != D["core_budget"]["kernel_stack"][family][str(tn)]:
            err(f"core {c}: stack {w.stack_size}")
        ev = [e for e in cb.EVENTS if e[0] == f"core {c}"]

        def show(e):
            kind, obj, v = e[1], e[2], e[3]
            if kind in ("acquire", "release") and isinstance(obj, Handle):
                return f"{kind} {obj.fifo.name}"
            if kind in ("wait", "release"):
                return f"barrier {kind} {v}" if obj is barrier else f"{kind} ?"
            if kind == "read":
                return f"read {v}"
            if kind == "call":
                a = [x.handle.fifo.name if isinstance(x, Obj) else x for x in v]
                return f"{obj.name}({', '.join(map(str, a))})"
            if kind == "loop":
                return f"loop word {v.i}" if isinstance(v, Word) else f"loop {v}"
            return kind
        trace = [show(e) for e in ev]
        xn, tname = f"{x_core['name']}_{c}", f"{t_core['name']}_{c}"
        want = [f"barrier wait {bar['acquire']['value']}"] + [f"read {i}" for i in sorted(idx.values())] + \
            [f"barrier release {bar['release']['value']}", f"loop word {idx['tiles']}", f"acquire {tname}"]
        for g in range(groups):
            want += [f"acquire {xn}", f"{contract}({xn}, {tname}, {g})", f"release {xn}"]
        want += [f"release {tname}", "end loop"]
        if trace != want:
            diff = next((j for j, (a, b) in enumerate(zip(trace, want)) if a != b), min(len(trace), len(want)))
            err(f"core {c}: program differs at event {diff}: {trace[diff:diff + 3]}, expected {want[diff:diff + 3]}")

        writes = [(j, e[3]) for j, e in enumerate(seq) if e[1] == "write" and e[2] is rtp]
        sets = [j for j, e in enumerate(seq) if e[1] == "set" and e[2] is barrier]
        if c >= len(blocks):
            if writes or sets:
                err(f"core {c}: a column without tiles gets RTP words or a set")
            continue
        want_words = {idx["contract"]: 0, idx["tiles"]: blocks[c][1], idx["version"]: cp["rtp_layout_version"]}
        if dict(v for _, v in writes) != want_words or len(writes) != len(want_words):
            err(f"core {c}: RTP words {[v for _, v in writes]}, the host's {want_words}")
        if len(sets) != 1 or seq[sets[0]][3] != bar["set_value"] or sets[0] < max((j for j, _ in writes), default=0) or \
                sets[0] > first_dma:
            err(f"core {c}: the barrier is not set once, after the words and before the first DMA")

    # Fills and drains replayed word by word, per column.
    arg_of = {o["name"]: o["arg"] for o in ops}
    z_len = D["zeros_bytes"] // 4
    for c in range(columns):
        fills = [(t, tap) for name, kind, t, tap, g, wait in DMAS if name == f"{x_mem['name']}_{c}" and kind == "fill"]
        drains = [(t, tap, wait) for name, kind, t, tap, g, wait in DMAS if name == f"{t_mem['name']}_{c}" and kind == "drain"]
        others = [d for d in DMAS if (d[0] == f"{x_mem['name']}_{c}" and d[1] != "fill") or
                  (d[0] == f"{t_mem['name']}_{c}" and d[1] != "drain")]
        if others:
            err(f"column {c}: a drain of x's FIFO or a fill of the tiles'")
        if c >= len(blocks):
            if fills or drains:
                err(f"column {c}: moves data, the column has no tiles")
            continue
        first, count = blocks[c]
        got = []
        for t, tap in fills:
            if t.index == arg_of[X]:
                got += [("x", w) for w in tap.elements()]
            elif t.index == arg_of[Z]:
                got += [("z", 0 <= w < z_len) for w in tap.elements()]
            else:
                err(f"column {c}: x's FIFO filled from tensor {t.index}")
        want = []
        for t in range(first, first + count):
            nt, kt = t // k_tiles, t % k_tiles
            for r in range(tn):
                row = nt * tn + r
                want += [("x", row * rs_ + kt * tk + i) if row < n else ("z", True) for i in range(tk)]
        if got != want:
            diff = next((j for j, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            err(f"column {c}: word {diff} filled is {got[diff:diff + 1]}, expected {want[diff:diff + 1]} "
                f"({len(got)} vs {len(want)} words)")
        out = []
        for t, tap, wait in drains:
            if t.index != arg_of[Tn] or not wait:
                err(f"column {c}: a drain of tensor {t.index}, or not awaited")
            out += tap.elements()
        if out != list(range(first * tb, (first + count) * tb)):
            err(f"column {c}: the drains write bytes {out[:1]}..{out[-1:]}, the block is tiles {first}..{first + count - 1}")
    # Task groups in flight, finished once; fills queued per column's x channel by the open groups.
    flight, open_groups, worst = D["shim"]["steps_in_flight"], [], 0
    queued = {}
    for e in seq:
        if e[1] == "group":
            open_groups.append(e[2])
        elif e[1] == "finish":
            open_groups.remove(e[2])
        elif e[1] == "dma":
            worst = max(worst, len(open_groups))
    for name, kind, t, tap, g, wait in DMAS:
        if kind == "fill":
            queued.setdefault(name, {}).setdefault(id(g), 0)
            queued[name][id(g)] += 1
    if worst > flight or any(g.finished != 1 for g in GROUPS):
        err(f"{worst} task groups in flight (the description has {flight}), or a group not finished once")
    most = max((v for q in queued.values() for v in q.values()), default=0)
    if flight * most > 4:
        err(f"{most} fills of a column's x channel in one group: {flight} groups in flight queue {flight * most} of 4")
    return label


done = []
for shape in (("a8_b32_n32", 33, 4096, 3), ("a8_b32_n4", 1, 256, 8), ("bfp16_k128_n64", 65, 256, 8),
              ("f32_n32", 32, 130 * 64, 1), ("f32_n4", 9, 70 * 64, 2), ("bf16_n32", 40, 512, 1, 1000),
              ("bfp16_n32", 70, 3 * 256, 8), ("f16_n4", 4, 128, 1), ("a8_b256_n32", 31, 2 * 256, 3, 2 * 256 + 9)):
    done.append(check(*shape))
for e in errors[:20]:
    print(f"  {e}")
print(f"IRON program on stand-ins: {len(done)} programs " +
      (f"FAILED ({len(errors)} error(s))" if errors else "as the description says"))
sys.exit(1 if errors else 0)
