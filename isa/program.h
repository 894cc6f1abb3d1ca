// A program: declared buffers and semaphores, interned strings and the
// instruction stream. Built by the assembler (isa/assembler.h) or by the HLO
// lowering; printed by isa/printer.h; checked by isa/verifier.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "isa/instructions.h"
#include "isa/types.h"

namespace tpusim::isa {

// Where something was written: 1-based line and column, 0 = unknown.
struct SourceLoc {
  std::uint32_t line = 0;
  std::uint32_t column = 0;
  friend bool operator==(const SourceLoc&, const SourceLoc&) = default;
};

struct Buffer {
  std::string name;
  MemSpace space = MemSpace::kVmem;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> shape;  // row-major; rank >= 1
  std::int64_t offset = -1;         // byte address in its memory; -1 = placed by the allocator
  SourceLoc loc;
  // A view: a second 2-D view (another shape, same dtype and element count)
  // of an earlier HBM buffer's bytes, sharing its placement (no offset, no
  // memory of its own). Index of that buffer, or TileRef::kNone.
  std::uint32_t view_of = TileRef::kNone;

  // The 2-D view tiles address: rows = product of all but the last dim.
  [[nodiscard]] std::int64_t rows() const;
  [[nodiscard]] std::int64_t cols() const;
  [[nodiscard]] std::int64_t elements() const;
  [[nodiscard]] std::int64_t bytes() const;  // dense, unpadded
  [[nodiscard]] std::int64_t row_pitch_bytes() const;
  friend bool operator==(const Buffer&, const Buffer&) = default;
};

struct Semaphore {
  std::string name;
  std::int64_t initial = 0;
  SourceLoc loc;
  friend bool operator==(const Semaphore&, const Semaphore&) = default;
};

// Replica groups of a collective: [[0,1],[2,3]].
using tpusim::ReplicaGroups;  // common/collective.h

// Interned strings (provenance labels): id 0 is the empty string.
class StringTable {
 public:
  StringTable();
  std::uint32_t intern(std::string_view s);
  [[nodiscard]] std::string_view get(std::uint32_t id) const;
  [[nodiscard]] std::size_t size() const { return strings_.size(); }

 private:
  std::vector<std::string> strings_;
  std::unordered_map<std::string, std::uint32_t> index_;
};

// One instruction: its operands plus provenance and source location.
// sizeof(Instruction) <= 200 bytes (checked in program.cpp).
struct Instruction {
  Op op;
  std::uint32_t provenance = 0;  // StringTable id: HLO op / fusion name or user label
  SourceLoc loc;
};

struct Program {
  std::string file;  // where it came from, for diagnostics
  std::vector<Buffer> buffers;
  std::vector<Semaphore> semaphores;
  std::vector<ReplicaGroups> replica_groups;
  StringTable strings;
  std::vector<Instruction> code;
  // Reuse (docs/isa.md, `.reuse`): the section labelled `label` (the
  // provenance of an op's instructions, "label" or "label/…") stands for
  // itself and `extra` more identical sections that are not in `code`; the
  // simulator adds `extra` x its time and counters at the program's end.
  struct Reuse {
    std::string label;
    std::int64_t extra = 0;
    friend bool operator==(const Reuse&, const Reuse&) = default;
  };
  std::vector<Reuse> reuse;

  // Lookup by name; TileRef::kNone / SemRef::kNone when absent.
  [[nodiscard]] std::uint32_t find_buffer(std::string_view name) const;
  [[nodiscard]] std::uint32_t find_semaphore(std::string_view name) const;
  // The buffer whose memory `buffer` addresses (itself unless a view).
  [[nodiscard]] std::uint32_t storage(std::uint32_t buffer) const;
  // The tile covering a whole buffer.
  [[nodiscard]] TileRef whole(std::uint32_t buffer) const;
  [[nodiscard]] std::string_view provenance(const Instruction& i) const {
    return strings.get(i.provenance);
  }
};

// The op a provenance label belongs to: "approx:dot while.2/dot.7" ->
// "while.2", "fusion.7/dot.2" -> "fusion.7" (the lowering labels an op's
// instructions "op", "op/nested" or "approx:<opcode> op…").
[[nodiscard]] std::string_view provenance_root(std::string_view provenance);

// Structural equality of two programs (ignores file name and source
// locations): what a print/assemble round trip must preserve.
bool same_program(const Program& a, const Program& b);

}  // namespace tpusim::isa
