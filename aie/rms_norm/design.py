#!/usr/bin/env python3
"""RMS_NORM (with the MUL by its weight) on XDNA2: a design of its own, every core of the array taking
whole rows.

    y[r][i] = (x[r][i] * s_r) * w[i],  s_r = rsqrt(mean_i x[r][i]^2 + eps)

Rows are dealt to the cores in order: row r to column (r % C), core row ((r // C) % 4), round r // (4 C).
Per column (its shim tile, its memory tile (c, 1), its four cores (c, 2..5)):
  - x: the shim streams each of the column's rows once into the memory tile, which holds it (two row
    buffers per core, so the next row arrives while this one is scaled) and sends it to its core twice,
    chunk by chunk: pass 1 sums the squares, pass 2 scales. DRAM reads x once.
  - w: the shim streams the weight row once per invocation into the memory tile; the memory tile
    broadcasts it to the column's cores, chunk by chunk, in pass 2 of every row.
  - y: each core sends its scaled chunks to the memory tile, which joins the column's rows and sends
    them to the shim.
The core program (kernels/rms_norm.cc) is four calls: rms_norm_sumsq_f32 per chunk of pass 1,
rms_norm_scale_f32 once per row, rms_norm_apply_mul_f32 (or rms_norm_apply_f32 without the weight)
per chunk of pass 2. Runtime parameters per invocation: rows of this core, cols, inv_cols, eps.

Why a design of its own and not a stage of the matmul design: the matmul cores use both input channels
(W, A) and their program memory holds a weight family's kernels; this program needs two inputs (x, w)
too. A stage inside the matmul design would need a core role of its own (issue: one co-resident
decode-layer design), which the matmul design does not have yet.

`--print-plan` prints the plan and its budgets (core data memory, memory-tile memory, DMA channels,
the bytes each operand moves) and checks them against the AIE2P limits; it needs only Python 3. There
is no IRON emission yet and no instruction stream built on the host: on the simulator the rows run
through the kernel code directly (src/ops/rms_norm/sim), and the XRT device refuses the kind.
"""

import argparse
import json
import sys

# What the host and the core agree on (aie/include/xdna_aie/rms_norm_tiles.h).
LANES = 32
CHUNK = 1024
MAX_COLS = 8192

# AIE2P limits (../../docs and ../shared facts: 64 KB data memory per core, 16 KB program memory,
# 512 KB per memory tile, 2 + 2 core DMA channels, 6 + 6 memory-tile channels, 2 + 2 shim channels).
CORE_DATA = 64 * 1024
CORE_PROGRAM = 16 * 1024
MEMTILE = 512 * 1024
CORE_IN = CORE_OUT = 2
MEMTILE_IN = MEMTILE_OUT = 6
SHIM_IN = SHIM_OUT = 2
COLUMNS = 8
CORES_PER_COLUMN = 4
STACK = 1024  # the core's stack (mlir-aie's default)

# Program memory: an estimate until Peano builds the program (no toolchain here). The loops are one
# emulated fp32 multiply each (about 32 VLIW bundles per 32 lanes, llvm-aie aie2p_vmult.h), the scale
# call twelve of them; at most 16 bytes per bundle, plus the core's lock and FIFO code.
PROGRAM_ESTIMATE = 16 * (40 + 70 + 35 + 12 * 32) + 1024


class PlanError(Exception):
    pass


def chunks(cols):
    return (cols + CHUNK - 1) // CHUNK


def make_plan(rows, cols, weight, columns=COLUMNS):
    if cols <= 0 or cols % LANES or cols > MAX_COLS:
        raise PlanError(f"row length {cols}: the design takes multiples of {LANES} up to {MAX_COLS}")
    # The kernels' chunk loops promise the compiler 1 trip of 32 lanes: every chunk of a row of a multiple
    # of 32 values keeps it (src/ops/rms_norm/runtime/rms-norm-invocation.h).
    if rows <= 0:
        raise PlanError("no rows")
    if not 1 <= columns <= COLUMNS:
        raise PlanError(f"{columns} columns: the array has {COLUMNS}")
    cores = min(rows, columns * CORES_PER_COLUMN)
    cols_used = min(columns, cores)
    busiest = -(-rows // cores)
    chunk_bytes = min(cols, CHUNK) * 4
    row_bytes = cols * 4
    core_buffers = {
        "x chunks (2 buffers)": 2 * chunk_bytes,
        "w chunks (2 buffers)": 2 * chunk_bytes if weight else 0,
        "y chunks (2 buffers)": 2 * chunk_bytes,
        "partial sums and scale": 2 * LANES * 4,
        "stack": STACK,
    }
    memtile_buffers = {
        "x rows (2 per core)": 2 * CORES_PER_COLUMN * row_bytes,
        "w row": row_bytes if weight else 0,
        "y chunks (2 per core)": 2 * CORES_PER_COLUMN * chunk_bytes,
    }
    channels = {
        "core in (x, w)": 2 if weight else 1,
        "core out (y)": 1,
        "memory tile in (x, w from the shim; y from 4 cores)": (2 if weight else 1) + CORES_PER_COLUMN,
        "memory tile out (x to 4 cores; w broadcast; y to the shim)": CORES_PER_COLUMN + (1 if weight else 0) + 1,
        "shim out to the array (x, w)": 2 if weight else 1,
        "shim in from the array (y)": 1,
    }
    limits = {
        "core in (x, w)": CORE_IN,
        "core out (y)": CORE_OUT,
        "memory tile in (x, w from the shim; y from 4 cores)": MEMTILE_IN,
        "memory tile out (x to 4 cores; w broadcast; y to the shim)": MEMTILE_OUT,
        "shim out to the array (x, w)": SHIM_OUT,
        "shim in from the array (y)": SHIM_IN,
    }
    traffic = {
        "x read (bytes)": rows * row_bytes,
        "w read (bytes)": cols_used * row_bytes if weight else 0,
        "y written (bytes)": rows * row_bytes,
        "x memory tile -> core (bytes)": 2 * rows * row_bytes,
    }
    checks = []
    core_total = sum(core_buffers.values())
    memtile_total = sum(memtile_buffers.values())
    checks.append(("core data memory", core_total, CORE_DATA))
    checks.append(("core program memory (estimate)", PROGRAM_ESTIMATE, CORE_PROGRAM))
    checks.append(("memory tile", memtile_total, MEMTILE))
    for name, n in channels.items():
        checks.append((name, n, limits[name]))
    failed = [f"{name}: {used} > {limit}" for name, used, limit in checks if used > limit]
    return {
        "rows": rows,
        "cols": cols,
        "weight": weight,
        "columns used": cols_used,
        "cores used": cores,
        "rows on the busiest core": busiest,
        "chunks per row": chunks(cols),
        "kernel calls per row": {"rms_norm_sumsq_f32": chunks(cols), "rms_norm_scale_f32": 1,
                                 ("rms_norm_apply_mul_f32" if weight else "rms_norm_apply_f32"): chunks(cols)},
        "core buffers (bytes)": core_buffers,
        "core data memory (bytes)": core_total,
        "core program memory (bytes, estimate)": PROGRAM_ESTIMATE,
        "memory tile buffers (bytes)": memtile_buffers,
        "memory tile (bytes)": memtile_total,
        "DMA channels": channels,
        "traffic": traffic,
        "checks failed": failed,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--print-plan", action="store_true", help="print the plan and its budgets")
    ap.add_argument("--rows", type=int, default=1)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--no-weight", action="store_true", help="RMS_NORM alone (no MUL by a weight)")
    ap.add_argument("--columns", type=int, default=COLUMNS)
    ap.add_argument("--format", choices=["text", "json"], default="text")
    args = ap.parse_args(argv)
    if not args.print_plan:
        ap.error("only --print-plan exists: the design has no IRON emission yet (see the module docstring)")
    try:
        plan = make_plan(args.rows, args.cols, not args.no_weight, args.columns)
    except PlanError as e:
        print(f"design.py: {e}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps(plan, indent=1))
    else:
        for k, v in plan.items():
            print(f"{k}: {v}")
    return 1 if plan["checks failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
