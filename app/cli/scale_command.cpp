#include "app/cli/scale_command.h"

#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "app/pipeline.h"
#include "common/config_loader.h"
#include "common/json_text.h"
#include "isa/lower/lower.h"
#include "app/cli/commands.h"
#include "app/cli/config_command.h"
#include "common/isolated.h"
#include "sim/spmd.h"

namespace tpusim::cli {
namespace {

using nlohmann::json;

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t pos = 0;
  while (true) {
    const std::size_t c = text.find(',', pos);
    parts.push_back(text.substr(pos, c == std::string::npos ? std::string::npos : c - pos));
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  return parts;
}

// One system size, in a child process (one SystemC elaboration each).
json run_point(const CommonOptions& opt, const std::string& input, const std::string& list, std::optional<bool> wrap,
               std::optional<SpmdMode> mode) {
  std::vector<std::string> sets = opt.overrides;
  sets.push_back("system.topology=" + list);
  if (auto w = wraparound_override(wrap, list); !w.empty()) sets.push_back(w);
  auto cfg = load_config(opt.chip, sets);
  if (!cfg.ok()) return json{{"error", format_all(cfg.errors())}};
  app::PipelineOptions po;
  po.multi_chip = true;
  po.spmd.mode = mode;
  po.strict = opt.strict;
  app::StageError failure;
  auto done = app::run_pipeline(input, cfg->chip, po, failure);
  if (!done) return json{{"error", failure.text}};
  std::optional<SpmdResult>& r = done->run.spmd;
  r->sim = std::move(done->run.sim);
  if (!r->sim.finished) return json{{"error", "deadlock: " + (r->sim.blocked.empty() ? "" : r->sim.blocked[0])}};
  // The chip that sets the step time.
  ChipTime last;
  for (const ChipTime& c : r->chip_times) {
    if (c.seconds >= last.seconds) last = c;
  }
  // Bound: exposed communication, or the kind (compute / memory) of the ops
  // that took most of the remaining time.
  double compute = 0, memory = 0;
  const double peak = static_cast<double>(lower::megacore_cores(cfg->chip) * cfg->chip.core.mxu.count *
                                          cfg->chip.core.mxu.rows * cfg->chip.core.mxu.cols) *
                      2 * cfg->chip.clock * cfg->chip.core.mxu.rate.bf16;
  for (const auto& p : r->sim.provenance) {
    // A collective's time is communication (its HBM traffic included): exposed_s.
    if (p.stats.collective()) continue;
    const double c = peak > 0 ? p.stats.bf16_flops / peak : 0;  // each dtype at its own MXU rate
    const double m = cfg->chip.hbm.bandwidth > 0 ? p.stats.hbm_bytes / cfg->chip.hbm.bandwidth : 0;
    if (c == 0 && m == 0) continue;
    (c >= m ? compute : memory) += p.stats.attributed_s;
  }
  std::string bound = "compute";
  if (last.exposed_s >= std::max(compute, memory)) {
    bound = "communication";
  } else if (memory > compute) {
    bound = "memory";
  }
  return json{{"chips", r->chips},
              {"mode", spmd_mode_name(r->mode)},
              {"system", r->topology},
              {"step_time_s", r->sim.seconds},
              {"compute_s", last.compute_s},
              {"exposed_communication_s", last.exposed_s},
              {"bound", bound}};
}

}  // namespace

int cmd_scale(const CommonOptions& opt, const std::string& input, const ScaleOptions& s, std::ostream& out,
              std::ostream& err) {
  std::optional<SpmdMode> mode;
  if (s.mode == "full") {
    mode = SpmdMode::kFull;
  } else if (s.mode == "symmetric") {
    mode = SpmdMode::kSymmetric;
  } else if (!s.mode.empty()) {
    err << fmt::format("--mode: error: expected full or symmetric, got '{}'\n", s.mode);
    return kUsageError;
  }
  if (s.systems.empty()) {
    err << "--systems: error: expected a comma-separated list of system shapes, e.g. 2x2,4x4,8x8\n";
    return kUsageError;
  }
  std::vector<std::string> shapes = split_commas(s.systems);
  std::vector<std::string> lists;
  for (const auto& shape : shapes) {
    const std::string list = system_to_yaml_list(shape);
    if (list.empty()) {
      err << fmt::format("--systems: error: '{}' is not a system shape; expected chips per axis like 8, 4x4 or "
                         "4x4x4 (1 to 3 axes, each >= 1)\n",
                         shape);
      return kUsageError;
    }
    lists.push_back(list);
  }
  // One module for every size, or one per size: "{chips}" in the file name
  // is replaced by the size's chip count (model.{chips}.hlo -> model.64.hlo).
  std::vector<std::string> inputs;
  for (const auto& list : lists) {
    std::int64_t chips = 1;
    for (const auto& part : split_commas(list.substr(1, list.size() - 2))) chips *= std::stoll(part);
    inputs.push_back(app::path_for_chips(input, chips));
  }
  // Fail early on a bad chip, override or input file, once, before forking.
  LoadedConfig cfg;
  if (!load_chip(opt, cfg, err)) return kUsageError;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i > 0 && inputs[i] == inputs[i - 1]) continue;
    app::StageError failure;
    if (!app::compile_input(inputs[i], cfg.chip, failure, &err, opt.strict)) {
      err << failure.text;
      return failure.code;
    }
  }

  json rows = json::array();
  bool failed = false;
  double first_step = 0;
  std::int64_t first_chips = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    std::string error;
    auto text = run_isolated([&] { return json_text(run_point(opt, inputs[i], lists[i], s.wrap, mode)); }, error);
    json row = text ? json::parse(*text) : json{{"error", error}};
    row["shape"] = shapes[i];
    row["program"] = inputs[i];
    if (row.contains("error")) {
      failed = true;
    } else {
      const double step = row["step_time_s"].get<double>();
      if (first_chips == 0) {
        first_step = step;
        first_chips = row["chips"].get<std::int64_t>();
      }
      // Weak scaling (the per-chip work is fixed; extra chips run
      // data-parallel copies): efficiency = t_first / t. Strong scaling (one
      // global problem split over more chips): t_first·chips_first / (t·chips).
      const auto chips = static_cast<double>(row["chips"].get<std::int64_t>());
      row["scaling_efficiency"] =
          step <= 0 ? 0.0
          : s.strong ? first_step * static_cast<double>(first_chips) / (step * chips)
                     : first_step / step;
    }
    rows.push_back(row);
  }
  const std::string doc =
      json_text(json{{"program", input}, {"chip", cfg.chip.name}, {"scaling", s.strong ? "strong" : "weak"}, {"rows", rows}}, 2) +
      "\n";
  if (!write_output_file(opt, "scale.json", doc, err)) {
    return kUsageError;
  }
  if (opt.format == Format::kJson) {
    out << doc;
  } else if (opt.format == Format::kCsv) {
    out << "system,chips,mode,step_time_s,compute_s,exposed_communication_s,scaling_efficiency,bound,error\n";
    for (const auto& r : rows) {
      if (r.contains("error")) {
        out << fmt::format("{},,,,,,,,\"{}\"\n", r["shape"].get<std::string>(), r["error"].get<std::string>());
        continue;
      }
      out << fmt::format("{},{},{},{},{},{},{},{},\n", r["shape"].get<std::string>(), r["chips"].get<std::int64_t>(),
                         r["mode"].get<std::string>(), r["step_time_s"].get<double>(), r["compute_s"].get<double>(),
                         r["exposed_communication_s"].get<double>(), r["scaling_efficiency"].get<double>(),
                         r["bound"].get<std::string>());
    }
  } else {
    out << fmt::format("{} on {}\n", input, cfg.chip.name);
    out << "system      chips  mode        step time us   compute us   exposed comm us   efficiency   bound\n";
    for (const auto& r : rows) {
      if (r.contains("error")) {
        std::string e = r["error"].get<std::string>();
        if (const auto nl = e.find('\n'); nl != std::string::npos) e.resize(nl);
        out << fmt::format("{:<10}  error: {}\n", r["shape"].get<std::string>(), e);
        continue;
      }
      out << fmt::format("{:<10} {:>6}  {:<10} {:>13.3f} {:>12.3f} {:>17.3f} {:>11.1f}%   {}\n",
                         r["shape"].get<std::string>(), r["chips"].get<std::int64_t>(), r["mode"].get<std::string>(),
                         r["step_time_s"].get<double>() * 1e6, r["compute_s"].get<double>() * 1e6,
                         r["exposed_communication_s"].get<double>() * 1e6,
                         100 * r["scaling_efficiency"].get<double>(), r["bound"].get<std::string>());
    }
    out << (s.strong ? "efficiency: strong scaling vs the first size, t1*chips1 / (t*chips)\n"
                     : "efficiency: weak scaling vs the first size (the program's per-chip work is fixed; chips beyond "
                       "its replica groups run data-parallel copies)\n");
  }
  for (const auto& r : rows) {
    if (!r.contains("error")) continue;
    std::string e = r["error"].get<std::string>();
    if (!e.ends_with("\n")) e += "\n";
    err << fmt::format("--systems {}: {}", r["shape"].get<std::string>(), e);
  }
  return failed ? kFailure : kOk;
}

}  // namespace tpusim::cli
