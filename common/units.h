// Units in types and names (STYLE.md, practice 3). All conversions between
// quantities and text live here and nowhere else.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tpusim {

using Bytes = std::uint64_t;
using Cycles = std::uint64_t;

// ceil(a / b) for a >= 0; 0 when b <= 0 (a unit with no capacity does no
// work per step: callers guard the division, this keeps it defined).
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }
// a rounded up to a multiple of m (m > 0).
constexpr std::int64_t round_up(std::int64_t a, std::int64_t m) { return ceil_div(a, m) * m; }

// SystemC time has 1 ps resolution: simulated times (seconds) closer than
// half of it are the same instant.
constexpr double kTimeEpsilonSeconds = 0.5e-12;

// s without the spaces and tabs at either end.
std::string_view trim(std::string_view s);

// The physical dimension a configuration value carries.
enum class Dimension {
  kBytes,           // B, kB, MB, GB, TB (decimal) / KiB, MiB, GiB, TiB (binary)
  kBytesPerSecond,  // B/s … TB/s, KiB/s … TiB/s, bit rates: bps, kbps … Tbps, Gb/s
  kHertz,           // Hz, kHz, MHz, GHz
  kSeconds,         // s, ms, us (or µs), ns, ps
};

std::string_view dimension_name(Dimension d);   // "bytes", "bandwidth", …
std::string_view dimension_example(Dimension d);  // "128 MiB", "819 GB/s", …

// Parses "<number> <unit>" (the space is optional) into the dimension's base
// unit (bytes, bytes/s, Hz, s). Strict: a bare number, an unknown unit, a unit
// of another dimension, or an ambiguous one ("KB") is an error; `error`
// receives a message saying what was expected. Returns false on error.
bool parse_quantity(std::string_view text, Dimension d, double& out, std::string& error);

// Parses a plain number (integer or real, no unit). Returns false on error.
bool parse_number(std::string_view text, double& out);

// Prints a base-unit value with the most readable unit of its dimension,
// choosing binary prefixes for sizes that are exact multiples of 1 KiB and
// decimal prefixes otherwise, e.g. 134217728 -> "128 MiB", 8.19e11 -> "819 GB/s".
std::string format_quantity(double value, Dimension d);

// Compact human formats for reports.
std::string format_si(double value, std::string_view unit);  // 1.97e14,"FLOP/s" -> "197 TFLOP/s"

}  // namespace tpusim
