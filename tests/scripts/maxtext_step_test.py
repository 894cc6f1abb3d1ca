"""workloads/gen/maxtext_step.py: every default-decoder row of train_step.csv
parses, and the per-device TFLOP count equals MaxText's formula written out by
hand for one config (gpt-style 16B: emb 5120, 32 heads x 256, mlp 32768 relu,
32 layers, vocab 32768)."""
import argparse
import os
import sys
import unittest

SRC = None


class MaxTextStep(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, os.path.join(SRC, "workloads", "gen"))
        import maxtext_step
        self.m = maxtext_step
        self.rows = maxtext_step.read_rows(os.path.join(SRC, "tests", "validation", "refs", "hw", "train_step.csv"))

    def test_default_decoder_rows_parse(self):
        parsed = [r for r in self.rows if self.m.parse_spec(r["model_spec"])]
        default = [r for r in self.rows if r["model_spec"].startswith("MaxText default decoder")]
        self.assertEqual(len(parsed), len(default))
        self.assertGreater(len(parsed), 0)

    def test_formula_by_hand(self):
        d = self.m.parse_spec("emb=5120,heads=32,head_dim=256,mlp=32768 (relu),layers=32,vocab=32768")
        E, H, K, F, L, V, B, S = 5120, 32, 256, 32768, 32, 32768, 2, 2048
        params = L * (4 * E * H * K + 2 * E * F) + V * E
        want = (6 * params * S * B + 6 * H * L * K * S * S * B) / 1e12
        self.assertAlmostEqual(self.m.per_device_tflop(d, B, S), want, places=6)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--source", required=True)
    a, rest = p.parse_known_args()
    SRC = a.source
    unittest.main(argv=[sys.argv[0]] + rest)
