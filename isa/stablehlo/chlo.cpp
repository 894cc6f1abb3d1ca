#include "isa/stablehlo/chlo.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <numbers>
#include <span>

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
  // An operand of the expansion, of element type `etype`.
  void declare(const V& name, const std::string& etype) { types_[name] = etype; }
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

// f64 (Cephes): erfc for |x| >= 1 is exp(-x^2) P(|x|)/Q(|x|) below 8 and
// exp(-x^2) R(|x|)/S(|x|) above, clamped and reflected as in f32; erf for
// |x| < 1 is x T(x^2)/U(x^2).
V erfc_ge_one_f64(Builder& b, const V& x) {
  constexpr std::array<double, 9> kP = {2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
                                        4.86371970985681366614E1,   1.96520832956077098242E2,  5.26445194995477358631E2,
                                        9.34528527171957607540E2,   1.02755188689515710272E3,  5.57535335369399327526E2};
  constexpr std::array<double, 9> kQ = {1.0,                      1.32281951154744992508E1, 8.67072140885989742329E1,
                                        3.54937778887819891062E2, 9.75708501743205489753E2, 1.82390916687909736289E3,
                                        2.24633760818710981792E3, 1.65666309194161350182E3, 5.57535340817727675546E2};
  constexpr std::array<double, 6> kR = {5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
                                        6.16021097993053585195E0,  7.40974269950448939160E0, 2.97886665372100240670E0};
  constexpr std::array<double, 7> kS = {1.0, 2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1,
                                        1.70814450747565897222E1, 9.60896809063285878198E0, 3.36907645100081516050E0};
  const V z = b.un("negate", b.bin("multiply", x, x));
  const V e = b.un("exponential", z);
  const V ax = b.un("abs", x);
  const V below8 = b.bin("divide", b.bin("multiply", e, b.poly(ax, kP)), b.poly(ax, kQ));
  const V above8 = b.bin("divide", b.bin("multiply", e, b.poly(ax, kR)), b.poly(ax, kS));
  const V approx = b.sel(b.cmp("LT", ax, b.cst(8)), below8, above8);
  const V zero = b.cst(0);
  const V clamped = b.sel(b.cmp("LT", z, b.cst(-7.09782712893383996843E2)), zero, approx);
  return b.sel(b.cmp("LT", x, zero), b.bin("subtract", b.cst(2), clamped), clamped);
}
V erf_le_one_f64(Builder& b, const V& x) {
  constexpr std::array<double, 5> kT = {9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3,
                                        7.00332514112805075473E3, 5.55923013010394962768E4};
  constexpr std::array<double, 6> kU = {1.0, 3.35617141647503099647E1, 5.21357949780152679795E2, 4.59432382970980127987E3,
                                        2.26290000613890934246E4, 4.92673942608635921086E4};
  const V x2 = b.bin("multiply", x, x);
  return b.bin("divide", b.bin("multiply", x, b.poly(x2, kT)), b.poly(x2, kU));
}
V erfc_f64(Builder& b, const V& x) {
  const V ge_one = erfc_ge_one_f64(b, x);
  const V one = b.cst(1);
  const V le_one = b.bin("subtract", one, erf_le_one_f64(b, x));
  return b.sel(b.cmp("LT", b.un("abs", x), one), le_one, ge_one);
}

// erf_inv f64 (Giles): three regions of w = -log1p(-x^2) (< 6.25, < 16,
// above) with polynomials of 23, 19 and 17 coefficients, evaluated as one
// Horner chain whose coefficients (and last steps) are selected per element.
V erf_inv_f64(Builder& b, const V& x) {
  constexpr std::array<double, 23> kLt625 = {
      -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18, 1.115787767802518096e-17,
      -1.333171662854620906e-16,  2.0972767875968561637e-17, 6.6376381343583238325e-15, -4.0545662729752068639e-14,
      -8.1519341976054721522e-14, 2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
      1.051212273321532285e-09,   -4.1126339803469836976e-09, -2.9070369957882005086e-08, 4.2347877827932403518e-07,
      -1.3654692000834678645e-06, -1.3882523362786468719e-05, 0.0001867342080340571352, -0.00074070253416626697512,
      -0.0060336708714301490533,  0.24015818242558961693,     1.6536545626831027356};
  constexpr std::array<double, 19> kLt16 = {
      2.2137376921775787049e-09,  9.0756561938885390979e-08, -2.7517406297064545428e-07, 1.8239629214389227755e-08,
      1.5027403968909827627e-06,  -4.013867526981545969e-06, 2.9234449089955446044e-06,  1.2475304481671778723e-05,
      -4.7318229009055733981e-05, 6.8284851459573175448e-05, 2.4031110387097893999e-05,  -0.0003550375203628474796,
      0.00095328937973738049703,  -0.0016882755560235047313, 0.0024914420961078508066,   -0.0037512085075692412107,
      0.005370914553590063617,    1.0052589676941592334,     3.0838856104922207635};
  constexpr std::array<double, 17> kGe16 = {
      -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,  -3.7894654401267369937e-09,
      7.6157012080783393804e-09,  -1.4960026627149240478e-08, 2.9147953450901080826e-08,  -6.7711997758452339498e-08,
      2.2900482228026654717e-07,  -9.9298272942317002539e-07, 4.5260625972231537039e-06,  -1.9681778105531670567e-05,
      7.5995277030017761139e-05,  -0.00021503011930044477347, -0.00013871931833623122026, 1.0103004648645343977,
      4.8499064014085844221};
  V w = b.un("negate", b.un("log-plus-one", b.bin("multiply", x, b.un("negate", x))));
  const V lt625 = b.cmp("LT", w, b.cst(6.25));
  const V lt16 = b.cmp("LT", w, b.cst(16));
  const auto coefficient = [&](std::size_t i) {
    V c = b.cst(kLt625[i]);
    if (i < kLt16.size()) c = b.sel(lt625, c, b.cst(kLt16[i]));
    if (i < kGe16.size()) c = b.sel(lt16, c, b.cst(kGe16[i]));
    return c;
  };
  const V sqrt_w = b.un("sqrt", w);
  const V w_small = b.bin("subtract", w, b.cst(3.125));
  const V w_large = b.bin("subtract", sqrt_w, b.sel(lt16, b.cst(3.25), b.cst(5)));
  w = b.sel(lt625, w_small, w_large);
  V p = coefficient(0);
  for (std::size_t i = 1; i < kLt625.size(); ++i) {
    const V c = coefficient(i);
    const V next = b.bin("add", c, b.bin("multiply", p, w));
    // Past a region's last coefficient its polynomial is done: keep p there.
    p = i < kGe16.size() ? next : b.sel(i < kLt16.size() ? lt16 : lt625, next, p);
  }
  const V result = b.bin("multiply", p, x);
  const V at_one = b.cmp("EQ", b.un("abs", x), b.cst(1));
  return b.sel(at_one, b.bin("multiply", x, b.cst(std::numeric_limits<double>::infinity())), result);
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

// The argument both Lanczos series take: z = x - 1, or -x where x < 1/2
// (the reflection formula's side), with the constants the callers reuse.
struct LanczosArg {
  V half, reflect, one, z;
};
LanczosArg lanczos_arg(Builder& b, const V& x) {
  const V half = b.cst(0.5);
  const V reflect = b.cmp("LT", x, half);
  const V neg_x = b.un("negate", x);
  const V one = b.cst(1);
  return {half, reflect, one, b.sel(reflect, neg_x, b.bin("subtract", x, one))};
}

V lgamma(Builder& b, const V& x) {
  const auto [half, reflect, one, z] = lanczos_arg(b, x);
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
  const auto [half, reflect, one, z] = lanczos_arg(b, x);
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

// A Chebyshev series in Clenshaw's recurrence (Cephes' chbevl): three
// ops per coefficient, then (b0 - b2) / 2.
V chebyshev(Builder& b, const V& x, std::span<const double> c) {
  V b0 = b.cst(0), b1 = b.cst(0), b2 = b.cst(0);
  for (const double k : c) {
    b2 = b1;
    b1 = b0;
    b0 = b.bin("add", b.bin("subtract", b.bin("multiply", x, b1), b2), b.cst(k));
  }
  return b.bin("multiply", b.bin("subtract", b0, b2), b.cst(0.5));
}

// bessel_i1e (Cephes): sign(x) * (|x| <= 8 ? |x| A(|x|/2 - 2) : B(32/|x| - 2) / sqrt|x|),
// A and B Chebyshev series of 29 and 25 terms in f64; f32 takes their last 17 and 7.
V bessel_i1e(Builder& b, const V& x) {
  constexpr std::array<double, 29> kA = {
      2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16, -1.10559694773538630805E-15,
      7.60068429473540693410E-15, -5.04218550472791168711E-14, 3.22379336594557470981E-13, -1.98397439776494371520E-12,
      1.17361862988909016308E-11, -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
      9.38153738649577178388E-9,  -4.44505912879632808065E-8,  2.00329475355213526229E-7,  -8.56872026469545474066E-7,
      3.47025130813767847674E-6,  -1.32731636560394358279E-5,  4.78156510755005422638E-5,  -1.61760815825896745588E-4,
      5.12285956168575772895E-4,  -1.51357245063125314899E-3,  4.15642294431288815669E-3,  -1.05640848946261981558E-2,
      2.47264490306265168283E-2,  -5.29459812080949914269E-2,  1.02643658689847095384E-1,  -1.76416518357834055153E-1,
      2.52587186443633654823E-1};
  constexpr std::array<double, 25> kB = {
      7.51729631084210481353E-18,  4.41434832307170791151E-18,  -4.65030536848935832153E-17, -3.20952592199342395980E-17,
      2.96262899764595013876E-16,  3.30820231092092828324E-16,  -1.88035477551078244854E-15, -3.81440307243700780478E-15,
      1.04202769841288027642E-14,  4.27244001671195135429E-14,  -2.10154184277266431302E-14, -4.08355111109219731823E-13,
      -7.19855177624590851209E-13, 2.03562854414708950722E-12,  1.41258074366137813316E-11,  3.25260358301548823856E-11,
      -1.89749581235054123450E-11, -5.58974346219658380687E-10, -3.83538038596423702205E-9,  -2.63146884688951950684E-8,
      -2.51223623787020892529E-7,  -3.88256480887769039346E-6,  -1.10588938762623716291E-4,  -9.76109749136146840777E-3,
      7.78576235018280120474E-1};
  const bool f64 = b.type == "f64";
  const std::span<const double> a = f64 ? std::span<const double>(kA) : std::span<const double>(kA).last(17);
  const std::span<const double> c = f64 ? std::span<const double>(kB) : std::span<const double>(kB).last(7);
  const V z = b.un("abs", x);
  const V half = b.cst(0.5), two = b.cst(2), thirty_two = b.cst(32), eight = b.cst(8);
  const V le8 = b.bin("multiply", z, chebyshev(b, b.bin("subtract", b.bin("multiply", half, z), two), a));
  const V gt8 = b.bin("divide", chebyshev(b, b.bin("subtract", b.bin("divide", thirty_two, z), two), c), b.un("sqrt", z));
  return b.bin("multiply", b.un("sign", x), b.sel(b.cmp("LE", z, eight), le8, gt8));
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
};

constexpr std::array<Rule, 14> kRules = {{
    {"chlo.acos", acos, false, false},
    {"chlo.acosh", acosh, false, false},
    {"chlo.asin", asin, false, false},
    {"chlo.asinh", asinh, false, false},
    {"chlo.atan", atan, false, false},
    {"chlo.atanh", atanh, false, false},
    {"chlo.bessel_i1e", bessel_i1e, true, false},
    {"chlo.cosh", cosh, true, true},
    {"chlo.sinh", sinh, true, true},
    {"chlo.erfc", erfc, true, false},
    {"chlo.erf_inv", erf_inv, true, false},
    {"chlo.lgamma", lgamma, true, false},
    {"chlo.digamma", digamma, true, false},
    {"chlo.next_after", nullptr, false, false},
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
  if (!(kind == 'f' || (complex && rule->complex_ok))) {
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
  // sinh of complex: only the large-x form (no expm1 branch), as XLA's
  // legalization does; erfc and erf_inv of f64: their f64 polynomials.
  V (*fn)(Builder&, const V&) = rule->unary;
  if (complex && mlir_name == "chlo.sinh") fn = sinh_large;
  if (etype == "f64" && mlir_name == "chlo.erfc") fn = erfc_f64;
  if (etype == "f64" && mlir_name == "chlo.erf_inv") fn = erf_inv_f64;
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
