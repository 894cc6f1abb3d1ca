// The driver: walks the entry computation in order and lowers each
// top-level instruction (a fusion is one unit) to a program section.
#include "isa/lower/lower.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "common/progress.h"
#include "isa/hlo/attribute_values.h"
#include "isa/hlo/custom_calls.h"
#include "isa/hlo/cost_analysis.h"
#include "isa/hlo/structural_key.h"
#include "isa/hlo/while_loop.h"
#include "isa/lower/attention.h"
#include "isa/lower/context.h"
#include "isa/lower/dot_cost.h"
#include "isa/lower/conv.h"
#include "isa/lower/dot_layout.h"
#include "isa/lower/fusion.h"

namespace tpusim::lower {
namespace {

using hlo::Instruction;
using hlo::Opcode;

std::size_t leaf_count(const hlo::Shape& s) {
  if (s.is_tuple()) {
    std::size_t n = 0;
    for (const auto& e : s.tuple_elements()) n += leaf_count(e);
    return n;
  }
  if (s.is_buffer()) return s.tuple_elements().empty() ? 0 : leaf_count(s.tuple_elements()[0]);
  return s.is_array() ? 1 : 0;
}

bool is_contraction(Opcode op) { return op == Opcode::kDot || op == Opcode::kConvolution; }

std::int64_t product(const hlo::Shape& s, const std::vector<std::int64_t>& dims) {
  std::int64_t p = 1;
  for (const auto d : dims) {
    if (d >= 0 && d < s.rank()) p *= std::max<std::int64_t>(1, s.dim(static_cast<int>(d)));
  }
  return p;
}

std::vector<std::int64_t> free_dims(int rank, const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  std::vector<std::int64_t> out;
  for (int d = 0; d < rank; ++d) {
    if (std::find(a.begin(), a.end(), d) == a.end() && std::find(b.begin(), b.end(), d) == b.end()) out.push_back(d);
  }
  return out;
}

class Lowerer {
 public:
  explicit Lowerer(Ctx& c) : c_(c) {}

  Result<bool> run() {
    const hlo::Computation* entry = c_.module.entry();
    if (entry == nullptr) {
      return Diagnostic{c_.module.source().name, 0, 0, "unsupported: module has no entry computation", ""};
    }
    std::vector<Value> params;
    for (const Instruction* p : entry->parameters()) {
      params.push_back(p == nullptr ? Value{} : c_.hbm_value(p->name(), p->shape()));
    }
    auto r = lower_computation(*entry, params, true);
    if (!r.ok()) return r.errors();
    wait_all_async();
    // Megacore: the cores end together (the module's outputs are complete).
    if (c_.opt.cores > 1 && c_.report.sections > 0) c_.emit(isa::CoreBarrier{});
    return true;
  }

 private:
  // Why the chip's MXUs cannot run compiled HLO, or "": the compiler feeds
  // them operand tiles of whole VMEM lane tiles, so an array of rows or
  // columns that are not a multiple of the lanes would read part of a lane
  // tile (assembly programs can still drive such an array).
  [[nodiscard]] std::string mxu_misfit() const {
    const std::int64_t lanes = c_.lanes();
    const auto& mxu = c_.chip.core.mxu;
    for (const auto& [key, v] : {std::pair<const char*, std::int64_t>{"core.mxu.rows", mxu.rows}, {"core.mxu.cols", mxu.cols}}) {
      if (v % lanes != 0) {
        return fmt::format("and {} = {} is not a multiple of core.vpu.lanes = {}: the HLO compiler feeds the MXUs whole VMEM "
                           "lane tiles (an array of such a size runs from assembly, `tpusim run program.tasm`)",
                           key, v, lanes);
      }
    }
    return "";
  }
  // Whether the instructions emitted from `from` on use an MXU.
  [[nodiscard]] bool uses_mxu(std::size_t from) const {
    for (std::size_t i = from; i < c_.prog.code.size(); ++i) {
      if (isa::opcode_info(isa::opcode(c_.prog.code[i].op)).unit == isa::Unit::kMxu) return true;
    }
    return false;
  }

  Result<Value> lower_computation(const hlo::Computation& comp, const std::vector<Value>& params, bool top) {
    // Unfused modules: tpusim's fusion policy (fusion.h) groups elementwise
    // chains; members run inside their group's kernel, at the group's root.
    const FusionPlan plan = plan_fusion(c_.module, comp);
    std::size_t done = 0;
    for (const Instruction* x : comp.instructions()) {
      if (top && Progress::global().due()) {
        Progress::global().update("lowering", fmt::format("{} of {} ops of {}, {} instructions", done,
                                                          comp.instructions().size(), c_.module.name(),
                                                          c_.prog.code.size()));
      }
      ++done;
      if (auto f = plan.fused_into.find(x); f != plan.fused_into.end()) {
        if (top) c_.note(*x, NoteKind::kFree, "fused into " + std::string(plan.groups[f->second].root->name()) +
                                                  " (tpusim fusion policy)");
        continue;
      }
      const auto g = plan.group_of_root.find(x);
      const FusionGroup* group = g == plan.group_of_root.end() ? nullptr : &plan.groups[g->second];
      // Reuse (docs/lowering.md): a top-level op structurally identical to
      // one already lowered is not lowered again; the simulator charges it
      // the first one's time and counters.
      std::string key;
      // (Not while an async collective flies: the ops between its -start and
      // -done hide it, and a copy left out would expose it.)
      if (top && c_.opt.reuse_repeated_ops && reusable(*x) && pending_.empty()) {
        key = reuse_key(*x, group);
        if (reuse(*x, key)) continue;
      }
      if (!pending_.empty()) {
        if (group != nullptr) {
          for (const Instruction* member : group->members) wait_host_reads(*member);
        } else {
          wait_host_reads(*x);
        }
      }
      const std::size_t code_before = c_.prog.code.size();
      if (group != nullptr) {
        if (top) top_name_ = std::string(x->name());
        lower_group(*group);
      } else {
        if (c_.prog.code.size() > c_.opt.max_instructions) {
          const isa::SourceLoc at = c_.loc(*x);
          return Diagnostic{c_.module.source().name, static_cast<int>(at.line), static_cast<int>(at.column),
                            "unsupported: the program exceeds " + std::to_string(c_.opt.max_instructions) +
                                " instructions at " + c_.where(*x) + " (" + std::string(x->name()) +
                                "; simulation.max_program_instructions raises the limit)",
                            ""};
        }
        auto st = lower_inst(*x, params, top);
        if (!st.ok()) return st.errors();
      }
      if (!c_.oversize.empty()) {
        const isa::SourceLoc at = c_.loc(*x);
        return Diagnostic{c_.module.source().name, static_cast<int>(at.line), static_cast<int>(at.column),
                          "unsupported: " + std::string(x->name()) + " at " + c_.where(*x) + " " + c_.oversize, ""};
      }
      if (const std::string misfit = mxu_misfit(); !misfit.empty() && uses_mxu(code_before)) {
        const isa::SourceLoc at = c_.loc(*x);
        return Diagnostic{c_.module.source().name, static_cast<int>(at.line), static_cast<int>(at.column),
                          fmt::format("unsupported: {} at {} runs on the MXUs, {}", x->name(), c_.where(*x), misfit), ""};
      }
      if (!key.empty() && c_.prog.code.size() > code_before) remember(*x, std::move(key));
    }
    wait_host_moves();
    if (comp.root() == nullptr) return Value{};
    return vals_[comp.root()];
  }

  // ---- Reuse of repeated top-level ops ----
  // Ops whose lowering leaves state behind for a later op (an async -start's
  // pending collective, its -done's wait), and collectives, are always lowered.
  static bool reusable(const Instruction& x) {
    const hlo::OpCategory c = hlo::opcode_category(x.opcode());
    // Collectives are one instruction each, and their time depends on the
    // others in flight with them (they share links): always simulated.
    if (c == hlo::OpCategory::kParameter || c == hlo::OpCategory::kConstant || c == hlo::OpCategory::kTuple ||
        c == hlo::OpCategory::kAsyncDone || c == hlo::OpCategory::kSideEffect || c == hlo::OpCategory::kUnknown ||
        c == hlo::OpCategory::kCollective) {
      return false;
    }
    return !x.opcode_text().ends_with("-start") && x.opcode() != Opcode::kAsyncStart &&
           x.opcode() != Opcode::kBitcast;
  }
  // What the lowering of x depends on: its structure (or its fusion group's:
  // members with operands by position) and how each input is stored (the
  // buffers its leaves are, views included).
  std::string reuse_key(const Instruction& x, const FusionGroup* group) {
    std::string key;
    std::vector<const Instruction*> inputs;
    if (group == nullptr) {
      key = keys_.of(x);
      inputs.assign(x.operands().begin(), x.operands().end());
    } else {
      std::unordered_map<const Instruction*, std::size_t> at;
      for (const Instruction* m : group->members) at.emplace(m, at.size());
      for (const Instruction* in : group->inputs) at.emplace(in, at.size());
      key = "group " + std::to_string(group->members.size()) + (group->hero != nullptr ? " hero" : "");
      for (const Instruction* m : group->members) {
        key += " [" + keys_.of(*m) + " (";
        for (const Instruction* o : m->operands()) key += std::to_string(at.at(o)) + ",";
        key += ")]";
      }
      inputs = group->inputs;
    }
    for (const Instruction* in : inputs) {
      key += " |";
      const auto it = vals_.find(in);
      if (it == vals_.end()) {
        key += in->shape().to_string(true);
        continue;
      }
      for (const Array& a : it->second.leaves) {
        key += fmt::format(" {}x{}:{}:{}:{}", a.rows, a.cols, a.elements, static_cast<int>(a.dtype), a.shape.to_string(true));
        if (a.buffer < c_.prog.buffers.size()) {
          const isa::Buffer& b = c_.prog.buffers[a.buffer];
          key += b.view_of == isa::TileRef::kNone ? ":own" : ":view";
          key += std::to_string(static_cast<int>(b.space));
        }
      }
    }
    return key;
  }
  // An op of a key lowered (one of the first reuse_simulated_copies): it
  // stands for some of the later copies. Its result's leaves that alias an
  // input's are kept for those copies.
  void remember(const Instruction& x, std::string key) {
    Rep& rep = reps_[std::move(key)];
    if (rep.simulated.empty()) {
      const Value& out = vals_[&x];
      for (const Array& leaf : out.leaves) rep.alias.push_back(find_alias(x, leaf.buffer));
    }
    rep.simulated.push_back(c_.prog.reuse.size());
    c_.prog.reuse.push_back({std::string(x.name()), 0});
    c_.report.reused.push_back({std::string(x.name()), {}});
  }
  // (operand, leaf) of x whose buffer `buffer` is, or (-1, -1).
  std::pair<int, int> find_alias(const Instruction& x, std::uint32_t buffer) {
    for (std::size_t i = 0; i < x.operand_count(); ++i) {
      const auto it = vals_.find(x.operand(i));
      if (it == vals_.end()) continue;
      for (std::size_t j = 0; j < it->second.leaves.size(); ++j) {
        if (it->second.leaves[j].buffer == buffer) return {static_cast<int>(i), static_cast<int>(j)};
      }
    }
    return {-1, -1};
  }
  // A later op with the key of an earlier one: its value is declared like the
  // first's (fresh HBM arrays, or the same input leaves where the first
  // updated an input in place); nothing is emitted.
  bool reuse(const Instruction& x, const std::string& key) {
    const auto it = reps_.find(key);
    if (it == reps_.end()) return false;
    Rep& rep = it->second;
    if (std::cmp_less(rep.simulated.size(), std::max<std::int64_t>(1, c_.opt.reuse_simulated_copies))) return false;
    // Copies go round robin to the simulated ones (a context that alternates
    // between copies, such as buffers used every other layer, keeps its share).
    const std::size_t reuse_index = rep.simulated[rep.next++ % rep.simulated.size()];
    Value v = c_.hbm_value(x.name(), x.shape());
    for (std::size_t k = 0; k < v.leaves.size() && k < rep.alias.size(); ++k) {
      const auto [i, j] = rep.alias[k];
      if (i < 0) continue;
      const Value in = operand(x, static_cast<std::size_t>(i));
      if (static_cast<std::size_t>(j) < in.leaves.size()) v.leaves[k] = in.leaves[static_cast<std::size_t>(j)];
    }
    vals_[&x] = std::move(v);
    c_.prog.reuse[reuse_index].extra += 1;
    c_.report.reused[reuse_index].instances.emplace_back(x.name());
    c_.note(x, NoteKind::kLowered,
            "same as " + c_.prog.reuse[reuse_index].label + ": its simulated time and counters are reused");
    return true;
  }
  struct Rep {
    std::vector<std::size_t> simulated;      // their program.reuse entries
    std::size_t next = 0;                    // round robin over `simulated`
    std::vector<std::pair<int, int>> alias;  // per result leaf
  };
  hlo::StructuralKeys keys_;
  std::unordered_map<std::string, Rep> reps_;

  Value operand(const Instruction& x, std::size_t i) {
    auto it = vals_.find(x.operand(i));
    return it == vals_.end() ? Value{} : it->second;
  }
  Array leaf0(const Instruction& x, std::size_t i) {
    Value v = operand(x, i);
    if (!v.leaves.empty()) return v.leaves[0];
    const Instruction* o = x.operand(i);
    Value fresh = c_.hbm_value(o->name(), o->shape());
    vals_[o] = fresh;
    return fresh.leaves.empty() ? c_.hbm_array(o->name(), hlo::Shape(hlo::ElementType::kF32, {1})) : fresh.leaves[0];
  }
  std::vector<Array> all_leaves(const Instruction& x) {
    std::vector<Array> out;
    for (std::size_t i = 0; i < x.operand_count(); ++i) {
      const Value v = operand(x, i);
      out.insert(out.end(), v.leaves.begin(), v.leaves.end());
    }
    return out;
  }

  // Provenance of a section: the instruction's name, prefixed by the entry
  // computation's instruction it belongs to when nested ("while.3/fusion.2"),
  // so reports roll every instruction up to an op of the entry computation.
  // Its first instruction is the kernel's start-up delay, if the chip has one.
  void section(const Instruction& x, bool approximate) {
    c_.begin_section();
    const std::string name = provenance_name(x);
    c_.set_provenance(approximate ? "approx:" + std::string(x.opcode_text()) + " " + name : name);
    c_.set_location(c_.loc(x));
    c_.kernel_start();
  }
  std::string provenance_name(const Instruction& x) const {
    std::string name(x.name());
    if (!top_name_.empty() && top_name_ != name) name = top_name_ + "/" + name;
    return name;
  }

  void lower_group(const FusionGroup& g) {
    const Instruction& root = *g.root;
    if (g.hero != nullptr) {
      // Output fusion: the dot's MXU program with the members as its epilogue.
      std::vector<Array> boundary;
      for (const Instruction* in : g.inputs) boundary.push_back(array_of(*in));
      (void)lower_dot_like(root, g.hero, boundary, nullptr, &g);
      c_.note(root, NoteKind::kLowered,
              "output fusion of " + std::string(g.hero->name()) + " and " + std::to_string(g.members.size() - 1) +
                  " elementwise ops (tpusim fusion policy): MXU program with a VPU epilogue");
      return;
    }
    section(root, false);
    StreamKernel k;
    k.group = &g;
    for (const Instruction* in : g.inputs) {
      auto it = vals_.find(in);
      const Value v = it == vals_.end() ? c_.hbm_value(in->name(), in->shape()) : it->second;
      k.inputs.push_back(v.leaves.empty() ? c_.hbm_array(in->name(), hlo::Shape(hlo::ElementType::kF32, {1}))
                                          : v.leaves[0]);
    }
    Value out = c_.hbm_value(root.name(), root.shape());
    k.outputs = out.leaves;
    vals_[&root] = out;
    lower_stream(c_, k);
    c_.note(root, NoteKind::kLowered,
            std::string(root.opcode() == Opcode::kReduce ? "input" : "loop") + " fusion of " +
                std::to_string(g.members.size()) + " ops (tpusim fusion policy), streamed through VMEM");
  }

  void stream_single(const Instruction& x, bool approximate) {
    section(x, approximate);
    StreamKernel k;
    k.single = &x;
    k.inputs = all_leaves(x);
    Value out = c_.hbm_value(x.name(), x.shape());
    k.outputs = out.leaves;
    vals_[&x] = out;
    if (is_depthwise(x) && !k.inputs.empty() && !k.outputs.empty()) {
      k.inputs[0] = lane_dense(k.inputs[0]);
      k.outputs[0] = lane_dense(k.outputs[0]);
    }
    if (!k.outputs.empty() || !k.inputs.empty()) lower_stream(c_, k);
  }

  // The same bytes as rows of `lanes` elements (when they divide), for a
  // kernel whose elements are independent of their 2-D view: a depthwise
  // convolution's VPU work as in the features-minor layout XLA gives
  // convolutions on TPU, where a bf01 view of a 7 x 7 image would pad
  // each 7-wide row to 128 lanes (18x the vector work).
  Array lane_dense(const Array& a) {
    const std::int64_t lanes = c_.lanes();
    if (a.elements % lanes != 0 || stored_type(a.shape.element_type()).width != 1) return a;
    Array v = c_.view(a, a.elements / lanes, lanes);
    v.shape = hlo::Shape(a.shape.element_type(), {v.rows, v.cols});
    return v;
  }

  // Copies `a` into a fresh array with the given logical shape (a relayout
  // through VMEM: DMA in, DMA out).
  Array relayout(const Instruction& x, const Array& a, const hlo::Shape& shape) {
    Array out = c_.hbm_array(std::string(x.name()) + ".relayout", shape);
    lower_relayout(a, out);
    return out;
  }
  void lower_relayout(const Array& in, const Array& out) {
    // Reuse the stream machinery with a synthetic copy: in and out have the
    // same elements; each chunk is DMA'd in and out (no compute).
    StreamKernel k;
    k.inputs = {in};
    k.outputs = {out};
    lower_stream(c_, k);  // no body, no op: a pure copy
  }

  // Dot operand views: canonical ([B*M,K] / [B*K,N]), transposed, or a
  // relayout into a canonical scratch array.
  // The HBM array of a value of this computation (declared if not yet lowered).
  Array array_of(const Instruction& in) {
    auto it = vals_.find(&in);
    const Value v = it == vals_.end() ? c_.hbm_value(in.name(), in.shape()) : it->second;
    return v.leaves.empty() ? c_.hbm_array(in.name(), hlo::Shape(hlo::ElementType::kF32, {1})) : v.leaves[0];
  }

  // The operand of an op in a dot operand's producer chain that carries its
  // data: clamp's operand 1 (0 and 2 are its bounds), select's first value that
  // is not a splat, otherwise the first operand of the op's own element count
  // that is not a splat (a broadcast or constant: a scale, a bound, a mask
  // value), else operand 0. A quantized operand, convert(clamp(lo, x * s, hi)),
  // traces to x.
  static const Instruction* data_operand(const Instruction& o) {
    const auto splat = [](const Instruction* y) {
      return y->opcode() == Opcode::kBroadcast || y->opcode() == Opcode::kConstant;
    };
    if (o.opcode() == Opcode::kClamp && o.operand_count() == 3) return o.operand(1);
    const std::size_t first = o.opcode() == Opcode::kSelect && o.operand_count() == 3 ? 1 : 0;
    for (std::size_t i = first; i < static_cast<std::size_t>(o.operand_count()); ++i) {
      const Instruction* y = o.operand(i);
      if (!splat(y) && y->shape().element_count() == o.shape().element_count()) return y;
    }
    return o.operand(first);
  }

  // x: the instruction whose value the program writes (a dot, an XLA fusion,
  // or the root of a tpusim output-fusion `group` whose hero is `dot`).
  Result<bool> lower_dot_like(const Instruction& x, const Instruction* dot, const std::vector<Array>& boundary,
                              const hlo::Computation* fused, const FusionGroup* group = nullptr) {
    const Instruction& d = *dot;
    const hlo::Shape& ls = d.operand(0)->shape();
    const hlo::Shape& rs = d.operand(1)->shape();
    // Boundary arrays feeding the dot's operands: back from each operand along
    // its data path (data_operand) to a fusion parameter.
    const auto trace = [&](const Instruction* o) -> std::optional<Array> {
      if (group != nullptr) return array_of(*o);
      if (fused == nullptr) return leaf0(x, o == d.operand(0) ? 0 : 1);
      for (int hops = 0; hops < 16 && o != nullptr; ++hops) {
        if (o->opcode() == Opcode::kParameter) {
          const auto p = static_cast<std::size_t>(o->parameter_number());
          if (p < boundary.size()) return boundary[p];
          return std::nullopt;
        }
        if (o->operand_count() == 0) return std::nullopt;
        o = data_operand(*o);
      }
      return std::nullopt;
    };
    // The arrays the contraction reads; the other boundary arrays of a fusion
    // feed its epilogue.
    std::vector<std::uint32_t> contraction_inputs;
    for (int i = 0; i < 2; ++i) {
      if (auto a = trace(d.operand(static_cast<std::size_t>(i)))) contraction_inputs.push_back(a->buffer);
    }
    DotSpec spec;
    spec.name = std::string(x.name());
    Value out = c_.hbm_value(x.name(), x.shape());
    vals_[&x] = out;
    if (out.leaves.empty()) return true;
    spec.out = out.leaves[0];
    bool approx = false;
    std::string why;
    if (d.opcode() == Opcode::kDot) {
      const auto lb = hlo::ints_attr(d, hlo::AttrId::kLhsBatchDims).value_or(hlo::Ints{});
      const auto rb = hlo::ints_attr(d, hlo::AttrId::kRhsBatchDims).value_or(hlo::Ints{});
      const auto lc = hlo::ints_attr(d, hlo::AttrId::kLhsContractingDims).value_or(hlo::Ints{});
      const auto rc = hlo::ints_attr(d, hlo::AttrId::kRhsContractingDims).value_or(hlo::Ints{});
      const auto lf = free_dims(ls.rank(), lb, lc);
      const auto rf = free_dims(rs.rank(), rb, rc);
      spec.batch = product(ls, lb);
      spec.m = product(ls, lf);
      spec.k = product(ls, lc);
      spec.n = product(rs, rf);
      auto la = trace(d.operand(0));
      auto ra = trace(d.operand(1));
      const auto get = [&](std::optional<Array> a, const hlo::Shape& s, std::string_view tag) {
        if (a && a->elements == std::max<std::int64_t>(1, s.element_count())) return *a;
        approx = true;
        why += std::string(tag) + " operand is computed inside the fusion (read from a scratch array); ";
        return c_.hbm_array(std::string(x.name()) + "." + std::string(tag), s);
      };
      Array l = get(la, ls, "lhs"), r = get(ra, rs, "rhs");
      // An operand converted inside the fusion (a quantization to fp8): the
      // dot reads the boundary array and multiplies in the operand's type.
      const auto operand_type = [](const Array& a, const hlo::Shape& s) -> std::optional<isa::DType> {
        const isa::DType t = stored_type(s.element_type()).dtype;
        return t == a.dtype ? std::nullopt : std::optional<isa::DType>(t);
      };
      spec.lhs_operand = operand_type(l, ls);
      spec.rhs_operand = operand_type(r, rs);
      // Operands are read in place when each batch element's tile is a
      // rectangle of some 2-D view of their bytes (dot_layout.h); else they
      // are relaid out into canonical scratch arrays (an approximation).
      const auto dims_of = [](const hlo::Shape& s) {
        std::vector<std::int64_t> v;
        for (int i = 0; i < s.rank(); ++i) v.push_back(s.dim(i));
        return v;
      };
      const bool plain = stored_type(ls.element_type()).width == 1 && stored_type(rs.element_type()).width == 1;
      auto ll = plain ? operand_layout(dims_of(ls), lb, lc, true) : std::nullopt;
      auto rl = plain ? operand_layout(dims_of(rs), rb, rc, false) : std::nullopt;
      if (ll && rl && ll->k_order != rl->k_order) rl.reset();  // K flattened in different orders
      if (ll) {
        spec.lhs = c_.view(l, ll->rows, ll->cols);
        spec.lhs_transposed = ll->transposed;
        spec.lhs_batch = ll->batch;
        spec.lhs_side = ll->side_by_side;
      } else {
        approx = true;
        why += "lhs dimension order needs a relayout copy; ";
        section(x, true);
        spec.lhs = relayout(x, l, hlo::Shape(ls.element_type(), {spec.batch * spec.m, spec.k}));
      }
      if (rl) {
        spec.rhs = c_.view(r, rl->rows, rl->cols);
        spec.rhs_transposed = rl->transposed;
        spec.rhs_batch = rl->batch;
        spec.rhs_side = rl->side_by_side;
      } else {
        approx = true;
        why += "rhs dimension order needs a relayout copy; ";
        section(x, true);
        spec.rhs = relayout(x, r, hlo::Shape(rs.element_type(), {spec.batch * spec.k, spec.n}));
      }
      if (spec.out.rows != spec.batch * spec.m || spec.out.cols != spec.n * stored_type(x.shape().element_type()).width) {
        // Fusion outputs of another shape (e.g. reduced): write a scratch
        // array in the dot's view, then the real output is costed by the copy.
        approx = true;
        why += "fusion output differs from the dot's [B*M, N] view (extra copy); ";
        Array real = spec.out;
        spec.out = c_.hbm_array(std::string(x.name()) + ".dot", hlo::Shape(d.shape().element_type(), {spec.batch * spec.m, spec.n}));
        emit_dot(x, spec, fused, group, boundary, contraction_inputs, approx);
        section(x, true);
        lower_relayout(spec.out, real);
        if (approx) c_.approx(x, why.substr(0, why.size() - 2));  // drop the last "; "
        return true;
      }
    } else {
      // Convolution as implicit GEMM, one per feature group (conv.h): M =
      // batch x output spatial, K = window x input features per group, N =
      // output features per group. The input is read through an im2col
      // view (window x input bytes): an approximation of the real kernel's
      // VMEM reuse.
      const hlo::Shape& os = d.shape();
      // A depthwise convolution reaches the MXU only inside a fusion (alone
      // it runs on the VPU): one GEMM with the channels as N, the same FLOPs
      // (and N = 1 GEMMs per channel would be a program per channel).
      const ConvGemm g = conv_gemm(d);
      const bool depthwise = is_depthwise(d);
      spec.batch = depthwise ? 1 : g.groups;
      spec.m = g.m;
      spec.k = g.k;
      spec.n = depthwise ? g.groups * g.n : g.n;
      spec.lhs = c_.hbm_array(std::string(x.name()) + ".im2col",
                              hlo::Shape(ls.element_type(), {spec.batch * spec.m, spec.k}));
      spec.rhs = c_.hbm_array(std::string(x.name()) + ".kernel",
                              hlo::Shape(rs.element_type(), {spec.batch * spec.k, spec.n}));
      if (spec.out.rows != spec.batch * spec.m || spec.out.cols != spec.n) {
        spec.out = c_.hbm_array(std::string(x.name()) + ".gemm",
                                hlo::Shape(os.element_type(), {spec.batch * spec.m, spec.n}));
      }
      approx = true;
      why += "convolution as a GEMM over an im2col view of the input (B=" + std::to_string(spec.batch) +
             " M=" + std::to_string(spec.m) + " K=" + std::to_string(spec.k) + " N=" + std::to_string(spec.n) +
             "); ";
    }
    emit_dot(x, spec, fused, group, boundary, contraction_inputs, approx);
    if (approx) c_.approx(x, why.substr(0, why.size() - 2));  // drop the last "; "
    return true;
  }

  void emit_dot(const Instruction& x, DotSpec& spec, const hlo::Computation* fused, const FusionGroup* group,
                const std::vector<Array>& boundary, const std::vector<std::uint32_t>& contraction_inputs, bool approx) {
    if (fused != nullptr || group != nullptr) {
      const auto epilogue_op = [](const Instruction& y) {
        const auto cat = hlo::opcode_category(y.opcode());
        return cat == hlo::OpCategory::kElementwiseUnary || cat == hlo::OpCategory::kElementwiseBinary ||
               cat == hlo::OpCategory::kElementwiseTernary;
      };
      if (fused != nullptr) {
        for (const Instruction* y : fused->instructions()) spec.epilogue_vpu_ops += epilogue_op(*y) ? 1 : 0;
      } else {
        for (const Instruction* y : group->members) spec.epilogue_vpu_ops += epilogue_op(*y) ? 1 : 0;
      }
      for (const Array& a : boundary) {
        const bool feeds_contraction = a.buffer == spec.lhs.buffer || a.buffer == spec.rhs.buffer ||
                                       std::find(contraction_inputs.begin(), contraction_inputs.end(), a.buffer) !=
                                           contraction_inputs.end();
        if (!feeds_contraction) spec.epilogue_inputs.push_back(a);
      }
    }
    section(x, approx);
    lower_dot(c_, spec);
    if (!approx) c_.note(x, NoteKind::kLowered, "MXU program" + mxu_rate_note(spec));
  }
  // An operand dtype the MXU has no mode for runs at the bf16 rate, its
  // tiles converted on the VPU (dot.cpp prepare()); the note says so.
  std::string mxu_rate_note(const DotSpec& spec) const {
    for (const isa::DType d : {spec.lhs.dtype, spec.rhs.dtype}) {
      if (mxu_stream_dtype(c_.chip.core.mxu, d) == d) continue;
      return fmt::format("; {} dot run at bf16 rate: chip has no {} MXU mode", isa::name(d), isa::name(d));
    }
    return "";
  }

  // ---- per-opcode handlers (XLA's Handle<Op> style) ----
  // One table from opcode to handler (handlers()). A handler returns false
  // when the instruction does not fit its form (an iota too large to
  // preload, a while without a body, an update that cannot be done in
  // place); that instruction, and every opcode without a handler, is then a
  // one-op stream kernel (handle_stream, the shared hook for elementwise
  // and data-movement ops).
  struct Site {
    const std::vector<Value>& params;  // the computation's parameters
    bool top = false;                  // an instruction of the entry computation
  };
  using Handler = Result<bool> (Lowerer::*)(const Instruction&, const Site&);
  static constexpr std::size_t kOpcodes = static_cast<std::size_t>(Opcode::kUnknown) + 1;

  static const std::array<Handler, kOpcodes>& handlers() {
    static const std::array<Handler, kOpcodes> table = [] {
      std::array<Handler, kOpcodes> t{};
      const auto set = [&t](std::initializer_list<Opcode> ops, Handler h) {
        for (const Opcode op : ops) t[static_cast<std::size_t>(op)] = h;
      };
      set({Opcode::kParameter}, &Lowerer::handle_parameter);
      set({Opcode::kConstant, Opcode::kIota}, &Lowerer::handle_preloaded);
      set({Opcode::kTuple}, &Lowerer::handle_tuple);
      set({Opcode::kGetTupleElement}, &Lowerer::handle_get_tuple_element);
      set({Opcode::kBitcast, Opcode::kAddDependency, Opcode::kOptimizationBarrier, Opcode::kDomain,
           Opcode::kCopyDone, Opcode::kAllGatherDone, Opcode::kAllReduceDone, Opcode::kCollectivePermuteDone,
           Opcode::kAsyncUpdate},
          &Lowerer::handle_no_data_movement);
      set({Opcode::kAsyncDone}, &Lowerer::handle_async_done);
      set({Opcode::kReshape}, &Lowerer::handle_reshape);
      set({Opcode::kAfterAll, Opcode::kPartitionId, Opcode::kReplicaId, Opcode::kRngGetAndUpdateState,
           Opcode::kInfeed, Opcode::kRecv, Opcode::kRecvDone, Opcode::kSend, Opcode::kSendDone, Opcode::kOutfeed,
           Opcode::kGetDimensionSize, Opcode::kSetDimensionSize},
          &Lowerer::handle_side_effect);
      set({Opcode::kCall}, &Lowerer::handle_call);
      set({Opcode::kAsyncStart}, &Lowerer::handle_async_start);
      set({Opcode::kWhile}, &Lowerer::handle_while);
      set({Opcode::kConditional}, &Lowerer::handle_conditional);
      set({Opcode::kCustomCall}, &Lowerer::handle_custom_call);
      set({Opcode::kAllReduce, Opcode::kAllReduceStart, Opcode::kAllGather, Opcode::kAllGatherStart,
           Opcode::kReduceScatter, Opcode::kAllToAll, Opcode::kCollectivePermute, Opcode::kCollectivePermuteStart,
           Opcode::kCollectiveBroadcast, Opcode::kRaggedAllToAll},
          &Lowerer::handle_collective);
      set({Opcode::kFusion}, &Lowerer::handle_fusion);
      set({Opcode::kDot, Opcode::kConvolution}, &Lowerer::handle_contraction);
      set({Opcode::kDynamicUpdateSlice}, &Lowerer::handle_dynamic_update_slice);
      set({Opcode::kSlice, Opcode::kDynamicSlice}, &Lowerer::handle_slice);
      return t;
    }();
    return table;
  }

  Result<bool> lower_inst(const Instruction& x, const std::vector<Value>& params, bool top) {
    if (top) top_name_ = std::string(x.name());
    const Site site{params, top};
    if (const Handler h = handlers()[static_cast<std::size_t>(x.opcode())]) {
      auto r = (this->*h)(x, site);
      if (!r.ok() || *r) return r;
    }
    return handle_stream(x, site);
  }

  // x's value is its operand i's (a fresh HBM value when it has none).
  void alias(const Instruction& x, std::size_t i) {
    vals_[&x] = x.operand_count() > i ? operand(x, i) : c_.hbm_value(x.name(), x.shape());
  }
  void free_note(const Instruction& x, const Site& s, std::string why) {
    if (s.top) c_.note(x, NoteKind::kFree, std::move(why));
  }

  Result<bool> handle_parameter(const Instruction& x, const Site& s) {
    const auto p = static_cast<std::size_t>(std::max<std::int64_t>(0, x.parameter_number()));
    vals_[&x] = p < s.params.size() ? s.params[p] : c_.hbm_value(x.name(), x.shape());
    free_note(x, s, "parameter in HBM");
    return true;
  }

  Result<bool> handle_preloaded(const Instruction& x, const Site& s) {
    if (x.opcode() == Opcode::kIota && x.shape().element_count() > c_.opt.preload_iota_max_elements) return false;
    vals_[&x] = c_.hbm_value(x.name(), x.shape());
    free_note(x, s, "preloaded in HBM");
    return true;
  }

  Result<bool> handle_tuple(const Instruction& x, const Site& s) {
    Value v;
    for (std::size_t i = 0; i < x.operand_count(); ++i) {
      const Value o = operand(x, i);
      v.leaves.insert(v.leaves.end(), o.leaves.begin(), o.leaves.end());
    }
    vals_[&x] = v;
    free_note(x, s, "tuple");
    return true;
  }

  Result<bool> handle_get_tuple_element(const Instruction& x, const Site& s) {
    const Value o = operand(x, 0);
    const auto idx = static_cast<std::size_t>(std::max<std::int64_t>(0, hlo::int_attr(x, hlo::AttrId::kIndex).value_or(0)));
    std::size_t first = 0;
    const hlo::Shape& ts = x.operand(0)->shape();
    for (std::size_t i = 0; i < idx && ts.is_tuple() && i < ts.tuple_elements().size(); ++i) {
      first += leaf_count(ts.tuple_elements()[i]);
    }
    const std::size_t n = leaf_count(x.shape());
    Value v;
    for (std::size_t i = first; i < first + n && i < o.leaves.size(); ++i) v.leaves.push_back(o.leaves[i]);
    if (v.leaves.size() != n) v = c_.hbm_value(x.name(), x.shape());
    vals_[&x] = v;
    free_note(x, s, "get-tuple-element");
    return true;
  }

  // Layout-preserving ops and the -done halves of async pairs.
  Result<bool> handle_no_data_movement(const Instruction& x, const Site& s) {
    if (x.opcode() != Opcode::kAsyncUpdate && x.operand_count() > 0) wait_async(*x.operand(0));
    if (auto it = async_.find(x.operand_count() ? x.operand(0) : nullptr); it != async_.end()) {
      vals_[&x] = it->second;
    } else {
      alias(x, 0);
      // A -done of an async pair yields the last leaves of its -start.
      Value& v = vals_[&x];
      const std::size_t n = leaf_count(x.shape());
      if (v.leaves.size() > n) v.leaves.erase(v.leaves.begin(), v.leaves.end() - static_cast<std::ptrdiff_t>(n));
    }
    free_note(x, s, "no data movement (layout-preserving or async completion)");
    return true;
  }

  Result<bool> handle_async_done(const Instruction& x, const Site& s) {
    if (x.operand_count() > 0) wait_async(*x.operand(0));
    if (auto it = async_.find(x.operand(0)); it != async_.end()) {
      vals_[&x] = it->second;
    } else {
      vals_[&x] = c_.hbm_value(x.name(), x.shape());
    }
    free_note(x, s, "async completion");
    return true;
  }

  Result<bool> handle_reshape(const Instruction& x, const Site& s) {
    const Array a = leaf0(x, 0);
    const hlo::Shape& shape = x.shape();
    const std::int64_t last = shape.rank() > 0 ? shape.dim(shape.rank() - 1) : 1;
    if (a.cols == last * stored_type(shape.element_type()).width || a.elements <= 1) {
      Array v = a;
      v.shape = shape;
      vals_[&x] = Value{{v}};
      free_note(x, s, "layout-preserving reshape");
      return true;
    }
    section(x, false);
    Value out = c_.hbm_value(x.name(), x.shape());
    vals_[&x] = out;
    if (!out.leaves.empty()) lower_relayout(a, out.leaves[0]);
    c_.note(x, NoteKind::kLowered, "reshape changing the minor dimension: relayout copy through VMEM");
    return true;
  }

  Result<bool> handle_side_effect(const Instruction& x, const Site& s) {
    vals_[&x] = x.opcode() == Opcode::kSetDimensionSize ? operand(x, 0) : c_.hbm_value(x.name(), x.shape());
    if (s.top) c_.approx(x, "host/side-effect op: not timed");
    return true;
  }

  // The computation a call or async-start runs, and its arguments.
  static const hlo::Computation* callee(const Instruction& x) {
    return x.called_computations().empty() ? nullptr : x.called_computations()[0];
  }
  std::vector<Value> operand_values(const Instruction& x) {
    std::vector<Value> ps;
    for (std::size_t i = 0; i < x.operand_count(); ++i) ps.push_back(operand(x, i));
    return ps;
  }

  Result<bool> handle_call(const Instruction& x, const Site& /*s*/) {
    if (callee(x) == nullptr) return false;
    auto r = lower_computation(*callee(x), operand_values(x), false);
    if (!r.ok()) return r.errors();
    vals_[&x] = *r;
    c_.note(x, NoteKind::kLowered, "call inlined");
    return true;
  }

  Result<bool> handle_async_start(const Instruction& x, const Site& /*s*/) {
    if (callee(x) == nullptr) return false;
    const std::vector<Value> ps = operand_values(x);
    // Collectives of the wrapped computation complete at the async-done.
    const Instruction* outer = async_start_;
    async_start_ = &x;
    auto r = lower_computation(*callee(x), ps, false);
    async_start_ = outer;
    if (!r.ok()) return r.errors();
    async_[&x] = *r;
    vals_[&x] = c_.hbm_value(x.name(), x.shape());
    c_.note(x, NoteKind::kLowered, "async computation inlined at its start");
    return true;
  }

  Result<bool> handle_while(const Instruction& x, const Site& /*s*/) {
    const hlo::Computation* body = x.called(hlo::AttrId::kBody);
    const hlo::Computation* cond = x.called(hlo::AttrId::kCondition);
    if (body == nullptr) return false;
    std::int64_t n = 0;
    if (const auto trip = hlo::while_trip_count(x)) {
      n = trip->count;
      c_.note(x, NoteKind::kLowered, "while: repeat " + std::to_string(n) + " (" + trip->source + ")");
    } else {
      n = c_.opt.default_trip_count;
      c_.approx(x, "while without known_trip_count or induction pattern: body run " + std::to_string(n) +
                       " time(s)");
    }
    const Value state = operand(x, 0);
    wait_host_moves(true);
    c_.set_provenance(provenance_name(x));
    c_.emit(isa::Repeat{n});
    const std::size_t repeat_at = c_.prog.code.size() - 1;
    ++loop_depth_;
    if (cond != nullptr) {
      auto rc = lower_computation(*cond, {state}, false);
      if (!rc.ok()) return rc.errors();
    }
    auto rb = lower_computation(*body, {state}, false);
    --loop_depth_;
    if (!rb.ok()) return rb.errors();
    if (c_.prog.code.size() == repeat_at + 1) {
      c_.prog.code.pop_back();  // empty body: no repeat
    } else {
      c_.set_provenance(provenance_name(x));
      c_.emit(isa::End{});
    }
    vals_[&x] = *rb;
    return true;
  }

  Result<bool> handle_conditional(const Instruction& x, const Site& /*s*/) {
    const auto branches = x.called_computations();
    const hlo::Computation* worst = nullptr;
    double worst_cost = -1;
    for (const hlo::Computation* b : branches) {
      if (b == nullptr) continue;
      const hlo::OpCost cst = hlo::computation_cost(*b);
      const double v = cst.flops + cst.bytes_accessed();
      if (v > worst_cost) {
        worst_cost = v;
        worst = b;
      }
    }
    if (worst == nullptr) return false;
    std::size_t bi = 0;
    for (std::size_t i = 0; i < branches.size(); ++i) {
      if (branches[i] == worst) bi = i;
    }
    std::vector<Value> ps{x.operand_count() > bi + 1 ? operand(x, bi + 1) : Value{}};
    auto r = lower_computation(*worst, ps, false);
    if (!r.ok()) return r.errors();
    vals_[&x] = *r;
    c_.approx(x, "conditional: the most expensive branch (" + std::string(worst->name()) + ") is run");
    return true;
  }

  Result<bool> handle_custom_call(const Instruction& x, const Site& s) {
    const auto target = hlo::word_attr(x, hlo::AttrId::kCustomCallTarget).value_or("");
    if (target == "MoveToHost" || target == "MoveToDevice") {
      if (lower_host_move(x, target == "MoveToHost")) return true;
    }
    if (target == "Sharding" || target == "SPMDFullToShardShape" || target == "SPMDShardToFullShape" ||
        target == "LayoutConstraint" || target == "MoveToHost" || target == "MoveToDevice" ||
        target == "AllocateBuffer") {
      alias(x, 0);
      if (vals_[&x].leaves.empty()) vals_[&x] = c_.hbm_value(x.name(), x.shape());
      free_note(x, s, "custom-call " + std::string(target) + ": annotation, no data movement");
      return true;
    }
    if (lower_gemm_call(x)) return true;
    if (lower_attention_call(x)) return true;
    stream_single(x, true);
    c_.approx(x, "custom-call '" + std::string(target) + "' costed as a pass over its operand and result bytes");
    return true;
  }

  // Host offload (XLA's activation offloading): MoveToHost copies its
  // operand from HBM into host memory over the host link; MoveToDevice
  // copies a host copy of its operand into a new HBM value. One DMA, waited
  // on: the section takes the transfer's time. The program's other ops read
  // values where it holds them, in HBM (after a MoveToHost, its operand's
  // HBM copy: XLA's host-side updates of offloaded buffers are not
  // modelled). False for shapes it cannot copy whole.
  bool lower_host_move(const Instruction& x, bool to_host) {
    if (x.operand_count() < 1 || !x.has_shape() || !x.shape().is_array()) return false;
    // XLA's host offloader copies to the device only values on a path from
    // host memory and drops the other MoveToDevice calls: here, a value
    // reached through layout and slicing ops from a MoveToHost or from a
    // parameter (entry or loop state: possibly host-resident) moves; one
    // computed on the device is left where it is (false: an annotation).
    if (!to_host && !from_host(x.operand(0), 0)) return false;
    const Array src0 = leaf0(x, 0);
    Array host = c_.hbm_array(std::string(x.name()) + ".host", x.shape());
    if (src0.elements != host.elements || src0.dtype != host.dtype) return false;
    c_.prog.buffers[host.buffer].space = isa::MemSpace::kHost;
    section(x, false);
    const Array src = c_.view(src0, host.rows, host.cols);
    const isa::SemRef sem = c_.sem("host");
    // Megacore: core 0 moves the bytes (the chip has one host link).
    const bool moves = c_.opt.core == 0;
    if (to_host) {
      alias(x, 0);
      if (moves) c_.dma(c_.whole(host.buffer), c_.whole(src.buffer), sem);
    } else {
      Value out = c_.hbm_value(x.name(), x.shape());
      if (out.leaves.empty()) return false;
      vals_[&x] = out;
      if (moves) c_.dma(c_.whole(out.leaves[0].buffer), c_.whole(host.buffer), sem);
    }
    // Asynchronous, as XLA's host offloader makes it (copy-start/copy-done
    // pairs the latency-hiding scheduler spreads over compute): a
    // MoveToDevice is waited on by the first op that reads its value, a
    // MoveToHost (whose value only host-side updates read) at the end of the
    // computation it is in: a loop body's iteration, or the program.
    if (moves) {
      Pending& p = pending_for(&x);
      p.sem = sem;
      p.count = 1;
      p.provenance = c_.prog.code.empty() ? 0 : c_.prog.code.back().provenance;
      p.host = to_host ? HostMove::kToHost : HostMove::kToDevice;
      p.depth = loop_depth_;
    }
    c_.note(x, NoteKind::kLowered,
            std::string(to_host ? "HBM to host memory" : "host memory to HBM") + " over the host link: " +
                std::to_string(static_cast<std::int64_t>(x.shape().byte_size())) + " bytes, " +
                (to_host ? "waited at the end of its computation" : "waited by its first reader"));
    return true;
  }

  // Whether `v` is on a path from host memory: through layout and slicing
  // ops (reshape, bitcast, copy, transpose, slices, tuple elements, an
  // update's operand) back to a MoveToHost or a parameter.
  static bool from_host(const Instruction* v, int depth) {
    if (v == nullptr || depth > 64) return false;
    const Opcode op = v->opcode();
    if (op == Opcode::kParameter) return true;
    if (op == Opcode::kCustomCall) {
      return hlo::word_attr(*v, hlo::AttrId::kCustomCallTarget).value_or("") == "MoveToHost";
    }
    const bool passes = op == Opcode::kReshape || op == Opcode::kBitcast || op == Opcode::kCopy ||
                        op == Opcode::kTranspose || op == Opcode::kSlice || op == Opcode::kDynamicSlice ||
                        op == Opcode::kGetTupleElement || op == Opcode::kDynamicUpdateSlice ||
                        op == Opcode::kOptimizationBarrier;
    if (!passes || v->operand_count() == 0) return false;
    if (op == Opcode::kDynamicUpdateSlice) {
      return from_host(v->operand(0), depth + 1) || (v->operand_count() > 1 && from_host(v->operand(1), depth + 1));
    }
    return from_host(v->operand(0), depth + 1);
  }

  // Attention kernels (isa/hlo/custom_calls.h decodes them) as flash
  // attention (attention.h). Backward: O and dO are the operands after V
  // shaped like Q (Transformer Engine passes O, then dO); without them Q
  // stands in. False when the call's operands or outputs are not there.
  bool lower_attention_call(const Instruction& x) {
    const auto call = hlo::attention_call(x);
    if (!call || x.operand_count() < 3 || call->q_len <= 0 || call->kv_len <= 0) return false;
    const std::size_t outputs = call->backward ? 3 : 1;
    const hlo::Shape& shape = x.shape();
    if (shape.is_tuple() ? shape.tuple_elements().size() < outputs : outputs > 1) return false;
    section(x, false);
    AttentionArrays arr;
    arr.q = leaf0(x, 0);
    arr.k = leaf0(x, 1);
    arr.v = leaf0(x, 2);
    Value out = c_.hbm_value(x.name(), x.shape());
    vals_[&x] = out;
    if (out.leaves.size() < outputs) return false;
    arr.out_q = out.leaves[0];
    if (call->backward) {
      arr.out_k = out.leaves[1];
      arr.out_v = out.leaves[2];
      std::vector<Array> like_q;
      for (std::size_t i = 3; i < x.operand_count(); ++i) {
        if (x.operand(i)->has_shape() && x.operand(i)->shape() == x.operand(0)->shape()) like_q.push_back(leaf0(x, i));
      }
      arr.o = like_q.size() >= 2 ? like_q[like_q.size() - 2] : arr.q;
      arr.d_o = like_q.empty() ? arr.q : like_q.back();
    }
    c_.note(x, NoteKind::kLowered, lower_attention(c_, *call, arr));
    return true;
  }

  // __cublas$gemm / __cublas$lt$matmul* of rank-2 operands without batch
  // dims: the dot of gemm_backend_config's dot_dimension_numbers as an MXU
  // program (the result is the first array; cuBLASLt's workspace is not
  // touched). False for other shapes: the caller streams the bytes.
  bool lower_gemm_call(const Instruction& x) {
    const auto g = hlo::gemm_call(x);
    if (!g || x.operand_count() < 2 || !g->lhs_batch.empty() || !g->rhs_batch.empty() ||
        g->lhs_contracting.size() != 1 || g->rhs_contracting.size() != 1)
      return false;
    const hlo::Shape& ls = x.operand(0)->shape();
    const hlo::Shape& rs = x.operand(1)->shape();
    if (!ls.is_array() || !rs.is_array() || ls.rank() != 2 || rs.rank() != 2) return false;
    if (stored_type(ls.element_type()).width != 1 || stored_type(rs.element_type()).width != 1) return false;
    const bool lt = g->lhs_contracting[0] == 0, rt = g->rhs_contracting[0] == 1;
    DotSpec spec;
    spec.name = std::string(x.name());
    spec.m = ls.dim(lt ? 1 : 0);
    spec.k = ls.dim(lt ? 0 : 1);
    spec.n = rs.dim(rt ? 0 : 1);
    if (rs.dim(rt ? 1 : 0) != spec.k) return false;
    Value out = c_.hbm_value(x.name(), x.shape());
    if (out.leaves.empty() || out.leaves[0].rows != spec.m || out.leaves[0].cols != spec.n) return false;
    vals_[&x] = out;
    spec.out = out.leaves[0];
    spec.lhs = c_.view(leaf0(x, 0), ls.dim(0), ls.dim(1));
    spec.rhs = c_.view(leaf0(x, 1), rs.dim(0), rs.dim(1));
    spec.lhs_transposed = lt;
    spec.rhs_transposed = rt;
    emit_dot(x, spec, nullptr, nullptr, {}, {}, false);
    return true;
  }

  Result<bool> handle_collective(const Instruction& x, const Site& /*s*/) {
    lower_collective(x);
    return true;
  }

  Result<bool> handle_fusion(const Instruction& x, const Site& /*s*/) {
    const hlo::Computation* f = x.fused_computation();
    if (f == nullptr) return false;
    std::vector<Array> boundary;
    for (std::size_t i = 0; i < x.operand_count(); ++i) boundary.push_back(leaf0(x, i));
    const Instruction* contraction = nullptr;
    for (const Instruction* y : f->instructions()) {
      if (is_contraction(y->opcode())) contraction = y;
    }
    if (contraction != nullptr) {
      return lower_dot_like(x, contraction, boundary, f);
    }
    if (lower_fused_update_in_place(x, *f) || lower_fused_row_slice(x, *f)) return true;
    section(x, false);
    StreamKernel k;
    k.body = f;
    k.inputs = boundary;
    Value out = c_.hbm_value(x.name(), x.shape());
    k.outputs = out.leaves;
    vals_[&x] = out;
    lower_stream(c_, k);
    c_.note(x, NoteKind::kLowered, "fusion streamed through VMEM (VPU/EUP/XLU)");
    return true;
  }

  // Dots and convolutions on the MXU; a depthwise convolution (no
  // contraction over features) is a VPU stream kernel instead (handle_stream).
  Result<bool> handle_contraction(const Instruction& x, const Site& /*s*/) {
    if (is_depthwise(x)) return false;
    return lower_dot_like(x, &x, {}, nullptr);
  }

  // Slices that keep the last dim read only their rows (lower_row_slice);
  // the others stream (false: the caller's stream kernel).
  Result<bool> handle_slice(const Instruction& x, const Site& /*s*/) { return lower_row_slice(x, x, 0); }

  Result<bool> handle_dynamic_update_slice(const Instruction& x, const Site& /*s*/) {
    return lower_update_in_place(x);
  }

  // Everything else: a one-op stream kernel; exact for elementwise and
  // data-movement ops, an approximation otherwise.
  Result<bool> handle_stream(const Instruction& x, const Site& /*s*/) {
    const Opcode op = x.opcode();
    const auto cat = hlo::opcode_category(op);
    const bool exact = cat == hlo::OpCategory::kElementwiseUnary || cat == hlo::OpCategory::kElementwiseBinary ||
                       cat == hlo::OpCategory::kElementwiseTernary || op == Opcode::kBroadcast ||
                       op == Opcode::kReduce || op == Opcode::kTranspose || op == Opcode::kCopy ||
                       op == Opcode::kConvert || op == Opcode::kSlice || op == Opcode::kConcatenate ||
                       op == Opcode::kPad || op == Opcode::kDynamicSlice || op == Opcode::kDynamicUpdateSlice ||
                       op == Opcode::kReverse || op == Opcode::kIota || op == Opcode::kCopyStart ||
                       op == Opcode::kSort || op == Opcode::kConvolution;
    stream_single(x, !exact);
    if (op == Opcode::kSort) {
      c_.note(x, NoteKind::kLowered, "bitonic sort network on the VPU, streamed through VMEM");
    } else if (op == Opcode::kConvolution) {
      c_.note(x, NoteKind::kLowered, "depthwise convolution: window multiply-adds on the VPU, streamed through VMEM");
    } else if (exact) {
      c_.note(x, NoteKind::kLowered, "streamed through VMEM");
    } else {
      c_.approx(x, "costed as a VMEM stream of its operand and result bytes with VPU passes");
    }
    return true;
  }

  // A dynamic-update-slice whose operand has no other user updates that
  // buffer in place, as XLA's buffer assignment does: the result is the
  // operand's array, and only the update's rows move (HBM -> VMEM -> the
  // operand's tiles). The start indices are run-time values: the tiles are
  // timed at index 0 (same shape and bytes wherever they land). False when
  // the update does not fit this form; the caller streams a copy instead.
  bool lower_update_in_place(const Instruction& x) {
    if (x.operand_count() < 2) return false;
    return update_in_place(x, 0, 1, x.operand(1)->shape());
  }

  // A fusion rooted at dynamic-update-slice of its parameter p (XLA's in-place
  // DUS fusion, e.g. a loop writing one slice of its carried buffer per
  // iteration) whose update is another parameter q as is or reshaped: the
  // update of x's operand q lands in x's operand p in place.
  bool lower_fused_update_in_place(const Instruction& x, const hlo::Computation& f) {
    const Instruction* root = f.root();
    if (root == nullptr || root->opcode() != Opcode::kDynamicUpdateSlice || root->operand_count() < 2) return false;
    const Instruction* base = root->operand(0);
    const Instruction* upd = root->operand(1);
    while ((upd->opcode() == Opcode::kReshape || upd->opcode() == Opcode::kBitcast) && upd->operand_count() == 1 &&
           upd->operand(0)->shape().is_array() && upd->operand(0)->shape().element_type() == upd->shape().element_type())
      upd = upd->operand(0);
    if (base->opcode() != Opcode::kParameter || upd->opcode() != Opcode::kParameter) return false;
    const auto p = static_cast<std::size_t>(base->parameter_number());
    const auto q = static_cast<std::size_t>(upd->parameter_number());
    if (p >= x.operand_count() || q >= x.operand_count() || p == q) return false;
    return update_in_place(x, p, q, root->operand(1)->shape());
  }

  // x's operand `base_i` updated in place by its operand `upd_i`, viewed with
  // the update shape `us`.
  bool update_in_place(const Instruction& x, std::size_t base_i, std::size_t upd_i, const hlo::Shape& us) {
    if (!x.shape().is_array()) return false;
    const Instruction& base = *x.operand(base_i);
    if (base.users().size() != 1 || !us.is_array() || base.shape().rank() != us.rank()) return false;
    const hlo::Shape& ds = base.shape();
    const int n = ds.rank();
    if (n == 0) return false;
    // Blocks of contiguous rows in the [rows, last dim] view: the update's
    // leading dims up to the last partial one (k) enumerate blocks; the dims
    // after k (all full) form each block's rows.
    int k = -1;
    for (int d = 0; d + 1 < n; ++d) {
      if (us.dim(d) != ds.dim(d)) k = d;
    }
    std::int64_t blocks = 1, rows_per_block = 1;
    for (int d = 0; d <= k; ++d) blocks *= std::max<std::int64_t>(1, us.dim(d));
    for (int d = k + 1; d + 1 < n; ++d) rows_per_block *= std::max<std::int64_t>(1, us.dim(d));
    if (blocks > 1 && strided_update(x, base_i, upd_i, us, k)) return true;
    if (blocks > c_.opt.update_in_place_max_blocks) return false;  // many tiny DMAs: stream a copy instead
    const Array a = leaf0(x, base_i);
    Array u = leaf0(x, upd_i);
    // The update in its own logical view (a bitcast may have given it another).
    const std::int64_t cols = std::max<std::int64_t>(1, us.dim(n - 1)) * stored_type(us.element_type()).width;
    if (u.elements != std::max<std::int64_t>(1, us.element_count()) || u.dtype != a.dtype || cols > a.cols) {
      return false;
    }
    if (u.rows != blocks * rows_per_block || u.cols != cols) u = c_.view(u, blocks * rows_per_block, cols);
    const bool whole = blocks * c_.vmem_footprint(u.dtype, rows_per_block, cols) <= c_.vmem_budget();
    const std::int64_t chunk = whole ? rows_per_block : update_chunk_rows(u.dtype, rows_per_block, cols);
    if (chunk <= 0) return false;
    vals_[&x] = operand(x, base_i);  // the result is the operand's buffer
    section(x, false);
    if (!whole) {
      if (c_.opt.core == 0) {
        copy_rows(u, [&](std::int64_t b) { return b * rows_per_block; }, a,
                  [&](std::int64_t b) { return block_row(b, us, ds, k, rows_per_block, {}); }, cols, blocks,
                  rows_per_block, chunk);
      }
      c_.note(x, NoteKind::kLowered,
              fmt::format("in place: {} block(s) of {} x {} written into the operand's buffer through VMEM in "
                          "chunks of {} rows, two in flight (dynamic start indices timed at 0)",
                          blocks, rows_per_block, cols, chunk));
      return true;
    }
    if (c_.opt.core == 0) {  // megacore: a small update, on core 0
      const isa::SemRef sem = c_.sem("dus");
      // One staging buffer per block (each whole, so VMEM-tile aligned).
      std::vector<std::uint32_t> staged;
      for (std::int64_t b = 0; b < blocks; ++b) {
        staged.push_back(c_.vmem("dus.update", u.dtype, rows_per_block, cols));
        c_.dma(c_.whole(staged.back()), c_.tile(u.buffer, b * rows_per_block, rows_per_block, 0, cols), sem);
      }
      c_.wait(sem, blocks);
      // Block b covers operand rows from the linear index of the update's
      // leading indices (b's digits in dims 0..k, at start index 0).
      for (std::int64_t b = 0; b < blocks; ++b) {
        std::int64_t rest = b, row0 = 0, stride = rows_per_block;
        for (int d = k; d >= 0; --d) {
          const std::int64_t ud = std::max<std::int64_t>(1, us.dim(d));
          row0 += (rest % ud) * stride;
          rest /= ud;
          stride *= std::max<std::int64_t>(1, ds.dim(d));
        }
        c_.dma(c_.tile(a.buffer, row0, rows_per_block, 0, cols), c_.whole(staged[static_cast<std::size_t>(b)]), sem);
      }
      c_.wait(sem, blocks);
    }
    c_.note(x, NoteKind::kLowered,
            "in place: " + std::to_string(blocks) + " tile(s) of " + std::to_string(rows_per_block) + " x " +
                std::to_string(cols) + " written into the operand's buffer (dynamic start indices timed at 0)");
    return true;
  }

  // An update whose only partial dim is k (every dim before it full, every
  // dim after it full by k's definition) is one strided region: per index of
  // the leading dims, us[k] x (dims after k) contiguous elements, equally
  // spaced. One DMA of it (a strided descriptor) stages the update, one
  // writes it in place, instead of one pair per block (a decode step's new
  // key per sequence into its cache: one strided DMA, not a DMA per
  // sequence). False when the staging tile does not fit the VMEM budget or
  // the shapes do not allow it (the caller then moves blocks).
  bool strided_update(const Instruction& x, std::size_t base_i, std::size_t upd_i, const hlo::Shape& us, int k) {
    const Instruction& base = *x.operand(base_i);
    const hlo::Shape& ds = base.shape();
    const int n = ds.rank();
    if (k < 0) return false;
    std::int64_t outer = 1, inner = 1;
    for (int d = 0; d < k; ++d) {
      if (us.dim(d) != ds.dim(d)) return false;
      outer *= std::max<std::int64_t>(1, ds.dim(d));
    }
    for (int d = k + 1; d < n; ++d) inner *= std::max<std::int64_t>(1, ds.dim(d));
    const Array a = leaf0(x, base_i);
    const Array u = leaf0(x, upd_i);
    const std::int64_t width = stored_type(us.element_type()).width;
    const std::int64_t ucols = std::max<std::int64_t>(1, us.dim(k)) * inner * width;
    const std::int64_t acols = std::max<std::int64_t>(1, ds.dim(k)) * inner * width;
    if (u.dtype != a.dtype || u.rows * u.cols != outer * ucols || a.rows * a.cols != outer * acols) return false;
    if (c_.vmem_footprint(u.dtype, outer, ucols) > c_.vmem_budget()) return false;
    vals_[&x] = operand(x, base_i);  // the result is the operand's buffer
    section(x, false);
    if (c_.opt.core == 0) {  // megacore: a small update, on core 0
      const Array av = c_.view(a, outer, acols), uv = c_.view(u, outer, ucols);
      const isa::SemRef sem = c_.sem("dus");
      const std::uint32_t staged = c_.vmem("dus.update", u.dtype, outer, ucols);
      c_.dma(c_.whole(staged), c_.tile(uv.buffer, 0, outer, 0, ucols), sem);
      c_.wait(sem, 1);
      c_.dma(c_.tile(av.buffer, 0, outer, 0, ucols), c_.whole(staged), sem);
      c_.wait(sem, 1);
    }
    c_.note(x, NoteKind::kLowered,
            fmt::format("in place: {} runs of {} elements, {} apart, written into the operand's buffer by one strided "
                        "DMA through VMEM (dynamic start indices timed at 0)",
                        outer, ucols / width, acols / width));
    return true;
  }

  // Rows per staging chunk of an update too large to stage whole: the
  // largest count, a multiple of the tile rows, of which two chunks fit the
  // VMEM budget (0 when not even one row does).
  std::int64_t update_chunk_rows(isa::DType d, std::int64_t rows, std::int64_t cols) const {
    const std::int64_t align = std::max<std::int64_t>(1, c_.min_tile_rows());
    std::int64_t r = rows;
    while (r > 1 && 2 * c_.vmem_footprint(d, r, cols) > c_.vmem_budget()) r = (r + 1) / 2;
    if (r > align) r -= r % align;
    return 2 * c_.vmem_footprint(d, r, cols) <= c_.vmem_budget() ? r : 0;
  }

  // Row of block b (the small array's leading-dim digits in dims 0..k) in
  // the large array's [rows, last dim] view, the small array placed at
  // `start` (per dim; empty: all 0).
  static std::int64_t block_row(std::int64_t b, const hlo::Shape& small, const hlo::Shape& big, int k,
                                std::int64_t rows_per_block, const std::vector<std::int64_t>& start) {
    std::int64_t rest = b, row0 = 0, stride = rows_per_block;
    for (int d = k; d >= 0; --d) {
      const std::int64_t ud = std::max<std::int64_t>(1, small.dim(d));
      const std::int64_t s0 = start.empty() ? 0 : start[static_cast<std::size_t>(d)];
      row0 += (rest % ud + s0) * stride;
      rest /= ud;
      stride *= std::max<std::int64_t>(1, big.dim(d));
    }
    return row0;  // the dims after k are whole in both: they start at 0
  }

  // Blocks of `rows_per_block` rows from `src` to `dst` through VMEM,
  // `chunk` rows at a time in two staging buffers: chunk j+1 is read while
  // chunk j is written back, so the rows move at HBM bandwidth (read and
  // write). Block b starts at row src_row(b) of src and dst_row(b) of dst.
  template <typename SrcRow, typename DstRow>
  void copy_rows(const Array& src, SrcRow src_row, const Array& dst, DstRow dst_row, std::int64_t cols,
                 std::int64_t blocks, std::int64_t rows_per_block, std::int64_t chunk) {
    const isa::SemRef in = c_.sem("rows.in"), out = c_.sem("rows.out");
    const std::array<std::uint32_t, 2> buf = {c_.vmem("rows.chunk0", src.dtype, chunk, cols),
                                              c_.vmem("rows.chunk1", src.dtype, chunk, cols)};
    std::int64_t j = 0;
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t from = src_row(b), to = dst_row(b);
      for (std::int64_t r = 0; r < rows_per_block; r += chunk, ++j) {
        const std::int64_t n = std::min(chunk, rows_per_block - r);
        const std::uint32_t slot = buf[static_cast<std::size_t>(j % 2)];
        if (j >= 2) c_.wait(out, 1);  // this slot's previous write-back has finished
        c_.dma(c_.tile(slot, 0, n, 0, cols), c_.tile(src.buffer, from + r, n, 0, cols), in);
        c_.wait(in, 1);
        c_.dma(c_.tile(dst.buffer, to + r, n, 0, cols), c_.tile(slot, 0, n, 0, cols), out);
      }
    }
    c_.wait(out, std::min<std::int64_t>(j, 2));
  }

  // The block structure of `small` inside `big` in their [rows, last dim]
  // views: k is the last leading dim where they differ (-1: none), the
  // small array's dims up to k enumerate blocks of contiguous rows.
  struct RowBlocks {
    int k = -1;
    std::int64_t blocks = 1, rows_per_block = 1;
  };
  static RowBlocks row_blocks(const hlo::Shape& small, const hlo::Shape& big) {
    RowBlocks rb;
    const int n = small.rank();
    for (int d = 0; d + 1 < n; ++d) {
      if (small.dim(d) != big.dim(d)) rb.k = d;
    }
    for (int d = 0; d <= rb.k; ++d) rb.blocks *= std::max<std::int64_t>(1, small.dim(d));
    for (int d = rb.k + 1; d + 1 < n; ++d) rb.rows_per_block *= std::max<std::int64_t>(1, small.dim(d));
    return rb;
  }

  // A slice or dynamic-slice of operand `src_i` (or a fusion computing one,
  // `slice` its instruction) that keeps the last dim whole and steps by 1
  // reads only its rows: blocks of contiguous rows of the operand, copied
  // through VMEM into the result (dynamic start indices timed at 0, as for
  // the in-place update). False when the slice does not have this form.
  bool lower_row_slice(const Instruction& x, const Instruction& slice, std::size_t src_i) {
    const hlo::Shape& ss = slice.shape();
    const Instruction& base = *slice.operand(0);
    const hlo::Shape& ds = base.shape();
    if (!x.shape().is_array() || !ss.is_array() || !ds.is_array() || ss.rank() != ds.rank() || ss.rank() == 0 ||
        ss.dim(ss.rank() - 1) != ds.dim(ds.rank() - 1) || ss.element_type() != ds.element_type() ||
        x.shape().element_count() != ss.element_count()) {
      return false;
    }
    std::vector<std::int64_t> start;
    if (slice.opcode() == Opcode::kSlice) {
      const auto ranges = hlo::slice_attr(slice);
      if (!ranges || ranges->size() != static_cast<std::size_t>(ss.rank())) return false;
      for (const auto& r : *ranges) {
        if (r.stride != 1) return false;
        start.push_back(r.start);
      }
    }
    const RowBlocks rb = row_blocks(ss, ds);
    if (rb.blocks > c_.opt.update_in_place_max_blocks) return false;
    const Array a = leaf0(x, src_i);
    const std::int64_t cols = std::max<std::int64_t>(1, ss.dim(ss.rank() - 1)) * stored_type(ss.element_type()).width;
    if (cols > a.cols) return false;
    const bool whole = c_.vmem_footprint(a.dtype, rb.rows_per_block, cols) * 2 <= c_.vmem_budget();
    const std::int64_t chunk = whole ? rb.rows_per_block : update_chunk_rows(a.dtype, rb.rows_per_block, cols);
    if (chunk <= 0) return false;
    Value out = c_.hbm_value(x.name(), x.shape());
    if (out.leaves.empty()) return false;
    vals_[&x] = out;
    Array o = out.leaves[0];
    if (o.rows != rb.blocks * rb.rows_per_block || o.cols != cols) o = c_.view(o, rb.blocks * rb.rows_per_block, cols);
    section(x, false);
    if (c_.opt.core == 0) {  // megacore: on core 0
      const std::int64_t rpb = rb.rows_per_block;
      copy_rows(a, [&](std::int64_t b) { return block_row(b, ss, ds, rb.k, rpb, start); }, o,
                [&](std::int64_t b) { return b * rpb; }, cols, rb.blocks, rpb, chunk);
    }
    c_.note(x, NoteKind::kLowered,
            fmt::format("rows of the operand only: {} block(s) of {} x {} through VMEM in chunks of {} rows{}",
                        rb.blocks, rb.rows_per_block, cols, chunk,
                        slice.opcode() == Opcode::kDynamicSlice ? " (dynamic start indices timed at 0)" : ""));
    return true;
  }

  // A fusion that is a slice or dynamic-slice of its parameter p, then only
  // reshapes or bitcasts (XLA's dynamic-slice fusion, e.g. a loop reading one
  // slice of its carried buffer per iteration; the index operands are scalars).
  bool lower_fused_row_slice(const Instruction& x, const hlo::Computation& f) {
    const Instruction* v = f.root();
    while (v != nullptr && (v->opcode() == Opcode::kReshape || v->opcode() == Opcode::kBitcast) &&
           v->operand_count() == 1) {
      v = v->operand(0);
    }
    if (v == nullptr || (v->opcode() != Opcode::kSlice && v->opcode() != Opcode::kDynamicSlice)) return false;
    const Instruction* base = v->operand(0);
    if (base->opcode() != Opcode::kParameter) return false;
    const auto p = static_cast<std::size_t>(base->parameter_number());
    if (p >= x.operand_count()) return false;
    return lower_row_slice(x, *v, p);
  }

  void lower_collective(const Instruction& x) {
    section(x, false);
    const std::vector<Array> ins = all_leaves(x);
    Value out = c_.hbm_value(x.name(), x.shape());
    vals_[&x] = out;
    const Opcode op = x.opcode();
    isa::CollectiveKind kind = isa::CollectiveKind::kAllReduce;
    if (op == Opcode::kAllGather || op == Opcode::kAllGatherStart || op == Opcode::kCollectiveBroadcast) {
      kind = isa::CollectiveKind::kAllGather;
    } else if (op == Opcode::kReduceScatter) {
      kind = isa::CollectiveKind::kReduceScatter;
    } else if (op == Opcode::kAllToAll || op == Opcode::kRaggedAllToAll) {
      kind = isa::CollectiveKind::kAllToAll;
    } else if (op == Opcode::kCollectivePermute || op == Opcode::kCollectivePermuteStart) {
      kind = isa::CollectiveKind::kCollectivePermute;
    }
    isa::GroupsRef groups;
    if (kind == isa::CollectiveKind::kCollectivePermute) {
      if (auto pairs = hlo::int_lists_attr(x, hlo::AttrId::kSourceTargetPairs)) {
        isa::ReplicaGroups g;
        for (const auto& p : *pairs) g.push_back(p);
        groups.id = static_cast<std::uint32_t>(c_.prog.replica_groups.size());
        c_.prog.replica_groups.push_back(std::move(g));
      }
    } else if (auto rg = hlo::replica_groups_attr(x); rg && !rg->groups.empty()) {
      isa::ReplicaGroups g;
      for (const auto& p : rg->groups) g.push_back(p);
      groups.id = static_cast<std::uint32_t>(c_.prog.replica_groups.size());
      c_.prog.replica_groups.push_back(std::move(g));
    }
    // A -start (or a collective inside async-start) completes at its -done:
    // its own semaphore, waited there, so the ops scheduled in between overlap.
    const bool start_form = op == Opcode::kAllReduceStart || op == Opcode::kAllGatherStart ||
                            op == Opcode::kCollectivePermuteStart;
    const Instruction* owner = start_form ? &x : async_start_;
    const isa::SemRef sem = owner != nullptr ? c_.sem("ici." + std::string(owner->name())) : c_.sem("ici");
    std::int64_t n = 0;
    const std::size_t k = ins.size();
    const std::size_t skip = out.leaves.size() > k ? out.leaves.size() - k : 0;
    for (std::size_t i = 0; i < k; ++i) {
      const Array& src = ins[i];
      Array dst = skip + i < out.leaves.size() ? out.leaves[skip + i] : src;
      const bool same_shape_kind = kind == isa::CollectiveKind::kAllReduce ||
                                   kind == isa::CollectiveKind::kCollectivePermute ||
                                   kind == isa::CollectiveKind::kAllToAll;
      if (same_shape_kind && (dst.rows != src.rows || dst.cols != src.cols)) {
        dst = c_.hbm_array(std::string(x.name()) + ".dst", src.shape);
      }
      if (c_.opt.core != 0) continue;  // megacore: core 0 is the chip's device on the ICI
      c_.emit(isa::Collective{kind, c_.whole(dst.buffer), c_.whole(src.buffer), groups, sem});
      c_.prog.code.back().loc = c_.loc(x);  // replica-group errors point at the HLO instruction
      ++n;
    }
    if (owner != nullptr) {
      Pending& p = pending_for(owner);
      p.sem = sem;
      p.count += n;
      p.provenance = c_.prog.code.empty() ? 0 : c_.prog.code.back().provenance;
      c_.note(x, NoteKind::kLowered, "collective instruction(s), waited at the matching -done");
      return;
    }
    c_.wait(sem, n);
    c_.note(x, NoteKind::kLowered, "collective instruction(s)");
  }

  Ctx& c_;
  std::unordered_map<const Instruction*, Value> vals_;
  std::unordered_map<const Instruction*, Value> async_;
  // Collectives issued by a -start / async-start and not yet waited on.
  enum class HostMove : std::uint8_t { kNone, kToHost, kToDevice };
  struct Pending {
    isa::SemRef sem;
    std::int64_t count = 0;
    std::uint32_t provenance = 0;  // the collective's label: the wait is its exposed time
    HostMove host = HostMove::kNone;  // a MoveToHost/MoveToDevice transfer (not a collective)
    int depth = 0;                    // the loop depth it was issued at
  };
  std::vector<std::pair<const Instruction*, Pending>> pending_;  // in issue order
  Pending& pending_for(const Instruction* start) {
    for (auto& [k, p] : pending_) {
      if (k == start) return p;
    }
    return pending_.emplace_back(start, Pending{}).second;
  }
  const Instruction* async_start_ = nullptr;  // the async-start being inlined

 public:
  // Waits at a -done for the collectives its -start issued.
  void wait_async(const Instruction& start) {
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const auto& e) { return e.first == &start; });
    if (it == pending_.end()) return;
    const Pending p = it->second;
    pending_.erase(it);
    const std::uint32_t saved = c_.provenance_id();
    c_.set_provenance_id(p.provenance);
    c_.wait(p.sem, p.count);
    c_.set_provenance_id(saved);
  }
  // Waits for every collective whose -done never came (malformed schedules).
  void wait_all_async() {
    while (!pending_.empty()) wait_async(*pending_.front().first);
  }
  // Before an op (or a fusion group's members) runs: waits for the
  // MoveToDevice transfers whose values it reads, and a MoveToDevice for
  // the MoveToHost transfers it copies back (other readers of a MoveToHost's
  // value are host-side bookkeeping: views, updates of a host buffer).
  void wait_host_reads(const Instruction& x) {
    const bool to_device = x.opcode() == Opcode::kCustomCall &&
                           hlo::word_attr(x, hlo::AttrId::kCustomCallTarget).value_or("") == "MoveToDevice";
    for (const Instruction* o : x.operands()) {
      const auto it = std::find_if(pending_.begin(), pending_.end(), [&](const auto& e) { return e.first == o; });
      if (it == pending_.end()) continue;
      if (it->second.host == HostMove::kToDevice || (to_device && it->second.host == HostMove::kToHost)) {
        wait_async(*o);
      }
    }
  }
  // Waits for the host transfers issued at this loop depth (at the end of a
  // computation: those issued in it), or, with to_device_only, for the
  // MoveToDevice ones (before a loop, whose body may read them: a wait
  // inside the body would repeat).
  void wait_host_moves(bool to_device_only = false) {
    std::vector<const Instruction*> moves;
    for (const auto& [start, p] : pending_) {
      if (to_device_only ? p.host == HostMove::kToDevice : p.host != HostMove::kNone && p.depth == loop_depth_) {
        moves.push_back(start);
      }
    }
    for (const Instruction* start : moves) wait_async(*start);
  }

 private:
  int loop_depth_ = 0;
  std::string top_name_;  // the entry-computation instruction being lowered
};

}  // namespace

Result<Lowered> lower_module(const hlo::Module& module, const ChipConfig& chip, const LowerOptions& options) {
  Lowered out;
  out.program.file = module.source().name;
  Ctx ctx(module, chip, options, out.program, out.report);
  Lowerer l(ctx);
  auto r = l.run();
  if (!r.ok()) return r.errors();
  // Keep the reuse entries of ops that were reused.
  std::vector<isa::Program::Reuse> reuse;
  std::vector<LowerReport::Reused> reused;
  for (std::size_t i = 0; i < out.program.reuse.size(); ++i) {
    if (out.program.reuse[i].extra == 0) continue;
    reuse.push_back(std::move(out.program.reuse[i]));
    reused.push_back(std::move(out.report.reused[i]));
  }
  out.program.reuse = std::move(reuse);
  out.report.reused = std::move(reused);
  if (out.program.code.size() > options.max_instructions) {
    return Diagnostic{module.source().name, 0, 0,
                      "unsupported: the lowered program exceeds " + std::to_string(options.max_instructions) +
                          " instructions (simulation.max_program_instructions raises the limit)",
                      ""};
  }
  return out;
}

int megacore_cores(const ChipConfig& chip) {
  return chip.megacore ? static_cast<int>(std::max<std::int64_t>(1, chip.tensorcores)) : 1;
}

Result<std::vector<Lowered>> lower_for_chip(const hlo::Module& module, const ChipConfig& chip, LowerOptions options) {
  std::vector<Lowered> out;
  options.cores = megacore_cores(chip);
  for (int c = 0; c < options.cores; ++c) {
    options.core = c;
    auto l = lower_module(module, chip, options);
    if (!l.ok()) return l.errors();
    out.push_back(std::move(l).value());
  }
  return out;
}

}  // namespace tpusim::lower
