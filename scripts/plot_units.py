"""Axis units for tpusim's plots: times in s, ms, us or ns and rates with an
SI prefix, chosen so the largest value reads between 1 and 1000 (no
matplotlib offsets such as "1e12" above an axis)."""

TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"))
SI_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))


def _largest(values):
    vals = [abs(v) for v in values if v is not None]
    return max(vals) if vals else 0.0


def time_unit(values):
    """(seconds per unit, unit name) for a list of times in seconds."""
    m = _largest(values)
    for factor, name in TIME_UNITS:
        if m >= factor:
            return factor, name
    return TIME_UNITS[-1] if m > 0 else TIME_UNITS[0]


def si_unit(values, unit):
    """(factor, 'TB/s') for values in base units `unit`; unit '' gives a bare prefix."""
    m = _largest(values)
    for factor, prefix in SI_PREFIXES:
        if m >= factor:
            return factor, prefix + unit
    return 1.0, unit


def is_time(name):
    """A metric or parameter in seconds: time_s, step_time_s, *_s."""
    return name == "time_s" or name.endswith("_s")


def time_label(name, unit):
    """'step time (ms)' for 'step_time_s' in ms; 'time (us)' for 'time_s'."""
    base = name[:-2] if name.endswith("_s") else name
    return f"{base.replace('_', ' ')} ({unit})"


def plain_axes(ax):
    """No offset or scientific notation on linear axes (the units carry the scale)."""
    for axis in (ax.xaxis, ax.yaxis):
        fmt = axis.get_major_formatter()
        if hasattr(fmt, "set_useOffset"):
            fmt.set_useOffset(False)
        if hasattr(fmt, "set_scientific"):
            fmt.set_scientific(False)


def save_figure(fig, out_dir, stem, formats=("png", "svg")):
    """Writes fig as OUT_DIR/STEM.<format> for each format (SVG without a
    date, so re-runs give the same file); prints and returns the paths."""
    import os

    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for f in formats:
        path = os.path.join(out_dir, f"{stem}.{f}")
        fig.savefig(path, format=f, dpi=110, metadata={"Date": None} if f == "svg" else None)
        print(path)
        paths.append(path)
    return paths
