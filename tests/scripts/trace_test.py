#!/usr/bin/python3
"""ctest: `tpusim run --trace` writes a valid Chrome trace (scripts/check_trace.py:
required fields per phase, slices nested per track, counters monotonic, every
track named), on a single-chip and a multi-chip run. Each TensorCore is a
process with an "HLO ops" track whose slices are the report's per-op times
(the same in-order charging), and --trace-chips picks the chips shown. The
checker itself must reject broken traces.

  trace_test.py --tpusim build/release/app/tpusim --source .
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, exit_code  # noqa: E402


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {p.returncode}\n{p.stderr}")
    return p.stdout


def events(path):
    doc = json.load(open(path))
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def tracks(evs):
    """{pid: process name}, {(pid, tid): thread name}."""
    procs = {e["pid"]: e["args"]["name"] for e in evs if e.get("ph") == "M" and e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs if e.get("ph") == "M" and e["name"] == "thread_name"}
    return procs, threads


def named_hlo(tmp):
    """A one-dot module whose dot has a metadata op_name."""
    path = os.path.join(tmp, "named.hlo")
    open(path, "w").write(
        "HloModule named\nENTRY e {\n  x = bf16[512,512] parameter(0)\n"
        "  ROOT d = bf16[512,512] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
        "metadata={op_name=\"jit(f)/mlp/dot_general\"}\n}\n")
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpusim", required=True)
    ap.add_argument("--source", required=True)
    args = ap.parse_args()
    src = os.path.abspath(args.source)
    checker = os.path.join(src, "scripts", "check_trace.py")
    tmp = tempfile.mkdtemp(prefix="trace_test_")
    try:
        # One chip: the op track against the report.
        trace = os.path.join(tmp, "layer.json")
        # (--no-reuse: every op simulated, so the trace holds all of the step's traffic)
        report = json.loads(run([args.tpusim, "run", os.path.join(src, "workloads/hlo/transformer_layer_fwd.after_optimizations.hlo"),
                                 "--chip", "v5e", "--no-reuse", "--trace", trace, "--format", "json", "-q"]))
        p = subprocess.run([sys.executable, checker, trace], capture_output=True, text=True)
        check(p.returncode == 0, f"single-chip trace is valid: {p.stdout.strip()}")
        evs = events(trace)
        procs, threads = tracks(evs)
        check(sorted(procs.values()) == ["chip0.core0"], f"one process per TensorCore: {sorted(procs.values())}")
        op_track = [k for k, v in threads.items() if v == "HLO ops"]
        check(len(op_track) == 1, "the core has an HLO ops track")
        per_op, op_flops = {}, {}
        for e in evs:
            if e.get("ph") == "X" and (e["pid"], e["tid"]) in op_track:
                per_op[e["name"]] = per_op.get(e["name"], 0.0) + e["dur"] * 1e-6
                op_flops[e["name"]] = op_flops.get(e["name"], 0.0) + e.get("args", {}).get("flops", 0.0)
        step = report["step_time_s"]
        compared = 0
        for op in report["ops"]:
            if op["occurrences"] != 1 or op["time_s"] < 0.01 * step:
                continue
            compared += 1
            got = per_op.get(op["name"], 0.0)
            check(abs(got - op["time_s"]) <= 0.005 * step,
                  f"op {op['name']}: trace {got * 1e6:.3f} us vs report {op['time_s'] * 1e6:.3f} us")
            flops = op_flops.get(op["name"], 0.0)
            check(abs(flops - op["flops"]) <= 1e-6 * max(1.0, op["flops"]),
                  f"op {op['name']}: trace args {flops:.6g} FLOPs vs report {op['flops']:.6g}")
        check(compared >= 10, f"compared {compared} ops of the layer")
        # The HBM counter: GB/s per window, never above the chip's bandwidth
        # (819 GB/s on v5e), its integral the run's HBM bytes.
        counter = sorted((e["ts"], e["args"]["value"]) for e in evs if e.get("ph") == "C" and e["name"] == "HBM GB/s")
        check(len(counter) > 10, f"an HBM counter track ({len(counter)} points)")
        check(all(v <= 819.0 * (1 + 1e-6) for _, v in counter), "HBM counter within the 819 GB/s of v5e")
        moved = sum(v * 1e9 * (t2 - t1) * 1e-6 for (t1, v), (t2, _) in zip(counter, counter[1:]))
        check(counter[-1][1] == 0, "the HBM counter ends at 0")
        check(abs(moved - report["hbm"]["bytes"]) <= 0.01 * report["hbm"]["bytes"],
              f"the HBM counter integrates to {moved:.6g} bytes, the report says {report['hbm']['bytes']:.6g}")

        # Op slices name their limiter; where the report finds an op clearly
        # limited (its limiter's use >= 70%), most of its slices' time says the same.
        names = {"MXU", "MXU weights", "VPU ALU", "VPU ld/st", "EUP", "XLU", "HBM", "VMEM", "ICI", "host link", "waiting"}
        op_slices = [e for e in evs if e.get("ph") == "X" and (e["pid"], e["tid"]) in op_track]
        check(all(e.get("args", {}).get("limiter") in names for e in op_slices),
              f"every op slice names a limiter: {sorted({str(e.get('args', {}).get('limiter')) for e in op_slices})}")
        agreed = 0
        for op in report["ops"]:
            if op["occurrences"] != 1 or op["time_s"] < 0.01 * step or op["limiter_utilization"] < 0.7:
                continue
            by = {}
            for e in op_slices:
                if e["name"] == op["name"]:
                    by[e["args"]["limiter"]] = by.get(e["args"]["limiter"], 0.0) + e["dur"]
            most = max(by, key=by.get) if by else None
            check(most == op["limiter"], f"op {op['name']}: slices say {by}, the report {op['limiter']}")
            agreed += 1
        check(agreed >= 5, f"{agreed} clearly limited ops compared")

        # The VMEM counter: the live buffers' footprint at the retirement
        # frontier; its peak is the verifier's peak VMEM of the program, it
        # never passes v5e's 128 MiB, and it ends at 0.
        lowered = json.loads(run([args.tpusim, "lower", os.path.join(src, "workloads/hlo/transformer_layer_fwd.after_optimizations.hlo"),
                                  "--chip", "v5e", "--format", "json", "-o", os.path.join(tmp, "layer.tasm")]))
        peak = lowered["verify"]["peak_vmem_bytes"]
        vmem = sorted((e["ts"], e["args"]["value"]) for e in evs if e.get("ph") == "C" and e["name"] == "VMEM live MiB")
        check(len(vmem) > 10, f"a VMEM counter track ({len(vmem)} points)")
        check(abs(max(v for _, v in vmem) * 2 ** 20 - peak) <= 1e-6 * peak,
              f"the VMEM counter peaks at {max(v for _, v in vmem):.6g} MiB, the verifier's peak is {peak / 2 ** 20:.6g} MiB")
        check(max(v for _, v in vmem) <= 128 and vmem[-1][1] == 0, "the VMEM counter stays within 128 MiB and ends at 0")

        # Many chips: the chosen chips, each core a process with an op track.
        trace8 = os.path.join(tmp, "tp8.json")
        run([args.tpusim, "run", os.path.join(src, "workloads/hlo/sharded/transformer_layer_fwd.tp8.hlo"), "--chip", "v5p",
             "--system", "2x4", "--trace", trace8, "--trace-chips", "0,5-7", "-q"])
        p = subprocess.run([sys.executable, checker, trace8], capture_output=True, text=True)
        check(p.returncode == 0, f"multi-chip trace is valid: {p.stdout.strip()}")
        procs, threads = tracks(events(trace8))
        want = sorted(f"chip{c}.core{k}" for c in (0, 5, 6, 7) for k in (0, 1)) + [f"chip{c}.links" for c in (0, 5, 6, 7)]
        check(sorted(procs.values()) == sorted(want), f"processes of chips 0,5-7 (two cores each, links): {sorted(procs.values())}")
        for pid, name in procs.items():
            if name.endswith(".core0") or name.endswith(".core1"):
                check(any(v == "HLO ops" for (p_, _), v in threads.items() if p_ == pid), f"{name} has an HLO ops track")
        # 2x4 v5p (no wraparound below a full cube): chip 5 at x=1, y=2 has links x-, y+ and y-.
        chip5 = [pid for pid, name in procs.items() if name == "chip5.links"]
        check(sorted(v for (p_, _), v in threads.items() if p_ in chip5) == ["ICI x-", "ICI y+", "ICI y-"],
              f"chip 5's link tracks: {sorted(v for (p_, _), v in threads.items() if p_ in chip5)}")

        # Link tracks over two slices, every chip traced: per axis, the link
        # slices add up to the report's link busy time (the network's per-link
        # sums), DCN egress plus ingress to its dcn row; slices name their collective.
        trace_dcn = os.path.join(tmp, "dcn.json")
        rep = json.loads(run([args.tpusim, "run", os.path.join(src, "workloads/hlo/sharded/transformer_layer_fwd.tp8.hlo"),
                              "--chip", "v5p", "--system", "2x2", "--set", "system.slices=2", "--trace", trace_dcn,
                              "--format", "json", "-q"]))
        p = subprocess.run([sys.executable, checker, trace_dcn], capture_output=True, text=True)
        check(p.returncode == 0, f"multislice trace is valid: {p.stdout.strip()}")
        evs = events(trace_dcn)
        procs, threads = tracks(evs)
        busy = {}
        link_names = set()
        for e in evs:
            if e.get("ph") == "X" and procs[e["pid"]].endswith(".links"):
                track = threads[(e["pid"], e["tid"])]
                axis = "dcn" if track.startswith("DCN") else track[4]
                busy[axis] = busy.get(axis, 0.0) + e["dur"] * 1e-6
                link_names.add(e["name"])
        want_busy = {a["axis"]: a["busy_s"] for a in rep["ici_axes"]}
        check(set(busy) == set(want_busy), f"link tracks on axes {sorted(busy)}, the report's {sorted(want_busy)}")
        for axis, b in want_busy.items():
            check(abs(busy.get(axis, 0.0) - b) <= 1e-6 * b, f"axis {axis}: link slices {busy.get(axis, 0.0):.9g} s, report {b:.9g} s")
        collective_names = {c["op"] for c in rep["collectives"]}
        check(link_names and link_names <= collective_names, f"link slices name collectives: {link_names} of {collective_names}")

        # Over the event budget, each run of one op's slices becomes one slice:
        # fewer events, the same instructions (args count them), a note says so.
        small = os.path.join(tmp, "budget.json")
        p = subprocess.run([args.tpusim, "run", os.path.join(src, "workloads/hlo/transformer_layer_fwd.after_optimizations.hlo"),
                            "--chip", "v5e", "--no-reuse", "--trace", small, "--trace-budget", "1000"],
                           capture_output=True, text=True, timeout=600)
        check(p.returncode == 0 and "over the budget of 1e+03 events" in p.stdout, f"the budget note: {p.stdout[-400:]}")
        p = subprocess.run([sys.executable, checker, small], capture_output=True, text=True)
        check(p.returncode == 0, f"the merged trace is valid: {p.stdout.strip()}")

        def unit_instructions(path):
            evs_ = events(path)
            _, threads_ = tracks(evs_)
            xs = [e for e in evs_ if e.get("ph") == "X" and threads_.get((e["pid"], e["tid"])) != "HLO ops"]
            return len(xs), sum(e.get("args", {}).get("instructions", 1) for e in xs)

        full_n, full_i = unit_instructions(trace)
        merged_n, merged_i = unit_instructions(small)
        check(merged_n * 10 < full_n, f"merging cut the unit slices {full_n} -> {merged_n}")
        check(merged_i == full_i, f"the merged slices count every instruction: {merged_i} vs {full_i}")
        bad_budget = subprocess.run([args.tpusim, "run", named_hlo(tmp), "--trace", small, "--trace-budget", "0"],
                                    capture_output=True, text=True)
        check(bad_budget.returncode == 2 and "--trace-budget: error" in bad_budget.stderr, "a zero budget is refused")

        # Op slices name the framework's op (metadata op_name).
        named = named_hlo(tmp)
        trace_named = os.path.join(tmp, "named.json")
        run([args.tpusim, "run", named, "--chip", "v5e", "--trace", trace_named, "-q"])
        evs = events(trace_named)
        procs, threads = tracks(evs)
        op_slices = [e for e in evs if e.get("ph") == "X" and threads.get((e["pid"], e["tid"])) == "HLO ops"]
        check([e["name"] for e in op_slices] == ["d"], f"one op slice, d: {[e['name'] for e in op_slices]}")
        check(all(e.get("args", {}).get("op_name") == "jit(f)/mlp/dot_general" for e in op_slices),
              f"the op slice carries its op_name: {[e.get('args') for e in op_slices]}")
        # 2 x 512^3 FLOPs.
        check(all(e.get("args", {}).get("flops") == 2 * 512 ** 3 for e in op_slices), "the op slice carries its FLOPs")

        # Symmetric mode simulates chip 0 only: other chips asked for are named in a note.
        sym = os.path.join(tmp, "sym.json")
        p = subprocess.run([args.tpusim, "run", os.path.join(src, "workloads/hlo/sharded/transformer_layer_fwd.tp8.hlo"),
                            "--chip", "v5p", "--system", "2x4", "--mode", "symmetric", "--trace", sym,
                            "--trace-chips", "0,5-6"], capture_output=True, text=True, timeout=600)
        check(p.returncode == 0 and "trace: chips 5,6 are not simulated in symmetric mode" in p.stdout,
              f"the symmetric-mode note: {p.stdout[-300:]}")
        procs, _ = tracks(events(sym))
        check(sorted(procs.values()) == ["chip0.core0", "chip0.core1", "chip0.links"], f"only chip 0 traced: {sorted(procs.values())}")

        # The checker rejects what breaks the format.
        bad = os.path.join(tmp, "bad.json")
        json.dump({"traceEvents": [
            {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "p"}},
            {"ph": "M", "name": "thread_name", "pid": 0, "tid": 0, "args": {"name": "t"}},
            {"ph": "X", "name": "a", "pid": 0, "tid": 0, "ts": 0, "dur": 10},
            {"ph": "X", "name": "b", "pid": 0, "tid": 0, "ts": 5, "dur": 10},
            {"ph": "X", "name": "c", "pid": 0, "tid": 1, "ts": 0},
            {"ph": "C", "name": "hbm", "pid": 0, "ts": 5, "args": {"GB/s": 1}},
            {"ph": "C", "name": "hbm", "pid": 0, "ts": 4, "args": {"GB/s": 2}}]}, open(bad, "w"))
        p = subprocess.run([sys.executable, checker, bad], capture_output=True, text=True)
        check(p.returncode == 1, "a broken trace fails the check")
        for words in ("overlaps 'a'", "complete event without dur", "timestamps go backwards"):
            check(words in p.stdout, f"the checker says '{words}': {p.stdout}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return exit_code("trace_test")


if __name__ == "__main__":
    sys.exit(main())
