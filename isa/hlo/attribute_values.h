// Typed accessors for instruction attributes: decode the stored value text
// with the same readers the parser validated it with (values.h). Each returns
// nullopt when the attribute is absent (or, defensively, malformed).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "isa/hlo/ir.h"
#include "isa/hlo/values.h"

namespace tpusim::hlo {

std::optional<std::int64_t> int_attr(const Instruction& inst, AttrId id);
std::optional<Ints> ints_attr(const Instruction& inst, AttrId id);
std::optional<bool> bool_attr(const Instruction& inst, AttrId id);
// A bare word (enum) or a string without its quotes (no unescaping).
std::optional<std::string_view> word_attr(const Instruction& inst, AttrId id);
std::optional<Window> window_attr(const Instruction& inst);
std::optional<ConvDimLabels> dim_labels_attr(const Instruction& inst);
std::optional<std::vector<SliceRange>> slice_attr(const Instruction& inst);
std::optional<std::vector<PadDim>> padding_attr(const Instruction& inst);
std::optional<ReplicaGroups> replica_groups_attr(const Instruction& inst);
std::optional<std::vector<Ints>> int_lists_attr(const Instruction& inst, AttrId id);

}  // namespace tpusim::hlo
