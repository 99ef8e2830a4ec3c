#!/usr/bin/python3
"""Plots of an xdna-bench sweep CSV.

    /usr/bin/python3 bench/plot_xdna_bench.py docs/bench/xdna-bench.csv docs/bench

writes into the output directory:
  roofline.png         arithmetic intensity vs modelled TOPS, with the modelled DRAM and compute roofs
  modelled-time.png    modelled NPU time of one MUL_MAT vs batch size, per matmul and weight type
  sim-cpu-ratio.png    measured simulator wall time / measured CPU backend wall time vs batch size

Every NPU figure in the CSV is MODELLED by the timing model (src/sim/timing-model.h); the simulator
and CPU times are MEASURED on the machine that ran the sweep. The plots say which is which.
Needs matplotlib (Debian: python3-matplotlib).
"""

import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def fnum(row, key):
    v = row.get(key, "")
    return float(v) if v not in ("", None) else None


def plot_roofline(rows, out):
    fig, ax = plt.subplots(figsize=(8, 6))
    by_type = defaultdict(list)
    for r in rows:
        by_type[r["type"]].append(r)
    for t, rs in sorted(by_type.items()):
        ax.scatter([fnum(r, "arith_intensity") for r in rs], [fnum(r, "modelled_tops") for r in rs], s=12, label=t,
                   alpha=0.7)
    ai = [fnum(r, "arith_intensity") for r in rows]
    lo, hi = min(ai) / 2, max(ai) * 2
    bw = max(fnum(r, "modelled_reachable_gbs") for r in rows)
    # DRAM roof: ops/byte x GB/s = GOPS; /1e3 for TOPS.
    xs = [lo * (hi / lo) ** (i / 100) for i in range(101)]
    ax.plot(xs, [x * bw / 1e3 for x in xs], "k--", lw=1, label=f"DRAM roof {bw:.1f} GB/s")
    # Compute roofs, one per distinct family peak (int8xint4 and int8xint8 share the int8 rate).
    peaks = defaultdict(set)
    eff = fnum(rows[0], "efficiency")
    for r in rows:
        peaks[fnum(r, "family_peak_tops")].add(r["family"])
    for peak, fams in sorted(peaks.items()):
        ax.axhline(peak, lw=1, ls="-", color="grey")
        ax.text(hi, peak, f"{'/'.join(sorted(fams))} peak {peak:.1f} ", va="bottom", ha="right", fontsize=7)
        ax.axhline(peak * eff, lw=0.8, ls=":", color="grey")
        ax.text(hi, peak * eff, f"x efficiency {eff:.2f} ", va="top", ha="right", fontsize=6, color="grey")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (ops per byte of weights + activations + output)")
    ax.set_ylabel("TOPS (MODELLED, incl. one submission)")
    ax.set_title(f"Modelled roofline, preset {rows[0]['preset']}: one MUL_MAT per submission\n"
                 "(below the roofs: submission cost, idle cores, padding, block-scale work)", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(True, which="both", lw=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "roofline.png"), dpi=110)
    plt.close(fig)


def plot_time_vs_batch(rows, out):
    panels = sorted({(r["model"], r["matmul"]) for r in rows}, key=lambda p: (p[0], p[1]))
    cols = 3
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.2 * nrows), squeeze=False)
    for ax, (model, mm) in zip(axes.flat, panels):
        sel = [r for r in rows if r["model"] == model and r["matmul"] == mm]
        for t in sorted({r["type"] for r in sel}):
            rs = sorted((r for r in sel if r["type"] == t), key=lambda r: int(r["n"]))
            ax.plot([int(r["n"]) for r in rs], [fnum(r, "modelled_total_us") for r in rs], marker="o", ms=3, label=t)
        m, k = sel[0]["m"], sel[0]["k"]
        ax.set_title(f"{model} {mm} ({m} x {k})", fontsize=9)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch (tokens)", fontsize=8)
        ax.set_ylabel("NPU us (MODELLED)", fontsize=8)
        ax.grid(True, which="both", lw=0.3)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(f"Modelled NPU time of one MUL_MAT in its own submission, preset {rows[0]['preset']}")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "modelled-time.png"), dpi=100)
    plt.close(fig)


def plot_sim_cpu(rows, out):
    meas = [r for r in rows if fnum(r, "measured_sim_over_cpu") is not None]
    if not meas:
        return
    models = sorted({r["model"] for r in meas})
    fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4.5), squeeze=False)
    for ax, model in zip(axes.flat, models):
        sel = [r for r in meas if r["model"] == model]
        for t in sorted({r["type"] for r in sel}):
            # Median over the model's matmul shapes at each batch size, with their range shaded.
            by_n = defaultdict(list)
            for r in sel:
                if r["type"] == t:
                    by_n[int(r["n"])].append(fnum(r, "measured_sim_over_cpu"))
            ns = sorted(by_n)
            med = [sorted(by_n[n])[len(by_n[n]) // 2] for n in ns]
            line, = ax.plot(ns, med, marker="o", ms=3, label=t)
            ax.fill_between(ns, [min(by_n[n]) for n in ns], [max(by_n[n]) for n in ns], color=line.get_color(),
                            alpha=0.12)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch (tokens)")
        ax.set_ylabel("simulator / CPU wall time (MEASURED)")
        ax.set_title(f"{model}: simulator vs CPU backend, {meas[0]['threads']} threads each\n"
                     "median over matmul shapes, range shaded", fontsize=10)
        ax.grid(True, which="both", lw=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "sim-cpu-ratio.png"), dpi=100)
    plt.close(fig)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_xdna_bench.py SWEEP.csv OUTPUT_DIR")
    rows = read_rows(sys.argv[1])
    if not rows:
        sys.exit("empty CSV")
    os.makedirs(sys.argv[2], exist_ok=True)
    plot_roofline(rows, sys.argv[2])
    plot_time_vs_batch(rows, sys.argv[2])
    plot_sim_cpu(rows, sys.argv[2])


if __name__ == "__main__":
    main()
