#include "isa/stablehlo/spec_attributes.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
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
  kFloat,      // epsilon = 1.0e-03 : f32 -> 1.0e-03
  kWord,       // #stablehlo<transpose NO_TRANSPOSE> or a bare NO_TRANSPOSE -> NO_TRANSPOSE
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

constexpr std::array<Row, 40> kRows = {{
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
    {"reduce-precision", "exponent_bits", "exponent_bits", Kind::kInt},
    {"reduce-precision", "mantissa_bits", "mantissa_bits", Kind::kInt},
    {"*batch-norm", "epsilon", "epsilon", Kind::kFloat},
    {"*batch-norm", "feature_index", "feature_index", Kind::kInt},
    {"cholesky", "lower", "lower", Kind::kBool},
    {"triangular-solve", "left_side", "left_side", Kind::kBool},
    {"triangular-solve", "lower", "lower", Kind::kBool},
    {"triangular-solve", "unit_diagonal", "unit_diagonal", Kind::kBool},
    {"triangular-solve", "transpose_a", "transpose_a", Kind::kWord},
    {"fft", "fft_type|type", "fft_type", Kind::kWord},
    {"fft", "fft_length|length", "fft_length", Kind::kList},
}};

// Top-level attributes that hold the rows' keys or are read with them.
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kHolders = {{
    {"gather", "dimension_numbers"},
    {"scatter", "scatter_dimension_numbers"},
    {"pad", "edge_padding_high|high|interior_padding|interior"},
    {"all-to-all", "concat_dimension|split_count"},
    {"reduce-window", "window_strides|base_dilations|window_dilations|padding"},
    {"select-and-scatter", "window_strides|padding"},
}};

bool is_collective(std::string_view op) {
  for (const auto c : kCollectives) {
    if (c == op) return true;
  }
  return false;
}

bool row_of(const Row& r, std::string_view op) {
  return r.opcode == op || (r.opcode == "*collective" && is_collective(op)) ||
         (r.opcode == "*batch-norm" && op.starts_with("batch-norm-"));
}

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

// An integer attribute value beyond int64 (thrown by numbers(), caught by the
// entry points below and reported as the op's error).
struct OutOfRange {
  std::string text;
};

Ints numbers(std::string_view text) {
  Ints out;
  for (std::size_t i = 0; i < text.size();) {
    if (std::isdigit(static_cast<unsigned char>(text[i])) || (text[i] == '-' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      std::int64_t v = 0;
      const auto r = std::from_chars(text.data() + i, text.data() + text.size(), v);
      if (r.ec != std::errc{}) throw OutOfRange{std::string(text.substr(i, static_cast<std::size_t>(r.ptr - text.data()) - i))};
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

// `window_reversal = array<i1: false, true>` (or `dense<[false, true]>`, a
// splat `dense<true>`) as 0/1 per dimension; empty when absent or all false.
Ints reversal(const std::vector<Token>& t, std::size_t rank) {
  std::size_t k = find(t, "window_reversal");
  Ints out;
  if (k == std::string::npos) return out;
  if (t[k].kind == TokKind::kDense) {
    for (std::size_t at = 0; (at = t[k].text.find_first_of("tf", at)) != std::string::npos; ++at) {
      out.push_back(t[k].text[at] == 't' ? 1 : 0);
    }
  } else {
    for (int depth = 0; k < t.size(); ++k) {
      if (is(t[k], "<")) ++depth;
      if (is(t[k], ">") && --depth == 0) break;
      if (is(t[k], "true") || is(t[k], "false")) out.push_back(is(t[k], "true") ? 1 : 0);
    }
  }
  if (out.size() == 1) out.assign(rank, out[0]);
  out.resize(rank, 0);
  if (std::all_of(out.begin(), out.end(), [](std::int64_t x) { return x == 0; })) out.clear();
  return out;
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
  std::string out = fmt::format("{{size={} stride={} pad={} lhs_dilate={} rhs_dilate={}", fmt::join(size, "x"),
                                fmt::join(stride, "x"), fmt::join(pads, "x"), fmt::join(lhs, "x"), fmt::join(rhs, "x"));
  if (const Ints rev = reversal(t, size.size()); !rev.empty()) out += fmt::format(" rhs_reversal={}", fmt::join(rev, "x"));
  return out + "}";
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

// `dense<[[0, 1], [2, 3]]>` -> `{{0,1},{2,3}}`; the -1 entries that pad
// uneven groups to a rectangle are left out.
bool groups(const Token& t, std::string& out) {
  if (t.kind != TokKind::kDense || !t.text.starts_with("dense<")) return false;
  const std::string_view v = t.text.substr(6, t.text.size() - 7);
  if (!v.empty() && v.front() != '[') return false;
  std::vector<Ints> rows;
  int depth = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '[' && ++depth == 2) rows.emplace_back();
    if (v[i] == ']') --depth;
    if (depth == 2 && (std::isdigit(static_cast<unsigned char>(v[i])) || v[i] == '-')) {
      std::int64_t x = 0;
      const auto r = std::from_chars(v.data() + i, v.data() + v.size(), x);
      if (r.ec != std::errc{}) return false;  // a lone '-' or an out-of-range id: not a group list
      if (x >= 0) rows.back().push_back(x);
      i = static_cast<std::size_t>(r.ptr - v.data()) - 1;
    }
  }
  std::vector<std::string> parts;
  for (const Ints& r : rows) parts.push_back(braces(r));
  out = fmt::format("{{{}}}", fmt::join(parts, ","));
  return true;
}

// The enum word of `#stablehlo<transpose NO_TRANSPOSE>` (the last identifier
// before '>') or of a bare word.
std::string word_at(const std::vector<Token>& t, std::size_t k) {
  if (k >= t.size()) return "";
  if (t[k].kind == TokKind::kIdent && !t[k].text.starts_with("#")) return std::string(t[k].text);
  std::string last;
  for (; k < t.size() && !is(t[k], ">"); ++k) {
    if (t[k].kind == TokKind::kIdent) last = t[k].text;
  }
  return last;
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
    case Kind::kFloat:
      if (k == std::string::npos || t[k].kind != TokKind::kNumber) return error = fmt::format("'{}' needs a number", r.keys), false;
      attrs += fmt::format(", {}={}", r.hlo, t[k].text);
      return true;
    case Kind::kWord: {
      const std::string w = k == std::string::npos ? "" : word_at(t, k);
      if (w.empty()) return error = fmt::format("'{}' needs a value", r.keys), false;
      attrs += fmt::format(", {}={}", r.hlo, w);
      return true;
    }
  }
  return true;
}

// Runs `body`, turning an integer beyond int64 in an attribute into `error`.
template <typename Body>
bool in_range(std::string& error, Body&& body) {
  try {
    return body();
  } catch (const OutOfRange& e) {
    error = fmt::format("integer '{}' is out of range (int64)", e.text);
    return false;
  }
}

}  // namespace

bool conv_attributes(const std::vector<Token>& toks, const std::vector<std::int64_t>& kernel_dims, std::string& attrs,
                     std::string& error) {
  return in_range(error, [&] {
    const auto labels = conv_labels(toks);
    if (labels.size() != 3) return error = "convolution needs dimension numbers '[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]'", false;
    Ints size;
    for (char d = '0'; d <= '9'; ++d) {
      const auto at = labels[1].find(d);
      if (at == std::string::npos) break;
      if (at >= kernel_dims.size()) return error = "convolution kernel labels do not match the kernel's rank", false;
      size.push_back(kernel_dims[at]);
    }
    if (!size.empty()) {  // no spatial dimensions: no window
      attrs += ", window=" + window_text(toks, size, "window_strides|stride", "padding|pad", "lhs_dilation|lhs_dilate",
                                         "rhs_dilation|rhs_dilate");
    }
    attrs += fmt::format(", dim_labels={}_{}->{}", labels[0], labels[1], labels[2]);
    for (const std::string_view count : {"feature_group_count", "batch_group_count"}) {
      const Ints v = ints_at(toks, find(toks, count));
      if (!v.empty()) attrs += fmt::format(", {}={}", count, v[0]);
    }
    return true;
  });
}

std::string precision_attributes(const std::vector<Token>& toks) {
  std::size_t k = find(toks, "precision_config|precision");
  if (k == std::string::npos) return "";
  std::vector<std::string> words;
  for (int depth = 0; k < toks.size(); ++k) {
    if (is(toks[k], "[")) ++depth;
    if (is(toks[k], "]") && --depth == 0) break;
    for (const std::string_view w : {"DEFAULT", "HIGHEST", "HIGH"}) {
      if (is(toks[k], w)) {
        std::string lower(w);
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        words.push_back(lower);
      }
    }
  }
  return words.empty() ? "" : fmt::format(", operand_precision={{{}}}", fmt::join(words, ","));
}

// XLA's CustomCallApiVersion enum, in order.
constexpr std::string_view kApiVersions[] = {"API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
                                             "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"};

std::string api_version_attribute(const std::vector<Token>& toks) {
  Ints v;
  try {
    v = ints_at(toks, find(toks, "api_version"));
  } catch (const OutOfRange&) {
    return "";  // as for any other number that names no version: the default
  }
  if (v.size() != 1 || v[0] < 1 || v[0] >= static_cast<std::int64_t>(std::size(kApiVersions))) return "";
  return fmt::format(", api_version={}", kApiVersions[v[0]]);
}

int api_version_number(std::string_view hlo_name) {
  for (std::size_t i = 0; i < std::size(kApiVersions); ++i) {
    if (kApiVersions[i] == hlo_name) return static_cast<int>(i);
  }
  return -1;
}

bool is_spec_collective(std::string_view hlo_opcode) { return is_collective(hlo_opcode); }

bool has_spec_attributes(std::string_view hlo_opcode) {
  for (const Row& r : kRows) {
    if (row_of(r, hlo_opcode)) return true;
  }
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
  return in_range(error, [&] {
    for (const Row& r : kRows) {
      if (!row_of(r, hlo_opcode) || r.keys.empty()) continue;
      if (!one(r, toks, attrs, error)) return false;
    }
    // reduce_precision's pretty `format = e5m10`.
    if (hlo_opcode == "reduce-precision" && find(toks, "exponent_bits") == std::string::npos) {
      const std::size_t k = find(toks, "format");
      int e = 0, m = 0;
      if (k == std::string::npos || std::sscanf(std::string(toks[k].text).c_str(), "e%dm%d", &e, &m) != 2) {
        error = "reduce_precision needs 'format = eXmY' (or exponent_bits and mantissa_bits)";
        return false;
      }
      attrs += fmt::format(", exponent_bits={}, mantissa_bits={}", e, m);
    }
    // Attributes HLO's parser would not miss but the op cannot do without.
    if (hlo_opcode == "fft" && find(toks, "fft_type|type") == std::string::npos) {
      error = "fft needs 'fft_type = #stablehlo<fft_type FFT>' (pretty: 'type = FFT') and its length";
      return false;
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
  });
}

}  // namespace tpusim::stablehlo
