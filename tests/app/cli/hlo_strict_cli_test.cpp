// Every command that reads HLO takes --strict and checks the whole file.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/app/cli/cli_harness.h"

namespace tpusim::cli {
namespace {

using testing::binary;
using testing::write_temp;

// negate keeps f32[8]; the text states f32[4] (line 4, name at column 8).
const char* kMismatch = "HloModule k\nENTRY e {\n  a = f32[8] parameter(0)\n  ROOT b = f32[4] negate(a)\n}\n";

TEST(CliHlo, StrictTurnsAStatedShapeWarningIntoAnError) {
  const std::string f = write_temp("mismatch.hlo", kMismatch);
  const std::vector<std::string> commands = {"analyze " + f, "lower " + f, "run " + f, "compare " + f + " " + f,
                                             "scale " + f + " --systems 1"};
  for (const std::string& cmd : commands) {
    const auto lax = binary(cmd);
    EXPECT_EQ(lax.code, 0) << cmd << "\n" << lax.err;
    // scale runs each size in a child and prints no parse warnings.
    if (!cmd.starts_with("scale")) {
      EXPECT_NE(lax.err.find("mismatch.hlo:4:8: warning: shape mismatch for '%b'"), std::string::npos)
          << cmd << "\n" << lax.err;
    }
    const auto strict = binary(cmd + " --strict");
    EXPECT_EQ(strict.code, 2) << cmd << "\n" << strict.err;
    EXPECT_NE(strict.err.find("mismatch.hlo:4:8: error: shape mismatch for '%b'"), std::string::npos)
        << cmd << "\n" << strict.err;
  }
  EXPECT_NE(binary("validate --help").out.find("--strict"), std::string::npos);
}

TEST(CliHlo, EveryCommandRejectsAFileWhoseSecondModuleIsTruncated) {
  // Module 2 opens its ENTRY body on line 8 (column 9) and never closes it.
  const std::string f = write_temp("truncated.hlo",
                                   "HloModule a\nENTRY e {\n  p = f32[8] parameter(0)\n  ROOT r = f32[8] negate(p)\n}\n"
                                   "// -----\nHloModule b\nENTRY e {\n  p = f32[8] parameter(0)\n");
  for (const std::string& cmd : {"analyze " + f, "lower " + f, "run " + f, "compare " + f + " " + f,
                                 "scale " + f + " --systems 1"}) {
    const auto r = binary(cmd);
    EXPECT_EQ(r.code, 2) << cmd;
    EXPECT_NE(r.err.find("truncated.hlo:8:9: error: computation '%e' is missing its closing '}'"), std::string::npos)
        << cmd << "\n" << r.err;
  }
}

}  // namespace
}  // namespace tpusim::cli
