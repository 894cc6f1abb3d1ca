#!/usr/bin/env python3
"""LLM serving steps against measured TPUs (tests/validation/refs/hw/inference.csv).

For every row with fixed request lengths (the `serving` column): writes the server's
steady-state engine step with workloads/gen/serving_step.py (the decode tokens of every
running request and the prefill chunk, tensor parallel over the row's chips), simulates it
with `tpusim run --chip CHIP --system TOPOLOGY --mode symmetric`, and compares the step
time with the measured mean time per output token (TPOT). The cal/val split is the CSV's
own (fixed before any error was computed). Nothing is fitted here. Rows whose requests
come from a real dataset (variable lengths) are listed with the reason.

Writes JSON (one object per row) for scripts/validation_report.py.

usage: validate_serving.py TPUSIM [-o out/validate_serving.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "workloads", "gen"))
import maxtext_step  # noqa: E402
import serving_step  # noqa: E402

CSV = os.path.join(ROOT, "tests", "validation", "refs", "hw", "inference.csv")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("tpusim", help="the tpusim binary")
    p.add_argument("--csv", default=CSV)
    p.add_argument("-o", "--output", default="-")
    a = p.parse_args()
    rows = maxtext_step.read_rows(a.csv)
    bad = serving_step.row_errors(a.csv, rows)
    if bad:
        sys.stderr.write("\n".join(f"error: {b}" for b in bad) + "\n")
        return 2
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, r in enumerate(rows):
            entry = {"row": i, "chip": r["chip"], "model": r["model"], "slice": r["slice"], "split": r["split"],
                     "dtype": r["dtype"], "batch": r["batch"], "source": r["source"]}
            why = serving_step.supported(r)
            if why:
                entry["skipped"] = why
                results.append(entry)
                continue
            if r["unit"] != "ms":
                raise SystemExit(f"{a.csv}: row {i}: a serving row's measured TPOT must be in ms, got {r['unit']}")
            text, srv = serving_step.row_module(r)
            path = os.path.join(tmp, f"row{i}.hlo")
            with open(path, "w") as f:
                f.write(text)
            t0 = time.time()
            out = subprocess.run([a.tpusim, "run", path, "--format", "json", "-q"] + serving_step.run_args(r),
                                 check=True, capture_output=True, text=True).stdout
            sim_ms = json.loads(out)["step_time_s"] * 1e3
            meas = float(r["measured"])
            s = srv.s
            entry.update(measured_ms=meas, tpusim_ms=sim_ms, error=sim_ms / meas - 1, system=r["topology"],
                         step=f"{s.decode} decode (context {s.decode_ctx}) + {s.prefill} prefill (context "
                              f"{s.prefill_ctx}) tokens", sim_wall_s=round(time.time() - t0, 1))
            sys.stderr.write(f"row {i} {r['model']} {r['slice']} concurrency {r['batch']}: measured {meas:.2f} ms, "
                             f"tpusim {sim_ms:.2f} ms ({100 * entry['error']:+.1f}%, {r['split']})\n")
            results.append(entry)
    text = json.dumps({"rows": results}, indent=1) + "\n"
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
