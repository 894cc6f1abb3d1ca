#!/usr/bin/env python3
"""Runs the examples of README.md and docs/*.md that show tpusim output and
compares what they print with what the code prints now.

An example is a fenced block whose lines start with "$ " (commands) followed
by their output. Commands run with bash in a scratch directory that links the
repository's top-level folders (so workloads/..., configs/... resolve and
generated files stay out of the tree), with `tpusim` on PATH as the binary
under test. Blocks run in file order; a block may use files an earlier block
of the same file wrote.

Matching, per command: each shown output line (a line "..." or "[...]" elides
any number of lines, "..." inside a line elides text and its numbers are then
not compared; a trailing "(exit N)" is the doc's note) must appear, in order, in the actual output with the
same text once numbers are masked; each number then agrees within
TOLERANCE relative (or ABS_TOLERANCE absolute, for figures printed near 0).
Wall-clock figures ("8.1 s wall") are not compared.

A block is skipped (and listed) when a line `<!-- check-docs: skip REASON -->`
precedes it, when it shows a usage line ("[--format json|csv]") or when a
command names an input file that does not exist; `--only FILE` limits the run.

`--update` rewrites each shown line whose numbers differ with the line the
code prints now (lines that are no longer printed stay, and still fail):
re-run it after a model change, then read the diff and the prose around it.

Exit 0 when every checked example matches, 1 otherwise (each difference
named FILE:LINE), 2 on bad usage. Python standard library only.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

TOLERANCE = 0.01       # 1% relative: cost-model rounding, not behaviour changes
ABS_TOLERANCE = 0.0015  # for figures printed with three decimals near zero
TIMEOUT_S = 900

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
WALL = re.compile(r"[-+]?\d+(?:\.\d+)?\s*s wall")
SKIP = re.compile(r"<!--\s*check-docs:\s*skip\b(.*?)-->")


class Block:
    def __init__(self, path, line):
        self.path = path
        self.line = line       # line of the opening fence
        self.commands = []     # [(line, command, [(line, expected text)])]
        self.skip = None


def blocks_of(path):
    """Fenced blocks that contain "$ " commands."""
    out = []
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    pending_skip = None
    while i < len(lines):
        m = SKIP.search(lines[i])
        if m:
            pending_skip = m.group(1).strip() or "marked"
        if lines[i].startswith("```"):
            b = Block(path, i + 1)
            b.skip = pending_skip
            pending_skip = None
            i += 1
            cmd = None
            while i < len(lines) and not lines[i].startswith("```"):
                text = lines[i]
                if text.startswith("$ "):
                    command = text[2:]
                    start = i + 1
                    while command.endswith("\\") and i + 1 < len(lines):
                        i += 1
                        command = command[:-1] + " " + lines[i].strip()
                    cmd = (start, command, [])
                    b.commands.append(cmd)
                elif cmd is not None:
                    cmd[2].append((i + 1, text))
                i += 1
            if b.commands:
                out.append(b)
        elif lines[i].strip() and not SKIP.search(lines[i]):
            pending_skip = None if not lines[i].startswith("<!--") else pending_skip
        i += 1
    return out


EXIT_NOTE = re.compile(r"\s+\(exit \d+\)\s*$")  # "(exit 1)": the doc's annotation, not output


def mask(text):
    text = WALL.sub("<wall>", text)
    return " ".join(NUMBER.sub("#", text).split())


def pattern(text):
    """A shown line as a regex over masked output: "..." inside it elides text."""
    parts = mask(EXIT_NOTE.sub("", text)).split("...")
    return re.compile("^" + ".*".join(re.escape(p) for p in parts) + "$")


def numbers(text):
    return [float(x) for x in NUMBER.findall(WALL.sub("", text))]


def close(a, b):
    return abs(a - b) <= max(ABS_TOLERANCE, TOLERANCE * max(abs(a), abs(b)))


def agree(shown, printed):
    """The first number that differs, as (shown, printed), or None."""
    for x, y in zip(numbers(EXIT_NOTE.sub("", shown)), numbers(printed)):
        if not close(x, y):
            return x, y
    return None


def compare(expected, actual, updates=None):
    """Differences between shown lines and actual output, as (line, message).
    `updates` (a dict), when given, receives line -> the printed line for
    each shown line whose numbers differ."""
    problems = []
    got = actual.split("\n")
    at = 0
    for line, text in expected:
        text = text.replace("\u2026", "...")  # "…" elides as "..." does
        if not text.strip() or text.strip() in ("...", "[...]"):
            continue
        want = pattern(text)
        same = [j for j in range(at, len(got)) if want.match(mask(got[j]))]
        if not same:
            problems.append((line, "not printed (or printed out of order): " + text.strip()))
            continue
        # Names hold digits too (dot.16, dot.17): the first line whose numbers agree.
        elided = "..." in text  # the numbers no longer line up
        fit = [j for j in same if elided or agree(text, got[j]) is None]
        if fit:
            at = fit[0] + 1
            continue
        x, y = agree(text, got[same[0]])
        if updates is not None:
            updates[line] = got[same[0]].rstrip() + (EXIT_NOTE.search(text).group(0) if EXIT_NOTE.search(text) else "")
        problems.append((line, "shows {:g} but the code prints {:g}: {}".format(x, y, got[same[0]].strip())))
        at = same[0] + 1
    return problems


def missing_input(command, root, scratch):
    """An input path the command names that exists nowhere (a placeholder)."""
    for word in command.split():
        word = word.strip("'\"")
        if "{chips}" in word or word.startswith("-") or "=" in word:
            continue
        if re.search(r"\.(hlo|txt|tasm|yaml|jsonl)$", word) and not word.startswith("plots/"):
            if not (os.path.exists(os.path.join(scratch, word)) or os.path.exists(os.path.join(root, word))):
                return word
    return None


def writes(command):
    """Files the command writes (-o F, > F, a sweep's SPEC.jsonl), which later commands may read."""
    out = [w.strip("'\"") for w in re.findall(r"(?:-o|>)\s*(\S+)", command)]
    for spec in re.findall(r"tpusim sweep (\S+\.yaml)", command):
        out.append(os.path.splitext(os.path.basename(spec))[0] + ".jsonl")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tpusim", required=True, help="the tpusim binary")
    ap.add_argument("--source", required=True, help="the repository root")
    ap.add_argument("--only", action="append", help="check only this file (relative to --source); repeatable")
    ap.add_argument("--list", action="store_true", help="list the examples and whether they run")
    ap.add_argument("--update", action="store_true",
                    help="rewrite shown lines whose numbers differ with what the code prints now")
    args = ap.parse_args()
    root = os.path.abspath(args.source)
    binary = os.path.abspath(args.tpusim)
    if not os.access(binary, os.X_OK):
        print("check_docs: {}: not an executable".format(binary), file=sys.stderr)
        return 2
    files = args.only or ["README.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))
    bindir = tempfile.mkdtemp(prefix="check_docs_bin_")
    os.symlink(binary, os.path.join(bindir, "tpusim"))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    failures = 0
    checked = 0
    try:
        for rel in files:
            scratch = tempfile.mkdtemp(prefix="check_docs_")
            for name in os.listdir(root):
                if name in ("workloads", "configs", "scripts", "docs", "tests"):
                    os.symlink(os.path.join(root, name), os.path.join(scratch, name))
            made = set()
            updates = {}
            for b in blocks_of(os.path.join(root, rel)):
                where = "{}:{}".format(rel, b.line)
                reason = b.skip
                if reason is None:
                    for _, command, _ in b.commands:
                        if "[" in command and "|" in command:
                            reason = "a usage line, not a run"
                            break
                        made.update(writes(command))
                        gone = missing_input(command, root, scratch)
                        if gone and gone not in made:
                            reason = "input {} does not exist".format(gone)
                            break
                if not any(c.startswith("tpusim") or " tpusim " in c for _, c, _ in b.commands):
                    reason = reason or "no tpusim command"
                if reason is not None or args.list:
                    print("{}: {}".format(where, "skipped: " + reason if reason else "runs"))
                    if reason is not None or args.list:
                        continue
                for line, command, expected in b.commands:
                    r = subprocess.run(["bash", "-c", command], cwd=scratch, env=env, capture_output=True,
                                       text=True, timeout=TIMEOUT_S)
                    shown = r.stdout + r.stderr
                    problems = compare(expected, shown, updates if args.update else None)
                    checked += 1
                    for pl, msg in problems:
                        print("{}:{}: {}".format(rel, pl, msg))
                    if problems:
                        failures += 1
                        print("{}:{}: `{}` differs (exit {})".format(rel, line, command, r.returncode))
            shutil.rmtree(scratch, ignore_errors=True)
            if updates:
                path = os.path.join(root, rel)
                lines = open(path, encoding="utf-8").read().split("\n")
                for line, text in updates.items():
                    lines[line - 1] = text
                with open(path, "w", encoding="utf-8") as f:
                    f.write("\n".join(lines))
                print("{}: {} lines updated".format(rel, len(updates)))
    finally:
        shutil.rmtree(bindir, ignore_errors=True)
    if not args.list:
        print("check_docs: {} commands checked, {} differ (tolerance {:g}% relative)".format(
            checked, failures, TOLERANCE * 100))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
