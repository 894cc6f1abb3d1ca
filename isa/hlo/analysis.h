// Roofline analysis of an HLO module and its renderers: the analytical
// baseline `tpusim analyze model.hlo --chip v5e` prints, and that every
// simulated result is later compared with.
//
// One row per top-level (entry computation) instruction; a fusion is one row.
// Instructions that cost nothing (parameter, constant, tuple,
// get-tuple-element, bitcast, …) are omitted. For each row:
//   bound time = max(flops / peak, bytes / hbm, collective bytes / ici)
// where peak is the matmul rate for the row's contraction input type if the
// row contains a dot/convolution, else the vector rate; transcendentals count
// as vector FLOPs for time. The module total time is the sum of the rows'
// bound times (ops run one after another); `bound` names the resource that
// accounts for most of that time.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/config.h"
#include "common/diagnostic.h"
#include "isa/hlo/cost_analysis.h"
#include "isa/hlo/ir.h"
#include "isa/hlo/parser.h"

namespace tpusim::hlo {

struct RooflineRates {
  // Matmul (MXU) peak per contraction input element type, FLOP/s.
  std::vector<std::pair<ElementType, double>> matmul_flops_per_second;
  double matmul_default_flops_per_second = 0;  // types not listed
  double vector_flops_per_second = 0;          // non-matmul work; 0 = matmul default
  double hbm_bytes_per_second = 0;
  double ici_bytes_per_second = 0;  // per chip, all links

  double matmul_rate(ElementType t) const;
  double vector_rate() const;
  // From a chip's derived figures (common/config.h): bf16/f16 -> bf16 peak,
  // f32/f64 -> f32, s8/u8 -> int8, f8 -> fp8, s4/u4 -> int4.
  static RooflineRates from_figures(const DerivedFigures& f);
  // A documented example (TPU v5e public figures: 197 TFLOP/s bf16,
  // 394 TOP/s int8, 819 GB/s HBM, 1600 Gbit/s ICI = 200 GB/s) for tests and
  // for running without a chip config.
  static RooflineRates example_chip();
};

enum class Bound { kNone, kCompute, kMemory, kCommunication };
std::string_view bound_name(Bound b);  // "none", "compute", "memory", "communication"

struct RooflineRow {
  std::string name;      // instruction name (no %)
  std::string opcode;    // as written
  std::string op_name;   // metadata op_name (the framework's name for it), "" when absent
  std::string category;  // op_category_name
  // The op profile's category (XProf's grouping): profile_category().
  std::string profile_category;
  int line = 0;          // 1-based line of the instruction in the HLO file
  OpCost cost;
  double intensity = 0;  // flops per byte accessed (0 if no bytes)
  double compute_time_s = 0, memory_time_s = 0, communication_time_s = 0;
  double bound_time_s = 0;
  Bound bound = Bound::kNone;
};

struct RooflineTotal {
  double flops = 0, transcendentals = 0, bytes_accessed = 0, collective_bytes = 0;
  double compute_time_s = 0, memory_time_s = 0, communication_time_s = 0;
  double bound_time_s = 0;
  Bound bound = Bound::kNone;
};

struct RooflineReport {
  std::string module_name;
  std::vector<RooflineRow> ops;
  RooflineTotal total;
  // `while` loops whose trip count is unknown: costed once (body + condition).
  std::vector<std::string> unknown_trip_loops;
};

RooflineReport roofline(const Module& module, const RooflineRates& rates);

// The op profile's category of an instruction, as XLA's profiler groups ops:
// "matmul" or "convolution" (a bare dot or convolution), "matmul fusion" or
// "convolution fusion" (a fusion around one), "loop fusion", "input fusion"
// (reductions), "output fusion" or "custom fusion" (by the fusion's kind),
// "collective" (and the -done halves of async collectives), "data formatting"
// (copies, transposes, reshapes, slices, gathers: no arithmetic),
// "elementwise", "reduction", "custom call", "control flow", "other".
std::string profile_category(const Instruction& inst);
// The same for a fusion that tpusim forms itself (an unoptimized module):
// from its members' opcodes (XLA's fusion kinds: a reduce makes an input
// fusion, anything else a loop fusion).
std::string profile_category_of_fusion(std::span<const Instruction* const> members);
// 1-based line numbers of offsets in a module's HLO text (built once: a
// big module has millions of lines).
class SourceLines {
 public:
  explicit SourceLines(std::string_view text);
  [[nodiscard]] int line(std::uint32_t offset) const;

 private:
  std::vector<std::uint32_t> starts_;  // offset of each line's first character
};

std::string render_text(const RooflineReport& r);
std::string render_json(const RooflineReport& r);  // {"module","ops":[…],"total":{…}}
std::string render_csv(const RooflineReport& r);   // header + one line per op + a "TOTAL" line

enum class AnalyzeFormat { kText, kJson, kCsv };
std::optional<AnalyzeFormat> parse_analyze_format(std::string_view s);  // "text" | "json" | "csv"

// The `tpusim analyze` entry point: parses the HLO file at `path` (every
// module of it, `// -----`-separated), runs the roofline with `rates` and
// renders it. Several modules render as consecutive text/CSV sections, or as
// {"modules": [report, …]} in JSON (a single module is the bare report).
// Returns the rendered text, or the parse/shape-check diagnostics (the CLI
// prints them with Diagnostic::format and exits non-zero). Warnings
// (parser.h, format_warnings) go to `*warnings` when it is given.
Result<std::string> analyze_hlo_file(const std::string& path, const RooflineRates& rates,
                                     AnalyzeFormat format, const ParseOptions& options = {},
                                     std::string* warnings = nullptr);
// Same on a file already parsed (the StableHLO front end converts, then parses).
Result<std::string> analyze_parsed(ParsedFile parsed, const RooflineRates& rates, AnalyzeFormat format,
                                   std::string* warnings = nullptr);
// Same on text already in memory (tests, stdin).
Result<std::string> analyze_hlo_text(std::string text, std::string file_name, const RooflineRates& rates,
                                     AnalyzeFormat format);

}  // namespace tpusim::hlo
