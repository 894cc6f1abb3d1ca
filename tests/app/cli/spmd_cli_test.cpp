// `tpusim run --system … [--mode …]`: multi-chip runs as a user sees them.
#include <cstdlib>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/cli/cli.h"

namespace tpusim::cli {
namespace {

using ::testing::HasSubstr;

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

const std::string kTp8 = std::string(TPUSIM_SOURCE_DIR) + "/workloads/hlo/sharded/transformer_layer_fwd.tp8.hlo";

TEST(CliSpmd, ShardedLayerOnEightChipsReportsModeChipsAndCollectives) {
  const auto r = tpusim({"run", kTp8, "--chip", "v5p", "--system", "8", "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["mode"], "full");  // automatic up to 256 chips
  EXPECT_EQ(j["chips"], 8);
  EXPECT_EQ(j["system"], "8 mesh");
  ASSERT_EQ(j["collectives"].size(), 1u);
  const auto& c = j["collectives"][0];
  EXPECT_EQ(c["op"], "all-reduce");
  EXPECT_EQ(c["group_size"], 8);
  EXPECT_EQ(c["count"], 2);
  EXPECT_EQ(c["bound"], "bandwidth");
  EXPECT_DOUBLE_EQ(c["bytes"].get<double>(), 2.0 * 2048 * 4096);  // bf16[1,2048,4096]
  // A line of 8 (no wraparound stated), v5p w = 9e10 B/s: 2·7/8·V/w = 326.2 us,
  // plus 2 phases × 7 hops of 1 us.
  const double expect = 2 * 7.0 / 8.0 * 16777216.0 / 9e10 + 14e-6;
  EXPECT_NEAR(c["time_s"].get<double>(), expect, 0.05 * expect);
  // The two all-reduces wait in sequence: at least their time is exposed.
  EXPECT_GE(j["per_chip"]["max_exposed_communication_s"].get<double>(), 0.9 * 2 * expect);
  EXPECT_GT(j["step_time_s"].get<double>(), 2 * expect);
  ASSERT_EQ(j["ici_axes"].size(), 1u);
  EXPECT_EQ(j["ici_axes"][0]["links"], 14);
  EXPECT_GT(j["ici_axes"][0]["utilization"].get<double>(), 0);
}

TEST(CliSpmd, TextReportHasSystemLineAxisUseAndCollectiveTable) {
  const auto r = tpusim({"run", kTp8, "--chip", "v5p", "--system", "8", "--mode", "symmetric", "--wrap"});
  ASSERT_EQ(r.code, kOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("system       8 torus, 8 chips, symmetric mode (1 simulated)"));
  EXPECT_THAT(r.out, HasSubstr("ICI x"));
  EXPECT_THAT(r.out, HasSubstr("collective          bytes"));
  EXPECT_THAT(r.out, HasSubstr("per-axis-ring(x:ring)"));
}

TEST(CliSpmd, SingleChipRunsSayModeAndChips) {
  const auto r = tpusim({"run", std::string(TPUSIM_SOURCE_DIR) + "/workloads/asm/matmul.tasm", "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["mode"], "single-chip");
  EXPECT_EQ(j["chips"], 1);
  EXPECT_TRUE(j["collectives"].is_array());
}

TEST(CliSpmd, BadSystemAndModeFlagsAreUsageErrorsNamingTheFlag) {
  auto bad = tpusim({"run", kTp8, "--system", "4x"});
  EXPECT_EQ(bad.code, kUsageError);
  EXPECT_THAT(bad.err, HasSubstr("--system: error: expected chips per axis like 8, 4x4 or 4x4x4"));
  bad = tpusim({"run", kTp8, "--system", "2x2x2x2", "--chip", "v5p"});
  EXPECT_EQ(bad.code, kUsageError);
  EXPECT_THAT(bad.err, HasSubstr("--system"));
  // v5e has 4 ICI links: a 3D torus needs 6.
  bad = tpusim({"run", kTp8, "--system", "4x4x4", "--chip", "v5e"});
  EXPECT_EQ(bad.code, kUsageError);
  EXPECT_THAT(bad.err, HasSubstr("--system 4x4x4: error: a topology with 3 axes"));
  EXPECT_THAT(bad.err, HasSubstr("ici.links = 4"));
  bad = tpusim({"run", kTp8, "--system", "8", "--mode", "fast"});
  EXPECT_EQ(bad.code, kUsageError);
  EXPECT_THAT(bad.err, HasSubstr("--mode: error: expected full or symmetric, got 'fast'"));
  bad = tpusim({"run", kTp8, "--wrap"});
  EXPECT_EQ(bad.code, kUsageError);
  EXPECT_THAT(bad.err, HasSubstr("--wrap: error: needs --system"));
}

TEST(CliSpmd, GroupsLargerThanTheSystemAreBadInputNamingTheHloLine) {
  // tp8's all-reduces name devices 0..7 (line 264 of the file is
  // `%all-reduce.1 = ... replica_groups={{0,1,2,3,4,5,6,7}}`): on 4 chips that is
  // bad input (exit 2) found before simulating, at the HLO instruction.
  const auto r = tpusim({"run", kTp8, "--chip", "v5p", "--system", "4"});
  EXPECT_EQ(r.code, kUsageError);
  EXPECT_THAT(r.err, HasSubstr("transformer_layer_fwd.tp8.hlo:264:"));
  EXPECT_THAT(r.err, HasSubstr("all-reduce \"all-reduce.1\""));
  EXPECT_THAT(r.err, HasSubstr("the replica groups name device 7 but the system has 4 chips: expected device ids 0..3"));
  // 8 chips of groups do not tile 12 chips.
  const auto odd = tpusim({"run", kTp8, "--chip", "v5p", "--system", "12"});
  EXPECT_EQ(odd.code, kUsageError);
  EXPECT_THAT(odd.err, HasSubstr("transformer_layer_fwd.tp8.hlo:264:"));
  EXPECT_THAT(odd.err, HasSubstr("(8 chips), which does not divide the system's 12 chips"));
}

TEST(CliSpmd, BadGroupsInAssemblyNameTheLineAndEveryOffender) {
  const std::string path = ::testing::TempDir() + "bad_groups.tasm";
  std::ofstream(path) << ".buffer a hbm bf16 [8, 128]\n.buffer b hbm bf16 [8, 128]\n.semaphore s\n"
                         "collective.all_reduce dst=b src=a groups=[[0,1,2]] sem=s\n"
                         "sem.wait sem=s\n"
                         "collective.all_gather dst=b src=a groups=[[0,9]] sem=s\n"
                         "sem.wait sem=s\n";
  const auto r = tpusim({"run", path, "--chip", "v5e", "--system", "8"});
  EXPECT_EQ(r.code, kUsageError);
  EXPECT_THAT(r.err, HasSubstr(path + ":4:1: error: all-reduce: the replica groups cover devices 0..2 (3 chips)"));
  EXPECT_THAT(r.err, HasSubstr(path + ":6:1: error: all-gather: the replica groups name device 9"));
}

TEST(CliSpmd, ACollectivesOpRowShowsItsHbmTrafficAndStaysBoundByTheNetwork) {
  // An all-reduce of V = 16 MiB over a v5e line of 4 (f = 3/4) reads 4·f·V
  // and writes 3·f·V of the chip's HBM (ici.hbm_traffic's default): 88.08 MB.
  // Its time is the network's: the ICI is its limiter, its bound "communication".
  const std::string path = ::testing::TempDir() + "op_row_allreduce.tasm";
  std::ofstream(path) << ".buffer a hbm bf16 [1024, 8192]\n.buffer b hbm bf16 [1024, 8192]\n.semaphore s\n"
                         "collective.all_reduce dst=b src=a sem=s\nsem.wait sem=s\n";
  const auto r = tpusim({"run", path, "--chip", "v5e", "--system", "4", "--format", "json", "-q"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["ops"].size(), 1u);
  const auto& op = j["ops"][0];
  const double v = 16777216.0;
  EXPECT_NEAR(op["hbm_bytes"].get<double>(), 7 * 0.75 * v, 1e-5 * v);
  EXPECT_EQ(op["bound"], "communication");
  EXPECT_EQ(op["limiter"], "ICI");
  EXPECT_NEAR(j["hbm"]["bytes"].get<double>(), 7 * 0.75 * v, 1e-5 * v);
  // The collective table: one execution's reads and writes on a member chip.
  ASSERT_EQ(j["collectives"].size(), 1u);
  EXPECT_DOUBLE_EQ(j["collectives"][0]["hbm_read_bytes"].get<double>(), 4 * 0.75 * v);
  EXPECT_DOUBLE_EQ(j["collectives"][0]["hbm_write_bytes"].get<double>(), 3 * 0.75 * v);
}

TEST(CliSpmd, ScaleRunsEachSystemAndReportsWeakScalingEfficiency) {
  // An all-reduce of V = 16 MiB over every chip of a v5e line (no
  // wraparound stated), w = 4.5e10: 2·(N-1)/N·V/w + 2·(N-1) hops of 1 us:
  // N=2 374.8 us, N=4 565.2 us, N=8 666.4 us; efficiency t(2)/t(N).
  const std::string path = ::testing::TempDir() + "scale_allreduce.tasm";
  std::ofstream(path) << ".buffer a hbm bf16 [1024, 8192]\n.buffer b hbm bf16 [1024, 8192]\n.semaphore s\n"
                         "collective.all_reduce dst=b src=a sem=s\nsem.wait sem=s\n";
  const auto r = tpusim({"scale", path, "--chip", "v5e", "--systems", "2,4,8", "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 3u);
  const double v = 16777216.0;
  const double t[3] = {v / 4.5e10 + 2e-6, 1.5 * v / 4.5e10 + 6e-6, 1.75 * v / 4.5e10 + 14e-6};
  for (int i = 0; i < 3; ++i) {
    const auto& row = j["rows"][static_cast<size_t>(i)];
    EXPECT_EQ(row["chips"], 2 << i);
    EXPECT_NEAR(row["step_time_s"].get<double>(), t[i], 0.05 * t[i]);
    EXPECT_NEAR(row["scaling_efficiency"].get<double>(), t[0] / t[i], 0.05);
    EXPECT_EQ(row["bound"], "communication");
  }
  const auto text = tpusim({"scale", path, "--chip", "v5e", "--systems", "2,4"});
  EXPECT_EQ(text.code, kOk) << text.err;
  EXPECT_THAT(text.out, HasSubstr("efficiency"));

  // scripts/plot_scale.py turns the JSON into an SVG: one bar per size.
  if (std::system("python3 --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not installed";
  const std::string json_path = ::testing::TempDir() + "scale.json";
  const std::string svg_path = ::testing::TempDir() + "scale.svg";
  std::ofstream(json_path) << r.out;
  ASSERT_EQ(std::system(("python3 " + std::string(TPUSIM_SOURCE_DIR) + "/scripts/plot_scale.py " + json_path + " " +
                         svg_path)
                            .c_str()),
            0);
  std::ifstream svg(svg_path);
  std::stringstream ss;
  ss << svg.rdbuf();
  const std::string s = ss.str();
  EXPECT_THAT(s, HasSubstr("<svg"));
  std::size_t bars = 0;
  for (std::size_t at = s.find("<rect"); at != std::string::npos; at = s.find("<rect", at + 1)) ++bars;
  EXPECT_EQ(bars, 3u);
  EXPECT_THAT(s, HasSubstr("8 (8)"));
}

TEST(CliSpmd, ScaleStrongScalingWithOneModulePerSize) {
  // The generator's layer for tp = 8 and tp = 16 (same global problem), run
  // as model.{chips}.hlo on v5p rings of 8 and 16 in symmetric mode.
  if (std::system("python3 --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not installed";
  const std::string gen = std::string(TPUSIM_SOURCE_DIR) + "/workloads/gen/spmd_transformer.py";
  const std::string dir = ::testing::TempDir();
  ASSERT_EQ(std::system(("python3 " + gen + " --tp 8 -o " + dir + "strong.8.hlo").c_str()), 0);
  ASSERT_EQ(std::system(("python3 " + gen + " --tp 16 -o " + dir + "strong.16.hlo").c_str()), 0);
  const auto r = tpusim({"scale", dir + "strong.{chips}.hlo", "--chip", "v5p", "--systems", "8,16", "--wrap",
                         "--mode", "symmetric", "--strong", "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["scaling"], "strong");
  ASSERT_EQ(j["rows"].size(), 2u);
  const auto& a = j["rows"][0];
  const auto& b = j["rows"][1];
  EXPECT_EQ(b["program"], dir + "strong.16.hlo");
  const double t8 = a["step_time_s"].get<double>(), t16 = b["step_time_s"].get<double>();
  EXPECT_NEAR(b["scaling_efficiency"].get<double>(), t8 * 8 / (t16 * 16), 1e-12);
  // Less per-chip compute: half the FLOPs and bytes per chip, so at least
  // half the time, and well short of tp = 8's (the per-op costs that do
  // not shrink with the shard keep it above half; measured 0.66), but the
  // two all-reduces of V = 16 MiB grow:
  // ring of 16, w = 9e10: 2·15/16·V/(2w) + 2·8 hops = 190.8 us each.
  EXPECT_GT(b["compute_s"].get<double>(), 0.5 * a["compute_s"].get<double>());
  EXPECT_LT(b["compute_s"].get<double>(), 0.75 * a["compute_s"].get<double>());
  const double ar16 = 2 * 15.0 / 16.0 * 16777216.0 / 1.8e11 + 16e-6;
  EXPECT_NEAR(b["exposed_communication_s"].get<double>(), 2 * ar16, 0.05 * 2 * ar16);
}

TEST(CliSpmd, ScaleFlagErrorsAndFailedSizes) {
  const auto bad = tpusim({"scale", kTp8, "--systems", "4x4,4x"});
  EXPECT_EQ(bad.code, kUsageError);
  EXPECT_THAT(bad.err, HasSubstr("--systems: error: '4x' is not a system shape"));
  EXPECT_EQ(tpusim({"scale", kTp8}).code, kUsageError);  // --systems is required
  // tp8 needs 8 chips: the 2x2 row fails (exit 1) and says why.
  const auto small = tpusim({"scale", kTp8, "--chip", "v5p", "--systems", "2x2"});
  EXPECT_EQ(small.code, kFailure);
  EXPECT_THAT(small.err, HasSubstr("--systems 2x2:"));
  EXPECT_THAT(small.err, HasSubstr("the replica groups name device 7 but the system has 4 chips"));
}

std::string read_all(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(SpmdGenerator, ReproducesTheShippedTp8LayerAndEmitsMeshGroups) {
  const std::string gen = std::string(TPUSIM_SOURCE_DIR) + "/workloads/gen/spmd_transformer.py";
  if (std::system("python3 --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not installed";
  const std::string tp8 = ::testing::TempDir() + "gen_tp8.hlo";
  ASSERT_EQ(std::system(("python3 " + gen + " --dp 1 --tp 8 -o " + tp8).c_str()), 0);
  auto body = [](const std::string& text) { return text.substr(text.find("HloModule")); };
  EXPECT_EQ(body(read_all(tp8)), body(read_all(kTp8)));

  // A [2 data x 4 model] mesh: per-device batch 1, 8 heads, MLP 2752; the
  // all-reduces run over the model groups {0..3} and {4..7}.
  const std::string mesh = ::testing::TempDir() + "gen_dp2_tp4.hlo";
  ASSERT_EQ(std::system(("python3 " + gen + " --dp 2 --tp 4 -o " + mesh).c_str()), 0);
  const std::string text = read_all(mesh);
  EXPECT_THAT(text, HasSubstr("num_partitions=8"));
  EXPECT_THAT(text, HasSubstr("bf16[4096,1024]{1,0} parameter(2), sharding={devices=[1,4,2]<=[2,4]T(1,0) "
                              "last_tile_dim_replicate}"));
  EXPECT_THAT(text, HasSubstr("replica_groups={{0,1,2,3},{4,5,6,7}}"));
  EXPECT_THAT(text, HasSubstr("bf16[4096,2752]"));
  const auto r = tpusim({"run", mesh, "--chip", "v5e", "--system", "4x2", "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["collectives"].size(), 1u);
  EXPECT_EQ(j["collectives"][0]["group_size"], 4);
  EXPECT_EQ(j["collectives"][0]["count"], 2);
  // x lines of 4 without wraparound, v5e w = 4.5e10: 2·3/4·V/w + 2·3 hops, V = 16 MiB.
  const double expect = 1.5 * 16777216.0 / 4.5e10 + 6e-6;
  EXPECT_NEAR(j["collectives"][0]["time_s"].get<double>(), expect, 0.05 * expect);

  EXPECT_NE(std::system(("python3 " + gen + " --tp 3 -o /dev/null 2>/dev/null").c_str()), 0);
}

TEST(SpmdGenerator, FsdpAllGathersEveryWeightOverTheDataGroups) {
  const std::string gen = std::string(TPUSIM_SOURCE_DIR) + "/workloads/gen/spmd_transformer.py";
  if (std::system("python3 --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not installed";
  // FSDP on a [2 data x 4 model] mesh: every weight is also sharded over 'data' and
  // all-gathered over the data groups {0,4},{1,5},… before its use.
  const std::string fsdp = ::testing::TempDir() + "gen_fsdp.hlo";
  ASSERT_EQ(std::system(("python3 " + gen + " --dp 2 --tp 4 --fsdp -o " + fsdp).c_str()), 0);
  const std::string ftext = read_all(fsdp);
  EXPECT_THAT(ftext, HasSubstr("%wq.3 = bf16[2048,1024]{1,0} parameter(2), sharding={devices=[2,4]<=[8]}"));
  EXPECT_THAT(ftext, HasSubstr("%all-gather.wq.3 = bf16[4096,1024]{1,0} all-gather(bf16[2048,1024]{1,0} %wq.3)"));
  EXPECT_THAT(ftext, HasSubstr("replica_groups={{0,4},{1,5},{2,6},{3,7}}, dimensions={1}"));
  const auto f = tpusim({"run", fsdp, "--chip", "v5e", "--system", "4x2", "--format", "json"});
  ASSERT_EQ(f.code, kOk) << f.err;
  const auto fj = nlohmann::json::parse(f.out);
  // all-reduce (TP) + two all-gather sizes: Wq/Wk/Wv/Wo bf16[4096,1024] (4x)
  // and Wgate/Wup/Wdown bf16[4096,2752] (3x).
  ASSERT_EQ(fj["collectives"].size(), 3u);
  double gathers = 0;
  for (const auto& c : fj["collectives"]) {
    if (c["op"] != "all-gather") continue;
    gathers += c["count"].get<double>();
    EXPECT_EQ(c["group_size"], 2);
    // A y line of 2 on v5e: (N-1)/N · V / w + 1 hop.
    const double v = c["bytes"].get<double>();
    const double expect_ag = 0.5 * v / 4.5e10 + 1e-6;
    EXPECT_NEAR(c["time_s"].get<double>(), expect_ag, 0.05 * expect_ag);
  }
  EXPECT_EQ(gathers, 7);
}

// --- the training step (spmd_transformer.py --train) ---

const std::string kTrainTp8 =
    std::string(TPUSIM_SOURCE_DIR) + "/workloads/hlo/sharded/transformer_layer_train.tp8.hlo";

// Writes the training step for `mesh` (e.g. "--dp 4 --tp 1") at small dims:
// seq 256, d_model 512, 8 heads x 64, MLP 1024.
std::string generate_train(const std::string& mesh, const std::string& name) {
  const std::string gen = std::string(TPUSIM_SOURCE_DIR) + "/workloads/gen/spmd_transformer.py";
  const std::string out = ::testing::TempDir() + name;
  const std::string cmd = "python3 " + gen + " --train " + mesh +
                          " --seq 256 --d-model 512 --heads 8 --head-dim 64 --mlp 1024 -o " + out;
  return std::system(cmd.c_str()) == 0 ? out : std::string();
}

// Collectives of `tpusim analyze` rows (one per -start / sync op): kind -> {count, bytes}.
std::map<std::string, std::pair<int, double>> analyzed_collectives(const nlohmann::json& j) {
  std::map<std::string, std::pair<int, double>> out;
  for (const auto& r : j["ops"]) {
    std::string op = r["opcode"].get<std::string>();
    // An async-start (control flow) is costed as its callee: the generator wraps
    // only reduce-scatters in one.
    if (op == "async-start" && r["collective_bytes"].get<double>() > 0) op = "reduce-scatter";
    else if (r["category"] != "collective") continue;
    if (op.ends_with("-start")) op = op.substr(0, op.size() - 6);
    out[op].first += 1;
    out[op].second += r["collective_bytes"].get<double>();
  }
  return out;
}

// Per-device dot FLOPs of a training step = 3 x the forward's: every forward
// dot Y = A.B adds dA = dY.B^T and dB = A^T.dY of the same 2MNK. With N the
// local matrix parameters (4 d.(H/T).hd + 3 d.F/T) and B.S tokens that is
// 6.N.tokens, plus 3 x the attention dots (QK^T and PV, 2.2.B.(H/T).S^2.hd).
double train_dot_flops(double b, double s, double d, double heads_local, double hd, double f_local) {
  const double n = 4 * d * heads_local * hd + 3 * d * f_local;
  return 6 * n * b * s + 3 * 2 * 2 * b * heads_local * s * s * hd;
}

TEST(SpmdGenerator, TrainStepReproducesTheShippedTp8ModuleWithFourAllReduces) {
  if (std::system("python3 --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not installed";
  const std::string gen = std::string(TPUSIM_SOURCE_DIR) + "/workloads/gen/spmd_transformer.py";
  const std::string out = ::testing::TempDir() + "gen_train_tp8.hlo";
  ASSERT_EQ(std::system(("python3 " + gen + " --train --dp 1 --tp 8 -o " + out).c_str()), 0);
  auto body = [](const std::string& text) { return text.substr(text.find("HloModule")); };
  EXPECT_EQ(body(read_all(out)), body(read_all(kTrainTp8)));

  const auto r = tpusim({"analyze", kTrainTp8, "--chip", "v5e", "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;  // parses and shape-checks
  const auto j = nlohmann::json::parse(r.out);
  // Megatron TP: forward all-reduces after Wo and Wdown, backward all-reduces of
  // the input gradients of the Q/K/V and gate/up dots: 4 x bf16[1,2048,4096].
  const auto coll = analyzed_collectives(j);
  ASSERT_EQ(coll.size(), 1u);
  EXPECT_EQ(coll.at("all-reduce").first, 4);
  EXPECT_DOUBLE_EQ(coll.at("all-reduce").second, 4 * 2.0 * 2048 * 4096);
  // Dot FLOPs: the dot rows plus the three kOutput dot+add fusions less their
  // adds (B.S.d each) = 3 x the forward layer's 112,206,020,608.
  double dots = 0;
  int dot_fusions = 0;
  for (const auto& row : j["ops"]) {
    const std::string name = row["name"].get<std::string>();
    if (row["opcode"] == "dot") dots += row["flops"].get<double>();
    if (name.starts_with("dot_add_fusion")) {
      dots += row["flops"].get<double>();
      ++dot_fusions;
    }
  }
  EXPECT_EQ(dot_fusions, 3);
  dots -= 3 * 2048.0 * 4096;
  EXPECT_DOUBLE_EQ(dots, 3 * 112206020608.0);
  EXPECT_DOUBLE_EQ(dots, train_dot_flops(1, 2048, 4096, 4, 128, 1376));
}

TEST(SpmdGenerator, TrainStepDataParallelAllReducesEveryParameterGradient) {
  if (std::system("python3 --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not installed";
  const std::string dp4 = generate_train("--dp 4 --tp 1", "gen_train_dp4.hlo");
  ASSERT_FALSE(dp4.empty());
  const auto a = tpusim({"analyze", dp4, "--chip", "v5e", "--format", "json"});
  ASSERT_EQ(a.code, kOk) << a.err;
  // One all-reduce per parameter over the data group; together all parameter
  // bytes: bf16 x (2 norms of 512 + Wq,Wk,Wv,Wo 512x512 + Wgate,Wup,Wdown 512x1024).
  const auto coll = analyzed_collectives(nlohmann::json::parse(a.out));
  ASSERT_EQ(coll.size(), 1u);
  EXPECT_EQ(coll.at("all-reduce").first, 9);
  EXPECT_DOUBLE_EQ(coll.at("all-reduce").second, 2.0 * (2 * 512 + 4 * 512 * 512 + 3 * 512 * 1024));

  const auto r = tpusim({"run", dp4, "--chip", "v5e", "--system", "4", "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // The MXUs do exactly the training step's dot work (per device batch 1).
  EXPECT_DOUBLE_EQ(j["mxu"]["flops"].get<double>(), train_dot_flops(1, 256, 512, 8, 64, 1024));
  int count = 0;
  for (const auto& c : j["collectives"]) {
    EXPECT_EQ(c["op"], "all-reduce");
    EXPECT_EQ(c["group_size"], 4);
    count += c["count"].get<int>();
    if (c["bytes"].get<double>() == 2.0 * 512 * 1024) {
      // A line of 4 on v5e, w = 4.5e10 B/s: 2·3/4·V/w + 2·3 hops of 1 us.
      const double expect = 1.5 * 2.0 * 512 * 1024 / 4.5e10 + 6e-6;
      EXPECT_NEAR(c["time_s"].get<double>(), expect, 0.05 * expect);
    }
  }
  EXPECT_EQ(count, 9);
}

TEST(SpmdGenerator, TrainStepFsdpGathersEachWeightTwiceAndReduceScattersItsGradient) {
  if (std::system("python3 --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not installed";
  const std::string fsdp = generate_train("--dp 2 --tp 2 --fsdp", "gen_train_fsdp.hlo");
  ASSERT_FALSE(fsdp.empty());
  const auto a = tpusim({"analyze", fsdp, "--chip", "v5e", "--format", "json"});
  ASSERT_EQ(a.code, kOk) << a.err;
  // Per device, after the model split: Wq,Wk,Wv [512,256], Wo [256,512],
  // Wgate,Wup [512,512], Wdown [512,512] (bf16): 7 x 2 gathers and 7
  // reduce-scatters of those full local sizes; the replicated norms' gradients
  // are all-reduced over 'data' (2 x 1 kB) besides the 4 TP all-reduces of
  // bf16[1,256,512].
  const double weights = 2.0 * (4 * 512 * 256 + 3 * 512 * 512);
  const auto coll = analyzed_collectives(nlohmann::json::parse(a.out));
  ASSERT_EQ(coll.size(), 3u);
  EXPECT_EQ(coll.at("all-gather").first, 14);
  EXPECT_DOUBLE_EQ(coll.at("all-gather").second, 2 * weights);
  EXPECT_EQ(coll.at("reduce-scatter").first, 7);
  EXPECT_DOUBLE_EQ(coll.at("reduce-scatter").second, weights);
  EXPECT_EQ(coll.at("all-reduce").first, 4 + 2);
  EXPECT_DOUBLE_EQ(coll.at("all-reduce").second, 4 * 2.0 * 256 * 512 + 2 * 2.0 * 512);

  // On a 2x2 mesh: device = data·2 + model, so the model groups {0,1},{2,3}
  // are x lines and the data groups {0,2},{1,3} y lines.
  const auto r = tpusim({"run", fsdp, "--chip", "v5e", "--system", "2x2", "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["mxu"]["flops"].get<double>(), train_dot_flops(1, 256, 512, 4, 64, 512));
  std::map<std::string, int> counts;
  for (const auto& c : j["collectives"]) {
    counts[c["op"].get<std::string>()] += c["count"].get<int>();
    EXPECT_EQ(c["group_size"], 2);
  }
  EXPECT_EQ(counts["all-gather"], 14);
  EXPECT_EQ(counts["reduce-scatter"], 7);
  EXPECT_EQ(counts["all-reduce"], 6);
  // The step overlaps: the async gathers and reduce-scatters hide behind
  // compute, so less communication is exposed than is in flight.
  EXPECT_LT(j["per_chip"]["max_exposed_communication_s"].get<double>(),
            j["per_chip"]["max_communication_s"].get<double>());
}

}  // namespace
}  // namespace tpusim::cli
