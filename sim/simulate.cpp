#include "sim/simulate.h"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <memory>
#include <systemc>

#include "memory/hbm.h"
#include "sim/core_sync.h"
#include "sim/trace.h"
#include <map>

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
    if (b.view_of != isa::TileRef::kNone) continue;  // placed with the buffer it views
    if (b.offset >= 0) {
      auto& n = next[static_cast<int>(b.space)];
      n = std::max(n, b.offset + b.bytes());
    }
  }
  for (auto& b : p.buffers) {
    if (b.offset >= 0 || b.view_of != isa::TileRef::kNone) continue;
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

std::vector<ProvenanceRow> merge_provenance(const std::vector<const TensorCore*>& cores,
                                            const std::vector<const isa::Program*>& programs) {
  std::vector<ProvenanceRow> rows;
  std::map<std::string, std::size_t, std::less<>> index;
  for (std::size_t c = 0; c < cores.size(); ++c) {
    const auto& prov = cores[c]->provenance();
    for (std::uint32_t id = 0; id < prov.size(); ++id) {
      const ProvenanceStats& s = prov[id];
      if (s.instructions == 0 && s.attributed_s == 0) continue;
      std::string name(programs[c]->strings.get(id));
      if (name.empty()) name = "(unlabelled)";
      auto [it, fresh] = index.try_emplace(name, rows.size());
      if (fresh) rows.push_back({name, {}});
      ProvenanceStats& m = rows[it->second].stats;
      if (c == 0) m.attributed_s = s.attributed_s;
      m.busy_s += s.busy_s;
      m.flops += s.flops;
      m.transcendentals += s.transcendentals;
      m.hbm_bytes += s.hbm_bytes;
      m.instructions += s.instructions;
    }
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.stats.attributed_s > b.stats.attributed_s; });
  return rows;
}

}  // namespace detail

Result<SimResult> simulate(const ChipConfig& chip, isa::Program program, const SimOptions& options) {
  std::vector<isa::Program> cores;
  cores.push_back(std::move(program));
  return simulate_cores(chip, std::move(cores), options);
}

Result<SimResult> simulate_cores(const ChipConfig& chip, std::vector<isa::Program> programs,
                                 const SimOptions& options) {
  const std::string file = programs.empty() ? std::string("<program>") : programs.front().file;
  if (programs.empty() || (programs.size() > 1 && static_cast<int>(programs.size()) != chip.tensorcores)) {
    return Diagnostic{file, 0, 0,
                      fmt::format("internal: {} programs for a chip of {} TensorCores", programs.size(),
                                  chip.tensorcores),
                      ""};
  }
  if (!detail::claim_elaboration()) {
    return Diagnostic{file, 0, 0, "internal: one simulation per process (SystemC cannot re-elaborate)", ""};
  }
  for (auto& p : programs) {
    if (std::string err = detail::place_buffers(chip, p); !err.empty()) return Diagnostic{p.file, 0, 0, err, ""};
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

  // Elaboration: the chip's HBM, shared by its TensorCores (one per program).
  const int ncores = static_cast<int>(programs.size());
  auto hbm = std::make_unique<Hbm>("hbm", chip.hbm, result.stats, "chip0.hbm");
  // Loop extrapolation names loop instances by pc: the TensorCores of a
  // megacore chip run different programs, so their loops run in full.
  ChipConfig core_chip = chip;
  if (ncores > 1 && chip.simulation.loops != "full") {
    core_chip.simulation.loops = "full";
    result.notes.push_back("loops simulated in full: the TensorCores of a megacore chip run different programs "
                           "(extrapolation needs one stream)");
  }
  // (Only for a megacore chip: one scheduler for its cores.)
  std::unique_ptr<CoreSync> sync = ncores > 1 ? std::make_unique<CoreSync>(ncores, chip.simulation.run_ahead) : nullptr;
  std::vector<std::unique_ptr<TensorCore>> cores;
  for (int c = 0; c < ncores; ++c) {
    const std::string name = fmt::format("core{}", c);
    cores.push_back(std::make_unique<TensorCore>(name.c_str(), core_chip, programs[static_cast<std::size_t>(c)],
                                                 result.stats, "chip0." + name, trace.get(), SpmdBinding{},
                                                 sync.get()));
    cores.back()->hbm_socket.bind(hbm->socket);
    if (ncores == 1) cores.back()->set_loop_coordination(nullptr, {"chip0.hbm."});
  }
  if (chip.tensorcores > ncores) {
    result.notes.push_back(fmt::format("the program runs on TensorCore 0 of {}; the others idle", chip.tensorcores));
  } else if (ncores > 1) {
    result.notes.push_back(fmt::format("megacore: {} TensorCores run their share of every section and meet at "
                                       "core.barrier; they share the chip's HBM",
                                       ncores));
  }
  for (const auto& inst : programs.front().code) {
    if (isa::opcode(inst.op) == isa::Opcode::kCollective) {
      result.notes.push_back("collectives are timed as bytes / total ICI bandwidth + one hop (single-chip placeholder)");
      break;
    }
  }

  sc_core::sc_start();  // runs until no events remain: completion or deadlock

  result.finished = true;
  double end = 0;
  std::vector<const TensorCore*> views;
  std::vector<const isa::Program*> progs;
  for (int c = 0; c < ncores; ++c) {
    const TensorCore& core = *cores[static_cast<std::size_t>(c)];
    if (!core.error().empty()) {
      return Diagnostic{file, 0, 0, ncores > 1 ? fmt::format("core {}: {}", c, core.error()) : core.error(), ""};
    }
    if (!core.finished()) {
      result.finished = false;
      for (const auto& b : core.blocked()) result.blocked.push_back(ncores > 1 ? fmt::format("core {}: {}", c, b) : b);
    }
    end = std::max(end, core.finished() ? core.end_seconds() : sc_core::sc_time_stamp().to_seconds());
    views.push_back(&core);
    progs.push_back(&programs[static_cast<std::size_t>(c)]);
  }
  result.seconds = end;
  result.cycles = std::round(result.seconds * chip.clock);
  result.stats.add("chip0.seconds", "s", "simulated time of the program").value = result.seconds;
  result.loops = cores.front()->extrapolated_loops();
  for (auto& n : loop_notes(result.loops)) result.notes.push_back(std::move(n));
  result.provenance = detail::merge_provenance(views, progs);
  if (trace) trace->finish();
  return result;
}

}  // namespace tpusim

