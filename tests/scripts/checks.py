"""Shared by the test scripts: record failed checks (each printed as it
fails) and turn them into the exit code."""
import sys

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def exit_code(name):
    """Prints '<name>: N failure(s)'; 1 if any check failed, else 0."""
    print(f"{name}: {len(failures)} failure(s)")
    return 1 if failures else 0
