#!/usr/bin/env python3
"""Runs aie/matmul/design.py's IRON program on stand-ins of mlir-aie's IRON classes and checks the
runtime-parameter barrier of every core as the program really uses it, with a bare Python 3 (no
mlir-aie, no numpy needed):

  - each core program waits on its barrier (wait_for_value) before it reads its RTP buffer, with the
    value aie/matmul/dataflow.json gives, and releases the barrier (release_with_value, the
    description's value, > 0) after its last RTP read and before it takes its first FIFO object: without
    the release an IRON core passes wait_for_value at once from its second invocation on and reads the
    previous invocation's words (amd/IRON iron/operators/flm/gemm/README.md, "Runtime parameters");
  - the runtime sequence writes every RTP word of a core, then sets that core's barrier to the value the
    core waits for, before its first fill or drain;
  - design.py's plan checks the same protocol (a description without the release fails its plan).

IRON traces a core function once to build its MLIR (loops by range_ and both arms of an if_ run once),
so the order of the calls recorded here is the order of the operations in the core program.

    check_barrier.py <design.py>              check the design; exit 1 with the reasons if it breaks
    check_barrier.py <design.py> --self-test  the same check on the design with its release dropped
                                              (the old design) must fail, and so must its plan
"""

import importlib.util
import os
import sys
import types

EVENTS = []         # (context, kind, object, value) in call order
CONTEXT = ["build"]  # "core <i>", "sequence" or "build"
SWALLOW_RELEASE = [False]


def record(kind, obj, value=None):
    EVENTS.append((CONTEXT[-1], kind, obj, value))


class Anything:
    """Whatever IRON object the design uses that this check does not look at."""

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Anything()

    def __call__(self, *args, **kwargs):
        return Anything()

    def __getitem__(self, key):
        return Anything()

    def __setitem__(self, key, value):
        pass

    def __iter__(self):
        return iter(())

    def __enter__(self):
        return Anything()

    def __exit__(self, *exc):
        return False

    def __bool__(self):
        return True

    def __index__(self):
        return 1

    def __int__(self):
        return 1

    def __len__(self):
        return 1

    def _op(self, *args):
        return Anything()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __floordiv__ = __rfloordiv__ = _op
    __truediv__ = __rtruediv__ = __mod__ = __rmod__ = __and__ = __or__ = __lshift__ = __rshift__ = _op
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _op
    __hash__ = object.__hash__


class Buffer(Anything):
    def __init__(self, *args, name=None, use_write_rtp=False, **kwargs):
        self.name = name
        self.rtp = use_write_rtp

    def __getitem__(self, i):
        record("read", self, i)
        return Anything()

    def __setitem__(self, i, v):
        record("write", self, i)


class WorkerRuntimeBarrier(Anything):
    def __init__(self, initial_value=0):
        self.initial_value = initial_value

    def wait_for_value(self, v):
        record("wait", self, v)

    def release_with_value(self, v):
        if not SWALLOW_RELEASE[0]:
            record("release", self, v)

    def set(self, v):
        record("set", self, v)


class FifoHandle(Anything):
    def acquire(self, n=1):
        record("acquire", self, n)
        return Anything()

    def fill(self, *args, **kwargs):
        record("dma", self)

    def drain(self, *args, **kwargs):
        record("dma", self)

    def _parts(self, args, kwargs):
        for v in list(args) + [kwargs.get("names"), kwargs.get("obj_types")]:
            if isinstance(v, (list, tuple)):
                return [ObjectFifo() for _ in v]
        return [ObjectFifo()]

    def split(self, *args, **kwargs):
        return self._parts(args, kwargs)

    def join(self, *args, **kwargs):
        return self._parts(args, kwargs)

    def forward(self, *args, **kwargs):
        return ObjectFifo()


class ObjectFifo(Anything):
    def prod(self, *args, **kwargs):
        return FifoHandle()

    def cons(self, *args, **kwargs):
        return FifoHandle()


class Worker(Anything):
    def __init__(self, core_fn, fn_args=None, *args, **kwargs):
        self.core_fn = core_fn
        self.fn_args = list(fn_args or [])


class Runtime(Anything):
    def __init__(self, sequence=None, arg_types=None, *args, **kwargs):
        self.sequence = sequence
        self.arg_types = list(arg_types or [])


class Program(Anything):
    def __init__(self, device=None, rt=None, *args, workers=None, **kwargs):
        self.rt = rt
        self.workers = list(workers or [])

    def resolve_program(self, *args, **kwargs):
        PROGRAM.append(self)
        for i, w in enumerate(self.workers):
            CONTEXT.append(f"core {i}")
            w.core_fn(*w.fn_args)
            CONTEXT.pop()
        CONTEXT.append("sequence")
        # Tensors for the operand types; lists of FIFO handles are handed over as they are.
        self.rt.sequence(*[t if isinstance(t, list) else Anything() for t in self.rt.arg_types])
        CONTEXT.pop()
        return "stand-in module"


PROGRAM = []


def range_(*args, **kwargs):
    yield Anything()  # IRON traces a loop body once


class StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Anything()


def install_stand_ins():
    mods = {}
    for name in ("aie", "aie.iron", "aie.iron.device", "aie.iron.controlflow", "aie.helpers",
                 "aie.helpers.dialects", "aie.helpers.dialects.scf", "aie.helpers.taplib"):
        mods[name] = StubModule(name)
        mods[name].__path__ = []
    iron = mods["aie.iron"]
    for cls in (Buffer, WorkerRuntimeBarrier, ObjectFifo, Worker, Runtime, Program):
        setattr(iron, cls.__name__, cls)
    for cls in ("Kernel", "TaskGroup"):
        setattr(iron, cls, Anything)
    mods["aie.iron.controlflow"].range_ = range_
    mods["aie.helpers.dialects.scf"].if_ = Anything
    mods["aie.helpers.dialects.scf"].else_ = Anything
    mods["aie.helpers.taplib"].TensorAccessPattern = Anything
    mods["aie.iron.device"].Tile = Anything
    for parent, child in (("aie", "iron"), ("aie", "helpers"), ("aie.iron", "device"), ("aie.iron", "controlflow"),
                          ("aie.helpers", "dialects"), ("aie.helpers.dialects", "scf"), ("aie.helpers", "taplib")):
        setattr(mods[parent], child, mods[f"{parent}.{child}"])
    sys.modules.update(mods)
    try:
        import numpy  # noqa: F401  (the real one, where there is one)
    except ImportError:
        sys.modules["numpy"] = StubModule("numpy")


def load_design(path):
    spec = importlib.util.spec_from_file_location("xdna_matmul_design", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check_program(design, plan):
    """The barrier protocol of every core and of the sequence, from the recorded calls."""
    errors = []
    EVENTS.clear()
    PROGRAM.clear()
    design.emit_mlir(plan, "stand-in.o")
    if len(PROGRAM) != 1:
        return ["emit_mlir did not resolve one Program"]
    workers = PROGRAM[0].workers
    want_workers = plan.cols * design.ROWS
    if len(workers) != want_workers:
        errors.append(f"{len(workers)} workers, the plan has {want_workers} cores")
    seq = [e for e in EVENTS if e[0] == "sequence"]
    first_dma = next((i for i, e in enumerate(seq) if e[1] == "dma"), len(seq))
    for i, w in enumerate(workers):
        core = f"core {i}"
        rtps = [a for a in w.fn_args if isinstance(a, Buffer) and a.rtp]
        bars = [a for a in w.fn_args if isinstance(a, WorkerRuntimeBarrier)]
        if len(rtps) != 1 or len(bars) != 1:
            errors.append(f"{core}: {len(rtps)} RTP buffers and {len(bars)} barriers, expected one of each")
            continue
        rtp, bar = rtps[0], bars[0]
        ev = [e for e in EVENTS if e[0] == core]
        waits = [j for j, e in enumerate(ev) if e[1] == "wait" and e[2] is bar]
        rels = [j for j, e in enumerate(ev) if e[1] == "release" and e[2] is bar]
        reads = [j for j, e in enumerate(ev) if e[1] == "read" and e[2] is rtp]
        acqs = [j for j, e in enumerate(ev) if e[1] == "acquire"]
        if len(waits) != 1:
            errors.append(f"{core}: waits on its barrier {len(waits)} times, expected once per pass")
            continue
        if ev[waits[0]][3] != design.BARRIER_ACQUIRE:
            errors.append(f"{core}: wait_for_value({ev[waits[0]][3]}), the description waits for {design.BARRIER_ACQUIRE}")
        if not reads:
            errors.append(f"{core}: never reads its RTP buffer")
        elif reads[0] < waits[0]:
            errors.append(f"{core}: reads an RTP word before it waits on the barrier")
        if len(rels) != 1:
            errors.append(f"{core}: releases its barrier {len(rels)} times, expected once after reading the RTP words"
                          " (without the release the next invocation's pass does not wait and reads these words)")
            continue
        if ev[rels[0]][3] != design.BARRIER_RELEASE or design.BARRIER_RELEASE <= 0:
            errors.append(f"{core}: release_with_value({ev[rels[0]][3]}), the description releases "
                          f"{design.BARRIER_RELEASE} (must be > 0)")
        if reads and rels[0] < reads[-1]:
            errors.append(f"{core}: releases its barrier before its last RTP read")
        if acqs and rels[0] > acqs[0]:
            errors.append(f"{core}: takes a FIFO object before it releases its barrier")
        # The sequence: every RTP word of this core written, then its barrier set, before any DMA.
        writes = [j for j, e in enumerate(seq) if e[1] == "write" and e[2] is rtp]
        sets = [j for j, e in enumerate(seq) if e[1] == "set" and e[2] is bar]
        written = {seq[j][3] for j in writes}
        want = {design.RTP_CONTRACT, design.RTP_OUT_TILES, design.RTP_K_TILES, design.RTP_VERSION}
        if written != want:
            errors.append(f"{core}: the sequence writes RTP words {sorted(written)}, the core reads {sorted(want)}")
        if len(sets) != 1:
            errors.append(f"{core}: the sequence sets its barrier {len(sets)} times, expected once")
            continue
        if seq[sets[0]][3] != design.BARRIER_ACQUIRE:
            errors.append(f"{core}: the sequence sets {seq[sets[0]][3]}, the core waits for {design.BARRIER_ACQUIRE}")
        if writes and sets[0] < writes[-1]:
            errors.append(f"{core}: the sequence sets the barrier before it has written every RTP word")
        if sets[0] > first_dma:
            errors.append(f"{core}: the sequence sets the barrier after its first fill or drain")
    return errors


def plan_errors(design, plan):
    return [f"plan check failed: {w}: {d}" for w, ok, d in plan.checks if not ok]


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    install_stand_ins()
    design = load_design(argv[1])
    self_test = "--self-test" in argv[2:]
    plans = [design.make_plan("kquant", 32, 8, m_tiles=40, n_tiles=2, k_tiles=3),
             design.make_plan("float", 4, 2, contract="mm_f32_f32", m_tiles=8, n_tiles=1, k_tiles=70)]
    if not self_test:
        errors = []
        for p in plans:
            errors += [f"{p.family} n{p.tile_n} cols {p.cols}: {e}" for e in plan_errors(design, p) + check_program(design, p)]
        for e in errors:
            print(f"  {e}")
        print("check_barrier: " + ("FAILED" if errors else f"barrier and RTP protocol of {len(plans)} designs ok"))
        return 1 if errors else 0
    # Self-test: the old design (no release in the core program) must be caught, by the program check
    # and by the plan.
    SWALLOW_RELEASE[0] = True
    caught = check_program(design, plans[0])
    SWALLOW_RELEASE[0] = False
    design.BARRIER_RELEASE = 0
    caught_plan = plan_errors(design, design.make_plan("kquant", 32, 8, m_tiles=40, n_tiles=2, k_tiles=3))
    for e in caught[:1] + caught_plan:
        print(f"  caught: {e}")
    if len(caught) > 1:
        print(f"  caught: ... and {len(caught) - 1} more")
    ok = any("releases its barrier 0 times" in e for e in caught) and \
        any("released after the RTP words are read" in e for e in caught_plan)
    print("check_barrier --self-test: " + ("the design without the release is caught" if ok else "FAILED: not caught"))
    return 0 if ok else 1


# ---------------------------------------------------------------------------------------------------
# For designs whose FIFOs are filled from more than one tensor (a check must tell which one a fill
# names): the sequence gets one TensorArg per tensor type, by its position, instead of Anything().
# ---------------------------------------------------------------------------------------------------
class TensorArg(Anything):
    def __init__(self, index, arg_type=None):
        self.index = index
        self.arg_type = arg_type


class TensorProgram(Program):
    def resolve_program(self, *args, **kwargs):
        PROGRAM.append(self)
        for i, w in enumerate(self.workers):
            CONTEXT.append(f"core {i}")
            w.core_fn(*w.fn_args)
            CONTEXT.pop()
        CONTEXT.append("sequence")
        self.rt.sequence(*[t if isinstance(t, list) else TensorArg(i, t) for i, t in enumerate(self.rt.arg_types)])
        CONTEXT.pop()
        return "stand-in module"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
