// Assembler: every instruction form parses; errors carry file:line:col.
#include "isa/assembler.h"

#include <gtest/gtest.h>

#include <string>

#include "isa/printer.h"

namespace tpusim::isa {
namespace {

const char* kDecls = R"(.buffer a hbm bf16 [64, 256]
.buffer v vmem f32 [2, 32, 128] offset=4096
.semaphore s init=1
)";

Program ok(const std::string& body) {
  auto r = assemble(std::string(kDecls) + body, "p.tasm");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_all(r.errors()));
  return r.ok() ? std::move(r).value() : Program{};
}

Diagnostic first_error(const std::string& text) {
  auto r = assemble(text, "bad.tasm");
  EXPECT_FALSE(r.ok());
  if (r.ok()) return {};
  return r.errors().front();
}

TEST(Assembler, ParsesBuffersAndSemaphores) {
  const Program p = ok("");
  ASSERT_EQ(p.buffers.size(), 2u);
  EXPECT_EQ(p.buffers[1].name, "v");
  EXPECT_EQ(p.buffers[1].space, MemSpace::kVmem);
  EXPECT_EQ(p.buffers[1].dtype, DType::kF32);
  EXPECT_EQ(p.buffers[1].rows(), 64);  // 2 x 32 rows of 128
  EXPECT_EQ(p.buffers[1].cols(), 128);
  EXPECT_EQ(p.buffers[1].offset, 4096);
  EXPECT_EQ(p.buffers[0].offset, -1);
  EXPECT_EQ(p.buffers[0].bytes(), 64 * 256 * 2);
  ASSERT_EQ(p.semaphores.size(), 1u);
  EXPECT_EQ(p.semaphores[0].initial, 1);
}

TEST(Assembler, ParsesTilesWholeAndWindowed) {
  const Program p = ok("dma.start dst=v[8:16, 0:128] src=a sem=s\n");
  ASSERT_EQ(p.code.size(), 1u);
  const auto& d = std::get<DmaStart>(p.code[0].op);
  EXPECT_EQ(d.dst.buffer, 1u);
  EXPECT_EQ(d.dst.row, 8);
  EXPECT_EQ(d.dst.rows, 8);
  EXPECT_EQ(d.dst.col, 0);
  EXPECT_EQ(d.dst.cols, 128);
  EXPECT_EQ(d.src, p.whole(0));
  EXPECT_EQ(d.src.rows, 64);
  EXPECT_EQ(d.src.cols, 256);
}

TEST(Assembler, ParsesSubOperationsDefaultsAndProvenance) {
  const Program p = ok(R"(.provenance "fusion.1"
vpu.cmp_lt dst=v a=v b=v
vpu.reduce.max dst=v[0:1, 0:128] src=v
xlu.reduce.sum dst=v[0:64, 0:1] src=v @ "custom"
eup.rsqrt dst=v src=v
mxu.matmul lhs=v mode=overwrite acc=8 mxu=3
collective.all_gather dst=a src=a groups=[[0, 1], [2, 3]] sem=s
repeat count=3
barrier
end
)");
  ASSERT_EQ(p.code.size(), 9u);
  EXPECT_EQ(std::get<VpuElementwise>(p.code[0].op).op, VpuOp::kCmpLt);
  EXPECT_FALSE(std::get<VpuElementwise>(p.code[0].op).c.present());
  EXPECT_EQ(std::get<VpuReduce>(p.code[1].op).op, ReduceOp::kMax);
  EXPECT_EQ(std::get<XluReduce>(p.code[2].op).op, ReduceOp::kSum);
  EXPECT_EQ(std::get<EupUnary>(p.code[3].op).op, EupOp::kRsqrt);
  const auto& mm = std::get<MxuMatmul>(p.code[4].op);
  EXPECT_EQ(mm.mode, AccMode::kOverwrite);
  EXPECT_EQ(mm.acc, 8);
  EXPECT_EQ(mm.mxu, 3);
  const auto& c = std::get<Collective>(p.code[5].op);
  EXPECT_EQ(c.op, CollectiveKind::kAllGather);
  ASSERT_EQ(p.replica_groups.size(), 1u);
  EXPECT_EQ(p.replica_groups[0], (ReplicaGroups{{0, 1}, {2, 3}}));
  EXPECT_EQ(std::get<Repeat>(p.code[6].op).count, 3);
  EXPECT_EQ(opcode(p.code[8].op), Opcode::kEnd);
  EXPECT_EQ(p.provenance(p.code[0]), "fusion.1");
  EXPECT_EQ(p.provenance(p.code[2]), "custom");
  EXPECT_EQ(p.provenance(p.code[3]), "fusion.1");
  EXPECT_EQ(p.code[1].loc.line, 6u);  // 3 declarations, .provenance, vpu.cmp_lt, this
  EXPECT_EQ(p.code[1].loc.column, 1u);
  // Interned: one copy of each label.
  EXPECT_EQ(p.strings.size(), 3u);  // "", "fusion.1", "custom"
}

TEST(Assembler, ParsesNumbersAndOptionalInputs) {
  const Program p = ok("vpu.mul dst=v a=v imm=-1.5e-3\nvpu.fma dst=v a=v b=v c=v\n");
  EXPECT_DOUBLE_EQ(std::get<VpuElementwise>(p.code[0].op).imm, -1.5e-3);
  EXPECT_TRUE(std::get<VpuElementwise>(p.code[1].op).c.present());
}

TEST(Assembler, ReportsUnknownInstructionWithLocation) {
  const Diagnostic d = first_error(std::string(kDecls) + "  mxu.multiply lhs=v\n");
  EXPECT_EQ(d.file, "bad.tasm");
  EXPECT_EQ(d.line, 4);
  EXPECT_EQ(d.column, 3);
  EXPECT_NE(d.message.find("unknown instruction 'mxu.multiply'"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("mxu.matmul"), std::string::npos) << d.message;
  EXPECT_NE(d.format().find("bad.tasm:4:3"), std::string::npos) << d.format();
}

TEST(Assembler, ReportsUnknownSubOperation) {
  const Diagnostic d = first_error(std::string(kDecls) + "vpu.frobnicate dst=v a=v\n");
  EXPECT_NE(d.message.find("unknown operation 'frobnicate' for vpu"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("add"), std::string::npos);
}

TEST(Assembler, ReportsUnknownMissingAndDuplicateOperands) {
  Diagnostic d = first_error(std::string(kDecls) + "dma.start dst=v src=a sem=s bogus=1\n");
  EXPECT_EQ(d.column, 29);
  EXPECT_NE(d.message.find("unknown operand 'bogus' for dma.start; expected dst, src, sem"),
            std::string::npos) << d.message;
  d = first_error(std::string(kDecls) + "dma.start dst=v src=a\n");
  EXPECT_EQ(d.column, 1);
  EXPECT_NE(d.message.find("missing required operand(s): sem"), std::string::npos) << d.message;
  d = first_error(std::string(kDecls) + "sem.wait sem=s sem=s\n");
  EXPECT_NE(d.message.find("given twice"), std::string::npos) << d.message;
}

TEST(Assembler, ReportsUnknownNamesAndBadRanges) {
  Diagnostic d = first_error(std::string(kDecls) + "vpu.add dst=nope a=v\n");
  EXPECT_EQ(d.column, 13);
  EXPECT_NE(d.message.find("unknown buffer 'nope'"), std::string::npos) << d.message;
  d = first_error(std::string(kDecls) + "sem.wait sem=t\n");
  EXPECT_NE(d.message.find("unknown semaphore 't'"), std::string::npos) << d.message;
  d = first_error(std::string(kDecls) + "vpu.add dst=v[8:8, 0:128] a=v\n");
  EXPECT_EQ(d.column, 15);
  EXPECT_NE(d.message.find("empty or negative"), std::string::npos) << d.message;
  d = first_error(std::string(kDecls) + "vpu.add dst=v[0:8 0:128] a=v\n");
  EXPECT_NE(d.message.find("expected ']' closing the tile"), std::string::npos) << d.message;
}

TEST(Assembler, ReportsBadDeclarations) {
  Diagnostic d = first_error(".buffer x dram f32 [8, 128]\n");
  EXPECT_EQ(d.column, 11);
  EXPECT_NE(d.message.find("expected a memory space (hbm, vmem, smem, host, vreg)"), std::string::npos) << d.message;
  d = first_error(".buffer x vmem f64 [8]\n");
  EXPECT_NE(d.message.find("expected a dtype"), std::string::npos) << d.message;
  d = first_error(".buffer x vmem f32 [8, 0]\n");
  EXPECT_NE(d.message.find("dimensions must be >= 1"), std::string::npos) << d.message;
  d = first_error(".buffer x vmem f32 [8]\n.buffer x vmem f32 [8]\n");
  EXPECT_EQ(d.line, 2);
  EXPECT_NE(d.message.find("already declared"), std::string::npos) << d.message;
  d = first_error(".section text\n");
  EXPECT_NE(d.message.find("unknown directive"), std::string::npos) << d.message;
  d = first_error(".provenance \"unterminated\n");
  EXPECT_NE(d.message.find("expected a quoted string"), std::string::npos) << d.message;
}

TEST(Assembler, ReportsUnbalancedRepeat) {
  Diagnostic d = first_error("barrier\nend\n");
  EXPECT_EQ(d.line, 2);
  EXPECT_NE(d.message.find("without a matching `repeat`"), std::string::npos) << d.message;
  d = first_error("repeat count=2\nbarrier\n");
  EXPECT_EQ(d.line, 1);
  EXPECT_NE(d.message.find("no matching `end`"), std::string::npos) << d.message;
}

TEST(Assembler, ReportsEveryBadLineNotJustTheFirst) {
  auto r = assemble("bogus\nbarrier\nalso_bogus x=1\n", "m.tasm");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors().size(), 2u);
  EXPECT_EQ(r.errors()[0].line, 1);
  EXPECT_EQ(r.errors()[1].line, 3);
  EXPECT_EQ(r.errors()[1].source_line, "also_bogus x=1");
}

TEST(Assembler, MissingFileIsADiagnostic) {
  auto r = assemble_file("/nonexistent/dir/prog.tasm");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors()[0].message.find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace tpusim::isa
