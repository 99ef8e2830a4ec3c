#!/usr/bin/env python3
"""The gather design's IRON program (aie/get_rows/design.py emit_mlir) run on stand-ins of IRON's classes
(tests/aie/check_barrier.py's, with the ones this program needs beside them: a numpy of types only, FIFOs
that record their links, fills and drains, task groups that record when they open and finish), and checked
against the description (aie/get_rows/dataflow.json) read here:

  - per column of the array: the source's FIFO of the description's name and depth, of one-chunk objects,
    forwarded (one link of one part, on the column's memory tile) to y's FIFO of its name and depth; the
    shim ends (the source produced, y consumed, on the column's shim), handed to the Runtime per column;
  - no workers (no core program), the runtime sequence's two tensors of the source's and y's lengths;
  - the sequence, per used column: a fill per run of consecutive ids (at most 256 rows) at ids[first] x
    the source's row stride, a drain per step (up to the BD slot's runs) of the step's rows of y, awaited,
    nothing on a column without rows; the taps replayed word by word: the words filled, in order, are the
    words drained, in order, and y[r][i] gets src[ids[r]][i]; a tile past the d0 wrap in halves;
  - task groups: step j of every used column in group j, never more groups open than the description's
    steps in flight, each finished once, in order.

    get_rows_iron_check.py <repo root> <check_barrier.py>
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
sys.modules["numpy"] = fake_np

cb = load("check_barrier", barrier_py)
cb.install_stand_ins()
design = load("xdna_gather_design_under_test", f"{root}/aie/get_rows/design.py")
LINKS, FIFOS, DMAS, GROUPS = [], {}, [], []


class Fifo:
    def __init__(self, obj_type=None, name=None, depth=None, **kwargs):
        self.name, self.depth, self.obj_type = name, depth, obj_type
        self.ends = []
        FIFOS[name] = self

    def prod(self, *args, tile=None, **kwargs):
        h = Handle(self, "prod", tile)
        self.ends.append(h)
        return h

    def cons(self, *args, tile=None, **kwargs):
        h = Handle(self, "cons", tile)
        self.ends.append(h)
        return h


class Handle(cb.FifoHandle):
    def __init__(self, fifo, end, tile):
        self.fifo, self.end, self.tile = fifo, end, tile

    def forward(self, obj_type=None, depth=None, name=None, tile=None, **kwargs):
        out = Fifo(obj_type, name=name, depth=depth)
        LINKS.append(("forward", self.fifo.name, self.end, name, tile))
        return out

    def split(self, *args, **kwargs):
        LINKS.append(("split", self.fifo.name))
        return [Fifo(name="split")]

    def join(self, *args, **kwargs):
        LINKS.append(("join", self.fifo.name))
        return [Fifo(name="join")]

    def fill(self, tensor, tap=None, group=None, wait=False, **kwargs):
        cb.record("dma", self)
        DMAS.append((self.fifo.name, self.end, "fill", tap, group, wait))

    def drain(self, tensor, tap=None, group=None, wait=False, **kwargs):
        cb.record("dma", self)
        DMAS.append((self.fifo.name, self.end, "drain", tap, group, wait))


class Tap:
    def __init__(self, shape, offset, sizes, strides):
        self.shape, self.offset, self.sizes, self.strides = tuple(shape), offset, list(sizes), list(strides)

    def words(self):
        o, (s3, s2, s1, s0), (n3, n2, n1, n0) = self.offset, self.strides, self.sizes
        return [o + a * s3 + b * s2 + c * s1 + e * s0 for a in range(n3) for b in range(n2) for c in range(n1)
                for e in range(n0)]


class TaskGroup:
    def __init__(self):
        self.finished = 0
        GROUPS.append(self)
        cb.record("group", self)

    def finish(self):
        self.finished += 1
        cb.record("finish", self)


iron = sys.modules["aie.iron"]
iron.ObjectFifo, iron.TaskGroup = Fifo, TaskGroup
sys.modules["aie.iron.device"].Tile = lambda c, r: (c, r)
sys.modules["aie.helpers.taplib"].TensorAccessPattern = Tap

errors = []
d = json.load(open(f"{root}/aie/get_rows/dataflow.json"))


def check(ids, row_len, columns, src_rows=None, ss=None, ys=None, tile=None):
    LINKS.clear(); FIFOS.clear(); DMAS.clear(); GROUPS.clear()
    cb.EVENTS.clear(); cb.PROGRAM.clear()
    label = f"{len(ids)} id(s) {ids[:5]}{'...' if len(ids) > 5 else ''}, rows of {row_len}, {columns} column(s)" + \
        (f", strides {ss} {ys}" if ss or ys else "") + (f", tile {tile}" if tile else "")
    err = lambda e: errors.append(f"{label}: {e}")
    desc = design.load_description(f"{root}/aie/get_rows/dataflow.json")
    plan = design.make_plan(desc, ids, src_rows, row_len, ss, ys, columns, tile)
    if [c for c in plan.checks if not c[1]]:
        err(f"the plan fails a check: {[c[0] for c in plan.checks if not c[1]]}")
        return label
    design.emit_mlir(desc, plan)
    if len(cb.PROGRAM) != 1:
        err("emit_mlir did not resolve one Program")
        return label
    prog = cb.PROGRAM[0]

    fam = next(k for k in d["families"] if k != "about")
    T = tile or max(t for t in d["xclbin_tiles"][fam] if row_len % t == 0)
    fifos = d["layouts"][0]["fifos"]
    src_f = next(f for f in fifos if f["from"] == "shim")
    y_f = next(f for f in fifos if f["to"] == "shim")
    depth = lambda f: d["depths"][f["depth"]] if isinstance(f["depth"], str) else f["depth"]
    arr = d["array"]
    chunk_t = ("ndarray", (T,), ("dtype", "float32"))
    ss_, ys_ = ss or row_len, ys or row_len
    src_rows = max(max(ids) + 1, 1) if src_rows is None else src_rows
    d0 = T
    while d0 > d["limits"]["wrap_max"] and d0 % 2 == 0:
        d0 //= 2
    slots, F = d["shim"]["bd_slots"], d["shim"]["steps_in_flight"]
    per = len(slots[0][src_f["operand"]])

    # FIFOs and links, per column.
    want_links = [("forward", f"{src_f['name']}_{c}", "cons", f"{y_f['name']}_{c}", (c, arr["memtile_row"]))
                  for c in range(columns)]
    if LINKS != want_links:
        err(f"links {LINKS[:2]}..., expected {want_links[:2]}...")
    for c in range(columns):
        for f in (src_f, y_f):
            got = FIFOS.get(f"{f['name']}_{c}")
            if got is None or got.depth != depth(f) or got.obj_type != chunk_t:
                err(f"{f['name']}_{c}: missing, or not depth {depth(f)} of one chunk of {T}")
    if prog.workers:
        err(f"{len(prog.workers)} workers: a gather has no core program")
    ends = prog.rt.arg_types[2:]
    want_ends = [[(f"{src_f['name']}_{c}", "prod", (c, arr["shim_row"])) for c in range(columns)],
                 [(f"{y_f['name']}_{c}", "cons", (c, arr["shim_row"])) for c in range(columns)]]
    if [[(h.fifo.name, h.end, h.tile) for h in hs] for hs in ends] != want_ends:
        err("shim ends: the shim produces the source and consumes y, one end per column on its shim")
    want_len = [(src_rows - 1) * ss_ + row_len, (len(ids) - 1) * ys_ + row_len]
    if [t[1] for t in prog.rt.arg_types[:2]] != [(n,) for n in want_len]:
        err(f"runtime sequence tensors {[t[1] for t in prog.rt.arg_types[:2]]}, expected {want_len}")

    # Fills and drains, per column, recomputed from the ids.
    n = len(ids)
    R = min(n, columns)
    for c in range(columns):
        mine = [x for x in DMAS if x[0] in (f"{src_f['name']}_{c}", f"{y_f['name']}_{c}")]
        if c >= R:
            if mine:
                err(f"column {c}: moves data, the column has no rows")
            continue
        first = n // R * c + min(c, n % R)
        count = n // R + (1 if c < n % R else 0)
        runs, r = [], first
        while r < first + count:
            k = 1
            while r + k < first + count and k < 256 and ids[r + k] == ids[r] + k:
                k += 1
            runs.append((r, ids[r], k))
            r += k
        want = []
        for s in range(0, len(runs), per):
            step = runs[s:s + per]
            for (_, id0, m) in step:
                want.append((f"{src_f['name']}_{c}", "fill", id0 * ss_, m, False, s // per))
            rows = sum(m for _, _, m in step)
            want.append((f"{y_f['name']}_{c}", "drain", step[0][0] * ys_, rows, True, s // per))
        got = []
        for name, end, kind, tap, group, wait in mine:
            # Rows of d0-word runs (the tile, halved while past the wrap), a row stride only between rows.
            rows = tap.sizes[1]
            stride = (ss_ if kind == "fill" else ys_) if rows > 1 else 0
            if tap.sizes[0] != 1 or tap.sizes[2:] != [row_len // d0, d0] or tap.strides[1:] != [stride, d0, 1]:
                err(f"column {c}: {kind} tap sizes {tap.sizes} strides {tap.strides}: not rows of {row_len // d0} x {d0}")
            got.append((name, kind, tap.offset, rows, wait, GROUPS.index(group) if group in GROUPS else None))
        if got != want:
            diff = next((j for j, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            err(f"column {c}: DMA {diff}: {got[diff:diff + 1]}, expected {want[diff:diff + 1]} ({len(got)} vs {len(want)})")
        # The taps word by word: what is filled comes out drained, in order.
        rd = [w for x in mine if x[2] == "fill" for w in x[3].words()]
        wr = [w for x in mine if x[2] == "drain" for w in x[3].words()]
        expect = {(first + i) * ys_ + j: ids[first + i] * ss_ + j for i in range(count) for j in range(row_len)}
        if len(rd) != len(wr) or dict(zip(wr, rd)) != expect:
            err(f"column {c}: the taps do not move y[r][i] = src[ids[r]][i] for the column's rows")

    # Task groups in flight, each finished once, in order.
    seq = [e for e in cb.EVENTS if e[0] == "sequence"]
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
for shape in (([5], 4096, 8), ([3, 4, 5, 9, 9, 2, 1, 0, 7, 8], 256, 3), (list(range(7, -1, -1)), 64, 1),
              (list(range(600)), 64, 2), ([9] * 9, 128, 8), ([0, 1, 2, 7, 8, 20], 2048, 1, 64, 3000, 2048, 512),
              (list(range(40, 0, -3)) + [100, 101, 102], 96, 5, 200, 128, 100),
              ([2, 3, 1], 1024, 8, 8, None, None, 32), (list(range(10, 20)) + [3], 1024, 2, 20),
              ([0, 1, 5, 6, 7], 2048, 1, 8, 3000)):
    done.append(check(*shape))
for e in errors[:20]:
    print(f"  {e}")
print(f"IRON program on stand-ins: {len(done)} programs " +
      (f"FAILED ({len(errors)} error(s))" if errors else "as the description says"))
sys.exit(1 if errors else 0)
