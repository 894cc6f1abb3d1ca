// The StableHLO specification's attributes of ops that convert.cpp reads
// through one table (pad, dynamic_slice, gather, scatter, sort, the
// collectives, reduce_window, select_and_scatter, reduce_precision,
// batch_norm_*, cholesky, triangular_solve, fft), as HLO attribute text:
// `edge_padding_low = array<i64: 0, 1>, ...` -> `, padding=0_2_0x1_3_0`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "isa/stablehlo/lexer.h"

namespace tpusim::stablehlo {

// The collectives whose specification attributes the table reads
// (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute,
// collective-broadcast).
bool is_spec_collective(std::string_view hlo_opcode);
// True when `hlo_opcode` has a row in the table.
bool has_spec_attributes(std::string_view hlo_opcode);
// True when `name` is a top-level attribute of that op the table reads.
bool is_spec_attribute(std::string_view hlo_opcode, std::string_view name);
// The HLO attributes (", name=value" ...) of an op's tokens; on a value it
// cannot read, false with `error` set.
bool spec_attributes(std::string_view hlo_opcode, const std::vector<Token>& toks, std::string& attrs, std::string& error);

// dot_general, dot, convolution: `precision_config = [#stablehlo<precision
// HIGHEST>, ...]` (pretty: `precision = [HIGHEST, ...]`) as
// `, operand_precision={highest,...}`; "" without one.
std::string precision_attributes(const std::vector<Token>& toks);
// custom_call: `api_version = 4 : i32` as `, api_version=API_VERSION_TYPED_FFI`; "" without one.
std::string api_version_attribute(const std::vector<Token>& toks);
// The number of an HLO api_version name (API_VERSION_TYPED_FFI -> 4), -1 if unknown.
int api_version_number(std::string_view hlo_name);

// convolution: `dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` (or
// `dimension_numbers = #stablehlo.conv<...>`), the window (pretty
// `window = {stride = [..], pad = [[..]], lhs_dilate = [..], rhs_dilate = [..]}`
// or window_strides/padding/lhs_dilation/rhs_dilation) and group counts
// as HLO's window, dim_labels and counts; the window size is the kernel's
// spatial dimensions.
bool conv_attributes(const std::vector<Token>& toks, const std::vector<std::int64_t>& kernel_dims, std::string& attrs,
                     std::string& error);

}  // namespace tpusim::stablehlo
