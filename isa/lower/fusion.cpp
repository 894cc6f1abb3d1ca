#include "isa/lower/fusion.h"

#include <algorithm>
#include <set>

#include "isa/hlo/cost_analysis.h"

namespace tpusim::lower {
namespace {

using hlo::Instruction;
using hlo::OpCategory;
using hlo::Opcode;

bool array_shaped(const Instruction& x) { return x.has_shape() && x.shape().is_array(); }

bool elementwise(const Instruction& x) {
  const OpCategory c = hlo::opcode_category(x.opcode());
  return c == OpCategory::kElementwiseUnary || c == OpCategory::kElementwiseBinary ||
         c == OpCategory::kElementwiseTernary || x.opcode() == Opcode::kConvert;
}

// May be fused into a consumer.
bool fusible_producer(const Instruction& x) {
  if (!array_shaped(x)) return false;
  return elementwise(x) || x.opcode() == Opcode::kBroadcast || x.opcode() == Opcode::kConstant;
}

// Cheap to recompute in every consumer group.
bool duplicable(const Instruction& x) {
  return array_shaped(x) && (x.opcode() == Opcode::kBroadcast || x.opcode() == Opcode::kConstant);
}

// May be the root of a group.
bool fusible_root(const Instruction& x) {
  if (!array_shaped(x)) return false;
  if (x.opcode() == Opcode::kReduce) return x.operand_count() == 2;  // one input, one init value
  return elementwise(x) || x.opcode() == Opcode::kBroadcast;
}

}  // namespace

bool module_is_fused(const hlo::Module& module) {
  for (const hlo::Computation* c : module.computations()) {
    for (const Instruction* x : c->instructions()) {
      if (x->opcode() == Opcode::kFusion) return true;
    }
  }
  return false;
}

FusionPlan plan_fusion(const hlo::Module& module, const hlo::Computation& computation) {
  FusionPlan plan;
  if (module_is_fused(module)) return plan;
  const auto& insts = computation.instructions();
  std::unordered_map<const Instruction*, std::size_t> position;
  for (std::size_t i = 0; i < insts.size(); ++i) position[insts[i]] = i;
  // Groups under construction, and the groups each instruction belongs to.
  std::vector<std::vector<const Instruction*>> members;
  std::vector<const Instruction*> heroes;  // per group under construction
  std::unordered_map<const Instruction*, std::vector<std::size_t>> in_groups;
  // The groups all of x's users are in; empty when some user is in none, or
  // is a group's hero (its operands are read from HBM, not fused).
  const auto user_groups = [&](const Instruction* x) {
    std::set<std::size_t> gs;
    for (const Instruction* u : x->users()) {
      auto it = in_groups.find(u);
      // A user that is in several groups (a duplicated broadcast) counts as all of them.
      if (it == in_groups.end() || it->second.empty()) return std::set<std::size_t>{};
      for (const std::size_t g : it->second) {
        if (heroes[g] == u) return std::set<std::size_t>{};
      }
      gs.insert(it->second.begin(), it->second.end());
    }
    return gs;
  };
  for (std::size_t i = insts.size(); i-- > 0;) {
    const Instruction* x = insts[i];
    if (fusible_producer(*x) && !x->is_root() && !x->users().empty()) {
      const std::set<std::size_t> gs = user_groups(x);
      if (!gs.empty() && (gs.size() == 1 || duplicable(*x))) {
        for (const std::size_t g : gs) members[g].push_back(x);
        in_groups[x].assign(gs.begin(), gs.end());
        continue;
      }
    }
    // Output fusion: a dot into the elementwise group that consumes it.
    if (x->opcode() == Opcode::kDot && array_shaped(*x) && !x->is_root() && !x->users().empty()) {
      const std::set<std::size_t> gs = user_groups(x);
      if (gs.size() == 1) {
        const std::size_t g = *gs.begin();
        const Instruction* root = members[g].front();
        if (heroes[g] == nullptr && elementwise(*root) &&
            root->shape().element_count() == x->shape().element_count()) {
          members[g].push_back(x);
          heroes[g] = x;
          in_groups[x] = {g};
          continue;
        }
      }
    }
    if (fusible_root(*x)) {
      in_groups[x] = {members.size()};
      members.push_back({x});
      heroes.push_back(nullptr);
    }
  }
  for (std::size_t gi = 0; gi < members.size(); ++gi) {
    auto& m = members[gi];
    if (m.size() < 2) continue;
    std::sort(m.begin(), m.end(), [&](const Instruction* a, const Instruction* b) { return position[a] < position[b]; });
    FusionGroup g;
    g.root = m.back();
    g.hero = heroes[gi];
    g.members = m;
    const std::set<const Instruction*> inside(m.begin(), m.end());
    std::set<const Instruction*> seen;
    for (const Instruction* y : m) {
      for (const Instruction* o : y->operands()) {
        if (!inside.contains(o) && seen.insert(o).second) g.inputs.push_back(o);
      }
    }
    const std::size_t id = plan.groups.size();
    plan.group_of_root[g.root] = id;
    for (const Instruction* y : m) {
      if (y != g.root) plan.fused_into.emplace(y, id);
    }
    plan.groups.push_back(std::move(g));
  }
  return plan;
}

hlo::RooflineReport roofline_as_lowered(const hlo::Module& module, const hlo::RooflineRates& rates) {
  hlo::RooflineReport r = hlo::roofline(module, rates);
  const hlo::Computation* entry = module.entry();
  if (entry == nullptr || module_is_fused(module)) return r;
  const FusionPlan plan = plan_fusion(module, *entry);
  if (plan.groups.empty()) return r;
  std::unordered_map<std::string, const hlo::RooflineRow*> by_name;
  for (const auto& row : r.ops) by_name.emplace(row.name, &row);
  std::set<std::string> dropped;
  std::unordered_map<std::string, hlo::RooflineRow> replaced;
  for (const FusionGroup& g : plan.groups) {
    hlo::RooflineRow row;
    row.name = std::string(g.root->name());
    row.opcode = "fusion";
    row.category = "fusion";
    for (const Instruction* y : g.members) {
      dropped.insert(std::string(y->name()));
      auto it = by_name.find(std::string(y->name()));
      if (it == by_name.end()) continue;
      row.cost.flops += it->second->cost.flops;
      row.cost.transcendentals += it->second->cost.transcendentals;
    }
    for (const Instruction* in : g.inputs) {
      if (in->has_shape()) row.cost.bytes_read += static_cast<double>(in->shape().byte_size());
    }
    row.cost.bytes_written = static_cast<double>(g.root->shape().byte_size());
    row.intensity = row.cost.bytes_accessed() > 0 ? (row.cost.flops + row.cost.transcendentals) / row.cost.bytes_accessed() : 0;
    // A group with a dot hero runs at the MXU rate (its epilogue overlaps),
    // as hlo::roofline costs an output fusion.
    double peak = rates.vector_rate();
    if (g.hero != nullptr) {
      auto it = by_name.find(std::string(g.hero->name()));
      if (it != by_name.end() && it->second->cost.matmul_type != hlo::ElementType::kTuple) {
        row.cost.matmul_type = it->second->cost.matmul_type;
        peak = rates.matmul_rate(row.cost.matmul_type);
      }
    }
    row.compute_time_s = peak > 0 ? (row.cost.flops + row.cost.transcendentals) / peak : 0;
    row.memory_time_s = rates.hbm_bytes_per_second > 0 ? row.cost.bytes_accessed() / rates.hbm_bytes_per_second : 0;
    row.bound_time_s = std::max(row.compute_time_s, row.memory_time_s);
    row.bound = row.bound_time_s == 0                         ? hlo::Bound::kNone
                : row.compute_time_s >= row.memory_time_s ? hlo::Bound::kCompute
                                                              : hlo::Bound::kMemory;
    replaced.emplace(row.name, std::move(row));
  }
  hlo::RooflineReport out;
  out.module_name = r.module_name;
  for (const Instruction* x : entry->instructions()) {
    const std::string name(x->name());
    if (auto it = replaced.find(name); it != replaced.end()) {
      out.ops.push_back(it->second);
    } else if (!dropped.contains(name)) {
      if (auto row = by_name.find(name); row != by_name.end()) out.ops.push_back(*row->second);
    }
  }
  hlo::RooflineTotal& t = out.total;
  for (const auto& row : out.ops) {
    t.flops += row.cost.flops;
    t.transcendentals += row.cost.transcendentals;
    t.bytes_accessed += row.cost.bytes_accessed();
    t.collective_bytes += row.cost.collective_bytes;
    t.bound_time_s += row.bound_time_s;
    if (row.bound == hlo::Bound::kCompute) t.compute_time_s += row.bound_time_s;
    if (row.bound == hlo::Bound::kMemory) t.memory_time_s += row.bound_time_s;
    if (row.bound == hlo::Bound::kCommunication) t.communication_time_s += row.bound_time_s;
  }
  t.bound = t.bound_time_s == 0 ? hlo::Bound::kNone
            : t.compute_time_s >= t.memory_time_s && t.compute_time_s >= t.communication_time_s ? hlo::Bound::kCompute
            : t.memory_time_s >= t.communication_time_s ? hlo::Bound::kMemory
                                                        : hlo::Bound::kCommunication;
  return out;
}

}  // namespace tpusim::lower
