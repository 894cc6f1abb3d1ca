#!/usr/bin/env python3
"""Plots a run's op profile from `tpusim run MODEL.hlo --format json`: time by
op category (bars, share of the step) and a roofline chart (each op's
achieved FLOP/s against its arithmetic intensity, FLOPs per HBM byte, with
the chip's roofs: the bf16 MXU peak of the TensorCores that ran and the HBM
bandwidth). Writes PNG and SVG (matplotlib).

  tpusim run model.hlo --chip v5e --format json -q > run.json
  scripts/plot_profile.py run.json --out plots/
  -> plots/run.categories.png/.svg, plots/run.roofline.png/.svg

Ops without FLOPs or HBM bytes have no place on a roofline and are counted in
the chart's note. See docs/profile.md.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_units import save_figure, si_unit, time_unit  # noqa: E402


class InputError(Exception):
    pass


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except OSError as e:
        raise InputError(f"{path}: error: cannot read: {e.strerror}")
    except ValueError as e:
        raise InputError(f"{path}: error: not JSON ({e}); expected `tpusim run ... --format json`")
    if not isinstance(report, dict) or "ops" not in report or "step_time_s" not in report:
        raise InputError(f"{path}: error: expected the JSON report of `tpusim run ... --format json`")
    if "by_category" not in report:
        raise InputError(f"{path}: error: the report has no op categories (an HLO module's run has them; "
                         ".tasm programs do not)")
    return report


def categories(plt, report, name):
    rows = report["by_category"]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.6))
    labels = [r["name"] for r in rows][::-1]
    pct = [r["percent"] for r in rows][::-1]
    factor, unit = time_unit([r["time_s"] for r in rows])
    bars = ax.barh(labels, pct, color="#4c78a8")
    for i, b in enumerate(bars):
        b.set_gid(f"category-bar-{i}")
    for b, r in zip(bars, rows[::-1]):
        ax.text(b.get_width() + 0.5, b.get_y() + b.get_height() / 2,
                f"{r['time_s'] / factor:.3g} {unit} ({r['ops']} ops)", va="center", fontsize=8)
    ax.set_xlabel("share of the step (%)")
    ax.set_xlim(0, max(pct + [1]) * 1.3)
    step_f, step_u = time_unit([report["step_time_s"]])
    ax.set_title(f"{name} on {report.get('chip', '?')}: time by op category "
                 f"(step {report['step_time_s'] / step_f:.4g} {step_u})", fontsize=10)
    fig.tight_layout()
    return fig


def roofline(plt, report, name):
    peak = report["mxu"]["peak_flops_per_s"]
    bw = report["hbm"].get("peak_bytes_per_s", 0.0)
    pts = [op for op in report["ops"] if op["flops"] > 0 and op["hbm_bytes"] > 0 and op["time_s"] > 0]
    skipped = len(report["ops"]) - len(pts)
    if not pts:
        raise InputError(f"{name}: error: no op has FLOPs, HBM bytes and time: nothing to put on a roofline")
    x = [op["flops"] / op["hbm_bytes"] for op in pts]
    y = [op["flops"] / op["time_s"] for op in pts]
    yf, yu = si_unit([peak] + y, "FLOP/s")
    fig, ax = plt.subplots(figsize=(8, 5.5))
    cats = sorted({op.get("category", "other") for op in pts})
    colors = plt.get_cmap("tab10")
    for i, c in enumerate(cats):
        sel = [k for k, op in enumerate(pts) if op.get("category", "other") == c]
        sc = ax.scatter([x[k] for k in sel], [y[k] / yf for k in sel], s=28, color=colors(i % 10), label=c, zorder=3)
        sc.set_gid(f"roofline-points-{i}")
    lo, hi = min(x + [peak / bw if bw > 0 else 1.0]) / 4, max(x + [peak / bw if bw > 0 else 1.0]) * 4
    xs = [lo * (hi / lo) ** (k / 200) for k in range(201)]
    roof = [min(peak, bw * v) / yf if bw > 0 else peak / yf for v in xs]
    (ln,) = ax.plot(xs, roof, color="k", lw=1.5, label="roof: min(peak, HBM bandwidth x intensity)")
    ln.set_gid("roofline-roof")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per HBM byte)")
    ax.set_ylabel(f"achieved ({yu})")
    bf, bu = si_unit([bw], "B/s")
    title = f"{name} on {report.get('chip', '?')}: peak {peak / yf:.4g} {yu}, HBM {bw / bf:.4g} {bu}"
    if skipped:
        title += f"\n({skipped} ops without FLOPs or HBM bytes not shown)"
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("report", help="the JSON of `tpusim run MODEL.hlo --format json`")
    p.add_argument("--out", default=".", help="directory for the plots (created; default: .)")
    p.add_argument("--format", default="png,svg", help="comma-separated: png, svg (default: both)")
    args = p.parse_args(argv)
    formats = [f for f in args.format.split(",") if f]
    if not formats or any(f not in ("png", "svg") for f in formats):
        sys.stderr.write(f"--format: error: expected png, svg or both, got '{args.format}'\n")
        return 2
    try:
        report = load(args.report)
        import matplotlib

        matplotlib.use("Agg")
        matplotlib.rcParams["svg.hashsalt"] = "tpusim"  # stable ids, diffable SVGs
        import matplotlib.pyplot as plt

        stem = os.path.splitext(os.path.basename(args.report))[0]
        name = os.path.basename(report.get("program", stem))
        figs = {"categories": categories(plt, report, name), "roofline": roofline(plt, report, name)}
    except InputError as e:
        sys.stderr.write(f"{e}\n")
        return 2
    for kind, fig in figs.items():
        save_figure(fig, args.out, f"{stem}.{kind}", formats)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
