// Every workload that ships with tpusim works: assembly programs verify and
// simulate to completion, HLO modules parse, shape-check and analyze.
#include <filesystem>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/wait.h>

#include "sim/cli/cli.h"

namespace tpusim::cli {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome tpusim(std::vector<std::string> args) {
  args.insert(args.begin(), "tpusim");
  std::ostringstream out, err;
  const int code = run(args, out, err);
  return {code, out.str(), err.str()};
}

std::vector<fs::path> files(const std::string& dir, const std::string& ext) {
  std::vector<fs::path> out;
  const fs::path root = fs::path(TPUSIM_SOURCE_DIR) / dir;
  if (!fs::exists(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file() && e.path().extension() == ext) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Workloads, AssemblyProgramsVerifyOnEveryPreset) {
  const auto progs = files("workloads/asm", ".tasm");
  ASSERT_GE(progs.size(), 3u);
  for (const auto& p : progs) {
    const bool broken = p.filename() == "broken.tasm";
    for (const char* chip : {"v4", "v5e", "v5p", "v6e", "v7"}) {
      const auto r = tpusim({"check", p.string(), "--chip", chip});
      if (broken) {
        EXPECT_EQ(r.code, kFailure) << p << " on " << chip;
      } else if (std::string(chip) == "v5e") {
        EXPECT_EQ(r.code, kOk) << p << " on " << chip << "\n" << r.out << r.err;
      }
    }
  }
}

TEST(Workloads, AssemblyProgramsSimulateToCompletion) {
  for (const auto& p : files("workloads/asm", ".tasm")) {
    if (p.filename() == "broken.tasm") continue;
    // The real binary: one simulation per process.
    const std::string cmd = std::string(TPUSIM_BINARY) + " run " + p.string() + " --chip v5e -q >/dev/null 2>&1";
    const int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  }
}

TEST(Workloads, HloModulesAnalyzeOnV5e) {
  const auto mods = files("workloads/hlo", ".hlo");
  if (mods.empty()) GTEST_SKIP() << "no shipped HLO modules yet";
  for (const auto& m : mods) {
    const auto r = tpusim({"analyze", m.string(), "--chip", "v5e", "--format", "json"});
    ASSERT_EQ(r.code, kOk) << m << "\n" << r.err;
    const auto j = nlohmann::json::parse(r.out);
    const auto& total = j.contains("modules") ? j["modules"][0]["total"] : j["total"];
    EXPECT_GT(total["flops"].get<double>(), 0) << m;
    EXPECT_GT(total["bound_time_s"].get<double>(), 0) << m;
  }
}

}  // namespace
}  // namespace tpusim::cli
