#include "common/params.h"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tpusim {
namespace {

#define TPUSIM_PARAM(path, kind, def, min, max, pow2, choices, doc)              \
  ParamDecl{#path, ParamKind::kind, def, min, max, pow2, choices, doc,           \
            [](ChipConfig& c) -> ParamRef { return param_ref(&c.path); }},
constexpr std::array kParams{
#include "common/params.def"
};
#undef TPUSIM_PARAM

}  // namespace

std::string_view kind_name(ParamKind k) {
  switch (k) {
    case ParamKind::kString: return "string";
    case ParamKind::kEnum: return "enum";
    case ParamKind::kBool: return "bool";
    case ParamKind::kCount: return "integer";
    case ParamKind::kOptCount: return "integer or ~";
    case ParamKind::kRatio: return "number";
    case ParamKind::kSize: return "size";
    case ParamKind::kBandwidth: return "bandwidth";
    case ParamKind::kFrequency: return "frequency";
    case ParamKind::kTime: return "time";
    case ParamKind::kCountList: return "list of integers";
    case ParamKind::kBoolList: return "list of bools";
  }
  return "?";
}

std::optional<Dimension> kind_dimension(ParamKind k) {
  switch (k) {
    case ParamKind::kSize: return Dimension::kBytes;
    case ParamKind::kBandwidth: return Dimension::kBytesPerSecond;
    case ParamKind::kFrequency: return Dimension::kHertz;
    case ParamKind::kTime: return Dimension::kSeconds;
    default: return std::nullopt;
  }
}

std::span<const ParamDecl> all_params() { return kParams; }

const ParamDecl* find_param(std::string_view key) {
  for (const auto& p : kParams) {
    if (p.key == key) return &p;
  }
  return nullptr;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<std::string_view> closest_params(std::string_view key, std::size_t max_results) {
  // Compare against whole keys and against last segments, so both "core.mxu.row"
  // and "mxu.rows" find "core.mxu.rows".
  std::vector<std::pair<std::size_t, std::string_view>> scored;
  for (const auto& p : kParams) {
    std::size_t d = edit_distance(key, p.key);
    if (p.key.size() > key.size() && p.key.ends_with(key)) d = std::min<std::size_t>(d, 1);
    scored.emplace_back(d, p.key);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string_view> out;
  const std::size_t limit = std::max<std::size_t>(2, key.size() / 3);
  for (const auto& [d, k] : scored) {
    if (d > limit || out.size() >= max_results) break;
    out.push_back(k);
  }
  return out;
}

std::string param_value_text(const ParamDecl& p, const ChipConfig& c) {
  auto& mutable_c = const_cast<ChipConfig&>(c);  // field() is shared by readers and writers
  const ParamRef ref = p.field(mutable_c);
  return std::visit(
      overloaded{[](EnumRef e) -> std::string { return std::string(e.name(e.field)); },
      [&](auto* ptr) -> std::string {
        using T = std::remove_cvref_t<decltype(*ptr)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return *ptr;
        } else if constexpr (std::is_same_v<T, bool>) {
          return *ptr ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          return fmt::format("{}", *ptr);
        } else if constexpr (std::is_same_v<T, std::optional<std::int64_t>>) {
          return ptr->has_value() ? fmt::format("{}", **ptr) : std::string("~");
        } else if constexpr (std::is_same_v<T, double>) {
          if (auto dim = kind_dimension(p.kind)) return format_quantity(*ptr, *dim);
          return fmt::format("{:g}", *ptr);
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
          return fmt::format("[{}]", fmt::join(*ptr, ", "));
        } else {
          std::vector<std::string> s;
          for (bool b : *ptr) s.emplace_back(b ? "true" : "false");
          return fmt::format("[{}]", fmt::join(s, ", "));
        }
      }},
      ref);
}

}  // namespace tpusim
