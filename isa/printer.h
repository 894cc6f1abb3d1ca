// .tasm printer: isa::Program -> text that isa::assemble reads back into the
// same program (round trip, tests/isa/roundtrip_test.cpp).
#pragma once

#include <string>

#include "isa/program.h"

namespace tpusim::isa {

std::string print(const Program& p);
// One instruction without provenance, e.g. "vpu.add dst=y a=x b=x".
std::string print_instruction(const Program& p, const Instruction& i);
// "buf[0:8, 0:128]" or "buf" when the tile is the whole buffer.
std::string print_tile(const Program& p, const TileRef& t);

}  // namespace tpusim::isa
