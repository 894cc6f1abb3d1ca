#!/usr/bin/python3
"""Plots of tpusim sweep results (docs/sweeps.md, "Plotting").

Reads the JSON Lines a sweep writes, or the CSV of `tpusim sweep export`, and
draws, one panel per workload:
  heatmap  a metric over two swept parameters (zip groups count as one axis);
  pareto   step time vs area proxy, power proxy as colour, the Pareto front of
           (time, area, power) ringed -- the front `tpusim sweep report` lists;
  scaling  a metric vs one numeric parameter (chip count = product of
           system.topology), one line per combination of the other parameters.
Writes PNG and SVG. Uses Debian's python3-matplotlib (scripts/setup.sh), hence
/usr/bin/python3.

  scripts/plot_sweep.py mxu_vs_hbm.jsonl --out plots/
  scripts/plot_sweep.py mxu_vs_hbm.csv --kind heatmap --x hbm.bandwidth --y core.mxu.rows
  scripts/plot_sweep.py chip_scaling.jsonl --kind scaling --param system.topology

Exit status: 0 plots written; 2 bad input or options (the message names the
file, line and column where there is one).
"""

import argparse
import csv
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_units import is_time, plain_axes, si_unit, time_label, time_unit  # noqa: E402

KINDS = ("heatmap", "pareto", "scaling")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class InputError(Exception):
    """Bad input or options: printed as 'plot_sweep: error: ...', exit 2."""


BASE_UNITS = {"kBandwidth": "B/s", "kSize": "B", "kFrequency": "Hz", "kTime": "s"}


def config_table():
    """{config key: base unit or ''}, from the one table that declares them; None if unreadable."""
    path = os.path.join(ROOT, "common", "params.def")
    try:
        with open(path, encoding="utf-8") as f:
            rows = re.findall(r"^TPUSIM_PARAM\(([\w.]+),\s*(\w+)", f.read(), re.M)
    except OSError:
        return None
    return {k: BASE_UNITS.get(kind, "") for k, kind in rows}


def config_keys():
    t = config_table()
    return None if t is None else set(t)


def unit_label(key, values=()):
    """'hbm.bandwidth (TB/s)' and the factor its values (in base units) are
    divided by: the key's unit with the SI prefix that fits `values`."""
    unit = (config_table() or {}).get(key, "")
    if not unit:
        return key, 1.0
    if unit == "s":
        factor, name = time_unit(values)
        return f"{key} ({name})", factor
    factor, name = si_unit(values, unit)
    return f"{key} ({name})", factor


def metric_scale(metric, values):
    """(axis label, divisor) for a metric: times in s/ms/us/ns as they fit."""
    if is_time(metric):
        factor, name = time_unit(values)
        return time_label(metric, name), factor
    return metric, 1.0


def number(v):
    """A float from a JSON/CSV value, or None."""
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, str) and v.strip():
        try:
            return float(v)
        except ValueError:
            return None
    return None


def list_product(text):
    """'[4, 4]' -> 16.0 (a count list such as system.topology), else None."""
    m = re.fullmatch(r"\s*\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]\s*", text or "")
    if not m:
        return None
    p = 1
    for x in m.group(1).split(","):
        p *= int(x)
    return float(p)


class Rec:
    """One run: workload, status, params {key: (number or None, text)}, metrics, objectives."""

    def __init__(self, where, sweep, workload, status, params, metrics, top):
        self.where = where
        self.sweep = sweep
        self.workload = workload
        self.status = status
        self.params = params
        self.metrics = metrics
        self.top = top

    def value(self, metric):
        if metric in self.top:
            return number(self.top[metric])
        return number(self.metrics.get(metric))


def read_jsonl(path, text):
    recs = []
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            if n == len(lines):  # no newline after it: a write cut by kill -9
                print(f"{path}:{n}:1: warning: partial last line skipped", file=sys.stderr)
                continue
            raise InputError(f"{path}:{n}:{e.colno}: not a JSON record: {e.msg}")
        if not isinstance(r, dict):
            raise InputError(f"{path}:{n}:1: expected a JSON object (one sweep record per line)")
        for k in ("workload", "status", "params"):
            if k not in r:
                raise InputError(f"{path}:{n}:1: record has no '{k}' field; is this a tpusim sweep results file?")
        if not isinstance(r["params"], dict):
            raise InputError(f"{path}:{n}:1: 'params' must be an object")
        values = r.get("values") if isinstance(r.get("values"), dict) else {}
        params = {}
        for k, text in r["params"].items():
            v = values.get(k)
            num = number(v) if not isinstance(v, str) else list_product(v)
            if num is None:
                num = list_product(str(text))
            params[k] = (num, str(text))
        metrics = r.get("metrics") if isinstance(r.get("metrics"), dict) else {}
        top = {k: r.get(k) for k in ("time_s", "area_proxy", "power_proxy") if r.get(k) is not None}
        recs.append(Rec(f"{path}:{n}", str(r.get("sweep", "")), str(r["workload"]), str(r["status"]), params, metrics, top))
    return recs


def read_csv(path, text):
    rows = list(csv.reader(text.splitlines()))
    if not rows:
        raise InputError(f"{path}: empty CSV; expected the output of `tpusim sweep export`")
    header = rows[0]
    need = ("workload", "status", "config_hash", "time_s", "area_proxy", "power_proxy")
    missing = [c for c in need if c not in header]
    if missing:
        raise InputError(f"{path}:1:1: CSV header lacks {', '.join(missing)}; expected `tpusim sweep export` output")
    keys = config_keys()
    if keys is None:
        raise InputError(f"cannot read {ROOT}/common/params.def to tell parameter columns from metrics")
    ident = {"sweep", "point", "workload", "mode", "status", "config_hash"}
    tail = {"time_s", "area_proxy", "power_proxy", "wall_s", "error"}
    pcols = [c for c in header if c not in ident | tail and (c in keys or c.startswith("param:"))]
    mcols = [c for c in header if c not in ident | tail and c not in pcols]
    recs = []
    for n, row in enumerate(rows[1:], 2):
        if not row:
            continue
        if len(row) != len(header):
            raise InputError(f"{path}:{n}:1: {len(row)} fields, the header has {len(header)}")
        f = dict(zip(header, row))
        params = {}
        for c in pcols:
            num = number(f[c])
            params[c.removeprefix("param:")] = (num if num is not None else list_product(f[c]), f[c])
        top = {k: f[k] for k in ("time_s", "area_proxy", "power_proxy") if f[k] != ""}
        recs.append(Rec(f"{path}:{n}", f.get("sweep", ""), f["workload"], f["status"], params, {c: f[c] for c in mcols}, top))
    return recs


def read_results(paths):
    recs = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise InputError(f"{path}: cannot read: {e.strerror}")
        except UnicodeDecodeError:
            raise InputError(f"{path}: not UTF-8 text; expected sweep results (.jsonl) or their CSV export")
        first = text.lstrip()[:1]
        if first == "{":
            recs += read_jsonl(path, text)
        elif first == "":
            raise InputError(f"{path}: empty; no sweep records")
        else:
            recs += read_csv(path, text)
    if not recs:
        raise InputError(f"{', '.join(paths)}: no sweep records")
    sweeps = sorted({r.sweep for r in recs})
    if len(sweeps) > 1:
        raise InputError(f"these files hold {len(sweeps)} different sweeps ({', '.join(sweeps)}); "
                         "plot one sweep at a time (its shards together are fine)")
    return recs


def pretty(text, num):
    """Tick text: the YAML text as written, or a short number."""
    if text and (number(text) is None or num is None):
        return text
    if num is None:
        return ""
    if num == int(num) and abs(num) < 1e6:
        return str(int(num))
    return f"{num:.4g}"


# ---------------------------------------------------------------- axes


def axes_of(recs):
    """Swept parameters grouped into axes: parameters whose values do not
    vary independently (a zip group) form one axis. [(keys, ...)]."""
    keys = []
    for r in recs:
        for k in r.params:
            if k not in keys:
                keys.append(k)
    distinct = {k: {r.params.get(k, (None, ""))[1] for r in recs} for k in keys}
    keys = [k for k in keys if len(distinct[k]) > 1]
    parent = {k: k for k in keys}

    def find(k):
        while parent[k] != k:
            k = parent[k]
        return k

    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            pairs = {(r.params.get(a, (None, ""))[1], r.params.get(b, (None, ""))[1]) for r in recs}
            if len(pairs) < len(distinct[a]) * len(distinct[b]):
                parent[find(b)] = find(a)
    groups = {}
    for k in keys:
        groups.setdefault(find(k), []).append(k)
    return [tuple(g) for g in groups.values()]


def pick_axis(axes, name, what):
    for a in axes:
        if name in a:
            return a
    swept = ", ".join("/".join(a) for a in axes) or "none"
    raise InputError(f"{what} '{name}' is not a swept parameter of these results (swept: {swept})")


def axis_label(axis):
    if len(axis) == 1:
        return axis[0]
    common = os.path.commonprefix(list(axis))
    common = common[: common.rfind(".") + 1]
    return common + "/".join(k[len(common):] for k in axis)


def axis_key(r, axis):
    """(sort key, tick text) of a record's position on an axis."""
    vals = [r.params.get(k, (None, "")) for k in axis]
    sort = tuple((0, v[0], "") if v[0] is not None else (1, 0.0, v[1]) for v in vals)
    return sort, "/".join(pretty(v[1], v[0]) for v in vals)


def workloads_of(recs, only):
    ws = []
    for r in recs:
        if r.workload not in ws:
            ws.append(r.workload)
    if only is not None:
        match = [w for w in ws if w == only or os.path.basename(w) == only]
        if not match:
            raise InputError(f"--workload '{only}' is not in these results (have: {', '.join(ws)})")
        return match
    return ws


def usable(recs, metric):
    return [r for r in recs if r.status == "ok" and r.value(metric) is not None]


def check_metric(recs, metric):
    if any(r.value(metric) is not None for r in recs):
        return
    have = sorted({k for r in recs for k in r.metrics} | {"time_s", "area_proxy", "power_proxy"})
    raise InputError(f"metric '{metric}' has no numeric value in any record (have: {', '.join(have)})")


# ---------------------------------------------------------------- plots


def panels(plt, n):
    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    fig, axs = plt.subplots(rows, cols, figsize=(6.4 * cols, 4.8 * rows), squeeze=False)
    for ax in axs.flat[n:]:
        ax.set_visible(False)
    return fig, list(axs.flat[:n])


def heatmap(plt, recs, args, workloads):
    import numpy as np

    axes = axes_of(recs)
    if len(axes) < 2 and not (args.x and args.y):
        raise InputError(f"a heat map needs two swept parameters; these results sweep {len(axes)} "
                         f"({', '.join(axis_label(a) for a in axes) or 'none'})")
    xa = pick_axis(axes, args.x, "--x") if args.x else axes[0]
    ya = pick_axis(axes, args.y, "--y") if args.y else next(a for a in axes if a != xa)
    if xa == ya:
        raise InputError("--x and --y name the same axis")
    others = [a for a in axes if a not in (xa, ya)]
    check_metric(recs, args.metric)
    fig, axs = panels(plt, len(workloads))
    for wi, (w, ax) in enumerate(zip(workloads, axs)):
        wr = [r for r in recs if r.workload == w]
        xs = sorted({axis_key(r, xa) for r in wr})
        ys = sorted({axis_key(r, ya) for r in wr})
        grid = np.full((len(ys), len(xs)), np.nan)
        sums = {}
        for r in usable(wr, args.metric):
            cell = (ys.index(axis_key(r, ya)), xs.index(axis_key(r, xa)))
            sums.setdefault(cell, []).append(r.value(args.metric))
        label, factor = metric_scale(args.metric, [x for v in sums.values() for x in v])
        for (i, j), v in sums.items():
            grid[i, j] = sum(v) / len(v) / factor
        masked = np.ma.masked_invalid(grid)
        mesh = ax.pcolormesh(masked, cmap="viridis", shading="flat")
        mesh.set_gid(f"heatmap-cells-{wi}")
        fig.colorbar(mesh, ax=ax, label=label)
        for (i, j) in sums:
            ax.text(j + 0.5, i + 0.5, f"{grid[i, j]:.3g}", ha="center", va="center", fontsize=8, color="w")
        for i in range(len(ys)):
            for j in range(len(xs)):
                if (i, j) not in sums:
                    ax.text(j + 0.5, i + 0.5, "no ok run", ha="center", va="center", fontsize=7, color="0.4")
        ax.set_xticks([j + 0.5 for j in range(len(xs))], [t for _, t in xs], rotation=30, ha="right")
        ax.set_yticks([i + 0.5 for i in range(len(ys))], [t for _, t in ys])
        ax.set_xlabel(axis_label(xa))
        ax.set_ylabel(axis_label(ya))
        title = os.path.basename(w)
        if others:
            title += f"\n(mean over {', '.join(axis_label(a) for a in others)})"
        ax.set_title(title, fontsize=10)
    fig.suptitle(f"{args.metric}: {axis_label(ya)} vs {axis_label(xa)}")
    return fig


def pareto_front(points):
    """Indices not dominated in every objective (all minimized)."""
    front = []
    for i, p in enumerate(points):
        if not any(all(q[k] <= p[k] for k in range(len(p))) and any(q[k] < p[k] for k in range(len(p)))
                   for j, q in enumerate(points) if j != i):
            front.append(i)
    return front


def pareto(plt, recs, args, workloads):
    fig, axs = panels(plt, len(workloads))
    drawn = 0
    for wi, (w, ax) in enumerate(zip(workloads, axs)):
        pts = [r for r in usable([r for r in recs if r.workload == w], "time_s") if r.value("area_proxy") is not None]
        ax.set_title(os.path.basename(w), fontsize=10)
        ax.set_ylabel("area proxy (au)")
        if not pts:
            ax.set_xlabel("step time")
            ax.text(0.5, 0.5, "no ok run with time and area", transform=ax.transAxes, ha="center")
            continue
        drawn += len(pts)
        tf, tu = time_unit([r.value("time_s") for r in pts])
        ax.set_xlabel(f"step time ({tu})")
        plain_axes(ax)
        t = [r.value("time_s") / tf for r in pts]
        a = [r.value("area_proxy") for r in pts]
        pw = [r.value("power_proxy") for r in pts]
        has_p = [p is not None for p in pw]
        obj = [(t[i], a[i], pw[i] if has_p[i] else math.inf) for i in range(len(pts))]
        front = pareto_front(obj)
        colored = [i for i in range(len(pts)) if has_p[i]]
        if colored:
            sc = ax.scatter([t[i] for i in colored], [a[i] for i in colored], c=[pw[i] for i in colored],
                            cmap="plasma", s=36, zorder=3)
            sc.set_gid(f"pareto-points-{wi}")
            fig.colorbar(sc, ax=ax, label="power proxy (proxy W)")
        gray = [i for i in range(len(pts)) if not has_p[i]]
        if gray:
            sg = ax.scatter([t[i] for i in gray], [a[i] for i in gray], c="0.6", s=36, zorder=3,
                            label="no power proxy")
            sg.set_gid(f"pareto-nopower-{wi}")
        ring = ax.scatter([t[i] for i in front], [a[i] for i in front], s=130, facecolors="none",
                          edgecolors="k", linewidths=1.2, zorder=4, label="Pareto front (time, area, power)")
        ring.set_gid(f"pareto-front-{wi}")
        # The 2-D (time, area) staircase through the front's points.
        f2 = sorted(pareto_front([(t[i], a[i]) for i in range(len(pts))]), key=lambda i: t[i])
        ax.step([t[i] for i in f2], [a[i] for i in f2], where="post", color="k", lw=0.8, alpha=0.5)
        ax.legend(fontsize=8, loc="best")
    if drawn == 0:
        raise InputError("no ok run has both time_s and area_proxy: nothing to put on a Pareto plot")
    fig.suptitle("time vs area proxy (colour: power proxy) -- proxies, not physical units")
    return fig


def default_scaling_axis(axes, recs):
    numeric = [a for a in axes if len(a) == 1 and all(r.params.get(a[0], (None, ""))[0] is not None for r in recs)]
    for a in numeric:
        if "topology" in a[0] or "chips" in a[0]:
            return a
    if not numeric:
        raise InputError("a scaling curve needs a numeric swept parameter; none found "
                         f"(swept: {', '.join(axis_label(a) for a in axes) or 'none'})")
    return max(numeric, key=lambda a: len({r.params[a[0]][0] for r in recs}))


def scaling(plt, recs, args, workloads):
    axes = axes_of(recs)
    pa = pick_axis(axes, args.param, "--param") if args.param else default_scaling_axis(axes, recs)
    if len(pa) != 1:
        raise InputError(f"--param '{args.param}' varies together with {', '.join(k for k in pa if k != args.param)} "
                         "(a zip group); pick a parameter that is an axis of its own")
    key = pa[0]
    bad = [r for r in recs if r.params.get(key, (None, ""))[0] is None]
    if bad:
        raise InputError(f"{bad[0].where}: parameter '{key}' = '{bad[0].params.get(key, (None, ''))[1]}' "
                         "is not numeric; scaling curves need numbers (or count lists such as [4, 4])")
    check_metric(recs, args.metric)
    others = [a for a in axes if a != pa]
    is_list = any(list_product(r.params[key][1]) is not None for r in recs)
    xfactor = 1.0
    if is_list and "topology" in key:
        xlabel = f"chips ({key} product)"
    else:
        xlabel, xfactor = unit_label(key, [r.params[key][0] for r in recs])
    fig, axs = panels(plt, len(workloads))
    for wi, (w, ax) in enumerate(zip(workloads, axs)):
        wr = usable([r for r in recs if r.workload == w], args.metric)
        # Each panel in the time unit that fits its own values.
        ylabel, yfactor = metric_scale(args.metric, [r.value(args.metric) for r in wr])
        lines = {}
        for r in wr:
            lk = tuple(axis_key(r, a) for a in others)
            lines.setdefault(lk, []).append((r.params[key][0] / xfactor, r.value(args.metric) / yfactor))
        merged = False
        for li, (lk, raw) in enumerate(sorted(lines.items())):
            by_x = {}
            for x, y in raw:
                by_x.setdefault(x, []).append(y)
            merged = merged or any(len(v) > 1 for v in by_x.values())
            pts = sorted((x, sum(v) / len(v)) for x, v in by_x.items())
            label = ", ".join(f"{axis_label(a)}={t}" for a, (_, t) in zip(others, lk)) or args.metric
            (ln,) = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
            ln.set_gid(f"scaling-line-{wi}-{li}")
        xs = sorted({r.params[key][0] for r in wr})
        plain_axes(ax)
        if xs and xs[0] > 0 and xs[-1] / xs[0] >= 8:
            ax.set_xscale("log", base=2)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(os.path.basename(w) + ("\n(points at equal x averaged)" if merged else ""), fontsize=10)
        if not wr:
            ax.text(0.5, 0.5, "no ok run", transform=ax.transAxes, ha="center")
        elif len(lines) > 1:
            ax.legend(fontsize=7, loc="best")
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"{args.metric} vs {xlabel}")
    return fig


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog="See docs/sweeps.md, 'Plotting'.")
    p.add_argument("results", nargs="+", help="sweep results (.jsonl) or `tpusim sweep export` CSV")
    p.add_argument("--kind", default="all", choices=KINDS + ("all",), help="which plot (default: every one that applies)")
    p.add_argument("--metric", help="metric for heat map and scaling (default: time_s)")
    p.add_argument("--x", help="heat map x axis parameter (default: the first swept axis)")
    p.add_argument("--y", help="heat map y axis parameter (default: the second swept axis)")
    p.add_argument("--param", help="scaling curve parameter (default: system.topology if swept)")
    p.add_argument("--workload", help="only this workload (path or file name)")
    p.add_argument("--out", default=".", help="output directory (default: .)")
    p.add_argument("--prefix", help="file name prefix (default: the first results file's stem)")
    p.add_argument("--formats", default="png,svg", help="comma-separated: png, svg (default: both)")
    args = p.parse_args(argv)
    formats = [f.strip().lower() for f in args.formats.split(",") if f.strip()]
    for f in formats:
        if f not in ("png", "svg"):
            raise InputError(f"--formats takes png and/or svg, got '{f}'")
    if not formats:
        raise InputError("--formats is empty; give png, svg or png,svg")
    recs = read_results(args.results)
    workloads = workloads_of(recs, args.workload)
    if args.metric is None:
        args.metric = "time_s"
    else:
        check_metric(recs, args.metric)
    try:
        import matplotlib
    except ImportError:
        raise InputError(f"matplotlib is not installed for {sys.executable}; install python3-matplotlib "
                         "(scripts/setup.sh) and run this script with /usr/bin/python3")
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "tpusim"  # stable ids, diffable SVGs
    import matplotlib.pyplot as plt

    recs = [r for r in recs if r.workload in workloads]
    prefix = args.prefix or os.path.splitext(os.path.basename(args.results[0]))[0]
    os.makedirs(args.out, exist_ok=True)
    makers = {"heatmap": heatmap, "pareto": pareto, "scaling": scaling}
    kinds = KINDS if args.kind == "all" else (args.kind,)
    written = []
    for kind in kinds:
        try:
            fig = makers[kind](plt, recs, args, workloads)
        except InputError as e:
            if args.kind != "all":
                raise
            print(f"plot_sweep: skipped {kind}: {e}", file=sys.stderr)
            continue
        fig.tight_layout()
        for f in formats:
            path = os.path.join(args.out, f"{prefix}.{kind}.{f}")
            fig.savefig(path, format=f, dpi=110, metadata={"Date": None} if f == "svg" else None)
            written.append(path)
        plt.close(fig)
    if not written:
        raise InputError("nothing to plot")
    for w in written:
        print(w)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except InputError as e:
        print(f"plot_sweep: error: {e}", file=sys.stderr)
        sys.exit(2)
