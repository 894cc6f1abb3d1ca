// Dots whose batch dims are not leading (docs/lowering.md, "Dots and
// convolutions"): operands read in place through a second 2-D view of their
// bytes, with exact DMA tiles; the decode step's KV-cache dots read exactly
// their operands' bytes.
#include "isa/lower/dot_layout.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/config_loader.h"
#include "tests/isa/lower/preset.h"
#include "isa/hlo/parser.h"
#include "isa/lower/lower.h"
#include "isa/verifier.h"

namespace tpusim::lower {
namespace {

ChipConfig chip(const char* name = "v5e") { return tpusim::testing::preset(name); }

Lowered lower_text(const std::string& text, const ChipConfig& c) {
  auto m = hlo::parse_hlo_module(text, "test.hlo");
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : format_all(m.errors()));
  auto r = lower_module(**m, c, {});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_all(r.errors()));
  return std::move(r).value();
}

// The DMAs of one provenance label whose source (or destination) is in HBM,
// as "buffer[r0:r1, c0:c1]" strings, and their bytes.
struct HbmTraffic {
  std::vector<std::string> reads;
  std::int64_t read_bytes = 0, write_bytes = 0;
};
HbmTraffic hbm_traffic(const isa::Program& p, std::string_view label) {
  HbmTraffic t;
  for (const auto& i : p.code) {
    if (p.provenance(i) != label) continue;
    const auto* d = std::get_if<isa::DmaStart>(&i.op);
    if (d == nullptr) continue;
    const isa::Buffer& src = p.buffers[d->src.buffer];
    const isa::Buffer& dst = p.buffers[d->dst.buffer];
    const std::int64_t bytes = isa::dtype_bytes(src.dtype, std::int64_t{d->src.rows} * d->src.cols);
    if (src.space == isa::MemSpace::kHbm) {
      t.read_bytes += bytes;
      t.reads.push_back(src.name + "[" + std::to_string(d->src.row) + ":" + std::to_string(d->src.row + d->src.rows) +
                        ", " + std::to_string(d->src.col) + ":" + std::to_string(d->src.col + d->src.cols) + "]");
    }
    if (dst.space == isa::MemSpace::kHbm) t.write_bytes += bytes;
  }
  return t;
}

// The tiles of a view read per batch element (b, h): rows b·rows..,
// columns h·cols.., in (b, h) order.
std::vector<std::string> per_element_tiles(const std::string& view, int batches, int heads, int rows, int cols) {
  std::vector<std::string> out;
  for (int b = 0; b < batches; ++b) {
    for (int h = 0; h < heads; ++h) {
      out.push_back(view + "[" + std::to_string(b * rows) + ":" + std::to_string(b * rows + rows) + ", " +
                    std::to_string(h * cols) + ":" + std::to_string(h * cols + cols) + "]");
    }
  }
  return out;
}

// The reads of `label`'s instructions from buffers whose name starts with `prefix`.
std::vector<std::string> reads_of(const HbmTraffic& t, std::string_view prefix) {
  std::vector<std::string> out;
  for (const auto& r : t.reads) {
    if (r.starts_with(prefix)) out.push_back(r);
  }
  return out;
}

TEST(DotLayout, KvCacheWithBatchDimsZeroAndTwoIsOneRectanglePerBatchElement) {
  // k of the decode step, bf16[8,2048,32,128] (b, s, h, d), batch {0,2},
  // contracting {3}: [B1=b, X=s (N), B2=h, Y=d (K)] seen as [8·2048, 32·128];
  // element (b, h) is rows b·2048.., cols h·128..: an [N, K] tile (transposed).
  const auto k = operand_layout({8, 2048, 32, 128}, {0, 2}, {3}, /*lhs=*/false);
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->rows, 8 * 2048);
  EXPECT_EQ(k->cols, 32 * 128);
  EXPECT_TRUE(k->transposed);
  ASSERT_EQ(k->batch.size(), 2u);
  EXPECT_EQ(k->batch[0].row_stride, 2048);
  EXPECT_EQ(k->batch[0].col_stride, 0);
  EXPECT_EQ(k->batch[1].row_stride, 0);
  EXPECT_EQ(k->batch[1].col_stride, 128);
  EXPECT_EQ(k->side_by_side, 32);  // h, the trailing batch dim, is B2
  // v, contracting {1}: [b, X=s (K), h, Y=d (N)], the canonical [K, N].
  const auto v = operand_layout({8, 2048, 32, 128}, {0, 2}, {1}, false);
  ASSERT_TRUE(v.has_value());
  EXPECT_FALSE(v->transposed);
  EXPECT_EQ(v->rows, 8 * 2048);
  // q, bf16[8,32,128] batch {0,1}: batch-leading, M = 1: [8·32, 128], element
  // (b, h) at row b·32 + h.
  const auto q = operand_layout({8, 32, 128}, {0, 1}, {2}, true);
  ASSERT_TRUE(q.has_value());
  EXPECT_FALSE(q->transposed);
  EXPECT_EQ(q->rows, 256);
  EXPECT_EQ(q->cols, 128);
  EXPECT_EQ(q->batch[0].row_stride, 32);
  EXPECT_EQ(q->batch[1].row_stride, 1);
  EXPECT_EQ(q->side_by_side, 1);
}

TEST(DotLayout, ContractingTwoLeadingDimsIsATransposedView) {
  // A weight gradient: bf16[1,2048,1376] contracting {0,1} is [K, M] (the
  // size-1 dim goes anywhere): [2048, 1376], transposed.
  const auto a = operand_layout({1, 2048, 1376}, {}, {0, 1}, true);
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->transposed);
  EXPECT_EQ(a->rows, 2048);
  EXPECT_EQ(a->cols, 1376);
  ASSERT_EQ(a->k_order.size(), 1u);  // only dim 1 (index 1 of the list) is not unit
  EXPECT_EQ(a->k_order[0], 1u);
  // Free dims split around the contracting dim ([M=4, K=2048, M=128]) have no
  // rectangular view: the relayout fallback.
  EXPECT_FALSE(operand_layout({1, 4, 2048, 128}, {}, {0, 2}, true).has_value());
  // A batch dim after the last group neither.
  EXPECT_FALSE(operand_layout({64, 128, 8}, {2}, {1}, true).has_value());
}

// q bf16[2,4,128] (b, h, d) x k bf16[2,256,4,128] (b, s, h, d), batch dims
// {0,1} / {0,2}: B = 8, M = 1, K = 128, N = 256. k is read in place through
// the view [2·256, 4·128] of its bytes. Per element (b, h) its tile is rows
// b·256..b·256+256, cols h·128..h·128+128 (256-byte runs at a 1 KiB pitch),
// or, loaded wide, all 4 heads of one b at once (rows b·256.., all 512
// columns: whole rows, one contiguous 256 KiB run) with the head's columns
// picked in VMEM. Either way k is read exactly once: 2·256·4·128·2 = 524288
// bytes, plus q (2·4·128·2 = 2048), and the output written once (2·4·256·2 =
// 4096).
TEST(DotLayout, BatchDimsZeroAndTwoReadTheOperandInPlaceWithExactTiles) {
  const ChipConfig c = chip();
  const auto l = lower_text(R"(HloModule m
ENTRY e {
  q = bf16[2,4,128] parameter(0)
  k = bf16[2,256,4,128] parameter(1)
  ROOT d = bf16[2,4,256] dot(q, k), lhs_batch_dims={0,1}, lhs_contracting_dims={2}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}
})",
                            c);
  for (const auto& n : l.report.notes) EXPECT_NE(n.kind, NoteKind::kApprox) << n.message;
  const std::uint32_t view = l.program.find_buffer("k.view");
  ASSERT_NE(view, isa::TileRef::kNone);
  EXPECT_EQ(l.program.buffers[view].view_of, l.program.find_buffer("k"));
  EXPECT_EQ(l.program.buffers[view].shape, (std::vector<std::int64_t>{512, 512}));
  const HbmTraffic t = hbm_traffic(l.program, "d");
  EXPECT_EQ(t.read_bytes, 524288 + 2048);
  EXPECT_EQ(t.write_bytes, 4096);
  const std::vector<std::string> k_reads = reads_of(t, "k.view");
  ASSERT_EQ(l.report.tilings.size(), 1u);
  if (l.report.tilings[0].find("wide=rhs") != std::string::npos) {
    EXPECT_EQ(k_reads, (std::vector<std::string>{"k.view[0:256, 0:512]", "k.view[256:512, 0:512]"}));
  } else {
    EXPECT_EQ(k_reads, per_element_tiles("k.view", 2, 4, 256, 128));
  }
  const auto rep = isa::verify(l.program, c);
  EXPECT_TRUE(rep.ok()) << format_all(rep.diagnostics());
}

// Head dim 64: an element's columns are not lane-aligned in VMEM, so there
// are no wide loads; each (b, h) tile is rows b·256.., cols h·64.. of the view
// [512, 256], read once.
TEST(DotLayout, UnalignedHeadsAreReadPerBatchElement) {
  const ChipConfig c = chip();
  const auto l = lower_text(R"(HloModule m
ENTRY e {
  p = bf16[2,4,256] parameter(0)
  v = bf16[2,256,4,64] parameter(1)
  ROOT d = bf16[2,4,64] dot(p, v), lhs_batch_dims={0,1}, lhs_contracting_dims={2}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}
})",
                            c);
  for (const auto& n : l.report.notes) EXPECT_NE(n.kind, NoteKind::kApprox) << n.message;
  const HbmTraffic t = hbm_traffic(l.program, "d");
  EXPECT_EQ(reads_of(t, "v.view"), per_element_tiles("v.view", 2, 4, 256, 64));
  // v once (2·256·4·64·2 = 262144 bytes) and p once (2·4·256·2 = 4096).
  EXPECT_EQ(t.read_bytes, 262144 + 4096);
  const auto rep = isa::verify(l.program, c);
  EXPECT_TRUE(rep.ok()) << format_all(rep.diagnostics());
}

// The shipped decode step: its attention dots read the KV caches in place.
// dot.16 reads q bf16[8,32,128] (65536 bytes) and the k cache
// bf16[8,2048,32,128] (8·2048·32·128·2 = 134217728 bytes) and writes
// bf16[8,32,2048] (1048576); dot.17 reads p bf16[8,32,2048] (1048576) and the
// v cache (134217728) and writes bf16[8,32,128] (65536). No relayout copy:
// each byte moves once.
TEST(DotLayout, DecodeStepAttentionDotsReadExactlyTheirOperands) {
  const ChipConfig c = chip();
  std::ifstream f(std::string(TPUSIM_SOURCE_DIR) + "/workloads/hlo/decode_step.hlo");
  std::stringstream ss;
  ss << f.rdbuf();
  const auto l = lower_text(ss.str(), c);
  for (const auto& n : l.report.notes) {
    if (n.kind == NoteKind::kApprox) {
      EXPECT_NE(n.op, "dot.16") << n.message;
      EXPECT_NE(n.op, "dot.17") << n.message;
    }
  }
  const HbmTraffic d16 = hbm_traffic(l.program, "dot.16");
  EXPECT_EQ(d16.read_bytes, 65536 + 134217728);
  EXPECT_EQ(d16.write_bytes, 1048576);
  const HbmTraffic d17 = hbm_traffic(l.program, "dot.17");
  EXPECT_EQ(d17.read_bytes, 1048576 + 134217728);
  EXPECT_EQ(d17.write_bytes, 65536);
}

}  // namespace
}  // namespace tpusim::lower
