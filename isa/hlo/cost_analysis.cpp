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

// A fusion parameter read only by slices and dynamic-slices (as their
// sliced operand) is read only where they read it, as XLA's cost analysis
// counts a fusion parameter's read bytes: the sum of the slices' results
// instead of the whole operand.
void sliced_parameter_bytes(OpCost& c, const Instruction& fusion) {
  const Computation* f = fusion.fused_computation();
  if (!f) return;
  for (const Instruction* v : f->instructions()) {
    if (v->opcode() != Opcode::kParameter) continue;
    const auto p = static_cast<std::size_t>(v->parameter_number());
    if (p >= fusion.operand_count() || v->users().empty()) continue;
    double read = 0;
    bool sliced = true;
    for (const Instruction* u : v->users()) {
      const bool slice = u->opcode() == Opcode::kSlice || u->opcode() == Opcode::kDynamicSlice;
      if (!slice || u->operand(0) != v) {
        sliced = false;
        break;
      }
      read += bytes(u->shape());
    }
    const double whole = bytes(fusion.operand(p)->shape());
    if (sliced && read < whole) c.bytes_read -= whole - read;
  }
}

// One cost rule per opcode (XLA's HloCostAnalysis Handle<Op> style):
// rules see the instruction, the call depth and the memo of computation
// costs. Opcodes without a rule read their operands and write their result.
using CostRule = OpCost (*)(const Instruction&, int, Memo&);

OpCost cost_nothing(const Instruction&, int, Memo&) { return {}; }

OpCost cost_default(const Instruction& inst, int, Memo&) {
  OpCost c;
  default_bytes(c, inst);
  return c;
}

OpCost cost_elementwise(const Instruction& inst, int, Memo&) {
  OpCost c;
  default_bytes(c, inst);
  (opcode_is_transcendental(inst.opcode()) ? c.transcendentals : c.flops) = elems(inst.shape());
  return c;
}

OpCost cost_collective(const Instruction& inst, int depth, Memo& memo) {
  OpCost c;
  default_bytes(c, inst);
  const auto ops = inst.operands();
  double operand_bytes = 0;
  for (const Instruction* o : ops) operand_bytes += bytes(o->shape());
  c.collective_bytes = std::max(operand_bytes, largest_leaf_bytes(inst.shape()));
  const Opcode op = inst.opcode();
  if (op == Opcode::kAllReduce || op == Opcode::kAllReduceStart || op == Opcode::kReduceScatter) {
    // One application of to_apply per input element pair, like reduce.
    apply(c, inst.called(AttrId::kToApply), ops.empty() ? 0 : first_array_elems(ops[0]->shape()), depth, memo);
  }
  return c;
}

OpCost cost_slice(const Instruction& inst, int, Memo&) {
  OpCost c;
  c.bytes_read = c.bytes_written = bytes(inst.shape());
  return c;
}

OpCost cost_dynamic_slice(const Instruction& inst, int, Memo&) {
  OpCost c;
  const auto ops = inst.operands();
  c.bytes_read = c.bytes_written = bytes(inst.shape());
  for (std::size_t i = 1; i < ops.size(); ++i) c.bytes_read += bytes(ops[i]->shape());
  return c;
}

OpCost cost_dynamic_update_slice(const Instruction& inst, int, Memo&) {
  OpCost c;
  const auto ops = inst.operands();
  if (ops.size() >= 2) c.bytes_read = c.bytes_written = bytes(ops[1]->shape());
  for (std::size_t i = 2; i < ops.size(); ++i) c.bytes_read += bytes(ops[i]->shape());
  return c;
}

OpCost cost_dot(const Instruction& inst, int, Memo&) {
  OpCost c;
  default_bytes(c, inst);
  const auto ops = inst.operands();
  if (ops.empty()) return c;
  double k = 1;
  const Shape& lhs = ops[0]->shape();
  for (std::int64_t d : ints_attr(inst, AttrId::kLhsContractingDims).value_or(Ints{}))
    if (d >= 0 && d < lhs.rank()) k *= static_cast<double>(lhs.dim(static_cast<int>(d)));
  c.flops = 2 * elems(inst.shape()) * k;
  c.matmul_type = lhs.element_type();
  if (ops.size() > 1) c.matmul_type = wider(c.matmul_type, ops[1]->shape().element_type());
  return c;
}

OpCost cost_convolution(const Instruction& inst, int, Memo&) {
  OpCost c;
  default_bytes(c, inst);
  const auto ops = inst.operands();
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
  c.flops = 2 * elems(inst.shape()) * window * in_features;
  // A depthwise convolution (one input feature per group) contracts
  // nothing over features: its FLOPs are vector work (docs/lowering.md).
  const bool depthwise = in_features == 1 && int_attr(inst, AttrId::kFeatureGroupCount).value_or(1) > 1;
  if (!depthwise) c.matmul_type = wider(ops[0]->shape().element_type(), kernel.element_type());
  return c;
}

OpCost cost_reduce(const Instruction& inst, int depth, Memo& memo) {
  OpCost c;
  default_bytes(c, inst);
  const auto ops = inst.operands();
  if (ops.empty()) return c;
  const double n = first_array_elems(ops[0]->shape()) - first_array_elems(inst.shape());
  apply(c, inst.called(AttrId::kToApply), std::max(0.0, n), depth, memo);
  return c;
}

double window_size(const Instruction& inst) {
  double w = 1;
  for (const WindowDim& d : window_attr(inst).value_or(Window{})) w *= static_cast<double>(d.size);
  return w;
}

OpCost cost_reduce_window(const Instruction& inst, int depth, Memo& memo) {
  OpCost c;
  default_bytes(c, inst);
  const double w = window_size(inst);
  apply(c, inst.called(AttrId::kToApply), std::max(0.0, w - 1) * first_array_elems(inst.shape()), depth, memo);
  return c;
}

OpCost cost_select_and_scatter(const Instruction& inst, int depth, Memo& memo) {
  OpCost c;
  default_bytes(c, inst);
  const auto ops = inst.operands();
  if (ops.size() < 2) return c;
  const double w = window_size(inst);
  const double source = elems(ops[1]->shape());
  apply(c, inst.called(AttrId::kSelect), source * std::max(0.0, w - 1), depth, memo);
  apply(c, inst.called(AttrId::kScatter), source, depth, memo);
  return c;
}

OpCost cost_map(const Instruction& inst, int depth, Memo& memo) {
  OpCost c;
  default_bytes(c, inst);
  apply(c, inst.called(AttrId::kToApply), elems(inst.shape()), depth, memo);
  return c;
}

OpCost cost_sort(const Instruction& inst, int, Memo&) {
  OpCost c;
  default_bytes(c, inst);
  const auto ops = inst.operands();
  if (ops.empty()) return c;
  const double n = first_array_elems(ops[0]->shape());
  c.flops = n > 1 ? n * std::ceil(std::log2(n)) : 0;
  return c;
}

OpCost cost_fusion(const Instruction& inst, int depth, Memo& memo) {
  OpCost c;
  const OpCost inner = computation_cost_at(inst.fused_computation(), depth, memo);
  c.flops = inner.flops;
  c.transcendentals = inner.transcendentals;
  c.collective_bytes = inner.collective_bytes;
  c.matmul_type = inner.matmul_type;
  default_bytes(c, inst);
  in_place_update_bytes(c, inst);
  sliced_parameter_bytes(c, inst);
  return c;
}

OpCost cost_custom_call(const Instruction& inst, int, Memo&) {
  OpCost c;
  default_bytes(c, inst);
  const auto ops = inst.operands();
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

OpCost cost_call(const Instruction& inst, int depth, Memo& memo) {
  return computation_cost_at(inst.called(AttrId::kToApply), depth, memo);
}

OpCost cost_async_start(const Instruction& inst, int depth, Memo& memo) {
  const auto called = inst.called_computations();
  return computation_cost_at(called.empty() ? nullptr : called.front(), depth, memo);
}

// The body runs N times and the condition N + 1 times; a loop whose count
// is unknown is costed once (body + condition) and named.
OpCost cost_while(const Instruction& inst, int depth, Memo& memo) {
  OpCost c;
  const OpCost body = computation_cost_at(inst.called(AttrId::kBody), depth, memo);
  const OpCost cond = computation_cost_at(inst.called(AttrId::kCondition), depth, memo);
  const auto trip = while_trip_count(inst);
  if (!trip) memo.unknown_loops.emplace_back(inst.name());
  const double n = trip ? static_cast<double>(trip->count) : 1;
  scale_add(c, body, n);
  scale_add(c, cond, trip ? n + 1 : 1);
  return c;
}

// The costliest branch, figure by figure.
OpCost cost_conditional(const Instruction& inst, int depth, Memo& memo) {
  OpCost c;
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

const std::vector<CostRule>& cost_rules() {
  static const std::vector<CostRule> table = [] {
    std::vector<CostRule> t(static_cast<std::size_t>(opcode_count()) + 1, cost_default);
    const auto set = [&t](Opcode op, CostRule rule) { t[static_cast<std::size_t>(op)] = rule; };
    // Free: no data moved, nothing computed.
    for (Opcode op : {Opcode::kParameter, Opcode::kConstant, Opcode::kGetTupleElement, Opcode::kTuple,
                      Opcode::kBitcast, Opcode::kAfterAll, Opcode::kAddDependency, Opcode::kDomain,
                      Opcode::kAllReduceDone, Opcode::kAllGatherDone, Opcode::kCollectivePermuteDone,
                      Opcode::kAsyncDone, Opcode::kAsyncUpdate, Opcode::kCopyDone,
                      Opcode::kOptimizationBarrier, Opcode::kPartitionId, Opcode::kReplicaId}) {
      set(op, cost_nothing);
    }
    set(Opcode::kSlice, cost_slice);
    set(Opcode::kDynamicSlice, cost_dynamic_slice);
    set(Opcode::kDynamicUpdateSlice, cost_dynamic_update_slice);
    set(Opcode::kDot, cost_dot);
    set(Opcode::kScaledDot, cost_dot);
    set(Opcode::kRaggedDot, cost_dot);
    set(Opcode::kConvolution, cost_convolution);
    set(Opcode::kReduce, cost_reduce);
    set(Opcode::kReduceWindow, cost_reduce_window);
    set(Opcode::kSelectAndScatter, cost_select_and_scatter);
    set(Opcode::kMap, cost_map);
    set(Opcode::kSort, cost_sort);
    set(Opcode::kFusion, cost_fusion);
    set(Opcode::kCustomCall, cost_custom_call);
    set(Opcode::kCall, cost_call);
    set(Opcode::kAsyncStart, cost_async_start);
    set(Opcode::kWhile, cost_while);
    set(Opcode::kConditional, cost_conditional);
    // Collectives and elementwise ops take their class's rule whatever is
    // set above.
    for (Opcode op : {Opcode::kAllReduce, Opcode::kAllReduceStart, Opcode::kAllGather, Opcode::kAllGatherStart,
                      Opcode::kReduceScatter, Opcode::kAllToAll, Opcode::kRaggedAllToAll,
                      Opcode::kCollectivePermute, Opcode::kCollectivePermuteStart,
                      Opcode::kCollectiveBroadcast}) {
      set(op, cost_collective);
    }
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (opcode_is_elementwise(static_cast<Opcode>(i))) t[i] = cost_elementwise;
    }
    return t;
  }();
  return table;
}

OpCost cost(const Instruction& inst, int depth, Memo& memo) {
  const auto index = static_cast<std::size_t>(inst.opcode());
  return index < cost_rules().size() ? cost_rules()[index](inst, depth, memo) : cost_default(inst, depth, memo);
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
