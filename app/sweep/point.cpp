#include "app/sweep/point.h"

#include <cmath>
#include <fmt/format.h>
#include <random>

#include "common/params.h"

namespace tpusim::sweep {

std::vector<std::string> Point::overrides() const {
  std::vector<std::string> out;
  out.reserve(params.size());
  for (const auto& [k, v] : params) out.push_back(k + "=" + v);
  return out;
}

namespace {

// Uniform double in [0, 1) from 53 random bits: the same on every platform
// (std::uniform_real_distribution is implementation-defined).
double unit_uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

std::string sample_text(const RandomRange& r, std::mt19937_64& rng) {
  const ParamDecl* p = find_param(r.key);
  const bool integral = p->kind == ParamKind::kCount || p->kind == ParamKind::kOptCount;
  if (p->pow2) {
    // Uniform over the powers of two inside [lo, hi].
    const auto e_lo = static_cast<int>(std::ceil(std::log2(std::max(r.lo, 1.0))));
    const auto e_hi = static_cast<int>(std::floor(std::log2(std::max(r.hi, 1.0))));
    const int n = std::max(1, e_hi - e_lo + 1);
    const int e = e_lo + std::min(n - 1, static_cast<int>(unit_uniform(rng) * n));
    const double v = std::ldexp(1.0, e);
    if (auto dim = kind_dimension(p->kind)) return fmt::format("{} {}", v, dim == Dimension::kBytes ? "B" : "");
    return fmt::format("{}", static_cast<std::int64_t>(v));
  }
  double v = r.lo + (r.hi - r.lo) * unit_uniform(rng);
  if (integral) return fmt::format("{}", static_cast<std::int64_t>(std::llround(v)));
  if (auto dim = kind_dimension(p->kind)) {
    switch (*dim) {
      case Dimension::kBytes:
        return fmt::format("{} B", std::llround(v));
      case Dimension::kBytesPerSecond:
        return fmt::format("{} B/s", v);
      case Dimension::kHertz:
        return fmt::format("{} Hz", v);
      case Dimension::kSeconds:
        return fmt::format("{} s", v);
    }
  }
  return fmt::format("{}", v);
}

std::vector<std::vector<std::pair<std::string, std::string>>> grid_points(const SweepSpec& spec) {
  std::vector<std::vector<std::pair<std::string, std::string>>> out(1);
  for (const auto& axis : spec.axes) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    next.reserve(out.size() * axis.size());
    for (const auto& prefix : out) {
      for (std::size_t i = 0; i < axis.size(); ++i) {
        auto p = prefix;
        for (std::size_t k = 0; k < axis.keys.size(); ++k) p.emplace_back(axis.keys[k], axis.values[k][i]);
        next.push_back(std::move(p));
      }
    }
    out = std::move(next);
  }
  return out;
}

}  // namespace

std::size_t count_points(const SweepSpec& spec) {
  std::size_t n = 1;
  for (const auto& a : spec.axes) n *= a.size();
  if (spec.random) n *= static_cast<std::size_t>(spec.random->samples);
  return n;
}

std::vector<Point> expand_points(const SweepSpec& spec) {
  const auto grid = grid_points(spec);
  std::vector<Point> out;
  if (!spec.random) {
    for (const auto& g : grid) out.push_back(Point{out.size(), g});
    return out;
  }
  std::mt19937_64 rng(spec.random->seed);
  for (std::int64_t s = 0; s < spec.random->samples; ++s) {
    std::vector<std::pair<std::string, std::string>> sample;
    for (const auto& r : spec.random->ranges) sample.emplace_back(r.key, sample_text(r, rng));
    for (const auto& g : grid) {
      auto p = g;
      p.insert(p.end(), sample.begin(), sample.end());
      out.push_back(Point{out.size(), std::move(p)});
    }
  }
  return out;
}

std::string canonical_config_text(const ChipConfig& c) {
  auto& mc = const_cast<ChipConfig&>(c);  // ParamDecl::field serves readers and writers
  std::string out;
  for (const auto& p : all_params()) {
    out += p.key;
    out += '=';
    out += std::visit(
        overloaded{[](EnumRef e) -> std::string { return fmt::format("'{}'", e.name(e.field)); },
        [](auto* ptr) -> std::string {
          using T = std::remove_cvref_t<decltype(*ptr)>;
          if constexpr (std::is_same_v<T, std::string>) {
            return fmt::format("'{}'", *ptr);
          } else if constexpr (std::is_same_v<T, std::optional<std::int64_t>>) {
            return ptr->has_value() ? fmt::format("{}", **ptr) : std::string("~");
          } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
            std::string s;
            for (bool b : *ptr) s += b ? '1' : '0';
            return "[" + s + "]";
          } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
            return fmt::format("[{}]", fmt::join(*ptr, ","));
          } else {
            return fmt::format("{}", *ptr);  // shortest round-trip text for doubles
          }
        }},
        p.field(mc));
    out += '\n';
  }
  return out;
}

std::string config_hash(const ChipConfig& c) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const char ch : canonical_config_text(c)) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

namespace {

// X-macro over DerivedFigures members: one list for names and lookup.
#define TPUSIM_DERIVED(X)                  \
  X(peak_flops_bf16)                       \
  X(peak_flops_f32)                        \
  X(peak_flops_int8)                       \
  X(peak_flops_fp8)                        \
  X(peak_flops_int4)                       \
  X(hbm_bytes_per_s)                       \
  X(ici_bytes_per_s_per_chip)              \
  X(critical_intensity_flops_per_byte)     \
  X(vpu_flops_per_s)                       \
  X(chips)

}  // namespace

std::vector<std::string> constraint_names() {
  std::vector<std::string> out;
  for (const auto& p : all_params()) out.emplace_back(p.key);
#define TPUSIM_DERIVED_NAME(m) out.emplace_back("derived." #m);
  TPUSIM_DERIVED(TPUSIM_DERIVED_NAME)
#undef TPUSIM_DERIVED_NAME
  out.emplace_back("proxy.area");
  return out;
}

ParamValue param_value(const ChipConfig& c, std::string_view key) {
  const ParamDecl* p = find_param(key);
  if (p == nullptr) return {};
  auto& mc = const_cast<ChipConfig&>(c);
  return std::visit(
      overloaded{[](EnumRef e) -> ParamValue { return {false, 0, std::string(e.name(e.field))}; },
      [&](auto* ptr) -> ParamValue {
        using T = std::remove_cvref_t<decltype(*ptr)>;
        if constexpr (std::is_same_v<T, bool>) {
          return {true, *ptr ? 1.0 : 0.0, *ptr ? "true" : "false"};
        } else if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, double>) {
          return {true, static_cast<double>(*ptr), ""};
        } else if constexpr (std::is_same_v<T, std::optional<std::int64_t>>) {
          if (ptr->has_value()) return {true, static_cast<double>(**ptr), ""};
          return {false, 0, "~"};
        } else {
          return {false, 0, param_value_text(*p, c)};
        }
      }},
      p->field(mc));
}

NameLookup config_lookup(const ChipConfig& c, const ProxyModel& proxy) {
  return [&c, &proxy](std::string_view name) -> std::optional<ExprValue> {
    if (name == "proxy.area") return area_proxy(proxy, c);
    if (name.starts_with("derived.")) {
      const DerivedFigures d = derive(c);
      const std::string_view m = name.substr(8);
#define TPUSIM_DERIVED_LOOKUP(f) \
  if (m == #f) return static_cast<double>(d.f);
      TPUSIM_DERIVED(TPUSIM_DERIVED_LOOKUP)
#undef TPUSIM_DERIVED_LOOKUP
      return std::nullopt;
    }
    if (find_param(name) == nullptr) return std::nullopt;
    const ParamValue v = param_value(c, name);
    if (v.numeric) return v.number;
    return v.text;
  };
}

std::string check_constraints(const SweepSpec& spec, const ChipConfig& c) {
  const NameLookup lookup = config_lookup(c, spec.proxy);
  for (const auto& k : spec.constraints) {
    std::string err;
    auto v = eval_expr(k.expr, lookup, err);
    if (!v) return fmt::format("constraint '{}' cannot be evaluated: {}", k.expr.text, err);
    const double* d = std::get_if<double>(&*v);
    if (d == nullptr) return fmt::format("constraint '{}' is text, not true/false", k.expr.text);
    if (*d == 0) return fmt::format("violates constraint '{}'", k.expr.text);
  }
  return "";
}

}  // namespace tpusim::sweep
