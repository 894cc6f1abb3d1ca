// The core's op track and counters (sim/core/core_trace.h) on a hand-built
// program and hand-set figures: every slice, counter value and time below is
// derived from the rules in the header, not read back from a run.
#include "sim/core/core_trace.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "isa/assembler.h"

namespace tpusim {
namespace {

ChipConfig test_chip() {
  ChipConfig c;
  c.clock = 1e9;
  c.core.vpu.sublanes = 8;
  c.core.vpu.lanes = 128;
  c.core.vmem.capacity = 16.0 * 1024 * 1024;
  c.hbm.capacity = 16e9;
  c.hbm.bandwidth = 1e12;
  c.hbm.efficiency = 0.8;  // 8e11 B/s sustained
  return c;
}

// xv (bf16 128x256 = 64 KiB) lives from its load (pc 0) to its store (pc 3).
constexpr const char* kProgram = R"(.buffer x hbm bf16 [128, 256]
.buffer xv vmem bf16 [128, 256] offset=0
.semaphore s
dma.start dst=xv src=x sem=s @ "fusion.1"
sem.wait sem=s @ "fusion.1"
vpu.add dst=xv a=xv b=xv @ "add.2"
dma.start dst=x src=xv sem=s @ "add.2/store"
sem.wait sem=s @ "add.2/store"
)";

struct Events {
  std::vector<nlohmann::json> slices;                     // ph X on the op track
  std::map<std::string, std::vector<std::pair<double, double>>> counters;  // name -> (ts us, value)
};

Events read(const std::string& text) {
  Events e;
  const auto doc = nlohmann::json::parse(text);
  for (const auto& ev : doc.at("traceEvents")) {
    if (ev.value("ph", "") == "X") e.slices.push_back(ev);
    if (ev.value("ph", "") == "C") {
      e.counters[ev.at("name").get<std::string>()].emplace_back(ev.at("ts").get<double>(),
                                                                ev.at("args").at("value").get<double>());
    }
  }
  return e;
}

TEST(CoreTrace, OpSlicesCarryTheirOpsFiguresAndReportedTimes) {
  auto prog = isa::assemble(kProgram, "t.tasm");
  ASSERT_TRUE(prog.ok());
  const ChipConfig chip = test_chip();
  std::vector<ProvenanceStats> prov(prog->strings.size());
  const std::uint32_t load = prog->code[0].provenance, add = prog->code[2].provenance, store = prog->code[3].provenance;
  SkippedTime skipped;
  skipped.shifts = {{2.5e-6, 10e-6}};  // a loop skipped at 2.5 us added 10 us
  skipped.offset_s = 10e-6;
  std::ostringstream out;
  {
    TraceWriter w(out);
    CoreTrace t(w, "core0", chip, *prog, skipped);
    t.retire(0, 0.0, prov);
    prov[load].hbm_bytes = 65536;
    prov[load].busy_by[static_cast<std::size_t>(Resource::kHbm)] = 0;
    t.retire(1, 1e-6, prov);  // same op: no slice yet
    t.retire(2, 2e-6, prov);  // fusion.1 ends at 2 us
    prov[add].flops = 32768;
    prov[add].busy_by[static_cast<std::size_t>(Resource::kVpuAlu)] = 2.6e-6;  // 20% of the add's 13 us
    prov[store].hbm_bytes = 65536;
    t.retire(3, 3e-6, prov);  // add.2/store is op add.2: no slice
    t.finish(5e-6, 6e-6, prov);
    w.finish();
  }
  const Events e = read(out.str());
  ASSERT_EQ(e.slices.size(), 2U) << out.str();
  // fusion.1: [0, 2) us; 65536 B over 2 us is 3.3e10 B/s, 4% of 8e11: it waited.
  EXPECT_EQ(e.slices[0].at("name"), "fusion.1");
  EXPECT_DOUBLE_EQ(e.slices[0].at("ts").get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(e.slices[0].at("dur").get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(e.slices[0].at("args").at("hbm_bytes").get<double>(), 65536);
  EXPECT_EQ(e.slices[0].at("args").at("limiter"), "waiting");
  // add.2 (with its store): from 2 us to 5 us + the 10 us skipped at 2.5 us.
  EXPECT_EQ(e.slices[1].at("name"), "add.2");
  EXPECT_DOUBLE_EQ(e.slices[1].at("ts").get<double>(), 2.0);
  EXPECT_NEAR(e.slices[1].at("dur").get<double>(), 13.0, 1e-6);
  EXPECT_DOUBLE_EQ(e.slices[1].at("args").at("flops").get<double>(), 32768);
  EXPECT_DOUBLE_EQ(e.slices[1].at("args").at("hbm_bytes").get<double>(), 65536);
  EXPECT_EQ(e.slices[1].at("args").at("limiter"), "waiting");  // VPU 20%, HBM < 1%
}

TEST(CoreTrace, CountersSampleTenMicrosecondWindows) {
  auto prog = isa::assemble(kProgram, "t.tasm");
  ASSERT_TRUE(prog.ok());
  const ChipConfig chip = test_chip();
  std::vector<ProvenanceStats> prov(prog->strings.size());
  SkippedTime skipped;  // nothing skipped: reported = simulated
  std::ostringstream out;
  {
    TraceWriter w(out);
    CoreTrace t(w, "core0", chip, *prog, skipped);
    t.retire(0, 1e-6, prov);                   // window 0: 64 KiB live
    t.hbm(1e-6, 0.0, 5e-6, 50000);             // 50 kB in window 0
    t.hbm(12e-6, 12e-6, 14e-6, 20000);         // window 0 is final; 20 kB in window 1
    t.retire(2, 12e-6, prov);                  // window 1: 64 KiB
    t.retire(4, 25e-6, prov);                  // window 2: nothing live at the last wait
    t.finish(25e-6, 26e-6, prov);
    w.finish();
  }
  const Events e = read(out.str());
  // HBM: bytes per window / 10 us, in GB/s: 5, 2, then 0 from window 2 on.
  const std::vector<std::pair<double, double>> hbm{{0, 5}, {10, 2}, {20, 0}};
  EXPECT_EQ(e.counters.at("HBM GB/s"), hbm);
  // VMEM: 64 KiB = 0.0625 MiB in windows 0 and 1 (one repeated value is
  // dropped by the writer), 0 in window 2, and 0 at the end.
  const std::vector<std::pair<double, double>> vmem{{0, 0.0625}, {20, 0}};
  EXPECT_EQ(e.counters.at(std::string(CoreTrace::kVmemCounter)), vmem);
}

}  // namespace
}  // namespace tpusim
