#!/usr/bin/python3
"""ctest: scripts/growth_fit.py's log-log least-squares fit recovers the
exponent of synthetic power laws whose exponent is known by construction
(y = a * x**k, exactly and with a deterministic multiplicative wobble), and
rejects input it cannot fit.

  growth_fit_test.py --source .
"""
import argparse
import math
import os
import sys
import unittest


class FitPowerLaw(unittest.TestCase):
    def test_exact_power_laws(self):
        xs = [1, 8, 64, 256, 4096]
        for k, a in ((1.0, 0.25), (2.0, 3e-6), (0.5, 7.0), (0.0, 1.5), (-1.0, 10.0)):
            slope, a_fit, r2 = growth_fit.fit_power_law(xs, [a * x ** k for x in xs])
            self.assertAlmostEqual(slope, k, places=9)
            self.assertAlmostEqual(a_fit / a, 1.0, places=9)
            self.assertAlmostEqual(r2, 1.0, places=9)

    def test_noise_that_averages_out(self):
        # A +/-10% wobble alternating around the line: log(1.1) and log(0.9)
        # do not cancel exactly, so the slope moves a little, r2 drops below 1.
        xs = [10_000 * 2 ** i for i in range(6)]
        ys = [2e-6 * x * (1.1 if i % 2 == 0 else 0.9) for i, x in enumerate(xs)]
        slope, _, r2 = growth_fit.fit_power_law(xs, ys)
        self.assertLess(abs(slope - 1.0), 0.05)
        self.assertLess(r2, 1.0)
        self.assertGreater(r2, 0.99)

    def test_linear_plus_constant_is_sublinear(self):
        # wall = c + b*n (a fixed start-up cost): the fitted slope lies below 1
        # and rises towards 1 as the constant becomes negligible.
        small = growth_fit.fit_power_law([1, 2, 4, 8], [1.0 + n for n in [1, 2, 4, 8]])[0]
        large = growth_fit.fit_power_law([1000, 2000, 4000, 8000], [1.0 + n for n in [1000, 2000, 4000, 8000]])[0]
        self.assertLess(small, large)
        self.assertLess(large, 1.0)
        self.assertGreater(large, 0.99)

    def test_two_points_give_the_exact_exponent(self):
        slope, _, _ = growth_fit.fit_power_law([100, 1000], [1.0, 100.0])
        self.assertAlmostEqual(slope, 2.0, places=12)
        self.assertAlmostEqual(math.log10(100.0) / math.log10(1000 / 100), slope, places=12)

    def test_rejects_unfittable_input(self):
        for xs, ys in (([1], [1]), ([4, 4, 4], [1, 2, 3]), ([0, 1], [1, 2]), ([1, 2], [1, -2]), ([1, 2], [1])):
            with self.assertRaises(ValueError):
                growth_fit.fit_power_law(xs, ys)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--source", required=True)
    opts, remaining = p.parse_known_args()
    sys.path.insert(0, os.path.join(opts.source, "scripts"))
    import growth_fit  # noqa: E402
    unittest.main(argv=[sys.argv[0]] + remaining)
