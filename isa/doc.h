// docs/isa.md, generated from the instruction table (TPUSIM_ISA_INSTRUCTIONS)
// and the vocabulary tables in isa/types.h. tests/isa/doc_test.cpp fails when
// docs/isa.md is stale; TPUSIM_UPDATE_ISA_DOC=1 makes it rewrite the file.
// The CLI may expose it as `tpusim --dump-isa-doc`.
#pragma once

#include <string>

namespace tpusim::isa {

std::string isa_reference_markdown();

}  // namespace tpusim::isa
