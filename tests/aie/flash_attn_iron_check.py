#!/usr/bin/env python3
"""The attention design's IRON program (aie/flash_attn/design.py emit_mlir) run on stand-ins of IRON's classes
(tests/aie/check_barrier.py's, with FIFOs that record their links, kernels and loops that record themselves,
views of objects), and checked against the description (aie/flash_attn/dataflow.json) read here:

  - per column: kv_l3l2 of 4 kv objects (the description's depth), split at the 4 kv offsets into kv_l2l1 FIFOs
    of one kv object each (their depth); out_l2l3 of 4 state objects joined from out_l1l2 FIFOs of one each; the
    shim ends (kv produced, out consumed) on the column's shim, handed to the Runtime per column;
  - one worker per core (4 per column, rows first_core_row on), with its kv end consumed and out end produced,
    its RTP buffer of rtp_word_count words, its barrier, its own buffers, the family's block programs and the
    helpers declared from one object file, and the family's stack;
  - each core program as traced: wait on the barrier, read every RTP word, release the barrier before its
    first acquisition; every kernel the family links called somewhere in the body, and every call inside the
    loop over the word rounds; the task's first row kept in its scalar slot before the chunk moves on to the
    next round's, and read back on a block step (the mask widening) before the step's block call;
  - the step words: read from the q step's object (words 16 + 16 d and 17 + 16 d) before it is released,
    outside any branch (an idle core takes its column's block objects too), kept in the scalar slots
    col_steps and own; the block steps' loop bounded by the col_steps slot, own read in it before a block call;
  - the decode layout (the default for one-token shapes): its FIFOs of kv_decode objects, a 1024-byte mask
    buffer per core written on a block step before the block call, which takes it; the attention layout
    forced on the same shapes, and on prefill, without one;
  - the runtime sequence: every core's words, then its barrier set.

    flash_attn_iron_check.py <repo root> <check_barrier.py>
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
design = load("xdna_flash_attn_design_under_test", f"{root}/aie/flash_attn/design.py")
LINKS, FIFOS, KERNELS = [], {}, []


class Fifo:
    def __init__(self, obj_type=None, name=None, depth=None, **kwargs):
        self.name, self.depth, self.obj_type = name, depth, obj_type
        FIFOS[name] = self

    def prod(self, *args, tile=None, **kwargs):
        return Handle(self, "prod", tile)

    def cons(self, *args, tile=None, **kwargs):
        return Handle(self, "cons", tile)


class Loaded(cb.Anything):
    """A value read from a buffer or an object's memref: where it was read."""

    def __init__(self, source, at):
        self.source, self.at = source, at


class Obj(cb.Anything):
    """An acquired object: viewable, its elements' reads recorded; serial: its place in its FIFO end's
    acquisitions as traced (1: the first)."""

    def __init__(self, handle, serial):
        self.handle, self.serial = handle, serial

    def __getitem__(self, i):
        cb.record("read", self, i)
        return Loaded(self, i)


class Handle(cb.FifoHandle):
    def __init__(self, fifo, end, tile):
        self.fifo, self.end, self.tile, self.acquired = fifo, end, tile, 0

    def acquire(self, n=1):
        cb.record("acquire", self, n)
        self.acquired += 1
        return Obj(self, self.acquired)

    def release(self, n=1):
        cb.record("release", self, n)

    def split(self, offsets, obj_types=None, names=None, depths=None, tile=None, **kwargs):
        LINKS.append(("split", self.fifo.name, self.end, list(offsets), list(names), list(depths), tile))
        return [Fifo(t, name=x, depth=dp) for t, x, dp in zip(obj_types, names, depths)]

    def join(self, offsets, obj_types=None, names=None, depths=None, tile=None, **kwargs):
        LINKS.append(("join", self.fifo.name, self.end, list(offsets), list(names), list(depths), tile))
        return [Fifo(t, name=x, depth=dp) for t, x, dp in zip(obj_types, names, depths)]


class Kernel:
    def __init__(self, name, obj, arg_types):
        self.name, self.obj, self.arg_types = name, obj, list(arg_types)
        KERNELS.append(self)

    def __call__(self, *args):
        cb.record("call", self, args)


class Buffer(cb.Buffer):
    """check_barrier's buffer, its reads giving where they were read and its writes recording the value too."""

    def __init__(self, obj_type=None, name=None, initial_value=None, use_write_rtp=False, **kwargs):
        super().__init__(name=name, use_write_rtp=use_write_rtp)
        self.obj_type = obj_type

    def __getitem__(self, i):
        super().__getitem__(i)
        return Loaded(self, i)

    def __setitem__(self, i, v):
        super().__setitem__(i, v)
        cb.record("store", self, (i, v))


class Worker(cb.Worker):
    def __init__(self, core_fn, fn_args=None, *args, tile=None, stack_size=None, **kwargs):
        super().__init__(core_fn, fn_args)
        self.tile, self.stack_size = tile, stack_size


def range_(bound, *args, **kwargs):
    cb.record("loop", None, bound)
    yield cb.Anything()
    cb.record("end loop", None, bound)


class if_:
    """if_ and else_: their bodies as traced, recorded so that a branch's operations can be told apart."""

    def __init__(self, cond, *args, **kwargs):
        self.cond = cond

    def __enter__(self):
        cb.record("if", None, self.cond)
        return self

    def __exit__(self, *exc):
        cb.record("end if", None, None)
        return False


memref = types.ModuleType("aie.dialects.memref")
memref.subview = lambda obj, offsets, sizes, strides: ("view", obj, tuple(offsets))
dialects = types.ModuleType("aie.dialects")
dialects.__path__ = []
dialects.memref = memref
sys.modules["aie.dialects"], sys.modules["aie.dialects.memref"] = dialects, memref
iron = sys.modules["aie.iron"]
iron.ObjectFifo, iron.Worker, iron.Kernel, iron.Buffer = Fifo, Worker, Kernel, Buffer
sys.modules["aie.iron.device"].Tile = lambda c, r: (c, r)
sys.modules["aie.iron.controlflow"].range_ = range_
sys.modules["aie.helpers.dialects.scf"].if_ = if_
sys.modules["aie.helpers.dialects.scf"].else_ = if_

errors = []
d = json.load(open(f"{root}/aie/flash_attn/dataflow.json"))
desc = design.load_description()
prog, arr = d["core_program"], d["array"]


def if_depths(ev):
    """Per event, the if_/else_ bodies it is traced in."""
    depth, out = 0, []
    for e in ev:
        depth += e[1] == "if"
        depth -= e[1] == "end if"
        out.append(depth)
    return out


def step_words_problem(ev, kv_in, scalars, tile, acq, blocks):
    """What is wrong with a core's step words as traced, or None: the round's q step (its first kv object)
    read at words 16 + 16 d (the column's block steps) and 17 + 16 d (its own) before its release, in the
    branches the q step's acquisition is in (an idle core reads them too), each kept in its scalar slot; the
    block steps' loop bounded by the col_steps slot, own read in it before the block call."""
    at = d["attention"]["max_rows"] * (1 + tile)
    depth = if_depths(ev)
    q_release = next(j for j, e in enumerate(ev) if j > acq[0] and e[1] == "release" and e[2] is kv_in)
    slot_of = {name: design.IronOps.SLOTS.index(name) for name in ("col_steps", "own")}
    for name, word in (("col_steps", at), ("own", at + 1)):
        reads = [j for j, e in enumerate(ev) if e[1] == "read" and isinstance(e[2], Obj) and e[2].handle is kv_in and
                 e[2].serial == 1 and isinstance(e[3], int) and e[3] == word]
        kept = lambda v: reads and isinstance(v, Loaded) and v.source is ev[reads[0]][2] and v.at == word
        stores = [j for j, e in enumerate(ev) if e[1] == "store" and e[2] is scalars and e[3][0] == slot_of[name] and
                  kept(e[3][1])]
        if len(reads) != 1 or len(stores) != 1 or not acq[0] < reads[0] < stores[0] < q_release or \
                depth[reads[0]] != depth[acq[0]] or depth[stores[0]] != depth[acq[0]]:
            return (f"step word {name}: reads of the q step's word {word} at {reads}, kept in its slot at {stores} "
                    f"(q step acquired at {acq[0]}, released at {q_release}, branch depths "
                    f"{[depth[j] for j in [acq[0]] + reads + stores]})")
    bounded = [j for j, e in enumerate(ev) if e[1] == "loop" and isinstance(e[3], Loaded) and e[3].source is scalars
               and e[3].at == slot_of["col_steps"]]
    if len(bounded) != 1 or not q_release < bounded[0] < acq[1]:
        return (f"the block steps' loops bounded by the col_steps slot at {bounded}, the first block step acquired "
                f"at {acq[1]}")
    end = next(j for j, e in enumerate(ev) if j > bounded[0] and e[1] == "end loop" and e[3] is ev[bounded[0]][3])
    own_reads = [j for j, e in enumerate(ev) if e[1] == "read" and e[2] is scalars and e[3] == slot_of["own"]]
    if not blocks or not any(bounded[0] < j < min(blocks) for j in own_reads) or not min(blocks) < end:
        return f"own read at {own_reads}, the block loop {bounded[0]}..{end}, the first block call at {blocks[:1]}"
    return None


def check(family, tile, contract, shape, columns=8, layout=None, want_layout=None):
    LINKS.clear(); FIFOS.clear(); KERNELS.clear(); cb.EVENTS.clear(); cb.PROGRAM.clear()
    label = f"{family} d{tile} contract {contract} {columns} column(s) layout {layout or 'default'}"
    p = design.make_plan(desc, family, tile, shape, columns, contract, layout)
    if want_layout is not None and p.layout != want_layout:
        errors.append(f"{label}: planned on layout {p.layout}, expected {want_layout}")
    design.emit_mlir(desc, p, "stand-in.o")
    lay = next(x for x in d["layouts"] if x["name"] == p.layout)
    fifos = {f["name"]: f for f in lay["fifos"]}
    # The layout's kv FIFOs carry its unit (kv, or kv_decode in the decode layout): every input object's size.
    kv_unit = fifos["kv_l2l1"]["object"]["unit"]
    objs = dict(d["attention"]["objects"][family][str(tile)])
    objs["kv"] = objs[kv_unit]
    # The decode layout's objects carry one mask row: the core widens it into a 16 x 32-half buffer of its own.
    apart = lay.get("task_tokens", d["attention"]["max_rows"]) < d["attention"]["max_rows"]
    l2 = d["depths"]["l2"]
    for col in range(columns):
        kv3, out3 = FIFOS.get(f"kv_l3l2_{col}"), FIFOS.get(f"out_l2l3_{col}")
        if kv3 is None or out3 is None or kv3.depth != l2 or out3.depth != l2 or \
                kv3.obj_type[1] != (4 * objs["kv"] // 4,) or out3.obj_type[1] != (4 * objs["state"] // 4,):
            errors.append(f"{label}: column {col}'s memory-tile FIFOs are not 4 kv / 4 state objects of depth {l2}")
            continue
        split = [x for x in LINKS if x[0] == "split" and x[1] == kv3.name]
        join = [x for x in LINKS if x[0] == "join" and x[1] == out3.name]
        if len(split) != 1 or split[0][3] != [r * objs["kv"] // 4 for r in range(4)] or \
                split[0][5] != [fifos["kv_l2l1"]["depth"]] * 4 or split[0][6] != (col, arr["memtile_row"]):
            errors.append(f"{label}: column {col}'s kv split is {split}")
        if len(join) != 1 or join[0][3] != [r * objs["state"] // 4 for r in range(4)] or \
                join[0][5] != [fifos["out_l1l2"]["depth"]] * 4:
            errors.append(f"{label}: column {col}'s out join is {join}")
    workers = cb.PROGRAM[0].workers
    if len(workers) != 4 * columns:
        errors.append(f"{label}: {len(workers)} workers, {4 * columns} cores")
        return
    want_syms = list(d["families"][family]) + list(d["attention"]["helpers"])
    if sorted(k.name for k in KERNELS) != sorted(want_syms) or any(k.obj != "stand-in.o" for k in KERNELS):
        errors.append(f"{label}: kernels {[k.name for k in KERNELS]}, the family links {want_syms}")
    for i, w in enumerate(workers):
        col, r = divmod(i, 4)
        core = f"core {i}"
        if w.tile != (col, arr["first_core_row"] + r) or w.stack_size != d["core_budget"]["kernel_stack"][family][str(tile)]:
            errors.append(f"{label}: {core} on {w.tile} with stack {w.stack_size}")
        kv_in, out = w.fn_args[0], w.fn_args[1]
        if kv_in.fifo.name != f"kv_l2l1_{col}_{r}" or kv_in.end != "cons" or out.fifo.name != f"out_l1l2_{col}_{r}" \
                or out.end != "prod":
            errors.append(f"{label}: {core}'s FIFO ends are {kv_in.fifo.name} {kv_in.end}, {out.fifo.name} {out.end}")
        ev = [e for e in cb.EVENTS if e[0] == core]
        rtp, bar = w.fn_args[2], w.fn_args[3]
        kinds = [e[1] for e in ev]
        wait, rel = kinds.index("wait"), kinds.index("release") if "release" in kinds else -1
        reads = [e[3] for e in ev if e[1] == "read" and e[2] is rtp]
        first_acq = kinds.index("acquire")
        if not (wait < min(j for j, e in enumerate(ev) if e[1] == "read" and e[2] is rtp) and
                max(j for j, e in enumerate(ev) if e[1] == "read" and e[2] is rtp) < rel < first_acq) or \
                sorted(reads) != list(range(prog["rtp_word_count"])) or rtp.obj_type[1] != (prog["rtp_word_count"],):
            errors.append(f"{label}: {core}: barrier wait, RTP reads {sorted(reads)}, release, first acquisition out of order")
        called = {e[2].name for e in ev if e[1] == "call"}
        if called != set(want_syms):
            errors.append(f"{label}: {core} calls {sorted(called)}, the family links {sorted(want_syms)}")
        loop = kinds.index("loop")
        if any(j < loop for j, e in enumerate(ev) if e[1] == "call"):
            errors.append(f"{label}: {core} calls a kernel outside its loop over the rounds")
        # The widening's first row: stored once the round's rows are known and before the chunk slot's update
        # (the next round's chunk), then read on the first block step before its block call (in place); or,
        # in the decode layout, the step's mask row copied into the core's own mask buffer before the call,
        # which takes that buffer.
        scalars = w.fn_args[10]
        n_bufs = 12 if apart else 11
        mask_buf = w.fn_args[11] if apart else None
        if len(w.fn_args) != n_bufs + len(want_syms) or (apart and (
                not isinstance(mask_buf, Buffer) or mask_buf.name != f"mask_{col}_{r}" or
                mask_buf.obj_type[1] != (d["attention"]["max_rows"] * d["attention"]["kv_block"] * 2 // 4,))):
            errors.append(f"{label}: {core}'s arguments {[getattr(a, 'name', a) for a in w.fn_args[:n_bufs]]}, "
                          f"{'a' if apart else 'no'} mask buffer of 16 rows x 32 halves expected")
            continue
        slot = lambda kind, name: [j for j, e in enumerate(ev) if e[1] == kind and e[2] is scalars and
                                   e[3] == design.IronOps.SLOTS.index(name)]
        row0_w, chunk_w, row0_r = slot("write", "row0"), slot("write", "chunk"), slot("read", "row0")
        acq = [j for j, e in enumerate(ev) if e[1] == "acquire" and e[2] is kv_in]
        blocks = [j for j, e in enumerate(ev) if e[1] == "call" and e[2].name.startswith("fa_block")]
        first_block = ev[min(blocks)] if blocks else None
        if apart:
            mask_w = [j for j, e in enumerate(ev) if e[1] == "write" and e[2] is mask_buf]
            if len(acq) < 2 or not any(acq[1] < j < min(blocks) for j in mask_w) or \
                    not any(a is mask_buf for a in first_block[3]):
                errors.append(f"{label}: {core} writes its mask buffer at {mask_w[:4]} (kv acquisitions {acq[:3]}, "
                              f"first block call {min(blocks)}, on the buffer: "
                              f"{any(a is mask_buf for a in first_block[3])})")
        elif len(row0_w) != 1 or not loop < row0_w[0] < max(chunk_w) or len(acq) < 2 or \
                not any(acq[1] < j < min(blocks) for j in row0_r):
            errors.append(f"{label}: {core} keeps the task's first row at {row0_w} (chunk updates {chunk_w}, reads "
                          f"{row0_r}, kv acquisitions {acq[:3]}, first block call {min(blocks)})")
        problem = step_words_problem(ev, kv_in, scalars, tile, acq, blocks)
        if problem:
            errors.append(f"{label}: {core}: {problem}")
    seq = [e for e in cb.EVENTS if e[0] == "sequence"]
    for i, w in enumerate(workers):
        writes = [j for j, e in enumerate(seq) if e[1] == "write" and e[2] is w.fn_args[2]]
        sets = [j for j, e in enumerate(seq) if e[1] == "set" and e[2] is w.fn_args[3]]
        if len(writes) != prog["rtp_word_count"] or len(sets) != 1 or max(writes) > sets[0]:
            errors.append(f"{label}: core {i}: {len(writes)} RTP writes and {len(sets)} barrier sets, words first")


# One-token shapes on both layouts (decode by default, attention forced), with and without a mask; prefill on
# the attention layout.
for fam, tiles in (("f16", (32, 64, 128)), ("q8_0", (64, 128))):
    for t in tiles:
        for contract in (0, 1):
            check(fam, t, contract, design.Shape(d=t, n_kv=4096, scale=0.1), want_layout="decode")
            check(fam, t, contract, design.Shape(d=t, n_kv=4096, scale=0.1), layout="attention")
        check(fam, t, 0, design.Shape(d=t, n_kv=4096, has_mask=False, scale=0.1), want_layout="decode")
check("f16", 128, 0, design.Shape(d=128, n_kv=512, n_tokens=512, scale=0.1), want_layout="attention")
# A causal profile changes the step words the host writes, not the program.
check("f16", 128, 0, design.Shape(d=128, n_kv=256, n_tokens=64, scale=0.1, causal=0), want_layout="attention")
check("f16", 128, 0, design.Shape(d=128, n_kv=512, scale=0.1, causal=300), want_layout="decode")
check("q8_0", 64, 0, design.Shape(d=64, n_kv=33, n_head=8, n_head_kv=8, scale=0.1), columns=2, want_layout="decode")
check("q8_0", 64, 0, design.Shape(d=64, n_kv=33, n_head=8, n_head_kv=8, n_tokens=3, scale=0.1), columns=2,
      want_layout="attention")
print(f"flash_attn IRON program on stand-ins: {len(errors)} problem(s)")
for e in errors[:20]:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
