// `tpusim run --loops full|extrapolate`: loop extrapolation as a user sees it
// (sim/loop_extrapolation.h; docs/lowering.md, "Control flow").
#include <gmock/gmock.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/app/cli/cli_harness.h"

namespace tpusim::cli {
namespace {

using ::testing::HasSubstr;
using testing::tpusim;
using testing::write_temp;

// 300 identical iterations (each drains at the barrier): detection after 4.
const char* kLoop =
    ".buffer a hbm f32 [128, 1024]\n.buffer av vmem f32 [128, 1024]\n.semaphore s\n"
    ".provenance \"while.1\"\nrepeat count=300\ndma.start dst=av src=a sem=s\nsem.wait sem=s\n"
    "vpu.mul dst=av a=av b=av\nbarrier\nend\n";

TEST(CliLoops, ExtrapolateReportsTheLoop) {
  const std::string prog = write_temp("loop.tasm", kLoop);
  const auto r = tpusim({"run", prog, "--loops", "extrapolate", "--format", "json", "-q"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["loop_mode"], "extrapolate");
  ASSERT_EQ(j["loops"].size(), 1u);
  EXPECT_EQ(j["loops"][0]["loop"], "while.1");
  EXPECT_EQ(j["loops"][0]["where"], prog + ":5:1");
  EXPECT_EQ(j["loops"][0]["total_iterations"], 300);
  EXPECT_EQ(j["loops"][0]["simulated_iterations"], 4);
  // 296 iterations extrapolated at the steady iteration time.
  EXPECT_NEAR(j["loops"][0]["extrapolated_s"].get<double>(), 296 * j["loops"][0]["iteration_s"].get<double>(), 1e-15);
  bool noted = false;
  for (const auto& n : j["notes"]) noted = noted || n.get<std::string>().find("loop extrapolated: while.1") == 0;
  EXPECT_TRUE(noted) << j["notes"].dump();
}

TEST(CliLoops, FullIsTheDefaultAndExtrapolationCanBeSetAsAKey) {
  const std::string prog = write_temp("loop_default.tasm", kLoop);
  const auto r = tpusim({"run", prog, "--set", "simulation.loops=extrapolate", "--loops", "full", "--format", "json",
                         "-q"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["loop_mode"], "full");  // --loops is applied after every --set
  EXPECT_TRUE(j["loops"].empty());
}

TEST(CliLoops, UnknownModeIsAUsageError) {
  const auto r = tpusim({"run", write_temp("loop_bad.tasm", kLoop), "--loops", "sometimes"});
  EXPECT_EQ(r.code, kUsageError);
  EXPECT_THAT(r.err, HasSubstr("--loops"));
}


TEST(CliLoops, EmptyRepeatBodyEndsUnderEveryLoopMode) {
  // 1e8 iterations of nothing: no time passes, so extrapolation never saw a
  // steady iteration and simulated every one (for minutes). An empty body is skipped.
  const std::string prog = write_temp("empty_loop.tasm", "repeat count=100000000\nend\n");
  for (const char* mode : {"extrapolate", "full"}) {
    const auto r = testing::binary("run " + prog + " --chip v5e --format json --loops " + mode);
    ASSERT_EQ(r.code, kOk) << mode << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["step_time_s"].get<double>(), 0.0) << mode;
  }
}

}  // namespace
}  // namespace tpusim::cli

namespace tpusim::cli {
namespace {

// simulation.full_instruction_limit: in full mode a program that would
// execute more instructions than the limit (repeat counts multiplied out)
// is not run; the error says how many and what to do. 300 iterations of 4
// instructions plus repeat and end: 1202 executed.
TEST(CliLoops, FullModeRefusesAProgramPastTheExecutedInstructionLimit) {
  const std::string prog = write_temp("loop_limit.tasm", kLoop);
  const auto refused = tpusim({"run", prog, "--set", "simulation.full_instruction_limit=1201", "-q"});
  EXPECT_EQ(refused.code, kFailure);
  EXPECT_THAT(refused.err, HasSubstr("would execute 1.2e+03 instructions"));
  EXPECT_THAT(refused.err, HasSubstr("--loops extrapolate"));
  // (Two simulations: the real binary, one process each.)
  const auto at_limit = testing::binary("run " + prog + " --set simulation.full_instruction_limit=1202 -q");
  EXPECT_EQ(at_limit.code, kOk) << at_limit.err;
  const auto extrapolated =
      testing::binary("run " + prog + " --set simulation.full_instruction_limit=1201 --loops extrapolate -q");
  EXPECT_EQ(extrapolated.code, kOk) << extrapolated.err;
}

// simulation.max_program_instructions: the compiler refuses a program of
// more static instructions than the key, naming the op where it crossed and
// the key; the default runs the same module. 200 chained dots (a dot is its
// own kernel; --no-reuse compiles every one), each a program of its DMAs, a
// weight load, a matmul, a pop and their waits (9 instructions): 1800 in
// all, over 1000, far under the default 4 million.
TEST(CliLoops, AProgramPastTheStaticInstructionLimitIsRefusedNamingTheKey) {
  std::string hlo = "HloModule chain\nENTRY e {\n  p = bf16[128,128] parameter(0)\n  w = bf16[128,128] parameter(1)\n";
  std::string prev = "p";
  for (int i = 1; i <= 200; ++i) {
    const std::string cur = fmt::format("d{}", i);
    hlo += "  " + std::string(i == 200 ? "ROOT " : "") + cur + " = bf16[128,128] dot(" + prev +
           ", w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n";
    prev = cur;
  }
  hlo += "}\n";
  const std::string path = write_temp("chain.hlo", hlo);
  const auto refused = tpusim({"run", path, "--no-reuse", "--set", "simulation.max_program_instructions=1000", "-q"});
  EXPECT_NE(refused.code, kOk);
  EXPECT_THAT(refused.err, HasSubstr("exceeds 1000 instructions"));
  EXPECT_THAT(refused.err, HasSubstr("simulation.max_program_instructions"));
  const auto runs = testing::binary("run " + path + " --no-reuse -q");  // a simulation: its own process
  EXPECT_EQ(runs.code, kOk) << runs.err;
}

}  // namespace
}  // namespace tpusim::cli
