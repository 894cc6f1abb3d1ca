#!/usr/bin/env python3
"""Cost growth: the exponent of a power law fitted to measured points.

fit_power_law(xs, ys) fits log(y) = log(a) + slope * log(x) by ordinary least
squares and returns (slope, a, r2). A slope of 1 means the cost grows linearly
with the size, 2 quadratically; scripts/bench_table.py prints it beside the
slope the cost model predicts. Plain Python (no numpy): Debian's python3 only.
"""
import math


def fit_power_law(xs, ys):
    """Least-squares line through (log x, log y): returns (slope, a, r2) with
    y ~ a * x**slope; r2 is the coefficient of determination in log space
    (1.0 when all points lie on one line). Needs two or more distinct
    positive x and positive y."""
    if len(xs) != len(ys):
        raise ValueError("xs and ys differ in length")
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys)]
    if any(x <= 0 for x in xs) or any(y <= 0 for y in ys):
        raise ValueError("sizes and costs must be positive")
    n = len(pts)
    if n < 2 or len({p[0] for p in pts}) < 2:
        raise ValueError("need at least two distinct sizes")
    mx = sum(p[0] for p in pts) / n
    my = sum(p[1] for p in pts) / n
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    sxy = sum((p[0] - mx) * (p[1] - my) for p in pts)
    slope = sxy / sxx
    intercept = my - slope * mx
    ss_tot = sum((p[1] - my) ** 2 for p in pts)
    ss_res = sum((p[1] - (intercept + slope * p[0])) ** 2 for p in pts)
    # A flat series (slope 0) has no variance to explain: it fits exactly.
    r2 = 1.0 if ss_tot <= 1e-18 else 1.0 - ss_res / ss_tot
    return slope, math.exp(intercept), r2
