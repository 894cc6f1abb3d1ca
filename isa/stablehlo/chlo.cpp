#include "isa/stablehlo/chlo.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <numbers>

#include "isa/hlo/element_type.h"

namespace tpusim::stablehlo {
namespace {

using V = std::string;  // an HLO value name

// Records HLO ops over one array shape; each value keeps its element type.
class Builder {
 public:
  Builder(std::string prefix, std::string dims, std::string etype)
      : type(std::move(etype)), prefix_(std::move(prefix)), dims_(std::move(dims)) {}
  std::string type;  // the float type constants take

  V op(std::string_view opcode, std::vector<V> args, std::string attrs = "", std::string etype = "") {
    if (etype.empty()) etype = opcode == "is-finite" ? "pred" : args.empty() ? type : types_.at(args[0]);
    V name = fmt::format("{}.chlo{}", prefix_, ops_.size());
    ops_.push_back({name, std::string(opcode), std::move(args), std::move(attrs), etype});
    types_[name] = etype;
    return name;
  }
  V un(std::string_view opcode, const V& x) { return op(opcode, {x}); }
  V bin(std::string_view opcode, const V& a, const V& b) { return op(opcode, {a, b}); }
  V cmp(std::string_view dir, const V& a, const V& b) { return op("compare", {a, b}, fmt::format(", direction={}", dir), "pred"); }
  V sel(const V& p, const V& a, const V& b) { return op("select", {p, a, b}, "", types_.at(a)); }
  V convert(const V& x, const std::string& etype) { return op("convert", {x}, "", etype); }
  V bitcast(const V& x, const std::string& etype) { return op("bitcast-convert", {x}, "", etype); }
  // A constant of the shape (XLA's getConstantLike: a splat of the operand's shape).
  V cst(double v, std::string etype = "") {
    if (etype.empty()) etype = type;
    V name = fmt::format("{}.chlo{}", prefix_, ops_.size());
    std::string literal = "{...}";
    if (dims_ == "[]") {
      if (std::isnan(v)) literal = "nan";
      else if (std::isinf(v)) literal = v > 0 ? "inf" : "-inf";
      else if (etype.starts_with("s")) literal = fmt::format("{}", static_cast<std::int64_t>(v));
      else literal = fmt::format("{}", v);
    }
    ops_.push_back({name, "constant", {}, literal, etype});
    types_[name] = etype;
    return name;
  }
  // c[0] x^(n-1) + ... + c[n-1] in Horner's form: one multiply and one add per further coefficient.
  template <std::size_t N>
  V poly(const V& x, const std::array<double, N>& c) {
    V p = cst(c[0]);
    for (std::size_t i = 1; i < N; ++i) p = bin("add", bin("multiply", p, x), cst(c[i]));
    return p;
  }
  void finish(const V& result, ChloExpansion& out) const {
    for (const Op& o : ops_) {
      if (o.name == result) {
        out.opcode = o.opcode;
        out.args = o.args;
        out.attrs = o.attrs;
        continue;
      }
      if (o.opcode == "constant") {
        out.lines.push_back(fmt::format("%{} = {}{} constant({})", o.name, o.etype, dims_, o.attrs));
        continue;
      }
      std::string args;
      for (const V& a : o.args) args += (args.empty() ? "%" : ", %") + a;
      out.lines.push_back(fmt::format("%{} = {}{} {}({}){}", o.name, o.etype, dims_, o.opcode, args, o.attrs));
    }
  }

 private:
  struct Op {
    V name;
    std::string opcode;
    std::vector<V> args;
    std::string attrs;  // for a constant: its literal
    std::string etype;
  };
  std::string prefix_, dims_;
  std::vector<Op> ops_;
  std::map<V, std::string, std::less<>> types_;

 public:
  void declare(const V& name, const std::string& etype) { types_[name] = etype; }
};

double max_finite(std::string_view t) {
  if (t == "f64") return std::numeric_limits<double>::max();
  if (t == "f16") return 65504.0;
  if (t == "bf16") return 3.3895313892515355e38;
  return std::numeric_limits<float>::max();
}

// ---- ChloDecompositionPatternsMath.td, real operands ----

V asin(Builder& b, const V& x) {  // 2 * atan2(x, 1 + sqrt((1 - x) * (1 + x)))
  const V one = b.cst(1);
  const V ta = b.bin("atan2", x, b.bin("add", one, b.un("sqrt", b.bin("multiply", b.bin("subtract", one, x), b.bin("add", one, x)))));
  return b.bin("add", ta, ta);
}
V acos(Builder& b, const V& x) {  // atan2(sqrt((1 - x) * (1 + x)), x)
  const V one = b.cst(1);
  return b.bin("atan2", b.un("sqrt", b.bin("multiply", b.bin("subtract", one, x), b.bin("add", one, x))), x);
}
V acosh(Builder& b, const V& x) {  // x >= max/2 ? log(2) + log(x) : log1p(sqrt(x-1) * (sqrt(x+1) + sqrt(x-1)))
  const V two = b.cst(2);
  const V big = b.cmp("GE", x, b.bin("divide", b.cst(max_finite(b.type)), two));
  const V large = b.bin("add", b.un("log", two), b.un("log", x));
  const V one = b.cst(1);
  const V s = b.un("sqrt", b.bin("subtract", x, one));
  const V small = b.un("log-plus-one", b.bin("multiply", s, b.bin("add", b.un("sqrt", b.bin("add", x, one)), s)));
  return b.sel(big, large, small);
}
V asinh(Builder& b, const V& x) {  // sign(x) * (|x| >= sqrt(max) ? log(2) + log|x| : log1p(|x| + x^2 / (1 + sqrt(1 + x^2))))
  const V sign = b.un("sign", x);
  const V ax = b.un("abs", x);
  const V big = b.cmp("GE", ax, b.un("sqrt", b.cst(max_finite(b.type))));
  const V large = b.bin("add", b.un("log", b.cst(2)), b.un("log", ax));
  const V ax2 = b.bin("multiply", ax, ax);
  const V one = b.cst(1);
  const V small = b.un("log-plus-one", b.bin("add", ax, b.bin("divide", ax2, b.bin("add", one, b.un("sqrt", b.bin("add", one, ax2))))));
  return b.bin("multiply", sign, b.sel(big, large, small));
}

// ---- ChloDecompositionPatterns.td ----

V atan(Builder& b, const V& x) { return b.bin("atan2", x, b.cst(1)); }
V atanh(Builder& b, const V& x) {  // |x| > 1 ? nan : (log1p(x) - log1p(-x)) * 0.5
  const V out_of_range = b.cmp("GT", b.un("abs", x), b.cst(1));
  const V nan = b.cst(std::numeric_limits<double>::quiet_NaN());
  const V v = b.bin("multiply", b.bin("subtract", b.un("log-plus-one", x), b.un("log-plus-one", b.un("negate", x))), b.cst(0.5));
  return b.sel(out_of_range, nan, v);
}

// ---- ChloLegalizeToStablehlo.cpp ----

V cosh(Builder& b, const V& x) {  // exp(x + log(1/2)) + exp(log(1/2) - x)
  const V log_half = b.un("log", b.cst(0.5));
  return b.bin("add", b.un("exponential", b.bin("add", x, log_half)), b.un("exponential", b.bin("subtract", log_half, x)));
}
V sinh_large(Builder& b, const V& x) {  // exp(x + log(1/2)) - exp(log(1/2) - x)
  const V log_half = b.un("log", b.cst(0.5));
  return b.bin("subtract", b.un("exponential", b.bin("add", x, log_half)), b.un("exponential", b.bin("subtract", log_half, x)));
}
V sinh(Builder& b, const V& x) {  // |x| < 1 ? (expm1(x) + expm1(x) / (expm1(x) + 1)) / 2 : sinh_large(x)
  const V large = sinh_large(b, x);
  const V e = b.un("exponential-minus-one", x);
  const V one = b.cst(1), half = b.cst(0.5);
  const V small = b.bin("multiply", half, b.bin("add", e, b.bin("divide", e, b.bin("add", e, one))));
  return b.sel(b.cmp("LT", b.un("abs", x), one), small, large);
}

// erfc for |x| >= 1 (Cephes): exp(-x^2) / |x| * (|x| < 2 ? P(1/x^2) : R(1/x^2)), clamped, reflected for x < 0.
V erfc_ge_one(Builder& b, const V& x) {
  constexpr std::array<double, 9> kP = {2.326819970068386E-2, -1.387039388740657E-1, 3.687424674597105E-1,
                                        -5.824733027278666E-1, 6.210004621745983E-1, -4.944515323274145E-1,
                                        3.404879937665872E-1, -2.741127028184656E-1, 5.638259427386472E-1};
  constexpr std::array<double, 8> kR = {-1.047766399936249E+1, 1.297719955372516E+1, -7.495518717768503E+0,
                                        2.921019019210786E+0, -1.015265279202700E+0, 4.218463358204948E-1,
                                        -2.820767439740514E-1, 5.641895067754075E-1};
  const V x2 = b.bin("multiply", x, x);
  const V z = b.un("negate", x2);
  const V ax = b.un("abs", x);
  const V one = b.cst(1);
  const V r = b.bin("divide", one, x2);
  const V e = b.bin("multiply", b.un("exponential", z), b.bin("divide", one, ax));
  const V two = b.cst(2);
  const V lt2 = b.cmp("LT", ax, two);
  const V p = b.poly(r, kP);
  const V q = b.poly(r, kR);
  const V approx = b.bin("multiply", e, b.sel(lt2, p, q));
  const V zero = b.cst(0);
  const V clamped = b.sel(b.cmp("LT", z, b.cst(-88.72283905206835)), zero, approx);
  const V neg = b.cmp("LT", x, zero);
  return b.sel(neg, b.bin("subtract", two, clamped), clamped);
}
V erf_le_one(Builder& b, const V& x) {  // x * T(x^2)
  constexpr std::array<double, 7> kT = {7.853861353153693E-5, -8.010193625184903E-4, 5.188327685732524E-3,
                                        -2.685381193529856E-2, 1.128358514861418E-1, -3.761262582423300E-1,
                                        1.128379165726710E+0};
  return b.bin("multiply", x, b.poly(b.bin("multiply", x, x), kT));
}
V erfc(Builder& b, const V& x) {  // |x| < 1 ? 1 - erf(x) : erfc(x)
  const V ge_one = erfc_ge_one(b, x);
  const V one = b.cst(1);
  const V le_one = b.bin("subtract", one, erf_le_one(b, x));
  return b.sel(b.cmp("LT", b.un("abs", x), one), le_one, ge_one);
}

// erf_inv (Giles): w = -log1p(-x^2); a degree-9 polynomial in w - 2.5 or
// sqrt(w) - 3, its coefficients selected per element; +-inf at |x| = 1.
V erf_inv(Builder& b, const V& x) {
  constexpr std::array<double, 9> kLt5 = {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                                          -0.00125372503, -0.00417768164, 0.246640727, 1.50140941};
  constexpr std::array<double, 9> kGe5 = {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                                          -0.0076224613, 0.00943887047, 1.00167406, 2.83297682};
  V w = b.un("negate", b.un("log-plus-one", b.bin("multiply", x, b.un("negate", x))));
  const V lt = b.cmp("LT", w, b.cst(5));
  w = b.sel(lt, b.bin("subtract", w, b.cst(2.5)), b.bin("subtract", b.un("sqrt", w), b.cst(3)));
  const auto coefficient = [&](std::size_t i) { return b.sel(lt, b.cst(kLt5[i]), b.cst(kGe5[i])); };
  V p = coefficient(0);
  for (std::size_t i = 1; i < kLt5.size(); ++i) {
    const V c = coefficient(i);
    p = b.bin("add", c, b.bin("multiply", p, w));
  }
  const V result = b.bin("multiply", p, x);
  const V at_one = b.cmp("EQ", b.un("abs", x), b.cst(1));
  return b.sel(at_one, b.bin("multiply", x, b.cst(std::numeric_limits<double>::infinity())), result);
}

// Lanczos approximation (g = 7, 8 coefficients), as lgamma and digamma use it.
constexpr double kLanczosGamma = 7;
constexpr double kLanczosBase = 0.99999999999980993227684700473478;
constexpr std::array<double, 8> kLanczos = {676.520368121885098567009190444019, -1259.13921672240287047156078755283,
                                            771.3234287776530788486528258894,   -176.61502916214059906584551354,
                                            12.507343278686904814458936853,     -0.13857109526572011689554707,
                                            9.984369578019570859563e-6,         1.50563273514931155834e-7};

V lgamma(Builder& b, const V& x) {
  const V half = b.cst(0.5);
  const V reflect = b.cmp("LT", x, half);
  const V neg_x = b.un("negate", x);
  const V one = b.cst(1);
  const V z = b.sel(reflect, neg_x, b.bin("subtract", x, one));
  V a = b.cst(kLanczosBase);
  for (std::size_t i = 0; i < kLanczos.size(); ++i) {
    const V c = b.cst(kLanczos[i]);
    a = b.bin("add", a, b.bin("divide", c, b.bin("add", z, b.cst(static_cast<double>(i + 1)))));
  }
  const V g_half = b.cst(kLanczosGamma + 0.5);
  const V t = b.bin("add", g_half, z);
  const V log_t = b.bin("add", b.cst(std::log(kLanczosGamma + 0.5)), b.un("log-plus-one", b.bin("divide", z, g_half)));
  const V r = b.bin("multiply", b.bin("subtract", b.bin("add", z, half), b.bin("divide", t, log_t)), log_t);
  const V log_a = b.un("log", a);
  V lg = b.bin("add", b.bin("add", b.cst((std::log(2.0) + std::log(std::numbers::pi)) / 2), r), log_a);
  // Reflection: log(pi) - lgamma(1 - x) - log|sin(pi * frac|x|)|.
  const V ax = b.un("abs", x);
  V frac = b.bin("subtract", ax, b.un("floor", ax));
  const V reduce = b.cmp("LT", half, frac);
  frac = b.sel(reduce, b.bin("subtract", one, frac), frac);
  const V denom = b.un("log", b.un("sine", b.bin("multiply", b.cst(std::numbers::pi), frac)));
  V reflected = b.bin("subtract", b.bin("subtract", b.cst(std::log(std::numbers::pi)), denom), lg);
  reflected = b.sel(b.un("is-finite", denom), reflected, b.un("negate", denom));
  lg = b.sel(reflect, reflected, lg);
  // chlo.is_inf: |x| == inf.
  const V is_inf = b.cmp("EQ", b.un("abs", x), b.cst(std::numeric_limits<double>::infinity()));
  return b.sel(is_inf, b.cst(std::numeric_limits<double>::infinity()), lg);
}

V digamma(Builder& b, const V& x) {
  const V half = b.cst(0.5);
  const V reflect = b.cmp("LT", x, half);
  const V neg_x = b.un("negate", x);
  const V one = b.cst(1);
  const V z = b.sel(reflect, neg_x, b.bin("subtract", x, one));
  const V zero = b.cst(0);
  V a = b.cst(kLanczosBase);
  V a_prime = zero;
  for (std::size_t i = 0; i < kLanczos.size(); ++i) {
    const V c = b.cst(kLanczos[i]);
    const V zt = b.bin("add", z, b.cst(static_cast<double>(i + 1)));
    a_prime = b.bin("subtract", a_prime, b.bin("divide", c, b.bin("multiply", zt, zt)));
    a = b.bin("add", a, b.bin("divide", c, zt));
  }
  const V g_half = b.cst(kLanczosGamma + 0.5);
  const V t = b.bin("add", g_half, z);
  const V log_t = b.bin("add", b.cst(std::log(kLanczosGamma + 0.5)), b.un("log-plus-one", b.bin("divide", z, g_half)));
  const V ratio = b.bin("divide", a_prime, a);
  const V g_over_t = b.bin("divide", b.cst(kLanczosGamma), t);
  V dg = b.bin("subtract", b.bin("add", log_t, ratio), g_over_t);
  // Reflection: digamma(1 - x) - pi * cos(pi * x) / sin(pi * x), x shifted into [-0.5, 0.5].
  const V reduced = b.bin("add", x, b.un("abs", b.un("floor", b.bin("add", x, b.cst(0.5)))));
  const V pi = b.cst(std::numbers::pi);
  const V arg = b.bin("multiply", pi, reduced);
  const V cos = b.un("cosine", arg);
  const V sin = b.un("sine", arg);
  const V reflected = b.bin("subtract", dg, b.bin("divide", b.bin("multiply", pi, cos), sin));
  dg = b.sel(reflect, reflected, dg);
  // Poles at zero and the negative integers: nan.
  const V le_zero = b.cmp("LE", x, zero);
  const V is_int = b.cmp("EQ", x, b.un("floor", x));
  const V pole = b.bin("and", le_zero, is_int);
  return b.sel(pole, b.cst(std::numeric_limits<double>::quiet_NaN()), dg);
}

// next_after on the integer bit patterns: +-1 ulp toward y, with the zero,
// equal and nan cases selected.
V next_after(Builder& b, const V& x, const V& y, int bits) {
  const std::string it = fmt::format("s{}", bits);
  const V xi = b.bitcast(x, it), yi = b.bitcast(y, it);
  const V nan_in = b.bin("or", b.cmp("NE", x, x), b.cmp("NE", y, y));
  const V nan_bits = b.bitcast(b.cst(std::numeric_limits<double>::quiet_NaN()), it);
  const double sign_bit = -std::ldexp(1.0, bits - 1);  // 1 << (bits - 1) as a signed value
  const V sign_mask = b.cst(sign_bit, it), abs_mask = b.cst(-sign_bit - 1, it);
  const V x_abs = b.bin("and", xi, abs_mask), y_abs = b.bin("and", yi, abs_mask);
  const V equal = b.cmp("EQ", x, y);
  const V zero = b.cst(0, it);
  const V x_zero = b.cmp("EQ", x_abs, zero), y_zero = b.cmp("EQ", y_abs, zero);
  const V x_sign = b.bin("and", xi, sign_mask), y_sign = b.bin("and", yi, sign_mask);
  const V one = b.cst(1, it);
  const V from_zero = b.bin("or", y_sign, one);
  const V disagree = b.cmp("NE", x_sign, y_sign);
  const V larger = b.cmp("GT", x_abs, y_abs);
  const V smaller = b.bin("or", larger, disagree);
  const V step = b.sel(smaller, b.cst(-1, it), one);
  V r = b.bin("add", xi, step);
  r = b.sel(x_zero, b.sel(y_zero, yi, from_zero), r);
  r = b.sel(equal, yi, r);
  r = b.sel(nan_in, nan_bits, r);
  return b.bitcast(r, b.type);
}

struct Rule {
  std::string_view name;
  V (*unary)(Builder&, const V&);
  bool upcast;       // materializeWithUpcast to f32 (f16, bf16 are converted in and out)
  bool complex_ok;   // also for complex operands
  bool f64_ok;
};

constexpr std::array<Rule, 13> kRules = {{
    {"chlo.acos", acos, false, false, true},
    {"chlo.acosh", acosh, false, false, true},
    {"chlo.asin", asin, false, false, true},
    {"chlo.asinh", asinh, false, false, true},
    {"chlo.atan", atan, false, false, true},
    {"chlo.atanh", atanh, false, false, true},
    {"chlo.cosh", cosh, true, true, true},
    {"chlo.sinh", sinh, true, true, true},
    {"chlo.erfc", erfc, true, false, false},
    {"chlo.erf_inv", erf_inv, true, false, false},
    {"chlo.lgamma", lgamma, true, false, true},
    {"chlo.digamma", digamma, true, false, true},
    {"chlo.next_after", nullptr, false, false, true},
}};

}  // namespace

bool is_expanded_chlo(std::string_view mlir_name) {
  for (const Rule& r : kRules) {
    if (r.name == mlir_name) return true;
  }
  return false;
}

bool expand_chlo(std::string_view mlir_name, const std::vector<std::string>& args, const std::string& shape,
                 const std::string& prefix, ChloExpansion& out, std::string& error) {
  const Rule* rule = nullptr;
  for (const Rule& r : kRules) {
    if (r.name == mlir_name) rule = &r;
  }
  const auto open = shape.find('[');
  if (rule == nullptr || open == std::string::npos || args.empty()) return error = fmt::format("cannot expand '{}'", mlir_name), false;
  const std::string etype = shape.substr(0, open);
  const std::string dims = shape.substr(open, shape.find(']') - open + 1);
  const auto t = hlo::element_type_from_name(etype);
  const char kind = t ? hlo::element_type_kind(*t) : '?';
  const bool complex = kind == 'c';
  if (!(kind == 'f' || (complex && rule->complex_ok)) || (etype == "f64" && !rule->f64_ok)) {
    return error = fmt::format("'{}' of {} elements is not supported (XLA's expansion for them is not modeled)", mlir_name, etype), false;
  }
  Builder b(prefix, dims, etype);
  for (const auto& a : args) b.declare(a, etype);
  if (rule->unary == nullptr) {  // next_after
    if (args.size() != 2) return error = "chlo.next_after takes two operands of the result's shape", false;
    b.finish(next_after(b, args[0], args[1], hlo::element_type_bits(*t)), out);
    return true;
  }
  if (args.size() != 1) return error = fmt::format("'{}' takes one operand", mlir_name), false;
  // sinh of complex: only the large-x form (no expm1 branch), as XLA's legalization does.
  V (*fn)(Builder&, const V&) = complex && mlir_name == "chlo.sinh" ? sinh_large : rule->unary;
  const bool upcast = rule->upcast && kind == 'f' && hlo::element_type_bits(*t) < 32;
  if (!upcast) {
    b.finish(fn(b, args[0]), out);
    return true;
  }
  b.type = "f32";
  const V r = fn(b, b.convert(args[0], "f32"));
  b.finish(b.convert(r, etype), out);
  return true;
}

}  // namespace tpusim::stablehlo
