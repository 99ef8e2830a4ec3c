#!/usr/bin/env python3
"""The rms_norm design's IRON program (aie/rms_norm/design.py emit_mlir) run on stand-ins of IRON's classes
(tests/aie/check_barrier.py's, with the ones this program needs beside them: a numpy of types only, the
arith bitcast, loops and branches that record where they open and close), and checked against the
description (aie/rms_norm/dataflow.json) read here:

  - per column of the array: the memory-tile FIFOs of the description's names and depths, each input split
    in one part to the core and y joined from it, the shim ends (x and the weight produced, y consumed);
  - one worker per column on its first core row with its FIFO ends, its RTP buffer, barrier, the partial
    and scale buffers (32 floats each) and the kernels of rms_norm.cc declared with the types the core
    passes (chunks of the tile, 32-float buffers, int32 n, fp32 words);
  - the core program as traced: wait on the barrier, read every RTP word, bitcast inv_cols and eps to f32,
    release the barrier, then per row (a loop over the RTP word rows) pass 1 (a loop over chunks: acquire
    x, sumsq(x, partial, tile), release x), scale(partial, scale, inv_cols, eps), and pass 2 chosen by the
    contract word (with the weight: acquire x, w, y, apply_mul(x, w, scale, y, tile), release them;
    without: x and y, apply(x, scale, y, tile));
  - the runtime sequence: every used column's RTP words (the host's: its block's rows, cols / tile chunks,
    1/cols and eps as fp32 bits, the contract's index, the layout version), then its barrier set, before
    any DMA, and nothing for a column without rows; per used column and row of its block in order, x
    filled twice (an outermost dimension of 2, stride 0), the weight row filled (the one row, or the row's),
    y drained once, at the operands' row strides; task groups never more in flight than the
    description's steps, each with at most one task per FIFO and column, every one finished.

    rms_norm_iron_check.py <repo root> <check_barrier.py>
"""

import importlib.util
import json
import sys
import types
from array import array

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
design = load("xdna_norm_design_under_test", f"{root}/aie/rms_norm/design.py")
LINKS, FIFOS, DMAS, GROUPS = [], {}, [], []


class Fifo:
    def __init__(self, obj_type=None, name=None, depth=None, **kwargs):
        self.name, self.depth, self.obj_type = name, depth, obj_type
        FIFOS[name] = self

    def prod(self, *args, **kwargs):
        return Handle(self, "prod")

    def cons(self, *args, **kwargs):
        return Handle(self, "cons")


class Obj:  # an acquired object
    def __init__(self, handle):
        self.handle = handle


class Handle(cb.FifoHandle):
    def __init__(self, fifo, end):
        self.fifo, self.end = fifo, end

    def acquire(self, n=1):
        cb.record("acquire", self, n)
        return Obj(self)

    def release(self, n=1):
        cb.record("release", self, n)

    def split(self, offsets, obj_types=None, names=None, depths=None, **kwargs):
        LINKS.append(("split", self.fifo.name, list(offsets), list(names), list(depths)))
        return [Fifo(t, name=x, depth=dp) for t, x, dp in zip(obj_types, names, depths)]

    def join(self, offsets, obj_types=None, names=None, depths=None, **kwargs):
        LINKS.append(("join", self.fifo.name, list(offsets), list(names), list(depths)))
        return [Fifo(t, name=x, depth=dp) for t, x, dp in zip(obj_types, names, depths)]

    def forward(self, *args, **kwargs):
        LINKS.append(("forward", self.fifo.name))
        return Fifo(name="forward")

    def fill(self, tensor, tap=None, group=None, **kwargs):
        cb.record("dma", self)
        DMAS.append((self.fifo.name, "fill", tap, group, kwargs.get("wait", False)))

    def drain(self, tensor, tap=None, group=None, wait=False, **kwargs):
        cb.record("dma", self)
        DMAS.append((self.fifo.name, "drain", tap, group, wait))


class Tap:
    def __init__(self, shape, offset, sizes, strides):
        self.shape, self.offset, self.sizes, self.strides = tuple(shape), offset, list(sizes), list(strides)


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


class F32Of:
    def __init__(self, word):
        self.word = word


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
        self.finished = False
        GROUPS.append(self)
        cb.record("group", self)

    def finish(self):
        self.finished = True
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


def bitcast(ty, value):
    cb.record("bitcast", None, (ty, value.i))
    return F32Of(value.i)


iron = sys.modules["aie.iron"]
iron.ObjectFifo, iron.Worker, iron.Kernel, iron.Buffer, iron.TaskGroup = Fifo, Worker, Kernel, Buffer, TaskGroup
sys.modules["aie.iron.device"].Tile = lambda c, r: (c, r)
sys.modules["aie.helpers.taplib"].TensorAccessPattern = Tap
sys.modules["aie.iron.controlflow"].range_ = range_
sys.modules["aie.helpers.dialects.scf"].if_ = if_
sys.modules["aie.helpers.dialects.scf"].else_ = else_
for name in ("aie.dialects", "aie.dialects.arith", "aie.ir"):
    sys.modules[name] = cb.StubModule(name)
    sys.modules[name].__path__ = []
sys.modules["aie"].dialects = sys.modules["aie.dialects"]
sys.modules["aie.dialects"].arith = sys.modules["aie.dialects.arith"]
sys.modules["aie.dialects.arith"].bitcast = bitcast
sys.modules["aie.ir"].F32Type = types.SimpleNamespace(get=lambda: "f32")
sys.modules["aie"].ir = sys.modules["aie.ir"]

errors = []
d = json.load(open(f"{root}/aie/rms_norm/dataflow.json"))


def bits(v):
    return array("I", array("f", [v]).tobytes())[0]


def check(rows, cols, columns, mode, xs=None, ws=None, ys=None):
    LINKS.clear(); FIFOS.clear(); DMAS.clear(); GROUPS.clear()
    cb.EVENTS.clear(); cb.PROGRAM.clear()
    label = f"rows {rows} x {cols}, {columns} column(s), weight {mode}" + (f", strides x {xs} w {ws} y {ys}" if xs or ws or ys else "")
    err = lambda e: errors.append(f"{label}: {e}")
    desc = design.load_description(f"{root}/aie/rms_norm/dataflow.json")
    plan = design.make_plan(desc, rows=rows, cols=cols, weight=mode != "none", columns=columns, x_stride=xs,
                            w_stride=0 if mode == "one" else ws, y_stride=ys)
    if [c for c in plan.checks if not c[1]]:
        err("the plan fails a check")
        return label
    design.emit_mlir(desc, plan, "stand-in.o")
    prog = cb.PROGRAM[0]

    fam = next(k for k in d["families"] if k != "about")
    contracts = d["families"][fam]
    tile = max(int(t) for t in d["core_budget"]["kernel_stack"][fam] if t.isdigit() and cols % int(t) == 0)
    chunks = cols // tile
    fifo = {f["name"]: f for f in d["layouts"][0]["fifos"]}
    depth = lambda f: d["depths"][f["depth"]] if isinstance(f["depth"], str) else f["depth"]
    shim_fifo = {f["operand"]: f["name"] for f in fifo.values() if "operand" in f}
    core_fifo = {op: next(f["name"] for f in fifo.values() if f.get("source") == shim_fifo[op] or f.get("sink") == shim_fifo[op])
                 for op in ("x", "weight", "y")}
    cp = d["core_program"]
    idx, bar = cp["rtp_words"], cp["barrier"]
    lanes = d["core_budget"]["kernel_data_bytes"] // 8
    xs_, ys_ = xs or cols, ys or cols
    ws_ = 0 if mode == "one" else (ws or cols)
    R = min(rows, columns)
    blocks = [(rows // R * c + min(c, rows % R), rows // R + (1 if c < rows % R else 0)) for c in range(R)]
    chunk_t = ("ndarray", (tile,), ("dtype", "float32"))
    lanes_t = ("ndarray", (lanes,), ("dtype", "float32"))

    # FIFOs and links, per column.
    want_links = []
    for c in range(columns):
        for op in ("x", "weight", "y"):
            kind = "join" if op == "y" else "split"
            want_links.append((kind, f"{shim_fifo[op]}_{c}", [0], [f"{core_fifo[op]}_{c}"], [depth(fifo[core_fifo[op]])]))
            f = FIFOS.get(f"{shim_fifo[op]}_{c}")
            if f is None or f.depth != depth(fifo[shim_fifo[op]]) or f.obj_type != chunk_t:
                err(f"{shim_fifo[op]}_{c}: missing, or not depth {depth(fifo[shim_fifo[op]])} of chunks of {tile}")
            f = FIFOS.get(f"{core_fifo[op]}_{c}")
            if f is None or f.obj_type != chunk_t:
                err(f"{core_fifo[op]}_{c}: missing, or not of chunks of {tile}")
    if LINKS != want_links:
        err(f"links {LINKS[:3]}..., expected {want_links[:3]}...")
    ends = prog.rt.arg_types[3:]
    if [[(h.fifo.name, h.end) for h in hs] for hs in ends] != \
            [[(f"{shim_fifo[op]}_{c}", "cons" if op == "y" else "prod") for c in range(columns)] for op in ("x", "weight", "y")]:
        err("shim ends: the shim produces x and the weight and consumes y, one end per column")
    want_len = [(rows - 1) * xs_ + cols, cols if mode != "row" else (rows - 1) * ws_ + cols, (rows - 1) * ys_ + cols]
    if [t[1] for t in prog.rt.arg_types[:3]] != [(n,) for n in want_len]:
        err(f"runtime sequence tensors {[t[1] for t in prog.rt.arg_types[:3]]}, expected {want_len}")

    # Workers and the core program.
    if [w.tile for w in prog.workers] != [(c, d["array"]["first_core_row"]) for c in range(columns)]:
        err(f"workers on {[w.tile for w in prog.workers]}")
    seq = [e for e in cb.EVENTS if e[0] == "sequence"]
    first_dma = next((i for i, e in enumerate(seq) if e[1] == "dma"), len(seq))
    apply = {"rms_norm_mul_f32": "rms_norm_apply_mul_f32", "rms_norm_f32": "rms_norm_apply_f32"}
    want_kernels = [("rms_norm_sumsq_f32", [chunk_t, lanes_t, "int32"]),
                    ("rms_norm_scale_f32", [lanes_t, lanes_t, "float32", "float32"])] + \
                   [(apply[c], [chunk_t, chunk_t, lanes_t, chunk_t, "int32"] if c == "rms_norm_mul_f32" else
                     [chunk_t, lanes_t, chunk_t, "int32"]) for c in contracts]
    for c, w in enumerate(prog.workers):
        x_in, w_in, y_out, rtp, barrier, partial, scale, *ks = w.fn_args
        got_ends = [(h.fifo.name, h.end) for h in (x_in, w_in, y_out)]
        if got_ends != [(f"{core_fifo['x']}_{c}", "cons"), (f"{core_fifo['weight']}_{c}", "cons"), (f"{core_fifo['y']}_{c}", "prod")]:
            err(f"core {c}: FIFO ends {got_ends}")
        if not (rtp.rtp and rtp.obj_type == ("ndarray", (cp["rtp_word_count"],), ("dtype", "int32"))):
            err(f"core {c}: the RTP buffer is not {cp['rtp_word_count']} int32 words written by the runtime")
        for b in (partial, scale):
            if b.rtp or b.obj_type != lanes_t or b.initial_value != ("zeros", lanes, "float32"):
                err(f"core {c}: {b.name} is not a buffer of {lanes} floats starting at zero")
        if [(k.name, k.arg_types) for k in ks] != want_kernels:
            err(f"core {c}: kernels {[(k.name, k.arg_types) for k in ks]}, expected {want_kernels}")
        if w.stack_size != d["core_budget"]["kernel_stack"][fam][str(tile)]:
            err(f"core {c}: stack {w.stack_size}")
        ev = [e for e in cb.EVENTS if e[0] == f"core {c}"]

        def show(e):
            kind, obj, v = e[1], e[2], e[3]
            name = lambda o: o.handle.fifo.name if isinstance(o, Obj) else o.name if isinstance(o, Buffer) else \
                f"f32(word {o.word})" if isinstance(o, F32Of) else o
            if kind in ("acquire", "release") and isinstance(obj, Handle):
                return f"{kind} {obj.fifo.name}"
            if kind in ("wait", "release"):
                return f"barrier {kind} {v}" if obj is barrier else f"{kind} ?"
            if kind == "read":
                return "read"
            if kind == "call":
                return f"{obj.name}({', '.join(str(name(a)) for a in v)})"
            if kind == "loop":
                return f"loop word {v.i}" if isinstance(v, Word) else f"loop {v}"
            if kind == "if":
                return f"if {v}"
            if kind == "bitcast":
                return f"bitcast {v[0]} word {v[1]}"
            return kind
        trace = [show(e) for e in ev]
        reads = sorted(e[3] for e in ev if e[1] == "read" and e[2] is rtp)
        if reads != sorted(idx.values()):
            err(f"core {c}: reads RTP words {reads}, the description has {sorted(idx.values())}")
        xn, wn, yn = (f"{core_fifo[op]}_{c}" for op in ("x", "weight", "y"))

        def pass2(contract):
            if contract == "rms_norm_mul_f32":
                return [f"loop word {idx['chunks']}", f"acquire {xn}", f"acquire {wn}", f"acquire {yn}",
                        f"rms_norm_apply_mul_f32({xn}, {wn}, scale_{c}, {yn}, {tile})",
                        f"release {xn}", f"release {wn}", f"release {yn}", "end loop"]
            return [f"loop word {idx['chunks']}", f"acquire {xn}", f"acquire {yn}",
                    f"rms_norm_apply_f32({xn}, scale_{c}, {yn}, {tile})", f"release {xn}", f"release {yn}", "end loop"]

        def branches(i=0):
            if i == len(contracts) - 1:
                return pass2(contracts[i])
            return [f"if ('word ==', {idx['contract']}, {i})"] + pass2(contracts[i]) + ["end if", "else"] + \
                branches(i + 1) + ["end else"]
        # Before the release: the wait, then the reads of every word, inv_cols and eps each bitcast to f32
        # after its read (a bitcast names the word it was read from).
        rel = f"barrier release {bar['release']['value']}"
        head = trace[:trace.index(rel)] if rel in trace else trace
        read_at = {e[3]: j for j, e in enumerate(ev) if e[1] == "read" and e[2] is rtp}
        cast_at = {e[3][1]: j for j, e in enumerate(ev) if e[1] == "bitcast"}
        if head[:1] != [f"barrier wait {bar['acquire']['value']}"] or \
                sorted(head[1:]) != sorted(["read"] * len(idx) + [f"bitcast f32 word {idx['inv_cols']}",
                                                                 f"bitcast f32 word {idx['eps']}"]) or \
                any(cast_at.get(idx[k], -1) < read_at.get(idx[k], 1 << 30) for k in ("inv_cols", "eps")):
            err(f"core {c}: before the barrier's release: {head}")
        trace = trace[len(head):]
        want = [rel,
                f"loop word {idx['rows']}",
                f"loop word {idx['chunks']}", f"acquire {xn}", f"rms_norm_sumsq_f32({xn}, partial_{c}, {tile})",
                f"release {xn}", "end loop",
                f"rms_norm_scale_f32(partial_{c}, scale_{c}, f32(word {idx['inv_cols']}), f32(word {idx['eps']}))"] + \
            branches() + ["end loop"]
        if trace != want:
            diff = next((j for j, (a, b) in enumerate(zip(trace, want)) if a != b), min(len(trace), len(want)))
            err(f"core {c}: program differs at event {diff}: {trace[diff:diff + 3]}, expected {want[diff:diff + 3]}")

        # The sequence's words and set for this core.
        writes = [(j, e[3]) for j, e in enumerate(seq) if e[1] == "write" and e[2] is rtp]
        sets = [j for j, e in enumerate(seq) if e[1] == "set" and e[2] is barrier]
        if c >= len(blocks):
            if writes or sets:
                err(f"core {c}: a column without rows gets RTP words or a set")
            continue
        want_words = {idx["contract"]: contracts.index("rms_norm_f32" if mode == "none" else "rms_norm_mul_f32"),
                      idx["rows"]: blocks[c][1], idx["chunks"]: chunks, idx["inv_cols"]: bits(1.0 / cols),
                      idx["eps"]: bits(1e-6), idx["version"]: cp["rtp_layout_version"]}
        if dict(v for _, v in writes) != want_words:
            err(f"core {c}: RTP words {dict(v for _, v in writes)}, the host's {want_words}")
        if len(sets) != 1 or seq[sets[0]][3] != bar["set_value"] or sets[0] < max(j for j, _ in writes) or sets[0] > first_dma:
            err(f"core {c}: the barrier is not set once, after the words and before the first DMA")

    # Fills and drains, per used column, in row order.
    for c in range(columns):
        got = {op: [(kind, t.offset, t.sizes, t.strides, wait) for n, kind, t, g, wait in DMAS if n == f"{shim_fifo[op]}_{c}"]
               for op in ("x", "weight", "y")}
        if c >= len(blocks):
            if any(got.values()):
                err(f"column {c}: moves data, the column has no rows")
            continue
        f, n = blocks[c]
        row = [0, 0, 0, 1]
        want_x = [("fill", r * xs_, [2, 1, 1, cols], row, False) for r in range(f, f + n)]
        want_w = [] if mode == "none" else [("fill", r * ws_, [1, 1, 1, cols], row, False) for r in range(f, f + n)]
        want_y = [("drain", r * ys_, [1, 1, 1, cols], row, True) for r in range(f, f + n)]
        for op, want_op in (("x", want_x), ("weight", want_w), ("y", want_y)):
            if got[op] != want_op:
                err(f"column {c}: {op} moves {got[op][:2]}..., expected {want_op[:2]}... (rows {f}..{f + n - 1})")
    # Task groups in flight, and tasks per FIFO per group.
    flight, open_groups, worst = d["shim"]["steps_in_flight"], set(), 0
    for e in seq:
        if e[1] == "group":
            open_groups.add(e[2])
        elif e[1] == "finish":
            open_groups.discard(e[2])
        elif e[1] == "dma":
            worst = max(worst, len(open_groups))
    if worst > flight or not all(g.finished for g in GROUPS):
        err(f"{worst} task groups in flight (the description has {flight}), or a group never finished")
    per = {}
    for n, kind, t, g, wait in DMAS:
        per[(id(g), n)] = per.get((id(g), n), 0) + 1
    if any(v > 1 for v in per.values()):
        err("a task group holds more than one task of a FIFO")
    return label


done = []
for shape in ((1, 4096, 8, "row"), (64, 4096, 8, "one"), (13, 2080, 3, "none"), (130, 896, 2, "row", 1024, 2048, 960),
              (5, 8192, 8, "one"), (70, 1024, 1, "row", 1100, None, 2048), (9, 32, 4, "none", 64, None, 32)):
    done.append(check(*shape))
for e in errors[:20]:
    print(f"  {e}")
print(f"IRON program on stand-ins: {len(done)} programs " +
      (f"FAILED ({len(errors)} error(s))" if errors else "as the description says"))
sys.exit(1 if errors else 0)
