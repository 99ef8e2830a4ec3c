#!/usr/bin/env python3
"""MUL_MAT_ID (mixture of experts) on XDNA2: the whole-array matmul of ../matmul, steered to the experts
a ubatch selects.

dst[:, e, t] = W[ids[e, t]] x src1[:, e % ne11, t]. The cores, their kernels, the tile ABI, the FIFOs
and the xclbin are the matmul's, unchanged: which expert a core multiplies is decided entirely by where
the shim DMAs read and write, and the host knows that from the ids before it submits.

Per selected expert x with R_x routed rows (the host has gathered them, quantized, into A_x):
  - W: the matmul's W fill, with its base moved to x's slice of the packed stack (the stack is stored
    [expert][m_tile][k_tile][tile], so a slice is one contiguous run: base = x * mat_bytes);
  - A: the matmul's A fill of A_x (ceil(R_x / TN) token tiles, contiguous in the activation scratch);
  - C: the matmul's C drain into a staging area, rows padded to whole 64-row tiles (the drain writes
    whole tiles); the host scatters the valid rows into dst.
An expert no token selects has no W fill at all. This is what the planner submits today: one matmul
invocation per selected expert, all in the split's one submission (src/plan/expert-plan.h), and what
`--print-plan` prints. `--fold` prints the alternative the README discusses: the same transfers in
one instruction stream per MUL_MAT_ID (one invocation, the cores' RTP output-tile count summed over
the experts), which saves the per-invocation setup.

Like ../matmul/design.py, `--print-plan` needs only Python 3. There is no MLIR emission here: each
expert's stream is ../matmul/design.py's for its shape with a moved W base (XRT: a sub-buffer of the
weights BO), and the folded stream needs instruction streams built on the host per routing, which the
runtime does not do yet (../matmul/README.md, "Costs and requirements").
"""

import argparse
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("matmul_design", os.path.join(HERE, "..", "matmul", "design.py"))
mm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mm)


def family_of(contract):
    for family, (_, contracts) in mm.FAMILIES.items():
        if any(c.name == contract for c in contracts):
            return family
    raise mm.PlanError(f"unknown contract {contract!r}")


def parse_routing(text, n_expert):
    """'x:rows,...' -> {expert: rows}; every expert in range, rows positive, no expert twice."""
    routing = {}
    for part in text.split(","):
        x, _, rows = part.partition(":")
        x, rows = int(x), int(rows)
        if not 0 <= x < n_expert:
            raise mm.PlanError(f"expert {x} outside [0, {n_expert})")
        if rows <= 0 or x in routing:
            raise mm.PlanError(f"expert {x}: rows must be positive and each expert named once")
        routing[x] = rows
    return routing


def make_id_plan(contract, tile_n, cols, m_tiles, k_tiles, n_expert, routing, fold=False, layout=None):
    family = family_of(contract)
    chosen = next(c for c in mm.family_contracts(family) if c.name == contract)
    T = chosen.w_bytes()
    mat_bytes = m_tiles * k_tiles * T
    stride = m_tiles * mm.TILE_M  # staging rows: whole output tiles
    experts, a_offset, out_row, checks = [], 0, 0, []
    w_read = w_abi = a_read = c_written = 0
    for x in sorted(routing):
        n_tiles = (routing[x] + tile_n - 1) // tile_n
        # Each expert's invocation in the layout asked for (the timing model picks per shape; n_split takes
        # whole groups of 4 token tiles, so an expert with fewer stays m_split).
        lay = layout or mm.DEFAULT_LAYOUT
        if n_tiles % mm.LAYOUTS[lay].a_parts:
            lay = mm.DEFAULT_LAYOUT
        p = mm.make_plan(family, tile_n, cols, contract=contract, m_tiles=m_tiles, n_tiles=n_tiles, k_tiles=k_tiles,
                         out_row_stride=stride, layout=lay)
        checks += [(f"expert {x}: {what}", ok, detail) for what, ok, detail in p.checks]
        experts.append({
            "expert": x,
            "rows": routing[x],
            "token tiles": n_tiles,
            "layout": lay,
            "W base (bytes)": x * mat_bytes,
            "A base (bytes)": a_offset,
            "C base (floats)": out_row * stride,
            "output tiles per core (RTP)": p.schedule["output tiles per core (RTP)"],
        })
        a_offset += n_tiles * k_tiles * p.a_obj_bytes
        out_row += n_tiles * tile_n
        w_read += p.traffic["W read (bytes)"]
        w_abi += p.traffic["W of the ABI (bytes)"]
        a_read += p.traffic["A read (bytes)"]
        c_written += p.traffic["C written (bytes)"]
    selected = len(routing)
    result = {
        "contract": contract,
        "family": family,
        "tile_n": tile_n,
        "cols": cols,
        "experts in the stack": n_expert,
        "experts selected": selected,
        "expert slice (bytes)": mat_bytes,
        "invocations": 1 if fold else selected,
        "experts": experts,
        "traffic": {
            "W read (bytes, with the family's over-fetch)": w_read,
            "W of the selected experts' tiles (bytes)": w_abi,
            "W of the whole stack, once (bytes)": n_expert * mat_bytes,
            "A read (bytes)": a_read,
            "C written to staging (bytes)": c_written,
        },
        "scratch": {"gathered activations (bytes)": a_offset, "staging rows": out_row, "staging row (floats)": stride},
    }
    if fold:
        # One stream: the cores loop over every expert's output tiles; RTPs are summed per core.
        per_core = [sum(e["output tiles per core (RTP)"][c] for e in experts) for c in range(cols)]
        result["folded: output tiles per core (RTP)"] = per_core
    return result, checks


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--contract", default="mm_q4_K_a8", help="matmul contract of the expert stack")
    ap.add_argument("--tile-n", type=int, choices=[4, 32], default=4)
    ap.add_argument("--cols", type=int, default=mm.MAX_COLS)
    ap.add_argument("--m-tiles", type=int, default=12, help="row tiles of one expert (default 12: M = 768)")
    ap.add_argument("--k-tiles", type=int, default=8, help="K tiles (default 8: K = 2048 at TK 256)")
    ap.add_argument("--experts", type=int, default=128, help="experts in the stack (default 128)")
    ap.add_argument("--routing", default="3:1,17:1,40:1,41:1,77:1,90:1,101:1,127:1",
                    help="selected experts and their rows, 'x:rows,...' (default: one decoded token, 8 experts)")
    ap.add_argument("--fold", action="store_true", help="one instruction stream over the selected experts")
    ap.add_argument("--layout", choices=sorted(mm.LAYOUTS), help="the experts' design layout (default: m_split; "
                    "n_split for an expert with whole groups of 4 token tiles when asked)")
    ap.add_argument("--print-plan", action="store_true", help="print the plan (no mlir-aie needed)")
    ap.add_argument("--format", choices=["text", "json"], default="text")
    args = ap.parse_args(argv)
    try:
        routing = parse_routing(args.routing, args.experts)
        plan, checks = make_id_plan(args.contract, args.tile_n, args.cols, args.m_tiles, args.k_tiles, args.experts,
                                    routing, args.fold, args.layout)
    except mm.PlanError as e:
        print(f"design.py: {e}", file=sys.stderr)
        return 2
    failed = [c for c in checks if not c[1]]
    if not args.print_plan:
        print("design.py: no MLIR emission for MUL_MAT_ID (see the module docstring); use --print-plan",
              file=sys.stderr)
        return 2
    if args.format == "json":
        plan["checks failed"] = [f"{w}: {d}" for w, _, d in failed]
        json.dump(plan, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(f"MUL_MAT_ID {plan['contract']} ({plan['family']}), TN {plan['tile_n']}, {plan['cols']} columns: "
              f"{plan['experts selected']} of {plan['experts in the stack']} experts selected, "
              f"{plan['invocations']} invocation(s)")
        for e in plan["experts"]:
            print(f"  expert {e['expert']:4d}: {e['rows']:4d} rows, {e['token tiles']} token tiles ({e['layout']}), "
                  f"W base {e['W base (bytes)']}, A base {e['A base (bytes)']}, C base {e['C base (floats)']}")
        for k, v in plan["traffic"].items():
            print(f"  {k}: {v}")
        for k, v in plan["scratch"].items():
            print(f"  {k}: {v}")
        print(f"  checks: {len(checks) - len(failed)} of {len(checks)} pass")
        for w, _, d in failed:
            print(f"  FAILED {w}: {d}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
