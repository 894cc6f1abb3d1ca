#include "sim/hlo_run.h"

#include <optional>

#include "isa/hlo/analysis.h"
#include "isa/hlo/parser.h"
#include "isa/lower/fusion.h"
#include "isa/lower/lower.h"
#include "isa/verifier.h"
#include "sim/collective_timer.h"
#include "sim/isolated.h"
#include "sim/report.h"
#include "sim/simulate.h"
#include "sim/spmd.h"

namespace tpusim {
namespace {

using nlohmann::json;

json failure(int code, std::string text) { return json{{"error", std::move(text)}, {"code", code}}; }

// Runs in the child: the report, or {"error", "code"}.
std::string compile_and_simulate(const std::string& path, const ChipConfig& chip, bool strict) {
  auto parsed = hlo::parse_hlo_file(path, {.strict = strict});
  if (!parsed.ok()) return failure(2, format_all(parsed.errors())).dump();
  const hlo::Module& module = *parsed.modules[0].value();
  const hlo::RooflineReport roofline = lower::roofline_as_lowered(module, hlo::RooflineRates::from_figures(derive(chip)));
  auto lowered = lower::lower_for_chip(module, chip);
  if (!lowered.ok()) return failure(1, format_all(lowered.errors())).dump();
  std::vector<isa::Program> programs;
  for (auto& l : *lowered) {
    const isa::VerifyReport check = isa::verify(l.program, chip);
    if (!check.ok()) {
      return failure(1, format_all(check.diagnostics()) + path + ": " + check.format_summary() + "\n").dump();
    }
    programs.push_back(std::move(l.program));
  }
  std::int64_t chips = chip.system.slices;
  for (const auto d : chip.system.topology) chips *= d;
  if (chips > 1) {
    // Replica groups that do not fit the system are bad input (exit 2).
    if (const auto bad = check_replica_groups(programs.front(), chips); !bad.empty()) {
      return failure(2, format_all(bad)).dump();
    }
  }
  // A multi-chip system runs through the SPMD runner (full or symmetric mode
  // by system.full_mode_max_chips).
  auto run = simulate_system(chip, std::move(programs), chips > 1);
  if (!run.ok()) return failure(1, format_all(run.errors())).dump();
  const SimResult* result = &run->sim;
  const std::optional<SpmdResult>& spmd = run->spmd;
  if (!result->finished) {
    std::string blocked;
    for (const auto& b : result->blocked) blocked += path + ": deadlock: " + b + "\n";
    return failure(1, blocked).dump();
  }
  json j = report_json(ReportInput{path, &chip, result, &roofline, spmd ? &*spmd : nullptr});
  j.erase("stats");
  j["approximations"] = lowered->front().report.approximations;
  j["hlo_warnings"] = hlo::format_warnings(parsed.warnings());
  return j.dump();
}

}  // namespace

HloRunOutcome run_hlo_isolated(const std::string& path, const ChipConfig& chip, bool strict) {
  HloRunOutcome o;
  std::string child_error;
  const auto text = run_isolated([&] { return compile_and_simulate(path, chip, strict); }, child_error);
  if (!text) {
    o.exit_code = 1;
    o.error = path + ": error: the simulation died: " + child_error + "\n";
    return o;
  }
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded()) {
    o.exit_code = 1;
    o.error = path + ": error: internal: unreadable result from the child process\n";
  } else if (j.contains("error")) {
    o.exit_code = j["code"].get<int>();
    o.error = j["error"].get<std::string>();
  } else {
    o.warnings = j.value("hlo_warnings", "");
    j.erase("hlo_warnings");
    o.report = std::move(j);
  }
  return o;
}

}  // namespace tpusim
