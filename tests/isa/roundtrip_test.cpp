// Printer <-> assembler round trips, and the memory footprint of instructions.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "isa/assembler.h"
#include "isa/printer.h"

namespace tpusim::isa {
namespace {

void expect_round_trip(const std::string& text, const std::string& what) {
  auto first = assemble(text, what);
  ASSERT_TRUE(first.ok()) << what << "\n" << format_all(first.errors());
  const std::string printed = print(*first);
  auto second = assemble(printed, what + " (printed)");
  ASSERT_TRUE(second.ok()) << printed << "\n" << format_all(second.errors());
  EXPECT_TRUE(same_program(*first, *second)) << what << " printed as:\n" << printed;
  EXPECT_EQ(print(*second), printed) << "printing is not a fixed point for " << what;
}

TEST(RoundTrip, EveryInstructionForm) {
  expect_round_trip(R"(.buffer a hbm bf16 [64, 256] offset=0
.buffer v vmem f32 [2, 32, 128] offset=4096
.buffer p vmem pred [64, 128]
.semaphore s init=2
.semaphore t
.provenance "fusion.1/dot.2"
dma.start dst=v[8:16, 0:128] src=a[0:8, 0:128] sem=s
sem.wait sem=s count=2
sem.signal sem=t
mxu.load_weights mxu=1 src=v[0:64, 0:128]
mxu.matmul mxu=1 lhs=v acc=64 mode=overwrite
mxu.matmul lhs=v
mxu.pop dst=v acc=64
vpu.fma dst=v a=v b=v c=v
vpu.mul dst=v a=v imm=0.7978845608028654
vpu.select dst=v a=p b=v c=v
vpu.cmp_ge dst=p a=v b=v
vpu.convert dst=v a=v
.provenance "with \"quotes\" and \\ slash"
vpu.reduce.min dst=v[0:1, 0:128] src=v
xlu.transpose dst=v src=v
xlu.permute dst=v src=v shift=-3
xlu.reduce.max dst=v[0:64, 0:1] src=v
eup.logistic dst=v src=v
delay cycles=0
repeat count=10
  barrier
  delay cycles=7700
  repeat count=2
    eup.exp dst=v src=v @ "inner"
  end
end
collective.collective_permute dst=a src=a groups=[[0, 1], [1, 0]] sem=t
collective.all_reduce dst=a src=a sem=t
)", "forms");
}

TEST(RoundTrip, ViewBuffers) {
  expect_round_trip(R"(.buffer kv hbm bf16 [8, 2048, 32, 128]
.buffer kv2 hbm bf16 [16384, 4096] view=kv
.buffer t vmem bf16 [2048, 4096] offset=0
.semaphore s
dma.start dst=t src=kv2[2048:4096, 0:4096] sem=s
sem.wait sem=s
)",
                    "view");
  auto p = assemble(".buffer kv hbm bf16 [8, 2048, 32, 128]\n.buffer kv2 hbm bf16 [16384, 4096] view=kv\n", "v");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->buffers[1].view_of, 0u);
  EXPECT_EQ(p->storage(1), 0u);
  EXPECT_EQ(p->buffers[1].row_pitch_bytes(), 8192);  // its own pitch: 4096 bf16
}

TEST(RoundTrip, ViewOfAnUnknownBufferIsAnErrorAtItsColumn) {
  auto p = assemble(".buffer kv2 hbm bf16 [16, 16] view=kv\n", "v.tasm");
  ASSERT_FALSE(p.ok());
  const std::string e = format_all(p.errors());
  EXPECT_NE(e.find("v.tasm:1:36"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown buffer 'kv'"), std::string::npos) << e;
  auto q = assemble(".buffer a hbm bf16 [16, 16]\n.buffer b hbm bf16 [256] offset=0 view=a\n", "v.tasm");
  ASSERT_FALSE(q.ok());
  EXPECT_NE(format_all(q.errors()).find("not both"), std::string::npos);
}

TEST(RoundTrip, ShippedExamples) {
  for (const char* name : {"matmul", "matmul_bias_gelu", "layernorm", "broken"}) {
    const std::string path = std::string(TPUSIM_SOURCE_DIR) + "/workloads/asm/" + name + ".tasm";
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    ASSERT_FALSE(ss.str().empty()) << path;
    expect_round_trip(ss.str(), path);
  }
}

TEST(RoundTrip, PrinterOmitsDefaultsAndShortensWholeTiles) {
  auto p = assemble(".buffer v vmem f32 [8, 128]\nmxu.matmul lhs=v[0:8, 0:128] mxu=0 acc=0 mode=accumulate\n");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(print_instruction(*p, p->code[0]), "mxu.matmul lhs=v");
}

TEST(InstructionMemory, StaysWithinTwoHundredBytes) {
  // Target: <= 200 bytes per instruction held. Provenance is a 4-byte id
  // into an interned string table, tiles are 24 bytes.
  EXPECT_LE(sizeof(Instruction), 200u);
  EXPECT_EQ(sizeof(TileRef), 24u);
  Program p;
  const auto a = p.strings.intern("fusion.12/dot.3");
  const auto b = p.strings.intern("fusion.12/dot.3");
  EXPECT_EQ(a, b);
  EXPECT_EQ(p.strings.get(a), "fusion.12/dot.3");
}

}  // namespace
}  // namespace tpusim::isa
