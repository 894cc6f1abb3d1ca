#!/usr/bin/env python3
"""Checks the hardware reference CSVs (tests/validation/refs/hw/*.csv).

Every CSV must carry:
  - leading '#' comment lines, among them '# split-series: a,b' and '# split-order: x,y'
    (columns; '@flops' in split-order means M*N*K);
  - the columns chip, measured, unit, includes, source, split;
  - per row: a chip, a positive number in `measured`, a known unit, non-empty `includes` and
    `source`, split in {cal, val};
  - per series (rows sharing the split-series columns): cal and val rows, except a series of a
    single row, which must be val;
  - the split the stated rule gives: sort the series by split-order, even positions cal, odd val.

Usage: check_hw_refs.py [DIR_OR_CSV ...]   (default: tests/validation/refs/hw next to this script)
Exit status 0 when every file passes, 1 otherwise. Python 3 standard library only.
"""
import csv
import os
import sys

REQUIRED = ["chip", "measured", "unit", "includes", "source", "split"]
KNOWN_UNITS = {"us", "ms", "s", "s/step", "GB/s", "TFLOP/s", "TFLOP/s/chip", "tokens/s"}
KNOWN_CHIPS = {"v2", "v3", "v4", "v5e", "v5p", "v6e", "v7"}


def _num(text):
    try:
        return float(text)
    except ValueError:
        return None


def _order_key(row, order):
    key = []
    for col in order:
        if col == "@flops":
            key.append((0, float(row["M"]) * float(row["N"]) * float(row["K"]), ""))
            continue
        val = row[col]
        num = _num(val)
        key.append((0, num, "") if num is not None else (1, 0.0, val))
    return key


def check_file(path):
    errors = []
    series_cols = order_cols = None
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    body = []
    for line in lines:
        if line.startswith("#"):
            text = line[1:].strip()
            if text.startswith("split-series:"):
                series_cols = [c.strip() for c in text.split(":", 1)[1].split(",") if c.strip()]
            elif text.startswith("split-order:"):
                order_cols = [c.strip() for c in text.split(":", 1)[1].split(",") if c.strip()]
            continue
        if line.strip():
            body.append(line)
    if series_cols is None or order_cols is None:
        errors.append("missing '# split-series:' or '# split-order:' header line (the split rule)")
    if not body:
        return errors + ["no header row / no data"]
    reader = csv.DictReader(body)
    cols = reader.fieldnames or []
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        return errors + [f"missing required columns: {', '.join(missing)}"]
    for c in (series_cols or []) + [c for c in (order_cols or []) if c != "@flops"]:
        if c not in cols:
            errors.append(f"split rule names unknown column '{c}'")
    if "@flops" in (order_cols or []) and not all(c in cols for c in ("M", "N", "K")):
        errors.append("split-order uses @flops but M, N, K are not all columns")
    if errors:
        return errors
    rows = list(reader)
    if not rows:
        return ["no data rows"]
    for i, row in enumerate(rows, start=1):
        where = f"row {i}"
        if None in row or any(v is None for v in row.values()):
            errors.append(f"{where}: wrong number of fields")
            continue
        if row["chip"] not in KNOWN_CHIPS:
            errors.append(f"{where}: unknown chip '{row['chip']}'")
        val = _num(row["measured"])
        if val is None or not val > 0:
            errors.append(f"{where}: measured '{row['measured']}' is not a positive number")
        if row["unit"] not in KNOWN_UNITS:
            errors.append(f"{where}: unknown unit '{row['unit']}'")
        for c in ("includes", "source"):
            if not row[c].strip():
                errors.append(f"{where}: empty {c}")
        if row["split"] not in ("cal", "val"):
            errors.append(f"{where}: split '{row['split']}' is not cal or val")
        for c in order_cols:
            if c in ("M", "N", "K") or c == "@flops":
                for d in ("M", "N", "K"):
                    if _num(row[d]) is None:
                        errors.append(f"{where}: {d} '{row[d]}' is not a number")
                break
    if errors:
        return errors
    series = {}
    for i, row in enumerate(rows, start=1):
        series.setdefault(tuple(row[c] for c in series_cols), []).append((i, row))
    for key, members in series.items():
        name = ",".join(key)
        splits = {r["split"] for _, r in members}
        if len(members) == 1:
            if splits != {"val"}:
                errors.append(f"series {name}: a single-row series must be val")
            continue
        if splits != {"cal", "val"}:
            errors.append(f"series {name}: needs both cal and val rows (has {sorted(splits)})")
        ordered = sorted(members, key=lambda m: _order_key(m[1], order_cols))
        for pos, (i, row) in enumerate(ordered):
            want = "cal" if pos % 2 == 0 else "val"
            if row["split"] != want:
                errors.append(f"row {i} (series {name}): split {row['split']}, the stated rule gives {want}")
    return errors


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    targets = argv[1:] or [os.path.join(here, "..", "tests", "validation", "refs", "hw")]
    files = []
    for t in targets:
        if os.path.isdir(t):
            files += sorted(os.path.join(t, n) for n in os.listdir(t) if n.endswith(".csv"))
        else:
            files.append(t)
    if not files:
        print("check_hw_refs: no CSV files found", file=sys.stderr)
        return 1
    failed = 0
    for path in files:
        errs = check_file(path)
        if errs:
            failed += 1
            print(f"FAIL {path}")
            for e in errs:
                print(f"  {e}")
        else:
            print(f"ok   {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
