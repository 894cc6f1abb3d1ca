#!/usr/bin/env python3
"""Turns Google Benchmark JSON into the table of figures and targets that the
README quotes. Targets come from the issues (parse speed, simulator speed,
MXU and HBM efficiency); a figure without a target is informational.

Cost growth: every benchmark with a `growth_size` counter is a point
(size, wall time) of its family's series; each series gets a log-log
least-squares fit (scripts/growth_fit.py) whose exponent is printed against
the exponent the cost model predicts, with the reason in GROWTH below."""
import json
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from growth_fit import fit_power_law  # noqa: E402

# family: (what grows, size unit, target text, check, why that exponent)
GROWTH = {
    "BM_SimulatedInstructionsPerSecond": (
        "single-chip simulator, wall vs instructions simulated", "instructions", "~1 (0.9-1.1)",
        lambda k: 0.9 <= k <= 1.1,
        "event-driven at tile granularity: a bounded number of events per instruction, only in-flight state held"),
    "BM_LowerGrowth": (
        "lowering, wall vs HLO instructions (dot/add/tanh/multiply chain)", "HLO instructions", "~1 (<= 1.1)",
        lambda k: k <= 1.1,
        "one visit per HLO instruction, a bounded number of ISA instructions per tile of a fixed-size op"),
    "BM_SymmetricChips": (
        "symmetric mode, tp8 layer, wall vs chips (1-4096)", "chips", "<= 1",
        lambda k: k <= 1.0,
        "one chip simulated (constant) + one network run per distinct collective, its packet events ~ chips"),
    "BM_FullChips": (
        "full mode, tp8 layer, wall vs chips", "chips", "~1 (<= 1.1)",
        lambda k: k <= 1.1,
        "one TensorCore simulation per chip + network packet events ~ chips"),
}
SYSTEMS = {1: "single-chip path", 8: "2x2x2", 64: "4x4x4", 256: "8x8x4", 4096: "16x16x16"}

raw = json.load(open(sys.argv[1]))
rows = []
series = {}  # family -> [(size, wall seconds)]


def seconds(b):
    """Wall time of one iteration in seconds (manual time, any unit)."""
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
    return b["real_time"] * scale


def add(case, figure, unit, target, ok):
    rows.append({"case": case, "figure": figure, "unit": unit, "target": target, "meets_target": ok})


for b in raw.get("benchmarks", []):
    name = b["name"]
    if b.get("error_occurred"):
        add(name, None, "", "", None)
        continue
    family = name.split("/")[0]
    if family in GROWTH and "growth_size" in b:
        series.setdefault(family, []).append((b["growth_size"], seconds(b)))
    if name.startswith("BM_HloParse"):
        mbps = b.get("bytes_per_second", 0) / 1e6
        label = b.get("label", "").replace("openxla_xla__xla__", "")
        add(f"HLO parse {label or name}", round(mbps, 1), "MB/s", ">= 50", mbps >= 50)
        if "total_bytes_per_text_byte" in b:
            mem = b["total_bytes_per_text_byte"]
            add(f"HLO memory {label or name}", round(mem, 2), "x text", "<= 4", mem <= 4)
    elif name.startswith("BM_SimulatedInstructionsPerSecond"):
        ips = b["instructions_per_s"]
        add(f"simulator speed, {int(b['instructions'])} instructions", round(ips / 1e6, 3), "M instr/s", ">= 2",
            ips >= 2e6)
    elif name.startswith("BM_BytesPerInstructionHeld"):
        bpi = b["bytes_per_instruction"]
        add(f"simulator memory, {int(b['instructions'])} instructions held", round(bpi, 1), "B/instr", "<= 200",
            bpi <= 200)
        # The same mixed program unrolled: every dynamic instruction is a
        # distinct one of the program (no per-pc memo hits), as in lowered HLO.
        ips = b.get("instructions_per_s", 0)
        add(f"simulator speed, the same program unrolled ({int(b['instructions'])} instructions)",
            round(ips / 1e6, 3), "M instr/s", ">= 2", ips >= 2e6)
    elif name.startswith("BM_MxuPeakFraction"):
        f = b["fraction_of_peak"]
        add("long bf16 MXU stream, fraction of peak", round(f, 4), "", ">= 0.95", f >= 0.95)
    elif name.startswith("BM_HbmStreamFraction"):
        f = b["fraction_of_hbm_bw"]
        add("HBM streaming copy, fraction of bandwidth", round(f, 4), "", ">= 0.90", f >= 0.90)
    elif name.startswith("BM_LowerPer1kHloInstructions"):
        ms = b["ms_per_1k_hlo"]
        add(f"lowering {b.get('label', name)} ({int(b['hlo_instructions'])} HLO instr)", round(ms, 3),
            "ms/1k HLO", "", None)
    elif name.startswith("BM_RunTransformerLayer"):
        s = b["real_time"] / 1e3 if b.get("time_unit") == "ms" else b["real_time"]
        add("compile + simulate transformer layer (v5e)", round(s, 3), "s wall", "<= 2", s <= 2)
        gib = b["peak_rss_bytes"] / 2**30
        add("compile + simulate transformer layer, peak memory", round(gib, 3), "GiB", "<= 1", gib <= 1)
    elif name.startswith("BM_SymmetricChips") or name.startswith("BM_FullChips"):
        sym = name.startswith("BM_Symmetric")
        chips = int(b["growth_size"])
        wall = seconds(b)
        mib = b["max_rss_MiB"]
        plural = "s" if chips > 1 else ""
        what = f"{'symmetric' if sym else 'full'} mode, tp8 layer, {chips} chip{plural} ({SYSTEMS.get(chips, '?')})"
        wall_target, mem_target = "", ""
        if sym and chips == 4096:
            wall_target, mem_target = "<= 30", "<= 2048"
        if not sym and chips == 64:
            wall_target = "<= 60"
        add(f"{what}, wall", round(wall, 3), "s", wall_target,
            (wall <= 30 if sym else wall <= 60) if wall_target else None)
        add(f"{what}, peak memory", round(mib, 1), "MiB", mem_target, mib <= 2048 if mem_target else None)
    elif name.startswith("BM_LowerGrowth"):
        add(f"lowering, synthetic chain of {int(b['growth_size'])} HLO instructions", round(seconds(b) * 1e3, 3),
            "ms", "", None)
    elif name.startswith("BM_SweepRunnerOverheadPerPoint"):
        ms = b["overhead_ms_per_point"]
        add(f"sweep runner overhead per point (sweep {b['sweep_ms_per_point']:.1f} ms - direct run "
            f"{b['direct_run_ms_per_point']:.1f} ms)", round(ms, 1), "ms", "<= 20", ms <= 20)
    elif name.startswith("BM_Sweep1000Points"):
        s = b["seconds"]
        how = "mpirun -np 2" if "Mpi" in name else "-j 2"
        add(f"1,000-point sweep of matmul.tasm, {how}", round(s, 1), "s", "<= 300", s <= 300)
    else:
        add(name, b.get("real_time"), b.get("time_unit", ""), "", None)

fits = []
for family, points in series.items():
    what, unit, target, check, why = GROWTH[family]
    points.sort()
    if len({x for x, _ in points}) < 2:
        continue
    slope, a, r2 = fit_power_law([x for x, _ in points], [y for _, y in points])
    lo, hi = points[0][0], points[-1][0]
    ok = check(slope)
    add(f"growth: {what}, slope ({len(points)} points, {lo:g}-{hi:g} {unit})", round(slope, 3), "exponent",
        target, ok)
    # Slope between neighbouring sizes: a growth the overall fit averages away
    # (a constant cost at small sizes, a super-linear one at large sizes).
    segments = [fit_power_law([x0, x1], [y0, y1])[0] for (x0, y0), (x1, y1) in zip(points, points[1:]) if x1 > x0]
    fits.append({"series": family, "what": what, "size_unit": unit, "points": [[x, y] for x, y in points],
                 "slope": slope, "a": a, "r2": r2, "segment_slopes": segments, "target": target, "why": why,
                 "meets_target": ok})

ctx = raw.get("context", {})
load_start = os.environ.get("BENCH_LOAD_START", "")
out = {"machine": {"host": platform.node(), "cpus": ctx.get("num_cpus"), "mhz": ctx.get("mhz_per_cpu"),
                   "build": os.environ.get("BENCH_BUILD_TYPE", "?"),
                   "benchmark_library_build": ctx.get("library_build_type"), "date": ctx.get("date"),
                   "load_average_start": load_start, "load_average_end": " ".join(f"{v:.2f}" for v in os.getloadavg())},
       "rows": rows, "growth": fits}
json.dump(out, open(sys.argv[2], "w"), indent=2)
m = out["machine"]
print(f"machine: {m['host']}, {m['cpus']} CPUs, tpusim {m['build']} build, {m['date']}; "
      f"load average at start {load_start or '?'}, at end {m['load_average_end']}")
width = max([60] + [len(r["case"]) for r in rows])
print(f"{'case':<{width}} {'figure':>10} {'unit':<10} {'target':<14} ok")
for r in rows:
    fig = "error" if r["figure"] is None else r["figure"]
    ok = "" if r["meets_target"] is None else ("yes" if r["meets_target"] else "NO")
    print(f"{r['case']:<{width}} {fig!s:>10} {r['unit']:<10} {r['target']:<14} {ok}")
for f in fits:
    print(f"growth {f['series']}: wall ~ {f['a']:.3g} * size^{f['slope']:.3f} (r2 {f['r2']:.3f}); "
          f"expected {f['target']}: {f['why']}; slopes between neighbouring sizes "
          + ", ".join(f"{k:.2f}" for k in f["segment_slopes"]))
