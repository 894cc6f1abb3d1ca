// The vocabulary shared by the printer (HLO -> StableHLO, printer.h) and the
// reader (StableHLO -> HLO, convert.h): which MLIR op an HLO opcode prints
// as, which HLO attribute each region of an op stands for, and how values
// without a StableHLO attribute travel (`hlo.<name> = "<HLO text>"`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tpusim::stablehlo {

// HLO attributes without a StableHLO equivalent are printed as string
// attributes `hlo.<name> = "<the HLO value text>"` and read back verbatim.
inline constexpr std::string_view kHloAttrPrefix = "hlo.";
// A non-default layout (or bounded dynamic dims): the full HLO shape as a
// string, the attribute XLA's MHLO export reads back (`xla_shape`).
inline constexpr std::string_view kXlaShapeAttr = "xla_shape";

// "stablehlo.add", "stablehlo.broadcast_in_dim", "mhlo.fusion", ... for an
// HLO opcode as written (`conditional` is `stablehlo.case`; the printer
// uses `stablehlo.if` for a pred selector).
std::string mlir_op_name(std::string_view hlo_opcode);

// The HLO opcode of a `stablehlo.`/`mhlo.` op name ("" for other dialects).
std::string hlo_opcode_of(std::string_view mlir_name);

// The HLO attribute names of an op's regions, in region order:
// while -> condition, body; conditional -> true/false_computation (pred
// selector) or one branch_computations list; fusion, async-start/-update/-done
// -> calls;
// custom-call -> called_computations; everything else -> to_apply.
// A name listed once with `is_list` covers all regions ({%a, %b}).
struct RegionAttrs {
  std::vector<std::string> names;
  bool is_list = false;
};
RegionAttrs region_attributes(std::string_view hlo_opcode, bool pred_selector);

// MLIR string literal escaping (`"` `\` and newlines) and back.
std::string escape_string(std::string_view s);
std::string unescape_string(std::string_view quoted);  // takes the quotes off

}  // namespace tpusim::stablehlo
