// Cost analysis per instruction, the way XLA's HloCostAnalysis defines it
// (one handler per opcode family, a shared elementwise hook):
//   FLOPs: elementwise = 1 per output element (transcendental opcodes count
//     as transcendentals instead); dot = 2 * output elements * product of the
//     contracting dimensions (2·M·N·K per batch element); convolution =
//     2 * output elements * kernel window elements * input features / group;
//     reduce = (input elements - output elements) * FLOPs of one application
//     of to_apply; reduce-window = (window - 1) * output elements * to_apply;
//     map = elements * to_apply; sort = n * ceil(log2 n) comparisons.
//   Bytes: operands read + output written, except: parameter, constant,
//     get-tuple-element, tuple, bitcast, after-all, add-dependency, domain,
//     and the -done half of async pairs touch nothing; slice = 2 * output;
//     dynamic-slice = 2 * output + indices; dynamic-update-slice =
//     2 * update + indices (the operand aliases the output).
//   Fusion: FLOPs and transcendentals of the fused computation; bytes at its
//     boundary (each operand read once, the output written once).
//   call / async-start: the called computation's cost; while: body x N +
//     condition x (N + 1) for a trip count N from while_trip_count
//     (while_loop.h: known_trip_count or the induction pattern), body +
//     condition once when N is unknown (CostAnalysis::unknown_loops names
//     those); conditional: per-key max over the branches. A fusion rooted at
//     dynamic-update-slice of one of its parameters updates that buffer in
//     place: the buffer is neither read nor rewritten, only the update.
//   Custom calls: attention kernels (TE, cuDNN fmha) and cuBLAS GEMMs count
//     the FLOPs of custom_calls.h; every other custom call only its bytes.
//   Collective bytes: for all-reduce, all-gather, reduce-scatter, all-to-all,
//     collective-permute, collective-broadcast (and -start forms): the larger
//     of the operands' total size and the largest result array.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "isa/hlo/ir.h"

namespace tpusim::hlo {

struct OpCost {
  double flops = 0;
  double transcendentals = 0;
  double bytes_read = 0;
  double bytes_written = 0;
  double collective_bytes = 0;
  // The widest element type feeding a dot/convolution inside (for choosing
  // a matmul peak), or kTuple if the op does no contraction.
  ElementType matmul_type = ElementType::kTuple;

  double bytes_accessed() const { return bytes_read + bytes_written; }
  OpCost& operator+=(const OpCost& o);
};

OpCost instruction_cost(const Instruction& inst);

// Costs every instruction of a computation, sharing one memo of called
// computations' costs (use this for whole modules: linear time).
struct CostState;
class CostAnalysis {
 public:
  CostAnalysis();
  ~CostAnalysis();
  std::vector<OpCost> costs(const Computation& c);
  // Names of the `while` loops costed so far whose trip count is unknown.
  const std::vector<std::string>& unknown_loops() const;

 private:
  std::unique_ptr<CostState> memo_;
};
// Sum over the computation's instructions (for called computations).
OpCost computation_cost(const Computation& c);

}  // namespace tpusim::hlo
