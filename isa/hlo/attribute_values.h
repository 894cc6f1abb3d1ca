// Typed accessors for instruction attributes: decode the stored value text
// with the same readers the parser validated it with (values.h). Each returns
// nullopt when the attribute is absent (or, defensively, malformed).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

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

// metadata={op_type="Add" op_name="jit(f)/add" source_file="f.py" source_line=12 …}:
// the fields reports group by, plus every field as written.
struct OpMetadata {
  std::string op_type;
  std::string op_name;
  std::string source_file;
  std::int64_t source_line = 0;  // 0 when absent
  std::vector<KeyValue> fields;  // all of them, in order
};
std::optional<OpMetadata> metadata_attr(const Instruction& inst);
// frontend_attributes={key="value", …} of an instruction or a module.
std::optional<std::vector<KeyValue>> frontend_attributes(const Instruction& inst);
std::optional<std::vector<KeyValue>> frontend_attributes(const Module& module);
// backend_config as JSON (a {…} block or a string holding JSON); nullopt when
// absent or not JSON (XLA also writes opaque strings there).
std::optional<nlohmann::json> backend_config_json(const Instruction& inst);

}  // namespace tpusim::hlo
