#include "isa/stablehlo/print_attributes.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fmt/format.h>

#include "isa/hlo/attribute_values.h"
#include "isa/stablehlo/spec_attributes.h"

namespace tpusim::stablehlo {
namespace {

using hlo::AttrId;
using hlo::Instruction;
using hlo::Opcode;
using Ints = std::vector<std::int64_t>;

std::string array(const Ints& v) { return fmt::format("array<i64{}{}>", v.empty() ? "" : ": ", fmt::join(v, ", ")); }
std::string list(const Ints& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

// `dense<[[a, b], [c, d]]> : tensor<2x2xi64>`; rows shorter than the
// longest are padded with -1, as XLA's importer pads uneven replica groups.
std::string matrix(const std::vector<Ints>& rows) {
  std::size_t width = 0;
  for (const Ints& r : rows) width = std::max(width, r.size());
  if (rows.empty() || width == 0) return "dense<> : tensor<0x0xi64>";
  std::vector<std::string> parts;
  for (Ints r : rows) {
    r.resize(width, -1);
    parts.push_back(list(r));
  }
  return fmt::format("dense<[{}]> : tensor<{}x{}xi64>", fmt::join(parts, ", "), rows.size(), width);
}

// A float as an MLIR float literal (which needs a '.').
std::string float_literal(std::string_view v) {
  std::string out(v);
  if (out.find('.') != std::string::npos || out.find_first_of("in") != std::string::npos) return out;
  const auto e = out.find_first_of("eE");
  out.insert(e == std::string::npos ? out.size() : e, ".0");
  return out;
}

// `b01f_01io->b01f` -> `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`.
std::string conv_labels(std::string_view labels) {
  const auto bracket = [](std::string_view part) {
    std::vector<std::string> chars;
    for (const char c : part) chars.emplace_back(1, c);
    return fmt::format("[{}]", fmt::join(chars, ", "));
  };
  const auto under = labels.find('_'), arrow = labels.find("->");
  if (under == std::string_view::npos || arrow == std::string_view::npos || arrow < under) return "";
  return fmt::format("{}x{}->{}", bracket(labels.substr(0, under)), bracket(labels.substr(under + 1, arrow - under - 1)),
                     bracket(labels.substr(arrow + 2)));
}

class Collector {
 public:
  explicit Collector(const Instruction& inst) : inst_(inst) {}
  SpecAttributes out;

  void add(std::string text, std::initializer_list<std::string_view> covers) {
    out.attrs.push_back(std::move(text));
    for (const auto c : covers) out.covers.emplace_back(c);
  }
  const hlo::Attribute* get(AttrId id) const { return inst_.attribute(id); }
  Ints ints(AttrId id) const { return hlo::ints_attr(inst_, id).value_or(Ints{}); }
  // `name = array<i64: ...>` from an HLO int list.
  void int_array(std::string_view name, AttrId id) {
    if (const auto* a = get(id)) add(fmt::format("{} = {}", name, array(ints(id))), {a->name});
  }
  void boolean(std::string_view name, AttrId id) {
    if (const auto* a = get(id)) add(fmt::format("{} = {}", name, hlo::bool_attr(inst_, id).value_or(false)), {a->name});
  }
  void integer(std::string_view name, AttrId id, std::string_view type) {
    if (const auto* a = get(id)) add(fmt::format("{} = {} : {}", name, hlo::int_attr(inst_, id).value_or(0), type), {a->name});
  }
  // `name = #stablehlo<kind VALUE>` from an HLO enum word.
  void word(std::string_view name, std::string_view kind, AttrId id) {
    if (const auto* a = get(id)) add(fmt::format("{} = #stablehlo<{} {}>", name, kind, hlo::word_attr(inst_, id).value_or("")), {a->name});
  }
  // The fields of #stablehlo.gather<...> / #stablehlo.scatter<...>: lists
  // (batching ones only when present, as MLIR leaves empty ones out), then index_vector_dim.
  std::string dimension_numbers(std::string_view kind, std::initializer_list<std::pair<std::string_view, AttrId>> fields,
                                std::vector<std::string_view>& names) {
    std::vector<std::string> parts;
    for (const auto& [name, id] : fields) {
      const auto* a = get(id);
      const bool batching = name.find("batching") != std::string_view::npos;
      if (a == nullptr && batching) continue;
      if (a != nullptr) names.push_back(a->name);
      if (batching && ints(id).empty()) continue;
      parts.push_back(fmt::format("{} = {}", name, list(ints(id))));
    }
    if (const auto* a = get(AttrId::kIndexVectorDim)) {
      names.push_back(a->name);
      parts.push_back(fmt::format("index_vector_dim = {}", hlo::int_attr(inst_, AttrId::kIndexVectorDim).value_or(0)));
    }
    return fmt::format("#stablehlo.{}<{}>", kind, fmt::join(parts, ", "));
  }
  void gather() {
    std::vector<std::string_view> names;
    const std::string dn = dimension_numbers("gather",
                                             {{"offset_dims", AttrId::kOffsetDims},
                                              {"collapsed_slice_dims", AttrId::kCollapsedSliceDims},
                                              {"operand_batching_dims", AttrId::kOperandBatchingDims},
                                              {"start_indices_batching_dims", AttrId::kStartIndicesBatchingDims},
                                              {"start_index_map", AttrId::kStartIndexMap}},
                                             names);
    out.attrs.push_back("dimension_numbers = " + dn);
    for (const auto n : names) out.covers.emplace_back(n);
    int_array("slice_sizes", AttrId::kSliceSizes);
    boolean("indices_are_sorted", AttrId::kIndicesAreSorted);
  }
  void scatter() {
    std::vector<std::string_view> names;
    const std::string dn = dimension_numbers("scatter",
                                             {{"update_window_dims", AttrId::kUpdateWindowDims},
                                              {"inserted_window_dims", AttrId::kInsertedWindowDims},
                                              {"input_batching_dims", AttrId::kInputBatchingDims},
                                              {"scatter_indices_batching_dims", AttrId::kScatterIndicesBatchingDims},
                                              {"scatter_dims_to_operand_dims", AttrId::kScatterDimsToOperandDims}},
                                             names);
    out.attrs.push_back("scatter_dimension_numbers = " + dn);
    for (const auto n : names) out.covers.emplace_back(n);
    boolean("indices_are_sorted", AttrId::kIndicesAreSorted);
    boolean("unique_indices", AttrId::kUniqueIndices);
  }
  // A window's fields as the specification names them for `op`.
  void window(bool convolution, bool dilations) {
    const auto* a = get(AttrId::kWindow);
    if (a == nullptr) return;
    const auto w = hlo::window_attr(inst_);
    if (!w) return;
    Ints size, stride, lhs, rhs;
    std::vector<Ints> pad;
    std::vector<std::string> reversal;
    bool reversed = false;
    for (const hlo::WindowDim& d : *w) {
      size.push_back(d.size), stride.push_back(d.stride), lhs.push_back(d.lhs_dilate), rhs.push_back(d.rhs_dilate);
      pad.push_back({d.pad_low, d.pad_high});
      reversal.emplace_back(d.reversal ? "true" : "false");
      reversed = reversed || d.reversal;
    }
    std::vector<std::string> parts;
    if (!convolution) parts.push_back("window_dimensions = " + array(size));  // a convolution's is its kernel's
    parts.push_back("window_strides = " + array(stride));
    if (dilations) {
      parts.push_back(fmt::format("{} = {}", convolution ? "lhs_dilation" : "base_dilations", array(lhs)));
      parts.push_back(fmt::format("{} = {}", convolution ? "rhs_dilation" : "window_dilations", array(rhs)));
    }
    parts.push_back("padding = " + matrix(pad));
    if (convolution && reversed) parts.push_back(fmt::format("window_reversal = array<i1: {}>", fmt::join(reversal, ", ")));
    for (auto& p : parts) out.attrs.push_back(std::move(p));
    out.covers.emplace_back(a->name);
  }
  void convolution() {
    const auto* labels = get(AttrId::kDimLabels);
    const std::string dn = labels != nullptr ? conv_labels(labels->value) : "";
    if (dn.empty()) return;  // stays `hlo.*`
    window(true, true);
    add(fmt::format("dimension_numbers = #stablehlo.conv<{}>", dn), {labels->name});
    integer("feature_group_count", AttrId::kFeatureGroupCount, "i64");
    integer("batch_group_count", AttrId::kBatchGroupCount, "i64");
  }
  // operand_precision={highest,highest} -> precision_config = [#stablehlo<precision HIGHEST>, ...].
  void precision() {
    const hlo::Attribute* a = inst_.attribute("operand_precision");
    if (a == nullptr) return;
    std::vector<std::string> parts;
    std::string_view v = a->value;
    while (!v.empty()) {
      const auto begin = v.find_first_not_of("{}, ");
      if (begin == std::string_view::npos) break;
      const auto end = v.find_first_of("{}, ", begin);
      std::string w(v.substr(begin, end - begin));
      for (char& ch : w) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      parts.push_back(fmt::format("#stablehlo<precision {}>", w));
      v = end == std::string_view::npos ? std::string_view() : v.substr(end);
    }
    add(fmt::format("precision_config = [{}]", fmt::join(parts, ", ")), {a->name});
  }
  void collective(const hlo::Module& m) {
    const Opcode op = inst_.opcode();
    if (const auto* a = get(AttrId::kReplicaGroups)) {
      const auto rg = hlo::replica_groups_attr(inst_);
      if (rg && !rg->mesh) {
        std::vector<Ints> rows(rg->groups.begin(), rg->groups.end());
        add("replica_groups = " + matrix(rows), {a->name});
      }
    }
    if (const auto* a = get(AttrId::kSourceTargetPairs)) {
      add("source_target_pairs = " + matrix(hlo::int_lists_attr(inst_, AttrId::kSourceTargetPairs).value_or(std::vector<Ints>{})),
          {a->name});
    }
    if (const auto* a = get(AttrId::kChannelId)) {
      // type 1: DEVICE_TO_DEVICE, what JAX's collectives carry.
      add(fmt::format("channel_handle = #stablehlo.channel_handle<handle = {}, type = 1>", hlo::int_attr(inst_, AttrId::kChannelId).value_or(0)),
          {a->name});
    }
    if (const auto* a = get(AttrId::kUseGlobalDeviceIds)) {
      if (hlo::bool_attr(inst_, AttrId::kUseGlobalDeviceIds).value_or(false)) add("use_global_device_ids", {a->name});
      else out.covers.emplace_back(a->name);  // false is the default
    }
    const auto* dims = get(AttrId::kDimensions);
    const Ints d = ints(AttrId::kDimensions);
    if (dims == nullptr || d.size() != 1) return;
    if (op == Opcode::kAllGather) add(fmt::format("all_gather_dim = {} : i64", d[0]), {dims->name});
    if (op == Opcode::kReduceScatter) add(fmt::format("scatter_dimension = {} : i64", d[0]), {dims->name});
    if (op == Opcode::kAllToAll) {
      // split_count: the group size (all devices when the groups are empty).
      std::int64_t count = 0;
      if (const auto rg = hlo::replica_groups_attr(inst_); rg && !rg->groups.empty()) count = static_cast<std::int64_t>(rg->groups[0].size());
      if (count == 0) {
        count = 1;
        for (const AttrId id : {AttrId::kNumPartitions, AttrId::kReplicaCount}) {
          std::int64_t n = 1;
          if (const auto* c = m.attribute(id); c != nullptr && hlo::parse_int(c->value, n)) count *= std::max<std::int64_t>(1, n);
        }
      }
      add(fmt::format("split_dimension = {0} : i64, concat_dimension = {0} : i64, split_count = {1} : i64", d[0], count),
          {dims->name});
    }
  }

 private:
  const Instruction& inst_;
};

}  // namespace

SpecAttributes print_spec_attributes(const Instruction& inst, const hlo::Module& module) {
  Collector c(inst);
  const std::string_view opcode = inst.opcode_text();
  switch (inst.opcode()) {
    case Opcode::kPad:
      if (const auto* a = c.get(AttrId::kPadding); a != nullptr) {
        const auto pads = hlo::padding_attr(inst);
        if (!pads || pads->empty()) break;
        Ints lo, hi, in;
        for (const hlo::PadDim& p : *pads) lo.push_back(p.low), hi.push_back(p.high), in.push_back(p.interior);
        c.add(fmt::format("edge_padding_low = {}, edge_padding_high = {}, interior_padding = {}", array(lo), array(hi), array(in)),
              {a->name});
      }
      break;
    case Opcode::kDynamicSlice: c.int_array("slice_sizes", AttrId::kDynamicSliceSizes); break;
    case Opcode::kGather: c.gather(); break;
    case Opcode::kScatter: c.scatter(); break;
    case Opcode::kSort:
      if (const auto* a = c.get(AttrId::kDimensions); a != nullptr && c.ints(AttrId::kDimensions).size() == 1) {
        c.add(fmt::format("dimension = {} : i64", c.ints(AttrId::kDimensions)[0]), {a->name});
      }
      c.boolean("is_stable", AttrId::kIsStable);
      break;
    case Opcode::kConvolution:
      c.convolution();
      c.precision();
      break;
    case Opcode::kDot: c.precision(); break;
    case Opcode::kCustomCall:
      if (const auto* a = c.get(AttrId::kApiVersion); a != nullptr && api_version_number(a->value) > 0) {
        c.add(fmt::format("api_version = {} : i32", api_version_number(a->value)), {a->name});
      }
      break;
    case Opcode::kRngBitGenerator:
      if (const auto* a = c.get(AttrId::kAlgorithm); a != nullptr && a->value.starts_with("rng_")) {
        std::string w(a->value.substr(4));
        for (char& ch : w) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        c.add(fmt::format("rng_algorithm = #stablehlo<rng_algorithm {}>", w), {a->name});
      }
      break;
    case Opcode::kReduceWindow: c.window(false, true); break;
    case Opcode::kSelectAndScatter: c.window(false, false); break;
    case Opcode::kReducePrecision:
      c.integer("exponent_bits", AttrId::kExponentBits, "i32");
      c.integer("mantissa_bits", AttrId::kMantissaBits, "i32");
      break;
    case Opcode::kBatchNormTraining:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormGrad:
      if (const auto* a = c.get(AttrId::kEpsilon)) c.add(fmt::format("epsilon = {} : f32", float_literal(a->value)), {a->name});
      c.integer("feature_index", AttrId::kFeatureIndex, "i64");
      break;
    case Opcode::kCholesky: c.boolean("lower", AttrId::kLower); break;
    case Opcode::kTriangularSolve:
      c.boolean("left_side", AttrId::kLeftSide);
      c.boolean("lower", AttrId::kLower);
      c.boolean("unit_diagonal", AttrId::kUnitDiagonal);
      c.word("transpose_a", "transpose", AttrId::kTransposeA);
      break;
    case Opcode::kFft:
      c.word("fft_type", "fft_type", AttrId::kFftType);
      c.int_array("fft_length", AttrId::kFftLength);
      break;
    default:
      if (is_spec_collective(opcode)) c.collective(module);
      break;
  }
  return std::move(c.out);
}

}  // namespace tpusim::stablehlo
