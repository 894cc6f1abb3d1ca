#include "isa/hlo/sharding.h"

#include "isa/hlo/ir.h"
#include "isa/hlo/source.h"

namespace tpusim::hlo {
namespace {

bool fail(ValueError& err, std::uint32_t offset, std::string message) {
  err.offset = offset;
  err.message = std::move(message);
  return false;
}

std::string found(const Lexer& lex) {
  const Token& t = lex.peek();
  if (t.kind == Tok::kEof) return "end of input";
  return "'" + std::string(lex.text(t)) + "'";
}

void append_ints(std::string& s, const Ints& v) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
}

bool read_single(Lexer& lex, HloSharding& out, ValueError& err) {
  bool have_kind = false;
  while (lex.peek().kind == Tok::kWord) {
    const Token w = lex.next();
    const std::string_view k = lex.text(w);
    if (k == "replicated" || k == "manual" || k == "unknown") {
      out.kind = k == "replicated" ? HloSharding::Kind::kReplicated
                 : k == "manual"   ? HloSharding::Kind::kManual
                                   : HloSharding::Kind::kUnknown;
      have_kind = true;
    } else if (k == "maximal") {
      out.kind = HloSharding::Kind::kMaximal;
      have_kind = true;
      if (lex.peek().kind != Tok::kWord || lex.text(lex.peek()) != "device")
        return fail(err, lex.peek().begin, "expected 'device=N' after 'maximal', found " + found(lex));
      lex.next();
      if (lex.peek().kind != Tok::kEqual)
        return fail(err, lex.peek().begin, "expected '=' after 'device', found " + found(lex));
      lex.next();
      if (!read_int(lex, out.device, err)) return false;
    } else if (k == "devices") {
      out.kind = HloSharding::Kind::kTiled;
      have_kind = true;
      if (lex.peek().kind != Tok::kEqual)
        return fail(err, lex.peek().begin, "expected '=' after 'devices', found " + found(lex));
      lex.next();
      const std::uint32_t at = lex.peek().begin;
      if (!read_bracket_ints(lex, out.tile_dims, err)) return false;
      std::int64_t total = 1;
      for (std::int64_t d : out.tile_dims) {
        if (d < 0) return fail(err, at, "negative tile assignment dimension");
        total = sat_mul(total, d);
      }
      if (lex.peek().kind == Tok::kLessEqual) {
        lex.next();
        out.iota = true;
        if (!read_bracket_ints(lex, out.iota_reshape, err)) return false;
        if (lex.peek().kind == Tok::kWord && lex.text(lex.peek()) == "T" && !lex.peek().space_before) {
          lex.next();
          if (lex.peek().kind != Tok::kLParen)
            return fail(err, lex.peek().begin, "expected '(' after T, found " + found(lex));
          lex.next();
          while (lex.peek().kind != Tok::kRParen) {
            std::int64_t v = 0;
            if (!read_int(lex, v, err)) return false;
            out.iota_perm.push_back(v);
            if (lex.peek().kind != Tok::kComma) break;
            lex.next();
          }
          if (lex.peek().kind != Tok::kRParen)
            return fail(err, lex.peek().begin, "expected ')' to end T(...), found " + found(lex));
          lex.next();
        }
        std::string e;
        if (!expand_iota(out.iota_reshape, out.iota_perm, out.devices, e)) return fail(err, at, e);
      } else {
        while (true) {
          std::int64_t v = 0;
          if (!read_int(lex, v, err)) return false;
          out.devices.push_back(v);
          if (lex.peek().kind != Tok::kComma) break;
          lex.next();
        }
      }
      if (static_cast<std::int64_t>(out.devices.size()) != total)
        return fail(err, at,
                    "tile assignment [" + [&] {
                      std::string s;
                      append_ints(s, out.tile_dims);
                      return s;
                    }() + "] needs " + std::to_string(total) + " devices but " +
                        std::to_string(out.devices.size()) + " are given");
    } else if (k == "last_tile_dim_replicate") {
      out.last_tile_dim_replicate = true;
    } else if (k == "last_tile_dims") {
      if (lex.peek().kind != Tok::kEqual || (lex.next(), lex.peek().kind != Tok::kLBrace))
        return fail(err, lex.peek().begin, "expected last_tile_dims={...}, found " + found(lex));
      lex.next();
      while (lex.peek().kind == Tok::kWord) {
        out.last_tile_dims.emplace_back(lex.text(lex.next()));
        if (lex.peek().kind == Tok::kComma) lex.next();
      }
      if (lex.peek().kind != Tok::kRBrace)
        return fail(err, lex.peek().begin, "expected '}' to end last_tile_dims, found " + found(lex));
      lex.next();
    } else if (k == "metadata") {
      if (lex.peek().kind != Tok::kEqual)
        return fail(err, lex.peek().begin, "expected '=' after metadata, found " + found(lex));
      lex.next();
      if (!skip_balanced(lex, err)) return false;
    } else if (k == "shard_as" || k == "shard_like") {
      std::int64_t v = 0;
      if (!read_int(lex, v, err)) return false;
    } else {
      return fail(err, w.begin,
                  "unknown sharding item '" + std::string(k) +
                      "' (expected replicated, maximal device=N, devices=[…]…, manual, "
                      "last_tile_dim_replicate or last_tile_dims={…})");
    }
  }
  if (!have_kind)
    return fail(err, lex.peek().begin,
                "expected a sharding (replicated, maximal, devices=…, manual), found " + found(lex));
  if (out.kind == HloSharding::Kind::kTiled && out.subgroup_dims() > out.tile_dims.size())
    return fail(err, lex.peek().begin, "last_tile_dim_replicate needs at least one tile dimension");
  return true;
}

}  // namespace

std::int64_t HloSharding::num_tiles() const {
  if (kind != Kind::kTiled) return 1;
  std::int64_t n = 1;
  for (std::size_t i = 0; i + subgroup_dims() < tile_dims.size(); ++i) n = sat_mul(n, tile_dims[i]);
  return n;
}

bool read_sharding(Lexer& lex, HloSharding& out, ValueError& err) {
  out = HloSharding{};
  if (lex.peek().kind != Tok::kLBrace)
    return fail(err, lex.peek().begin, "expected '{' to begin a sharding, found " + found(lex));
  lex.next();
  if (lex.peek().kind == Tok::kLBrace || lex.peek().kind == Tok::kRBrace) {
    // Tuple sharding: {{…}, {…}} or the empty tuple {}.
    out.kind = HloSharding::Kind::kTuple;
    while (lex.peek().kind == Tok::kLBrace) {
      HloSharding elem;
      lex.next();
      if (!read_single(lex, elem, err)) return false;
      if (lex.peek().kind != Tok::kRBrace)
        return fail(err, lex.peek().begin, "expected '}' to end a sharding, found " + found(lex));
      lex.next();
      out.tuple.push_back(std::move(elem));
      if (lex.peek().kind != Tok::kComma) break;
      lex.next();
    }
  } else if (!read_single(lex, out, err)) {
    return false;
  }
  if (lex.peek().kind != Tok::kRBrace)
    return fail(err, lex.peek().begin, "expected '}' to end the sharding, found " + found(lex));
  lex.next();
  return true;
}

std::string HloSharding::to_string() const {
  std::string s = "{";
  switch (kind) {
    case Kind::kReplicated: s += "replicated"; break;
    case Kind::kManual: s += "manual"; break;
    case Kind::kUnknown: s += "unknown"; break;
    case Kind::kMaximal: s += "maximal device=" + std::to_string(device); break;
    case Kind::kTiled:
      s += "devices=[";
      append_ints(s, tile_dims);
      s += ']';
      if (iota) {
        s += "<=[";
        append_ints(s, iota_reshape);
        s += ']';
        if (!iota_perm.empty()) {
          s += "T(";
          append_ints(s, iota_perm);
          s += ')';
        }
      } else {
        append_ints(s, devices);
      }
      if (last_tile_dim_replicate) s += " last_tile_dim_replicate";
      if (!last_tile_dims.empty()) {
        s += " last_tile_dims={";
        for (std::size_t i = 0; i < last_tile_dims.size(); ++i) s += (i ? ", " : "") + last_tile_dims[i];
        s += '}';
      }
      break;
    case Kind::kTuple:
      for (std::size_t i = 0; i < tuple.size(); ++i) s += (i ? ", " : "") + tuple[i].to_string();
      break;
  }
  return s + "}";
}

namespace {
// A diagnostic at `offset` in the instruction's module source.
Diagnostic located(const Instruction& inst, std::uint32_t offset, std::string message) {
  const Module* m = inst.parent() ? inst.parent()->parent() : nullptr;
  if (!m) return Diagnostic{"<input>", 0, 0, std::move(message), ""};
  return make_diagnostic(m->source().name, m->source().text, offset, std::move(message));
}
}  // namespace

Result<HloSharding> sharding_of(const Instruction& inst) {
  const Attribute* a = inst.attribute(AttrId::kSharding);
  if (!a) return located(inst, inst.offset(), "instruction '%" + std::string(inst.name()) + "' has no sharding");
  Lexer lex(a->value);
  HloSharding s;
  ValueError err;
  if (!read_sharding(lex, s, err)) return located(inst, a->offset + err.offset, err.message);
  return s;
}

Result<Shape> per_device_shape(const Instruction& inst) {
  auto s = sharding_of(inst);
  if (!s) return s.errors();
  auto shape = per_device_shape(inst.shape(), s.value());
  if (!shape) return located(inst, inst.attribute(AttrId::kSharding)->offset, shape.errors()[0].message);
  return shape;
}

Result<Shape> per_device_shape(const Shape& shape, const HloSharding& sharding) {
  using Kind = HloSharding::Kind;
  if (sharding.kind == Kind::kTuple) {
    if (!shape.is_tuple() || shape.tuple_elements().size() != sharding.tuple.size())
      return Diagnostic{"", 0, 0,
                        "tuple sharding with " + std::to_string(sharding.tuple.size()) +
                            " elements does not match shape " + shape.to_string(),
                        ""};
    std::vector<Shape> elems;
    for (std::size_t i = 0; i < sharding.tuple.size(); ++i) {
      auto e = per_device_shape(shape.tuple_elements()[i], sharding.tuple[i]);
      if (!e) return e.errors();
      elems.push_back(std::move(e.value()));
    }
    return Shape::tuple(std::move(elems));
  }
  if (shape.is_tuple()) {
    // A non-tuple sharding on a tuple applies to every element.
    std::vector<Shape> elems;
    for (const Shape& s : shape.tuple_elements()) {
      auto e = per_device_shape(s, sharding);
      if (!e) return e.errors();
      elems.push_back(std::move(e.value()));
    }
    return Shape::tuple(std::move(elems));
  }
  if (sharding.kind != Kind::kTiled) return shape;
  const std::size_t data_dims = sharding.tile_dims.size() - sharding.subgroup_dims();
  if (data_dims != static_cast<std::size_t>(shape.rank()))
    return Diagnostic{"", 0, 0,
                      "sharding " + sharding.to_string() + " tiles " + std::to_string(data_dims) +
                          " dimensions but shape " + shape.to_string() + " has rank " +
                          std::to_string(shape.rank()),
                      ""};
  Shape out = shape;
  for (std::size_t i = 0; i < data_dims; ++i) {
    const std::int64_t tiles = sharding.tile_dims[i];
    std::int64_t& d = out.mutable_dims()[i];
    if (tiles > 0 && d > 0) d = (d + tiles - 1) / tiles;
  }
  return out;
}

}  // namespace tpusim::hlo
