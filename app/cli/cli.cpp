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

// What the command line sets; the subcommands' callbacks read it after parsing.
struct CliState {
  CliState(std::ostream& o, std::ostream& e) : out(o), err(e) {}
  std::ostream& out;
  std::ostream& err;
  CommonOptions opt;
  std::function<int()> action;
  std::string input;
  RunOptions run_opt;
  std::string lower_output;
  int lower_core = 0;
  SweepOptions sweep_opt;
  std::string kind;
  std::string tolerance;
  std::vector<std::string> pair;
  std::vector<std::string> compare_chips;
  ScaleOptions scale_opt;
};

void add_run_command(CLI::App& app, CliState& s) {
  auto* run_cmd = app.add_subcommand("run", "Compile (HLO) or assemble (.tasm) a program and simulate it");
  run_cmd->add_option("input", s.input, "model.hlo, model.mlir (StableHLO text) or prog.tasm")->required();
  add_common_options(*run_cmd, s.opt);
  run_cmd->add_option("--trace", s.run_opt.trace_path,
                      "Write a Chrome/Perfetto trace (JSON): per TensorCore an HLO-op track and every unit's track")
      ->type_name("FILE");
  run_cmd->add_option("--trace-chips", s.run_opt.trace_chips,
                      "Chips of a multi-chip run the trace shows, e.g. 0,5-7 (default: every simulated chip; each "
                      "TensorCore is a process with an HLO-op track and one track per unit)")
      ->type_name("LIST");
  run_cmd->add_option("--trace-merge-us", s.run_opt.trace_merge_us,
                      "Merge consecutive same-op slices on a track closer than this (microseconds; default: none, "
                      "unless the run would write more than --trace-budget events: then every run of one op's "
                      "slices)")
      ->type_name("US");
  run_cmd->add_option("--trace-budget", s.run_opt.trace_budget,
                      "Events a trace may hold before slices merge automatically (about 100 bytes each)")
      ->type_name("EVENTS")
      ->capture_default_str();
  // Multi-chip SPMD runs (docs/spmd.md).
  run_cmd->add_option("--system", s.run_opt.system,
                      "Chips per ICI axis, e.g. 8, 4x4 or 4x4x4 (sets system.topology); auto: as many chips as the "
                      "HLO module's devices (num_partitions x replica_count, else its replica groups), shaped for "
                      "the chip's torus")
      ->type_name("AxBxC");
  run_cmd->add_flag_callback("--wrap", [&s] { s.run_opt.wrap = true; },
                             "Every axis of --system wraps around (a torus; default: system.wraparound, else the "
                             "chip's system.wrap_rule)");
  run_cmd->add_flag_callback("--no-wrap", [&s] { s.run_opt.wrap = false; }, "No axis wraps around (a mesh)");
  run_cmd->add_option("--mode", s.run_opt.mode, "full | symmetric (default: full up to 256 chips, then symmetric)")
      ->type_name("MODE");
  run_cmd->add_option("--group-by", s.run_opt.group_by,
                      "Op profile grouping: category (XLA profiler categories), op_name (the framework's name "
                      "path, levels to --depth), nested (each op with the ops of the computations it runs, a while "
                      "loop's body ops under it, levels to --depth) or none (one row per HLO op)")
      ->type_name("BY")
      ->capture_default_str();
  run_cmd->add_option("--top", s.run_opt.top, "Show the N longest rows per level, the rest summed (0 = all)")
      ->type_name("N")
      ->capture_default_str();
  run_cmd->add_option("--depth", s.run_opt.depth,
                      "Levels shown with --group-by op_name (module > layer > op) or nested (op > body op)")
      ->type_name("D")
      ->capture_default_str();
  add_loops_option(*run_cmd, s.opt);
  add_strict_option(*run_cmd, s.opt);
  add_reuse_option(*run_cmd, s.opt);
  add_lower_for_option(*run_cmd, s.opt);
  run_cmd->callback([&s] { s.action = [&s] { return cmd_run(s.opt, s.input, s.run_opt, s.out, s.err); }; });
}

void add_analysis_commands(CLI::App& app, CliState& s) {
  auto* analyze = app.add_subcommand("analyze", "Roofline analysis of an HLO module (FLOPs, bytes, bound per op)");
  analyze->add_option("input", s.input, "model.hlo or model.mlir (StableHLO text)")->required();
  add_common_options(*analyze, s.opt);
  add_strict_option(*analyze, s.opt);
  analyze->callback([&s] { s.action = [&s] { return cmd_analyze(s.opt, s.input, s.out, s.err); }; });

  auto* lower = app.add_subcommand("lower", "Compile an HLO module to tpusim assembly");
  lower->add_option("input", s.input, "model.hlo or model.mlir (StableHLO text)")->required();
  add_common_options(*lower, s.opt);
  add_strict_option(*lower, s.opt);
  add_reuse_option(*lower, s.opt);
  lower->add_option("-o,--output", s.lower_output, "Write the program here (default: stdout)")->type_name("FILE.tasm");
  lower->add_option("--core", s.lower_core,
                    "Megacore chips (v4, v5p): write TensorCore N's program (each core takes a share of every "
                    "section; default 0)")
      ->type_name("N");
  lower->callback([&s] {
    s.action = [&s] { return cmd_lower(s.opt, s.input, s.lower_output, s.lower_core, s.out, s.err); };
  });

  auto* convert = app.add_subcommand("convert", "Print an HLO module as StableHLO (MLIR text)");
  convert->add_option("input", s.input, "model.hlo (or model.mlir: converted to HLO and printed back)")->required();
  add_common_options(*convert, s.opt);
  add_strict_option(*convert, s.opt);
  convert->add_option("-o,--output", s.lower_output, "Write the StableHLO here (default: stdout)")->type_name("FILE.mlir");
  convert->callback([&s] { s.action = [&s] { return cmd_convert(s.opt, s.input, s.lower_output, s.out, s.err); }; });

  auto* check = app.add_subcommand("check", "Verify an assembly program (bounds, hazards, deadlocks)");
  check->add_option("input", s.input, "prog.tasm")->required();
  add_common_options(*check, s.opt);
  check->callback([&s] { s.action = [&s] { return cmd_check(s.opt, s.input, s.out, s.err); }; });
}

void add_sweep_command(CLI::App& app, CliState& s) {
  // Design-space sweeps (app/cli/sweep_command.h, docs/sweeps.md).
  auto* sweep = app.add_subcommand("sweep", "Run a design-space sweep from a YAML spec (see `sweep export|report`)");
  sweep->add_option("spec", s.sweep_opt.spec, "sweep.yaml");
  add_common_options(*sweep, s.opt, false);
  sweep->footer(sweep_help_footer());
  sweep->add_option("-j,--jobs", s.sweep_opt.jobs, "Points run at once (default: number of cores; under mpirun 1 per rank)");
  sweep->add_option("--timeout", s.sweep_opt.timeout, "Per-point timeout, e.g. 30 s (default: the spec's)");
  sweep->add_flag("--resume", s.sweep_opt.resume, "Skip points already in the results file");
  sweep->add_option("--shard", s.sweep_opt.shard, "Run only shard K of N (K/N, 0-based; default from SLURM_ARRAY_TASK_*)");
  sweep->add_option("--results", s.sweep_opt.results, "JSON Lines results file (default: <spec>.jsonl)")->type_name("FILE");
  auto* sweep_export = sweep->add_subcommand("export", "Write sweep results (JSON Lines) as CSV");
  sweep_export->add_option("results", s.sweep_opt.inputs, "results.jsonl ...")->required();
  sweep_export->add_option("-o,--output", s.sweep_opt.output, "CSV file (default: stdout)")->type_name("FILE");
  sweep_export->callback([&s] { s.action = [&s] { return cmd_sweep_export(s.opt, s.sweep_opt, s.out, s.err); }; });
  auto* sweep_report = sweep->add_subcommand("report", "Best points, Pareto front and sensitivity of sweep results");
  sweep_report->add_option("results", s.sweep_opt.inputs, "results.jsonl ...")->required();
  add_common_options(*sweep_report, s.opt, false);
  sweep_report->callback([&s] { s.action = [&s] { return cmd_sweep_report(s.opt, s.sweep_opt, s.out, s.err); }; });
  sweep->callback([&s, sweep] {
    if (!sweep->get_subcommands().empty()) return;
    if (s.sweep_opt.spec.empty()) throw CLI::RequiredError("spec");
    s.action = [&s] { return cmd_sweep(s.opt, s.sweep_opt, s.out, s.err); };
  });
}

void add_validate_command(CLI::App& app, CliState& s) {
  auto* validate = app.add_subcommand("validate", "Compare tpusim against reference data (systolic, collective, step, roofline, gemm)");
  validate->add_option("kind", s.kind,
                       "systolic | collective | step | roofline | gemm (measured TPU GEMMs: a per-series table of "
                       "errors; fails only with --tolerance)")
      ->required();
  validate->add_option("file", s.input,
                        "reference CSV (collective: optional named columns tolerance, slices, "
                        "dcn_bytes_per_s_per_chip, dcn_latency_s, algorithm; see docs/interconnect.md)")
      ->required();
  validate->add_option("--tolerance", s.tolerance, "Largest allowed relative error, e.g. 1% or 0.01 (default: per kind)");
  add_common_options(*validate, s.opt, false);
  add_strict_option(*validate, s.opt);
  validate->callback([&s] {
    s.action = [&s] { return cmd_validate(s.opt, s.kind, s.input, s.tolerance, s.out, s.err); };
  });
}

void add_compare_command(CLI::App& app, CliState& s) {
  auto* compare = app.add_subcommand(
      "compare", "Compare two HLO modules on one chip, or one module on two chips (--chip A --chip B)");
  compare->add_option("inputs", s.pair, "a.hlo [b.hlo]")->expected(1, 2)->required();
  compare
      ->add_option("--chip", s.compare_chips,
                   "Chip preset (v4, v5e, v5p, v6e, v7) or a chip YAML file; give it twice to run side a on the "
                   "first and side b on the second (default v5e)")
      ->type_name("CHIP");
  compare->add_option("--set", s.opt.overrides,
                      "Override one config key on both sides, e.g. --set core.mxu.count=8 (repeatable)")
      ->type_name("KEY=VALUE");
  add_common_options(*compare, s.opt, false);
  add_loops_option(*compare, s.opt);
  add_strict_option(*compare, s.opt);
  add_reuse_option(*compare, s.opt);
  add_lower_for_option(*compare, s.opt);
  compare->callback([&s] { s.action = [&s] { return cmd_compare(s.opt, s.pair, s.compare_chips, s.out, s.err); }; });
}

void add_scale_command(CLI::App& app, CliState& s) {
  auto* scale = app.add_subcommand("scale", "Scaling study of a sharded module over several system sizes");
  scale->add_option("input", s.input, "model.hlo, or model.{chips}.hlo for one module per size")->required();
  add_common_options(*scale, s.opt);
  scale->add_option("--systems", s.scale_opt.systems, "System shapes to run, e.g. 2x2,4x4,8x8")
      ->type_name("LIST")
      ->required();
  scale->add_flag_callback("--wrap", [&s] { s.scale_opt.wrap = true; }, "Every axis of every shape wraps around (a torus)");
  scale->add_flag_callback("--no-wrap", [&s] { s.scale_opt.wrap = false; },
                           "No axis wraps (a mesh; default: the chip's system.wrap_rule)");
  scale->add_flag("--strong", s.scale_opt.strong, "Efficiency as strong scaling: t1*chips1 / (t*chips) (default: weak, t1/t)");
  scale->add_option("--mode", s.scale_opt.mode, "full | symmetric (default: full up to 256 chips, then symmetric)")
      ->type_name("MODE");
  add_loops_option(*scale, s.opt);
  add_strict_option(*scale, s.opt);
  add_reuse_option(*scale, s.opt);
  scale->callback([&s] { s.action = [&s] { return cmd_scale(s.opt, s.input, s.scale_opt, s.out, s.err); }; });
}

void add_config_command(CLI::App& app, CliState& s) {
  auto* config = app.add_subcommand("config", "Show, describe and document chip configurations");
  config->require_subcommand(1);
  auto* show = config->add_subcommand("show", "Print the effective config, where each value came from, and derived peaks");
  add_common_options(*show, s.opt);
  show->callback([&s] { s.action = [&s] { return config_show(s.opt, s.out, s.err); }; });
  auto* describe = config->add_subcommand("describe", "List every config key with its unit, default, range and meaning");
  add_common_options(*describe, s.opt, false);
  describe->callback([&s] { s.action = [&s] { return config_describe(s.opt, s.out); }; });
  auto* docs = config->add_subcommand("docs", "Print docs/config.md (the Markdown key reference)");
  docs->callback([&s] {
    s.action = [&s] {
      s.out << config_reference_markdown();
      return static_cast<int>(kOk);
    };
  });
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

  CliState s(out, err);
  add_run_command(app, s);
  add_analysis_commands(app, s);
  add_sweep_command(app, s);
  add_validate_command(app, s);
  add_compare_command(app, s);
  add_scale_command(app, s);
  add_config_command(app, s);

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
  if (!s.action) return kUsageError;
  // Progress of long runs: on a terminal's stderr only, never with -q.
  const bool progress = &err == &std::cerr && s.opt.verbosity >= 0 && ::isatty(STDERR_FILENO) == 1;
  if (progress) Progress::global().enable(&err);
  const int code = s.action();
  if (progress) Progress::global().disable();
  return code;
}

int run(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  return run(args, std::cout, std::cerr);
}

}  // namespace tpusim::cli
