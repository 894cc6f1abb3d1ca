// Declarations of configuration keys, generated from params.def.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "common/config.h"
#include "common/units.h"

namespace tpusim {

enum class ParamKind {
  kString,
  kEnum,
  kBool,
  kCount,      // integer, no unit
  kOptCount,   // integer or ~ (unset)
  kRatio,      // real, no unit
  kSize,       // bytes, with a unit
  kBandwidth,  // bytes/s, with a unit
  kFrequency,  // Hz, with a unit
  kTime,       // seconds, with a unit
  kCountList,  // [int, ...]
  kBoolList,   // [bool, ...]
};

std::string_view kind_name(ParamKind k);
// The physical dimension of a unit-carrying kind; nullopt for the others.
std::optional<Dimension> kind_dimension(ParamKind k);

// An enum-typed field, seen through its names (enum_name / parse_enum).
struct EnumRef {
  void* field;
  bool (*parse)(void* field, std::string_view text);
  std::string_view (*name)(const void* field);
};
template <class E>
EnumRef enum_ref(E* field) {
  return EnumRef{field, [](void* f, std::string_view t) { return parse_enum(t, *static_cast<E*>(f)); },
                 [](const void* f) { return enum_name(*static_cast<const E*>(f)); }};
}

// The field a parameter lives in: a pointer, or an EnumRef for enum keys.
using ParamRef = std::variant<std::string*, bool*, std::int64_t*, std::optional<std::int64_t>*,
                              double*, std::vector<std::int64_t>*, std::vector<bool>*, EnumRef>;

// std::visit over several lambdas: overloaded{[](EnumRef) {...}, [](auto* p) {...}}.
template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

// The field of `c` a table entry names (enum fields through EnumRef).
template <class T>
ParamRef param_ref(T* field) {
  if constexpr (std::is_enum_v<T>) {
    return enum_ref(field);
  } else {
    return field;
  }
}

struct ParamDecl {
  std::string_view key;  // dotted path, e.g. "core.mxu.rows"
  ParamKind kind;
  std::string_view default_yaml;  // "" = required
  double min;
  double max;
  bool pow2;
  std::string_view choices;  // "ws|os|is" for enums
  std::string_view doc;
  ParamRef (*field)(ChipConfig&);

  [[nodiscard]] bool required() const { return default_yaml.empty(); }
};

std::span<const ParamDecl> all_params();
const ParamDecl* find_param(std::string_view key);

// Keys closest to `key` by edit distance (for "did you mean").
std::vector<std::string_view> closest_params(std::string_view key, std::size_t max_results = 3);

// The value of a parameter in `c`, as YAML-ish text with units ("128 MiB").
std::string param_value_text(const ParamDecl& p, const ChipConfig& c);

// Edit distance (Levenshtein), used for suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace tpusim
