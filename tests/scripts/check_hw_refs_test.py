#!/usr/bin/python3
"""ctest: scripts/check_hw_refs.py passes the shipped hardware references and
fails a deliberately broken fixture (bad number, unknown unit, empty source,
bad split value, a series without val rows, a split that contradicts the stated
rule, a missing column, a missing split rule).

  check_hw_refs_test.py --source .
"""
import argparse
import os
import sys
import tempfile
import unittest

HEADER = "# split-series: chip\n# split-order: size\n"
COLS = "chip,size,measured,unit,includes,source,split\n"


def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


class CheckHwRefs(unittest.TestCase):
    def test_shipped_references_pass(self):
        refs = os.path.join(SOURCE, "tests", "validation", "refs", "hw")
        files = sorted(n for n in os.listdir(refs) if n.endswith(".csv"))
        self.assertTrue(files)
        for n in files:
            self.assertEqual(check_hw_refs.check_file(os.path.join(refs, n)), [], n)
        self.assertEqual(check_hw_refs.main(["x", refs]), 0)

    def test_broken_fixture_fails(self):
        bad = os.path.join(SOURCE, "tests", "scripts", "fixtures", "hw_refs_broken", "gemm_bad.csv")
        errs = check_hw_refs.check_file(bad)
        text = "\n".join(errs)
        for needle in ("not a positive number", "unknown unit", "empty source", "is not cal or val"):
            self.assertIn(needle, text)
        self.assertEqual(check_hw_refs.main(["x", bad]), 1)

    def test_series_rules(self):
        with tempfile.TemporaryDirectory() as tmp:
            good = write(tmp, "good.csv", HEADER + COLS
                         + "v5e,1,1,us,device,src,cal\nv5e,2,2,us,device,src,val\nv6e,9,3,us,device,src,val\n")
            self.assertEqual(check_hw_refs.check_file(good), [])
            only_cal = write(tmp, "only_cal.csv", HEADER + COLS
                             + "v5e,1,1,us,device,src,cal\nv5e,2,2,us,device,src,cal\n")
            self.assertIn("needs both cal and val", "\n".join(check_hw_refs.check_file(only_cal)))
            swapped = write(tmp, "swapped.csv", HEADER + COLS
                            + "v5e,1,1,us,device,src,val\nv5e,2,2,us,device,src,cal\n")
            self.assertIn("the stated rule gives cal", "\n".join(check_hw_refs.check_file(swapped)))
            single_cal = write(tmp, "single.csv", HEADER + COLS + "v5e,1,1,us,device,src,cal\n")
            self.assertIn("single-row series must be val", "\n".join(check_hw_refs.check_file(single_cal)))
            no_source = write(tmp, "nosrc.csv", HEADER + "chip,size,measured,unit,includes,split\nv5e,1,1,us,d,val\n")
            self.assertIn("missing required columns: source", "\n".join(check_hw_refs.check_file(no_source)))
            no_rule = write(tmp, "norule.csv", COLS + "v5e,1,1,us,device,src,val\n")
            self.assertIn("split rule", "\n".join(check_hw_refs.check_file(no_rule)))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--source", required=True)
    opts, remaining = p.parse_known_args()
    SOURCE = os.path.abspath(opts.source)
    sys.path.insert(0, os.path.join(SOURCE, "scripts"))
    import check_hw_refs  # noqa: E402
    unittest.main(argv=[sys.argv[0]] + remaining)
