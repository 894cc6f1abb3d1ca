#!/usr/bin/env python3
"""What-if monotonicity: raising a rate, bandwidth or count of the chip
never makes a shipped workload slower (by more than a tolerance).

For every HLO workload under workloads/hlo (not the sharded ones) and every
key below, runs `tpusim run` on the base chip and with the key raised, twice:
with the tiling pinned (`--lower-for` the base chip: the same program on
faster hardware) and with the tiling free (the compiler re-tiles for the
faster chip). Prints one row per case and exits 1 if any raise slows a
workload by more than --tolerance (default 0.5%).

Known exceptions (KNOWN below) are reported, not failed; one that holds
again is reported so the list shrinks.

Usage: scripts/whatif_monotone.py TPUSIM [--chip v5e] [--tolerance 0.005] [--only NAME] [--keys K1,K2]
"""
import argparse
import json
import pathlib
import subprocess
import sys

# key, factor, unit of --set (the base value, in base units, from `config show`)
RAISES = [
    ("hbm.bandwidth", 2.0, " B/s"),
    ("core.vmem.bytes_per_cycle", 2.0, ""),
    ("clock", 1.5, " Hz"),
    ("core.dma.engines", 2.0, ""),
    ("core.mxu.count", 2.0, ""),
    ("core.vpu.alus_per_lane", 2.0, ""),
    ("core.vpu.vreg_loads_per_cycle", 2.0, ""),
    ("core.vpu.vreg_stores_per_cycle", 2.0, ""),
    ("core.xlu.count", 2.0, ""),
    ("core.eup.vregs_per_cycle", 2.0, ""),
]


# (workload, key): why it is slower. Open modelling work, not tolerated
# silently: each is printed with its reason.
KNOWN = {}


def base_values(tpusim, chip):
    out = subprocess.run([tpusim, "config", "show", "--chip", chip, "--format", "json"], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)["config"]


def lookup(cfg, key):
    node = cfg
    for part in key.split("."):
        node = node[part]
    return node


def step(tpusim, path, chip, sets, pinned):
    cmd = [tpusim, "run", str(path), "--chip", chip, "--format", "json", "-q"]
    for s in sets:
        cmd += ["--set", s]
    if pinned:
        cmd += ["--lower-for", chip]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
    return json.loads(r.stdout)["step_time_s"], ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tpusim")
    ap.add_argument("--chip", default="v5e")
    ap.add_argument("--tolerance", type=float, default=0.005)
    ap.add_argument("--only", default="")
    ap.add_argument("--keys", default="", help="comma-separated keys to raise (default: all)")
    a = ap.parse_args()
    keys = set(k for k in a.keys.split(",") if k)
    root = pathlib.Path(__file__).resolve().parent.parent
    cfg = base_values(a.tpusim, a.chip)
    workloads = sorted(p for p in (root / "workloads" / "hlo").glob("*.hlo") if a.only in p.name)
    bad = 0
    print(f"| workload | key raised | tiling | base us | raised us | change |")
    print(f"| --- | --- | --- | --- | --- | --- |")
    for w in workloads:
        base, err = step(a.tpusim, w, a.chip, [], False)
        if base is None:
            print(f"| {w.name} | (base run failed: {err}) | | | | |")
            bad += 1
            continue
        for key, factor, unit in RAISES:
            if keys and key not in keys:
                continue
            value = lookup(cfg, key)
            raised = value * factor
            text = f"{key}={int(raised) if float(raised).is_integer() else raised}{unit}"
            for pinned in (True, False):
                t, err = step(a.tpusim, w, a.chip, [text], pinned)
                ref = base
                if t is None:
                    print(f"| {w.name} | {text} | {'pinned' if pinned else 'free'} | {ref * 1e6:.3f} | failed: {err} | |")
                    bad += 1
                    continue
                change = t / ref - 1
                known = KNOWN.get((w.name, key))
                flag = ""
                if change > a.tolerance:
                    flag = f" known: {known}" if known else " **slower**"
                    bad += 0 if known else 1
                elif known:
                    flag = " (listed as known but monotone now: shorten KNOWN)"
                print(f"| {w.name} | {text} | {'pinned' if pinned else 'free'} | {ref * 1e6:.3f} | {t * 1e6:.3f} | "
                      f"{100 * change:+.2f}%{flag} |")
    print(f"\n{bad} case(s) slower by more than {100 * a.tolerance:.2f}% or failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
