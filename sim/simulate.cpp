#include "sim/simulate.h"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <memory>
#include <systemc>

#include "memory/hbm.h"
#include "sim/trace.h"

namespace tpusim {
namespace {

bool g_elaborated = false;

}  // namespace

namespace detail {

bool claim_elaboration() {
  if (g_elaborated) return false;
  g_elaborated = true;
  return true;
}

// Buffers without an offset are placed one after another in their memory,
// aligned to 4 KiB (a DMA chunk and HBM page multiple on every preset).
std::string place_buffers(const ChipConfig& chip, isa::Program& p) {
  constexpr std::int64_t kAlign = 4096;
  std::int64_t next[3] = {0, 0, 0};
  for (const auto& b : p.buffers) {
    if (b.offset >= 0) {
      auto& n = next[static_cast<int>(b.space)];
      n = std::max(n, b.offset + b.bytes());
    }
  }
  for (auto& b : p.buffers) {
    if (b.offset >= 0) continue;
    auto& n = next[static_cast<int>(b.space)];
    n = (n + kAlign - 1) / kAlign * kAlign;
    b.offset = n;
    n += b.bytes();
  }
  const double cap[3] = {chip.hbm.capacity, chip.core.vmem.capacity, chip.core.smem.capacity};
  const char* names[3] = {"HBM", "VMEM", "SMEM"};
  for (int s = 0; s < 3; ++s) {
    if (static_cast<double>(next[s]) > cap[s]) {
      return fmt::format("the program's {} buffers need {} bytes, more than the {} configured", names[s], next[s],
                         static_cast<std::int64_t>(cap[s]));
    }
  }
  return {};
}

}  // namespace detail

Result<SimResult> simulate(const ChipConfig& chip, isa::Program program, const SimOptions& options) {
  if (!detail::claim_elaboration()) {
    return Diagnostic{program.file, 0, 0, "internal: one simulation per process (SystemC cannot re-elaborate)", ""};
  }
  if (std::string err = detail::place_buffers(chip, program); !err.empty()) {
    return Diagnostic{program.file, 0, 0, err, ""};
  }
  ::setenv("SYSC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);

  SimResult result;
  std::unique_ptr<std::ofstream> trace_file;
  std::unique_ptr<TraceWriter> trace;
  if (!options.trace_path.empty()) {
    trace_file = std::make_unique<std::ofstream>(options.trace_path);
    if (!*trace_file) return Diagnostic{options.trace_path, 0, 0, "cannot write the trace file", ""};
    trace = std::make_unique<TraceWriter>(*trace_file, options.trace_merge_gap_s);
  }

  // Elaboration: the chip's HBM and core 0. (Further TensorCores of the chip
  // share this HBM once the compiler emits per-core programs.)
  auto hbm = std::make_unique<Hbm>("hbm", chip.hbm, result.stats, "chip0.hbm");
  auto core = std::make_unique<TensorCore>("core0", chip, program, result.stats, "chip0.core0", trace.get());
  core->hbm_socket.bind(hbm->socket);
  core->set_loop_coordination(nullptr, {"chip0.hbm."});
  if (chip.tensorcores > 1) {
    result.notes.push_back(fmt::format("the program runs on TensorCore 0 of {}; the others idle", chip.tensorcores));
  }
  for (const auto& inst : program.code) {
    if (isa::opcode(inst.op) == isa::Opcode::kCollective) {
      result.notes.push_back("collectives are timed as bytes / total ICI bandwidth + one hop (single-chip placeholder)");
      break;
    }
  }

  sc_core::sc_start();  // runs until no events remain: completion or deadlock

  if (!core->error().empty()) return Diagnostic{program.file, 0, 0, core->error(), ""};
  result.finished = core->finished();
  result.blocked = core->blocked();
  result.seconds = result.finished ? core->end_seconds() : sc_core::sc_time_stamp().to_seconds();
  result.cycles = std::round(result.seconds * chip.clock);
  result.stats.add("chip0.seconds", "s", "simulated time of the program").value = result.seconds;
  result.loops = core->extrapolated_loops();
  for (auto& n : loop_notes(result.loops)) result.notes.push_back(std::move(n));
  for (std::uint32_t id = 0; id < core->provenance().size(); ++id) {
    const ProvenanceStats& s = core->provenance()[id];
    if (s.instructions == 0 && s.attributed_s == 0) continue;
    std::string name(program.strings.get(id));
    result.provenance.push_back({name.empty() ? "(unlabelled)" : name, s});
  }
  std::sort(result.provenance.begin(), result.provenance.end(),
            [](const auto& a, const auto& b) { return a.stats.attributed_s > b.stats.attributed_s; });
  if (trace) trace->finish();
  return result;
}

}  // namespace tpusim

