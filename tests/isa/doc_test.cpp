// docs/isa.md is generated from the instruction table and must be current.
// Regenerate: TPUSIM_UPDATE_ISA_DOC=1 build-isa/tests/isa_tests --gtest_filter='IsaDoc.*'
#include "isa/doc.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "isa/instructions.h"

namespace tpusim::isa {
namespace {

TEST(IsaDoc, ListsEveryInstructionAndOp) {
  const std::string md = isa_reference_markdown();
  for (std::size_t i = 0; i < kNumOpcodes; ++i) {
    const auto& info = opcode_info(static_cast<Opcode>(i));
    EXPECT_NE(md.find("`" + std::string(info.mnemonic)), std::string::npos) << info.mnemonic;
    EXPECT_NE(md.find(std::string(info.semantics)), std::string::npos) << info.mnemonic;
  }
  for (const auto n : all_names(VpuOp{})) EXPECT_NE(md.find("| `" + std::string(n) + "` |"), std::string::npos) << n;
  EXPECT_NE(md.find("core.vpu.latency.div"), std::string::npos);
}

TEST(IsaDoc, CheckedInFileIsCurrent) {
  const std::string path = std::string(TPUSIM_SOURCE_DIR) + "/docs/isa.md";
  const std::string md = isa_reference_markdown();
  if (const char* update = std::getenv("TPUSIM_UPDATE_ISA_DOC"); update && std::string(update) == "1") {
    std::ofstream(path) << md;
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), md) << path << " is stale; regenerate with TPUSIM_UPDATE_ISA_DOC=1";
}

}  // namespace
}  // namespace tpusim::isa
