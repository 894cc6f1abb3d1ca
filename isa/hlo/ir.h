// The HLO IR: Module / Computation / Instruction (after XLA's HloModule,
// HloComputation, HloInstruction). Names, attribute values and constant
// literals are views into the module's source text, which the module keeps
// alive; nodes live in the module's arena. Modules are built by the parser
// (parser.h) and are immutable afterwards.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/diagnostic.h"
#include "isa/hlo/arena.h"
#include "isa/hlo/attribute.h"
#include "isa/hlo/opcode.h"
#include "isa/hlo/shape.h"

namespace tpusim::hlo {

class Computation;
class Module;

// The text a module was parsed from, shared by the modules of one file.
struct SourceFile {
  std::string name;  // as the user gave it; "<input>" for strings
  std::string text;
};

class Instruction {
 public:
  std::string_view name() const { return name_; }
  Opcode opcode() const { return opcode_; }
  // The opcode as written; differs from opcode_name() only for kUnknown.
  std::string_view opcode_text() const { return opcode_text_; }
  bool is_unknown_opcode() const { return opcode_ == Opcode::kUnknown; }
  const Shape& shape() const { return *shape_; }
  bool has_shape() const { return shape_ != nullptr; }
  bool is_root() const { return is_root_; }
  Computation* parent() const { return parent_; }
  std::uint32_t offset() const { return offset_; }  // of the name, in the source
  // Dense index within the module (0..instruction_count-1), for side tables.
  std::uint32_t id() const { return id_; }

  std::span<Instruction* const> operands() const { return operands_; }
  const Instruction* operand(std::size_t i) const { return operands_[i]; }
  std::size_t operand_count() const { return operands_.size(); }
  std::span<Instruction* const> users() const { return users_; }
  std::span<const Attribute> attributes() const { return attrs_; }
  // Computations named by attributes (to_apply, calls, body, …), in order.
  std::span<Computation* const> called_computations() const { return called_; }

  const Attribute* attribute(AttrId id) const;
  const Attribute* attribute(std::string_view name) const;

  // parameter(N): N. -1 for other opcodes.
  std::int64_t parameter_number() const { return parameter_number_; }
  // constant(…): the literal text as written (without the parentheses).
  std::string_view literal() const { return literal_; }

  // The called computation of a single-computation attribute, or nullptr.
  Computation* called(AttrId id) const;
  // For fusion: the fused computation (calls=).
  Computation* fused_computation() const;

 private:
  friend class Parser;
  std::string_view name_;
  std::string_view opcode_text_;
  std::string_view literal_;
  const Shape* shape_ = nullptr;
  Computation* parent_ = nullptr;
  std::span<Instruction* const> operands_;
  std::span<Instruction* const> users_;
  std::span<const Attribute> attrs_;
  std::span<Computation* const> called_;
  std::int64_t parameter_number_ = -1;
  std::uint32_t offset_ = 0;
  std::uint32_t id_ = 0;
  Opcode opcode_ = Opcode::kUnknown;
  bool is_root_ = false;
};

// A computation's parameter as written in its signature `(name: shape, …)`.
struct SignatureParam {
  std::string_view name;
  const Shape* shape = nullptr;
};

class Computation {
 public:
  std::string_view name() const { return name_; }
  bool is_entry() const { return is_entry_; }
  const std::vector<Instruction*>& instructions() const { return instructions_; }
  Instruction* root() const { return root_; }
  // Parameters indexed by parameter number (nullptr where a number is unused).
  const std::vector<Instruction*>& parameters() const { return parameters_; }
  bool has_signature() const { return has_signature_; }
  const std::vector<SignatureParam>& signature_params() const { return sig_params_; }
  const Shape* signature_result() const { return sig_result_; }
  std::span<const Attribute> attributes() const { return attrs_; }
  std::uint32_t offset() const { return offset_; }
  Module* parent() const { return parent_; }

  // Linear search; builds no index (the parser's index is dropped to save memory).
  Instruction* find_instruction(std::string_view name) const;

 private:
  friend class Parser;
  std::string_view name_;
  std::vector<Instruction*> instructions_;
  std::vector<Instruction*> parameters_;
  std::vector<SignatureParam> sig_params_;
  std::span<const Attribute> attrs_;
  Instruction* root_ = nullptr;
  const Shape* sig_result_ = nullptr;
  Module* parent_ = nullptr;
  std::uint32_t offset_ = 0;
  bool is_entry_ = false;
  bool has_signature_ = false;
};

class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  std::string_view name() const { return name_; }
  std::span<const Attribute> attributes() const { return attrs_; }
  const Attribute* attribute(AttrId id) const;
  const std::vector<Computation*>& computations() const { return computations_; }
  Computation* entry() const { return entry_; }
  Computation* find_computation(std::string_view name) const;
  const SourceFile& source() const { return *source_; }
  std::uint32_t offset() const { return offset_; }
  // FileNames/FunctionNames/FileLocations/StackFrames sections, one entry
  // per line, or empty.
  std::string_view stack_frames() const { return stack_frames_; }

  // Instructions whose opcode is not in the opcode table (kept, flagged).
  const std::vector<const Instruction*>& unknown_opcodes() const { return unknown_; }
  std::size_t instruction_count() const { return instruction_count_; }
  // What XLA's parser accepts but its verifier would reject (a stated shape
  // that differs from the inferred one, …), located; empty under --strict.
  const std::vector<Diagnostic>& warnings() const { return warnings_; }

  // Heap bytes held by the IR (arena, computations, shapes), excluding the
  // source text itself.
  std::size_t memory_bytes() const;

 private:
  friend class Parser;
  std::shared_ptr<const SourceFile> source_;
  std::string_view name_;
  std::string_view stack_frames_;
  std::span<const Attribute> attrs_;
  std::vector<Computation*> computations_;
  std::unordered_map<std::string_view, Computation*> computation_index_;
  std::vector<const Instruction*> unknown_;
  std::vector<Diagnostic> warnings_;
  Computation* entry_ = nullptr;
  std::size_t instruction_count_ = 0;
  std::uint32_t offset_ = 0;
  Arena arena_;
  std::deque<Computation> computation_storage_;
  std::deque<Shape> shapes_;  // interned; instructions point here
  std::size_t shape_bytes_ = 0;
  std::deque<std::string> strings_;  // text synthesized by the parser
};

}  // namespace tpusim::hlo
