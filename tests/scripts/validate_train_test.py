#!/usr/bin/python3
"""ctest: scripts/validate_train.py runs rows one at a time or several at once
(--jobs) with the same report, in the rows' order; a row it cannot generate is
reported with its reason, a row tpusim rejects with tpusim's error, and --jobs
below 1 is a usage error. tpusim is replaced by a stand-in script whose step
time is a known function of the row's arguments, so the expected errors are
computed here from the CSV's measured figures.

  validate_train_test.py --source .
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

# A stand-in for `tpusim run FILE --format json -q ARGS...`: the step time is
# 1 s per chip of the --system topology (16x16 -> 256 s), plus 1 s per slice;
# with FAKE_TPUSIM_REFUSE set it fails as tpusim does on an unsupported module.
FAKE_TPUSIM = textwrap.dedent("""\
    #!/usr/bin/python3
    import json, math, os, sys
    args = sys.argv[1:]
    system = args[args.index("--system") + 1]
    if os.environ.get("FAKE_TPUSIM_REFUSE"):
        sys.stderr.write("x.hlo:1:1: error: unsupported: a stand-in refusal\\n")
        sys.exit(2)
    slices = 1
    for i, a in enumerate(args):
        if a == "--set" and args[i + 1].startswith("system.slices="):
            slices = int(args[i + 1].split("=")[1])
    chips = math.prod(int(d) for d in system.split("x"))
    print(json.dumps({"step_time_s": float(chips + slices)}))
""")


def fake_step_s(row):
    chips = 1
    for d in row["topology_per_slice"].split()[0].split("x"):
        chips *= int(d)
    return float(chips + int(row["num_slices"]))


class ValidateTrain(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.fake = os.path.join(cls.tmp.name, "tpusim")
        with open(cls.fake, "w") as f:
            f.write(FAKE_TPUSIM)
        os.chmod(cls.fake, 0o755)
        cls.rows = maxtext_step.read_rows(os.path.join(SOURCE, "tests", "validation", "refs", "hw", "train_step.csv"))
        cls.write_csv()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def pick(self):
        """Two generated rows of different slices (8B on v6e-8 and v6e-256) and a row the generator
        does not write (its model renamed to one without dimensions in the test's copy of the CSV)."""
        small = next(i for i, r in enumerate(self.rows) if r["model"] == "llama3.1-8b" and r["chips"] == "8")
        large = next(i for i, r in enumerate(self.rows) if r["model"] == "llama3.1-8b" and r["chips"] == "256")
        return [small, self.unknown, large]

    @classmethod
    def write_csv(cls):
        """The CSV with one row's model_spec naming a model MODEL_CONFIGS does not hold."""
        src = os.path.join(SOURCE, "tests", "validation", "refs", "hw", "train_step.csv")
        with open(src) as f:
            lines = f.read().splitlines(keepends=True)
        data = [k for k, line in enumerate(lines) if not line.startswith("#")]
        cls.unknown = next(i for i, r in enumerate(cls.rows) if r["model"] == "mistral-7b")
        k = data[1 + cls.unknown]  # data[0] is the header
        lines[k] = lines[k].replace("model_name=mistral-7b", "model_name=unknown-7b")
        cls.csv = os.path.join(cls.tmp.name, "train_step.csv")
        with open(cls.csv, "w") as f:
            f.writelines(lines)

    def run_script(self, *args, refuse=False):
        out = os.path.join(self.tmp.name, "out.json")
        env = dict(os.environ, FAKE_TPUSIM_REFUSE="1") if refuse else None
        p = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "validate_train.py"), self.fake,
                            "--csv", self.csv, *args, "-o", out], capture_output=True, text=True, env=env)
        if p.returncode != 0:
            return p, None
        with open(out) as f:
            return p, json.load(f)["rows"]

    def test_parallel_run_reports_the_same_rows_in_order(self):
        chosen = self.pick()
        p1, one = self.run_script("--rows", ",".join(map(str, chosen)))
        self.assertEqual(p1.returncode, 0, p1.stderr)
        p2, many = self.run_script("--rows", ",".join(map(str, chosen)), "--jobs", "3")
        self.assertEqual(p2.returncode, 0, p2.stderr)
        self.assertEqual([e["row"] for e in one], chosen)
        for e in one + many:
            e.pop("sim_wall_s", None)  # wall time differs between runs
        self.assertEqual(one, many)
        for e in one:
            r = self.rows[e["row"]]
            if e["row"] == self.unknown:
                self.assertIn("unknown-7b: its dimensions are not in MODEL_CONFIGS", e["skipped"])
                continue
            self.assertEqual(e["tpusim_s"], fake_step_s(r))
            self.assertAlmostEqual(e["measured_s"], float(r["measured"]), places=12)
            self.assertAlmostEqual(e["error"], fake_step_s(r) / float(r["measured"]) - 1, places=12)

    def test_a_row_tpusim_rejects_carries_its_error(self):
        p, out = self.run_script("--rows", str(self.pick()[0]), "--jobs", "2", refuse=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(out[0].get("failed"))
        self.assertIn("a stand-in refusal", out[0]["skipped"])

    def test_jobs_below_one_is_a_usage_error(self):
        p, _ = self.run_script("--rows", "0", "--jobs", "0")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--jobs 0", p.stderr)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    opts, remaining = ap.parse_known_args()
    SOURCE = os.path.abspath(opts.source)
    sys.path.insert(0, os.path.join(SOURCE, "workloads", "gen"))
    import maxtext_step  # noqa: E402
    unittest.main(argv=[sys.argv[0]] + remaining)
