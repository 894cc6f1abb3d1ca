#include "isa/hlo/values.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace tpusim::hlo {
namespace {

std::string join_ints(const Ints& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out;
}

std::string describe(const Lexer& lex, const Token& t) {
  if (t.kind == Tok::kEof) return "end of input";
  if (t.kind == Tok::kError) return lex.error() ? lex.error() : "an invalid token";
  std::string_view s = lex.text(t);
  if (s.size() > 40) return "'" + std::string(s.substr(0, 40)) + "…'";
  return "'" + std::string(s) + "'";
}

bool fail(ValueError& err, std::uint32_t offset, std::string message) {
  err.offset = offset;
  err.message = std::move(message);
  return false;
}

bool expect(Lexer& lex, Tok kind, std::string_view context, ValueError& err) {
  const Token& t = lex.peek();
  if (t.kind != kind) {
    return fail(err, t.begin,
                "expected " + std::string(tok_name(kind)) + " " + std::string(context) + ", found " +
                    describe(lex, t));
  }
  lex.next();
  return true;
}

// Splits `s` on `sep` into integers; false on any malformed piece.
bool split_ints(std::string_view s, char sep, Ints& out) {
  out.clear();
  while (true) {
    const std::size_t p = s.find(sep);
    std::int64_t v = 0;
    if (!parse_int(s.substr(0, p), v)) return false;
    out.push_back(v);
    if (p == std::string_view::npos) return true;
    s.remove_prefix(p + 1);
  }
}

bool is_open(Tok k) { return k == Tok::kLBrace || k == Tok::kLParen || k == Tok::kLBracket; }
bool is_close(Tok k) { return k == Tok::kRBrace || k == Tok::kRParen || k == Tok::kRBracket; }
Tok closer_of(Tok k) {
  return k == Tok::kLBrace ? Tok::kRBrace : k == Tok::kLParen ? Tok::kRParen : Tok::kRBracket;
}

}  // namespace

bool parse_int(std::string_view word, std::int64_t& out) {
  if (word.empty()) return false;
  const char* b = word.data();
  const char* e = b + word.size();
  if (*b == '+') ++b;
  auto r = std::from_chars(b, e, out);
  return r.ec == std::errc() && r.ptr == e;
}

bool parse_float(std::string_view word, double& out) {
  if (word == "inf" || word == "+inf") {
    out = HUGE_VAL;
    return true;
  }
  if (word == "-inf") {
    out = -HUGE_VAL;
    return true;
  }
  if (word == "nan" || word == "-nan") {
    out = std::nan("");
    return true;
  }
  if (word.empty()) return false;
  const char* b = word.data();
  const char* e = b + word.size();
  if (*b == '+') ++b;
  auto r = std::from_chars(b, e, out);
  return r.ec == std::errc() && r.ptr == e;
}

bool read_int(Lexer& lex, std::int64_t& out, ValueError& err) {
  const Token& t = lex.peek();
  if (t.kind == Tok::kWord && !parse_int(lex.text(t), out)) {
    const std::string_view w = lex.text(t);
    if (w.find_first_not_of("-+0123456789") == std::string_view::npos && w.size() > 18)
      return fail(err, t.begin, "integer " + describe(lex, t) + " out of range (64-bit)");
  }
  if (t.kind != Tok::kWord || !parse_int(lex.text(t), out))
    return fail(err, t.begin, "expected an integer, found " + describe(lex, t));
  lex.next();
  return true;
}

bool read_int_list(Lexer& lex, Ints& out, ValueError& err) {
  out.clear();
  if (!expect(lex, Tok::kLBrace, "to begin an integer list", err)) return false;
  if (lex.peek().kind == Tok::kRBrace) {
    lex.next();
    return true;
  }
  while (true) {
    std::int64_t v = 0;
    if (!read_int(lex, v, err)) return false;
    out.push_back(v);
    if (lex.peek().kind == Tok::kComma) {
      lex.next();
      continue;
    }
    return expect(lex, Tok::kRBrace, "to end an integer list", err);
  }
}

bool read_int_list_list(Lexer& lex, std::vector<Ints>& out, ValueError& err) {
  out.clear();
  if (!expect(lex, Tok::kLBrace, "to begin a list of integer lists", err)) return false;
  if (lex.peek().kind == Tok::kRBrace) {
    lex.next();
    return true;
  }
  while (true) {
    Ints inner;
    if (!read_int_list(lex, inner, err)) return false;
    out.push_back(std::move(inner));
    if (lex.peek().kind == Tok::kComma) {
      lex.next();
      continue;
    }
    return expect(lex, Tok::kRBrace, "to end a list of integer lists", err);
  }
}

bool read_bracket_ints(Lexer& lex, Ints& out, ValueError& err) {
  out.clear();
  if (!expect(lex, Tok::kLBracket, "to begin a dimension list", err)) return false;
  if (lex.peek().kind == Tok::kRBracket) {
    lex.next();
    return true;
  }
  while (true) {
    std::int64_t v = 0;
    if (!read_int(lex, v, err)) return false;
    out.push_back(v);
    if (lex.peek().kind == Tok::kComma) {
      lex.next();
      continue;
    }
    return expect(lex, Tok::kRBracket, "to end a dimension list", err);
  }
}

bool read_window(Lexer& lex, Window& out, ValueError& err) {
  out.clear();
  if (!expect(lex, Tok::kLBrace, "to begin a window", err)) return false;
  std::string_view first_field;
  while (lex.peek().kind != Tok::kRBrace) {
    const Token key = lex.peek();
    if (key.kind != Tok::kWord)
      return fail(err, key.begin,
                  "expected a window field (size, stride, pad, lhs_dilate, rhs_dilate, "
                  "rhs_reversal), found " + describe(lex, key));
    lex.next();
    if (!expect(lex, Tok::kEqual, "after a window field", err)) return false;
    const Token val = lex.peek();
    if (val.kind != Tok::kWord)
      return fail(err, val.begin, "expected window values like 3x3, found " + describe(lex, val));
    lex.next();
    const std::string_view k = lex.text(key);
    const std::string_view v = lex.text(val);
    // Each field has one entry per window dimension, separated by 'x'.
    std::vector<std::string_view> parts;
    for (std::string_view rest = v;;) {
      const std::size_t p = rest.find('x');
      parts.push_back(rest.substr(0, p));
      if (p == std::string_view::npos) break;
      rest.remove_prefix(p + 1);
    }
    // Fields come in any order (XLA's window parser loops over named fields);
    // the first one fixes the number of window dimensions.
    if (first_field.empty()) {
      first_field = k;
      out.assign(parts.size(), WindowDim{});
    } else if (parts.size() != out.size()) {
      return fail(err, val.begin,
                  "window field '" + std::string(k) + "' has " + std::to_string(parts.size()) +
                      " dimensions but '" + std::string(first_field) + "' has " + std::to_string(out.size()));
    }
    for (std::size_t i = 0; i < parts.size(); ++i) {
      WindowDim& d = out[i];
      bool ok = true;
      if (k == "pad") {
        Ints lh;
        ok = split_ints(parts[i], '_', lh) && lh.size() == 2;
        if (ok) {
          d.pad_low = lh[0];
          d.pad_high = lh[1];
        }
      } else {
        std::int64_t x = 0;
        ok = parse_int(parts[i], x);
        if (k == "size") d.size = x;
        else if (k == "stride") d.stride = x;
        else if (k == "lhs_dilate") d.lhs_dilate = x;
        else if (k == "rhs_dilate") d.rhs_dilate = x;
        else if (k == "rhs_reversal") d.reversal = x != 0;
        else
          return fail(err, key.begin,
                      "unknown window field '" + std::string(k) +
                          "' (expected size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal)");
      }
      if (!ok)
        return fail(err, val.begin,
                    "malformed window field '" + std::string(k) + "=" + std::string(v) + "'" +
                        (k == "pad" ? " (expected low_high per dimension, e.g. 1_1x0_2)"
                                    : " (expected integers separated by 'x', e.g. 3x3)"));
    }
  }
  lex.next();
  return true;
}

namespace {
// One side of dim_labels: `b01f`, `01io`. Fills the three role positions.
bool decode_labels(std::string_view s, char a, char b, std::int64_t& pa, std::int64_t& pb,
                   Ints& spatial) {
  pa = pb = -1;
  spatial.clear();
  Ints pos(s.size(), -1);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == a) {
      if (pa >= 0) return false;
      pa = static_cast<std::int64_t>(i);
    } else if (c == b) {
      if (pb >= 0) return false;
      pb = static_cast<std::int64_t>(i);
    } else if (c >= '0' && c <= '9') {
      const std::size_t d = static_cast<std::size_t>(c - '0');
      if (d >= pos.size() || pos[d] >= 0) return false;
      pos[d] = static_cast<std::int64_t>(i);
    } else {
      return false;
    }
  }
  if (pa < 0 || pb < 0) return false;
  const std::size_t n = s.size() - 2;
  for (std::size_t d = 0; d < n; ++d) {
    if (pos[d] < 0) return false;
    spatial.push_back(pos[d]);
  }
  return true;
}
}  // namespace

bool read_dim_labels(Lexer& lex, ConvDimLabels& out, ValueError& err) {
  const Token lhs = lex.peek();
  if (lhs.kind != Tok::kWord)
    return fail(err, lhs.begin, "expected dim_labels like b01f_01io->b01f, found " + describe(lex, lhs));
  lex.next();
  if (!expect(lex, Tok::kArrow, "in dim_labels (like b01f_01io->b01f)", err)) return false;
  const Token rhs = lex.peek();
  if (rhs.kind != Tok::kWord)
    return fail(err, rhs.begin, "expected output labels after '->', found " + describe(lex, rhs));
  lex.next();
  const std::string_view l = lex.text(lhs);
  const std::size_t us = l.find('_');
  if (us == std::string_view::npos)
    return fail(err, lhs.begin, "expected input and kernel labels separated by '_' (like b01f_01io)");
  const bool ok = decode_labels(l.substr(0, us), 'b', 'f', out.input_batch, out.input_feature,
                                out.input_spatial) &&
                  decode_labels(l.substr(us + 1), 'i', 'o', out.kernel_input_feature,
                                out.kernel_output_feature, out.kernel_spatial) &&
                  decode_labels(lex.text(rhs), 'b', 'f', out.output_batch, out.output_feature,
                                out.output_spatial);
  if (!ok)
    return fail(err, lhs.begin,
                "malformed dim_labels: each side needs one b/f (input, output) or i/o (kernel) "
                "and spatial digits 0..n-1");
  if (out.kernel_spatial.size() != out.input_spatial.size() ||
      out.output_spatial.size() != out.input_spatial.size())
    return fail(err, lhs.begin, "dim_labels sides have different numbers of spatial dimensions");
  return true;
}

bool read_slice_ranges(Lexer& lex, std::vector<SliceRange>& out, ValueError& err) {
  out.clear();
  if (!expect(lex, Tok::kLBrace, "to begin slice ranges", err)) return false;
  if (lex.peek().kind == Tok::kRBrace) {
    lex.next();
    return true;
  }
  while (true) {
    SliceRange r;
    if (!expect(lex, Tok::kLBracket, "to begin a slice range like [0:8:1]", err)) return false;
    if (!read_int(lex, r.start, err)) return false;
    if (!expect(lex, Tok::kColon, "in a slice range like [0:8:1]", err)) return false;
    if (!read_int(lex, r.limit, err)) return false;
    if (lex.peek().kind == Tok::kColon) {
      lex.next();
      if (!read_int(lex, r.stride, err)) return false;
    }
    if (!expect(lex, Tok::kRBracket, "to end a slice range", err)) return false;
    out.push_back(r);
    if (lex.peek().kind == Tok::kComma) {
      lex.next();
      continue;
    }
    return expect(lex, Tok::kRBrace, "to end slice ranges", err);
  }
}

bool read_padding(Lexer& lex, std::vector<PadDim>& out, ValueError& err) {
  out.clear();
  const Token t = lex.peek();
  if (t.kind != Tok::kWord)
    return fail(err, t.begin, "expected padding like 0_1_0x2_2_0, found " + describe(lex, t));
  lex.next();
  std::string_view rest = lex.text(t);
  while (true) {
    const std::size_t p = rest.find('x');
    Ints v;
    if (!split_ints(rest.substr(0, p), '_', v) || (v.size() != 2 && v.size() != 3))
      return fail(err, t.begin,
                  "malformed padding '" + std::string(lex.text(t)) +
                      "' (expected low_high[_interior] per dimension, separated by 'x')");
    out.push_back(PadDim{v[0], v[1], v.size() == 3 ? v[2] : 0});
    if (p == std::string_view::npos) return true;
    rest.remove_prefix(p + 1);
  }
}

bool expand_iota(const Ints& reshape, const Ints& perm, Ints& out, std::string& err) {
  std::int64_t total = 1;
  for (std::int64_t d : reshape) {
    if (d < 0) {
      err = "negative iota dimension";
      return false;
    }
    total = sat_mul(total, d);
  }
  if (total > kMaxExpandedDevices) {
    err = "iota device list too large (" + std::to_string(total) + " devices)";
    return false;
  }
  const std::size_t rank = reshape.size();
  Ints p = perm;
  if (p.empty())
    for (std::size_t i = 0; i < rank; ++i) p.push_back(static_cast<std::int64_t>(i));
  if (p.size() != rank) {
    err = "transpose permutation T(...) has " + std::to_string(p.size()) +
          " entries but the reshape has " + std::to_string(rank) + " dimensions";
    return false;
  }
  {
    Ints sorted = p;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < rank; ++i)
      if (sorted[i] != static_cast<std::int64_t>(i)) {
        err = "T(...) is not a permutation";
        return false;
      }
  }
  // Strides of the reshaped (row-major) array.
  Ints stride(rank, 1);
  for (std::size_t i = rank; i-- > 1;) stride[i - 1] = stride[i] * reshape[i];
  // Walk the transposed array in row-major order: index in transposed dims t,
  // element = sum t[k] * stride[p[k]].
  out.assign(static_cast<std::size_t>(total), 0);
  Ints idx(rank, 0);
  for (std::int64_t n = 0; n < total; ++n) {
    std::int64_t v = 0;
    for (std::size_t k = 0; k < rank; ++k) v += idx[k] * stride[static_cast<std::size_t>(p[k])];
    out[static_cast<std::size_t>(n)] = v;
    for (std::size_t k = rank; k-- > 0;) {
      if (++idx[k] < reshape[static_cast<std::size_t>(p[k])]) break;
      idx[k] = 0;
    }
  }
  return true;
}

bool read_replica_groups(Lexer& lex, ReplicaGroups& out, ValueError& err) {
  out = ReplicaGroups{};
  if (lex.peek().kind == Tok::kLBrace) return read_int_list_list(lex, out.groups, err);
  if (lex.peek().kind == Tok::kWord && lex.text(lex.peek()) == "mesh") {
    // Shardy form: mesh['axis_0'=4,'axis_1'=2] {'axis_0'}. Kept, not expanded.
    lex.next();
    out.mesh = true;
    if (lex.peek().kind != Tok::kLBracket)
      return fail(err, lex.peek().begin, "expected '[' after mesh, found " + describe(lex, lex.peek()));
    if (!skip_balanced(lex, err)) return false;
    if (lex.peek().kind == Tok::kLBrace) return skip_balanced(lex, err);
    return true;
  }
  const std::uint32_t at = lex.peek().begin;
  if (lex.peek().kind != Tok::kLBracket)
    return fail(err, at, "expected replica groups like {{0,1},{2,3}} or [2,4]<=[8], found " +
                             describe(lex, lex.peek()));
  out.iota = true;
  if (!read_bracket_ints(lex, out.iota_shape, err)) return false;
  if (!expect(lex, Tok::kLessEqual, "in iota replica groups like [2,4]<=[8]", err)) return false;
  if (!read_bracket_ints(lex, out.iota_reshape, err)) return false;
  if (lex.peek().kind == Tok::kWord && lex.text(lex.peek()) == "T" && !lex.peek().space_before) {
    lex.next();
    if (!expect(lex, Tok::kLParen, "after T in an iota transpose", err)) return false;
    while (lex.peek().kind != Tok::kRParen) {
      std::int64_t v = 0;
      if (!read_int(lex, v, err)) return false;
      out.iota_perm.push_back(v);
      if (lex.peek().kind == Tok::kComma) lex.next();
      else break;
    }
    if (!expect(lex, Tok::kRParen, "to end an iota transpose", err)) return false;
  }
  if (out.iota_shape.size() != 2)
    return fail(err, at, "iota replica groups need [num_groups,group_size], got " +
                             std::to_string(out.iota_shape.size()) + " dimensions");
  Ints flat;
  std::string e;
  if (!expand_iota(out.iota_reshape, out.iota_perm, flat, e)) return fail(err, at, e);
  if (sat_mul(out.iota_shape[0], out.iota_shape[1]) != static_cast<std::int64_t>(flat.size()))
    return fail(err, at, "iota replica groups [" + std::to_string(out.iota_shape[0]) + "," +
                             std::to_string(out.iota_shape[1]) + "] do not cover the " +
                             std::to_string(flat.size()) + " devices of the reshape");
  const auto g = static_cast<std::size_t>(out.iota_shape[0]);
  const auto s = static_cast<std::size_t>(out.iota_shape[1]);
  out.groups.assign(g, Ints{});
  for (std::size_t i = 0; i < g; ++i)
    out.groups[i].assign(flat.begin() + static_cast<std::ptrdiff_t>(i * s),
                         flat.begin() + static_cast<std::ptrdiff_t>((i + 1) * s));
  return true;
}

bool starts_shape(const Lexer& lex) {
  const Token& t = lex.peek();
  if (t.kind == Tok::kLParen) return true;
  if (t.kind != Tok::kWord) return false;
  if (lex.text(t) == "b") return lex.peek2().kind == Tok::kLParen;
  if (!element_type_from_name(lex.text(t))) return false;
  return lex.peek2().kind == Tok::kLBracket;
}

namespace {
bool read_layout(Lexer& lex, Layout& layout, ValueError& err) {
  lex.next();  // '{'
  if (lex.peek().kind != Tok::kRBrace && lex.peek().kind != Tok::kColon) {
    while (true) {
      std::int64_t v = 0;
      if (!read_int(lex, v, err)) return false;
      layout.minor_to_major.push_back(v);
      if (lex.peek().kind != Tok::kComma) break;
      lex.next();
    }
  }
  if (lex.peek().kind == Tok::kColon) {
    lex.next();
    while (true) {
      const Token item = lex.peek();
      // `*(s32)` and `#(s64)` (pointer / index types) start with punctuation.
      const bool punct = (item.kind == Tok::kStar || (item.kind == Tok::kOther && lex.text(item) == "#")) &&
                         lex.peek2().kind == Tok::kLParen;
      if (item.kind != Tok::kWord && !punct) break;
      lex.next();
      const std::string_view name = lex.text(item);
      if (punct) {
        if (!skip_balanced(lex, err)) return false;
        append_normalized(layout.other_items, lex.buffer().substr(item.begin, lex.prev_end() - item.begin));
        continue;
      }
      if (name == "T") {
        // One or more tiles: T(8,128)(2,1)
        while (lex.peek().kind == Tok::kLParen && !lex.peek().space_before) {
          lex.next();
          Tile tile;
          while (lex.peek().kind != Tok::kRParen) {
            if (lex.peek().kind == Tok::kStar) {
              lex.next();
              tile.dims.push_back(kCombinedTileDim);
            } else {
              std::int64_t v = 0;
              if (!read_int(lex, v, err)) return false;
              tile.dims.push_back(v);
            }
            if (lex.peek().kind != Tok::kComma) break;
            lex.next();
          }
          if (!expect(lex, Tok::kRParen, "to end a layout tile", err)) return false;
          layout.tiles.push_back(std::move(tile));
        }
      } else if (name == "S" || name == "E") {
        std::int64_t v = 0;
        if (!expect(lex, Tok::kLParen, "after a layout item", err) || !read_int(lex, v, err) ||
            !expect(lex, Tok::kRParen, "to end a layout item", err))
          return false;
        (name == "S" ? layout.memory_space : layout.element_size_bits) = v;
      } else if (lex.peek().kind == Tok::kLParen && !lex.peek().space_before) {
        // D(…), L(…), SC(…), P(…), M(…): kept verbatim.
        if (!skip_balanced(lex, err)) return false;
        append_normalized(layout.other_items, lex.buffer().substr(item.begin, lex.prev_end() - item.begin));
      } else {
        return fail(err, item.begin,
                    "unsupported layout item '" + std::string(name) +
                        "' (expected T(...) tiles, E(bits), S(memory space) or another X(...) item)");
      }
    }
  }
  return expect(lex, Tok::kRBrace, "to end a layout", err);
}
}  // namespace

bool read_shape(Lexer& lex, Shape& shape, ValueError& err, int depth) {
  shape.clear();
  const Token t = lex.peek();
  if (depth > kMaxNesting) return fail(err, t.begin, "tuple shape nested too deeply");
  if (t.kind == Tok::kLParen) {
    lex.next();
    auto& elems = shape.mutable_tuple_elements();
    if (lex.peek().kind != Tok::kRParen) {
      while (true) {
        Shape e;
        if (!read_shape(lex, e, err, depth + 1)) return false;
        elems.push_back(std::move(e));
        if (lex.peek().kind != Tok::kComma) break;
        lex.next();
      }
    }
    return expect(lex, Tok::kRParen, "to end a tuple shape", err);
  }
  if (t.kind != Tok::kWord)
    return fail(err, t.begin, "expected a shape like f32[2,3], found " + describe(lex, t));
  if (lex.text(t) == "b" && lex.peek2().kind == Tok::kLParen) {
    // Buffer shape: b(f32[4]{0}).
    lex.next();
    lex.next();
    Shape inner;
    if (!read_shape(lex, inner, err, depth + 1)) return false;
    if (inner.is_tuple() || inner.is_buffer())
      return fail(err, t.begin, "a buffer shape b(...) must wrap an array shape");
    shape = Shape::buffer(std::move(inner));
    return expect(lex, Tok::kRParen, "to end a buffer shape", err);
  }
  const auto type = element_type_from_name(lex.text(t));
  if (!type)
    return fail(err, t.begin,
                "unknown element type " + describe(lex, t) +
                    " (expected pred, s8…s64, u8…u64, f16, bf16, f32, f64, f8 variants, c64, c128, token)");
  lex.next();
  shape.set_element_type(*type);
  if (!expect(lex, Tok::kLBracket, "after the element type", err)) return false;
  auto& dims = shape.mutable_dims();
  if (lex.peek().kind != Tok::kRBracket) {
    while (true) {
      const Token d = lex.peek();
      bool dynamic = false;
      std::int64_t v = 0;
      if (d.kind == Tok::kQuestion) {
        lex.next();
        dynamic = true;
        v = kUnboundedDim;
      } else {
        if (d.kind == Tok::kLessEqual) {
          lex.next();
          dynamic = true;
        }
        if (!read_int(lex, v, err)) return false;
        if (v < 0) return fail(err, d.begin, "negative dimension size");
      }
      dims.push_back(v);
      if (dynamic) shape.set_dynamic(static_cast<int>(dims.size()) - 1, true);
      if (lex.peek().kind != Tok::kComma) break;
      lex.next();
    }
  }
  if (!expect(lex, Tok::kRBracket, "to end the dimensions", err)) return false;
  if (!shape.is_array() && !dims.empty())
    return fail(err, t.begin, std::string(lex.text(t)) + " has no dimensions (write " + std::string(lex.text(t)) + "[])");
  // XLA's ShapeUtil::ValidateShape: the array's size in bytes fits in int64.
  std::int64_t elements = 1;
  for (std::int64_t d : dims)
    if (__builtin_mul_overflow(elements, d < 0 ? 1 : d, &elements))
      return fail(err, t.begin, "shape too large: its element count overflows int64");
  // Sub-byte types pack, so only whole-byte types can overflow here.
  const int bits = element_type_bits(*type);
  std::int64_t bytes = 0;
  if (bits % 8 == 0 && __builtin_mul_overflow(elements, bits / 8, &bytes))
    return fail(err, t.begin, "shape too large: its size in bytes overflows int64");
  // A layout touches the `]`; a `{` after whitespace opens something else
  // (e.g. the body after `-> f32[] {`).
  if (lex.peek().kind == Tok::kLBrace && !lex.peek().space_before) {
    const std::uint32_t at = lex.peek().begin;
    Layout layout;
    if (!read_layout(lex, layout, err)) return false;
    // minor_to_major is a permutation of the dimensions (or empty, as XLA prints
    // for some scalars and tokens).
    const auto& m2m = layout.minor_to_major;
    std::vector<bool> seen(dims.size(), false);
    const bool sized = m2m.empty() || m2m.size() == dims.size();
    for (std::int64_t d : m2m) {
      if (!sized || d < 0 || static_cast<std::size_t>(d) >= dims.size() || seen[static_cast<std::size_t>(d)])
        return fail(err, at, "layout {" + join_ints(m2m) + "} is not a permutation of the " +
                                  std::to_string(dims.size()) + " dimensions of the shape");
      seen[static_cast<std::size_t>(d)] = true;
    }
    shape.set_layout(std::move(layout));
  }
  return true;
}

bool skip_balanced(Lexer& lex, ValueError& err) {
  // Explicit stack of expected closers: no recursion, depth bounded by input.
  std::vector<Tok> stack;
  const Token first = lex.peek();
  if (!is_open(first.kind))
    return fail(err, first.begin, "expected '{', '(' or '[', found " + describe(lex, first));
  do {
    const Token t = lex.peek();
    if (t.kind == Tok::kEof || t.kind == Tok::kError)
      return fail(err, t.kind == Tok::kError ? t.begin : first.begin,
                  t.kind == Tok::kError ? describe(lex, t)
                                        : "unbalanced " + std::string(lex.text(first)) +
                                              ": no matching close before the end of input");
    lex.next();
    if (is_open(t.kind)) {
      stack.push_back(closer_of(t.kind));
    } else if (is_close(t.kind)) {
      if (t.kind != stack.back())
        return fail(err, t.begin,
                    "mismatched " + describe(lex, t) + " (expected " +
                        std::string(tok_name(stack.back())) + ")");
      stack.pop_back();
    }
  } while (!stack.empty());
  return true;
}

bool skip_raw_value(Lexer& lex, ValueError& err) {
  const Token first = lex.peek();
  if (first.kind == Tok::kEof || first.kind == Tok::kComma || is_close(first.kind) ||
      first.kind == Tok::kError)
    return fail(err, first.begin, "expected an attribute value, found " + describe(lex, first));
  bool start = true;
  while (true) {
    const Token t = lex.peek();
    if (!start && (t.space_before || t.kind == Tok::kComma || is_close(t.kind) ||
                   t.kind == Tok::kEof || t.kind == Tok::kEqual))
      return true;
    if (t.kind == Tok::kError) return fail(err, t.begin, describe(lex, t));
    if (is_open(t.kind)) {
      if (!skip_balanced(lex, err)) return false;
    } else {
      lex.next();
    }
    start = false;
  }
}

namespace {
// The content of a "…" token with C escapes resolved (\n, \t, \", \\; others kept).
std::string unquote(std::string_view s) {
  std::string out;
  s = s.substr(1, s.size() - 2);
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
  }
  return out;
}
}  // namespace

bool read_key_values(Lexer& lex, std::vector<KeyValue>& out, ValueError& err) {
  out.clear();
  if (!expect(lex, Tok::kLBrace, "to begin a key=value list", err)) return false;
  while (lex.peek().kind != Tok::kRBrace) {
    const Token key = lex.peek();
    if (key.kind != Tok::kWord && key.kind != Tok::kString)
      return fail(err, key.begin, "expected a key, found " + describe(lex, key));
    lex.next();
    if (!expect(lex, Tok::kEqual, "after a key", err)) return false;
    KeyValue kv;
    kv.key = key.kind == Tok::kString ? unquote(lex.text(key)) : std::string(lex.text(key));
    const Token v = lex.peek();
    if (v.kind == Tok::kString) {
      lex.next();
      kv.value = unquote(lex.text(v));
    } else {
      if (!skip_raw_value(lex, err)) return false;
      kv.value = normalize_value_text(lex.buffer().substr(v.begin, lex.prev_end() - v.begin));
    }
    out.push_back(std::move(kv));
    if (lex.peek().kind == Tok::kComma) lex.next();
  }
  lex.next();
  return true;
}

bool skip_literal(Lexer& lex, bool until_paren, ValueError& err) {
  if (!until_paren) {
    const Token t = lex.peek();
    if (is_open(t.kind)) return skip_balanced(lex, err);
    if (t.kind != Tok::kWord)
      return fail(err, t.begin, "expected a literal value, found " + describe(lex, t));
    lex.next();
    return true;
  }
  while (lex.peek().kind != Tok::kRParen) {
    const Token t = lex.peek();
    if (is_open(t.kind)) {
      if (!skip_balanced(lex, err)) return false;
    } else if (t.kind == Tok::kWord || t.kind == Tok::kComma || t.kind == Tok::kString ||
               t.kind == Tok::kColon) {
      lex.next();
    } else {
      return fail(err, t.begin, "unexpected " + describe(lex, t) + " in a constant literal");
    }
  }
  return true;
}

void append_normalized(std::string& out, std::string_view text) {
  Lexer lex(text);
  bool first = true;
  while (lex.peek().kind != Tok::kEof) {
    const Token t = lex.next();
    if (t.kind == Tok::kError) {  // cannot happen for validated values; keep text
      out.append(text.substr(t.begin));
      return;
    }
    if (!first && t.space_before) out += ' ';
    out.append(text.substr(t.begin, t.end - t.begin));
    first = false;
  }
}

std::string normalize_value_text(std::string_view text) {
  std::string out;
  append_normalized(out, text);
  return out;
}

}  // namespace tpusim::hlo
