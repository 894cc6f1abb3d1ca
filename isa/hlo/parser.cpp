#include "isa/hlo/parser.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "isa/hlo/name_map.h"
#include "isa/hlo/shape_inference.h"
#include "isa/hlo/sharding.h"
#include "isa/hlo/source.h"
#include "isa/hlo/structure.h"
#include "isa/hlo/values.h"
#include "isa/hlo/verifier.h"

namespace tpusim::hlo {

namespace {

std::string_view strip_percent(std::string_view s) {
  if (!s.empty() && s.front() == '%') s.remove_prefix(1);
  return s;
}

std::size_t shape_heap_bytes(const Shape& s) {
  std::size_t b = s.dims().capacity() * sizeof(std::int64_t) + (s.has_dynamic_dims() ? 8 : 0);
  if (s.layout()) {
    b += sizeof(Layout) + s.layout()->minor_to_major.capacity() * sizeof(std::int64_t);
    for (const Tile& t : s.layout()->tiles) b += sizeof(Tile) + t.dims.capacity() * sizeof(std::int64_t);
  }
  for (const Shape& e : s.tuple_elements()) b += sizeof(Shape) + shape_heap_bytes(e);
  return b;
}

}  // namespace

// The parser proper. One instance parses one module (one `// -----` section).
class Parser {
 public:
  Parser(std::shared_ptr<const SourceFile> src, std::uint32_t begin, std::uint32_t end)
      : src_(std::move(src)), text_(src_->text), lex_(text_, begin, end) {}

  Result<std::unique_ptr<Module>> run(const ParseOptions& options) {
    m_ = std::make_unique<Module>();
    m_->source_ = src_;
    if (!parse_module() || !resolve_module()) return std::move(*error_);
    if (auto bad = check_structure(*m_)) return std::move(*bad);
    if (options.verify_shapes) {
      VerifyResult checked = verify_module(*m_, options.strict);
      if (!checked.errors.empty()) return std::move(checked.errors);
      m_->warnings_ = std::move(checked.warnings);
    }
    return std::move(m_);
  }

 private:
  struct OperandRef {
    std::string_view name;
    std::uint32_t offset;
    const Shape* typed;
  };
  struct PendingOperand {
    Instruction** slot;
    Instruction* user;
    std::string_view name;
    std::uint32_t offset;
    const Shape* typed;
  };
  struct NameRef {
    std::string_view name;
    std::uint32_t offset;
  };
  struct PendingCall {
    Computation** slot;
    std::string_view name;
    std::uint32_t offset;
  };

  // ---- errors -------------------------------------------------------------
  bool fail(std::uint32_t offset, std::string message) {
    if (!error_) error_ = make_diagnostic(src_->name, text_, offset, std::move(message));
    return false;
  }
  bool fail(const ValueError& e) { return fail(e.offset, e.message); }
  std::string found() const {
    const Token& t = lex_.peek();
    if (t.kind == Tok::kEof) return "end of input";
    if (t.kind == Tok::kError) return lex_.error();
    std::string_view s = lex_.text(t);
    if (s.size() > 40) return "'" + std::string(s.substr(0, 40)) + "…'";
    return "'" + std::string(s) + "'";
  }
  bool expect(Tok kind, std::string_view context) {
    if (lex_.peek().kind != kind) {
      return fail(lex_.peek().begin,
                  "expected " + std::string(tok_name(kind)) + " " + std::string(context) + ", found " + found());
    }
    lex_.next();
    return true;
  }
  bool at_word(std::string_view w) const {
    return lex_.peek().kind == Tok::kWord && lex_.text(lex_.peek()) == w;
  }

  // ---- shapes ---------------------------------------------------------------
  bool parse_shape(const Shape*& out) {
    const std::uint32_t begin = lex_.peek().begin;
    ValueError e;
    if (!read_shape(lex_, scratch_shape_, e)) return fail(e);
    // Identical shape text maps to one interned Shape: real modules repeat a
    // few hundred shapes across hundreds of thousands of instructions.
    const std::string_view key = text_.substr(begin, lex_.prev_end() - begin);
    auto [slot, inserted] = shape_index_.try_emplace(key, nullptr);
    if (inserted) {
      m_->shapes_.push_back(scratch_shape_);
      m_->shape_bytes_ += sizeof(Shape) + shape_heap_bytes(m_->shapes_.back()) + 48;
      *slot = &m_->shapes_.back();
    }
    out = *slot;
    return true;
  }

  // ---- module ---------------------------------------------------------------
  bool parse_module() {
    m_->offset_ = lex_.peek().begin;
    if (!at_word("HloModule")) {
      // XLA's parser also takes bare computations (`ENTRY e {…}` or `name {…}`)
      // as one module.
      const bool computation = at_word("ENTRY") || lex_.peek2().kind == Tok::kLBrace ||
                               lex_.peek2().kind == Tok::kLParen;
      if (lex_.peek().kind != Tok::kWord || !computation)
        return fail(lex_.peek().begin, "expected 'HloModule' or a computation at the start of a module, found " +
                                           found());
      m_->name_ = "module";
      return parse_computations();
    }
    lex_.next();
    if (lex_.peek().kind != Tok::kWord && lex_.peek().kind != Tok::kString)
      return fail(lex_.peek().begin, "expected a module name after 'HloModule', found " + found());
    m_->name_ = lex_.text(lex_.next());
    // `HloModule convolution.167:` (older dumps) is accepted by XLA too.
    if (lex_.peek().kind == Tok::kColon) lex_.next();
    attr_scratch_.clear();
    while (lex_.peek().kind == Tok::kComma) {
      lex_.next();
      if (!parse_attribute(attr_scratch_)) return false;
    }
    m_->attrs_ = m_->arena_.copy(std::span<const Attribute>(attr_scratch_));
    if (!parse_stack_frame_sections()) return false;
    return parse_computations();
  }

  bool parse_computations() {
    while (lex_.peek().kind != Tok::kEof) {
      if (!parse_computation()) return false;
    }
    if (m_->computations_.empty())
      return fail(m_->offset_, "module '" + std::string(m_->name_) + "' has no computations");
    return true;
  }

  // Newer XLA dumps index stack traces after the header:
  //   FileNames / FunctionNames:  <id> "text"
  //   FileLocations / StackFrames: <id> {key=value …}
  // Kept as text (one entry per line) so the printer can reproduce them.
  bool parse_stack_frame_sections() {
    std::string text;
    while (lex_.peek().kind == Tok::kWord) {
      const std::string_view section = lex_.text(lex_.peek());
      if (section != "FileNames" && section != "FunctionNames" && section != "FileLocations" &&
          section != "StackFrames")
        break;
      lex_.next();
      text += section;
      text += '\n';
      std::int64_t id = 0;
      while (lex_.peek().kind == Tok::kWord && parse_int(lex_.text(lex_.peek()), id)) {
        text += lex_.text(lex_.next());
        text += ' ';
        const std::uint32_t begin = lex_.peek().begin;
        ValueError e;
        if (lex_.peek().kind == Tok::kString) {
          lex_.next();
        } else if (lex_.peek().kind == Tok::kLBrace) {
          if (!skip_balanced(lex_, e)) return fail(e);
        } else {
          return fail(lex_.peek().begin, "expected a string or {…} after the " + std::string(section) +
                                             " entry id, found " + found());
        }
        append_normalized(text, text_.substr(begin, lex_.prev_end() - begin));
        text += '\n';
      }
    }
    if (!text.empty()) m_->stack_frames_ = m_->strings_.emplace_back(std::move(text));
    return true;
  }

  // ---- computations ---------------------------------------------------------
  bool parse_computation() {
    Computation& c = m_->computation_storage_.emplace_back();
    c.parent_ = m_.get();
    if (at_word("ENTRY")) {
      c.is_entry_ = true;
      if (m_->entry_)
        return fail(lex_.peek().begin, "a second ENTRY computation; a module has exactly one");
      m_->entry_ = &c;
      lex_.next();
    }
    if (lex_.peek().kind != Tok::kWord)
      return fail(lex_.peek().begin, "expected a computation name (or ENTRY), found " + found());
    const Token name = lex_.next();
    c.name_ = strip_percent(lex_.text(name));
    c.offset_ = name.begin;
    if (!m_->computation_index_.try_emplace(c.name_, &c).second)
      return fail(name.begin, "computation '%" + std::string(c.name_) + "' is already defined");
    if (lex_.peek().kind == Tok::kLParen) {
      c.has_signature_ = true;
      lex_.next();
      if (lex_.peek().kind != Tok::kRParen) {
        while (true) {
          if (lex_.peek().kind != Tok::kWord)
            return fail(lex_.peek().begin, "expected a parameter name in the signature, found " + found());
          SignatureParam p;
          p.name = strip_percent(lex_.text(lex_.next()));
          if (!expect(Tok::kColon, "after a parameter name in the signature")) return false;
          if (!parse_shape(p.shape)) return false;
          c.sig_params_.push_back(p);
          if (lex_.peek().kind != Tok::kComma) break;
          lex_.next();
        }
      }
      if (!expect(Tok::kRParen, "to end the computation's parameters")) return false;
      if (!expect(Tok::kArrow, "before the computation's result shape")) return false;
      if (!parse_shape(c.sig_result_)) return false;
    }
    attr_scratch_.clear();
    while (lex_.peek().kind == Tok::kComma) {
      lex_.next();
      if (!parse_attribute(attr_scratch_)) return false;
    }
    if (!expect(Tok::kLBrace, "to begin the computation body")) return false;
    const std::uint32_t body = lex_.prev_end();
    pending_ops_.clear();
    pending_ctrl_.clear();
    inst_index_.clear();
    std::vector<Attribute> comp_attrs = std::move(attr_scratch_);
    attr_scratch_.clear();
    while (lex_.peek().kind != Tok::kRBrace) {
      if (lex_.peek().kind == Tok::kEof)
        return fail(body - 1, "computation '%" + std::string(c.name_) + "' is missing its closing '}'");
      if (!parse_instruction(c)) return false;
    }
    lex_.next();
    attr_scratch_ = std::move(comp_attrs);
    // XLA prints `}, execution_thread="…"` after the body; accept it there too.
    while (lex_.peek().kind == Tok::kComma) {
      lex_.next();
      if (!parse_attribute(attr_scratch_)) return false;
    }
    c.attrs_ = m_->arena_.copy(std::span<const Attribute>(attr_scratch_));
    m_->computations_.push_back(&c);
    return finish_computation(c, body);
  }

  bool finish_computation(Computation& c, std::uint32_t body) {
    if (c.instructions_.empty())
      return fail(body - 1, "computation '%" + std::string(c.name_) + "' has no instructions");
    for (const PendingOperand& p : pending_ops_) {
      Instruction* const* it = inst_index_.find(p.name);
      if (!it)
        return fail(p.offset, "use of undefined instruction '%" + std::string(p.name) +
                                  "' (not defined in computation '%" + std::string(c.name_) + "')");
      *p.slot = *it;
      if (p.typed && (*it)->shape_ && !p.typed->compatible((*it)->shape()))
        return fail(p.offset, "operand is annotated " + p.typed->to_string(false) + " but '%" +
                                  std::string(p.name) + "' has shape " + (*it)->shape().to_string(false));
    }
    for (Instruction* i : c.instructions_) {
      if (i->shape_) continue;
      for (const Instruction* o : i->operands_)
        if (!o->shape_)
          return fail(i->offset_, "cannot infer the shape of '%" + std::string(i->name_) + "': operand '%" +
                                      std::string(o->name_) + "' has no shape yet; write the shape");
      InferredShape inferred = infer_shape(*i);
      if (!inferred.shape)
        return fail(i->offset_, "cannot infer the shape of '%" + std::string(i->name_) + "'" +
                                    (inferred.error.empty() ? std::string("; write the shape")
                                                            : ": " + inferred.error));
      m_->shapes_.push_back(std::move(*inferred.shape));
      i->shape_ = &m_->shapes_.back();
    }
    for (const NameRef& r : pending_ctrl_) {
      if (!inst_index_.find(strip_percent(r.name)))
        return fail(r.offset, "control predecessor '%" + std::string(strip_percent(r.name)) +
                                  "' is not defined in computation '%" + std::string(c.name_) + "'");
    }
    if (!c.root_) {
      c.root_ = c.instructions_.back();
      c.root_->is_root_ = true;
    }
    // Parameters must be numbered 0..n-1, each once.
    std::size_t n = 0;
    for (Instruction* i : c.instructions_)
      if (i->opcode_ == Opcode::kParameter) ++n;
    c.parameters_.assign(n, nullptr);
    for (Instruction* i : c.instructions_) {
      if (i->opcode_ != Opcode::kParameter) continue;
      const std::int64_t k = i->parameter_number_;
      if (k < 0 || static_cast<std::size_t>(k) >= n)
        return fail(i->offset_, "parameter number " + std::to_string(k) + " out of range: computation '%" +
                                    std::string(c.name_) + "' has " + std::to_string(n) + " parameters");
      if (c.parameters_[static_cast<std::size_t>(k)])
        return fail(i->offset_, "parameter number " + std::to_string(k) + " is used twice");
      c.parameters_[static_cast<std::size_t>(k)] = i;
    }
    return true;
  }

  // ---- instructions ---------------------------------------------------------
  bool parse_instruction(Computation& c) {
    bool is_root = false;
    if (at_word("ROOT")) {
      is_root = true;
      lex_.next();
    }
    if (lex_.peek().kind != Tok::kWord)
      return fail(lex_.peek().begin, "expected an instruction name or '}', found " + found());
    const Token name_tok = lex_.next();
    if (!expect(Tok::kEqual, "after the instruction name")) return false;
    Instruction* inst = m_->arena_.make<Instruction>();
    inst->name_ = strip_percent(lex_.text(name_tok));
    inst->offset_ = name_tok.begin;
    inst->parent_ = &c;
    inst->is_root_ = is_root;
    // The shape may be omitted (`gte = get-tuple-element(t), index=0`); it is
    // then inferred once the operands are known (finish_computation).
    // `f31[2]` is a shape with a bad element type, not an omitted shape.
    if ((starts_shape(lex_) || lex_.peek2().kind == Tok::kLBracket) && !parse_shape(inst->shape_)) return false;
    if (!parse_call(c, inst, 0)) return false;
    attr_scratch_.clear();
    call_scratch_.clear();
    while (lex_.peek().kind == Tok::kComma) {
      lex_.next();
      if (!parse_attribute(attr_scratch_)) return false;
    }
    inst->attrs_ = m_->arena_.copy(std::span<const Attribute>(attr_scratch_));
    auto called = m_->arena_.alloc_array<Computation*>(call_scratch_.size());
    for (std::size_t i = 0; i < call_scratch_.size(); ++i)
      pending_calls_.push_back({&called[i], call_scratch_[i].name, call_scratch_[i].offset});
    inst->called_ = called;
    if (is_root) {
      if (c.root_) return fail(name_tok.begin, "a second ROOT instruction in computation '%" + std::string(c.name_) + "'");
      c.root_ = inst;
    }
    return add_instruction(c, inst);
  }

  bool add_instruction(Computation& c, Instruction* inst) {
    if (!inst_index_.try_emplace(inst->name_, inst).second)
      return fail(inst->offset_, "instruction '%" + std::string(inst->name_) +
                                     "' is already defined in computation '%" + std::string(c.name_) + "'");
    inst->id_ = static_cast<std::uint32_t>(m_->instruction_count_++);
    c.instructions_.push_back(inst);
    return true;
  }

  // `opcode(operands)`. Operands are `[shape] name` or, as XLA also accepts,
  // a nested instruction `shape opcode(operands)` (given a derived name).
  bool parse_call(Computation& c, Instruction* inst, int depth) {
    if (lex_.peek().kind != Tok::kWord)
      return fail(lex_.peek().begin, "expected an opcode after the shape, found " + found());
    const Token op_tok = lex_.next();
    inst->opcode_text_ = lex_.text(op_tok);
    if (auto op = opcode_from_name(inst->opcode_text_)) {
      inst->opcode_ = *op;
    } else {
      inst->opcode_ = Opcode::kUnknown;
      m_->unknown_.push_back(inst);
    }
    if (!expect(Tok::kLParen, "after the opcode")) return false;
    const std::size_t base = operand_scratch_.size();
    if (inst->opcode_ == Opcode::kParameter) {
      ValueError e;
      if (!read_int(lex_, inst->parameter_number_, e)) return fail(e);
    } else if (inst->opcode_ == Opcode::kConstant) {
      const std::uint32_t begin = lex_.peek().begin;
      ValueError e;
      if (!skip_literal(lex_, /*until_paren=*/true, e)) return fail(e);
      if (lex_.peek().begin > begin) inst->literal_ = text_.substr(begin, lex_.prev_end() - begin);
    } else if (lex_.peek().kind != Tok::kRParen) {
      while (true) {
        const Shape* typed = nullptr;
        if (starts_shape(lex_) && !parse_shape(typed)) return false;
        if (lex_.peek().kind != Tok::kWord)
          return fail(lex_.peek().begin, "expected an operand name, found " + found());
        if (typed && lex_.peek2().kind == Tok::kLParen) {
          if (depth >= kMaxNesting) return fail(lex_.peek().begin, "nested instructions too deep");
          Instruction* nested = m_->arena_.make<Instruction>();
          nested->name_ = m_->strings_.emplace_back(std::string(inst->name_) + ".arg" +
                                                    std::to_string(operand_scratch_.size() - base));
          nested->offset_ = lex_.peek().begin;
          nested->parent_ = &c;
          nested->shape_ = typed;
          if (!parse_call(c, nested, depth + 1) || !add_instruction(c, nested)) return false;
          operand_scratch_.push_back({nested->name_, nested->offset_, nullptr});
        } else {
          const Token t = lex_.next();
          operand_scratch_.push_back({strip_percent(lex_.text(t)), t.begin, typed});
        }
        if (lex_.peek().kind != Tok::kComma) break;
        lex_.next();
      }
    }
    if (!expect(Tok::kRParen, "to end the operand list")) return false;
    auto ops = m_->arena_.alloc_array<Instruction*>(operand_scratch_.size() - base);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const OperandRef& r = operand_scratch_[base + i];
      pending_ops_.push_back({&ops[i], inst, r.name, r.offset, r.typed});
    }
    operand_scratch_.resize(base);
    inst->operands_ = ops;
    return true;
  }

  // ---- attributes -------------------------------------------------------------
  bool parse_name_list(std::vector<NameRef>& out, std::string_view what) {
    if (!expect(Tok::kLBrace, ("to begin a " + std::string(what) + " list").c_str())) return false;
    while (lex_.peek().kind == Tok::kWord) {
      const Token t = lex_.next();
      out.push_back({strip_percent(lex_.text(t)), t.begin});
      if (lex_.peek().kind != Tok::kComma) break;
      lex_.next();
    }
    return expect(Tok::kRBrace, ("to end a " + std::string(what) + " list").c_str());
  }

  bool parse_computation_name() {
    if (lex_.peek().kind != Tok::kWord)
      return fail(lex_.peek().begin, "expected a computation name, found " + found());
    const Token t = lex_.next();
    call_scratch_.push_back({strip_percent(lex_.text(t)), t.begin});
    return true;
  }

  bool parse_attribute(std::vector<Attribute>& out) {
    if (lex_.peek().kind != Tok::kWord)
      return fail(lex_.peek().begin, "expected an attribute name, found " + found());
    const Token name = lex_.next();
    if (!expect(Tok::kEqual, "after the attribute name")) return false;
    Attribute a;
    a.name = lex_.text(name);
    a.id = attr_id_from_name(a.name);
    a.offset = lex_.peek().begin;
    if (!parse_attr_value(a.id, a.name)) return false;
    a.value = text_.substr(a.offset, lex_.prev_end() - a.offset);
    out.push_back(a);
    return true;
  }

  // `{name, name, ...}` of computations, each to be resolved as a callee.
  bool parse_computation_names() {
    std::vector<NameRef> names;
    if (!parse_name_list(names, "computation")) return false;
    for (const NameRef& r : names) call_scratch_.push_back(r);
    return true;
  }

  // Comma-separated shapes up to (not including) `end`.
  bool parse_shapes(Tok end) {
    while (lex_.peek().kind != end) {
      const Shape* s = nullptr;
      if (!parse_shape(s)) return false;
      if (lex_.peek().kind != Tok::kComma) break;
      lex_.next();
    }
    return true;
  }

  // entry_computation_layout={(shape, ...)->shape}
  bool parse_computation_layout() {
    if (!expect(Tok::kLBrace, "to begin entry_computation_layout")) return false;
    if (!expect(Tok::kLParen, "to begin the parameter layouts")) return false;
    if (!parse_shapes(Tok::kRParen)) return false;
    if (!expect(Tok::kRParen, "to end the parameter layouts")) return false;
    if (!expect(Tok::kArrow, "before the result layout")) return false;
    const Shape* s = nullptr;
    if (!parse_shape(s)) return false;
    return expect(Tok::kRBrace, "to end entry_computation_layout");
  }

  bool parse_attr_value(AttrId id, std::string_view name) {
    const AttrKind kind = attr_kind(id);
    const Token t = lex_.peek();
    auto mismatch = [&] {
      return fail(t.begin, "attribute '" + std::string(name) + "' expects " +
                               std::string(attr_kind_name(kind)) + ", found " + found());
    };
    ValueError e;
    switch (kind) {
      case AttrKind::kInt: {
        std::int64_t v = 0;
        if (t.kind != Tok::kWord || !parse_int(lex_.text(t), v)) return mismatch();
        lex_.next();
        return true;
      }
      case AttrKind::kFloat: {
        double v = 0;
        if (t.kind != Tok::kWord || !parse_float(lex_.text(t), v)) return mismatch();
        lex_.next();
        return true;
      }
      case AttrKind::kBool:
        if (t.kind != Tok::kWord || (lex_.text(t) != "true" && lex_.text(t) != "false")) return mismatch();
        lex_.next();
        return true;
      case AttrKind::kString:
        if (t.kind != Tok::kString) return mismatch();
        lex_.next();
        return true;
      case AttrKind::kEnum:
        if (t.kind != Tok::kWord) return mismatch();
        lex_.next();
        return true;
      case AttrKind::kIntList:
        if (t.kind != Tok::kLBrace) return mismatch();
        return read_int_list(lex_, ints_scratch_, e) || fail(e);
      case AttrKind::kIntListList: {
        if (t.kind != Tok::kLBrace) return mismatch();
        std::vector<Ints> v;
        return read_int_list_list(lex_, v, e) || fail(e);
      }
      case AttrKind::kComputation:
        return parse_computation_name();
      case AttrKind::kComputationList:
        if (t.kind != Tok::kLBrace) return mismatch();
        return parse_computation_names();
      case AttrKind::kComputationOrList:
        if (t.kind != Tok::kLBrace) return parse_computation_name();
        return parse_computation_names();
      case AttrKind::kInstructionList:
        if (t.kind != Tok::kLBrace) return mismatch();
        return parse_name_list(pending_ctrl_, "instruction");
      case AttrKind::kWindow: {
        if (t.kind != Tok::kLBrace) return mismatch();
        Window w;
        return read_window(lex_, w, e) || fail(e);
      }
      case AttrKind::kDimLabels: {
        ConvDimLabels d;
        return read_dim_labels(lex_, d, e) || fail(e);
      }
      case AttrKind::kSliceRanges: {
        if (t.kind != Tok::kLBrace) return mismatch();
        std::vector<SliceRange> r;
        return read_slice_ranges(lex_, r, e) || fail(e);
      }
      case AttrKind::kPadding: {
        std::vector<PadDim> p;
        return read_padding(lex_, p, e) || fail(e);
      }
      case AttrKind::kReplicaGroups: {
        ReplicaGroups g;
        return read_replica_groups(lex_, g, e) || fail(e);
      }
      case AttrKind::kSharding: {
        HloSharding s;
        return read_sharding(lex_, s, e) || fail(e);
      }
      case AttrKind::kShape: {
        const Shape* s = nullptr;
        return parse_shape(s);
      }
      case AttrKind::kShapeList:
        if (t.kind != Tok::kLBrace) return mismatch();
        lex_.next();
        return parse_shapes(Tok::kRBrace) && expect(Tok::kRBrace, "to end the shape list");
      case AttrKind::kLiteral: {
        const Shape* s = nullptr;
        if (!parse_shape(s)) return false;
        return skip_literal(lex_, /*until_paren=*/false, e) || fail(e);
      }
      case AttrKind::kBraced:
        if (t.kind != Tok::kLBrace) return mismatch();
        return skip_balanced(lex_, e) || fail(e);
      case AttrKind::kStringOrBraced:
        if (t.kind == Tok::kString) {
          lex_.next();
          return true;
        }
        if (t.kind != Tok::kLBrace) return mismatch();
        return skip_balanced(lex_, e) || fail(e);
      case AttrKind::kComputationLayout:
        return parse_computation_layout();
      case AttrKind::kRaw:
        return skip_raw_value(lex_, e) || fail(e);
    }
    return mismatch();
  }

  // ---- module-level resolution ------------------------------------------------
  bool resolve_module() {
    for (const PendingCall& p : pending_calls_) {
      Computation* c = m_->find_computation(p.name);
      if (!c) return fail(p.offset, "undefined computation '%" + std::string(p.name) + "'");
      *p.slot = c;
    }
    if (!m_->entry_) {
      // XLA's rule: without ENTRY, the last computation is the entry.
      m_->entry_ = m_->computations_.back();
      m_->entry_->is_entry_ = true;
    }
    // Users (unique, in instruction order), allocated exactly once.
    std::vector<std::uint32_t> count(m_->instruction_count_, 0);
    std::vector<std::uint32_t> last(m_->instruction_count_, UINT32_MAX);
    for (Computation* c : m_->computations_)
      for (Instruction* i : c->instructions_)
        for (Instruction* o : i->operands_)
          if (last[o->id_] != i->id_) {
            last[o->id_] = i->id_;
            ++count[o->id_];
          }
    std::vector<Instruction**> fill(m_->instruction_count_, nullptr);
    for (Computation* c : m_->computations_)
      for (Instruction* i : c->instructions_) {
        auto users = m_->arena_.alloc_array<Instruction*>(count[i->id_]);
        i->users_ = users;
        fill[i->id_] = users.data();
        last[i->id_] = UINT32_MAX;
      }
    for (Computation* c : m_->computations_)
      for (Instruction* i : c->instructions_)
        for (Instruction* o : i->operands_)
          if (last[o->id_] != i->id_) {
            last[o->id_] = i->id_;
            *fill[o->id_]++ = i;
          }
    return true;
  }

  std::shared_ptr<const SourceFile> src_;
  std::string_view text_;
  Lexer lex_;
  std::unique_ptr<Module> m_;
  std::optional<Diagnostic> error_;

  Shape scratch_shape_;
  Ints ints_scratch_;
  NameMap<const Shape*> shape_index_;
  std::vector<Attribute> attr_scratch_;
  std::vector<OperandRef> operand_scratch_;
  std::vector<NameRef> call_scratch_;
  std::vector<PendingOperand> pending_ops_;
  std::vector<NameRef> pending_ctrl_;
  std::vector<PendingCall> pending_calls_;
  NameMap<Instruction*> inst_index_;
};

std::vector<std::pair<std::uint32_t, std::uint32_t>> split_modules(std::string_view text) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  // A UTF-8 byte-order mark (some editors add one) is not part of the text.
  std::uint32_t start = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    const std::size_t first = line.find_first_not_of(" \t");
    const std::size_t last = line.find_last_not_of(" \t\r");
    // Exactly `// -----` (XLA's split-input-file marker), not `// --------…`.
    if (first != std::string_view::npos && line.substr(first, last + 1 - first) == "// -----") {
      out.emplace_back(start, static_cast<std::uint32_t>(pos));
      start = static_cast<std::uint32_t>(eol);
    }
    pos = eol + 1;
  }
  out.emplace_back(start, static_cast<std::uint32_t>(text.size()));
  return out;
}

bool ParsedFile::ok() const {
  if (modules.empty()) return false;
  for (const auto& m : modules)
    if (!m.ok()) return false;
  return true;
}

std::vector<Diagnostic> ParsedFile::warnings() const {
  std::vector<Diagnostic> out;
  for (const auto& m : modules)
    if (m.ok()) out.insert(out.end(), m.value()->warnings().begin(), m.value()->warnings().end());
  return out;
}

std::string format_warnings(const std::vector<Diagnostic>& warnings) {
  std::string out;
  for (const Diagnostic& w : warnings) {
    std::string text = w.format();
    // Diagnostic::format() says "error:"; the first occurrence is the label.
    if (const auto at = text.find(": error: "); at != std::string::npos) text.replace(at, 9, ": warning: ");
    out += text;
    out += '\n';
  }
  return out;
}

std::vector<Diagnostic> ParsedFile::errors() const {
  std::vector<Diagnostic> out;
  for (const auto& m : modules)
    if (!m.ok()) out.insert(out.end(), m.errors().begin(), m.errors().end());
  return out;
}

ParsedFile parse_hlo(std::string text, std::string file_name, const ParseOptions& options) {
  ParsedFile file;
  auto src = std::make_shared<SourceFile>();
  src->name = std::move(file_name);
  src->text = std::move(text);
  file.source = src;
  if (src->text.size() >= UINT32_MAX) {
    file.modules.emplace_back(Diagnostic{src->name, 0, 0, "file too large (4 GiB limit)", ""});
    return file;
  }
  for (auto [begin, end] : split_modules(src->text)) {
    // Sections holding only comments (RUN/CHECK lines) are not modules.
    Lexer probe(src->text, begin, end);
    if (probe.peek().kind == Tok::kEof) continue;
    Parser parser(src, begin, end);
    file.modules.push_back(parser.run(options));
  }
  if (file.modules.empty()) {
    file.modules.emplace_back(make_diagnostic(src->name, src->text, 0, "expected 'HloModule': the input holds no module"));
  }
  return file;
}

ParsedFile parse_hlo_file(const std::string& path, const ParseOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ParsedFile file;
    file.modules.emplace_back(Diagnostic{path, 0, 0, "cannot open file", ""});
    return file;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_hlo(std::move(ss).str(), path, options);
}

Result<std::unique_ptr<Module>> parse_hlo_module(std::string text, std::string file_name,
                                                 const ParseOptions& options) {
  ParsedFile file = parse_hlo(std::move(text), std::move(file_name), options);
  if (file.modules.size() > 1) {
    const auto sections = split_modules(file.source->text);
    std::uint32_t at = 0;
    int seen = 0;
    for (auto [b, e] : sections) {
      Lexer probe(file.source->text, b, e);
      if (probe.peek().kind == Tok::kEof) continue;
      if (++seen == 2) {
        at = probe.peek().begin;
        break;
      }
    }
    return make_diagnostic(file.source->name, file.source->text, at,
                           "expected one module, found a second one");
  }
  return std::move(file.modules.front());
}

}  // namespace tpusim::hlo
