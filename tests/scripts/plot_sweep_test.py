#!/usr/bin/python3
"""ctest: run the shipped example sweeps (configs/sweeps/vmem_vs_time,
mxu_vs_hbm, chip_scaling), render their plots with scripts/plot_sweep.py
from the JSONL and from the CSV export, and check the files: PNG signature
and size, SVG well-formed, and what the SVG draws -- heat-map cells with a
value, one marker per ok run, the ringed Pareto front equal to the front
`tpusim sweep report` computes (in C++, independently), one scaling line per
link bandwidth with one marker per chip count. Then bad input: each must exit
2 with a message naming the file (and line:column where there is one).

  plot_sweep_test.py --tpusim build/debug/app/tpusim --source .
"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, failures  # noqa: E402


def run(cmd, cwd, code=0):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)
    if code is not None and p.returncode != code:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {p.returncode}, expected {code}\n{p.stdout}\n{p.stderr}")
    return p


def records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def workloads(rs):
    out = []
    for r in rs:
        if r["workload"] not in out:
            out.append(r["workload"])
    return out


def group(svg, gid):
    for g in ET.parse(svg).iter(f"{SVG}g"):
        if g.get("id") == gid:
            return g
    return None


def filled_paths(g):
    return sum(1 for p in g.iter(f"{SVG}path") if "fill: none" not in (p.get("style") or ""))


def markers(g):
    return sum(1 for _ in g.iter(f"{SVG}use"))


def render(src, args):
    """plot_sweep.main in this process (one matplotlib import for all renders)."""
    sys.path.insert(0, os.path.join(src, "scripts"))
    import plot_sweep

    try:
        check(plot_sweep.main(args) == 0, f"plot_sweep {' '.join(args)} succeeds")
    except plot_sweep.InputError as e:
        check(False, f"plot_sweep {' '.join(args)}: {e}")


def check_files(out, prefix, kinds):
    for kind in kinds:
        png = os.path.join(out, f"{prefix}.{kind}.png")
        svg = os.path.join(out, f"{prefix}.{kind}.svg")
        for f in (png, svg):
            check(os.path.exists(f), f"{f} written")
        if not os.path.exists(png) or not os.path.exists(svg):
            continue
        with open(png, "rb") as f:
            check(f.read(8) == b"\x89PNG\r\n\x1a\n", f"{png} has the PNG signature")
        check(os.path.getsize(png) > 10000, f"{png} is not trivially small ({os.path.getsize(png)} B)")
        try:
            root = ET.parse(svg).getroot()
            check(root.tag == f"{SVG}svg", f"{svg} is an SVG document")
        except ET.ParseError as e:
            check(False, f"{svg} parses as XML: {e}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpusim", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    tpusim = os.path.abspath(a.tpusim)
    src = os.path.abspath(a.source)
    plot = [sys.executable, os.path.join(src, "scripts", "plot_sweep.py")]
    d = tempfile.mkdtemp(prefix="tpusim_plot_")
    try:
        sweeps = os.path.join(src, "configs", "sweeps")
        for name in ("vmem_vs_time", "mxu_vs_hbm", "chip_scaling"):
            run([tpusim, "sweep", os.path.join(sweeps, name + ".yaml"), "-j", "2", "-q"], d)
        vmem = records(os.path.join(d, "vmem_vs_time.jsonl"))
        mxu = records(os.path.join(d, "mxu_vs_hbm.jsonl"))
        chips = records(os.path.join(d, "chip_scaling.jsonl"))
        check(len(vmem) == 16 and sum(r["status"] == "ok" for r in vmem) == 12, "vmem_vs_time: 12 ok of 16")
        check(len(mxu) == 18 and all(r["status"] == "ok" for r in mxu), "mxu_vs_hbm: 18 ok runs")
        check(len(chips) == 10 and sum(r["status"] == "infeasible" for r in chips) == 2,
              "chip_scaling: 10 runs, the 4-chip topology infeasible")
        run([tpusim, "sweep", "export", "mxu_vs_hbm.jsonl", "-o", "mxu_vs_hbm.csv"], d)

        # vmem_vs_time from JSONL: a 4 x 4 grid with the 256 KiB column infeasible.
        out = os.path.join(d, "plots")
        os.chdir(d)
        render(src, ["vmem_vs_time.jsonl", "--out", out])
        check_files(out, "vmem_vs_time", ("heatmap", "pareto", "scaling"))
        g = group(os.path.join(out, "vmem_vs_time.heatmap.svg"), "heatmap-cells-0")
        cells = {(r["params"]["core.vmem.capacity"], r["params"]["core.vmem.bytes_per_cycle"])
                 for r in vmem if r["status"] == "ok"}
        check(g is not None and filled_paths(g) == len(cells) == 12,
              f"vmem heat map fills the {len(cells)} cells with an ok run")

        # mxu_vs_hbm from the CSV export: zip group as one axis, two workloads.
        render(src, ["mxu_vs_hbm.csv", "--out", out])
        check_files(out, "mxu_vs_hbm", ("heatmap", "pareto"))
        report = json.loads(run([tpusim, "sweep", "report", "mxu_vs_hbm.jsonl", "--format", "json"], d).stdout)
        fronts = {w["workload"]: len(w["pareto"]) for w in report["workloads"]}
        for i, w in enumerate(workloads(mxu)):
            ok = [r for r in mxu if r["workload"] == w and r["status"] == "ok"]
            g = group(os.path.join(out, "mxu_vs_hbm.heatmap.svg"), f"heatmap-cells-{i}")
            check(g is not None and filled_paths(g) == 9 == len(ok), f"mxu heat map {w}: 3 shapes x 3 bandwidths")
            pts = group(os.path.join(out, "mxu_vs_hbm.pareto.svg"), f"pareto-points-{i}")
            with_power = [r for r in ok if r.get("power_proxy") is not None]
            check(pts is not None and markers(pts) == len(with_power), f"mxu pareto {w}: one marker per ok run")
            ring = group(os.path.join(out, "mxu_vs_hbm.pareto.svg"), f"pareto-front-{i}")
            check(ring is not None and markers(ring) == fronts.get(w, -1),
                  f"mxu pareto {w}: ringed front = the report's {fronts.get(w)} points")

        # chip_scaling: two lines (link bandwidths), one marker per chip count (8, 16, 32, 64).
        render(src, ["chip_scaling.jsonl", "--kind", "scaling", "--param", "system.topology", "--out", out])
        check_files(out, "chip_scaling", ("scaling",))
        svg = os.path.join(out, "chip_scaling.scaling.svg")
        lines = [group(svg, f"scaling-line-0-{k}") for k in range(3)]
        check(lines[0] is not None and lines[1] is not None and lines[2] is None, "chip scaling: two lines")
        for g in lines[:2]:
            check(g is not None and markers(g) == 4, "chip scaling: 4 chip counts per line")

        # Bad input: exit 2 and a located message.
        with open(os.path.join(d, "bad.jsonl"), "w", encoding="utf-8") as f:
            f.write(json.dumps(vmem[0]) + "\n{\"sweep\": oops}\n" + json.dumps(vmem[1]) + "\n")
        with open(os.path.join(d, "bad.csv"), "w", encoding="utf-8") as f:
            csv.writer(f).writerows([["sweep", "point", "status"], ["x", "0", "ok"]])
        with open(os.path.join(d, "one_axis.jsonl"), "w", encoding="utf-8") as f:
            for r in vmem:
                if r["params"]["core.vmem.capacity"] == "1 MiB":
                    f.write(json.dumps(r) + "\n")
        cases = [
            (["missing.jsonl"], "missing.jsonl: cannot read"),
            (["bad.jsonl"], "bad.jsonl:2:11: not a JSON record"),
            (["bad.csv"], "bad.csv:1:1: CSV header lacks"),
            (["one_axis.jsonl", "--kind", "heatmap"], "needs two swept parameters"),
            (["vmem_vs_time.jsonl", "--metric", "nope"], "metric 'nope' has no numeric value"),
            (["vmem_vs_time.jsonl", "--formats", "pdf"], "--formats takes png and/or svg"),
            (["vmem_vs_time.jsonl", "mxu_vs_hbm.jsonl"], "different sweeps"),
            (["mxu_vs_hbm.jsonl", "--kind", "scaling", "--param", "core.mxu.rows"], "(a zip group)"),
        ]
        for args, want in cases:
            p = run(plot + args + ["--out", os.path.join(d, "bad")], d, code=None)
            check(p.returncode == 2 and want in p.stderr,
                  f"plot_sweep {' '.join(args)}: exit 2 with '{want}' (got {p.returncode}: {p.stderr.strip()})")
    finally:
        os.chdir(src)
        shutil.rmtree(d, ignore_errors=True)
    if failures:
        print(f"0 passed, {len(failures)} failed", file=sys.stderr)
        return 1
    print("plot_sweep_test: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
