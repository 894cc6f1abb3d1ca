#include "sim/cli/commands.h"

#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "common/csv.h"
#include "interconnect/validate_collective.h"
#include "isa/assembler.h"
#include "isa/hlo/analysis.h"
#include "isa/hlo/parser.h"
#include "isa/lower/fusion.h"
#include "isa/lower/lower.h"
#include "isa/printer.h"
#include "isa/verifier.h"
#include "sim/cli/config_command.h"
#include "sim/collective_timer.h"
#include "sim/report.h"
#include "sim/simulate.h"
#include "sim/validate_hlo.h"
#include "sim/spmd.h"
#include "sim/validate_systolic.h"

namespace tpusim::cli {
namespace {

bool has_suffix(const std::string& s, std::string_view suffix) { return s.ends_with(suffix); }

bool is_hlo(const std::string& path) {
  return has_suffix(path, ".hlo") || has_suffix(path, ".txt") || has_suffix(path, ".hlotxt");
}

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

std::optional<std::vector<lower::Lowered>> compile_hlo(const std::string& input, const ChipConfig& chip, int& code,
                                                       std::ostream& err, bool print_notes,
                                                       hlo::RooflineReport* roofline, bool strict) {
  auto parsed = hlo::parse_hlo_file(input, {.strict = strict});
  err << hlo::format_warnings(parsed.warnings());
  if (!parsed.ok()) {
    err << format_all(parsed.errors());
    code = kUsageError;
    return std::nullopt;
  }
  if (parsed.modules.size() > 1) {
    err << fmt::format("{}: note: the file holds {} modules; the first ({}) is compiled\n", input,
                       parsed.modules.size(), parsed.modules[0].value()->name());
  }
  if (roofline != nullptr) {
    *roofline = lower::roofline_as_lowered(*parsed.modules[0].value(), hlo::RooflineRates::from_figures(derive(chip)));
  }
  auto lowered = lower::lower_for_chip(*parsed.modules[0].value(), chip);
  if (!lowered.ok()) {
    err << format_all(lowered.errors());
    code = kFailure;
    return std::nullopt;
  }
  if (print_notes) {
    const auto& approx = lowered->front().report.approximations;
    for (std::size_t i = 0; i < approx.size() && i < 10; ++i) err << input << ": note: " << approx[i] << "\n";
    if (approx.size() > 10) err << fmt::format("{}: note: {} more approximations\n", input, approx.size() - 10);
  }
  code = kOk;
  return std::move(lowered).value();
}

namespace {

// Loads the chip config with --system applied as system.topology; errors
// about that key name the flag.
bool load_chip_with_system(const CommonOptions& opt, const RunOptions& run, LoadedConfig& cfg, std::ostream& err) {
  if (run.system.empty()) {
    if (run.wrap) {
      err << "--wrap: error: needs --system (it wraps every axis of that shape)\n";
      return false;
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
  if (run.wrap) with.overrides.push_back("system.wraparound=" + wrap_all_list(list));
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
    out << j.dump(2) << "\n";
  } else {
    if (!report.ok()) out << format_all(report.diagnostics());
    out << input << ": " << report.format_summary() << "\n";
  }
  return report.ok() ? kOk : kFailure;
}

int cmd_run(const CommonOptions& opt, const std::string& input, const RunOptions& run, std::ostream& out,
            std::ostream& err) {
  std::optional<SpmdMode> mode;
  if (run.mode == "full") {
    mode = SpmdMode::kFull;
  } else if (run.mode == "symmetric") {
    mode = SpmdMode::kSymmetric;
  } else if (!run.mode.empty()) {
    err << fmt::format("--mode: error: expected full or symmetric, got '{}'\n", run.mode);
    return kUsageError;
  }
  LoadedConfig cfg;
  if (!load_chip_with_system(opt, run, cfg, err)) return kUsageError;
  std::int64_t chips = cfg.chip.system.slices;
  for (auto d : cfg.chip.system.topology) chips *= d;
  const bool multi_chip = chips > 1 || mode.has_value() || !run.system.empty();
  std::string text;
  std::vector<isa::Program> programs;  // one per TensorCore of a megacore chip (HLO), else one
  hlo::RooflineReport roofline;
  if (is_hlo(input)) {
    // HLO: compile with isa/lower (issue 6), then run like a .tasm program.
    int code = kOk;
    auto lowered = compile_hlo(input, cfg.chip, code, err, true, &roofline, opt.strict);
    if (!lowered) return code;
    for (auto& l : *lowered) programs.push_back(std::move(l.program));
  } else {
    if (!read_text(input, text, err)) return kUsageError;
    auto prog = isa::assemble(text, input);
    if (!prog.ok()) {
      err << format_all(prog.errors());
      return kUsageError;
    }
    programs.push_back(std::move(prog).value());
  }
  // Run only legal programs: the verifier's findings would make the timing meaningless.
  for (std::size_t c = 0; c < programs.size(); ++c) {
    const isa::VerifyReport report = isa::verify(programs[c], cfg.chip, text);
    const bool only_deadlock = !report.ok() && report.count(isa::VerifyError::kDeadlock) == report.issues.size();
    if (!report.ok() && !only_deadlock) {
      err << format_all(report.diagnostics());
      const std::string which = programs.size() > 1 ? fmt::format(" (TensorCore {})", c) : "";
      err << fmt::format("{}{}: {}; not simulated (see `tpusim check`)\n", input, which, report.format_summary());
      return kFailure;
    }
  }
  if (multi_chip) {
    // Replica groups that do not fit the system are bad input (exit 2), found before simulating.
    if (const auto bad = check_replica_groups(programs.front(), chips); !bad.empty()) {
      err << format_all(bad);
      return kUsageError;
    }
  }
  SpmdOptions so;
  so.mode = mode;
  so.sim.trace_path = run.trace_path;
  so.sim.trace_merge_gap_s = run.trace_merge_us * 1e-6;
  auto sys = simulate_system(cfg.chip, std::move(programs), multi_chip, so);
  if (!sys.ok()) {
    err << format_all(sys.errors());
    return kFailure;
  }
  const SimResult* result = &sys->sim;
  const std::optional<SpmdResult>& spmd = sys->spmd;
  const ReportInput in{input, &cfg.chip, result, is_hlo(input) ? &roofline : nullptr, spmd ? &*spmd : nullptr};
  const nlohmann::json j = report_json(in);
  if (!write_output_file(opt, "report.json", j.dump(2) + "\n", err)) return kUsageError;
  if (!write_output_file(opt, "stats.json", result->stats.to_json().dump(2) + "\n", err)) return kUsageError;
  if (opt.format == Format::kJson) {
    out << j.dump(2) << "\n";
  } else if (opt.verbosity >= 0 || !result->finished) {
    out << report_text(in);
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
  const hlo::RooflineRates rates = hlo::RooflineRates::from_figures(derive(cfg.chip));
  const hlo::AnalyzeFormat f = opt.format == Format::kJson  ? hlo::AnalyzeFormat::kJson
                               : opt.format == Format::kCsv ? hlo::AnalyzeFormat::kCsv
                                                            : hlo::AnalyzeFormat::kText;
  std::string warnings;
  auto r = hlo::analyze_hlo_file(input, rates, f, {.strict = opt.strict}, &warnings);
  err << warnings;
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
    out << fmt::format("chip {}: bf16 peak {:.4g} TFLOP/s, HBM {:.4g} GB/s, ICI {:.4g} GB/s per chip\n", cfg.chip.name,
                       derive(cfg.chip).peak_flops_bf16 / 1e12, cfg.chip.hbm.bandwidth / 1e9,
                       derive(cfg.chip).ici_bytes_per_s_per_chip / 1e9)
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
  err << fmt::format("tpusim validate: unknown kind '{}'; expected systolic, collective, step or roofline\n", kind);
  return kUsageError;
}

}  // namespace tpusim::cli

namespace tpusim::cli {

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
  int code = kOk;
  auto lowered = compile_hlo(input, cfg.chip, code, err, /*print_notes=*/false, nullptr, opt.strict);
  if (!lowered) return code;
  const isa::Program& prog = (*lowered)[static_cast<std::size_t>(core)].program;
  const lower::LowerReport& rep = (*lowered)[static_cast<std::size_t>(core)].report;
  const isa::VerifyReport check = isa::verify(prog, cfg.chip);
  if (opt.format == Format::kJson) {
    nlohmann::json notes = nlohmann::json::array();
    for (const auto& n : rep.notes) {
      notes.push_back({{"op", n.op}, {"opcode", n.opcode}, {"kind", lower::name(n.kind)}, {"message", n.message}});
    }
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
                     {"notes", notes},
                     {"verify", {{"ok", check.ok()}, {"summary", check.format_summary()}}},
                     {"output", output}};
    out << j.dump(2) << "\n";
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
