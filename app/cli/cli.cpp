#include "app/cli/cli.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <functional>
#include <iostream>

#include "app/cli/commands.h"
#include "common/progress.h"
#include "app/cli/compare_command.h"
#include "app/cli/config_command.h"
#include "app/cli/scale_command.h"
#include "app/cli/sweep_command.h"

namespace tpusim::cli {
namespace {

constexpr const char* kExitCodes =
    "Exit codes: 0 success; 1 simulation or validation failure; 2 usage error or bad input "
    "(HLO, assembly, YAML, flags).";

void add_common_options(CLI::App& app, CommonOptions& o, bool needs_chip = true) {
  if (needs_chip) {
    app.add_option("--chip", o.chip, "Chip preset (v4, v5e, v5p, v6e, v7) or a chip YAML file")
        ->capture_default_str();
    app.add_option("--set", o.overrides,
                   "Override one config key, e.g. --set core.mxu.count=8 (repeatable; typed and "
                   "validated like the YAML)")
        ->type_name("KEY=VALUE");
  }
  app.add_option("--out", o.out_dir, "Directory to write the report and stats files into")->type_name("DIR");
  app.add_option("--format", o.format, "Output format")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, Format>{{"text", Format::kText}, {"json", Format::kJson}, {"csv", Format::kCsv}},
          CLI::ignore_case))
      ->default_str("text");
  app.add_flag_function("-v,--verbose", [&o](std::int64_t n) { o.verbosity += static_cast<int>(n); },
                        "More detail (repeatable)");
  app.add_flag_function("-q,--quiet", [&o](std::int64_t) { o.verbosity = -1; }, "Only errors and the result");
}

// --loops full|extrapolate: the simulation.loops key (docs/lowering.md, "Control flow").
void add_loops_option(CLI::App& app, CommonOptions& o) {
  app.add_option_function<std::string>(
         "--loops", [&o](const std::string& v) { o.overrides.push_back("simulation.loops=" + v); },
         "full: simulate every loop iteration (exact; default) | extrapolate: stop once iterations reach a steady "
         "state and account for the rest (long loops; sets simulation.loops)")
      ->check(CLI::IsMember({"full", "extrapolate"}))
      ->type_name("MODE");
}

// --no-reuse: the simulation.reuse key (docs/lowering.md, "Reuse").
void add_reuse_option(CLI::App& app, CommonOptions& o) {
  app.add_flag_function(
      "--no-reuse", [&o](std::int64_t) { o.overrides.emplace_back("simulation.reuse=false"); },
      "Compile and simulate every op, also those identical to an earlier one (by default a repeated op is "
      "compiled once and its copies charged its simulated time; sets simulation.reuse)");
}

// --lower-for on the commands that compile and simulate HLO.
void add_lower_for_option(CLI::App& app, CommonOptions& o) {
  app.add_option("--lower-for", o.lower_for,
                 "Compile for this chip (a preset or chip YAML, without --set) and simulate on the configured one: "
                 "a what-if then moves only the hardware, not the compiler's tiling")
      ->type_name("CHIP");
}

// --strict on every command that reads HLO (docs/hlo.md, "Lax and strict").
void add_strict_option(CLI::App& app, CommonOptions& o) {
  app.add_flag("--strict", o.strict,
               "Check HLO as XLA's verifier does: a stated shape that differs from the inferred one is an error, "
               "not a warning");
}

}  // namespace

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "tpusim: a cycle-approximate TPU architecture simulator.\n"
      "Reads XLA HLO or tpusim assembly, runs it on a configurable TPU-like chip, and reports where time goes."};
  app.name("tpusim");
  app.footer(kExitCodes);
  app.set_version_flag("--version", std::string("tpusim ") + TPUSIM_VERSION);
  app.require_subcommand(1);

  CommonOptions opt;
  std::function<int()> action;
  std::string input;

  auto* run_cmd = app.add_subcommand("run", "Compile (HLO) or assemble (.tasm) a program and simulate it");
  run_cmd->add_option("input", input, "model.hlo or prog.tasm")->required();
  add_common_options(*run_cmd, opt);
  RunOptions run_opt;
  run_cmd->add_option("--trace", run_opt.trace_path, "Write a Chrome/Perfetto trace (JSON) of every unit")
      ->type_name("FILE");
  run_cmd->add_option("--trace-merge-us", run_opt.trace_merge_us,
                      "Merge consecutive same-op slices on a track closer than this (microseconds)")
      ->capture_default_str();
  // Multi-chip SPMD runs (issue 7; docs/spmd.md).
  run_cmd->add_option("--system", run_opt.system,
                      "Chips per ICI axis, e.g. 8, 4x4 or 4x4x4 (sets system.topology); auto: as many chips as the "
                      "HLO module's devices (num_partitions x replica_count, else its replica groups), shaped for "
                      "the chip's torus")
      ->type_name("AxBxC");
  run_cmd->add_flag_callback("--wrap", [&] { run_opt.wrap = true; },
                             "Every axis of --system wraps around (a torus; default: system.wraparound, else the "
                             "chip's system.wrap_rule)");
  run_cmd->add_flag_callback("--no-wrap", [&] { run_opt.wrap = false; }, "No axis wraps around (a mesh)");
  run_cmd->add_option("--mode", run_opt.mode, "full | symmetric (default: full up to 256 chips, then symmetric)")
      ->type_name("MODE");
  add_loops_option(*run_cmd, opt);
  add_strict_option(*run_cmd, opt);
  add_reuse_option(*run_cmd, opt);
  add_lower_for_option(*run_cmd, opt);
  run_cmd->callback([&] { action = [&] { return cmd_run(opt, input, run_opt, out, err); }; });

  auto* analyze = app.add_subcommand("analyze", "Roofline analysis of an HLO module (FLOPs, bytes, bound per op)");
  analyze->add_option("input", input, "model.hlo")->required();
  add_common_options(*analyze, opt);
  add_strict_option(*analyze, opt);
  analyze->callback([&] { action = [&] { return cmd_analyze(opt, input, out, err); }; });

  auto* lower = app.add_subcommand("lower", "Compile an HLO module to tpusim assembly");
  lower->add_option("input", input, "model.hlo")->required();
  add_common_options(*lower, opt);
  add_strict_option(*lower, opt);
  add_reuse_option(*lower, opt);
  std::string lower_output;
  lower->add_option("-o,--output", lower_output, "Write the program here (default: stdout)")->type_name("FILE.tasm");
  int lower_core = 0;
  lower->add_option("--core", lower_core,
                    "Megacore chips (v4, v5p): write TensorCore N's program (each core takes a share of every "
                    "section; default 0)")
      ->type_name("N");
  lower->callback([&] { action = [&] { return cmd_lower(opt, input, lower_output, lower_core, out, err); }; });

  auto* check = app.add_subcommand("check", "Verify an assembly program (bounds, hazards, deadlocks)");
  check->add_option("input", input, "prog.tasm")->required();
  add_common_options(*check, opt);
  check->callback([&] { action = [&] { return cmd_check(opt, input, out, err); }; });

  // Design-space sweeps (app/cli/sweep_command.h, docs/sweeps.md).
  auto* sweep = app.add_subcommand("sweep", "Run a design-space sweep from a YAML spec (see `sweep export|report`)");
  SweepOptions sweep_opt;
  sweep->add_option("spec", sweep_opt.spec, "sweep.yaml");
  add_common_options(*sweep, opt, false);
  sweep->footer(sweep_help_footer());
  sweep->add_option("-j,--jobs", sweep_opt.jobs, "Points run at once (default: number of cores; under mpirun 1 per rank)");
  sweep->add_option("--timeout", sweep_opt.timeout, "Per-point timeout, e.g. 30 s (default: the spec's)");
  sweep->add_flag("--resume", sweep_opt.resume, "Skip points already in the results file");
  sweep->add_option("--shard", sweep_opt.shard, "Run only shard K of N (K/N, 0-based; default from SLURM_ARRAY_TASK_*)");
  sweep->add_option("--results", sweep_opt.results, "JSON Lines results file (default: <spec>.jsonl)")->type_name("FILE");
  auto* sweep_export = sweep->add_subcommand("export", "Write sweep results (JSON Lines) as CSV");
  sweep_export->add_option("results", sweep_opt.inputs, "results.jsonl ...")->required();
  sweep_export->add_option("-o,--output", sweep_opt.output, "CSV file (default: stdout)")->type_name("FILE");
  sweep_export->callback([&] { action = [&] { return cmd_sweep_export(opt, sweep_opt, out, err); }; });
  auto* sweep_report = sweep->add_subcommand("report", "Best points, Pareto front and sensitivity of sweep results");
  sweep_report->add_option("results", sweep_opt.inputs, "results.jsonl ...")->required();
  add_common_options(*sweep_report, opt, false);
  sweep_report->callback([&] { action = [&] { return cmd_sweep_report(opt, sweep_opt, out, err); }; });
  sweep->callback([&] {
    if (!sweep->get_subcommands().empty()) return;
    if (sweep_opt.spec.empty()) throw CLI::RequiredError("spec");
    action = [&] { return cmd_sweep(opt, sweep_opt, out, err); };
  });

  auto* validate = app.add_subcommand("validate", "Compare tpusim against reference data (systolic, collective, step, roofline, gemm)");
  std::string kind;
  validate->add_option("kind", kind,
                       "systolic | collective | step | roofline | gemm (measured TPU GEMMs: a per-series table of "
                       "errors; fails only with --tolerance)")
      ->required();
  validate->add_option("file", input,
                        "reference CSV (collective: optional named columns tolerance, slices, "
                        "dcn_bytes_per_s_per_chip, dcn_latency_s, algorithm; see docs/interconnect.md)")
      ->required();
  std::string tolerance;
  validate->add_option("--tolerance", tolerance, "Largest allowed relative error, e.g. 1% or 0.01 (default: per kind)");
  add_common_options(*validate, opt, false);
  add_strict_option(*validate, opt);
  validate->callback([&] { action = [&] { return cmd_validate(opt, kind, input, tolerance, out, err); }; });

  auto* compare = app.add_subcommand(
      "compare", "Compare two HLO modules on one chip, or one module on two chips (--chip A --chip B)");
  std::vector<std::string> pair;
  std::vector<std::string> compare_chips;
  compare->add_option("inputs", pair, "a.hlo [b.hlo]")->expected(1, 2)->required();
  compare
      ->add_option("--chip", compare_chips,
                   "Chip preset (v4, v5e, v5p, v6e, v7) or a chip YAML file; give it twice to run side a on the "
                   "first and side b on the second (default v5e)")
      ->type_name("CHIP");
  compare->add_option("--set", opt.overrides,
                      "Override one config key on both sides, e.g. --set core.mxu.count=8 (repeatable)")
      ->type_name("KEY=VALUE");
  add_common_options(*compare, opt, false);
  add_loops_option(*compare, opt);
  add_strict_option(*compare, opt);
  add_reuse_option(*compare, opt);
  add_lower_for_option(*compare, opt);
  compare->callback([&] { action = [&] { return cmd_compare(opt, pair, compare_chips, out, err); }; });

  auto* scale = app.add_subcommand("scale", "Scaling study of a sharded module over several system sizes");
  scale->add_option("input", input, "model.hlo, or model.{chips}.hlo for one module per size")->required();
  add_common_options(*scale, opt);
  ScaleOptions scale_opt;
  scale->add_option("--systems", scale_opt.systems, "System shapes to run, e.g. 2x2,4x4,8x8")
      ->type_name("LIST")
      ->required();
  scale->add_flag_callback("--wrap", [&] { scale_opt.wrap = true; }, "Every axis of every shape wraps around (a torus)");
  scale->add_flag_callback("--no-wrap", [&] { scale_opt.wrap = false; },
                           "No axis wraps (a mesh; default: the chip's system.wrap_rule)");
  scale->add_flag("--strong", scale_opt.strong, "Efficiency as strong scaling: t1*chips1 / (t*chips) (default: weak, t1/t)");
  scale->add_option("--mode", scale_opt.mode, "full | symmetric (default: full up to 256 chips, then symmetric)")
      ->type_name("MODE");
  add_loops_option(*scale, opt);
  add_strict_option(*scale, opt);
  add_reuse_option(*scale, opt);
  scale->callback([&] { action = [&] { return cmd_scale(opt, input, scale_opt, out, err); }; });

  auto* config = app.add_subcommand("config", "Show, describe and document chip configurations");
  config->require_subcommand(1);
  auto* show = config->add_subcommand("show", "Print the effective config, where each value came from, and derived peaks");
  add_common_options(*show, opt);
  show->callback([&] { action = [&] { return config_show(opt, out, err); }; });
  auto* describe = config->add_subcommand("describe", "List every config key with its unit, default, range and meaning");
  add_common_options(*describe, opt, false);
  describe->callback([&] { action = [&] { return config_describe(opt, out); }; });
  auto* docs = config->add_subcommand("docs", "Print docs/config.md (the Markdown key reference)");
  docs->callback([&] {
    action = [&] {
      out << config_reference_markdown();
      return static_cast<int>(kOk);
    };
  });

  std::vector<std::string> reversed(args.rbegin(), args.rend() - (args.empty() ? 0 : 1));
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    app.exit(e, out, err);
    return kUsageError;
  }
  if (!action) return kUsageError;
  // Progress of long runs: on a terminal's stderr only, never with -q.
  const bool progress = &err == &std::cerr && opt.verbosity >= 0 && ::isatty(STDERR_FILENO) == 1;
  if (progress) Progress::global().enable(&err);
  const int code = action();
  if (progress) Progress::global().disable();
  return code;
}

int run(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  return run(args, std::cout, std::cerr);
}

}  // namespace tpusim::cli
