#include "common/units.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>

namespace tpusim {
namespace {

struct UnitDef {
  std::string_view symbol;
  Dimension dimension;
  double scale;  // multiply by this to get the base unit
};

constexpr double kKi = 1024.0;
// Every accepted unit spelling, once. Case matters: B is a byte, b a bit.
constexpr std::array kUnits{
    UnitDef{"B", Dimension::kBytes, 1.0},
    UnitDef{"kB", Dimension::kBytes, 1e3},
    UnitDef{"MB", Dimension::kBytes, 1e6},
    UnitDef{"GB", Dimension::kBytes, 1e9},
    UnitDef{"TB", Dimension::kBytes, 1e12},
    UnitDef{"PB", Dimension::kBytes, 1e15},
    UnitDef{"KiB", Dimension::kBytes, kKi},
    UnitDef{"MiB", Dimension::kBytes, kKi * kKi},
    UnitDef{"GiB", Dimension::kBytes, kKi * kKi * kKi},
    UnitDef{"TiB", Dimension::kBytes, kKi * kKi * kKi * kKi},
    UnitDef{"B/s", Dimension::kBytesPerSecond, 1.0},
    UnitDef{"kB/s", Dimension::kBytesPerSecond, 1e3},
    UnitDef{"MB/s", Dimension::kBytesPerSecond, 1e6},
    UnitDef{"GB/s", Dimension::kBytesPerSecond, 1e9},
    UnitDef{"TB/s", Dimension::kBytesPerSecond, 1e12},
    UnitDef{"PB/s", Dimension::kBytesPerSecond, 1e15},
    UnitDef{"KiB/s", Dimension::kBytesPerSecond, kKi},
    UnitDef{"MiB/s", Dimension::kBytesPerSecond, kKi * kKi},
    UnitDef{"GiB/s", Dimension::kBytesPerSecond, kKi * kKi * kKi},
    UnitDef{"TiB/s", Dimension::kBytesPerSecond, kKi * kKi * kKi * kKi},
    UnitDef{"bps", Dimension::kBytesPerSecond, 1.0 / 8},
    UnitDef{"kbps", Dimension::kBytesPerSecond, 1e3 / 8},
    UnitDef{"Mbps", Dimension::kBytesPerSecond, 1e6 / 8},
    UnitDef{"Gbps", Dimension::kBytesPerSecond, 1e9 / 8},
    UnitDef{"Tbps", Dimension::kBytesPerSecond, 1e12 / 8},
    UnitDef{"b/s", Dimension::kBytesPerSecond, 1.0 / 8},
    UnitDef{"kb/s", Dimension::kBytesPerSecond, 1e3 / 8},
    UnitDef{"Mb/s", Dimension::kBytesPerSecond, 1e6 / 8},
    UnitDef{"Gb/s", Dimension::kBytesPerSecond, 1e9 / 8},
    UnitDef{"Tb/s", Dimension::kBytesPerSecond, 1e12 / 8},
    UnitDef{"Hz", Dimension::kHertz, 1.0},
    UnitDef{"kHz", Dimension::kHertz, 1e3},
    UnitDef{"MHz", Dimension::kHertz, 1e6},
    UnitDef{"GHz", Dimension::kHertz, 1e9},
    UnitDef{"s", Dimension::kSeconds, 1.0},
    UnitDef{"ms", Dimension::kSeconds, 1e-3},
    UnitDef{"us", Dimension::kSeconds, 1e-6},
    UnitDef{"\xC2\xB5s", Dimension::kSeconds, 1e-6},  // µs (U+00B5)
    UnitDef{"ns", Dimension::kSeconds, 1e-9},
    UnitDef{"ps", Dimension::kSeconds, 1e-12},
};

// Spellings people write that mean two different things; we refuse to guess.
struct Ambiguous {
  std::string_view symbol;
  std::string_view advice;
};
constexpr std::array kAmbiguous{
    Ambiguous{"KB", "write kB (1000 B) or KiB (1024 B)"},
    Ambiguous{"K", "write kB (1000 B) or KiB (1024 B)"},
    Ambiguous{"M", "write MB (1e6 B) or MiB (2^20 B)"},
    Ambiguous{"G", "write GB (1e9 B) or GiB (2^30 B)"},
    Ambiguous{"KB/s", "write kB/s or KiB/s"},
    Ambiguous{"GBps", "write GB/s (bytes) or Gbps (bits)"},
    Ambiguous{"MBps", "write MB/s (bytes) or Mbps (bits)"},
    Ambiguous{"TBps", "write TB/s (bytes) or Tbps (bits)"},
    Ambiguous{"GiBps", "write GiB/s"},
};

// Length of the leading decimal number in s (digits, '.', exponent), 0 if none.
size_t number_prefix(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  const size_t digits_start = i;
  bool any_digit = false;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) != 0)) { ++i; any_digit = true; }
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) != 0)) { ++i; any_digit = true; }
  }
  if (!any_digit) return 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    const size_t exp_start = j;
    while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) != 0)) ++j;
    if (j > exp_start) i = j;
  }
  (void)digits_start;
  return i;
}

std::string units_of(Dimension d) {
  std::string out;
  for (const auto& u : kUnits) {
    if (u.dimension != d) continue;
    if (!out.empty()) out += ", ";
    out += u.symbol;
  }
  return out;
}

}  // namespace

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string_view dimension_name(Dimension d) {
  switch (d) {
    case Dimension::kBytes: return "size";
    case Dimension::kBytesPerSecond: return "bandwidth";
    case Dimension::kHertz: return "frequency";
    case Dimension::kSeconds: return "time";
  }
  return "?";
}

std::string_view dimension_example(Dimension d) {
  switch (d) {
    case Dimension::kBytes: return "128 MiB";
    case Dimension::kBytesPerSecond: return "819 GB/s";
    case Dimension::kHertz: return "1.5 GHz";
    case Dimension::kSeconds: return "1 us";
  }
  return "?";
}

bool parse_number(std::string_view text, double& out) {
  text = trim(text);
  const size_t n = number_prefix(text);
  if (n == 0 || n != text.size()) return false;
  const std::string s(text);
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(out);
}

bool parse_quantity(std::string_view text, Dimension d, double& out, std::string& error) {
  const std::string_view t = trim(text);
  const size_t n = number_prefix(t);
  if (n == 0) {
    error = fmt::format("expected a {} such as '{}', got '{}'", dimension_name(d),
                        dimension_example(d), t);
    return false;
  }
  double number = 0;
  if (!parse_number(t.substr(0, n), number)) {
    error = fmt::format("malformed number in '{}'", t);
    return false;
  }
  const std::string_view unit = trim(t.substr(n));
  if (unit.empty()) {
    error = fmt::format("'{}' has no unit; a {} needs one, e.g. '{}' (units: {})", t,
                        dimension_name(d), dimension_example(d), units_of(d));
    return false;
  }
  for (const auto& a : kAmbiguous) {
    if (unit == a.symbol) {
      error = fmt::format("ambiguous unit '{}' in '{}': {}", unit, t, a.advice);
      return false;
    }
  }
  for (const auto& u : kUnits) {
    if (u.symbol != unit) continue;
    if (u.dimension != d) {
      error = fmt::format("'{}' is a {}, but a {} is expected here, e.g. '{}'", t,
                          dimension_name(u.dimension), dimension_name(d), dimension_example(d));
      return false;
    }
    out = number * u.scale;
    if (!std::isfinite(out)) {
      error = fmt::format("'{}' is out of range", t);
      return false;
    }
    return true;
  }
  error = fmt::format("unknown unit '{}' in '{}'; a {} takes one of: {}", unit, t,
                      dimension_name(d), units_of(d));
  return false;
}

namespace {
std::string trim_number(double v) {
  std::string s = fmt::format("{:.4g}", v);
  return s;
}
}  // namespace

std::string format_quantity(double value, Dimension d) {
  if (d == Dimension::kBytes) {
    const std::array<std::pair<double, std::string_view>, 4> binary{
        {{kKi * kKi * kKi * kKi, "TiB"}, {kKi * kKi * kKi, "GiB"}, {kKi * kKi, "MiB"}, {kKi, "KiB"}}};
    for (const auto& [scale, sym] : binary) {
      if (value >= scale && std::fmod(value, scale / 64) == 0) {
        return fmt::format("{} {}", trim_number(value / scale), sym);
      }
    }
    return format_si(value, "B");
  }
  if (d == Dimension::kBytesPerSecond) return format_si(value, "B/s");
  if (d == Dimension::kHertz) return format_si(value, "Hz");
  // Seconds: pick from s, ms, us, ns, ps.
  const std::array<std::pair<double, std::string_view>, 5> t{
      {{1.0, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}, {1e-12, "ps"}}};
  for (const auto& [scale, sym] : t) {
    if (std::fabs(value) >= scale) return fmt::format("{} {}", trim_number(value / scale), sym);
  }
  return value == 0 ? std::string("0 s") : fmt::format("{} ps", trim_number(value / 1e-12));
}

std::string format_si(double value, std::string_view unit) {
  const std::array<std::pair<double, std::string_view>, 6> p{
      {{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}};
  for (const auto& [scale, sym] : p) {
    if (std::fabs(value) >= scale) return fmt::format("{} {}{}", trim_number(value / scale), sym, unit);
  }
  return fmt::format("{} {}", trim_number(value), unit);
}

}  // namespace tpusim
