// Attribute dictionaries of MLIR ops and function arguments, read for the
// HLO attributes they carry: `hlo.<name> = "<HLO text>"`, `mhlo.sharding`,
// `mhlo.frontend_attributes`, string `backend_config` and `xla_shape`
// (names.h). The op-specific StableHLO attributes are read by convert.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "isa/stablehlo/lexer.h"

namespace tpusim::stablehlo {

// `name = value` in the `{...}` (or `<{...}>`) dictionary at the top level
// of `toks`: the name without quotes and the index of the value's first token.
struct AttrEntry {
  std::string name;
  std::size_t value = 0;
};
std::vector<AttrEntry> attr_entries(const std::vector<Token>& toks);

struct HloExtras {
  std::string attrs;  // ", sharding={...}, backend_config=\"...\", ..." in HLO text
  std::string shape;  // the HLO shape of `xla_shape`, or ""
  bool any_hlo = false;  // an `hlo.` or `xla_shape` entry: text printed from HLO
};
HloExtras hlo_extras(const std::vector<Token>& toks);
// True for the attribute names hlo_extras reads.
bool is_extra_attribute(std::string_view name);

// "f32[2,3]{0,1}" -> "f32[2,3]"; tuples element-wise.
std::string strip_layouts(std::string_view hlo_shape);
// The top-level elements of a tuple shape "(a, b)"; empty for an array.
std::vector<std::string> tuple_elements(std::string_view hlo_shape);

}  // namespace tpusim::stablehlo
