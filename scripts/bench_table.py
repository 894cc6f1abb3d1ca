#!/usr/bin/env python3
"""Turns Google Benchmark JSON into the table of figures and targets that the
README quotes. Targets come from the issues (parse speed, simulator speed,
MXU and HBM efficiency); a figure without a target is informational."""
import json
import platform
import sys

raw = json.load(open(sys.argv[1]))
rows = []


def add(case, figure, unit, target, ok):
    rows.append({"case": case, "figure": figure, "unit": unit, "target": target, "meets_target": ok})


for b in raw.get("benchmarks", []):
    name = b["name"]
    if b.get("error_occurred"):
        add(name, None, "", "", None)
        continue
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
    elif name.startswith("BM_SymmetricTransformerLayer4096Chips"):
        wall = b["real_time"] / 1e3 if b.get("time_unit") == "ms" else b["real_time"]
        add("symmetric mode, tp8 layer on 16x16x16 (4096 chips), wall", round(wall, 2), "s", "<= 30", wall <= 30)
        add("symmetric mode, 4096 chips, peak memory", round(b["max_rss_MiB"], 1), "MiB", "<= 2048",
            b["max_rss_MiB"] <= 2048)
    elif name.startswith("BM_FullTransformerLayer64Chips"):
        wall = b["real_time"] / 1e3 if b.get("time_unit") == "ms" else b["real_time"]
        add("full mode, tp8 layer on 4x4x4 (64 chips), wall", round(wall, 2), "s", "<= 60", wall <= 60)
        add("full mode, 64 chips, peak memory", round(b["max_rss_MiB"], 1), "MiB", "", None)
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

ctx = raw.get("context", {})
out = {"machine": {"host": platform.node(), "cpus": ctx.get("num_cpus"), "mhz": ctx.get("mhz_per_cpu"),
                   "build": ctx.get("library_build_type"), "date": ctx.get("date")}, "rows": rows}
json.dump(out, open(sys.argv[2], "w"), indent=2)
print(f"{'case':<60} {'figure':>10} {'unit':<10} {'target':<8} ok")
for r in rows:
    fig = "error" if r["figure"] is None else r["figure"]
    ok = "" if r["meets_target"] is None else ("yes" if r["meets_target"] else "NO")
    print(f"{r['case']:<60} {fig!s:>10} {r['unit']:<10} {r['target']:<8} {ok}")
