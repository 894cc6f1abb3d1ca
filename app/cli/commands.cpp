#include "app/cli/commands.h"

#include "app/pipeline.h"

#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <sstream>

#include "common/csv.h"
#include "app/validate/validate_collective.h"
#include "common/json_text.h"
#include "isa/assembler.h"
#include "isa/stablehlo/printer.h"
#include "isa/stablehlo/stablehlo.h"
#include "isa/hlo/analysis.h"
#include "isa/hlo/devices.h"
#include "isa/hlo/parser.h"
#include "isa/lower/fusion.h"
#include "isa/lower/lower.h"
#include "isa/printer.h"
#include "isa/verifier.h"
#include "app/cli/config_command.h"
#include "sim/collective_timer.h"
#include "app/report/report.h"
#include "sim/simulate.h"
#include "app/validate/validate_gemm.h"
#include "app/validate/validate_hlo.h"
#include "sim/spmd.h"
#include "app/validate/validate_systolic.h"

namespace tpusim::cli {
namespace {

bool read_text(const std::string& path, std::string& text, std::ostream& err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    err << fmt::format("{}: error: cannot open file\n", path);
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  return true;
}

}  // namespace

namespace {

// Loads the chip config with --system applied as system.topology; errors
// about that key name the flag.
bool load_chip_with_system(const CommonOptions& opt, const RunOptions& run, LoadedConfig& cfg, std::ostream& err) {
  if (run.system.empty()) {
    if (run.wrap == true) {
      err << "--wrap: error: needs --system (it wraps every axis of that shape)\n";
      return false;
    }
    if (run.wrap == false) {
      CommonOptions with = opt;
      with.overrides.push_back(wraparound_override(false, ""));
      return load_chip(with, cfg, err);
    }
    return load_chip(opt, cfg, err);
  }
  const std::string list = system_to_yaml_list(run.system);
  if (list.empty()) {
    err << fmt::format("--system: error: expected chips per axis like 8, 4x4 or 4x4x4 (1 to 3 axes, each >= 1), "
                       "got '{}'\n",
                       run.system);
    return false;
  }
  CommonOptions with = opt;
  const std::string override_text = "system.topology=" + list;
  with.overrides.push_back(override_text);
  if (auto w = wraparound_override(run.wrap, list); !w.empty()) with.overrides.push_back(w);
  auto r = load_config(with.chip, with.overrides);
  if (!r.ok()) {
    std::vector<Diagnostic> ds = r.errors();
    const std::string flag_layer = fmt::format("--set '{}'", override_text);
    for (auto& d : ds) {
      if (d.file == flag_layer) d.file = "--system " + run.system;
      if (auto at = d.message.find(flag_layer); at != std::string::npos) {
        d.message.replace(at, flag_layer.size(), "--system " + run.system);
      }
    }
    err << format_all(ds);
    return false;
  }
  cfg = std::move(r).value();
  return true;
}

}  // namespace

int cmd_check(const CommonOptions& opt, const std::string& input, std::ostream& out, std::ostream& err) {
  LoadedConfig cfg;
  if (!load_chip(opt, cfg, err)) return kUsageError;
  std::string text;
  if (!read_text(input, text, err)) return kUsageError;
  auto prog = isa::assemble(text, input);
  if (!prog.ok()) {
    err << format_all(prog.errors());
    return kUsageError;
  }
  const isa::VerifyReport report = isa::verify(*prog, cfg.chip, text);
  if (opt.format == Format::kJson) {
    nlohmann::json j;
    j["program"] = input;
    j["chip"] = cfg.chip.name;
    j["ok"] = report.ok();
    j["summary"] = report.format_summary();
    nlohmann::json issues = nlohmann::json::array();
    for (const auto& i : report.issues) {
      issues.push_back({{"kind", isa::name(i.kind)}, {"file", i.diagnostic.file}, {"line", i.diagnostic.line},
                        {"column", i.diagnostic.column}, {"message", i.diagnostic.message}});
    }
    j["issues"] = issues;
    out << json_text(j, 2) << "\n";
  } else {
    if (!report.ok()) out << format_all(report.diagnostics());
    out << input << ": " << report.format_summary() << "\n";
  }
  return report.ok() ? kOk : kFailure;
}

namespace {

// --system auto: as many chips as the module's devices (hlo::module_devices),
// shaped for the chip's torus; says what it chose and why.
std::optional<std::string> auto_system(const CommonOptions& opt, const std::string& input, std::ostream& err) {
  if (!app::is_hlo_path(input)) {
    err << "--system auto: error: needs an HLO module (it counts the module's devices)\n";
    return std::nullopt;
  }
  LoadedConfig base;
  if (!load_chip(opt, base, err)) return std::nullopt;
  auto parsed = stablehlo::parse_model_file(input, {.strict = opt.strict});
  if (!parsed.ok()) {
    err << format_all(parsed.errors());
    return std::nullopt;
  }
  const hlo::ModuleDevices devices = hlo::module_devices(*parsed.modules[0].value());
  const int axes = torus_axes(base.chip);
  const auto dims = system_shape_for(devices.count, axes);
  std::string shape;
  for (const auto d : dims) shape += fmt::format("{}{}", shape.empty() ? "" : "x", d);
  if (opt.verbosity >= 0) {
    err << fmt::format("{}: note: --system auto: {} device{} ({}): {} on {} ({} torus axes: ici.links {})\n", input,
                       devices.count, devices.count == 1 ? "" : "s", devices.source, shape, base.chip.name, axes,
                       base.chip.ici.links);
  }
  return shape;
}

// "0,5-7" -> {0, 5, 6, 7}: chips below `chips`, each once, in order.
bool parse_chip_list(const std::string& text, std::int64_t chips, std::vector<std::int64_t>& out, std::string& error) {
  std::set<std::int64_t> picked;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::int64_t lo = -1, hi = -1;
    const std::size_t dash = item.find('-');
    const auto number = [](const std::string& t, std::int64_t& v) {
      if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos || t.size() > 9) return false;
      v = std::stoll(t);
      return true;
    };
    const bool ok = dash == std::string::npos ? number(item, lo) && number(item, hi)
                                              : number(item.substr(0, dash), lo) && number(item.substr(dash + 1), hi);
    if (!ok || lo > hi) {
      error = fmt::format("'{}' is not a chip or a range of chips (e.g. 0,5-7)", item);
      return false;
    }
    if (hi >= chips) {
      error = fmt::format("chip {} is not in the system of {} chips (0-{})", hi, chips, chips - 1);
      return false;
    }
    for (std::int64_t c = lo; c <= hi; ++c) picked.insert(c);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  out.assign(picked.begin(), picked.end());
  return true;
}

}  // namespace

int cmd_run(const CommonOptions& opt, const std::string& input, const RunOptions& run_in, std::ostream& out,
            std::ostream& err) {
  RunOptions run = run_in;
  if (run.system == "auto") {
    auto shape = auto_system(opt, input, err);
    if (!shape) return kUsageError;
    run.system = *shape;
  }
  std::optional<SpmdMode> mode;
  if (run.mode == "full") {
    mode = SpmdMode::kFull;
  } else if (run.mode == "symmetric") {
    mode = SpmdMode::kSymmetric;
  } else if (!run.mode.empty()) {
    err << fmt::format("--mode: error: expected full or symmetric, got '{}'\n", run.mode);
    return kUsageError;
  }
  ProfileOptions profile;
  if (!parse_group_by(run.group_by, profile.group_by)) {
    err << fmt::format("--group-by: error: expected category, op_name, nested or none, got '{}'\n", run.group_by);
    return kUsageError;
  }
  if (run.top < 0 || run.depth < 1) {
    err << (run.top < 0
                ? fmt::format("--top: error: expected a count >= 0 (0 = all), got {}\n", run.top)
                : fmt::format("--depth: error: expected a number of grouping levels >= 1, got {}\n", run.depth));
    return kUsageError;
  }
  profile.top = run.top;
  profile.depth = run.depth;
  LoadedConfig cfg;
  if (!load_chip_with_system(opt, run, cfg, err)) return kUsageError;
  std::optional<ChipConfig> lower_chip;
  if (!load_lower_chip(opt, lower_chip, err)) return kUsageError;
  app::PipelineOptions po;
  po.lower_chip = lower_chip ? &*lower_chip : nullptr;
  po.multi_chip = chip_count(cfg.chip.system) > 1 || mode.has_value() || !run.system.empty();
  po.spmd.mode = mode;
  po.spmd.sim.trace_path = run.trace_path;
  po.spmd.sim.trace_merge_gap_s = run.trace_merge_us < 0 ? -1.0 : run.trace_merge_us * 1e-6;
  if (!(run.trace_budget >= 1)) {
    err << fmt::format("--trace-budget: error: expected a number of events >= 1, got {}\n", run.trace_budget);
    return kUsageError;
  }
  po.spmd.sim.trace_event_budget = run.trace_budget;
  if (!run.trace_chips.empty()) {
    std::string why;
    if (run.trace_path.empty()) {
      err << "--trace-chips: error: it selects the chips of a trace; give --trace FILE too\n";
      return kUsageError;
    }
    if (!parse_chip_list(run.trace_chips, chip_count(cfg.chip.system), po.spmd.sim.trace_chips, why)) {
      err << "--trace-chips: error: " << why << "\n";
      return kUsageError;
    }
  }
  // -q: the compiler's notes (approximations) are left out; its warnings stay.
  std::ostringstream quiet_notes;
  po.notes = opt.verbosity >= 0 ? &err : &quiet_notes;
  po.strict = opt.strict;
  app::StageError failure;
  auto done = app::run_pipeline(input, cfg.chip, po, failure);
  if (opt.verbosity < 0) {
    std::istringstream lines(quiet_notes.str());
    for (std::string line; std::getline(lines, line);) {
      if (line.find(": note: ") == std::string::npos) err << line << "\n";
    }
  }
  if (!done) {
    err << failure.text;
    return failure.code;
  }
  const SimResult* result = &done->run.sim;
  const std::optional<SpmdResult>& spmd = done->run.spmd;
  const auto& roofline = done->compiled.roofline;
  const ReportInput in{input, &done->device, result, roofline ? &*roofline : nullptr, spmd ? &*spmd : nullptr,
                       profile};
  const nlohmann::json j = report_json(in);
  const bool grouped = j.contains("groups");
  if (!write_output_file(opt, "report.json", json_text(j, 2) + "\n", err)) return kUsageError;
  if (!write_output_file(opt, "stats.json", json_text(result->stats.to_json(), 2) + "\n", err)) return kUsageError;
  if (!write_output_file(opt, "ops.csv", report_csv(j), err)) return kUsageError;
  if (grouped && !write_output_file(opt, "groups.csv", groups_csv(j["groups"]), err)) return kUsageError;
  if (opt.format == Format::kJson) {
    out << json_text(j, 2) << "\n";
  } else if (opt.format == Format::kCsv) {
    // The per-op (or grouped) rows, also with -q (they are the result).
    out << (grouped ? groups_csv(j["groups"]) : report_csv(j));
  } else if (opt.verbosity >= 0 || !result->finished) {
    out << report_text(in);
  } else {
    out << report_total_line(j);  // -q: the result alone
  }
  if (!result->finished) {
    for (const auto& b : result->blocked) err << fmt::format("{}: deadlock: {}\n", input, b);
    return kFailure;
  }
  return kOk;
}

int cmd_analyze(const CommonOptions& opt, const std::string& input, std::ostream& out, std::ostream& err) {
  LoadedConfig cfg;
  if (!load_chip(opt, cfg, err)) return kUsageError;
  const DerivedFigures device = derive_device(cfg.chip);
  const hlo::RooflineRates rates = hlo::RooflineRates::from_figures(device);
  const hlo::AnalyzeFormat f = opt.format == Format::kJson  ? hlo::AnalyzeFormat::kJson
                               : opt.format == Format::kCsv ? hlo::AnalyzeFormat::kCsv
                                                            : hlo::AnalyzeFormat::kText;
  std::string warnings;
  std::string notes;
  auto r = hlo::analyze_parsed(stablehlo::parse_model_file(input, {.strict = opt.strict}, &notes), rates, f, &warnings);
  err << notes << warnings;
  if (!r.ok()) {
    err << format_all(r.errors());
    return kUsageError;
  }
  if (!write_output_file(opt, opt.format == Format::kJson ? "analysis.json" : opt.format == Format::kCsv ? "analysis.csv" : "analysis.txt", *r, err)) {
    return kUsageError;
  }
  if (opt.format != Format::kText) {
    out << *r;
  } else {
    const std::int64_t cores = tensorcores_per_device(cfg.chip);
    const std::string per = cores == cfg.chip.tensorcores
                                ? std::string()
                                : fmt::format(" (one device: {} of the chip's {} TensorCores)", cores, cfg.chip.tensorcores);
    out << fmt::format("chip {}: bf16 peak {:.4g} TFLOP/s{}, HBM {:.4g} GB/s, ICI {:.4g} GB/s per chip\n", cfg.chip.name,
                       device.peak_flops_bf16 / 1e12, per, cfg.chip.hbm.bandwidth / 1e9,
                       device.ici_bytes_per_s_per_chip / 1e9)
        << *r;
  }
  return kOk;
}

int cmd_validate(const CommonOptions& opt, const std::string& kind, const std::string& file,
                 const std::string& tolerance, std::ostream& out, std::ostream& err) {
  double tol = 0.01;
  if (!tolerance.empty() && !parse_tolerance(tolerance, tol)) {
    err << fmt::format("--tolerance: error: expected a percentage like 1% or a fraction like 0.01, got '{}'\n",
                       tolerance);
    return kUsageError;
  }
  if (kind == "systolic") {
    return validate_systolic_csv(file, tolerance.empty() ? 0.01 : tol, opt.format == Format::kJson, out, err);
  }
  if (kind == "collective") {
    return interconnect::validate_collective_csv(file, tolerance.empty() ? 0.05 : tol, opt.format == Format::kJson,
                                                 out, err);
  }
  if (kind == "step") {
    return validate_step_csv(file, tolerance.empty() ? 0.10 : tol, opt.format == Format::kJson, out, err, opt.strict);
  }
  if (kind == "roofline") {
    return validate_roofline_csv(file, tolerance.empty() ? 0.5 : tol, opt.format == Format::kJson, out, err, opt.strict);
  }
  if (kind == "gemm") {  // measured hardware: report only unless a tolerance is given
    return validate_gemm_csv(file, tolerance.empty() ? -1.0 : tol, opt.format == Format::kJson, out, err);
  }
  err << fmt::format("tpusim validate: unknown kind '{}'; expected systolic, collective, step, roofline or gemm\n",
                     kind);
  return kUsageError;
}

}  // namespace tpusim::cli

namespace tpusim::cli {

int cmd_convert(const CommonOptions& opt, const std::string& input, const std::string& output, std::ostream& out,
                std::ostream& err) {
  auto parsed = stablehlo::parse_model_file(input, {.strict = opt.strict});
  if (!parsed.ok()) {
    err << format_all(parsed.errors());
    return kUsageError;
  }
  std::string text;  // a file of several HLO modules gives several MLIR modules, in order
  for (const auto& m : parsed.modules) text += (text.empty() ? "" : "// -----\n") + stablehlo::print_stablehlo(*m.value());
  if (output.empty()) {
    out << text;
    return kOk;
  }
  std::ofstream f(output, std::ios::binary);
  if (!f || !(f << text)) {
    err << fmt::format("{}: error: cannot write the StableHLO text\n", output);
    return kUsageError;
  }
  return kOk;
}

int cmd_lower(const CommonOptions& opt, const std::string& input, const std::string& output, int core,
              std::ostream& out, std::ostream& err) {
  LoadedConfig cfg;
  if (!load_chip(opt, cfg, err)) return kUsageError;
  const int cores = lower::megacore_cores(cfg.chip);
  if (core < 0 || core >= cores) {
    err << fmt::format("--core: error: expected a TensorCore of chip {} from 0 to {}, got {}\n", cfg.chip.name,
                       cores - 1, core);
    return kUsageError;
  }
  app::StageError failure;
  auto compiled = app::compile_hlo(input, cfg.chip, failure, &err, opt.strict);
  if (!compiled) {
    err << failure.text;
    return failure.code;
  }
  const isa::Program& prog = compiled->programs[static_cast<std::size_t>(core)];
  const lower::LowerReport& rep = compiled->reports[static_cast<std::size_t>(core)];
  // HBM capacity is not a limit for a compiled module (compile_hlo warned).
  ChipConfig unbounded = cfg.chip;
  unbounded.hbm.capacity = 0;
  const isa::VerifyReport check = isa::verify(prog, unbounded);
  if (opt.format == Format::kJson) {
    nlohmann::json notes = nlohmann::json::array();
    for (const auto& n : rep.notes) {
      notes.push_back({{"op", n.op}, {"opcode", n.opcode}, {"kind", lower::name(n.kind)}, {"message", n.message}});
    }
    nlohmann::json reused = nlohmann::json::array();
    for (const auto& r : rep.reused) reused.push_back({{"op", r.op}, {"instances", r.instances}});
    nlohmann::json j{{"input", input},
                     {"chip", cfg.chip.name},
                     {"core", core},
                     {"cores", cores},
                     {"instructions", prog.code.size()},
                     {"buffers", prog.buffers.size()},
                     {"sections", rep.sections},
                     {"lowered", rep.count(lower::NoteKind::kLowered)},
                     {"free", rep.count(lower::NoteKind::kFree)},
                     {"approximated", rep.count(lower::NoteKind::kApprox)},
                     {"approximations", rep.approximations},
                     {"dot_tilings", rep.tilings},
                     {"reused", reused},
                     {"notes", notes},
                     {"verify",
                      {{"ok", check.ok()},
                       {"summary", check.format_summary()},
                       {"peak_vmem_bytes", check.summary.peak_vmem_bytes}}},
                     {"output", output}};
    out << json_text(j, 2) << "\n";
  }
  // The program: to -o FILE, or to stdout when no JSON summary goes there.
  std::string text = fmt::format(
      "# tpusim lower {} --chip {}\n# {} instructions, {} buffers, {} sections; {} ops lowered, {} free, {} "
      "approximated\n",
      input, cfg.chip.name, prog.code.size(), prog.buffers.size(), rep.sections, rep.count(lower::NoteKind::kLowered),
      rep.count(lower::NoteKind::kFree), rep.count(lower::NoteKind::kApprox));
  if (cores > 1) {
    text += fmt::format("# megacore: the program of TensorCore {} of {} (each core takes its share of every "
                        "section; --core N writes the others)\n",
                        core, cores);
  }
  for (const auto& a : rep.approximations) text += "# " + a + "\n";
  for (const auto& t : rep.tilings) text += "# tiling " + t + "\n";
  for (const auto& r : rep.reused) {
    text += fmt::format("# reused {}: {} identical op{} not lowered again ({}{})\n", r.op, r.instances.size(),
                        r.instances.size() == 1 ? "" : "s", r.instances.front(),
                        r.instances.size() > 1 ? ", …, " + r.instances.back() : std::string());
  }
  text += isa::print(prog);
  if (!output.empty()) {
    std::ofstream f(output, std::ios::binary);
    if (!f || !(f << text)) {
      err << fmt::format("{}: error: cannot write the program\n", output);
      return kUsageError;
    }
  } else if (opt.format != Format::kJson) {
    out << text;
  }
  if (!write_output_file(opt, "lower.tasm", text, err)) return kUsageError;
  if (opt.verbosity >= 0 && opt.format != Format::kJson) {
    err << fmt::format("{}: {} instructions; {} approximations; verify: {}\n", input, prog.code.size(),
                       rep.approximations.size(), check.format_summary());
  }
  if (!check.ok()) {
    err << format_all(check.diagnostics());
    return kFailure;
  }
  return kOk;
}

}  // namespace tpusim::cli
