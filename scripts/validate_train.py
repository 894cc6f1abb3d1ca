#!/usr/bin/env python3
"""Whole MaxText training steps against measured TPUs (tests/validation/refs/hw/train_step.csv).

For every row workloads/gen/maxtext_step.py can generate (the MaxText default
decoder with stated dimensions or a named config of its MODEL_CONFIGS, any MaxText
remat policy, bf16, a whole per-device batch): writes the row's whole training step
(maxtext_step.py --emit: embedding, the scanned layers forward and backward with
the remat policy's recomputation and host offload, flash
attention, loss, FSDP/tensor collectives, the DCN gradient all-reduce of
multislice rows, AdamW), simulates it on the row's slice with
`tpusim run --chip CHIP --system TOPOLOGY [--set system.slices=N] --mode
symmetric --loops extrapolate`, and compares the simulated step time with the
measured one (a TFLOP/s/chip row's step time is MaxText's per-device TFLOP over
the published figure). The cal/val split is the CSV's own (fixed before any
error was computed). Nothing is fitted here.

Writes JSON (one object per row, skipped rows with the reason) for
scripts/validation_report.py.

usage: validate_train.py TPUSIM [--rows 6,12] [--quick] [--jobs N] [-o out/validate_train.json]
       validate_train.py --combine A.json B.json [-o out/validate_train.json]
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "workloads", "gen"))
import maxtext_step  # noqa: E402

CSV = os.path.join(ROOT, "tests", "validation", "refs", "hw", "train_step.csv")


def measured_step_s(row, dims):
    """The row's step time in seconds (converted from TFLOP/s/chip with MaxText's TFLOP formula)."""
    if row["unit"] == "TFLOP/s/chip":
        return maxtext_step.per_device_tflop(dims, float(row["per_device_batch"]), int(row["seq_len"])) / float(
            row["measured"])
    if row["unit"] == "s/step":
        return float(row["measured"])
    raise ValueError(f"unit {row['unit']}")


def simulate(tpusim, row, index, tmp):
    text, _ = maxtext_step.row_module(row)
    path = os.path.join(tmp, f"row{index}.hlo")
    with open(path, "w") as f:
        f.write(text)
    t0 = time.time()
    out = subprocess.run([tpusim, "run", path, "--format", "json", "-q"] + maxtext_step.run_args(row),
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["step_time_s"], time.time() - t0


def quick_rows(rows):
    """The cheapest generated validation row (fewest layers x emb x mlp, one slice): the CI sample."""
    best = None
    for i, r in enumerate(rows):
        if maxtext_step.supported(r) or r["split"] != "val" or int(r["num_slices"]) != 1:
            continue
        d = maxtext_step.parse_spec(r["model_spec"])
        cost = d["layers"] * d["emb"] * d["mlp"]
        if best is None or cost < best[0]:
            best = (cost, i)
    return [best[1]] if best else []


def run_row(tpusim, rows, i, tmp):
    """Row i's report entry: simulated and compared, or skipped with the reason (progress on stderr)."""
    r = rows[i]
    entry = {"row": i, "chip": r["chip"], "model": r["model"], "slice": r["slice"], "split": r["split"],
             "precision": r["precision"], "num_slices": int(r["num_slices"]), "source": r["source"]}
    why = maxtext_step.supported(r)
    if why:
        entry["skipped"] = why
        return entry
    dims = maxtext_step.parse_spec(r["model_spec"])
    try:
        sim_s, wall = simulate(tpusim, r, i, tmp)
    except subprocess.CalledProcessError as err:
        lines = (err.stderr or "").strip().splitlines()
        why = lines[-1].split("error: ", 1)[-1] if lines else f"exit status {err.returncode}"
        why = why.replace(os.path.join(tmp, ""), "")  # the module's temporary folder
        entry["skipped"] = f"generated; tpusim does not run it: {why}"
        entry["failed"] = True
        sys.stderr.write(f"row {i} {r['model']} {r['slice']}: {entry['skipped']}\n")
        return entry
    meas = measured_step_s(r, dims)
    entry.update(measured_s=meas, tpusim_s=sim_s, error=sim_s / meas - 1, sim_wall_s=round(wall, 1),
                 mesh=maxtext_step.mesh_text(r), system=r["topology_per_slice"].split()[0])
    sys.stderr.write(f"row {i} {r['model']} {r['slice']}: measured {meas:.3f} s, tpusim {sim_s:.3f} s "
                     f"({100 * entry['error']:+.1f}%, {r['split']}, {wall:.0f} s to simulate)\n")
    return entry


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("tpusim", nargs="?", help="the tpusim binary (not needed with --combine)")
    p.add_argument("--rows", help="comma-separated data-row indices (0-based; default: every generated row)")
    p.add_argument("--quick", action="store_true", help="only the cheapest generated validation row (CI)")
    p.add_argument("--csv", default=CSV)
    p.add_argument("--jobs", type=int, default=1,
                   help="rows simulated at once (default 1; each is one tpusim process, the largest slices first)")
    p.add_argument("--combine", nargs="+", metavar="JSON",
                   help="write one report from earlier runs' outputs (runs of different rows, e.g. in parallel): "
                        "their simulated rows, the others' reasons as of now; simulates nothing")
    p.add_argument("-o", "--output", default="-")
    a = p.parse_args()
    rows = maxtext_step.read_rows(a.csv)
    if a.combine:
        return write(combine(rows, a.combine), a.output)
    if not a.tpusim:
        p.error("the tpusim binary is required (unless --combine)")
    if a.jobs < 1:
        p.error(f"--jobs {a.jobs}: expected 1 or more")
    if a.rows:
        try:
            chosen = [int(x) for x in a.rows.split(",")]
        except ValueError:
            p.error(f"--rows {a.rows}: expected comma-separated row numbers")
        bad = [i for i in chosen if not 0 <= i < len(rows)]
        if bad:
            p.error(f"--rows: {bad} not data rows of {a.csv} (0..{len(rows) - 1})")
    elif a.quick:
        chosen = quick_rows(rows)
    else:
        chosen = range(len(rows))
    with tempfile.TemporaryDirectory() as tmp:
        def run(i):
            return run_row(a.tpusim, rows, i, tmp)
        if a.jobs <= 1:
            results = [run(i) for i in chosen]
        else:
            # The largest slices first (the longest simulations), so that the last
            # rows to finish are short ones; the report keeps the rows' order.
            order = sorted(chosen, key=lambda i: -int(rows[i]["chips"]))
            with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
                done = dict(zip(order, pool.map(run, order)))
            results = [done[i] for i in chosen]
    return write(results, a.output)


def combine(rows, paths):
    """Rows simulated in any of the runs at `paths` (the last run wins), the other CSV rows skipped
    with the reason supported() gives now (or as not simulated)."""
    done = {}
    for path in paths:
        with open(path) as f:
            for entry in json.load(f)["rows"]:
                if "skipped" not in entry or entry.get("failed"):
                    done[entry["row"]] = entry
    results = []
    for i, r in enumerate(rows):
        if i in done:
            results.append(done[i])
            continue
        entry = {"row": i, "chip": r["chip"], "model": r["model"], "slice": r["slice"], "split": r["split"],
                 "precision": r["precision"], "num_slices": int(r["num_slices"]), "source": r["source"]}
        entry["skipped"] = (maxtext_step.supported(r)
                            or "generated, not simulated for this report (validate_train.py --rows N runs it)")
        results.append(entry)
    return results


def write(results, output):
    text = json.dumps({"rows": results}, indent=1) + "\n"
    if output == "-":
        sys.stdout.write(text)
    else:
        with open(output, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
