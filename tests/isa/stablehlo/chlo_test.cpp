// chlo ops XLA expands into elementwise sequences (isa/stablehlo/chlo.h).
// Each expected count is derived by hand from the StableHLO project's chlo
// legalization (ChloLegalizeToStablehlo.cpp and ChloDecompositionPatterns*.td
// at the commit named in tests/isa/stablehlo/data/README.md), counting the
// ops of its formula: every elementwise op is one FLOP per element, except
// the transcendental ones (log, log-plus-one, exponential,
// exponential-minus-one, sqrt, atan2, sine, cosine), one transcendental
// each; constants are free.
#include <gtest/gtest.h>

#include "isa/hlo/analysis.h"
#include "isa/stablehlo/stablehlo.h"

namespace tpusim::stablehlo {
namespace {

struct Counts {
  double flops = 0, transcendentals = 0;
};

Counts count(const std::string& op, const std::string& type = "f32", int operands = 1) {
  const std::string t = "tensor<4x8x" + type + ">";
  std::string args = "%x: " + t, uses = "%x";
  if (operands == 2) args += ", %y: " + t, uses += ", %y";
  const std::string mlir = "module @m {\n  func.func @main(" + args + ") -> " + t + " {\n    %0 = chlo." + op + " " + uses +
                           " : " + (operands == 2 ? "(" + t + ", " + t + ")" : t) + " -> " + t + "\n    return %0 : " + t +
                           "\n  }\n}\n";
  const auto parsed = parse_stablehlo(mlir, "chlo.mlir");
  EXPECT_TRUE(parsed.ok()) << op << ": " << format_all(parsed.errors());
  if (!parsed.ok()) return {};
  const auto r = hlo::roofline(*parsed.modules.at(0).value(), hlo::RooflineRates::example_chip());
  constexpr double kElems = 4 * 8;
  return {r.total.flops / kElems, r.total.transcendentals / kElems};
}

void expect(const std::string& op, double flops, double transcendentals, const std::string& type = "f32", int operands = 1) {
  const Counts c = count(op, type, operands);
  EXPECT_DOUBLE_EQ(c.flops, flops) << op << " " << type;
  EXPECT_DOUBLE_EQ(c.transcendentals, transcendentals) << op << " " << type;
}

TEST(StableHloChlo, InverseTrigonometricAndHyperbolic) {
  // asin: 2 * atan2(x, 1 + sqrt((1 - x) * (1 + x))): subtract, add, multiply, add, add; sqrt, atan2.
  expect("asin", 5, 2);
  // acos: atan2(sqrt((1 - x) * (1 + x)), x): subtract, add, multiply; sqrt, atan2.
  expect("acos", 3, 2);
  // atan: atan2(x, 1).
  expect("atan", 0, 1);
  // atanh: |x| > 1 ? nan : (log1p(x) - log1p(-x)) * 0.5: abs, compare, negate, subtract, multiply, select; log1p x2.
  expect("atanh", 6, 2);
  // acosh: x >= max/2 ? log(2) + log(x) : log1p(sqrt(x - 1) * (sqrt(x + 1) + sqrt(x - 1))):
  // divide, compare, add, subtract, add, add, multiply, select; log x2, sqrt x2, log1p.
  expect("acosh", 8, 5);
  // asinh: sign(x) * (|x| >= sqrt(max) ? log(2) + log|x| : log1p(|x| + x^2 / (1 + sqrt(1 + x^2)))):
  // sign, abs, compare, add, multiply, add, add, divide, add, select, multiply; sqrt x2, log x2, log1p.
  expect("asinh", 11, 5);
  // Same ops in bf16 (no conversion to f32 for these).
  expect("asin", 5, 2, "bf16");
}

TEST(StableHloChlo, CoshSinh) {
  // cosh: exp(x + log(1/2)) + exp(log(1/2) - x): add, subtract, add; log, exp x2.
  expect("cosh", 3, 3);
  // sinh: |x| < 1 ? (e + e / (e + 1)) / 2 with e = expm1(x) : exp(x + log(1/2)) - exp(log(1/2) - x):
  // large: add, subtract, subtract (log, exp x2); small: add, divide, add, multiply (expm1);
  // abs, compare, select.
  expect("sinh", 10, 4);
  // bf16 and f16 are converted to f32 and back: two more elementwise ops.
  expect("cosh", 5, 3, "bf16");
  expect("sinh", 12, 4, "f16");
}

TEST(StableHloChlo, ErrorFunctions) {
  // erfc (f32), three parts:
  //  |x| >= 1: x*x, negate, abs, 1/x^2, 1/|x|, multiply, compare (7); P: 9 coefficients, 8 multiply-adds (16);
  //  R: 8 coefficients (14); select, multiply, compare, select, compare, subtract, select (7); exp. = 44
  //  |x| < 1: x*x, T: 7 coefficients (12), multiply = 14
  //  1 - erf, abs, compare, select = 4
  expect("erfc", 44 + 14 + 4, 1);
  // erf_inv (f32): negate, multiply, negate, compare, subtract, subtract, select (7); the first coefficient's
  // select (1); 8 x (select, multiply, add) (24); multiply, abs, compare, multiply, select (5); log1p, sqrt.
  expect("erf_inv", 7 + 1 + 24 + 5, 2);
  expect("erf_inv", 37 + 2, 2, "bf16");
  // erfc (f64), Cephes' other polynomials:
  //  |x| >= 1: x*x, negate, abs (3); P (9 coefficients: 16) / Q (9: 16) with a multiply and a divide (2);
  //  R (6: 10) / S (7: 12) with a multiply and a divide (2); compare, select, compare, select, compare,
  //  subtract, select (7); exp. = 68
  //  |x| < 1: x*x, T (5: 8), multiply, U (6: 10), divide = 21
  //  1 - erf, abs, compare, select = 4
  expect("erfc", 68 + 21 + 4, 1, "f64");
  // erf_inv (f64): negate, multiply, negate, compare x2, subtract, select, subtract, select (9); w's
  // regions select 2 coefficients each for the first 17 (the first: 2; 16 more with multiply and add: 64),
  // 1 for the next 2 plus multiply, add and a select keeping p (8), none for the last 4 (multiply, add,
  // select: 12); multiply, abs, compare, multiply, select (5); log1p, sqrt.
  expect("erf_inv", 9 + 2 + 64 + 8 + 12 + 5, 2, "f64");
}

TEST(StableHloChlo, GammaFunctions) {
  // lgamma (f32): compare, negate, subtract, select (4); 8 x (add, divide, add) (24); t: add; log(t): divide,
  // add (log1p); r: divide, add, subtract, multiply; log(a) (log) and two adds; reflection: abs, floor,
  // subtract, compare, subtract, select, multiply (sine, log), subtract, subtract, is-finite, negate, select;
  // select; is_inf: abs, compare; select.
  expect("lgamma", 4 + 24 + 1 + 2 + 4 + 2 + 7 + 5 + 1 + 2 + 1, 4);
  // digamma (f32): compare, negate, subtract, select (4); 8 x (add, multiply, divide, subtract, divide, add) (48);
  // t: add; log(t): divide, add (log1p); divide, divide, add, subtract; reduced x: add, floor, abs, add;
  // multiply (cosine, sine), multiply, divide, subtract; select; compare, floor, compare, and, select.
  expect("digamma", 4 + 48 + 1 + 2 + 4 + 4 + 4 + 1 + 5, 3);
  expect("lgamma", 53 + 2, 4, "bf16");
}

TEST(StableHloChlo, BesselI1e) {
  // |x|, |x|/2 - 2 (multiply, subtract); Chebyshev series A: 3 ops per term, then subtract and multiply;
  // times |x|; 32/|x| - 2 (divide, subtract); series B; divide by sqrt|x|; compare, select, sign, multiply.
  // f32: A has 17 terms, B 7.
  expect("bessel_i1e", 1 + 2 + (17 * 3 + 2) + 1 + 2 + (7 * 3 + 2) + 1 + 4, 1);
  // f64: 29 and 25 terms.
  expect("bessel_i1e", 1 + 2 + (29 * 3 + 2) + 1 + 2 + (25 * 3 + 2) + 1 + 4, 1, "f64");
  // bf16 through f32.
  expect("bessel_i1e", 87 + 2, 1, "bf16");
}

TEST(StableHloChlo, NextAfter) {
  // On the bit patterns: bitcast x2, compare x2 (nan), or, bitcast (nan), and x2 (magnitudes), compare
  // (equal), compare x2 (zeros), and x2 (signs), or, compare, compare, or, select, add, select x2,
  // select, select, bitcast back: 24 elementwise ops, no transcendental.
  expect("next_after", 24, 0, "f32", 2);
}

TEST(StableHloChlo, UnsupportedElementTypesAreErrorsAtTheOp) {
  const std::string mlir = R"(module @m {
  func.func @main(%x: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
    %0 = chlo.asin %x : tensor<4xcomplex<f32>> -> tensor<4xcomplex<f32>>
    return %0 : tensor<4xcomplex<f32>>
  }
})";
  const auto parsed = parse_stablehlo(mlir, "chlo.mlir");
  ASSERT_FALSE(parsed.ok());
  const std::string e = format_all(parsed.errors());
  EXPECT_NE(e.find("chlo.mlir:3:10"), std::string::npos) << e;
  EXPECT_NE(e.find("'chlo.asin' of c64 elements is not supported"), std::string::npos) << e;
}

}  // namespace
}  // namespace tpusim::stablehlo
