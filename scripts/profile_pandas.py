#!/usr/bin/env python3
"""An example of reading tpusim's op rows with pandas: loads the CSV of
`tpusim run MODEL.hlo --format csv` (or ops.csv from `--out DIR`), sums time,
FLOPs and HBM bytes by op category, prints the table and draws it as a bar
chart (PNG and SVG). Column names are docs/profile.md's.

  tpusim run model.hlo --chip v5e --format csv > ops.csv
  scripts/profile_pandas.py ops.csv --out plots/
"""
import argparse
import os
import sys

import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_units import save_figure  # noqa: E402


def by_category(ops):
    """Time, FLOPs, HBM bytes and op count per category, longest first."""
    step = ops["time_s"].sum()
    g = ops.groupby("category").agg(ops=("name", "count"), time_s=("time_s", "sum"), flops=("flops", "sum"),
                                     hbm_bytes=("hbm_bytes", "sum"))
    g["percent"] = 100 * g["time_s"] / step
    return g.sort_values("time_s", ascending=False)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("csv", help="the op rows of `tpusim run MODEL.hlo --format csv`")
    p.add_argument("--out", help="directory for the bar chart (none: print only)")
    args = p.parse_args(argv)
    try:
        ops = pd.read_csv(args.csv)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        sys.stderr.write(f"{args.csv}: error: cannot read the CSV: {e}\n")
        return 2
    missing = [c for c in ("name", "category", "time_s", "flops", "hbm_bytes") if c not in ops.columns]
    if missing:
        sys.stderr.write(f"{args.csv}: error: no column {', '.join(missing)}; expected `tpusim run MODEL.hlo "
                         "--format csv` (an HLO module's rows)\n")
        return 2
    table = by_category(ops)
    print(table.to_string(float_format=lambda v: f"{v:.6g}"))
    if args.out:
        import matplotlib

        matplotlib.use("Agg")
        matplotlib.rcParams["svg.hashsalt"] = "tpusim"
        ax = table["percent"].iloc[::-1].plot.barh(figsize=(7, 0.45 * len(table) + 1.5), color="#4c78a8")
        ax.set_xlabel("share of the step (%)")
        ax.set_ylabel("")
        ax.set_title(f"time by op category ({os.path.basename(args.csv)})", fontsize=10)
        fig = ax.get_figure()
        fig.tight_layout()
        stem = os.path.splitext(os.path.basename(args.csv))[0]
        save_figure(fig, args.out, f"{stem}.by_category")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
