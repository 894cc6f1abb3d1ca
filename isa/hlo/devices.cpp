#include "isa/hlo/devices.h"

#include <algorithm>
#include <fmt/format.h>

#include "isa/hlo/attribute_values.h"
#include "isa/hlo/values.h"

namespace tpusim::hlo {
namespace {

std::optional<std::int64_t> module_int(const Module& m, AttrId id) {
  const Attribute* a = m.attribute(id);
  std::int64_t v = 0;
  if (a == nullptr || !parse_int(a->value, v)) return std::nullopt;
  return v;
}

}  // namespace

ModuleDevices module_devices(const Module& module) {
  const auto partitions = module_int(module, AttrId::kNumPartitions);
  const auto replicas = module_int(module, AttrId::kReplicaCount);
  if (partitions || replicas) {
    const std::int64_t p = std::max<std::int64_t>(1, partitions.value_or(1));
    const std::int64_t r = std::max<std::int64_t>(1, replicas.value_or(1));
    std::string source;
    if (partitions) source = fmt::format("num_partitions={}", p);
    if (replicas) source += fmt::format("{}replica_count={}", source.empty() ? "" : " x ", r);
    return {p * r, source};
  }
  std::int64_t largest = -1;
  for (const Computation* c : module.computations()) {
    for (const Instruction* x : c->instructions()) {
      if (const auto groups = replica_groups_attr(*x)) {
        for (const auto& g : groups->groups) {
          for (const std::int64_t d : g) largest = std::max(largest, d);
        }
      }
      if (const auto pairs = int_lists_attr(*x, AttrId::kSourceTargetPairs)) {
        for (const auto& pair : *pairs) {
          for (const std::int64_t d : pair) largest = std::max(largest, d);
        }
      }
    }
  }
  if (largest < 0) return {1, "no collectives and no num_partitions: one device"};
  return {largest + 1, fmt::format("no num_partitions in the header; the replica groups name devices 0..{}", largest)};
}

}  // namespace tpusim::hlo

namespace tpusim::hlo {

std::int64_t parameter_bytes(const Module& module) {
  std::int64_t bytes = 0;
  if (module.entry() == nullptr) return 0;
  for (const Instruction* p : module.entry()->parameters()) {
    if (p != nullptr && p->has_shape()) bytes += p->shape().byte_size();
  }
  return bytes;
}

}  // namespace tpusim::hlo
