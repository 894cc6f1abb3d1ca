#include "app/hlo_run.h"

#include <optional>

#include "app/pipeline.h"
#include "common/isolated.h"
#include "app/report/report.h"
#include "common/json_text.h"

namespace tpusim {
namespace {

using nlohmann::json;

json failure(int code, std::string text) { return json{{"error", std::move(text)}, {"code", code}}; }

// Runs in the child: the report, or {"error", "code"}.
std::string compile_and_simulate(const std::string& path, const ChipConfig& chip, bool strict,
                                 const ChipConfig* lower_chip) {
  app::PipelineOptions o;
  // A multi-chip system runs through the SPMD runner (full or symmetric mode
  // by system.full_mode_max_chips).
  o.multi_chip = chip_count(chip.system) > 1;
  o.strict = strict;
  o.lower_chip = lower_chip;
  app::StageError error;
  auto done = app::run_pipeline(path, chip, o, error);
  if (!done) return json_text(failure(error.code, error.text));
  const SimResult& result = done->run.sim;
  if (!result.finished) {
    std::string blocked;
    for (const auto& b : result.blocked) blocked += path + ": deadlock: " + b + "\n";
    return json_text(failure(app::kFailure, blocked));
  }
  const auto& spmd = done->run.spmd;
  json j = report_json(ReportInput{path, &done->device, &result, &*done->compiled.roofline, spmd ? &*spmd : nullptr, {}});
  j.erase("stats");
  j["approximations"] = done->compiled.reports.front().approximations;
  j["hlo_warnings"] = done->compiled.hlo_warnings;
  return json_text(j);
}

}  // namespace

HloRunOutcome run_hlo_isolated(const std::string& path, const ChipConfig& chip, bool strict,
                               const ChipConfig* lower_chip) {
  HloRunOutcome o;
  std::string child_error;
  const auto text = run_isolated([&] { return compile_and_simulate(path, chip, strict, lower_chip); }, child_error);
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
