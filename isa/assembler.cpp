#include "isa/assembler.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>

#include "isa/lexer.h"

namespace tpusim::isa {
namespace {

const std::map<std::string_view, Opcode, std::less<>>& mnemonics() {
  static const auto kMap = [] {
    std::map<std::string_view, Opcode, std::less<>> m;
    for (std::size_t i = 0; i < kNumOpcodes; ++i) {
      const auto op = static_cast<Opcode>(i);
      m.emplace(opcode_info(op).mnemonic, op);
    }
    return m;
  }();
  return kMap;
}

template <typename E>
std::string joined_names(E e) {
  std::string out;
  for (const auto n : all_names(e)) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

class Parser {
 public:
  Parser(std::string_view source, std::string_view file)
      : src_(source), file_(file), toks_(lex(source)) {
    prog_.file = std::string(file);
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  Result<Program> run() {
    while (peek().kind != TokKind::kEnd) {
      if (peek().kind == TokKind::kNewline) {
        ++pos_;
        continue;
      }
      if (!parse_line()) skip_line();
    }
    for (const SourceLoc& open : repeat_stack_) {
      errors_.push_back(diag_at(open, "`repeat` has no matching `end`"));
    }
    // A .reuse must name an op some instruction is labelled with.
    std::set<std::string_view> roots;
    if (!prog_.reuse.empty()) {
      for (const Instruction& i : prog_.code) roots.insert(provenance_root(prog_.provenance(i)));
    }
    for (std::size_t r = 0; r < prog_.reuse.size(); ++r) {
      if (!roots.contains(prog_.reuse[r].label)) {
        errors_.push_back(diag_at(reuse_locs_[r], "no instruction is labelled '" + prog_.reuse[r].label +
                                                      "': .reuse names the provenance of instructions in the program"));
      }
    }
    if (!errors_.empty()) return errors_;
    return std::move(prog_);
  }

 private:
  // ---- tokens and diagnostics ----
  const Token& peek() const { return toks_[pos_]; }
  const Token& take() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }
  bool at_line_end() const {
    return peek().kind == TokKind::kNewline || peek().kind == TokKind::kEnd;
  }
  void skip_line() {
    while (!at_line_end()) ++pos_;
  }

  SourceLoc loc_of(std::size_t offset) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const auto line = static_cast<std::size_t>(it - line_starts_.begin());
    const std::size_t col = offset - line_starts_[line - 1] + 1;
    return SourceLoc{static_cast<std::uint32_t>(line), static_cast<std::uint32_t>(col)};
  }
  Diagnostic diag_at(SourceLoc loc, std::string message) const {
    Diagnostic d;
    d.file = file_;
    d.line = static_cast<int>(loc.line);
    d.column = static_cast<int>(loc.column);
    d.message = std::move(message);
    d.source_line = std::string(line_of(src_, d.line));
    return d;
  }
  bool fail(const Token& t, std::string message) {
    errors_.push_back(diag_at(loc_of(t.offset), std::move(message)));
    return false;
  }
  bool expect(TokKind k, std::string_view what) {
    if (peek().kind != k) {
      return fail(peek(), "expected " + std::string(what) + ", found " + found(peek()));
    }
    take();
    return true;
  }
  static std::string found(const Token& t) {
    if (t.kind == TokKind::kNewline || t.kind == TokKind::kEnd) return std::string(describe(t.kind));
    return "'" + std::string(t.text) + "'";
  }

  // ---- scalars ----
  bool parse_int(std::int64_t& out) {
    const Token& t = peek();
    if (t.kind != TokKind::kInt) return fail(t, "expected an integer, found " + found(t));
    const auto* first = t.text.data();
    const auto* last = first + t.text.size();
    const auto [ptr, ec] = std::from_chars(first, last, out);
    if (ec != std::errc{} || ptr != last) return fail(t, "integer out of range: " + std::string(t.text));
    take();
    return true;
  }
  bool parse_double(double& out) {
    const Token& t = peek();
    if (t.kind != TokKind::kInt && t.kind != TokKind::kFloat) {
      return fail(t, "expected a number, found " + found(t));
    }
    const auto* first = t.text.data();
    const auto* last = first + t.text.size();
    const auto [ptr, ec] = std::from_chars(first, last, out);
    if (ec != std::errc{} || ptr != last) return fail(t, "number out of range: " + std::string(t.text));
    take();
    return true;
  }
  bool parse_string(std::string& out) {
    const Token& t = peek();
    if (t.kind != TokKind::kString) return fail(t, "expected a quoted string, found " + found(t));
    out.clear();
    for (std::size_t i = 1; i + 1 < t.text.size(); ++i) {
      if (t.text[i] == '\\' && i + 2 < t.text.size()) ++i;
      out += t.text[i];
    }
    take();
    return true;
  }

  // ---- operand values, one overload per field type ----
  bool parse_value(std::int64_t& out) { return parse_int(out); }
  bool parse_value(double& out) { return parse_double(out); }
  bool parse_value(AccMode& out) {
    const Token& t = peek();
    if (t.kind == TokKind::kIdent && (t.text == "accumulate" || t.text == "overwrite")) {
      out = t.text == "overwrite" ? AccMode::kOverwrite : AccMode::kAccumulate;
      take();
      return true;
    }
    return fail(t, "expected accumulate or overwrite, found " + found(t));
  }
  bool parse_value(SemRef& out) {
    const Token& t = peek();
    if (t.kind != TokKind::kIdent) return fail(t, "expected a semaphore name, found " + found(t));
    out.id = prog_.find_semaphore(t.text);
    if (!out.present()) {
      return fail(t, "unknown semaphore '" + std::string(t.text) + "' (declare it with .semaphore)");
    }
    take();
    return true;
  }
  bool parse_value(GroupsRef& out) {
    ReplicaGroups groups;
    if (!expect(TokKind::kLBracket, "'[' opening the replica groups")) return false;
    while (peek().kind == TokKind::kLBracket) {
      take();
      std::vector<std::int64_t> g;
      while (peek().kind != TokKind::kRBracket) {
        std::int64_t v = 0;
        if (!parse_int(v)) return false;
        if (v < 0) return fail(toks_[pos_ - 1], "replica ids must be >= 0");
        g.push_back(v);
        if (peek().kind == TokKind::kComma) take();
        else if (peek().kind != TokKind::kRBracket) return expect(TokKind::kRBracket, "',' or ']'");
      }
      take();
      groups.push_back(std::move(g));
      if (peek().kind == TokKind::kComma) take();
    }
    if (!expect(TokKind::kRBracket, "']' closing the replica groups")) return false;
    const auto it = std::find(prog_.replica_groups.begin(), prog_.replica_groups.end(), groups);
    out.id = static_cast<std::uint32_t>(it - prog_.replica_groups.begin());
    if (it == prog_.replica_groups.end()) prog_.replica_groups.push_back(std::move(groups));
    return true;
  }
  bool parse_range(std::int64_t& lo, std::int64_t& hi) {
    const Token& start = peek();
    if (!parse_int(lo) || !expect(TokKind::kColon, "':' in a range lo:hi") || !parse_int(hi)) return false;
    if (lo < 0 || hi <= lo) {
      return fail(start, "range " + std::to_string(lo) + ":" + std::to_string(hi) +
                             " is empty or negative (ranges are half-open lo:hi with 0 <= lo < hi)");
    }
    if (hi - lo > INT32_MAX) return fail(start, "range too large for one tile");
    return true;
  }
  bool parse_value(TileRef& out) {
    const Token& t = peek();
    if (t.kind != TokKind::kIdent) return fail(t, "expected a buffer or tile, found " + found(t));
    const std::uint32_t b = prog_.find_buffer(t.text);
    if (b == TileRef::kNone) {
      return fail(t, "unknown buffer '" + std::string(t.text) + "' (declare it with .buffer)");
    }
    take();
    out = prog_.whole(b);
    if (peek().kind != TokKind::kLBracket) return true;
    take();
    std::int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
    if (!parse_range(r0, r1)) return false;
    if (peek().kind == TokKind::kComma) {
      take();
      if (!parse_range(c0, c1)) return false;
      out.row = r0;
      out.rows = static_cast<std::int32_t>(r1 - r0);
    } else if (prog_.buffers[b].shape.size() == 1) {  // 1-D buffer: the range is columns
      c0 = r0;
      c1 = r1;
    } else {  // rows only: all columns
      out.row = r0;
      out.rows = static_cast<std::int32_t>(r1 - r0);
      c0 = 0;
      c1 = out.cols;
    }
    if (c0 > INT32_MAX) return fail(t, "column offset too large");
    out.col = static_cast<std::int32_t>(c0);
    out.cols = static_cast<std::int32_t>(c1 - c0);
    return expect(TokKind::kRBracket, "']' closing the tile");
  }
  template <typename E>
  bool parse_value(E&) requires std::is_enum_v<E> {
    return fail(peek(), "internal: sub-operation written as an operand");
  }

  // ---- lines ----
  bool parse_line() {
    const Token& head = peek();
    if (head.kind != TokKind::kIdent) {
      return fail(head, "expected a directive or instruction, found " + found(head));
    }
    if (head.text.starts_with(".")) return parse_directive();
    return parse_instruction();
  }

  bool end_of_line() {
    if (at_line_end()) return true;
    return fail(peek(), "unexpected " + found(peek()) + " at end of line");
  }

  bool parse_directive() {
    const Token dir = take();
    if (dir.text == ".buffer") return parse_buffer(dir);
    if (dir.text == ".semaphore") return parse_semaphore();
    if (dir.text == ".provenance") {
      std::string label;
      if (!parse_string(label)) return false;
      current_prov_ = prog_.strings.intern(label);
      return end_of_line();
    }
    if (dir.text == ".reuse") return parse_reuse();
    return fail(dir, "unknown directive '" + std::string(dir.text) +
                         "'; expected .buffer, .semaphore, .provenance or .reuse");
  }

  bool parse_name(std::string& out, std::string_view what) {
    const Token& t = peek();
    if (t.kind != TokKind::kIdent || t.text.starts_with(".")) {
      return fail(t, "expected " + std::string(what) + " name, found " + found(t));
    }
    out = std::string(t.text);
    take();
    return true;
  }

  bool parse_buffer(const Token& dir) {
    Buffer b;
    b.loc = loc_of(dir.offset);
    const Token& name_tok = peek();
    if (!parse_name(b.name, "a buffer")) return false;
    if (prog_.find_buffer(b.name) != TileRef::kNone) {
      return fail(name_tok, "buffer '" + b.name + "' is already declared");
    }
    const Token& space = peek();
    const auto ms = space.kind == TokKind::kIdent ? parse_enum<MemSpace>(space.text) : std::nullopt;
    if (!ms) return fail(space, "expected a memory space (" + joined_names(MemSpace{}) + "), found " + found(space));
    take();
    b.space = *ms;
    const Token& dt = peek();
    const auto d = dt.kind == TokKind::kIdent ? parse_enum<DType>(dt.text) : std::nullopt;
    if (!d) return fail(dt, "expected a dtype (" + joined_names(DType{}) + "), found " + found(dt));
    take();
    b.dtype = *d;
    if (!expect(TokKind::kLBracket, "'[' opening the shape")) return false;
    while (true) {
      const Token& dim_tok = peek();
      std::int64_t dim = 0;
      if (!parse_int(dim)) return false;
      if (dim <= 0) return fail(dim_tok, "dimensions must be >= 1");
      b.shape.push_back(dim);
      if (peek().kind == TokKind::kComma) {
        take();
        continue;
      }
      if (!expect(TokKind::kRBracket, "',' or ']' in the shape")) return false;
      break;
    }
    if (b.cols() > INT32_MAX || b.rows() > (std::int64_t{1} << 40)) {
      return fail(name_tok, "buffer '" + b.name + "' is too large");
    }
    bool placed = false;
    while (peek().kind == TokKind::kIdent && (peek().text == "offset" || peek().text == "view")) {
      const Token& key = peek();
      if (placed) return fail(key, "a buffer takes one of offset= and view=, not both");
      placed = true;
      take();
      if (key.text == "offset") {
        if (!expect(TokKind::kEquals, "'=' after offset")) return false;
        const Token& off = peek();
        if (!parse_int(b.offset)) return false;
        if (b.offset < 0) return fail(off, "offset must be >= 0");
      } else {
        // A second view of an earlier buffer's bytes; the verifier checks
        // space, dtype and element count.
        if (!expect(TokKind::kEquals, "'=' after view")) return false;
        const Token& base = peek();
        std::string base_name;
        if (!parse_name(base_name, "the viewed buffer")) return false;
        b.view_of = prog_.find_buffer(base_name);
        if (b.view_of == TileRef::kNone) {
          return fail(base, "unknown buffer '" + base_name + "' (a view names a buffer declared before it)");
        }
      }
    }
    if (!end_of_line()) return false;
    prog_.buffers.push_back(std::move(b));
    return true;
  }

  // .reuse "label" extra=N
  bool parse_reuse() {
    Program::Reuse r;
    const Token& label_tok = peek();
    if (!parse_string(r.label)) return false;
    if (r.label.empty() || r.label.find('/') != std::string::npos || r.label.starts_with("approx:")) {
      return fail(label_tok, "a .reuse label is an op's provenance root (no '/', no approx: prefix)");
    }
    for (const auto& other : prog_.reuse) {
      if (other.label == r.label) return fail(label_tok, "'" + r.label + "' is already reused");
    }
    const Token& key = peek();
    if (key.kind != TokKind::kIdent || key.text != "extra") return fail(key, "expected extra=N, found " + found(key));
    take();
    if (!expect(TokKind::kEquals, "'=' after extra")) return false;
    const Token& v = peek();
    if (!parse_int(r.extra)) return false;
    if (r.extra < 0) return fail(v, "extra must be >= 0");
    if (!end_of_line()) return false;
    reuse_locs_.push_back(loc_of(label_tok.offset));
    prog_.reuse.push_back(std::move(r));
    return true;
  }

  bool parse_semaphore() {
    Semaphore s;
    const Token& name_tok = peek();
    s.loc = loc_of(name_tok.offset);
    if (!parse_name(s.name, "a semaphore")) return false;
    if (prog_.find_semaphore(s.name) != SemRef::kNone) {
      return fail(name_tok, "semaphore '" + s.name + "' is already declared");
    }
    if (peek().kind == TokKind::kIdent && peek().text == "init") {
      take();
      if (!expect(TokKind::kEquals, "'=' after init")) return false;
      const Token& v = peek();
      if (!parse_int(s.initial)) return false;
      if (s.initial < 0) return fail(v, "init must be >= 0");
    }
    if (!end_of_line()) return false;
    prog_.semaphores.push_back(std::move(s));
    return true;
  }

  // Finds the opcode of `text`: an exact mnemonic, or BASE.SUBOP for an
  // instruction whose first field is a sub-operation.
  bool resolve_mnemonic(const Token& t, Op& op) {
    const auto& m = mnemonics();
    if (auto it = m.find(t.text); it != m.end() && !opcode_info(it->second).has_subop) {
      op = make_op(it->second);
      return true;
    }
    const auto dot = t.text.rfind('.');
    if (dot != std::string_view::npos) {
      const auto base = t.text.substr(0, dot);
      const auto sub = t.text.substr(dot + 1);
      if (auto it = m.find(base); it != m.end() && opcode_info(it->second).has_subop) {
        op = make_op(it->second);
        bool ok = false;
        std::string expected;
        std::visit(
            [&](auto& s) {
              using S = std::decay_t<decltype(s)>;
              if constexpr (!std::is_same_v<S, std::monostate>) {
                for_each_field(s, [&](const FieldInfo& f, auto& field) {
                  using T = std::decay_t<decltype(field)>;
                  if constexpr (std::is_enum_v<T> && !std::is_same_v<T, AccMode>) {
                    if (f.presence != Presence::kSubop) return;
                    if (auto v = parse_enum<T>(sub)) {
                      field = *v;
                      ok = true;
                    } else {
                      expected = joined_names(T{});
                    }
                  }
                });
              }
            },
            op);
        if (ok) return true;
        return fail(t, "unknown operation '" + std::string(sub) + "' for " + std::string(base) +
                           "; expected one of: " + expected);
      }
    }
    std::string all;
    for (const auto& [name, code] : m) {
      if (!all.empty()) all += ", ";
      all += std::string(name) + (opcode_info(code).has_subop ? ".<op>" : "");
    }
    return fail(t, "unknown instruction '" + std::string(t.text) + "'; expected one of: " + all);
  }

  bool parse_instruction() {
    const Token mn = take();
    Instruction inst;
    inst.loc = loc_of(mn.offset);
    inst.provenance = current_prov_;
    if (!resolve_mnemonic(mn, inst.op)) return false;
    const Opcode code = opcode(inst.op);

    bool ok = true;
    std::visit(
        [&](auto& s) {
          using S = std::decay_t<decltype(s)>;
          if constexpr (!std::is_same_v<S, std::monostate>) ok = parse_operands(s, mn);
        },
        inst.op);
    if (!ok) return false;

    if (peek().kind == TokKind::kAt) {
      take();
      std::string label;
      if (!parse_string(label)) return false;
      inst.provenance = prog_.strings.intern(label);
    }
    if (!end_of_line()) return false;

    if (code == Opcode::kRepeat) {
      repeat_stack_.push_back(inst.loc);
    } else if (code == Opcode::kEnd) {
      if (repeat_stack_.empty()) return fail(mn, "`end` without a matching `repeat`");
      repeat_stack_.pop_back();
    }
    prog_.code.push_back(inst);
    return true;
  }

  template <typename S>
  bool parse_operands(S& s, const Token& mn) {
    std::set<std::string_view> seen;
    while (!at_line_end() && peek().kind != TokKind::kAt) {
      const Token key = peek();
      if (key.kind != TokKind::kIdent) {
        return fail(key, "expected an operand name=value, found " + found(key));
      }
      take();
      if (!expect(TokKind::kEquals, "'=' after operand name '" + std::string(key.text) + "'")) {
        return false;
      }
      bool found_field = false;
      bool ok = true;
      for_each_field(s, [&](const FieldInfo& f, auto& field) {
        if (found_field || f.presence == Presence::kSubop || f.name != key.text) return;
        found_field = true;
        ok = parse_value(field);
      });
      if (!found_field) {
        return fail(key, "unknown operand '" + std::string(key.text) + "' for " +
                             std::string(mn.text) + "; expected " + operand_list(s));
      }
      if (!ok) return false;
      if (!seen.insert(key.text).second) {
        return fail(key, "operand '" + std::string(key.text) + "' given twice");
      }
    }
    std::string missing;
    for_each_field(s, [&](const FieldInfo& f, auto&) {
      if (f.presence == Presence::kRequired && !seen.contains(f.name)) {
        if (!missing.empty()) missing += ", ";
        missing += f.name;
      }
    });
    if (!missing.empty()) {
      return fail(mn, std::string(mn.text) + " is missing required operand(s): " + missing);
    }
    return true;
  }

  template <typename S>
  static std::string operand_list(S& s) {
    std::string out;
    for_each_field(s, [&](const FieldInfo& f, auto&) {
      if (f.presence == Presence::kSubop) return;
      if (!out.empty()) out += ", ";
      out += f.name;
    });
    return out.empty() ? "no operands" : out;
  }

  std::string_view src_;
  std::string file_;
  std::vector<Token> toks_;
  std::size_t pos_ = 0;
  std::vector<std::size_t> line_starts_;
  Program prog_;
  std::vector<Diagnostic> errors_;
  std::uint32_t current_prov_ = 0;
  std::vector<SourceLoc> repeat_stack_;
  std::vector<SourceLoc> reuse_locs_;  // of each .reuse label, for the check at the end
};

}  // namespace

Result<Program> assemble(std::string_view source, std::string_view file_name) {
  return Parser(source, file_name).run();
}

Result<Program> assemble_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    Diagnostic d;
    d.file = path;
    d.message = "cannot open file";
    return d;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  return assemble(text, path);
}

}  // namespace tpusim::isa
