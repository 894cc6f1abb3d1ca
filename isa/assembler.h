// .tasm assembler: text -> isa::Program, with file:line:col diagnostics.
//
//   # comment (also //)
//   .buffer NAME SPACE DTYPE [d0, d1, ...] [offset=BYTES]   SPACE: hbm|vmem|smem
//   .semaphore NAME [init=N]
//   .provenance "fusion.3/dot.1"      label for the following instructions
//   MNEMONIC[.SUBOP] key=value ... [@ "label"]   one instruction per line
//
// Values: tiles `buf` (whole) or `buf[r0:r1, c0:c1]` (half-open rows, cols),
// semaphore names, integers, numbers, enum names, replica groups [[0,1],[2,3]].
// Operand names, order and defaults come from TPUSIM_ISA_INSTRUCTIONS.
// Semantic checks (bounds, alignment, hazards) are the verifier's job.
#pragma once

#include <string_view>

#include "common/diagnostic.h"
#include "isa/program.h"

namespace tpusim::isa {

// Assembles `source`; diagnostics name `file_name`. All syntax errors are
// reported (one per line at most), not only the first.
Result<Program> assemble(std::string_view source, std::string_view file_name = "<input>");

// Reads and assembles a file; a missing file is a diagnostic, not a crash.
Result<Program> assemble_file(const std::string& path);

}  // namespace tpusim::isa
