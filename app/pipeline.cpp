#include "app/pipeline.h"

#include <fmt/format.h>
#include <fstream>
#include <ostream>
#include <sstream>

#include "isa/assembler.h"
#include "isa/hlo/devices.h"
#include "isa/hlo/parser.h"
#include "isa/stablehlo/stablehlo.h"
#include "isa/lower/fusion.h"
#include "isa/verifier.h"
#include "common/units.h"
#include "sim/collective_timer.h"

namespace tpusim::app {

bool is_hlo_path(const std::string& path) {
  if (path.ends_with(".hlo") || path.ends_with(".txt") || path.ends_with(".hlotxt") || path.ends_with(".mlir")) return true;
  if (path.ends_with(".tasm")) return false;
  // StableHLO is recognized by content too (a `module`/`func.func` first, or stablehlo ops).
  std::ifstream in(path, std::ios::binary);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return stablehlo::looks_like_mlir(head);
}

std::string path_for_chips(std::string path, std::int64_t chips) {
  if (const auto at = path.find("{chips}"); at != std::string::npos) path.replace(at, 7, std::to_string(chips));
  return path;
}

std::optional<Compiled> compile_hlo(const std::string& path, const ChipConfig& chip, StageError& error,
                                    std::ostream* notes, bool strict, const ChipConfig* lower_chip) {
  if (lower_chip != nullptr && tensorcores_per_device(*lower_chip) != tensorcores_per_device(chip)) {
    error = {kUsageError,
             fmt::format("{}: error: --lower-for {} compiles for {} TensorCore(s) per device, the simulated chip {} "
                         "has {}\n",
                         path, lower_chip->name, tensorcores_per_device(*lower_chip), chip.name,
                         tensorcores_per_device(chip))};
    return std::nullopt;
  }
  std::string converted_notes;
  auto parsed = stablehlo::parse_model_file(path, {.strict = strict}, &converted_notes);
  const std::string warnings = hlo::format_warnings(parsed.warnings());
  if (notes != nullptr) *notes << converted_notes;
  if (notes != nullptr) *notes << warnings;
  if (!parsed.ok()) {
    error = {kUsageError, format_all(parsed.errors())};
    return std::nullopt;
  }
  const hlo::Module& module = *parsed.modules[0].value();
  if (parsed.modules.size() > 1 && notes != nullptr) {
    *notes << fmt::format("{}: note: the file holds {} modules; the first ({}) is compiled\n", path,
                          parsed.modules.size(), module.name());
  }
  Compiled c;
  c.hlo_warnings = warnings;
  const hlo::ModuleDevices devices = hlo::module_devices(module);
  c.devices = devices.count;
  c.devices_source = devices.source;
  c.hbm_need_bytes = hlo::parameter_bytes(module);
  // Architects ask what a bigger HBM would do: a module that does not fit
  // still runs (its buffers are placed past the capacity), with a warning.
  const double capacity = device_view(chip).hbm.capacity;
  if (notes != nullptr && static_cast<double>(c.hbm_need_bytes) > capacity) {
    *notes << fmt::format("{}: warning: the module's parameters alone need {} of HBM per device, more than the {} "
                          "of {}; simulated as if HBM were that large\n",
                          path, format_si(static_cast<double>(c.hbm_need_bytes), "B"),
                          format_si(capacity, "B"), chip.name);
  }
  c.roofline = lower::roofline_as_lowered(module, hlo::RooflineRates::from_figures(derive_device(chip)));
  lower::LowerOptions options;
  options.reuse_repeated_ops = chip.simulation.reuse;
  options.max_instructions = static_cast<std::size_t>(chip.simulation.max_program_instructions);
  auto lowered = lower::lower_for_chip(module, device_view(lower_chip != nullptr ? *lower_chip : chip), options);
  if (!lowered.ok()) {
    error = {kFailure, format_all(lowered.errors())};
    return std::nullopt;
  }
  if (notes != nullptr) {
    const auto& approx = lowered->front().report.approximations;
    for (std::size_t i = 0; i < approx.size() && i < 10; ++i) *notes << path << ": note: " << approx[i] << "\n";
    if (approx.size() > 10) *notes << fmt::format("{}: note: {} more approximations\n", path, approx.size() - 10);
  }
  for (auto& l : *lowered) {
    c.programs.push_back(std::move(l.program));
    c.reports.push_back(std::move(l.report));
  }
  return c;
}

std::optional<Compiled> compile_input(const std::string& path, const ChipConfig& chip, StageError& error,
                                      std::ostream* notes, bool strict, const ChipConfig* lower_chip) {
  if (is_hlo_path(path)) return compile_hlo(path, chip, error, notes, strict, lower_chip);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = {kUsageError, fmt::format("{}: error: cannot open file\n", path)};
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  Compiled c;
  c.source = ss.str();
  auto prog = isa::assemble(c.source, path);
  if (!prog.ok()) {
    error = {kUsageError, format_all(prog.errors())};
    return std::nullopt;
  }
  c.programs.push_back(std::move(prog).value());
  return c;
}

std::optional<PipelineRun> run_pipeline(const std::string& path, const ChipConfig& chip, const PipelineOptions& options,
                                        StageError& error) {
  auto compiled = compile_input(path, chip, error, options.notes, options.strict, options.lower_chip);
  if (!compiled) return std::nullopt;
  PipelineRun out;
  out.compiled = std::move(*compiled);
  out.device = device_view(chip);
  auto& programs = out.compiled.programs;
  // Run only legal programs: the verifier's findings would make the timing meaningless.
  // HBM capacity is not a limit for compiled modules (compile_hlo warned).
  ChipConfig unbounded = out.device;
  if (is_hlo_path(path)) unbounded.hbm.capacity = 0;
  double instructions = 0;  // per chip (every TensorCore's program)
  for (std::size_t c = 0; c < programs.size(); ++c) {
    const isa::VerifyReport report = isa::verify(programs[c], unbounded, out.compiled.source);
    // Full loop mode runs every iteration: a program that would take hours
    // (a huge dot's chunk loop, a long while) asks for extrapolation instead.
    const auto executed = report.summary.executed_instructions;
    instructions += static_cast<double>(executed);
    if (chip.simulation.loops == LoopMode::kFull &&
        executed > static_cast<std::uint64_t>(chip.simulation.full_instruction_limit)) {
      error = {kFailure,
               fmt::format("{}: error: the program would execute {:.3g} instructions with every loop iteration "
                           "simulated (about {} at 5 million a second), more than simulation.full_instruction_limit "
                           "({}); run with --loops extrapolate (steady loops are cut short and extrapolated) or "
                           "raise the limit\n",
                           path, static_cast<double>(executed),
                           format_quantity(static_cast<double>(executed) / 5e6, Dimension::kSeconds),
                           chip.simulation.full_instruction_limit)};
      return std::nullopt;
    }
    const bool only_deadlock = !report.ok() && report.count(isa::VerifyError::kDeadlock) == report.issues.size();
    if (!report.ok() && !only_deadlock) {
      const std::string which = programs.size() > 1 ? fmt::format(" (TensorCore {})", c) : "";
      error = {kFailure, format_all(report.diagnostics()) +
                             fmt::format("{}{}: {}; not simulated (see `tpusim check`)\n", path, which,
                                         report.format_summary())};
      return std::nullopt;
    }
  }
  if (!options.multi_chip && out.compiled.devices > 1 && options.notes != nullptr) {
    *options.notes << fmt::format(
        "{}: warning: the module runs on {} devices ({}); this run simulates one chip, its collectives timed on "
        "a one-chip placeholder (--system auto simulates all {})\n",
        path, out.compiled.devices, out.compiled.devices_source, out.compiled.devices);
  }
  if (options.multi_chip) {
    // Replica groups that do not fit the system are bad input, found before simulating.
    if (const auto bad = check_replica_groups(programs.front(), chip_count(chip.system)); !bad.empty()) {
      error = {kUsageError, format_all(bad)};
      return std::nullopt;
    }
  }
  SpmdOptions spmd = options.spmd;
  spmd.sim.trace_instructions_per_chip = instructions;
  if (!spmd.sim.trace_path.empty() && out.compiled.roofline) {
    for (const auto& row : out.compiled.roofline->ops) {
      if (!row.op_name.empty()) spmd.sim.trace_op_names.emplace(row.name, row.op_name);
    }
  }
  auto run = simulate_system(is_hlo_path(path) ? unbounded : out.device, std::move(programs), options.multi_chip, spmd);
  if (!run.ok()) {
    error = {kFailure, format_all(run.errors())};
    return std::nullopt;
  }
  out.run = std::move(run).value();
  return out;
}

}  // namespace tpusim::app
