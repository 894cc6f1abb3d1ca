#include "isa/stablehlo/spec_attributes.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <fmt/format.h>

namespace tpusim::stablehlo {
namespace {

using Ints = std::vector<std::int64_t>;

enum class Kind {
  kList,       // array<i64: 1, 2>, [1, 2] or dense<[1, 2]> -> {1,2}
  kListOfOne,  // dimension = 1 : i64 -> {1}
  kInt,        // index_vector_dim = 1 -> 1
  kBool,       // true | false, or a unit attribute (present: true)
  kGroups,     // dense<[[0, 1], [2, 3]]> -> {{0,1},{2,3}}
  kChannel,    // #stablehlo.channel_handle<handle = 1, type = 0> -> 1
  kPadding,    // edge_padding_low/high, interior_padding (pretty: low, high, interior) -> 0_2_0x1_3_0
  kWindow,     // window_dimensions, window_strides, padding, base/window_dilations -> {size=... stride=...}
};

// One attribute of one op: the StableHLO keys that hold it ('|' between
// the specification's name and the pretty syntax's), its HLO name and form.
struct Row {
  std::string_view opcode;
  std::string_view keys;
  std::string_view hlo;
  Kind kind;
};

constexpr std::string_view kCollectives[] = {"all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                                             "collective-permute", "collective-broadcast"};

constexpr std::array<Row, 29> kRows = {{
    {"dynamic-slice", "slice_sizes|sizes", "dynamic_slice_sizes", Kind::kList},
    {"pad", "edge_padding_low|low", "padding", Kind::kPadding},
    {"gather", "offset_dims", "offset_dims", Kind::kList},
    {"gather", "collapsed_slice_dims", "collapsed_slice_dims", Kind::kList},
    {"gather", "operand_batching_dims", "operand_batching_dims", Kind::kList},
    {"gather", "start_indices_batching_dims", "start_indices_batching_dims", Kind::kList},
    {"gather", "start_index_map", "start_index_map", Kind::kList},
    {"gather", "index_vector_dim", "index_vector_dim", Kind::kInt},
    {"gather", "slice_sizes", "slice_sizes", Kind::kList},
    {"gather", "indices_are_sorted", "indices_are_sorted", Kind::kBool},
    {"scatter", "update_window_dims", "update_window_dims", Kind::kList},
    {"scatter", "inserted_window_dims", "inserted_window_dims", Kind::kList},
    {"scatter", "input_batching_dims", "input_batching_dims", Kind::kList},
    {"scatter", "scatter_indices_batching_dims", "scatter_indices_batching_dims", Kind::kList},
    {"scatter", "scatter_dims_to_operand_dims", "scatter_dims_to_operand_dims", Kind::kList},
    {"scatter", "index_vector_dim", "index_vector_dim", Kind::kInt},
    {"scatter", "indices_are_sorted", "indices_are_sorted", Kind::kBool},
    {"scatter", "unique_indices", "unique_indices", Kind::kBool},
    {"sort", "dimension", "dimensions", Kind::kListOfOne},
    {"sort", "is_stable", "is_stable", Kind::kBool},
    {"*collective", "replica_groups", "replica_groups", Kind::kGroups},
    {"*collective", "channel_handle", "channel_id", Kind::kChannel},
    {"*collective", "use_global_device_ids", "use_global_device_ids", Kind::kBool},
    {"all-gather", "all_gather_dim", "dimensions", Kind::kListOfOne},
    {"reduce-scatter", "scatter_dimension", "dimensions", Kind::kListOfOne},
    {"all-to-all", "split_dimension", "dimensions", Kind::kListOfOne},
    {"collective-permute", "source_target_pairs", "source_target_pairs", Kind::kGroups},
    {"reduce-window", "window_dimensions", "window", Kind::kWindow},
    {"select-and-scatter", "window_dimensions", "window", Kind::kWindow},
}};

// Top-level attributes that hold the rows' keys or are read with them.
constexpr std::array<std::pair<std::string_view, std::string_view>, 13> kHolders = {{
    {"gather", "dimension_numbers"},
    {"scatter", "scatter_dimension_numbers"},
    {"pad", "edge_padding_high|high|interior_padding|interior"},
    {"all-to-all", "concat_dimension|split_count"},
    {"reduce-window", "window_strides|base_dilations|window_dilations|padding"},
    {"select-and-scatter", "window_strides|padding"},
    {"all-reduce", ""},
    {"all-gather", ""},
    {"reduce-scatter", ""},
    {"collective-permute", ""},
    {"collective-broadcast", ""},
    {"dynamic-slice", ""},
    {"sort", ""},
}};

bool is_collective(std::string_view op) {
  for (const auto c : kCollectives) {
    if (c == op) return true;
  }
  return false;
}

bool row_of(const Row& r, std::string_view op) { return r.opcode == op || (r.opcode == "*collective" && is_collective(op)); }

bool has_key(std::string_view keys, std::string_view name) {
  while (!keys.empty()) {
    const auto bar = keys.find('|');
    if (keys.substr(0, bar) == name) return true;
    keys = bar == std::string_view::npos ? std::string_view() : keys.substr(bar + 1);
  }
  return false;
}

bool is(const Token& t, std::string_view s) { return t.text == s && t.kind != TokKind::kString; }

// The index of the value of `key = value` (any of '|'-separated keys), or npos; `present` when the key is there at all.
std::size_t find(const std::vector<Token>& t, std::string_view keys, bool* present = nullptr) {
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].kind != TokKind::kIdent || !has_key(keys, t[i].text)) continue;
    if (present != nullptr) *present = true;
    if (i + 2 < t.size() && is(t[i + 1], "=")) return i + 2;
  }
  return std::string::npos;
}

Ints numbers(std::string_view text) {
  Ints out;
  for (std::size_t i = 0; i < text.size();) {
    if (std::isdigit(static_cast<unsigned char>(text[i])) || (text[i] == '-' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      std::int64_t v = 0;
      const auto r = std::from_chars(text.data() + i, text.data() + text.size(), v);
      out.push_back(v);
      i = static_cast<std::size_t>(r.ptr - text.data());
    } else {
      ++i;
    }
  }
  return out;
}

// The integers of the value at `k`: a number, `array<i64: ...>`, `[...]` or `dense<...>`.
Ints ints_at(const std::vector<Token>& t, std::size_t k) {
  if (k >= t.size()) return {};
  if (t[k].kind == TokKind::kDense) return numbers(t[k].text.substr(6));
  if (t[k].kind == TokKind::kNumber) return numbers(t[k].text);
  if (is(t[k], "array")) ++k;
  Ints out;
  int depth = 0;
  for (; k < t.size(); ++k) {
    if (is(t[k], "[") || is(t[k], "<")) ++depth;
    if (is(t[k], "]") || is(t[k], ">")) {
      if (--depth == 0) break;
    }
    if (t[k].kind == TokKind::kNumber) out.push_back(numbers(t[k].text).at(0));
    if (depth == 0) break;
  }
  return out;
}

std::string braces(const Ints& v) { return fmt::format("{{{}}}", fmt::join(v, ",")); }

std::string padding(const std::vector<Token>& t) {
  const Ints lo = ints_at(t, find(t, "edge_padding_low|low"));
  const Ints hi = ints_at(t, find(t, "edge_padding_high|high"));
  const Ints in = ints_at(t, find(t, "interior_padding|interior"));
  std::vector<std::string> dims;
  for (std::size_t i = 0; i < lo.size(); ++i) {
    dims.push_back(fmt::format("{}_{}_{}", lo[i], i < hi.size() ? hi[i] : 0, i < in.size() ? in[i] : 0));
  }
  return fmt::format("{}", fmt::join(dims, "x"));
}

// An HLO window over `size` from the keys of strides, padding (N x 2, or a
// splat) and dilations.
std::string window_text(const std::vector<Token>& t, const Ints& size, std::string_view stride_keys,
                        std::string_view pad_keys, std::string_view lhs_keys, std::string_view rhs_keys) {
  const auto get = [&](std::string_view keys) {
    Ints v = ints_at(t, find(t, keys));
    if (v.size() == 1 && size.size() > 1) v.assign(size.size(), v[0]);  // a splat
    v.resize(size.size(), 1);
    return v;
  };
  const Ints stride = get(stride_keys), lhs = get(lhs_keys), rhs = get(rhs_keys);
  Ints pad = ints_at(t, find(t, pad_keys));
  if (pad.size() == 1) pad.assign(2 * size.size(), pad[0]);
  std::vector<std::string> pads;
  for (std::size_t i = 0; i < size.size(); ++i) {
    pads.push_back(fmt::format("{}_{}", 2 * i < pad.size() ? pad[2 * i] : 0, 2 * i + 1 < pad.size() ? pad[2 * i + 1] : 0));
  }
  return fmt::format("{{size={} stride={} pad={} lhs_dilate={} rhs_dilate={}}}", fmt::join(size, "x"),
                     fmt::join(stride, "x"), fmt::join(pads, "x"), fmt::join(lhs, "x"), fmt::join(rhs, "x"));
}

std::string window(const std::vector<Token>& t) {
  return window_text(t, ints_at(t, find(t, "window_dimensions")), "window_strides", "padding", "base_dilations",
                     "window_dilations");
}

// `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` (pretty, or inside #stablehlo.conv<...>): three labels.
std::vector<std::string> conv_labels(const std::vector<Token>& t) {
  std::vector<std::string> out;
  std::size_t k = find(t, "dim_numbers|dimension_numbers");
  if (k == std::string::npos) return out;
  std::string cur;
  int depth = 0;
  for (; k < t.size() && out.size() < 3; ++k) {
    if (is(t[k], "[")) ++depth, cur.clear();
    else if (is(t[k], "]")) --depth, out.push_back(cur);
    else if (depth == 1 && (t[k].kind == TokKind::kIdent || t[k].kind == TokKind::kNumber)) cur += t[k].text;
  }
  return out;
}

// `dense<[[0, 1], [2, 3]]>` -> `{{0,1},{2,3}}`.
bool groups(const Token& t, std::string& out) {
  if (t.kind != TokKind::kDense || !t.text.starts_with("dense<")) return false;
  const std::string_view v = t.text.substr(6, t.text.size() - 7);
  if (!v.empty() && v.front() != '[') return false;
  out.clear();
  for (const char c : v) {
    if (c == '[') out += '{';
    else if (c == ']') out += '}';
    else if (c != ' ') out += c;
  }
  if (out.empty()) out = "{}";
  return true;
}

bool one(const Row& r, const std::vector<Token>& t, std::string& attrs, std::string& error) {
  bool present = false;
  const std::size_t k = find(t, r.keys, &present);
  if (!present) return true;
  switch (r.kind) {
    case Kind::kList: attrs += fmt::format(", {}={}", r.hlo, braces(ints_at(t, k))); return true;
    case Kind::kListOfOne:
    case Kind::kInt: {
      const Ints v = ints_at(t, k);
      if (v.size() != 1) return error = fmt::format("'{}' needs one integer", r.keys), false;
      attrs += r.kind == Kind::kInt ? fmt::format(", {}={}", r.hlo, v[0]) : fmt::format(", {}={{{}}}", r.hlo, v[0]);
      return true;
    }
    case Kind::kBool: attrs += fmt::format(", {}={}", r.hlo, k != std::string::npos && is(t[k], "false") ? "false" : "true"); return true;
    case Kind::kGroups: {
      std::string g;
      if (k == std::string::npos || !groups(t[k], g)) return error = fmt::format("'{}' needs a dense<[[...]]> value", r.keys), false;
      attrs += fmt::format(", {}={}", r.hlo, g);
      return true;
    }
    case Kind::kChannel: {
      const Ints h = ints_at(t, find(t, "handle"));
      if (!h.empty() && h[0] > 0) attrs += fmt::format(", channel_id={}", h[0]);
      return true;
    }
    case Kind::kPadding: attrs += fmt::format(", padding={}", padding(t)); return true;
    case Kind::kWindow: attrs += fmt::format(", window={}", window(t)); return true;
  }
  return true;
}

}  // namespace

bool conv_attributes(const std::vector<Token>& toks, const std::vector<std::int64_t>& kernel_dims, std::string& attrs,
                     std::string& error) {
  const auto labels = conv_labels(toks);
  if (labels.size() != 3) return error = "convolution needs dimension numbers '[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]'", false;
  Ints size;
  for (char d = '0'; d <= '9'; ++d) {
    const auto at = labels[1].find(d);
    if (at == std::string::npos) break;
    if (at >= kernel_dims.size()) return error = "convolution kernel labels do not match the kernel's rank", false;
    size.push_back(kernel_dims[at]);
  }
  attrs += fmt::format(", window={}, dim_labels={}_{}->{}",
                       window_text(toks, size, "window_strides|stride", "padding|pad", "lhs_dilation|lhs_dilate",
                                   "rhs_dilation|rhs_dilate"),
                       labels[0], labels[1], labels[2]);
  for (const std::string_view count : {"feature_group_count", "batch_group_count"}) {
    const Ints v = ints_at(toks, find(toks, count));
    if (!v.empty()) attrs += fmt::format(", {}={}", count, v[0]);
  }
  return true;
}

bool has_spec_attributes(std::string_view hlo_opcode) {
  for (const auto& [op, names] : kHolders) {
    if (op == hlo_opcode) return true;
  }
  return false;
}

bool is_spec_attribute(std::string_view hlo_opcode, std::string_view name) {
  for (const Row& r : kRows) {
    if (row_of(r, hlo_opcode) && !r.keys.empty() && has_key(r.keys, name)) return true;
  }
  for (const auto& [op, names] : kHolders) {
    if (op == hlo_opcode && has_key(names, name)) return true;
  }
  return false;
}

bool spec_attributes(std::string_view hlo_opcode, const std::vector<Token>& toks, std::string& attrs, std::string& error) {
  for (const Row& r : kRows) {
    if (!row_of(r, hlo_opcode) || r.keys.empty()) continue;
    if (!one(r, toks, attrs, error)) return false;
  }
  if (hlo_opcode == "all-to-all") {
    const Ints split = ints_at(toks, find(toks, "split_dimension"));
    const Ints concat = ints_at(toks, find(toks, "concat_dimension"));
    if (!split.empty() && !concat.empty() && split != concat) {
      error = "all_to_all with concat_dimension != split_dimension is not supported";
      return false;
    }
  }
  return true;
}

}  // namespace tpusim::stablehlo
