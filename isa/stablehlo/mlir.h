// The op tree of a StableHLO MLIR file: module -> func.func -> ops, ops
// with regions (reduce bodies, while cond/body, ...). Ops keep their tokens
// (outside regions); the converter reads operands, attributes and types from
// them, so one tree serves the pretty and the generic syntax.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "isa/stablehlo/lexer.h"

namespace tpusim::stablehlo {

struct Op;

struct BlockArg {
  std::string_view name;      // %arg0
  Token type;                 // kType token
  std::vector<Token> attrs;  // `{mhlo.sharding = "...", ...}` after the type (function arguments)
};

struct Region {
  std::vector<BlockArg> args;
  std::vector<Op> ops;
};

struct Op {
  std::string_view name;                  // stablehlo.add, func.return, ...
  std::vector<std::string_view> results;  // %0, or %0 with result_count > 1 for %0:2
  int result_count = 0;
  Token at;                   // the op name token (its position is the op's)
  std::vector<Token> tokens;  // everything after the name, regions excluded
  std::vector<Region> regions;
  std::string op_name;  // from loc("...") when present, or a `#loc` alias to look up
};

struct Func {
  std::string_view name;  // without '@'
  bool is_public = true;
  Token at;
  std::vector<BlockArg> args;
  std::vector<Token> result_types;
  Region body;
};

struct MlirModule {
  std::string name = "module";
  std::int64_t num_partitions = 1;
  std::int64_t num_replicas = 1;
  // `hlo.<name> = "<text>"` module attributes (printer.h): HLO module
  // attributes kept verbatim, name without the prefix, value unescaped.
  std::vector<std::pair<std::string, std::string>> hlo_attributes;
  std::vector<Func> funcs;
  // `#loc3 = loc("jit(f)/dot_general"(...))`: alias -> the name in it ("" when none).
  std::map<std::string, std::string, std::less<>> loc_aliases;
};

// Parses the module structure (no op semantics); errors name file:line:col.
// A file may hold several top-level modules, one after another.
Result<std::vector<MlirModule>> parse_mlir(std::string_view text, const std::string& file);

}  // namespace tpusim::stablehlo
