#include "isa/hlo/cost_analysis.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "isa/hlo/attribute_values.h"
#include "isa/hlo/custom_calls.h"
#include "isa/hlo/structure.h"
#include "isa/hlo/while_loop.h"

namespace tpusim::hlo {
namespace {

double elems(const Shape& s) {
  if (s.is_tuple() || s.is_buffer()) {
    double n = 0;
    for (const Shape& e : s.tuple_elements()) n += elems(e);
    return n;
  }
  return static_cast<double>(s.element_count());
}
double bytes(const Shape& s) { return static_cast<double>(s.byte_size()); }
double first_array_elems(const Shape& s) {
  if (s.is_tuple()) return s.tuple_elements().empty() ? 0 : first_array_elems(s.tuple_elements().front());
  return elems(s);
}
double largest_leaf_bytes(const Shape& s) {
  if (!s.is_tuple()) return bytes(s);
  double m = 0;
  for (const Shape& e : s.tuple_elements()) m = std::max(m, largest_leaf_bytes(e));
  return m;
}

ElementType wider(ElementType a, ElementType b) {
  if (a == ElementType::kTuple) return b;
  if (b == ElementType::kTuple) return a;
  return element_type_bits(b) > element_type_bits(a) ? b : a;
}

}  // namespace

struct CostState {
  std::unordered_map<const Computation*, OpCost> costs;
  // `while` loops whose trip count is unknown (costed once), by name.
  std::vector<std::string> unknown_loops;
};

namespace {
using Memo = CostState;

OpCost cost(const Instruction& inst, int depth, Memo& memo);

// Memoized per computation: a computation called from many places is costed
// once. The parser has rejected recursion and bounded the call depth
// (structure.h); the depth guard only keeps the stack safe regardless.
OpCost computation_cost_at(const Computation* c, int depth, Memo& memo) {
  OpCost total;
  if (!c || depth > kMaxCallDepth) return total;
  auto [it, inserted] = memo.costs.try_emplace(c, OpCost{});
  if (!inserted) return it->second;
  for (const Instruction* i : c->instructions()) total += cost(*i, depth + 1, memo);
  memo.costs[c] = total;
  return total;
}

// Cost of the applied computation scaled by the number of applications.
void apply(OpCost& out, const Computation* c, double times, int depth, Memo& memo) {
  const OpCost sub = computation_cost_at(c, depth, memo);
  out.flops += sub.flops * times;
  out.transcendentals += sub.transcendentals * times;
}

void scale_add(OpCost& out, const OpCost& x, double times) {
  out.flops += x.flops * times;
  out.transcendentals += x.transcendentals * times;
  out.bytes_read += x.bytes_read * times;
  out.bytes_written += x.bytes_written * times;
  out.collective_bytes += x.collective_bytes * times;
  out.matmul_type = wider(out.matmul_type, x.matmul_type);
}

void default_bytes(OpCost& c, const Instruction& inst) {
  for (const Instruction* o : inst.operands()) c.bytes_read += bytes(o->shape());
  c.bytes_written = bytes(inst.shape());
}

// A fusion rooted at dynamic-update-slice whose updated operand is a fusion
// parameter updates that buffer in place (XLA shares the operand's buffer
// with the output): only the update is written and the buffer is not read.
void in_place_update_bytes(OpCost& c, const Instruction& fusion) {
  const Computation* f = fusion.fused_computation();
  const Instruction* root = f ? f->root() : nullptr;
  if (!root || root->opcode() != Opcode::kDynamicUpdateSlice || root->operand_count() < 2) return;
  const Instruction* buffer = root->operand(0);
  if (buffer->opcode() != Opcode::kParameter) return;
  const auto p = static_cast<std::size_t>(buffer->parameter_number());
  if (p >= fusion.operand_count()) return;
  c.bytes_read -= bytes(fusion.operand(p)->shape());
  c.bytes_written = bytes(root->operand(1)->shape());
}

bool is_collective(Opcode op) {
  switch (op) {
    case Opcode::kAllReduce: case Opcode::kAllReduceStart: case Opcode::kAllGather:
    case Opcode::kAllGatherStart: case Opcode::kReduceScatter: case Opcode::kAllToAll:
    case Opcode::kRaggedAllToAll: case Opcode::kCollectivePermute: case Opcode::kCollectivePermuteStart:
    case Opcode::kCollectiveBroadcast:
      return true;
    default:
      return false;
  }
}

OpCost cost(const Instruction& inst, int depth, Memo& memo) {
  OpCost c;
  const Opcode op = inst.opcode();
  const Shape& out = inst.shape();
  const auto ops = inst.operands();
  if (opcode_is_elementwise(op)) {
    default_bytes(c, inst);
    (opcode_is_transcendental(op) ? c.transcendentals : c.flops) = elems(out);
    return c;
  }
  if (is_collective(op)) {
    default_bytes(c, inst);
    double operand_bytes = 0;
    for (const Instruction* o : ops) operand_bytes += bytes(o->shape());
    c.collective_bytes = std::max(operand_bytes, largest_leaf_bytes(out));
    if (op == Opcode::kAllReduce || op == Opcode::kAllReduceStart || op == Opcode::kReduceScatter) {
      // One application of to_apply per input element pair, like reduce.
      apply(c, inst.called(AttrId::kToApply), ops.empty() ? 0 : first_array_elems(ops[0]->shape()), depth, memo);
    }
    return c;
  }
  switch (op) {
    case Opcode::kParameter: case Opcode::kConstant: case Opcode::kGetTupleElement: case Opcode::kTuple:
    case Opcode::kBitcast: case Opcode::kAfterAll: case Opcode::kAddDependency: case Opcode::kDomain:
    case Opcode::kAllReduceDone: case Opcode::kAllGatherDone: case Opcode::kCollectivePermuteDone:
    case Opcode::kAsyncDone: case Opcode::kAsyncUpdate: case Opcode::kCopyDone: case Opcode::kOptimizationBarrier:
    case Opcode::kPartitionId: case Opcode::kReplicaId:
      return c;
    case Opcode::kSlice:
      c.bytes_read = c.bytes_written = bytes(out);
      return c;
    case Opcode::kDynamicSlice:
      c.bytes_read = c.bytes_written = bytes(out);
      for (std::size_t i = 1; i < ops.size(); ++i) c.bytes_read += bytes(ops[i]->shape());
      return c;
    case Opcode::kDynamicUpdateSlice:
      if (ops.size() >= 2) c.bytes_read = c.bytes_written = bytes(ops[1]->shape());
      for (std::size_t i = 2; i < ops.size(); ++i) c.bytes_read += bytes(ops[i]->shape());
      return c;
    case Opcode::kDot:
    case Opcode::kScaledDot:
    case Opcode::kRaggedDot: {
      default_bytes(c, inst);
      if (ops.empty()) return c;
      double k = 1;
      const Shape& lhs = ops[0]->shape();
      for (std::int64_t d : ints_attr(inst, AttrId::kLhsContractingDims).value_or(Ints{}))
        if (d >= 0 && d < lhs.rank()) k *= static_cast<double>(lhs.dim(static_cast<int>(d)));
      c.flops = 2 * elems(out) * k;
      c.matmul_type = lhs.element_type();
      if (ops.size() > 1) c.matmul_type = wider(c.matmul_type, ops[1]->shape().element_type());
      return c;
    }
    case Opcode::kConvolution: {
      default_bytes(c, inst);
      if (ops.size() < 2) return c;
      const Shape& kernel = ops[1]->shape();
      auto labels = dim_labels_attr(inst);
      double window = 1;
      double in_features = 1;
      if (labels) {
        for (std::int64_t d : labels->kernel_spatial) window *= static_cast<double>(kernel.dim(static_cast<int>(d)));
        // Kernel input features = input features / feature_group_count.
        in_features = static_cast<double>(kernel.dim(static_cast<int>(labels->kernel_input_feature)));
      }
      c.flops = 2 * elems(out) * window * in_features;
      // A depthwise convolution (one input feature per group) contracts
      // nothing over features: its FLOPs are vector work (docs/lowering.md).
      const bool depthwise = in_features == 1 && int_attr(inst, AttrId::kFeatureGroupCount).value_or(1) > 1;
      if (!depthwise) c.matmul_type = wider(ops[0]->shape().element_type(), kernel.element_type());
      return c;
    }
    case Opcode::kReduce: {
      default_bytes(c, inst);
      if (ops.empty()) return c;
      const double n = first_array_elems(ops[0]->shape()) - first_array_elems(out);
      apply(c, inst.called(AttrId::kToApply), std::max(0.0, n), depth, memo);
      return c;
    }
    case Opcode::kReduceWindow: {
      default_bytes(c, inst);
      double w = 1;
      for (const WindowDim& d : window_attr(inst).value_or(Window{})) w *= static_cast<double>(d.size);
      apply(c, inst.called(AttrId::kToApply), std::max(0.0, w - 1) * first_array_elems(out), depth, memo);
      return c;
    }
    case Opcode::kSelectAndScatter: {
      default_bytes(c, inst);
      if (ops.size() < 2) return c;
      double w = 1;
      for (const WindowDim& d : window_attr(inst).value_or(Window{})) w *= static_cast<double>(d.size);
      const double source = elems(ops[1]->shape());
      apply(c, inst.called(AttrId::kSelect), source * std::max(0.0, w - 1), depth, memo);
      apply(c, inst.called(AttrId::kScatter), source, depth, memo);
      return c;
    }
    case Opcode::kMap:
      default_bytes(c, inst);
      apply(c, inst.called(AttrId::kToApply), elems(out), depth, memo);
      return c;
    case Opcode::kSort: {
      default_bytes(c, inst);
      if (ops.empty()) return c;
      const double n = first_array_elems(ops[0]->shape());
      c.flops = n > 1 ? n * std::ceil(std::log2(n)) : 0;
      return c;
    }
    case Opcode::kFusion: {
      const OpCost inner = computation_cost_at(inst.fused_computation(), depth, memo);
      c.flops = inner.flops;
      c.transcendentals = inner.transcendentals;
      c.collective_bytes = inner.collective_bytes;
      c.matmul_type = inner.matmul_type;
      default_bytes(c, inst);
      in_place_update_bytes(c, inst);
      return c;
    }
    case Opcode::kCall:
    case Opcode::kAsyncStart:
    case Opcode::kCustomCall: {
      if (op == Opcode::kCustomCall) {
        default_bytes(c, inst);
        if (const auto a = attention_call(inst)) {
          c.flops = a->flops();
          c.transcendentals = a->transcendentals();
          c.matmul_type = ops.empty() ? ElementType::kTuple : ops[0]->shape().element_type();
        } else if (const auto g = gemm_call(inst)) {
          c.flops = g->flops;
          c.matmul_type = g->type;
        }
        return c;
      }
      const Computation* callee =
          op == Opcode::kCall ? inst.called(AttrId::kToApply)
                              : (inst.called_computations().empty() ? nullptr : inst.called_computations().front());
      return computation_cost_at(callee, depth, memo);
    }
    case Opcode::kWhile: {
      // The body runs N times and the condition N + 1 times; a loop whose
      // count is unknown is costed once (body + condition) and named.
      const OpCost body = computation_cost_at(inst.called(AttrId::kBody), depth, memo);
      const OpCost cond = computation_cost_at(inst.called(AttrId::kCondition), depth, memo);
      const auto trip = while_trip_count(inst);
      if (!trip) memo.unknown_loops.emplace_back(inst.name());
      const double n = trip ? static_cast<double>(trip->count) : 1;
      scale_add(c, body, n);
      scale_add(c, cond, trip ? n + 1 : 1);
      return c;
    }
    case Opcode::kConditional: {
      for (const Computation* b : inst.called_computations()) {
        const OpCost bc = computation_cost_at(b, depth, memo);
        c.flops = std::max(c.flops, bc.flops);
        c.transcendentals = std::max(c.transcendentals, bc.transcendentals);
        c.bytes_read = std::max(c.bytes_read, bc.bytes_read);
        c.bytes_written = std::max(c.bytes_written, bc.bytes_written);
        c.collective_bytes = std::max(c.collective_bytes, bc.collective_bytes);
        c.matmul_type = wider(c.matmul_type, bc.matmul_type);
      }
      return c;
    }
    default:
      default_bytes(c, inst);
      return c;
  }
}

}  // namespace

OpCost& OpCost::operator+=(const OpCost& o) {
  flops += o.flops;
  transcendentals += o.transcendentals;
  bytes_read += o.bytes_read;
  bytes_written += o.bytes_written;
  collective_bytes += o.collective_bytes;
  matmul_type = wider(matmul_type, o.matmul_type);
  return *this;
}

OpCost instruction_cost(const Instruction& inst) {
  Memo memo;
  return cost(inst, 0, memo);
}
OpCost computation_cost(const Computation& c) {
  Memo memo;
  return computation_cost_at(&c, 0, memo);
}

std::vector<OpCost> CostAnalysis::costs(const Computation& c) {
  std::vector<OpCost> out;
  out.reserve(c.instructions().size());
  for (const Instruction* i : c.instructions()) out.push_back(cost(*i, 0, *memo_));
  return out;
}

const std::vector<std::string>& CostAnalysis::unknown_loops() const { return memo_->unknown_loops; }

CostAnalysis::CostAnalysis() : memo_(std::make_unique<Memo>()) {}
CostAnalysis::~CostAnalysis() = default;

}  // namespace tpusim::hlo
