// One collective vocabulary for the HLO front end, the ISA and the
// interconnect: the kinds (one table: the ISA's text name, its doc, XLA's HLO
// opcode name) and replica groups (device ids per group).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace tpusim {

#define TPUSIM_COLLECTIVE_KINDS(X)                                                               \
  X(kAllReduce, "all_reduce", "every replica receives the reduction of all", "all-reduce")       \
  X(kAllGather, "all_gather", "every replica receives the concatenation", "all-gather")          \
  X(kReduceScatter, "reduce_scatter", "replica i receives shard i of the sum", "reduce-scatter") \
  X(kAllToAll, "all_to_all", "replica i sends shard j to replica j", "all-to-all")               \
  X(kCollectivePermute, "collective_permute", "send to the paired replica", "collective-permute")

enum class CollectiveKind : std::uint8_t {
#define TPUSIM_X(id, ...) id,
  TPUSIM_COLLECTIVE_KINDS(TPUSIM_X)
#undef TPUSIM_X
};

// XLA's opcode name ("all-reduce"); the ISA's text name is isa::name().
[[nodiscard]] constexpr std::string_view hlo_collective_name(CollectiveKind k) {
  switch (k) {
#define TPUSIM_X(id, isa_text, doc, hlo_text) \
  case CollectiveKind::id: return hlo_text;
    TPUSIM_COLLECTIVE_KINDS(TPUSIM_X)
#undef TPUSIM_X
  }
  return "?";
}
[[nodiscard]] constexpr std::optional<CollectiveKind> parse_hlo_collective(std::string_view name) {
#define TPUSIM_X(id, isa_text, doc, hlo_text) \
  if (name == hlo_text) return CollectiveKind::id;
  TPUSIM_COLLECTIVE_KINDS(TPUSIM_X)
#undef TPUSIM_X
  return std::nullopt;
}

// Devices of each group; an empty list is one group of every device.
using ReplicaGroup = std::vector<std::int64_t>;
using ReplicaGroups = std::vector<ReplicaGroup>;

}  // namespace tpusim
