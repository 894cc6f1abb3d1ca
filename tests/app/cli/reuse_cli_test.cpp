// Reuse of repeated ops (simulation.reuse; docs/lowering.md, "Reuse"): a
// model's identical layers are compiled and simulated once, and the copies
// charged the first one's time and counters. The reuse path must agree with
// the full path (every op simulated, --no-reuse) within 0.5% on step time,
// MXU FLOPs and HBM bytes. Each simulation is its own process (the binary).
#include <cmath>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/app/cli/cli_harness.h"

namespace tpusim::cli {
namespace {

using ::testing::HasSubstr;
using testing::binary;
using testing::tpusim;
using testing::write_temp;

// `layers` identical layers y = tanh(x W_i + b_i) on [rows, width], then one
// wider layer (another shape: not a copy).
std::string mlp(int layers, int rows, int width) {
  std::string h = "HloModule mlp\n\nENTRY main {\n";
  const std::string act = "bf16[" + std::to_string(rows) + "," + std::to_string(width) + "]";
  const std::string w = "bf16[" + std::to_string(width) + "," + std::to_string(width) + "]";
  h += "  x = " + act + " parameter(0)\n";
  int p = 1;
  std::string prev = "x";
  for (int i = 0; i < layers; ++i) {
    const std::string n = std::to_string(i);
    h += "  w" + n + " = " + w + " parameter(" + std::to_string(p++) + ")\n";
    h += "  b" + n + " = bf16[" + std::to_string(width) + "] parameter(" + std::to_string(p++) + ")\n";
    h += "  d" + n + " = " + act + " dot(" + prev + ", w" + n + "), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n";
    h += "  bb" + n + " = " + act + " broadcast(b" + n + "), dimensions={1}\n";
    h += "  a" + n + " = " + act + " add(d" + n + ", bb" + n + ")\n";
    h += "  t" + n + " = " + act + " tanh(a" + n + ")\n";
    prev = "t" + n;
  }
  const std::string wide = "bf16[" + std::to_string(rows) + "," + std::to_string(2 * width) + "]";
  h += "  wl = bf16[" + std::to_string(width) + "," + std::to_string(2 * width) + "] parameter(" + std::to_string(p++) +
       ")\n";
  h += "  ROOT last = " + wide + " dot(" + prev + ", wl), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  return h;
}

nlohmann::json run_json(const std::string& args) {
  const auto r = binary("run " + args + " --format json -q");
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

double rel(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-30); }

TEST(CliReuse, LowerCompilesEachDistinctOpOnce) {
  const std::string path = write_temp("mlp6.hlo", mlp(6, 256, 512));
  const auto on = tpusim({"lower", path, "--chip", "v6e", "--format", "json"});
  const auto off = tpusim({"lower", path, "--chip", "v6e", "--format", "json", "--no-reuse"});
  ASSERT_EQ(on.code, 0) << on.err;
  ASSERT_EQ(off.code, 0) << off.err;
  const auto j_on = nlohmann::json::parse(on.out), j_off = nlohmann::json::parse(off.out);
  // Six identical layers: the first two are lowered and stand for the other
  // four, round robin (t2, t4 -> t0; t3, t5 -> t1); the wider last dot is
  // another op.
  ASSERT_EQ(j_on["reused"].size(), 2u) << j_on["reused"].dump();
  EXPECT_EQ(j_on["reused"][0]["op"], "t0");
  EXPECT_EQ(j_on["reused"][0]["instances"], nlohmann::json::array({"t2", "t4"}));
  EXPECT_EQ(j_on["reused"][1]["op"], "t1");
  EXPECT_EQ(j_on["reused"][1]["instances"], nlohmann::json::array({"t3", "t5"}));
  EXPECT_TRUE(j_off["reused"].empty());
  // The program holds two layers of six: 6 L + last vs 2 L + last.
  const double on_n = j_on["instructions"].get<double>(), off_n = j_off["instructions"].get<double>();
  const double layer = (off_n - on_n) / 4;
  EXPECT_GT(layer, 0);
  EXPECT_DOUBLE_EQ(on_n - 2 * layer, off_n - 6 * layer);
}

// The acceptance rule for reuse: step time and counters agree with the full path.
void expect_same_run(const std::string& args, bool one_core = true) {
  const auto on = run_json(args);
  const auto off = run_json(args + " --no-reuse");
  ASSERT_TRUE(on.contains("step_time_s") && off.contains("step_time_s"));
  EXPECT_LT(rel(on["step_time_s"].get<double>(), off["step_time_s"].get<double>()), 0.005)
      << on["step_time_s"] << " vs " << off["step_time_s"];
  EXPECT_LT(rel(on["mxu"]["flops"].get<double>(), off["mxu"]["flops"].get<double>()), 0.005);
  EXPECT_LT(rel(on["hbm"]["bytes"].get<double>(), off["hbm"]["bytes"].get<double>()), 0.005);
  EXPECT_FALSE(on["reused"].empty());
  EXPECT_TRUE(off["reused"].empty());
  // Per-op rows account for the step (one TensorCore: its timeline is the step).
  if (!one_core) return;
  double sum = 0;
  for (const auto& op : on["ops"]) sum += op["time_s"].get<double>();
  EXPECT_LT(rel(sum, on["step_time_s"].get<double>()), 1e-6);
}

TEST(CliReuse, RepeatedLayersMatchTheFullSimulation) {
  const std::string path = write_temp("mlp8.hlo", mlp(8, 512, 1024));
  expect_same_run(path + " --chip v5e");
  const auto j = run_json(path + " --chip v5e");
  bool found = false;
  for (const auto& op : j["ops"]) {
    if (op["name"] == "t0") {
      found = true;
      EXPECT_EQ(op["occurrences"], 4);  // t0, t2, t4, t6
      // 4 layers x 2 x 512 x 1024 x 1024 FLOP (the epilogue's adds aside).
      EXPECT_NEAR(op["flops"].get<double>(), 4.0 * 2 * 512 * 1024 * 1024, 4.0 * 2 * 512 * 1024 * 1024 * 0.01);
    }
  }
  EXPECT_TRUE(found);
  ASSERT_EQ(j["reused"].size(), 2u);
  EXPECT_EQ(j["reused"][0]["instances"], 4);
  EXPECT_NEAR(j["reused"][0]["added_s"].get<double>(), 3 * j["reused"][0]["instance_s"].get<double>(), 1e-15);
}

TEST(CliReuse, MegacoreAndDecodeMatchTheFullSimulation) {
  const std::string path = write_temp("mlp8m.hlo", mlp(8, 512, 1024));
  // Two TensorCores splitting every section; on these chips odd and even
  // layers take different times (the previous section's tail overlaps
  // differently), which reusing two simulated copies round robin keeps.
  expect_same_run(path + " --chip v5p", false);
  expect_same_run(path + " --chip v4", false);
  expect_same_run(std::string(TPUSIM_SOURCE_DIR) + "/workloads/hlo/decode_step.hlo --chip v5e");
}

TEST(CliReuse, LoweredProgramKeepsItsReuse) {
  const std::string path = write_temp("mlp3.hlo", mlp(3, 256, 512));
  const std::string tasm = ::testing::TempDir() + "mlp3.tasm";
  ASSERT_EQ(tpusim({"lower", path, "--chip", "v6e", "-o", tasm}).code, 0);
  const auto from_hlo = run_json(path + " --chip v6e");
  const auto from_tasm = run_json(tasm + " --chip v6e");
  EXPECT_DOUBLE_EQ(from_tasm["step_time_s"].get<double>(), from_hlo["step_time_s"].get<double>());
  ASSERT_EQ(from_tasm["reused"].size(), 1u);  // t0, t1 simulated; t2 reuses t0
  EXPECT_EQ(from_tasm["reused"][0]["instances"], 2);
}

}  // namespace
}  // namespace tpusim::cli

// Real models: --system auto, the single-chip note, HBM that does not fit.
namespace tpusim::cli {
namespace {

TEST(CliRealModels, SystemAutoBuildsTheModulesDeviceCount) {
  const std::string layer = std::string(TPUSIM_SOURCE_DIR) + "/workloads/hlo/sharded/transformer_layer_fwd.tp8.hlo";
  const auto r = binary("run " + layer + " --chip v5p --system auto --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["chips"], 8);
  EXPECT_EQ(j["system"].get<std::string>().substr(0, 5), "2x2x2");
  EXPECT_THAT(r.err, HasSubstr("--system auto: 8 devices (num_partitions=8): 2x2x2 on v5p"));
  // Without --system: one chip, and the note says how to run them all.
  const auto one = binary("run " + layer + " --chip v5p --format json");
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_THAT(one.err, HasSubstr("the module runs on 8 devices (num_partitions=8); this run simulates one chip"));
  // Assembly has no devices to count.
  const std::string prog = write_temp("auto.tasm", ".buffer a hbm f32 [8, 128]\n");
  const auto bad = tpusim({"run", prog, "--system", "auto"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--system auto: error: needs an HLO module"));
}

TEST(CliRealModels, ParametersBeyondHbmStillSimulateWithAWarning) {
  // 2 GiB of parameters (bf16[32768,32768]) on a chip given 1 GiB of HBM.
  const std::string path = write_temp("big.hlo", R"(HloModule big
ENTRY e {
  w = bf16[32768,32768] parameter(0)
  x = bf16[128,32768] parameter(1)
  ROOT d = bf16[128,32768] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  const auto r = binary("run " + path + " --chip v6e --set hbm.capacity=1GiB --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("the module's parameters alone need 2.156 GB of HBM per device, more than the "
                               "1.074 GB of v6e"));
  const auto j = nlohmann::json::parse(r.out);
  // 2 x 128 x 32768 x 32768 FLOP.
  EXPECT_DOUBLE_EQ(j["mxu"]["flops"].get<double>(), 2.0 * 128 * 32768 * 32768);
}

}  // namespace
}  // namespace tpusim::cli
