#!/usr/bin/env python3
"""The co-resident decode-layer plan's budgets, computed from the designs it reuses.

The plan (README.md) gives each core a fixed role for a whole decoded token: the projections and
attention time-share the cores of columns 0-6 (role PA), the glue runs on two cores of column 7 (G1:
residual ADD, RMS_NORM with its weight, activation quantization; G2: ROPE, the KV-cache write, SwiGLU
and its quantization). No program links these roles yet. What this tool does is ask each reused
design (its own design.py, --print-plan) for one decoded token's invocation at the model's shapes,
and add up, per role, what a core, its memory tile and its shim would hold:

  resident  every phase's buffers, channels, BDs and locks allocated at once (IRON allocates every
            object FIFO statically: what linking today's designs into one program would give)
  aliased   the phases' buffers in one region and their channels re-programmed between phases (the
            largest phase): what the plan needs the instruction stream to do

against the AIE2P limits the designs check themselves (core 64 KB data, 16 KB program, 2 + 2 DMA
channels, 16 BDs, 16 locks; memory tile 512 KB, 6 + 6 channels, 48 BDs; shim 2 + 2 channels).
Program memory is an estimate wherever a figure exists (no Peano here to link a program) and says
where it comes from. Exits 1 if a phase's own plan fails its checks or a role does not fit even
aliased.

usage: budget.py [--n-kv N] [--subroles] [--cache f16|q8_0] [--format text|json]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
AIE = os.path.dirname(HERE)

# AIE2P limits, as the reused designs check them (aie/matmul/design.py, aie/flash_attn/design.py).
LIMITS = {"core_bytes": 65536, "program_bytes": 16384, "core_s2mm": 2, "core_mm2s": 2, "core_bds": 16,
          "core_locks": 16, "memtile_bytes": 524288, "memtile_s2mm": 6, "memtile_mm2s": 6, "memtile_bds": 48,
          "shim_mm2s": 2, "shim_s2mm": 2}

# Llama-3.1-8B, the model (also the timing model's `8b`).
MODEL = {"n_embd": 4096, "n_ff": 14336, "n_head": 32, "n_head_kv": 8, "head_dim": 128}

# Program memory estimates of the reused core programs, with their sources (none is linked here).
PROGRAM = {
    "matmul kquant": (9728, "src/sim/feasibility.cpp: the K-quant family program (Q4_K, Q5_K, Q6_K; an upper bound for "
                            "a sub-role's one type)"),
}


def plan(design, *args):
    """design.py --print-plan --format json of aie/<design>."""
    script = os.path.join(AIE, design.split(":")[0], "design.py")
    out = subprocess.run([sys.executable, script, *args, "--print-plan", "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def total(section):
    if "total" in section:
        return section["total"]
    return sum(v for v in section.values() if isinstance(v, (int, float)))


def channels(p):
    """(core S2MM, core MM2S, memtile S2MM, memtile MM2S, shim MM2S, shim S2MM) used, per core / column."""
    c = p["channels"]
    if "core S2MM" in c:  # aie/flash_attn's form: name -> [used, available]
        return tuple(c[k][0] for k in ("core S2MM", "core MM2S", "memtile S2MM", "memtile MM2S", "shim MM2S", "shim S2MM"))
    def used(prefix, direction):
        key = next(k for k in c if k.startswith(prefix))
        return c[key].get(direction, {}).get("used", 0)
    return (used("core", "S2MM"), used("core", "MM2S"), used("memory tile", "S2MM"), used("memory tile", "MM2S"),
            used("shim", "MM2S"), used("shim", "S2MM"))


def check_detail(p, name):
    for c in p.get("checks", []):
        if c.get("check") == name:
            return c["detail"]
    return None


def core_bds_locks(p):
    """One BD per buffer of each FIFO end on a core, and an acquire/release lock pair per end (the
    designs' own rule, aie/flash_attn/design.py); the barrier's lock apart."""
    if p.get("fifos"):
        ends = [f for f in p["fifos"] if f["home"] == "core"]
        return sum(f["depth"] for f in ends), 2 * len(ends)
    bds = check_detail(p, "core BDs")
    locks = check_detail(p, "core locks")
    return int(bds.split()[0]), int(locks.split()[0])


def memtile_bds(p, cores):
    """BDs on the memory tile: a FIFO end there takes one per buffer, once per core it splits to or joins
    from (its name carries the core row); broadcasts and the shim side take one set."""
    if p.get("fifos"):
        n = 0
        for f in p["fifos"]:
            if "memtile(" not in f["path"]:
                continue
            per_core = "<r>" in f["name"] or "<k>" in f["name"]
            n += f["depth"] * (cores if per_core else 1)
        return n
    return int(check_detail(p, "memory tile BDs").split()[0])


def program_bytes(p, name):
    pb = p.get("program_bytes")
    if isinstance(pb, dict) and pb.get("estimate"):
        return pb["estimate"], f"{name} design.py's estimate"
    if name in PROGRAM and PROGRAM[name][0] is not None:
        return PROGRAM[name]
    return None, "not estimated (no Peano here; the design's README: a short loop)"


def phase(name, design, cores, *args):
    p = plan(design, *args)
    failed = [c["check"] for c in p.get("checks", []) if not c.get("ok", True)]
    bds, locks = core_bds_locks(p)
    prog, prog_src = program_bytes(p, name)
    return {"phase": name, "design": design, "args": " ".join(args), "core_bytes": total(p["core_bytes"]),
            "memtile_bytes": total(p["memtile_bytes"]), "channels": channels(p), "core_bds": bds, "core_locks": locks,
            "memtile_bds": memtile_bds(p, cores), "program_bytes": prog, "program_source": prog_src, "failed": failed}


def roles(n_kv, subroles, cache):
    m = MODEL
    pa = []
    attention = phase("flash_attn", "flash_attn", 4, "--family", cache, "--tile", str(m["head_dim"]), "--n-head", str(m["n_head"]),
                      "--n-head-kv", str(m["n_head_kv"]), "--tokens", "1", "--n-kv", str(n_kv), "--max-cols", "7")
    attention["phase"] = f"attention ({cache} cache, decode layout, {n_kv} positions)"
    if subroles:
        pa.append(phase("matmul kquant", "matmul", 4, "--family", "kquant", "--tile-n", "4", "--cols", "4", "--exact",
                        "--contract", "mm_q4_K_a8", "--m-tiles", str(m["n_ff"] // 64), "--k-tiles", str(m["n_embd"] // 256)))
        pa[-1]["phase"] = "projection, Q4_K sub-role (columns 0-3, exact W objects)"
        pa.append(phase("matmul kquant", "matmul", 4, "--family", "kquant", "--tile-n", "4", "--cols", "3", "--exact",
                        "--contract", "mm_q6_K_a8", "--m-tiles", str(m["n_embd"] // 64), "--k-tiles", str(m["n_ff"] // 256)))
        pa[-1]["phase"] = "projection, Q6_K sub-role (columns 4-6, exact W objects)"
    else:
        pa.append(phase("matmul kquant", "matmul", 4, "--family", "kquant", "--tile-n", "4", "--cols", "7",
                        "--m-tiles", str(m["n_ff"] // 64), "--k-tiles", str(m["n_embd"] // 256)))
        pa[-1]["phase"] = "projection (K-quant family objects, 7 columns)"
    g1 = [phase("rms_norm", "rms_norm", 1, "--rows", "1", "--cols", str(m["n_embd"]), "--columns", "1"),
          phase("add", "add", 2, "--rows", "1", "--row-len", str(m["n_embd"]), "--cols", "1"),
          phase("act_quant", "act_quant", 1, "--rows", "1", "--k", str(m["n_embd"]), "--cols", "1")]
    g2 = [phase("rope", "rope", 1, "--heads", str(m["n_head"]), "--tokens", "1", "--cols", "1"),
          phase("set_rows", "set_rows", 1, "--family", "f16" if cache == "f16" else "q8_0", "--rows", "1",
                "--row-len", str(m["head_dim"] * m["n_head_kv"]), "--cols", "1"),
          phase("glu (SwiGLU)", "add", 2, "--dataflow", os.path.join(AIE, "glu", "dataflow.json"), "--rows", "1",
                "--row-len", str(m["n_ff"]), "--cols", "1"),
          phase("act_quant", "act_quant", 1, "--rows", "1", "--k", str(m["n_ff"]), "--cols", "1")]
    if cache == "q8_0":
        # llama.cpp's Hadamard rotations around a quantized cache (q, k, v, the attention's output): the fast
        # transform (aie/hadamard) with the glue, in G2 as the plan has it.
        g2.append(phase("hadamard", "add", 1, "--dataflow", os.path.join(AIE, "hadamard", "dataflow.json"), "--rows",
                        str(m["n_head"]), "--row-len", str(m["head_dim"]), "--cols", "1"))
    if subroles:
        # A core holds one sub-role's program and attention's.
        pas = [("PA4: Q4_K projections and attention (each core of columns 0-3)", [pa[0], attention]),
               ("PA6: Q6_K projections and attention (each core of columns 4-6)", [pa[1], attention])]
    else:
        pas = [("PA: projections and attention (each core of columns 0-6)", [pa[0], attention])]
    return pas + [
            ("G1: residual, norm, quantization (column 7, row 0)", g1),
            ("G2: rope, cache write, SwiGLU, quantization" + (", rotations" if cache == "q8_0" else "") + " (column 7, row 1)", g2)]


CHANNEL_NAMES = ("core S2MM", "core MM2S", "memtile S2MM", "memtile MM2S", "shim MM2S", "shim S2MM")
CHANNEL_LIMITS = ("core_s2mm", "core_mm2s", "memtile_s2mm", "memtile_mm2s", "shim_mm2s", "shim_s2mm")


def combine(phases, how):
    f = sum if how == "resident" else max
    out = {k: f(p[k] for p in phases) for k in ("core_bytes", "memtile_bytes", "core_bds", "core_locks", "memtile_bds")}
    out["core_locks"] += 1  # the barrier's lock, one per core program
    out["channels"] = tuple(f(p["channels"][i] for p in phases) for i in range(6))
    progs = [p["program_bytes"] for p in phases]
    # One program holds every phase's code either way: program memory adds up.
    out["program_bytes"] = sum(x for x in progs if x) if any(progs) else None
    out["program_partial"] = any(x is None for x in progs)
    return out


def over(c):
    """The limits a combination breaks."""
    bad = []
    for k in ("core_bytes", "memtile_bytes", "core_bds", "core_locks", "memtile_bds"):
        if c[k] > LIMITS[k]:
            bad.append(f"{k} {c[k]} > {LIMITS[k]}")
    for i, name in enumerate(CHANNEL_NAMES):
        if c["channels"][i] > LIMITS[CHANNEL_LIMITS[i]]:
            bad.append(f"{name} {c['channels'][i]} > {LIMITS[CHANNEL_LIMITS[i]]}")
    if c["program_bytes"] is not None and c["program_bytes"] > LIMITS["program_bytes"]:
        bad.append(f"program {c['program_bytes']} > {LIMITS['program_bytes']}")
    return bad


def report(result, out=sys.stdout):
    w = out.write
    w(f"Co-resident decode-layer plan: budgets per role (Llama-3.1-8B shapes, one decoded token, {result['n_kv']} positions, "
      f"{result['cache']} cache{', two projection sub-roles' if result['subroles'] else ''}).\n"
      "From the reused designs' own plans (design.py --print-plan); program memory: estimates, none linked.\n\n")
    w("| role / phase | core data B | program B | core ch. in/out | core BDs | core locks | memtile B | memtile ch. in/out | memtile BDs | shim ch. out/in |\n")
    w("|---|---|---|---|---|---|---|---|---|---|\n")
    lim = LIMITS
    for role in result["roles"]:
        w(f"| **{role['role']}** | | | | | | | | | |\n")
        rows = [(p["phase"], p) for p in role["phases"]] + [(f"*{h}*", role[h]) for h in ("resident", "aliased")]
        for name, p in rows:
            ch = p["channels"]
            prog = "-" if p["program_bytes"] is None else str(p["program_bytes"]) + ("+" if p.get("program_partial") else "")
            w(f"| {name} | {p['core_bytes']} | {prog} | {ch[0]}/{ch[1]} | {p['core_bds']} | {p['core_locks']} | "
              f"{p['memtile_bytes']} | {ch[2]}/{ch[3]} | {p['memtile_bds']} | {ch[4]}/{ch[5]} |\n")
        for h in ("resident", "aliased"):
            bad = role[f"{h}_over"]
            w(f"\n{role['role']}, {h}: {'fits' if not bad else 'does not fit: ' + '; '.join(bad)}")
        w("\n\n")
    c7 = result["column7"]
    for h in ("resident", "aliased"):
        ch = c7[h]["channels"]
        w(f"{c7['role']}, {h}: {c7[h]['memtile_bytes']} B, {ch[0]}/{ch[1]} memtile channels, {c7[h]['memtile_bds']} BDs, "
          f"shim {ch[2]}/{ch[3]} channels: {'fits' if not c7[f'{h}_over'] else 'does not fit: ' + '; '.join(c7[f'{h}_over'])}\n")
    w("\n")
    w(f"Limits: core {lim['core_bytes']} B data, {lim['program_bytes']} B program, {lim['core_s2mm']}/{lim['core_mm2s']} "
      f"channels, {lim['core_bds']} BDs, {lim['core_locks']} locks; memory tile {lim['memtile_bytes']} B, "
      f"{lim['memtile_s2mm']}/{lim['memtile_mm2s']} channels, {lim['memtile_bds']} BDs; shim {lim['shim_mm2s']}/{lim['shim_s2mm']} "
      "channels. A program figure with + lacks a phase that has no estimate.\n")
    for role in result["roles"]:
        for p in role["phases"]:
            if p["failed"]:
                w(f"FAILED: {role['role']} / {p['phase']}: its own plan fails {p['failed']}\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-kv", type=int, default=4096, help="context positions of the attention phase (default 4096)")
    ap.add_argument("--subroles", action="store_true", help="two projection sub-roles (Q4_K on columns 0-3, Q6_K on 4-6)")
    ap.add_argument("--cache", choices=("f16", "q8_0"), default="f16")
    ap.add_argument("--format", choices=("text", "json"), default="text")
    a = ap.parse_args(argv)
    result = {"n_kv": a.n_kv, "cache": a.cache, "subroles": a.subroles, "limits": LIMITS, "roles": []}
    ok = True
    for name, phases in roles(a.n_kv, a.subroles, a.cache):
        role = {"role": name, "phases": phases}
        for h in ("resident", "aliased"):
            role[h] = combine(phases, h)
            role[f"{h}_over"] = over(role[h])
        ok = ok and not role["aliased_over"] and not any(p["failed"] for p in phases)
        result["roles"].append(role)
    # Column 7's memory tile and shim serve both G1 and G2.
    g = [p for r in result["roles"] if r["role"].startswith("G") for p in r["phases"]]
    col7 = {"role": "column 7's memory tile and shim (G1 and G2)", "phases": []}
    for h in ("resident", "aliased"):
        c = combine(g, h)
        col7[h] = {"memtile_bytes": c["memtile_bytes"], "memtile_bds": c["memtile_bds"], "channels": c["channels"][2:]}
        bad = [f"memtile_bytes {c['memtile_bytes']} > {LIMITS['memtile_bytes']}"] if c["memtile_bytes"] > LIMITS["memtile_bytes"] else []
        bad += [f"memtile_bds {c['memtile_bds']} > {LIMITS['memtile_bds']}"] if c["memtile_bds"] > LIMITS["memtile_bds"] else []
        for i, name in enumerate(CHANNEL_NAMES[2:], start=2):
            if c["channels"][i] > LIMITS[CHANNEL_LIMITS[i]]:
                bad.append(f"{name} {c['channels'][i]} > {LIMITS[CHANNEL_LIMITS[i]]}")
        col7[f"{h}_over"] = bad
    ok = ok and not col7["aliased_over"]
    result["column7"] = col7
    result["fits_aliased"] = ok
    if a.format == "json":
        json.dump(result, sys.stdout, indent=1)
        print()
    else:
        report(result)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
