#include "isa/hlo/structure.h"

#include <span>
#include <unordered_map>
#include <vector>

#include "isa/hlo/source.h"

namespace tpusim::hlo {
namespace {

// Iterative depth-first search over nodes 0..n-1 (call chains and dataflow
// may be thousands deep: no recursion). `succ(i)` is node i's successors,
// `id(s)` the node number of one of them.
struct Search {
  std::vector<std::uint32_t> post_order;  // successors before predecessors
  bool cyclic = false;
  std::uint32_t cycle_from = 0;  // the node whose edge closes a cycle
  std::uint32_t cycle_to = 0;
};

template <class Succ, class Id>
Search depth_first(std::uint32_t n, Succ succ, Id id) {
  Search out;
  enum : std::uint8_t { kNew, kOpen, kDone };
  std::vector<std::uint8_t> state(n, kNew);
  std::vector<std::pair<std::uint32_t, std::size_t>> stack;  // node, next edge
  for (std::uint32_t start = 0; start < n; ++start) {
    if (state[start] != kNew) continue;
    state[start] = kOpen;
    stack.emplace_back(start, 0);
    while (!stack.empty()) {
      auto& [node, edge] = stack.back();
      const auto next = succ(node);
      if (edge == next.size()) {
        state[node] = kDone;
        out.post_order.push_back(node);
        stack.pop_back();
        continue;
      }
      const std::uint32_t to = id(next[edge++]);
      if (state[to] == kOpen) {
        out.cyclic = true;
        out.cycle_from = node;
        out.cycle_to = to;
        return out;
      }
      if (state[to] == kNew) {
        state[to] = kOpen;
        stack.emplace_back(to, 0);
      }
    }
  }
  return out;
}

class StructureCheck {
 public:
  explicit StructureCheck(const Module& m) : m_(m) {}

  std::optional<Diagnostic> run() {
    if (auto d = check_dataflow()) return d;
    return check_calls();
  }

 private:
  Diagnostic at(const Instruction& inst, std::string message) const {
    return make_diagnostic(m_.source().name, m_.source().text, inst.offset(), std::move(message));
  }

  // `a = add(a, p)` or a longer loop through operands: XLA requires a DAG.
  std::optional<Diagnostic> check_dataflow() {
    std::vector<const Instruction*> by_id(m_.instruction_count(), nullptr);
    for (const Computation* c : m_.computations())
      for (const Instruction* i : c->instructions()) by_id[i->id()] = i;
    const Search s = depth_first(
        static_cast<std::uint32_t>(by_id.size()), [&](std::uint32_t i) { return by_id[i]->operands(); },
        [](const Instruction* o) { return o->id(); });
    if (!s.cyclic) return std::nullopt;
    const Instruction& user = *by_id[s.cycle_from];
    const Instruction& used = *by_id[s.cycle_to];
    return at(user, "cyclic dataflow: '%" + std::string(user.name()) + "' depends on itself (through operand '%" +
                        std::string(used.name()) + "'); instructions must form a directed acyclic graph");
  }

  std::optional<Diagnostic> check_calls() {
    const auto& comps = m_.computations();
    std::unordered_map<const Computation*, std::uint32_t> index;
    for (std::uint32_t k = 0; k < comps.size(); ++k) index.emplace(comps[k], k);
    // Per computation: its callees and the instruction calling each.
    std::vector<std::vector<std::uint32_t>> callees(comps.size());
    std::vector<std::vector<const Instruction*>> sites(comps.size());
    for (std::uint32_t k = 0; k < comps.size(); ++k)
      for (const Instruction* i : comps[k]->instructions())
        for (const Computation* callee : i->called_computations()) {
          if (callee == m_.entry())
            return at(*i, "'%" + std::string(i->name()) + "' calls the entry computation '%" +
                              std::string(callee->name()) + "'; the entry computation cannot be called");
          callees[k].push_back(index.at(callee));
          sites[k].push_back(i);
        }
    auto site_of = [&](std::uint32_t from, std::uint32_t to) {
      for (std::size_t e = 0; e < callees[from].size(); ++e)
        if (callees[from][e] == to) return sites[from][e];
      return sites[from].front();
    };
    const Search s = depth_first(
        static_cast<std::uint32_t>(comps.size()), [&](std::uint32_t k) { return std::span(callees[k]); },
        [](std::uint32_t k) { return k; });
    if (s.cyclic) {
      const Instruction& call = *site_of(s.cycle_from, s.cycle_to);
      return at(call, "recursive call: '%" + std::string(call.name()) + "' in '%" +
                          std::string(comps[s.cycle_from]->name()) + "' calls '%" +
                          std::string(comps[s.cycle_to]->name()) +
                          "', which is already being called; HLO computations cannot recurse");
    }
    // Height (longest chain of computations from here down), callees first.
    std::vector<int> height(comps.size(), 1);
    for (std::uint32_t k : s.post_order) {
      for (std::uint32_t callee : callees[k]) {
        if (height[callee] + 1 <= height[k]) continue;
        height[k] = height[callee] + 1;
        if (height[k] > kMaxCallDepth) {
          const Instruction& call = *site_of(k, callee);
          return at(call, "call chain too deep: '%" + std::string(call.name()) + "' starts a chain of more than " +
                              std::to_string(kMaxCallDepth) + " nested computations (the limit)");
        }
      }
    }
    return std::nullopt;
  }

  const Module& m_;
};

}  // namespace

std::optional<Diagnostic> check_structure(const Module& module) { return StructureCheck(module).run(); }

}  // namespace tpusim::hlo
