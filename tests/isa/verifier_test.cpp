// Verifier: one test per error kind, plus the shipped examples.
#include "isa/verifier.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "isa/assembler.h"
#include "isa/printer.h"

namespace tpusim::isa {
namespace {

// A v5e-like core, written out so the test does not depend on presets:
// 4 MXUs of 128x128 taking bf16 and int8 (no fp8, no f32), 8x128 vregs,
// 128 MiB VMEM.
ChipConfig test_chip() {
  ChipConfig c;
  c.name = "test-chip";
  c.clock = 1.5e9;
  c.tensorcores = 1;
  c.core.mxu = MxuConfig{4, 128, 128, Dataflow::kWs, true, 1, 0, MxuRates{1.0, 0.0, 2.0, 0.0, 0.0}};
  c.core.vpu.sublanes = 8;
  c.core.vpu.lanes = 128;
  c.core.vpu.vregs = 4;
  c.core.vpu.alus_per_lane = 4;
  c.core.vpu.vreg_loads_per_cycle = 1;
  c.core.vpu.vreg_stores_per_cycle = 1;
  c.core.vmem.capacity = 128.0 * 1024 * 1024;
  c.core.vmem.ports = 4;
  c.core.vmem.bytes_per_cycle = 4096;
  c.core.smem.capacity = 1024 * 1024;
  c.hbm.capacity = 16e9;
  return c;
}

VerifyReport check(const std::string& text) {
  auto prog = assemble(text, "t.tasm");
  EXPECT_TRUE(prog.ok()) << (prog.ok() ? "" : format_all(prog.errors()));
  if (!prog.ok()) return {};
  return verify(*prog, test_chip(), text);
}

std::string dump(const VerifyReport& r) { return format_all(r.diagnostics()); }

const char* kHeader = R"(.buffer x  hbm  bf16 [256, 128]
.buffer w  hbm  bf16 [128, 128]
.buffer xv vmem bf16 [256, 128] offset=0
.buffer wv vmem bf16 [128, 128] offset=65536
.buffer yv vmem f32  [256, 128] offset=98304
.semaphore s
)";

TEST(Verifier, AcceptsALegalMatmul) {
  const auto r = check(std::string(kHeader) + R"(dma.start dst=xv src=x sem=s
dma.start dst=wv src=w sem=s
sem.wait sem=s count=2
mxu.load_weights src=wv
mxu.matmul lhs=xv mode=overwrite
mxu.pop dst=yv
)");
  EXPECT_TRUE(r.ok()) << dump(r);
  EXPECT_EQ(r.summary.instructions, 6u);
  // Live ranges: xv [dma, matmul], wv [dma, load], yv [pop]. Peak VMEM is
  // max(xv 64 KiB + wv 32 KiB, yv 128 KiB) = 128 KiB.
  EXPECT_EQ(r.summary.peak_vmem_bytes, 131072);
  EXPECT_NE(r.format_summary().find("ok: 6 instructions"), std::string::npos) << r.format_summary();
}

// The live footprint per instruction (the trace's VMEM counter): the same
// live ranges as the capacity check, per instruction.
TEST(Verifier, LiveFootprintFollowsTheLiveRanges) {
  const std::string text = std::string(kHeader) + R"(dma.start dst=xv src=x sem=s
dma.start dst=wv src=w sem=s
sem.wait sem=s count=2
mxu.load_weights src=wv
mxu.matmul lhs=xv mode=overwrite
mxu.pop dst=yv
)";
  auto prog = assemble(text, "t.tasm");
  ASSERT_TRUE(prog.ok());
  // xv (64 KiB) lives from its DMA to the matmul, wv (32 KiB) from its DMA
  // to the load; the wait holds neither buffer but lies inside both ranges;
  // yv (128 KiB) lives at the pop alone.
  const std::vector<std::int64_t> want{65536, 98304, 98304, 98304, 65536, 131072};
  EXPECT_EQ(live_footprint(*prog, test_chip(), MemSpace::kVmem), want);
  // Outside loops an HBM buffer lives at its uses too: x at its DMA, w at its.
  EXPECT_EQ(live_footprint(*prog, test_chip(), MemSpace::kHbm), (std::vector<std::int64_t>{65536, 32768, 0, 0, 0, 0}));
}

// A view shares its buffer's bytes: same dtype and element count, HBM only;
// it adds nothing to the HBM footprint, and DMAs through the view and the
// buffer are ordered as if they overlapped.
TEST(Verifier, ChecksViewBuffers) {
  const std::string ok = R"(.buffer kv hbm bf16 [8, 64, 4, 128]
.buffer kv2 hbm bf16 [512, 512] view=kv
.buffer t vmem bf16 [64, 512] offset=0
.semaphore s
dma.start dst=t src=kv2[64:128, 0:512] sem=s
sem.wait sem=s
)";
  const auto r = check(ok);
  EXPECT_TRUE(r.ok()) << dump(r);
  const auto bad = check(R"(.buffer kv hbm bf16 [8, 64, 4, 128]
.buffer a hbm f32 [512, 512] view=kv
.buffer b hbm bf16 [512, 256] view=kv
.buffer c vmem bf16 [512, 512] view=kv
)");
  EXPECT_EQ(bad.count(VerifyError::kOperand), 3u) << dump(bad);
  EXPECT_NE(dump(bad).find("has dtype f32 but kv is bf16"), std::string::npos) << dump(bad);
  EXPECT_NE(dump(bad).find("has 131072 elements but kv has 262144"), std::string::npos) << dump(bad);
  EXPECT_NE(dump(bad).find("must be in the same memory, hbm or host"), std::string::npos) << dump(bad);
  // Reading the view while a DMA still writes the buffer: a hazard.
  const auto race = check(R"(.buffer kv hbm bf16 [8, 64, 4, 128]
.buffer kv2 hbm bf16 [512, 512] view=kv
.buffer t vmem bf16 [64, 512] offset=0
.buffer u vmem bf16 [64, 128] offset=1048576
.semaphore s
dma.start dst=kv[0:64, 0:128] src=u sem=s
dma.start dst=t src=kv2[64:128, 0:512] sem=s
sem.wait sem=s count=2
)");
  EXPECT_EQ(race.count(VerifyError::kUnwaitedDma), 1u) << dump(race);
}

// Host memory (the `host` space: XLA's host offload) is reached by DMA from
// and to HBM only, over the host link; the assembler prints it back.
TEST(Verifier, HostMemoryIsReachedFromHbmOnly) {
  const std::string ok = R"(.buffer a hbm bf16 [256, 128]
.buffer h host bf16 [256, 128]
.buffer b hbm bf16 [256, 128]
.semaphore s
dma.start dst=h src=a sem=s
sem.wait sem=s
dma.start dst=b src=h sem=s
sem.wait sem=s
)";
  const auto r = check(ok);
  EXPECT_TRUE(r.ok()) << dump(r);
  auto prog = assemble(ok, "t.tasm");
  ASSERT_TRUE(prog.ok());
  EXPECT_NE(print(*prog).find(".buffer h host bf16 [256, 128]"), std::string::npos) << print(*prog);
  const auto bad = check(R"(.buffer h host bf16 [256, 128]
.buffer g host bf16 [256, 128]
.buffer v vmem bf16 [256, 128] offset=0
.semaphore s
dma.start dst=v src=h sem=s
dma.start dst=g src=h sem=s
sem.wait sem=s count=2
)");
  EXPECT_EQ(bad.count(VerifyError::kOperand), 2u) << dump(bad);
  EXPECT_NE(dump(bad).find("host memory is reached from HBM only"), std::string::npos) << dump(bad);
  EXPECT_NE(dump(bad).find("t.tasm:5:1"), std::string::npos) << dump(bad);
}

// Vector-register buffers (`vreg`): VPU, EUP and XLU-reduction operands,
// always named whole, at most core.vpu.vregs of them live (one register
// each: the strip a kernel is working on), never reached by DMA, the MXU,
// transposes or lane rotations, and without an address.
TEST(Verifier, VregBuffersHoldWholeValuesOfTheVectorUnits) {
  const std::string ok = std::string(kHeader) + R"(.buffer r vreg f32 [256, 128]
.buffer q vreg f32 [256, 1]
vpu.mul dst=r a=yv b=yv
eup.exp dst=r src=r
xlu.reduce.sum dst=q src=r
vpu.add dst=yv a=r b=q
)";
  const auto r = check(ok);
  EXPECT_TRUE(r.ok()) << dump(r);
  auto prog = assemble(ok, "t.tasm");
  ASSERT_TRUE(prog.ok());
  EXPECT_NE(print(*prog).find(".buffer r vreg f32 [256, 128]\n"), std::string::npos) << print(*prog);

  const auto bad = check(std::string(kHeader) + R"(.buffer r vreg bf16 [256, 128]
.buffer t vreg bf16 [128, 256]
.buffer o vreg f32 [256, 128] offset=0
dma.start dst=r src=x sem=s
vpu.copy dst=r[0:128, 0:128] a=xv[0:128, 0:128]
xlu.transpose dst=t src=r
sem.wait sem=s
)");
  EXPECT_NE(dump(bad).find("t.tasm:10:1: error: [operand] vector registers are not addressable by DMA"), std::string::npos)
      << dump(bad);
  EXPECT_NE(dump(bad).find("t.tasm:11:1: error: [operand] dst tile r[0:128, 0:128] is part of vreg buffer r"), std::string::npos)
      << dump(bad);
  EXPECT_NE(dump(bad).find("t.tasm:12:1: error: [operand] dst t is in vreg; xlu.transpose needs vmem"), std::string::npos)
      << dump(bad);
  EXPECT_NE(dump(bad).find("vreg buffer o has an offset"), std::string::npos) << dump(bad);

  // Five values live at once in a 4-register file.
  std::string many = std::string(kHeader);
  for (int k = 0; k < 5; ++k) many += ".buffer r" + std::to_string(k) + " vreg f32 [256, 128]\n";
  for (int k = 0; k < 5; ++k) many += "vpu.copy dst=r" + std::to_string(k) + " a=yv\n";
  for (int k = 0; k < 5; ++k) many += "vpu.add dst=yv a=yv b=r" + std::to_string(k) + "\n";
  const auto full = check(many);
  EXPECT_EQ(full.count(VerifyError::kCapacity), 1u) << dump(full);
  EXPECT_NE(dump(full).find("live vreg buffers need 5 vector registers here, more than the capacity of 4 vector "
                            "registers"),
            std::string::npos)
      << dump(full);
}

TEST(Verifier, ReportsOutOfBoundsTiles) {
  const auto r = check(std::string(kHeader) + "vpu.copy dst=yv a=yv[0:264, 0:128]\n");
  ASSERT_EQ(r.count(VerifyError::kOutOfBounds), 1u) << dump(r);
  EXPECT_EQ(r.issues[0].diagnostic.line, 7);
  EXPECT_NE(r.issues[0].diagnostic.message.find("outside buffer yv (256 x 128)"), std::string::npos);
}

TEST(Verifier, ReportsMisalignedVmemTiles) {
  // f32 tiles are (8, 128): rows 4:12 start mid-tile. bf16 tiles are (16, 128):
  // rows 8:24 start mid-tile too. Rows 0:8 of f32 and the buffer's edge are fine.
  const auto r = check(std::string(kHeader) +
                       "vpu.copy dst=yv[4:12, 0:128] a=yv[0:8, 0:128]\n"
                       "vpu.copy dst=xv[8:24, 0:128] a=xv[16:32, 0:128]\n"
                       "vpu.copy dst=yv[248:256, 0:128] a=yv[0:8, 0:128]\n");
  EXPECT_EQ(r.count(VerifyError::kMisaligned), 2u) << dump(r);
  EXPECT_EQ(r.issues.size(), 2u) << dump(r);
}

TEST(Verifier, ReportsMisalignedVmemBufferOffset) {
  const auto r = check(".buffer a vmem f32 [8, 128] offset=100\nvpu.copy dst=a a=a\n");
  EXPECT_EQ(r.count(VerifyError::kMisaligned), 1u) << dump(r);
}

TEST(Verifier, ReportsVmemCapacityExceededByLiveBuffers) {
  // Two 96 MiB buffers without fixed offsets, live at the same time: 192 MiB
  // of a 128 MiB VMEM. Used one after the other instead, they fit.
  const std::string decl =
      ".buffer a vmem f32 [24576, 1024]\n.buffer b vmem f32 [24576, 1024]\n";
  auto r = check(decl + "vpu.copy dst=b a=a\n");
  ASSERT_EQ(r.count(VerifyError::kCapacity), 1u) << dump(r);
  EXPECT_NE(r.issues[0].diagnostic.message.find("a, b"), std::string::npos) << dump(r);
  r = check(decl + "vpu.copy dst=a a=a\nvpu.copy dst=b a=b\n");
  EXPECT_TRUE(r.ok()) << dump(r);
}

// In a loop body, two sections' staging buffers may share VMEM when each
// iteration writes them before reading them; a buffer the loop reads before
// writing carries a value across iterations and is live for the whole loop.
TEST(Verifier, LoopBodySectionsShareVmemUnlessAValueIsCarried) {
  const std::string decl =
      ".buffer h hbm f32 [8, 128]\n.buffer a vmem f32 [8, 128] offset=0\n.buffer b vmem f32 [8, 128] offset=0\n"
      ".semaphore s\n";
  const std::string section_a = "dma.start dst=a src=h sem=s\nsem.wait sem=s\nvpu.add dst=a a=a b=a\n"
                                "dma.start dst=h src=a sem=s\nsem.wait sem=s\n";
  const std::string section_b = "dma.start dst=b src=h sem=s\nsem.wait sem=s\nvpu.add dst=b a=b b=b\n"
                                "dma.start dst=h src=b sem=s\nsem.wait sem=s\n";
  auto r = check(decl + "repeat count=4\n" + section_a + section_b + "end\n");
  EXPECT_TRUE(r.ok()) << dump(r);
  // a is read (by vpu.add) before the loop writes it: carried, overlapping b.
  const std::string carried_a = "vpu.add dst=a a=a b=a\ndma.start dst=h src=a sem=s\nsem.wait sem=s\n";
  r = check(decl + "dma.start dst=a src=h sem=s\nsem.wait sem=s\nrepeat count=4\n" + carried_a + section_b + "end\n");
  EXPECT_EQ(r.count(VerifyError::kCapacity), 1u) << dump(r);
}

TEST(Verifier, ReportsBufferPastCapacityAndLiveOverlap) {
  const auto r = check(
      ".buffer a vmem f32 [8, 128] offset=134213632\n"  // 128 MiB - 4 KiB: its 4 KiB fit
      ".buffer b vmem f32 [16, 128] offset=134213632\n"  // 8 KiB: ends past the end
      ".buffer c vmem f32 [8, 128] offset=134213632\n"   // same place as a
      "vpu.copy dst=c a=a\n");
  EXPECT_EQ(r.count(VerifyError::kCapacity), 2u) << dump(r);  // b past the end; a/c overlap
}

TEST(Verifier, LiveOverlapFoundPastNeighboursAndReuseOverTimeIsLegal) {
  // An 8x128 f32 tile is 4 KiB. big spans [0, 16 KiB); x sits at 4 KiB inside
  // it, y at 8 KiB: both collide with big, not with each other, and x lies
  // between big and y in address order while all three are live.
  const std::string decl =
      ".buffer big vmem f32 [32, 128] offset=0\n"
      ".buffer x vmem f32 [8, 128] offset=4096\n"
      ".buffer y vmem f32 [8, 128] offset=8192\n"
      ".buffer z vmem f32 [32, 128] offset=0\n"
      ".buffer w vmem f32 [8, 128] offset=65536\n";
  auto r = check(decl +
                 "vpu.copy dst=x a=big[0:8, 0:128]\nvpu.copy dst=y a=big[8:16, 0:128]\nvpu.copy dst=x a=y\n");
  ASSERT_EQ(r.count(VerifyError::kCapacity), 2u) << dump(r);
  EXPECT_NE(dump(r).find("big and x"), std::string::npos) << dump(r);
  EXPECT_NE(dump(r).find("big and y"), std::string::npos) << dump(r);
  // z takes big's place after big's last use (legal); x then lands inside the
  // live z (one collision); y comes after z and x are dead (legal).
  r = check(decl +
            "vpu.copy dst=w a=big[0:8, 0:128]\nvpu.copy dst=z[0:8, 0:128] a=w\n"
            "vpu.copy dst=x a=z[0:8, 0:128]\nvpu.copy dst=y a=w\n");
  ASSERT_EQ(r.count(VerifyError::kCapacity), 1u) << dump(r);
  EXPECT_NE(dump(r).find("x and z"), std::string::npos) << dump(r);
  EXPECT_EQ(r.issues.size(), 1u) << dump(r);
}

TEST(Verifier, PopWidthFollowsTheAccumulatorRowsItReads) {
  // One MXU, two matmuls into different accumulator rows with weights 128 and
  // 96 wide (a ragged last column block), then both pops: legal. Popping the
  // 96-wide rows as 128 columns is not.
  const std::string prog = std::string(kHeader) + R"(.buffer w2 vmem bf16 [128, 96] offset=131072
.buffer y2 vmem f32 [128, 96] offset=163840
dma.start dst=xv src=x sem=s
dma.start dst=wv src=w sem=s
sem.wait sem=s count=2
mxu.load_weights src=wv
mxu.matmul lhs=xv[0:128, 0:128] mode=overwrite
mxu.load_weights src=w2
mxu.matmul lhs=xv[128:256, 0:128] acc=128 mode=overwrite
mxu.pop dst=yv[0:128, 0:128]
)";
  auto r = check(prog + "mxu.pop dst=y2 acc=128\n");
  EXPECT_TRUE(r.ok()) << dump(r);
  r = check(prog + "mxu.pop dst=yv[128:256, 0:128] acc=128\n");
  ASSERT_EQ(r.count(VerifyError::kOperand), 1u) << dump(r);
  EXPECT_NE(dump(r).find("accumulator row 128 are N = 96"), std::string::npos) << dump(r);
}

TEST(Verifier, ReportsReadOfUnwaitedDma) {
  auto r = check(std::string(kHeader) + R"(dma.start dst=wv src=w sem=s
mxu.load_weights src=wv
sem.wait sem=s
)");
  ASSERT_EQ(r.count(VerifyError::kUnwaitedDma), 1u) << dump(r);
  EXPECT_EQ(r.issues[0].diagnostic.line, 8);
  EXPECT_NE(r.issues[0].diagnostic.message.find("line 7"), std::string::npos) << dump(r);
  // A barrier also completes it.
  r = check(std::string(kHeader) + "dma.start dst=wv src=w sem=s\nbarrier\nmxu.load_weights src=wv\n");
  EXPECT_EQ(r.count(VerifyError::kUnwaitedDma), 0u) << dump(r);
}

TEST(Verifier, ReportsOverwriteOfDmaSourceAndLoopCarriedHazards) {
  // Writing the DMA's source while it runs (WAR).
  auto r = check(std::string(kHeader) + "dma.start dst=x src=xv sem=s\nvpu.copy dst=xv a=xv\nsem.wait sem=s\n");
  EXPECT_EQ(r.count(VerifyError::kUnwaitedDma), 1u) << dump(r);
  // Loop-carried: iteration 1 starts a DMA into xv that only the wait after
  // the loop completes; iteration 2 reads xv while it may still run. Only
  // visible because the verifier runs repeat bodies twice.
  r = check(std::string(kHeader) +
            "repeat count=4\nvpu.copy dst=wv a=xv[0:128, 0:128]\n"
            "dma.start dst=xv src=x sem=s\nend\nsem.wait sem=s count=4\n");
  ASSERT_GE(r.count(VerifyError::kUnwaitedDma), 1u) << dump(r);
  EXPECT_EQ(r.issues[0].diagnostic.line, 8) << dump(r);
  // The 2 iterations not analysed still signal: the wait for 4 is satisfied.
  EXPECT_EQ(r.count(VerifyError::kDeadlock), 0u) << dump(r);
  // A loop that waits more than it signals runs dry.
  r = check(std::string(kHeader) + "sem.signal sem=s count=3\nrepeat count=5\nsem.wait sem=s\nend\n");
  EXPECT_EQ(r.count(VerifyError::kDeadlock), 1u) << dump(r);
}

TEST(Verifier, ReportsDeadlockOnUnsignalledSemaphore) {
  auto r = check(std::string(kHeader) + ".semaphore never\nsem.wait sem=never\n");
  ASSERT_EQ(r.count(VerifyError::kDeadlock), 1u) << dump(r);
  EXPECT_NE(r.issues[0].diagnostic.message.find("no instruction ever signals"), std::string::npos);
  // Signalled, but only after the wait: in-order issue can never get there.
  r = check(std::string(kHeader) + "dma.start dst=xv src=x sem=s\nsem.wait sem=s count=2\n"
                                   "dma.start dst=wv src=w sem=s\n");
  ASSERT_EQ(r.count(VerifyError::kDeadlock), 1u) << dump(r);
  EXPECT_NE(r.issues[0].diagnostic.message.find("needs 2 signal(s) but at most 1"), std::string::npos);
  // An initial value satisfies a wait.
  r = check(".semaphore go init=1\nsem.wait sem=go\n");
  EXPECT_TRUE(r.ok()) << dump(r);
}

TEST(Verifier, ReportsMatmulWithoutWeightsAndPopWithoutResults) {
  auto r = check(std::string(kHeader) + "mxu.matmul lhs=xv\nmxu.pop dst=yv mxu=1\n");
  EXPECT_EQ(r.count(VerifyError::kMxuNoWeights), 2u) << dump(r);
  // Weights loaded on MXU 0 do not help MXU 2.
  r = check(std::string(kHeader) + "mxu.load_weights src=wv\nmxu.matmul mxu=2 lhs=xv\n");
  EXPECT_EQ(r.count(VerifyError::kMxuNoWeights), 1u) << dump(r);
}

TEST(Verifier, ReportsDtypeTheMxuDoesNotSupport) {
  const auto r = check(".buffer w vmem f8e4m3 [128, 128]\n.buffer l vmem f32 [128, 128]\n"
                       "mxu.load_weights src=w\nmxu.matmul lhs=l\n");
  EXPECT_EQ(r.count(VerifyError::kMxuDtype), 2u) << dump(r);  // fp8 weights, f32 lhs
  EXPECT_NE(r.issues[0].diagnostic.message.find("test-chip"), std::string::npos);
}

// bf16 float arithmetic needs a bf16 ALU (core.vpu.bf16_alu: v6e and
// later); moves, compares, select and converts of bf16 do not. Mosaic's
// canonicalize_mosaic.cc: bf16 add/sub/mul/max/min and exp/tanh/log from
// generation 6 on.
TEST(Verifier, ReportsBf16ArithmeticOnAVpuWithoutABf16Alu) {
  const std::string text =
      ".buffer x vmem bf16 [16, 128]\n.buffer y vmem bf16 [16, 128] offset=4096\n"
      ".buffer p vmem pred [16, 128] offset=8192\n.buffer f vmem f32 [16, 128] offset=16384\n"
      "vpu.add dst=y a=x b=x\nvpu.max dst=y a=x b=x\neup.exp dst=y src=x\n"
      "vpu.copy dst=y a=x\nvpu.cmp_lt dst=p a=x b=x\nvpu.select dst=y a=p b=x c=x\n"
      "vpu.convert dst=f a=x\nvpu.add dst=f a=f b=f\neup.exp dst=f src=f\n";
  auto prog = assemble(text, "t.tasm");
  ASSERT_TRUE(prog.ok()) << format_all(prog.errors());
  ChipConfig c = test_chip();
  c.core.vpu.bf16_alu = false;
  const auto without = verify(*prog, c, text);
  EXPECT_EQ(without.count(VerifyError::kVpuDtype), 3u) << dump(without);  // add, max, exp of bf16
  EXPECT_EQ(without.issues.size(), 3u) << dump(without);
  EXPECT_NE(without.issues[0].diagnostic.message.find("core.vpu.bf16_alu"), std::string::npos);
  c.core.vpu.bf16_alu = true;
  EXPECT_TRUE(verify(*prog, c, text).ok()) << dump(verify(*prog, c, text));
}

TEST(Verifier, ReportsOperandRuleViolations) {
  const auto r = check(std::string(kHeader) +
                       "mxu.load_weights src=xv\n"              // 256 x 128 > 128 x 128
                       "mxu.matmul lhs=x mxu=7\n"               // HBM operand, no MXU 7
                       "vpu.fma dst=yv a=yv\n"                  // fma needs 3 inputs
                       "xlu.transpose dst=yv src=yv\n"          // 256x128 -> 128x256 expected
                       "dma.start dst=yv src=x sem=s\n");       // dtype differs
  EXPECT_GE(r.count(VerifyError::kOperand), 5u) << dump(r);
  EXPECT_EQ(r.issues.size(), r.count(VerifyError::kOperand) + r.count(VerifyError::kUnwaitedDma))
      << dump(r);
}

TEST(Verifier, DiagnosticsCarryFileLineColumnAndSource) {
  const auto r = check(std::string(kHeader) + "  mxu.matmul lhs=xv\n");
  ASSERT_EQ(r.issues.size(), 1u);
  const Diagnostic& d = r.issues[0].diagnostic;
  EXPECT_EQ(d.file, "t.tasm");
  EXPECT_EQ(d.line, 7);
  EXPECT_EQ(d.column, 3);
  EXPECT_EQ(d.source_line, "  mxu.matmul lhs=xv");
  EXPECT_NE(d.format().find("t.tasm:7:3"), std::string::npos) << d.format();
}

// `delay` stalls issue for a number of cycles: 0 is legal (no stall), a
// negative count is an operand error at the instruction's line and column.
TEST(Verifier, DelayCyclesAreNonNegative) {
  EXPECT_TRUE(check(std::string(kHeader) + "delay cycles=0\ndelay cycles=1000\n").ok());
  const auto r = check(std::string(kHeader) + "delay cycles=5\n  delay cycles=-1\n");
  ASSERT_EQ(r.issues.size(), 1u) << dump(r);
  EXPECT_EQ(r.count(VerifyError::kOperand), 1u) << dump(r);
  EXPECT_NE(dump(r).find("t.tasm:8:3: error: [operand] delay cycles must be >= 0"), std::string::npos) << dump(r);
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(VerifierExamples, ShippedProgramsAreLegal) {
  for (const char* name : {"matmul", "matmul_bias_gelu", "layernorm"}) {
    const std::string path = std::string(TPUSIM_SOURCE_DIR) + "/workloads/asm/" + name + ".tasm";
    const std::string text = read(path);
    ASSERT_FALSE(text.empty()) << path;
    auto prog = assemble(text, path);
    ASSERT_TRUE(prog.ok()) << format_all(prog.errors());
    const auto r = verify(*prog, test_chip(), text);
    EXPECT_TRUE(r.ok()) << name << "\n" << dump(r);
  }
}

TEST(VerifierExamples, BrokenProgramReportsEveryKind) {
  const std::string path = std::string(TPUSIM_SOURCE_DIR) + "/workloads/asm/broken.tasm";
  const std::string text = read(path);
  auto prog = assemble(text, path);
  ASSERT_TRUE(prog.ok()) << format_all(prog.errors());
  const auto r = verify(*prog, test_chip(), text);
  for (const VerifyError k : {VerifyError::kOutOfBounds, VerifyError::kMisaligned,
                              VerifyError::kCapacity, VerifyError::kUnwaitedDma,
                              VerifyError::kDeadlock, VerifyError::kMxuNoWeights,
                              VerifyError::kMxuDtype}) {
    EXPECT_GE(r.count(k), 1u) << name(k) << "\n" << dump(r);
  }
  EXPECT_EQ(r.count(VerifyError::kOperand), 0u) << dump(r);
}

}  // namespace
}  // namespace tpusim::isa
