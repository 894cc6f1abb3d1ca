#!/usr/bin/env python3
"""HLO -> StableHLO -> HLO over a corpus (the shared HLO corpus by default):
per file `tpusim convert FILE.hlo -o FILE.mlir`, then `tpusim analyze` of both
(the totals of every module: FLOPs, transcendentals, bytes, collective bytes,
bound times) and `tpusim run` of both (simulated step time, v5e, --loops
extrapolate). A file round-trips identically when every figure is equal
(relative difference at most 1e-12); a module on 2 to 16 devices also runs
on a v5p system of that many chips (--system auto), which must agree too.
Writes OUT.json (summary and rows).

Exit 1 when a file of the corpus does not round-trip identically.

Usage: scripts/roundtrip_corpus.py TPUSIM [--corpus DIR] [--out out/roundtrip] [--sample N]
                                   [--only SUBSTRING] [--exclude A,B] [--work DIR] [--system-max-devices 16]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

from run_corpus import first_error  # beside this script: the first error line of a run


def tpusim(cmd, timeout=600):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def totals(text):
    """The totals of every module of an `analyze --format json` output."""
    j = json.loads(text)
    mods = j["modules"] if "modules" in j else [j]
    return [m["total"] for m in mods]


def equal(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= 1e-12 * max(abs(a), abs(b))
    return a == b


def one(tp, path, work, max_devices):
    mlir = os.path.join(work, os.path.basename(path)[:-4] + ".mlir")
    row = {"file": os.path.basename(path)}
    code, _, err = tpusim([tp, "convert", path, "-o", mlir, "-q"])
    if code != 0:
        return {**row, "status": "convert failed", "error": first_error(err)}
    row["mlir_bytes"] = os.path.getsize(mlir)
    outs = []
    for f in (path, mlir):
        code, out, err = tpusim([tp, "analyze", f, "--format", "json", "-q"])
        if code != 0:
            return {**row, "status": "analyze failed" if f == path else "converted analyze failed",
                    "error": first_error(err)}
        outs.append(totals(out))
    row["analyze_equal"] = equal(outs[0], outs[1])
    devices = 1
    steps = []
    for f in (path, mlir):
        code, out, err = tpusim([tp, "run", f, "--chip", "v5e", "--loops", "extrapolate", "--format", "json"])
        steps.append(json.loads(out)["step_time_s"] if code == 0 else first_error(err))
        m = re.search(r"the module runs on (\d+) devices", err)
        if f == path and m:
            devices = int(m.group(1))
    row["step_time_s"] = steps
    row["step_equal"] = equal(steps[0], steps[1]) if all(isinstance(s, float) for s in steps) else steps[0] == steps[1]
    if 1 < devices <= max_devices:
        # Also on a system of the module's devices (as scripts/run_corpus.py runs them).
        sys_steps = []
        for f in (path, mlir):
            code, out, err = tpusim([tp, "run", f, "--chip", "v5p", "--system", "auto", "--loops", "extrapolate",
                                     "--format", "json", "-q"])
            sys_steps.append([json.loads(out)["step_time_s"], json.loads(out)["chips"]] if code == 0 else first_error(err))
        row["system"] = sys_steps
        row["step_equal"] = row["step_equal"] and equal(sys_steps[0], sys_steps[1])
    row["status"] = "identical" if row["analyze_equal"] and row["step_equal"] else "different"
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tpusim")
    ap.add_argument("--corpus", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "refs",
                                                     "hlo-corpus", "files"))
    ap.add_argument("--out", default="out/roundtrip")
    ap.add_argument("--work", default="out/roundtrip_mlir")
    ap.add_argument("--sample", type=int, default=0, help="every k-th file only, k = files / N (0: all)")
    ap.add_argument("--only", default="")
    ap.add_argument("--exclude", default="", help="comma-separated substrings: files whose name has one are left out")
    ap.add_argument("--system-max-devices", type=int, default=16,
                    help="modules on 2..N devices also run on a v5p system of that many chips (--system auto)")
    a = ap.parse_args()
    if not os.path.isdir(a.corpus):
        print(f"note: no corpus at {a.corpus}; round trip skipped", file=sys.stderr)
        return 0
    excluded = [x for x in a.exclude.split(",") if x]
    files = sorted(f for f in os.listdir(a.corpus)
                   if f.endswith(".hlo") and a.only in f and not any(x in f for x in excluded))
    if a.sample > 0 and len(files) > a.sample:
        step = len(files) / a.sample
        files = [files[int(i * step)] for i in range(a.sample)]
    os.makedirs(a.work, exist_ok=True)
    start = time.monotonic()
    rows = []
    for name in files:
        t0 = time.monotonic()
        row = one(a.tpusim, os.path.join(a.corpus, name), a.work, a.system_max_devices)
        row["wall_s"] = time.monotonic() - t0
        rows.append(row)
        print(f"{row['status']:16} {name}", file=sys.stderr)
    # A file whose original HLO tpusim rejects is not a round-trip failure.
    valid = [r for r in rows if r["status"] != "analyze failed"]
    same = [r for r in valid if r["status"] == "identical"]
    summary = {"files": len(rows), "valid": len(valid), "identical": len(same), "sampled": a.sample > 0,
               "wall_s": time.monotonic() - start}
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump({"summary": summary, "rows": rows}, f, indent=1)
    print(f"{len(same)} of {len(valid)} files round-trip identically ({len(rows)} files, "
          f"{summary['wall_s']:.0f} s)", file=sys.stderr)
    return 0 if len(same) == len(valid) else 1


if __name__ == "__main__":
    sys.exit(main())
