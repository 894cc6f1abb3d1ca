#!/usr/bin/env python3
"""Checks a trace file against the Chrome trace event format (the JSON that
chrome://tracing and ui.perfetto.dev read), as `tpusim run --trace` writes it:

- the document is {"traceEvents": [...]} or a bare list of events;
- every event has a phase `ph`; complete events ("X") have name, ts, dur >= 0,
  pid and tid; metadata events ("M") name a process or thread in args.name;
  counter events ("C") have name, ts, pid and numeric args;
- on every track (pid, tid), complete slices nest properly: a slice that
  starts inside another ends inside it too;
- counters are monotonic in time per (pid, name);
- every (pid, tid) with slices is named by a thread_name event, every pid by
  a process_name event.

Prints one line per problem and exits 1 if there is any, 2 if the file cannot
be read as JSON.

  scripts/check_trace.py trace.json
"""
import json
import sys

# ts and dur are microseconds printed with 6 decimals each: their sum may pass
# the next slice's ts by a unit or two in the last place.
EPS_US = 1e-5


def problems_of(doc):
    out = []
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        return ["the document is neither {\"traceEvents\": [...]} nor a list of events"]
    named_threads, named_processes = set(), set()
    slices, counters = {}, {}
    for i, e in enumerate(events):
        where = f"event {i}"
        if not isinstance(e, dict) or "ph" not in e:
            out.append(f"{where}: not an object with a phase 'ph'")
            continue
        ph = e["ph"]
        if ph == "X":
            missing = [k for k in ("name", "ts", "dur", "pid", "tid") if k not in e]
            if missing:
                out.append(f"{where}: complete event without {', '.join(missing)}")
                continue
            if not isinstance(e["ts"], (int, float)) or not isinstance(e["dur"], (int, float)) or e["dur"] < 0:
                out.append(f"{where} ({e['name']}): ts and dur must be numbers, dur >= 0")
                continue
            slices.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"], e["name"], i))
        elif ph == "M":
            if e.get("name") not in ("process_name", "thread_name", "process_sort_index", "thread_sort_index"):
                out.append(f"{where}: metadata event '{e.get('name')}' is not one the format defines")
                continue
            if e["name"].endswith("_name") and not isinstance(e.get("args", {}).get("name"), str):
                out.append(f"{where}: {e['name']} without args.name")
                continue
            if e["name"] == "thread_name":
                named_threads.add((e.get("pid"), e.get("tid")))
            elif e["name"] == "process_name":
                named_processes.add(e.get("pid"))
        elif ph == "C":
            missing = [k for k in ("name", "ts", "pid", "args") if k not in e]
            if missing:
                out.append(f"{where}: counter event without {', '.join(missing)}")
                continue
            if not isinstance(e["args"], dict) or not all(isinstance(v, (int, float)) for v in e["args"].values()):
                out.append(f"{where} ({e['name']}): counter args must be numbers")
                continue
            counters.setdefault((e["pid"], e["name"]), []).append((e["ts"], i))
        else:
            out.append(f"{where}: phase '{ph}' is not one tpusim writes (X, M, C)")
    for (pid, tid), ss in sorted(slices.items(), key=lambda kv: str(kv[0])):
        if (pid, tid) not in named_threads:
            out.append(f"track pid {pid} tid {tid}: slices but no thread_name")
        if pid not in named_processes:
            out.append(f"pid {pid}: slices but no process_name")
        stack = []
        for start, end, name, i in sorted(ss, key=lambda s: (s[0], -s[1])):
            while stack and start >= stack[-1][1] - EPS_US:
                stack.pop()
            if stack and end > stack[-1][1] + EPS_US:
                out.append(f"track pid {pid} tid {tid}: slice '{name}' (event {i}, {start:.3f}..{end:.3f} us) "
                           f"overlaps '{stack[-1][2]}' ({stack[-1][0]:.3f}..{stack[-1][1]:.3f} us) without nesting")
                continue
            stack.append((start, end, name))
    for (pid, name), cs in counters.items():
        ts = [t for t, _ in cs]
        if any(b < a for a, b in zip(ts, ts[1:])):
            out.append(f"counter '{name}' of pid {pid}: timestamps go backwards")
    return out


def main(argv):
    if len(argv) != 1:
        sys.stderr.write("usage: check_trace.py TRACE.json\n")
        return 2
    try:
        with open(argv[0], encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.stderr.write(f"{argv[0]}: error: cannot read the trace as JSON: {e}\n")
        return 2
    problems = problems_of(doc)
    for p in problems:
        print(f"{argv[0]}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
