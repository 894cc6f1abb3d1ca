#include "isa/hlo/attribute_values.h"

#include <nlohmann/json.hpp>

namespace tpusim::hlo {
namespace {

// Runs `read` over the attribute's value text; nullopt if absent or invalid.
template <typename T, typename Read>
std::optional<T> decode(const Attribute* a, Read read) {
  if (!a) return std::nullopt;
  Lexer lex(a->value);
  T out{};
  ValueError err;
  if (!read(lex, out, err)) return std::nullopt;
  return out;
}
template <typename T, typename Read>
std::optional<T> decode(const Instruction& inst, AttrId id, Read read) {
  return decode<T>(inst.attribute(id), read);
}

std::optional<std::vector<KeyValue>> key_values(const Attribute* a) {
  return decode<std::vector<KeyValue>>(
      a, [](Lexer& l, std::vector<KeyValue>& v, ValueError& e) { return read_key_values(l, v, e); });
}

}  // namespace

std::optional<std::int64_t> int_attr(const Instruction& inst, AttrId id) {
  return decode<std::int64_t>(inst, id, [](Lexer& l, std::int64_t& v, ValueError& e) { return read_int(l, v, e); });
}
std::optional<Ints> ints_attr(const Instruction& inst, AttrId id) {
  return decode<Ints>(inst, id, [](Lexer& l, Ints& v, ValueError& e) { return read_int_list(l, v, e); });
}
std::optional<std::vector<Ints>> int_lists_attr(const Instruction& inst, AttrId id) {
  return decode<std::vector<Ints>>(inst, id, [](Lexer& l, std::vector<Ints>& v, ValueError& e) {
    return read_int_list_list(l, v, e);
  });
}
std::optional<bool> bool_attr(const Instruction& inst, AttrId id) {
  const Attribute* a = inst.attribute(id);
  if (!a) return std::nullopt;
  if (a->value == "true") return true;
  if (a->value == "false") return false;
  return std::nullopt;
}
std::optional<std::string_view> word_attr(const Instruction& inst, AttrId id) {
  const Attribute* a = inst.attribute(id);
  if (!a) return std::nullopt;
  std::string_view v = a->value;
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'')) v = v.substr(1, v.size() - 2);
  return v;
}
std::optional<Window> window_attr(const Instruction& inst) {
  return decode<Window>(inst, AttrId::kWindow, [](Lexer& l, Window& v, ValueError& e) { return read_window(l, v, e); });
}
std::optional<ConvDimLabels> dim_labels_attr(const Instruction& inst) {
  return decode<ConvDimLabels>(inst, AttrId::kDimLabels,
                               [](Lexer& l, ConvDimLabels& v, ValueError& e) { return read_dim_labels(l, v, e); });
}
std::optional<std::vector<SliceRange>> slice_attr(const Instruction& inst) {
  return decode<std::vector<SliceRange>>(inst, AttrId::kSlice, [](Lexer& l, std::vector<SliceRange>& v, ValueError& e) {
    return read_slice_ranges(l, v, e);
  });
}
std::optional<std::vector<PadDim>> padding_attr(const Instruction& inst) {
  return decode<std::vector<PadDim>>(inst, AttrId::kPadding, [](Lexer& l, std::vector<PadDim>& v, ValueError& e) {
    return read_padding(l, v, e);
  });
}
std::optional<ReplicaGroups> replica_groups_attr(const Instruction& inst) {
  return decode<ReplicaGroups>(inst, AttrId::kReplicaGroups,
                               [](Lexer& l, ReplicaGroups& v, ValueError& e) { return read_replica_groups(l, v, e); });
}


std::optional<OpMetadata> metadata_attr(const Instruction& inst) {
  auto fields = key_values(inst.attribute(AttrId::kMetadata));
  if (!fields) return std::nullopt;
  OpMetadata m;
  for (const KeyValue& kv : *fields) {
    if (kv.key == "op_type") m.op_type = kv.value;
    else if (kv.key == "op_name") m.op_name = kv.value;
    else if (kv.key == "source_file") m.source_file = kv.value;
    else if (kv.key == "source_line" && !parse_int(kv.value, m.source_line)) m.source_line = 0;
  }
  m.fields = std::move(*fields);
  return m;
}

std::optional<std::vector<KeyValue>> frontend_attributes(const Instruction& inst) {
  return key_values(inst.attribute(AttrId::kFrontendAttributes));
}
std::optional<std::vector<KeyValue>> frontend_attributes(const Module& module) {
  return key_values(module.attribute(AttrId::kFrontendAttributes));
}

std::optional<nlohmann::json> backend_config_json(const Instruction& inst) {
  const Attribute* a = inst.attribute(AttrId::kBackendConfig);
  if (!a) return std::nullopt;
  std::string text(a->value);
  if (text.starts_with('"')) {
    // A string holding JSON: decode the string first.
    const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_string()) return std::nullopt;
    text = j.get<std::string>();
  }
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

}  // namespace tpusim::hlo
