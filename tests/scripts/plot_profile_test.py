#!/usr/bin/python3
"""ctest: the profile and scaling plots render from fixtures, with units on
their axes, and the pandas example reads a run's CSV. scripts/plot_profile.py draws a stored `tpusim run --format json`
report (tests/scripts/fixtures/profile_run.json, the transformer layer on
v5e): one bar per op category of the report, one roofline point per op with
FLOPs, HBM bytes and time, and the roof; scripts/plot_scale.py draws a stored
`tpusim scale --format json` (fixtures/scale_run.json) with its time axis in
the unit that fits. The axis units come from scripts/plot_units.py, checked
here on values whose unit is known. Bad input exits 2 naming the file.

  plot_profile_test.py --source .
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, exit_code  # noqa: E402


def ids(svg, prefix):
    return [g.get("id") for g in ET.parse(svg).iter(f"{SVG}g") if (g.get("id") or "").startswith(prefix)]


def texts(svg):
    """The SVG's text (plot_scale writes <text> elements)."""
    return " ".join(t.text or "" for t in ET.parse(svg).iter(f"{SVG}text"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    args = ap.parse_args()
    src = os.path.abspath(args.source)
    scripts = os.path.join(src, "scripts")
    fixtures = os.path.join(src, "tests", "scripts", "fixtures")
    sys.path.insert(0, scripts)
    import plot_units

    # Units, on values whose unit is known.
    check(plot_units.time_unit([0.0065, 0.002]) == (1e-3, "ms"), "6.5 ms reads in ms")
    check(plot_units.time_unit([2e-6]) == (1e-6, "us"), "2 us reads in us")
    check(plot_units.time_unit([3.0]) == (1.0, "s"), "3 s reads in s")
    check(plot_units.time_unit([]) == (1.0, "s"), "no values: seconds")
    check(plot_units.si_unit([8.19e11, 3.2e12], "B/s") == (1e12, "TB/s"), "3.2e12 B/s reads in TB/s")
    check(plot_units.si_unit([819e9], "B/s") == (1e9, "GB/s"), "819e9 B/s reads in GB/s")
    check(plot_units.time_label("step_time_s", "ms") == "step time (ms)", "step_time_s labelled step time")
    import plot_sweep
    label, factor = plot_sweep.unit_label("hbm.bandwidth", [8.19e11, 3.2e12])
    check((label, factor) == ("hbm.bandwidth (TB/s)", 1e12), f"sweep axis hbm.bandwidth in TB/s, got {label}")
    check(plot_sweep.metric_scale("time_s", [0.0069]) == ("time (ms)", 1e-3), "sweep metric time_s in ms")

    tmp = tempfile.mkdtemp(prefix="plot_profile_test_")
    try:
        report_path = os.path.join(fixtures, "profile_run.json")
        report = json.load(open(report_path))
        out = os.path.join(tmp, "plots")
        p = subprocess.run([sys.executable, os.path.join(scripts, "plot_profile.py"), report_path, "--out", out],
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, f"plot_profile.py renders the fixture ({p.stderr.strip()})")
        for kind in ("categories", "roofline"):
            png = os.path.join(out, f"profile_run.{kind}.png")
            check(os.path.exists(png) and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", f"{kind}.png is a PNG")
        cat_svg = os.path.join(out, "profile_run.categories.svg")
        roof_svg = os.path.join(out, "profile_run.roofline.svg")
        bars = ids(cat_svg, "category-bar-")
        check(len(bars) == len(report["by_category"]),
              f"one bar per category: {len(bars)} bars, {len(report['by_category'])} categories")
        plotted = [op for op in report["ops"] if op["flops"] > 0 and op["hbm_bytes"] > 0 and op["time_s"] > 0]
        points = 0
        for gid in ids(roof_svg, "roofline-points-"):
            g = next(g for g in ET.parse(roof_svg).iter(f"{SVG}g") if g.get("id") == gid)
            points += sum(1 for _ in g.iter(f"{SVG}use"))
        check(points == len(plotted), f"one roofline point per op with FLOPs and bytes: {points} vs {len(plotted)}")
        check(ids(roof_svg, "roofline-roof") != [], "the roof is drawn")

        # plot_scale: the fixture's steps are 793 and 976 us: the axis says us;
        # the same runs 10x longer (7.9 and 9.8 ms) say ms.
        scale = json.load(open(os.path.join(fixtures, "scale_run.json")))
        for times, unit in ((1, "us"), (10, "ms")):
            for r in scale["rows"]:
                r["step_time_s"] *= times
            src_json = os.path.join(tmp, f"scale_{times}.json")
            json.dump(scale, open(src_json, "w"))
            scale_svg = os.path.join(tmp, f"scale_{times}.svg")
            p = subprocess.run([sys.executable, os.path.join(scripts, "plot_scale.py"), src_json, scale_svg],
                               capture_output=True, text=True)
            check(p.returncode == 0, f"plot_scale.py renders the fixture ({p.stderr.strip()})")
            check(f"step time ({unit})" in texts(scale_svg), f"plot_scale labels its time axis in {unit}")
            ET.parse(scale_svg)

        # The pandas example on the same run's CSV: its groupby sums are the
        # C++ report's by_category (computed independently).
        p = subprocess.run([sys.executable, os.path.join(scripts, "profile_pandas.py"),
                            os.path.join(fixtures, "profile_run.csv"), "--out", out], capture_output=True, text=True)
        check(p.returncode == 0, f"profile_pandas.py runs ({p.stderr.strip()})")
        import pandas as pd
        sys.path.insert(0, scripts)
        import profile_pandas
        table = profile_pandas.by_category(pd.read_csv(os.path.join(fixtures, "profile_run.csv")))
        for row in report["by_category"]:
            got = table.loc[row["name"]]
            check(abs(got["time_s"] - row["time_s"]) <= 1e-9 and int(got["ops"]) == row["ops"],
                  f"pandas {row['name']}: {got['time_s']} s over {got['ops']} ops, report {row['time_s']} s over {row['ops']}")
        check(list(table.index) == [r["name"] for r in report["by_category"]], "the same order, longest first")
        check(os.path.exists(os.path.join(out, "profile_run.by_category.svg")), "the pandas example draws its chart")

        # Bad input: exit 2, the file named.
        bad = os.path.join(tmp, "bad.json")
        open(bad, "w").write("{not json")
        p = subprocess.run([sys.executable, os.path.join(scripts, "plot_profile.py"), bad, "--out", out],
                           capture_output=True, text=True)
        check(p.returncode == 2 and "bad.json: error: not JSON" in p.stderr, f"bad JSON is an input error: {p.stderr}")
        tasm = os.path.join(tmp, "tasm.json")
        json.dump({"ops": [], "step_time_s": 1.0}, open(tasm, "w"))
        p = subprocess.run([sys.executable, os.path.join(scripts, "plot_profile.py"), tasm, "--out", out],
                           capture_output=True, text=True)
        check(p.returncode == 2 and "no op categories" in p.stderr, f"a report without categories: {p.stderr}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return exit_code("plot_profile_test")


if __name__ == "__main__":
    sys.exit(main())
