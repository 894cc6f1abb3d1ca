#include "isa/stablehlo/names.h"

#include <algorithm>
#include <array>
#include <utility>

#include "isa/hlo/opcode.h"

namespace tpusim::stablehlo {
namespace {

// HLO opcodes whose StableHLO op has another name (the rest differ only by
// '-' -> '_').
constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kRenamed = {{
    {"broadcast", "broadcast_in_dim"},
    {"dot", "dot_general"},
    {"opt-barrier", "optimization_barrier"},
    {"conditional", "case"},
}};

// HLO opcodes that have a StableHLO op (the StableHLO specification's op
// list); the others print in the mhlo dialect, as XLA's HLO importer does.
constexpr std::array<std::string_view, 89> kStablehlo = {
    "abs", "add", "after-all", "all-gather", "all-reduce", "all-to-all", "and", "atan2", "batch-norm-grad",
    "batch-norm-inference", "batch-norm-training", "bitcast-convert", "broadcast", "cbrt", "ceil", "cholesky",
    "clamp", "collective-broadcast", "collective-permute", "compare", "complex", "concatenate", "conditional",
    "constant", "convert", "convolution", "cosine", "count-leading-zeros", "custom-call", "divide", "dot",
    "dynamic-slice", "dynamic-update-slice", "exponential", "exponential-minus-one", "fft", "floor", "gather",
    "get-tuple-element", "imag", "iota", "is-finite", "log", "log-plus-one", "logistic", "map", "maximum",
    "minimum", "multiply", "negate", "not", "opt-barrier", "or", "pad", "partition-id", "popcnt", "power", "real",
    "reduce", "reduce-precision", "reduce-scatter", "reduce-window", "remainder", "replica-id", "reshape",
    "reverse", "rng", "rng-bit-generator", "round-nearest-afz", "round-nearest-even", "rsqrt", "scatter",
    "select", "select-and-scatter", "shift-left", "shift-right-arithmetic", "shift-right-logical", "sign",
    "sine", "slice", "sort", "sqrt", "subtract", "tan", "tanh", "transpose", "triangular-solve", "tuple", "while",
};

std::string dashes_to_underscores(std::string_view s) {
  std::string out(s);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

}  // namespace

std::string mlir_op_name(std::string_view hlo_opcode) {
  for (const auto& [hlo, mlir] : kRenamed) {
    if (hlo == hlo_opcode) return "stablehlo." + std::string(mlir);
  }
  const bool stable = std::find(kStablehlo.begin(), kStablehlo.end(), hlo_opcode) != kStablehlo.end();
  return (stable ? "stablehlo." : "mhlo.") + dashes_to_underscores(hlo_opcode);
}

std::string hlo_opcode_of(std::string_view mlir_name) {
  std::string_view op;
  if (mlir_name.starts_with("stablehlo.")) op = mlir_name.substr(10);
  else if (mlir_name.starts_with("mhlo.")) op = mlir_name.substr(5);
  else return "";
  if (op == "if") return "conditional";
  for (const auto& [hlo, mlir] : kRenamed) {
    if (mlir == op) return std::string(hlo);
  }
  std::string out(op);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

RegionAttrs region_attributes(std::string_view hlo_opcode, bool pred_selector) {
  if (hlo_opcode == "while") return {{"condition", "body"}, false};
  if (hlo_opcode == "select-and-scatter") return {{"select", "scatter"}, false};
  if (hlo_opcode == "conditional") {
    if (pred_selector) return {{"true_computation", "false_computation"}, false};
    return {{"branch_computations"}, true};
  }
  if (hlo_opcode == "custom-call") return {{"called_computations"}, true};
  if (hlo_opcode == "fusion" || hlo_opcode.starts_with("async-")) return {{"calls"}, false};
  return {{"to_apply"}, false};
}

std::string escape_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '"';
  return out;
}

std::string unescape_string(std::string_view quoted) {
  if (quoted.size() >= 2 && quoted.front() == '"' && quoted.back() == '"') quoted = quoted.substr(1, quoted.size() - 2);
  std::string out;
  for (std::size_t i = 0; i < quoted.size(); ++i) {
    if (quoted[i] == '\\' && i + 1 < quoted.size()) {
      const char n = quoted[++i];
      out += n == 'n' ? '\n' : n == 't' ? '\t' : n;
      continue;
    }
    out += quoted[i];
  }
  return out;
}

}  // namespace tpusim::stablehlo
