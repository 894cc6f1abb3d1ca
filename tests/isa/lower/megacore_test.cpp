// Megacore lowering (docs/lowering.md, "Megacore"): one program per
// TensorCore that together do exactly the single-core program's work. The
// invariants are counted from the programs themselves (repeats expanded):
// the useful MXU FLOPs and the bytes DMAed into HBM (every output element is
// written once) are independent of how the work is tiled and split.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "common/config_loader.h"
#include "tests/isa/lower/preset.h"
#include "isa/hlo/parser.h"
#include "isa/lower/lower.h"
#include "isa/verifier.h"
#include "common/isolated.h"
#include "sim/simulate.h"

namespace tpusim::lower {
namespace {

ChipConfig chip(const char* name = "v5e") { return tpusim::testing::preset(name); }

struct Work {
  double mxu_flops = 0;        // 2 x rows x K x N of every matmul, repeats expanded
  double hbm_write_bytes = 0;  // DMAs whose destination is in HBM
  std::int64_t core_barriers = 0;
  std::int64_t collectives = 0;
};

Work work(const isa::Program& p) {
  Work w;
  std::vector<double> mult{1.0};
  std::map<std::int64_t, std::int64_t> weight_n;  // per MXU: columns of the loaded weights
  for (const auto& i : p.code) {
    const double m = mult.back();
    std::visit(
        [&](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, isa::Repeat>) {
            mult.push_back(m * static_cast<double>(o.count));
          } else if constexpr (std::is_same_v<T, isa::End>) {
            if (mult.size() > 1) mult.pop_back();
          } else if constexpr (std::is_same_v<T, isa::MxuLoadWeights>) {
            weight_n[o.mxu] = o.src.cols;
          } else if constexpr (std::is_same_v<T, isa::MxuMatmul>) {
            w.mxu_flops += m * 2.0 * o.lhs.rows * o.lhs.cols * static_cast<double>(weight_n[o.mxu]);
          } else if constexpr (std::is_same_v<T, isa::DmaStart>) {
            const auto& dst = p.buffers[o.dst.buffer];
            if (dst.space == isa::MemSpace::kHbm) {
              w.hbm_write_bytes += m * static_cast<double>(isa::dtype_bytes(dst.dtype, std::int64_t{o.dst.rows} * o.dst.cols));
            }
          } else if constexpr (std::is_same_v<T, isa::CoreBarrier>) {
            w.core_barriers += 1;
          } else if constexpr (std::is_same_v<T, isa::Collective>) {
            w.collectives += 1;
          }
        },
        i.op);
  }
  return w;
}

// Checks that `module`'s per-core programs on `c` split the single-core
// program's work exactly, declare the same HBM buffers and verify.
// check_balance: large dots only (a dot of fewer output blocks than cores runs
// on core 0).
void expect_split_exactly(const hlo::Module& module, const ChipConfig& c, bool check_balance = true) {
  auto cores = lower_for_chip(module, c);
  ASSERT_TRUE(cores.ok()) << format_all(cores.errors());
  ASSERT_EQ(cores->size(), static_cast<std::size_t>(c.tensorcores));
  auto whole = lower_module(module, c);  // cores = 1: the whole module on one core
  ASSERT_TRUE(whole.ok());
  const Work one = work(whole->program);
  Work sum;
  std::vector<std::string> hbm0;
  for (std::size_t k = 0; k < cores->size(); ++k) {
    const isa::Program& p = (*cores)[k].program;
    const auto rep = isa::verify(p, c);
    EXPECT_TRUE(rep.ok()) << "core " << k << ": " << format_all(rep.diagnostics());
    const Work w = work(p);
    sum.mxu_flops += w.mxu_flops;
    sum.hbm_write_bytes += w.hbm_write_bytes;
    EXPECT_EQ(w.core_barriers, work((*cores)[0].program).core_barriers) << "core " << k;
    if (k > 0) {
      EXPECT_EQ(w.collectives, 0) << "only core 0 issues the chip's collectives";
    }
    std::vector<std::string> hbm;
    for (const auto& b : p.buffers) {
      if (b.space == isa::MemSpace::kHbm) hbm.push_back(b.name + ":" + std::to_string(b.bytes()));
    }
    if (k == 0) {
      hbm0 = hbm;
    } else {
      EXPECT_EQ(hbm, hbm0) << "core " << k << " declares other HBM buffers than core 0";
    }
  }
  EXPECT_DOUBLE_EQ(sum.mxu_flops, one.mxu_flops);
  EXPECT_DOUBLE_EQ(sum.hbm_write_bytes, one.hbm_write_bytes);
  EXPECT_EQ(work((*cores)[0].program).collectives, one.collectives);
  if (check_balance && one.mxu_flops > 0 && cores->size() == 2) {
    // The split is balanced: each core has about half the FLOPs.
    const double share = work((*cores)[1].program).mxu_flops / one.mxu_flops;
    EXPECT_GT(share, 0.4);
    EXPECT_LT(share, 0.6);
  }
}

TEST(LowerMegacore, ShippedLayerIsSplitExactlyOverV5pCores) {
  const std::string path = std::string(TPUSIM_SOURCE_DIR) + "/workloads/hlo/transformer_layer_fwd.after_optimizations.hlo";
  auto parsed = hlo::parse_hlo_file(path);
  ASSERT_FALSE(parsed.modules.empty());
  ASSERT_TRUE(parsed.modules[0].ok());
  expect_split_exactly(**parsed.modules[0], chip("v5p"));
}

TEST(LowerMegacore, BatchedDotSplitsTheBatch) {
  // 64 batch elements of [512,512]x[512,512]: many steps, so the lowering
  // repeats one element's program; each core repeats its 32.
  auto m = hlo::parse_hlo_module(R"(HloModule b
ENTRY e {
  a = bf16[64,512,512] parameter(0)
  b = bf16[64,512,512] parameter(1)
  ROOT d = bf16[64,512,512] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
})",
                                 "batched.hlo");
  ASSERT_TRUE(m.ok()) << format_all(m.errors());
  expect_split_exactly(**m, chip("v5p"));
}

TEST(LowerMegacore, NonMegacoreChipsGetOneProgram) {
  // v7 has two TensorCores that are separate devices (megacore: false).
  auto m = hlo::parse_hlo_module("HloModule m\nENTRY e {\n  a = f32[1024,1024] parameter(0)\n  ROOT n = f32[1024,1024] "
                                 "negate(a)\n}",
                                 "n.hlo");
  ASSERT_TRUE(m.ok());
  auto l = lower_for_chip(**m, chip("v7"));
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->size(), 1u);
  EXPECT_EQ(work(l->front().program).core_barriers, 0);
}

// Every 6th corpus file (every 36th under the sanitizer pass's stride 6)
// lowers for v5p's two cores with the same invariants, and the pair runs to
// completion on the simulated chip (no core.barrier mismatch, no deadlock).
TEST(LowerMegacore, CorpusSampleSplitsAndSimulatesOnV5p) {
  const std::filesystem::path dir = std::filesystem::path(TPUSIM_SHARED_DIR) / "refs/hlo-corpus/files";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "corpus not present under " << TPUSIM_SHARED_DIR;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".hlo") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  const char* stride_env = std::getenv("TPUSIM_CORPUS_STRIDE");
  const std::size_t stride = 6 * static_cast<std::size_t>(stride_env ? std::max(1L, std::strtol(stride_env, nullptr, 10)) : 1L);
  const ChipConfig c = chip("v5p");
  int tried = 0, ran = 0;
  for (std::size_t i = 0; i < files.size(); i += stride) {
    auto parsed = hlo::parse_hlo_file(files[i].string());
    if (parsed.modules.empty() || !parsed.modules[0].ok()) continue;
    const hlo::Module& mod = **parsed.modules[0];
    auto probe = lower_module(mod, c);
    if (!probe.ok() || !isa::verify(probe->program, c).ok()) {  // the single-core corpus test lists these
      std::printf("skipped %s: %s\n", files[i].filename().c_str(),
                  probe.ok() ? "does not verify on one core" : probe.errors()[0].message.c_str());
      continue;
    }
    ++tried;
    SCOPED_TRACE(files[i].filename().string());
    expect_split_exactly(mod, c, /*check_balance=*/false);
    std::string err;
    const auto out = run_isolated(
        [&]() -> std::string {
          auto l = lower_for_chip(mod, c);
          if (!l.ok()) return "lower: " + l.errors()[0].message;
          std::vector<isa::Program> ps;
          for (auto& k : *l) ps.push_back(std::move(k.program));
          auto r = simulate_cores(c, std::move(ps));
          if (!r.ok()) return "simulate: " + r.errors()[0].message;
          return r->finished ? "ok" : "deadlock: " + (r->blocked.empty() ? std::string() : r->blocked[0]);
        },
        err);
    EXPECT_TRUE(out && *out == "ok") << files[i].filename() << ": " << (out ? *out : err);
    if (out && *out == "ok") ++ran;
  }
  std::printf("megacore corpus sample: %d modules split and verified, %d simulated\n", tried, ran);
  EXPECT_GT(tried, 0);
}

}  // namespace
}  // namespace tpusim::lower
