#!/usr/bin/env python3
"""Plots `tpusim scale ... --format json` as an SVG (Python 3 standard library only):
step time per system size (bars, left axis, labelled with the bound) and weak-scaling
efficiency (line, right axis).

  tpusim scale model.hlo --systems 8,4x4,8x8 --format json > scale.json
  scripts/plot_scale.py scale.json scale.svg
"""
import json
import os
import sys
from xml.sax.saxutils import escape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_units import time_unit  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: plot_scale.py SCALE.json OUT.svg\n")
        return 2
    try:
        data = json.load(open(sys.argv[1]))
        rows = [r for r in data["rows"] if "error" not in r]
    except (OSError, ValueError, KeyError) as e:
        sys.stderr.write(f"{sys.argv[1]}: error: expected the JSON of `tpusim scale --format json` ({e})\n")
        return 2
    if not rows:
        sys.stderr.write(f"{sys.argv[1]}: error: no system size ran successfully\n")
        return 1
    w, h, left, right, top, bottom = 720, 400, 70, 70, 40, 60
    pw, ph = w - left - right, h - top - bottom
    factor, unit = time_unit([r["step_time_s"] for r in rows])
    tmax = max(r["step_time_s"] for r in rows) / factor * 1.1
    slot = pw / len(rows)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">'
           f'{escape(data.get("program", ""))} on {escape(data.get("chip", ""))}</text>',
           f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="black"/>',
           f'<line x1="{left + pw}" y1="{top}" x2="{left + pw}" y2="{top + ph}" stroke="black"/>',
           f'<text x="15" y="{top + ph / 2}" transform="rotate(-90 15 {top + ph / 2})" text-anchor="middle">'
           f'step time ({unit})</text>',
           f'<text x="{w - 15}" y="{top + ph / 2}" transform="rotate(90 {w - 15} {top + ph / 2})" '
           'text-anchor="middle">scaling efficiency (%)</text>']
    for k in range(5):
        y = top + ph - ph * k / 4
        out.append(f'<text x="{left - 5}" y="{y + 4}" text-anchor="end">{tmax * k / 4:.3g}</text>')
        out.append(f'<text x="{left + pw + 5}" y="{y + 4}">{30 * k:.0f}</text>')  # 0..120 %
    points = []
    for i, r in enumerate(rows):
        t = r["step_time_s"] / factor
        x = left + slot * i + slot * 0.2
        bh = ph * t / tmax
        out.append(f'<rect x="{x:.1f}" y="{top + ph - bh:.1f}" width="{slot * 0.6:.1f}" height="{bh:.1f}" '
                   'fill="#7aa6d6"/>')
        out.append(f'<text x="{x + slot * 0.3:.1f}" y="{top + ph - bh - 4:.1f}" text-anchor="middle">'
                   f'{escape(r["bound"])}</text>')
        out.append(f'<text x="{x + slot * 0.3:.1f}" y="{top + ph + 16}" text-anchor="middle">'
                   f'{escape(r["shape"])} ({r["chips"]})</text>')
        eff = 100 * r.get("scaling_efficiency", 0)
        points.append((x + slot * 0.3, top + ph - ph * min(eff, 120) / 120))
    out.append('<polyline fill="none" stroke="#d62728" stroke-width="2" points="' +
               " ".join(f"{x:.1f},{y:.1f}" for x, y in points) + '"/>')
    for x, y in points:
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="#d62728"/>')
    out.append(f'<text x="{w / 2}" y="{h - 10}" text-anchor="middle">system (chips)</text>')
    out.append("</svg>")
    open(sys.argv[2], "w").write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
