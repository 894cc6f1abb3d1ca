// The CLI as a user sees it: exit codes, help, config commands.
#include "app/cli/cli.h"
#include "tests/app/cli/cli_harness.h"

#include <cstdio>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/wait.h>
#include <set>
#include <string>
#include <cmath>

#include "app/cli/config_command.h"

namespace tpusim::cli {
namespace {

using ::testing::HasSubstr;

using testing::Outcome;
using testing::tpusim;

TEST(Cli, VersionAndHelpExitZero) {
  EXPECT_EQ(tpusim({"--version"}).code, kOk);
  EXPECT_THAT(tpusim({"--version"}).out, HasSubstr("tpusim 0."));
  const auto help = tpusim({"--help"});
  EXPECT_EQ(help.code, kOk);
  for (const char* sub : {"run", "analyze", "lower", "check", "sweep", "config", "validate", "compare", "scale"}) {
    EXPECT_THAT(help.out, HasSubstr(sub));
  }
  EXPECT_THAT(help.out, HasSubstr("Exit codes"));
  const auto sub_help = tpusim({"config", "show", "--help"});
  EXPECT_EQ(sub_help.code, kOk);
  EXPECT_THAT(sub_help.out, HasSubstr("--chip"));
  EXPECT_THAT(sub_help.out, HasSubstr("--set"));
  EXPECT_THAT(sub_help.out, HasSubstr("--format"));
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(tpusim({}).code, kUsageError);
  EXPECT_EQ(tpusim({"frobnicate"}).code, kUsageError);
  EXPECT_EQ(tpusim({"config", "show", "--format", "xml"}).code, kUsageError);
  EXPECT_EQ(tpusim({"config", "show", "--no-such-flag"}).code, kUsageError);
  const auto bad_chip = tpusim({"config", "show", "--chip", "v5f"});
  EXPECT_EQ(bad_chip.code, kUsageError);
  EXPECT_THAT(bad_chip.err, HasSubstr("did you mean 'v5e'"));
  const auto bad_set = tpusim({"config", "show", "--set", "hbm.bandwidth=819"});
  EXPECT_EQ(bad_set.code, kUsageError);
  EXPECT_THAT(bad_set.err, HasSubstr("no unit"));
}

TEST(Cli, ConfigShowJsonCarriesDerivedPeaks) {
  const auto r = tpusim({"config", "show", "--chip", "v5e", "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // 1 TC x 4 MXU x 128 x 128 x 2 FLOP x 1.5 GHz = 196.608 TFLOP/s; HBM 819 GB/s.
  EXPECT_DOUBLE_EQ(j["derived"]["peak_flops_per_s"]["bf16"].get<double>(), 196.608e12);
  EXPECT_DOUBLE_EQ(j["derived"]["peak_flops_per_s"]["int8"].get<double>(), 393.216e12);
  EXPECT_DOUBLE_EQ(j["derived"]["peak_flops_per_s"]["fp8"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(j["derived"]["hbm_bytes_per_s"].get<double>(), 819e9);
  EXPECT_DOUBLE_EQ(j["derived"]["ici_bytes_per_s_per_chip"].get<double>(), 4 * 45e9 * 2);
  EXPECT_NEAR(j["derived"]["critical_intensity_flops_per_byte"].get<double>(), 196.608e12 / 819e9, 1e-9);
  EXPECT_EQ(j["config"]["core"]["mxu"]["rows"].get<int>(), 128);
  EXPECT_THAT(j["origin"]["core.mxu.rows"].get<std::string>(), HasSubstr("preset configs/chips/v5e.yaml:"));
}

TEST(Cli, ConfigShowSaysWhereOverridesCameFrom) {
  const auto r = tpusim({"config", "show", "--chip", "v5p", "--set", "core.mxu.count=8"});
  ASSERT_EQ(r.code, kOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("--set 'core.mxu.count=8'"));
  // 2 TC x 8 MXU x 128 x 128 x 2 x 1.75 GHz = 917.5 TFLOP/s.
  EXPECT_THAT(r.out, HasSubstr("917.5 TFLOP/s"));
}

TEST(Cli, ConfigShowWritesToOutDir) {
  const std::string dir = ::testing::TempDir() + "tpusim_cli_out";
  const auto r = tpusim({"config", "show", "--chip", "v6e", "--out", dir, "--quiet"});
  ASSERT_EQ(r.code, kOk) << r.err;
  std::ifstream f(dir + "/config.json");
  ASSERT_TRUE(f.good());
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["chip"], "v6e");
}

TEST(Cli, ConfigDescribeListsEveryKey) {
  const auto r = tpusim({"config", "describe", "--format", "json"});
  ASSERT_EQ(r.code, kOk);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j.size(), 50u);
  EXPECT_EQ(j[0]["key"], "name");
}

TEST(Cli, DocsConfigMdIsUpToDate) {
  std::ifstream f(std::string(TPUSIM_SOURCE_DIR) + "/docs/config.md");
  ASSERT_TRUE(f.good()) << "docs/config.md missing: run `tpusim config docs > docs/config.md`";
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), config_reference_markdown())
      << "docs/config.md is stale: run `tpusim config docs > docs/config.md`";
}

TEST(Cli, BinaryExitCodes) {
  // The real executable, as scripts call it.
  const std::string bin = TPUSIM_BINARY;
  auto status = [&](const std::string& args) {
    const int s = std::system((bin + " " + args + " >/dev/null 2>&1").c_str());
    return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
  };
  EXPECT_EQ(status("--version"), 0);
  EXPECT_EQ(status("config show --chip v7"), 0);
  EXPECT_EQ(status("config show --chip nope"), 2);
  EXPECT_EQ(status("--bogus"), 2);
}

}  // namespace
}  // namespace tpusim::cli

namespace tpusim::cli {
namespace {

const std::string kSrc = TPUSIM_SOURCE_DIR;

TEST(CliRun, RunsAnAssemblyProgramAndReportsJson) {
  const auto r = tpusim({"run", kSrc + "/workloads/asm/matmul.tasm", "--chip", "v5e", "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["finished"].get<bool>());
  EXPECT_GT(j["step_time_s"].get<double>(), 0);
  // The program multiplies 256x256 by 256x256: 2 x 256^3 FLOPs on the MXU.
  EXPECT_DOUBLE_EQ(j["mxu"]["flops"].get<double>(), 2.0 * 256 * 256 * 256);
  // It reads x and w (2 x 128 KiB bf16) and writes y (256 KiB f32) through HBM.
  EXPECT_DOUBLE_EQ(j["hbm"]["bytes"].get<double>(), 2 * 131072 + 262144);
  ASSERT_FALSE(j["ops"].empty());
  EXPECT_EQ(j["ops"][0]["name"], "dot.1");
}

TEST(CliRun, WritesTraceAndStats) {
  const std::string dir = ::testing::TempDir() + "tpusim_run_out";
  const std::string trace = ::testing::TempDir() + "tpusim_trace.json";
  const auto r = tpusim({"run", kSrc + "/workloads/asm/layernorm.tasm", "--out", dir, "--trace", trace, "-q"});
  ASSERT_EQ(r.code, kOk) << r.err;
  std::ifstream t(trace);
  const auto j = nlohmann::json::parse(t);
  std::set<std::string> tracks;
  int slices = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") tracks.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X") ++slices;
  }
  EXPECT_TRUE(tracks.count("vpu") == 1 && tracks.count("xlu0") == 1 && tracks.count("dma0") == 1);
  EXPECT_GT(slices, 3);
  std::ifstream s(dir + "/stats.json");
  const auto stats = nlohmann::json::parse(s);
  EXPECT_GT(stats["chip0.core0.cycles"]["value"].get<double>(), 0);
}

// -q: the result alone (the text report's total line) and no compiler
// notes; the notes are there without it.
TEST(CliRun, QuietPrintsTheTotalLineAndNoNotes) {
  const std::string hlo = ::testing::TempDir() + "tpusim_quiet_gather.hlo";
  std::ofstream(hlo) << "HloModule g\nENTRY e {\n  t = f32[1024,128] parameter(0)\n  i = s32[64,1] parameter(1)\n"
                        "  ROOT g = f32[64,128] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, "
                        "start_index_map={0}, index_vector_dim=1, slice_sizes={1,128}\n}\n";
  // The real binary: one simulation per process.
  const auto full = testing::binary("run " + hlo);
  ASSERT_EQ(full.code, kOk) << full.err;
  EXPECT_THAT(full.err, HasSubstr("note: approx:gather"));
  const auto quiet = testing::binary("run " + hlo + " -q");
  ASSERT_EQ(quiet.code, kOk) << quiet.err;
  EXPECT_EQ(quiet.err, "");
  ASSERT_NE(full.out.find("\ntotal "), std::string::npos) << full.out;
  const std::string total = full.out.substr(full.out.find("\ntotal ") + 1);
  EXPECT_EQ(quiet.out, total.substr(0, total.find('\n') + 1));
  // Warnings stay: a module of several devices run as one chip says so.
  std::ofstream(hlo) << "HloModule two, num_partitions=2\nENTRY e {\n  p = f32[8,128] parameter(0)\n"
                        "  ROOT a = f32[8,128] add(p, p)\n}\n";
  const auto spmd = testing::binary("run " + hlo + " -q");
  ASSERT_EQ(spmd.code, kOk) << spmd.err;
  EXPECT_THAT(spmd.err, HasSubstr("warning: the module runs on 2 devices"));
}

TEST(CliRun, IllegalProgramIsNotSimulated) {
  const auto r = tpusim({"run", kSrc + "/workloads/asm/broken.tasm"});
  EXPECT_EQ(r.code, kFailure);
  EXPECT_THAT(r.err, HasSubstr("not simulated"));
}

TEST(CliRun, MissingFileAndSyntaxErrorsAreInputErrors) {
  EXPECT_EQ(tpusim({"run", "/nonexistent.tasm"}).code, kUsageError);
  const std::string bad = ::testing::TempDir() + "bad.tasm";
  std::ofstream(bad) << ".buffer a vmem f32 [8, 128]\nvpu.frob dst=a a=a\n";
  const auto r = tpusim({"run", bad});
  EXPECT_EQ(r.code, kUsageError);
  EXPECT_THAT(r.err, HasSubstr(":2:"));
}

TEST(CliCheck, BrokenProgramFailsCleanOnePasses) {
  const auto bad = tpusim({"check", kSrc + "/workloads/asm/broken.tasm"});
  EXPECT_EQ(bad.code, kFailure);
  EXPECT_THAT(bad.out, HasSubstr("[deadlock]"));
  EXPECT_THAT(bad.out, HasSubstr("broken.tasm:20:1"));
  const auto good = tpusim({"check", kSrc + "/workloads/asm/matmul.tasm"});
  EXPECT_EQ(good.code, kOk) << good.out;
  EXPECT_THAT(good.out, HasSubstr("ok"));
}

TEST(CliValidate, SystolicReferenceRowsPassThroughTheMxuModule) {
  const auto r = tpusim({"validate", "systolic", kSrc + "/tests/validation/refs/scalesim_systolic.csv", "--format",
                         "json"});
  ASSERT_EQ(r.code, kOk) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["failures"], 0);
  EXPECT_EQ(j["rows"].size(), 26u);
  for (const auto& row : j["rows"]) EXPECT_LE(std::fabs(row["error"].get<double>()), 0.01) << row["layer"];
}

TEST(CliValidate, SharedScaleSimFileWhenPresent) {
  const std::string path = std::string(TPUSIM_SHARED_DIR) + "/refs/scalesim/systolic_shared.csv";
  if (!std::ifstream(path).good()) GTEST_SKIP() << "../shared/refs not present: " << path;
  EXPECT_EQ(tpusim({"validate", "systolic", path}).code, kOk);
}

TEST(CliValidate, RowOutsideToleranceFailsAndMalformedFileIsAnInputError) {
  const std::string off = ::testing::TempDir() + "off.csv";
  // 128x128x128 on 128x128 ws is 509 cycles; 600 is 15% off.
  std::ofstream(off) << "layer,M,K,N,rows,cols,dataflow,ref_compute_cycles\nx,128,128,128,128,128,ws,600\n";
  EXPECT_EQ(tpusim({"validate", "systolic", off}).code, kFailure);
  EXPECT_EQ(tpusim({"validate", "systolic", off, "--tolerance", "20%"}).code, kOk);
  const std::string bad = ::testing::TempDir() + "bad.csv";
  std::ofstream(bad) << "layer,M,K,N,rows,cols,dataflow,ref_compute_cycles\nx,128,abc,128,128,128,ws,600\n";
  const auto r = tpusim({"validate", "systolic", bad});
  EXPECT_EQ(r.code, kUsageError);
  EXPECT_THAT(r.err, HasSubstr("bad.csv:2:7"));
  const std::string cols = ::testing::TempDir() + "cols.csv";
  std::ofstream(cols) << "layer,M,K\nx,1,2\n";
  EXPECT_THAT(tpusim({"validate", "systolic", cols}).err, HasSubstr("missing column(s) N"));
  EXPECT_EQ(tpusim({"validate", "systolic", off, "--tolerance", "lots"}).code, kUsageError);
}

TEST(CliAnalyze, CorpusModuleJsonTotals) {
  const std::string path = std::string(TPUSIM_SHARED_DIR) +
                           "/refs/hlo-corpus/files/openxla_xla__xla__backends__gpu__tests__dot_bf16.hlo";
  if (!std::ifstream(path).good()) GTEST_SKIP() << "../shared/refs not present: " << path;
  const auto r = tpusim({"analyze", path, "--chip", "v5e", "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& total = j.contains("modules") ? j["modules"][0]["total"] : j["total"];
  for (const char* k : {"flops", "transcendentals", "bytes_accessed", "collective_bytes", "bound_time_s", "bound"}) {
    EXPECT_TRUE(total.contains(k)) << k;
  }
}

TEST(CliAnalyze, HandWrittenDotIsComputeBoundAtPeak) {
  // bf16 [4096,4096] x [4096,4096]: 2 x 4096^3 = 1.374e11 FLOP; bytes
  // 3 x 4096^2 x 2 = 100.7 MB. Intensity 1365 > v5e's 240, so compute-bound:
  // 1.374e11 / 196.608e12 = 0.699 ms.
  const std::string path = ::testing::TempDir() + "dot.hlo";
  std::ofstream(path) << "HloModule m\nENTRY e {\n  a = bf16[4096,4096] parameter(0)\n"
                         "  b = bf16[4096,4096] parameter(1)\n"
                         "  ROOT d = bf16[4096,4096] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  const auto r = tpusim({"analyze", path, "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["total"]["flops"].get<double>(), 2.0 * 4096 * 4096 * 4096);
  EXPECT_NEAR(j["total"]["bound_time_s"].get<double>(), 2.0 * 4096 * 4096 * 4096 / 196.608e12, 1e-9);
  EXPECT_EQ(j["total"]["bound"], "compute");
  std::ofstream(path) << "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT b = f32[5] negate(a)\n}\n";
  // A stated shape that differs from the inferred one: a warning, an error with --strict.
  const auto lax = tpusim({"analyze", path});
  EXPECT_EQ(lax.code, kOk);
  EXPECT_THAT(lax.err, HasSubstr("dot.hlo:4:8: warning:"));
  const auto bad = tpusim({"analyze", path, "--strict"});
  EXPECT_EQ(bad.code, kUsageError);
  EXPECT_THAT(bad.err, HasSubstr("dot.hlo:4:"));
}

}  // namespace
}  // namespace tpusim::cli

namespace tpusim::cli {
namespace {

TEST(CliValidate, CollectiveExampleRowFromTheIssue) {
  // 8 chips on a ring, w = 45 GB/s, V = 32 MiB: 7/8 V / (2w) = 326.2 us + 4 hops of 1 us.
  const std::string path = ::testing::TempDir() + "coll.csv";
  std::ofstream(path) << "collective,topology,wraparound,group,msg_bytes,link_bytes_per_s_one_way,hop_latency_s,"
                         "ref_time_s\nall-gather,8,true,all,33554432,45e9,1e-6,3.302e-4\n";
  const auto r = tpusim({"validate", "collective", path, "--format", "json"});
  EXPECT_EQ(r.code, kOk) << r.err << r.out;
  std::ofstream(path) << "collective,topology,wraparound,group,msg_bytes,link_bytes_per_s_one_way,hop_latency_s,"
                         "ref_time_s\nall-gather,8,true,all,33554432,45e9,1e-6,2.0e-4\n";
  EXPECT_EQ(tpusim({"validate", "collective", path}).code, kFailure);
}

}  // namespace
}  // namespace tpusim::cli
