#include "isa/doc.h"

#include <type_traits>

#include "isa/instructions.h"
#include "isa/printer.h"
#include "isa/program.h"
#include "isa/verifier.h"

namespace tpusim::isa {
namespace {

template <typename T>
std::string_view kind_text() {
  if constexpr (std::is_same_v<T, TileRef>) return "tile";
  else if constexpr (std::is_same_v<T, SemRef>) return "semaphore";
  else if constexpr (std::is_same_v<T, GroupsRef>) return "replica groups";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "integer";
  else if constexpr (std::is_same_v<T, double>) return "number";
  else if constexpr (std::is_same_v<T, AccMode>) return "accumulate or overwrite";
  else if constexpr (std::is_same_v<T, VpuOp>) return "VPU op";
  else if constexpr (std::is_same_v<T, ReduceOp>) return "reduce op";
  else if constexpr (std::is_same_v<T, EupOp>) return "EUP op";
  else if constexpr (std::is_same_v<T, CollectiveKind>) return "collective";
  else return "?";
}

template <typename T>
std::string default_text(const T& v) {
  if constexpr (std::is_same_v<T, std::int64_t>) return std::to_string(v);
  else if constexpr (std::is_same_v<T, double>) return v == 0.0 ? "0" : std::to_string(v);
  else if constexpr (std::is_same_v<T, AccMode>) return std::string(name(v));
  else return "";
}

// Markdown table cells cannot hold a bare '|'.
std::string cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

template <typename E>
std::string names_of(E e) {
  std::string out;
  for (const auto n : all_names(e)) out += (out.empty() ? "`" : ", `") + std::string(n) + "`";
  return out;
}

}  // namespace

std::string isa_reference_markdown() {
  std::string md;
  md += "# tpusim ISA reference\n\n";
  md += "Generated from `TPUSIM_ISA_INSTRUCTIONS` in `isa/instructions.h` by "
        "`isa::isa_reference_markdown()`; do not edit by hand (regenerate with "
        "`TPUSIM_UPDATE_ISA_DOC=1 build/tests/isa_tests --gtest_filter='IsaDoc.*'`).\n\n";
  md += "## Program text (`.tasm`)\n\n";
  md += "```\n"
        "# comment\n"
        ".buffer NAME SPACE DTYPE [d0, d1, ...] [offset=BYTES | view=BUFFER]\n"
        ".semaphore NAME [init=N]\n"
        ".provenance \"hlo-op or fusion name\"\n"
        ".reuse \"op\" extra=N\n"
        "MNEMONIC[.SUBOP] key=value ... [@ \"label\"]\n"
        "```\n\n";
  md += "- Memory spaces: " + names_of(MemSpace{}) + ". Dtypes: " + names_of(DType{}) + ".\n";
  md += "- A buffer is seen as a 2-D array: rows = product of all but the last dimension, "
        "cols = the last. A **tile** is `buf` (the whole buffer) or `buf[r0:r1, c0:c1]` "
        "(half-open). Tile rows are contiguous; rows are one row pitch apart (strided).\n";
  md += "- A **view** (`view=BUFFER`) is a second 2-D view of an earlier HBM buffer's bytes: same "
        "dtype and element count, another shape (so another row pitch), no memory or offset of its "
        "own. E.g. `.buffer kv hbm bf16 [8, 2048, 32, 128]` is seen as rows of 128 elements; "
        "`.buffer kv2 hbm bf16 [16384, 4096] view=kv` sees the same bytes as rows of 4096, so "
        "`kv2[0:2048, 256:384]` is one (b, h) slice. DMAs through a view and through its buffer "
        "are ordered as if every tile of one overlapped every tile of the other.\n";
  md += "- VMEM and vreg tiles must start on the (sublanes x 32/bits, lanes) tiling of the chip's VPU "
        "and end on it or at the buffer's edge.\n";
  md += "- A **vreg** buffer is a value the vector units keep in vector registers: operands of `vpu.*`, "
        "`eup.*` and `xlu.reduce` may be in `vreg` or `vmem`; DMAs, the MXU, `xlu.transpose` and "
        "`xlu.permute` (which move data between strips) reach VMEM only. A vreg operand costs no VPU "
        "load or store slot and no VMEM bandwidth. A kernel streams its values through its "
        "instructions one vreg-wide strip at a time, so a vreg buffer of any shape holds one "
        "register (its current strip), every vreg operand names its whole buffer, and the live vreg "
        "buffers must fit `core.vpu.vregs`. A vreg buffer has no offset.\n";
  md += "- Provenance: `.provenance` labels the following instructions; `@ \"label\"` labels one.\n";
  md += "- Reuse: `.reuse \"op\" extra=N` says the instructions labelled `op` (or `op/...`, "
        "`approx:<opcode> op...`) stand for themselves and N more identical copies that the program "
        "leaves out; the simulator adds N x their attributed time and counters at the end (the "
        "compiler writes it for repeated ops, docs/lowering.md).\n";
  md += "- Operands are `name=value` in any order; optional operands left at their default are "
        "omitted by the printer.\n\n";

  md += "## Instructions\n\n";
  md += "| mnemonic | unit | operands | semantics |\n| --- | --- | --- | --- |\n";
  for (std::size_t i = 0; i < kNumOpcodes; ++i) {
    const auto code = static_cast<Opcode>(i);
    const OpcodeInfo& info = opcode_info(code);
    std::string mnemonic = "`" + std::string(info.mnemonic) + (info.has_subop ? ".<op>" : "") + "`";
    std::string operands;
    std::visit(
        [&](const auto& tag) {
          using S = std::decay_t<decltype(tag)>;
          (void)tag;
          if constexpr (!std::is_same_v<S, std::monostate>) {
            const S s{};
            for_each_field(s, [&](const FieldInfo& f, const auto& field) {
              using T = std::decay_t<decltype(field)>;
              if (!operands.empty()) operands += "<br>";
              std::string line = "`" + std::string(f.name) + "`";
              if (f.presence == Presence::kSubop) line = "`<op>`";
              line += " (" + std::string(kind_text<T>());
              if (f.presence == Presence::kOptional) {
                const std::string d = default_text(field);
                line += d.empty() ? ", optional" : ", default " + d;
              }
              line += "): " + cell(f.doc);
              operands += line;
            });
          }
        },
        make_op(code));
    md += "| " + mnemonic + " | " + std::string(name(info.unit)) + " | " +
          (operands.empty() ? std::string("—") : operands) + " | " + cell(info.semantics) + " |\n";
  }

  md += "\n## VPU elementwise ops (`vpu.<op>`)\n\nOps marked *f32 only* are float arithmetic: on bf16 tiles they need a "
        "VPU with a bf16 ALU (`core.vpu.bf16_alu`, v6e and later); elsewhere the compiler converts to f32 around them "
        "(the verifier's `vpu-dtype`). The EUP's transcendentals likewise.\n\n"
        "| op | inputs | latency class | bf16 without a bf16 ALU | meaning |\n| --- | --- | --- | --- | --- |\n";
  for (const auto n : all_names(VpuOp{})) {
    const VpuOp op = *parse_enum<VpuOp>(n);
    md += "| `" + std::string(n) + "` | " + std::to_string(vpu_op_inputs(op)) + " | " +
          std::string(name(latency_class(op))) + " (`core.vpu.latency." + std::string(name(latency_class(op))) +
          "`) | " + (vpu_op_is_arith(op) ? "f32 only" : "native") + " | " + std::string(vpu_op_doc(op)) + " |\n";
  }
  md += "\n## Reductions (`vpu.reduce.<op>`, `xlu.reduce.<op>`)\n\n" + names_of(ReduceOp{}) + "\n";
  md += "\n## Transcendentals (`eup.<op>`)\n\n| op | meaning |\n| --- | --- |\n";
  for (const auto n : all_names(EupOp{})) {
    md += "| `" + std::string(n) + "` | " + std::string(eup_op_doc(*parse_enum<EupOp>(n))) + " |\n";
  }
  md += "\n## Collectives (`collective.<op>`)\n\n| op | meaning |\n| --- | --- |\n";
  for (const auto n : all_names(CollectiveKind{})) {
    md += "| `" + std::string(n) + "` | " + std::string(collective_doc(*parse_enum<CollectiveKind>(n))) + " |\n";
  }
  md += "\n## Verifier errors (`tpusim check`)\n\n| kind | meaning |\n| --- | --- |\n";
#define X(e, text, doc) md += "| `" + std::string(text) + "` | " + std::string(doc) + " |\n";
  TPUSIM_ISA_VERIFY_ERRORS(X)
#undef X
  return md;
}

}  // namespace tpusim::isa
