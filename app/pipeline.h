// The one run pipeline every command uses: read the input (HLO is parsed and
// lowered for the chip; assembly is assembled), verify the programs, build
// the system from the config and simulate it. `tpusim run`, `compare`,
// `scale` and the step/roofline validators all go through run_pipeline();
// `lower` stops after compile_input().
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"
#include "isa/hlo/analysis.h"
#include "isa/lower/lower.h"
#include "isa/program.h"
#include "sim/spmd.h"

namespace tpusim::app {

// Process exit codes (README, `tpusim --help`).
enum ExitCode : int {
  kOk = 0,          // success
  kFailure = 1,     // cannot lower, illegal program, deadlock, a check that did not pass
  kUsageError = 2,  // bad command line or bad input file (HLO, asm, YAML)
};

// HLO text or assembly, by the file name.
[[nodiscard]] bool is_hlo_path(const std::string& path);
// A workload per system size: "{chips}" in `path` becomes the chip count
// (model.{chips}.hlo -> model.64.hlo; `tpusim scale`, sweeps over topology).
[[nodiscard]] std::string path_for_chips(std::string path, std::int64_t chips);

struct Compiled {
  std::vector<isa::Program> programs;  // one per TensorCore of a megacore chip (HLO), else one
  std::string source;                  // assembly text (for the verifier's carets); "" for HLO
  // HLO only: the `tpusim analyze` roofline of the module on the chip, and
  // the lowering's report per TensorCore.
  std::optional<hlo::RooflineReport> roofline;
  std::vector<lower::LowerReport> reports;
  std::string hlo_warnings;  // hlo::format_warnings of the parse ("" for none)
  // HLO only: the devices the module runs on (hlo::module_devices) and how that was found.
  std::int64_t devices = 1;
  std::string devices_source;
  // HLO only: HBM one device holds at least (hlo::parameter_bytes).
  std::int64_t hbm_need_bytes = 0;
};

struct StageError {
  int code = kFailure;
  std::string text;  // diagnostics, one per line, file:line:col first
};

// Parses an HLO file (every module must be valid; `strict` applies XLA
// verifier strictness, hlo::ParseOptions) and lowers its first module for
// `chip`. The parser's warnings go to `notes`.
// `lower_chip`: compile for that chip instead (`--lower-for`: the program
// of a base chip simulated on a varied one, so a what-if moves only the
// hardware); both must have as many TensorCores per device.
std::optional<Compiled> compile_hlo(const std::string& path, const ChipConfig& chip, StageError& error,
                                    std::ostream* notes = nullptr, bool strict = false,
                                    const ChipConfig* lower_chip = nullptr);
// HLO by the file name (compile_hlo), else assembly. Parses (or assembles) and, for HLO, lowers for `chip`. With `notes`, the
// lowering's approximations are listed there (the first ten).
std::optional<Compiled> compile_input(const std::string& path, const ChipConfig& chip, StageError& error,
                                      std::ostream* notes = nullptr, bool strict = false,
                                      const ChipConfig* lower_chip = nullptr);

struct PipelineOptions {
  // Simulate the system of chip.system (through the fabric); false: the chip alone.
  bool multi_chip = false;
  SpmdOptions spmd;
  std::ostream* notes = nullptr;  // compile notes (see compile_input)
  bool strict = false;            // --strict: XLA verifier strictness for HLO
  const ChipConfig* lower_chip = nullptr;  // --lower-for: compile for this chip (compile_hlo)
};

struct PipelineRun {
  Compiled compiled;  // programs moved out into the simulation
  SystemRun run;
  ChipConfig device;  // the chip as the simulated device saw it (device_view): what reports divide by
};

// compile_input, verify (a program with findings other than a deadlock is
// not simulated), check the replica groups against the system, simulate.
// A deadlock is a finished run with run.sim.finished == false.
std::optional<PipelineRun> run_pipeline(const std::string& path, const ChipConfig& chip, const PipelineOptions& options,
                                        StageError& error);

}  // namespace tpusim::app
