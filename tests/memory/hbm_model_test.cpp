// The HBM model registry (memory/hbm_model.h): the chip builds whatever
// model hbm.model names. A model defined here, registered under its own
// name, must be the one a simulated DMA goes through.
#include <gtest/gtest.h>

#include <memory>
#include <tlm_utils/simple_target_socket.h>

#include "common/config_loader.h"
#include "isa/assembler.h"
#include "memory/hbm.h"
#include "memory/hbm_model.h"
#include "sim/simulate.h"

namespace tpusim {
namespace {

// Every transfer takes a fixed 10 us and counts itself.
class FixedDelayHbm : public HbmModel {
 public:
  FixedDelayHbm(sc_core::sc_module_name name, StatsRegistry& stats, const std::string& prefix)
      : HbmModel(name), socket_("socket"), served_(stats.add(prefix + ".fixed_transfers", StatUnit::kCount, "transfers")) {
    socket_.register_b_transport(this, &FixedDelayHbm::b_transport);
  }
  TargetSocket& target() override { return socket_; }

 private:
  void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
    delay += sc_core::sc_time(10, sc_core::SC_US);
    served_ += 1;
    p.set_response_status(tlm::TLM_OK_RESPONSE);
  }
  tlm_utils::simple_target_socket<FixedDelayHbm> socket_;
  Stat& served_;
};

TPUSIM_REGISTER_HBM_MODEL(fixed_delay_test, "10 us per transfer (test model)",
                          [](const char* name, const HbmConfig&, StatsRegistry& stats,
                             const std::string& prefix) -> std::unique_ptr<HbmModel> {
                            return std::make_unique<FixedDelayHbm>(name, stats, prefix);
                          });

TEST(HbmModelRegistry, ListsTheDefaultModelOfThePresets) {
  const HbmModelInfo* m = find_hbm_model("channels");
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(m->description.empty());
  EXPECT_EQ(find_hbm_model("no_such_model"), nullptr);
  auto cfg = load_config("v5e", std::vector<std::string>{});
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->chip.hbm.model, "channels");
  // The config key rejects a name that is not a model.
  EXPECT_FALSE(load_config("v5e", std::vector<std::string>{"hbm.model=dram9000"}).ok());
}

TEST(HbmModelRegistry, TheChipBuildsTheModelTheConfigNames) {
  auto cfg = load_config("v5e", std::vector<std::string>{});
  ASSERT_TRUE(cfg.ok());
  ChipConfig chip = cfg->chip;
  chip.hbm.model = "fixed_delay_test";
  auto prog = isa::assemble(
      ".buffer a hbm f32 [8, 128]\n.buffer av vmem f32 [8, 128]\n.semaphore s\n"
      "dma.start dst=av src=a sem=s\nsem.wait sem=s\n",
      "t.tasm");
  ASSERT_TRUE(prog.ok());
  auto r = simulate(chip, std::move(prog).value());
  ASSERT_TRUE(r.ok()) << format_all(r.errors());
  ASSERT_TRUE(r->finished);
  // One transfer through the test model: 10 us, far above the 4 KiB DMA's
  // own cost on v5e (~0.3 us latency + 5 ns).
  EXPECT_EQ(r->stats.value("chip0.hbm.fixed_transfers"), 1);
  EXPECT_GE(r->seconds, 10e-6);
  EXPECT_LT(r->seconds, 10.5e-6);
}

TEST(HbmModelRegistry, AnUnregisteredModelIsAnError) {
  auto cfg = load_config("v5e", std::vector<std::string>{});
  ASSERT_TRUE(cfg.ok());
  ChipConfig chip = cfg->chip;
  chip.hbm.model = "not_registered";
  auto prog = isa::assemble(".buffer a hbm f32 [8, 128]\n", "t.tasm");
  ASSERT_TRUE(prog.ok());
  auto r = simulate(chip, std::move(prog).value());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(format_all(r.errors()).find("not_registered"), std::string::npos);
}

}  // namespace
}  // namespace tpusim
