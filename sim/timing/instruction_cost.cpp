#include "sim/timing/instruction_cost.h"

#include <algorithm>
#include <type_traits>

#include "sim/timing/vmem_timing.h"
#include "sim/timing/dma_timing.h"
#include "sim/timing/vpu_timing.h"
#include "sim/timing/xlu_timing.h"

namespace tpusim {
namespace {

const isa::Buffer& buf(const isa::Program& p, const isa::TileRef& t) { return p.buffers[t.buffer]; }

std::int64_t tile_vregs(const ChipConfig& c, const isa::Program& p, const isa::TileRef& t) {
  return vregs_for_tile(c.core.vpu, t.rows, t.cols, buf(p, t).dtype);
}

// A tile the unit moves through VMEM (present and not held in vector registers).
bool in_vmem(const isa::Program& p, const isa::TileRef& t) {
  return t.present() && buf(p, t).space != isa::MemSpace::kVreg;
}
Bytes vmem_tile_bytes(const isa::Program& p, const isa::TileRef& t) { return in_vmem(p, t) ? tile_bytes(p, t) : 0; }

}  // namespace

Bytes tile_bytes(const isa::Program& p, const isa::TileRef& t) {
  if (!t.present()) return 0;
  return static_cast<Bytes>(isa::dtype_bytes(buf(p, t).dtype, static_cast<std::int64_t>(t.rows) * t.cols));
}

StridedTile strided_tile(const isa::Program& p, const isa::TileRef& t) {
  const isa::Buffer& b = buf(p, t);
  StridedTile s;
  s.rows = t.rows;
  s.row_bytes = static_cast<Bytes>(isa::dtype_bytes(b.dtype, t.cols));
  s.stride_bytes = static_cast<Bytes>(b.row_pitch_bytes());
  // A view addresses its storage buffer's bytes through its own row pitch.
  const std::int64_t base = p.buffers[p.storage(t.buffer)].offset;
  s.offset = static_cast<Bytes>(std::max<std::int64_t>(base, 0)) +
             static_cast<Bytes>(t.row) * s.stride_bytes +
             static_cast<Bytes>(isa::dtype_bytes(b.dtype, t.col));
  if (t.cols == b.cols()) s.stride_bytes = s.row_bytes;  // whole rows: one contiguous run
  return s;
}

InstructionCost instruction_cost(const ChipConfig& c, const isa::Program& p, const isa::Instruction& inst) {
  InstructionCost r;
  std::visit(
      [&](const auto& op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, isa::DmaStart>) {
          const bool src_hbm = buf(p, op.src).space == isa::MemSpace::kHbm;
          const bool dst_hbm = buf(p, op.dst).space == isa::MemSpace::kHbm;
          const bool src_host = buf(p, op.src).space == isa::MemSpace::kHost;
          const bool dst_host = buf(p, op.dst).space == isa::MemSpace::kHost;
          const Bytes bytes = tile_bytes(p, op.dst);
          if (src_host || dst_host) {
            // Over the host link (timed by the core's link); the HBM side
            // is an HBM transfer as well.
            const isa::TileRef& hbm_side = src_host ? op.dst : op.src;
            r.timing = OpTiming{1, 1};
            r.hbm_tile = strided_tile(p, hbm_side);
            r.hbm_write = src_host;
            r.host_bytes = bytes;
            r.host_to_device = src_host;
          } else if (src_hbm || dst_hbm) {
            const StridedTile hbm = strided_tile(p, src_hbm ? op.src : op.dst);
            r.timing = dma_hbm_vmem_timing(c.core.dma, c.hbm, c.core.vmem, c.clock, hbm);
            r.hbm_tile = hbm;
            r.hbm_write = dst_hbm;
            r.vmem_bytes = src_hbm && dst_hbm ? 0 : bytes;
          } else {
            r.timing = dma_vmem_vmem_timing(c.core.vmem, bytes);
            r.vmem_bytes = 2 * bytes;
          }
        } else if constexpr (std::is_same_v<T, isa::VpuElementwise>) {
          VpuElementwise e;
          e.op = op.op;
          e.vregs = tile_vregs(c, p, op.dst);
          // Operands held in vector registers cost no load or store slot.
          e.vmem_inputs = (in_vmem(p, op.a) ? 1 : 0) + (in_vmem(p, op.b) ? 1 : 0) + (in_vmem(p, op.c) ? 1 : 0);
          e.vmem_outputs = in_vmem(p, op.dst) ? 1 : 0;
          r.timing = vpu_elementwise_timing(c.core.vpu, e);
          r.flops = static_cast<double>(op.dst.rows) * op.dst.cols;
          r.vmem_bytes = vmem_tile_bytes(p, op.dst) + vmem_tile_bytes(p, op.a) + vmem_tile_bytes(p, op.b) +
                         vmem_tile_bytes(p, op.c);
        } else if constexpr (std::is_same_v<T, isa::VpuReduce>) {
          r.timing = vpu_reduce_timing(c.core.vpu, op.src.rows, op.src.cols, buf(p, op.src).dtype, in_vmem(p, op.src));
          r.flops = static_cast<double>(op.src.rows) * op.src.cols;
          r.vmem_bytes = vmem_tile_bytes(p, op.src) + vmem_tile_bytes(p, op.dst);
        } else if constexpr (std::is_same_v<T, isa::XluTranspose> || std::is_same_v<T, isa::XluPermute> ||
                             std::is_same_v<T, isa::XluReduce>) {
          r.timing = xlu_timing(c.core.xlu, tile_vregs(c, p, op.src));
          if constexpr (std::is_same_v<T, isa::XluReduce>) r.flops = static_cast<double>(op.src.rows) * op.src.cols;
          r.vmem_bytes = vmem_tile_bytes(p, op.src) + vmem_tile_bytes(p, op.dst);
        } else if constexpr (std::is_same_v<T, isa::EupUnary>) {
          r.timing = eup_timing(c.core.eup, tile_vregs(c, p, op.src));
          r.transcendentals = static_cast<double>(op.src.rows) * op.src.cols;
          r.vmem_bytes = vmem_tile_bytes(p, op.src) + vmem_tile_bytes(p, op.dst);
        } else if constexpr (std::is_same_v<T, isa::Collective>) {
          // Single-chip runs only: the source bytes at the chip's total ICI
          // bandwidth plus one hop (PlaceholderCollectiveTimer's formula).
          // Multi-chip runs time collectives on the simulated network
          // instead (sim/collective_fabric.h, docs/spmd.md).
          const double hop = placeholder_collective_seconds(c, 0);
          const double seconds = placeholder_collective_seconds(c, static_cast<double>(tile_bytes(p, op.src))) - hop;
          const Cycles cyc = seconds_to_cycles(seconds, c.clock) + seconds_to_cycles(hop, c.clock);
          r.timing = OpTiming{std::max<Cycles>(cyc, 1), std::max<Cycles>(cyc, 1)};
        } else {
          // Sequencer instructions and MXU instructions are costed elsewhere.
          r.timing = OpTiming{0, 0};
        }
      },
      inst.op);
  return r;
}

double placeholder_collective_seconds(const ChipConfig& c, double bytes) {
  const double bw = static_cast<double>(c.ici.links) * c.ici.link_bandwidth * c.ici.link_efficiency;
  return (bw > 0 ? bytes / bw : 0.0) + c.ici.hop_latency + c.ici.collective_startup;
}

}  // namespace tpusim
