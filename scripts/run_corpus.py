#!/usr/bin/env python3
"""Runs tpusim on every HLO file of a corpus (the shared corpus by default),
as a user would: `tpusim run FILE --chip CHIP` on one chip and, for a module
that runs on several devices, `--system auto` on a system of that many chips
(symmetric mode above 16 chips). Records per file: status, wall time, peak
RSS, step time, and writes OUT.json and OUT.md (a table plus the summary
"files run / files valid"). A file is valid when `tpusim analyze` accepts it.

Exit 1 when a valid file fails or exceeds --max-seconds.

Usage: scripts/run_corpus.py TPUSIM [--corpus DIR] [--chip v5e] [--system-chip v5p]
                              [--out out/corpus] [--max-seconds 60] [--only SUBSTRING]
                              [--loops extrapolate|full]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time


def run(cmd, timeout):
    """(returncode, stdout, stderr, wall seconds, peak RSS bytes) of one child."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return -9, out, err + f"\ntimeout after {timeout} s", time.monotonic() - start, 0
    return proc.returncode, out, err, time.monotonic() - start, None


def run_measured(cmd, timeout):
    """As run(), with the child's peak RSS from GNU time (-f %M, KiB)."""
    timer = "/usr/bin/time"
    if not os.path.exists(timer):
        return run(cmd, timeout)
    code, out, err, wall, _ = run([timer, "-f", "__rss_kib=%M"] + cmd, timeout)
    rss = None
    m = re.search(r"__rss_kib=(\d+)", err)
    if m:
        rss = int(m.group(1)) * 1024
        err = err[: m.start()] + err[m.end():]
    return code, out, err, wall, rss


def first_error(err):
    for line in err.splitlines():
        if "error" in line or "unsupported" in line or "timeout" in line:
            return line.strip()[:300]
    lines = [l for l in err.splitlines() if l.strip()]
    return lines[-1][:300] if lines else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tpusim")
    ap.add_argument("--corpus", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "refs",
                                                     "hlo-corpus", "files"))
    ap.add_argument("--chip", default="v5e")
    ap.add_argument("--system-chip", default="v5p")
    ap.add_argument("--out", default="out/corpus")
    ap.add_argument("--max-seconds", type=float, default=60.0)
    ap.add_argument("--only", default="")
    ap.add_argument("--loops", default="extrapolate", choices=["full", "extrapolate"],
                    help="tpusim --loops for every run (extrapolate: steady while loops are cut short, "
                         "within simulation.loop_tolerance of a full run)")
    a = ap.parse_args()
    if not os.path.isdir(a.corpus):
        print(f"note: no corpus at {a.corpus}; nothing run", file=sys.stderr)
        return 0
    files = sorted(f for f in os.listdir(a.corpus) if f.endswith(".hlo") and a.only in f)
    rows = []
    total_start = time.monotonic()
    for name in files:
        path = os.path.join(a.corpus, name)
        code, _, err, _, _ = run([a.tpusim, "analyze", path, "-q"], a.max_seconds * 4)
        row = {"file": name, "valid": code == 0}
        if code != 0:
            row["status"] = "invalid"
            row["error"] = first_error(err)
            rows.append(row)
            continue
        code, out, err, wall, rss = run_measured(
            [a.tpusim, "run", path, "--chip", a.chip, "--loops", a.loops, "--format", "json", "-q"],
            a.max_seconds * 4)
        row.update({"status": "ok" if code == 0 else "fail", "wall_s": wall, "rss_bytes": rss})
        if code == 0:
            j = json.loads(out)
            row["step_time_s"] = j["step_time_s"]
            row["reused_ops"] = len(j.get("reused", []))
        else:
            row["error"] = first_error(err)
        m = re.search(r"the module runs on (\d+) devices", err)
        devices = int(m.group(1)) if m else 1
        row["devices"] = devices
        if devices > 1 and code == 0:
            cmd = [a.tpusim, "run", path, "--chip", a.system_chip, "--system", "auto", "--loops", a.loops,
                   "--format", "json", "-q"]
            if devices > 16:
                cmd += ["--mode", "symmetric"]
            scode, sout, serr, swall, srss = run_measured(cmd, a.max_seconds * 4)
            row["system"] = {"status": "ok" if scode == 0 else "fail", "wall_s": swall, "rss_bytes": srss,
                             "chip": a.system_chip}
            if scode == 0:
                sj = json.loads(sout)
                row["system"].update({"step_time_s": sj["step_time_s"], "topology": sj.get("system", ""),
                                      "mode": sj.get("mode", "")})
            else:
                row["system"]["error"] = first_error(serr)
        rows.append(row)
        print(f"{row['status']:7} {row.get('wall_s', 0):7.2f} s  {name}", file=sys.stderr)
    total_s = time.monotonic() - total_start
    valid = [r for r in rows if r["valid"]]
    ran = [r for r in valid if r["status"] == "ok" and r.get("system", {}).get("status", "ok") == "ok"]
    slow = [r for r in valid if max(r.get("wall_s", 0), r.get("system", {}).get("wall_s", 0)) > a.max_seconds]
    summary = {"files": len(rows), "valid": len(valid), "run": len(ran), "slow": len(slow), "total_wall_s": total_s,
               "chip": a.chip, "system_chip": a.system_chip, "loops": a.loops}
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump({"summary": summary, "rows": rows}, f, indent=1)
    with open(a.out + ".md", "w") as f:
        f.write(f"{len(ran)} of {len(valid)} valid files run ({len(rows)} files) on {a.chip}; modules on several "
                f"devices also on a {a.system_chip} system (--system auto); --loops {a.loops}; {total_s:.0f} s in all.\n\n")
        f.write("| file | status | wall s | peak RSS MiB | step time us | system |\n| --- | --- | --- | --- | --- | --- |\n")
        for r in rows:
            rss = r.get("rss_bytes")
            step = f"{r['step_time_s'] * 1e6:.1f}" if "step_time_s" in r else r.get("error", "")
            sysd = r.get("system")
            sys_text = ""
            if sysd:
                sys_text = f"{sysd['status']} {sysd.get('topology', '')} {sysd['wall_s']:.1f} s"
                sys_text += f" {sysd['step_time_s'] * 1e6:.1f} us" if "step_time_s" in sysd else " " + sysd.get("error", "")
            rss_text = "" if rss is None else f"{rss / 2**20:.0f}"
            f.write(f"| {r['file']} | {r['status']} | {r.get('wall_s', 0):.2f} | {rss_text} | {step} | {sys_text} |\n")
    print(f"{len(ran)} of {len(valid)} valid files run ({len(rows)} files), {len(slow)} over {a.max_seconds:.0f} s, "
          f"{total_s:.0f} s in all; wrote {a.out}.json and {a.out}.md")
    return 0 if len(ran) == len(valid) and not slow else 1


if __name__ == "__main__":
    sys.exit(main())
