#include "isa/lower/fusion.h"

#include "isa/hlo/attribute_values.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include "isa/hlo/cost_analysis.h"
#include "isa/hlo/while_loop.h"

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

namespace {

// A group's cost at its boundary: its members' FLOPs, its external inputs
// read and its root written (a fusion in HloCostAnalysis); at the hero's
// MXU rate when it has one.
hlo::OpCost group_cost(const FusionGroup& g, const std::unordered_map<const Instruction*, hlo::OpCost>& cost) {
  hlo::OpCost c;
  for (const Instruction* y : g.members) {
    auto it = cost.find(y);
    if (it == cost.end()) continue;
    c.flops += it->second.flops;
    c.transcendentals += it->second.transcendentals;
  }
  for (const Instruction* in : g.inputs) {
    if (in->has_shape()) c.bytes_read += static_cast<double>(in->shape().byte_size());
  }
  c.bytes_written = static_cast<double>(g.root->shape().byte_size());
  if (g.hero != nullptr) {
    if (auto it = cost.find(g.hero); it != cost.end()) c.matmul_type = it->second.matmul_type;
  }
  return c;
}

// A computation's cost as the lowering runs it (the fusion plan's groups at
// their boundary; a while inside it: its body so costed, times its trip
// count, plus the condition).
hlo::OpCost lowered_cost(const hlo::Module& module, const hlo::Computation& comp, int depth);

// A while's cost with its body as lowered (nullopt: not a while, or too deep).
std::optional<hlo::OpCost> lowered_while_cost(const hlo::Module& module, const Instruction& x, int depth) {
  const hlo::Computation* body = x.called(hlo::AttrId::kBody);
  const hlo::Computation* cond = x.called(hlo::AttrId::kCondition);
  if (x.opcode() != Opcode::kWhile || body == nullptr || depth > 16) return std::nullopt;
  const auto trip = hlo::while_trip_count(x);
  const double n = trip ? static_cast<double>(trip->count) : 1;
  hlo::OpCost c;
  const hlo::OpCost b = lowered_cost(module, *body, depth + 1);
  const hlo::OpCost k = cond != nullptr ? hlo::computation_cost(*cond) : hlo::OpCost{};
  for (const auto& [part, times] : {std::pair{b, n}, std::pair{k, trip ? n + 1 : 1.0}}) {
    c.flops += times * part.flops;
    c.transcendentals += times * part.transcendentals;
    c.bytes_read += times * part.bytes_read;
    c.bytes_written += times * part.bytes_written;
    c.collective_bytes += times * part.collective_bytes;
    c.matmul_type = part.matmul_type != hlo::ElementType::kTuple ? part.matmul_type : c.matmul_type;
  }
  return c;
}

hlo::OpCost lowered_cost(const hlo::Module& module, const hlo::Computation& comp, int depth) {
  hlo::CostAnalysis analysis;
  const std::vector<hlo::OpCost> costs = analysis.costs(comp);
  std::unordered_map<const Instruction*, hlo::OpCost> cost;
  for (std::size_t i = 0; i < comp.instructions().size() && i < costs.size(); ++i) {
    cost.emplace(comp.instructions()[i], costs[i]);
  }
  const FusionPlan plan = plan_fusion(module, comp);
  hlo::OpCost total;
  for (const Instruction* x : comp.instructions()) {
    if (plan.fused_into.contains(x)) continue;
    if (auto g = plan.group_of_root.find(x); g != plan.group_of_root.end()) {
      total += group_cost(plan.groups[g->second], cost);
    } else if (auto w = lowered_while_cost(module, *x, depth)) {
      total += *w;
    } else {
      total += cost[x];
    }
  }
  return total;
}

void set_times(hlo::RooflineRow& row, const hlo::RooflineRates& rates) {
  const double peak =
      row.cost.matmul_type != hlo::ElementType::kTuple ? rates.matmul_rate(row.cost.matmul_type) : rates.vector_rate();
  const double work = row.cost.flops + row.cost.transcendentals;
  row.intensity = row.cost.bytes_accessed() > 0 ? work / row.cost.bytes_accessed() : 0;
  row.compute_time_s = peak > 0 ? work / peak : 0;
  row.memory_time_s = rates.hbm_bytes_per_second > 0 ? row.cost.bytes_accessed() / rates.hbm_bytes_per_second : 0;
  row.communication_time_s =
      rates.ici_bytes_per_second > 0 ? row.cost.collective_bytes / rates.ici_bytes_per_second : 0;
  row.bound_time_s = std::max({row.compute_time_s, row.memory_time_s, row.communication_time_s});
  row.bound = row.bound_time_s == 0                                                              ? hlo::Bound::kNone
              : row.compute_time_s >= row.memory_time_s && row.compute_time_s >= row.communication_time_s
                  ? hlo::Bound::kCompute
              : row.memory_time_s >= row.communication_time_s ? hlo::Bound::kMemory
                                                              : hlo::Bound::kCommunication;
}

}  // namespace

hlo::RooflineReport roofline_as_lowered(const hlo::Module& module, const hlo::RooflineRates& rates) {
  hlo::RooflineReport r = hlo::roofline(module, rates);
  const hlo::Computation* entry = module.entry();
  if (entry == nullptr || module_is_fused(module)) return r;
  const FusionPlan plan = plan_fusion(module, *entry);
  std::unordered_map<std::string, const hlo::RooflineRow*> by_name;
  for (const auto& row : r.ops) by_name.emplace(row.name, &row);
  std::unordered_map<const Instruction*, hlo::OpCost> cost;
  for (const Instruction* x : entry->instructions()) {
    if (auto it = by_name.find(std::string(x->name())); it != by_name.end()) cost.emplace(x, it->second->cost);
  }
  std::set<std::string> dropped;
  std::unordered_map<std::string, hlo::RooflineRow> replaced;
  for (const FusionGroup& g : plan.groups) {
    hlo::RooflineRow row;
    row.name = std::string(g.root->name());
    row.opcode = "fusion";
    row.category = "fusion";
    row.profile_category = hlo::profile_category_of_fusion(g.members);
    if (const auto root = by_name.find(row.name); root != by_name.end()) row.line = root->second->line;
    if (const auto md = hlo::metadata_attr(*g.root)) row.op_name = md->op_name;  // as XLA names a fusion
    for (const Instruction* y : g.members) dropped.insert(std::string(y->name()));
    row.cost = group_cost(g, cost);
    set_times(row, rates);
    replaced.emplace(row.name, std::move(row));
  }
  // Loops: their bodies as lowered, times the trip count.
  for (const Instruction* x : entry->instructions()) {
    auto it = by_name.find(std::string(x->name()));
    if (it == by_name.end()) continue;
    if (auto w = lowered_while_cost(module, *x, 0)) {
      hlo::RooflineRow row = *it->second;
      row.cost = *w;
      set_times(row, rates);
      replaced.insert_or_assign(row.name, std::move(row));
    }
  }
  hlo::RooflineReport out;
  out.module_name = r.module_name;
  out.unknown_trip_loops = r.unknown_trip_loops;
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
