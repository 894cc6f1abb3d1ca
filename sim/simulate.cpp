#include "sim/simulate.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "sim/system.h"

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
  // (Vector-register buffers have no address: they live in the register file.)
  std::int64_t next[5] = {0, 0, 0, 0, 0};  // by isa::MemSpace: HBM, VMEM, SMEM, host, vreg
  for (const auto& b : p.buffers) {
    if (b.view_of != isa::TileRef::kNone || b.space == isa::MemSpace::kVreg) continue;  // placed with the buffer it views
    if (b.offset >= 0) {
      auto& n = next[static_cast<int>(b.space)];
      n = std::max(n, b.offset + b.bytes());
    }
  }
  for (auto& b : p.buffers) {
    if (b.offset >= 0 || b.view_of != isa::TileRef::kNone || b.space == isa::MemSpace::kVreg) continue;
    auto& n = next[static_cast<int>(b.space)];
    n = (n + kAlign - 1) / kAlign * kAlign;
    b.offset = n;
    n += b.bytes();
  }
  const double cap[3] = {chip.hbm.capacity, chip.core.vmem.capacity, chip.core.smem.capacity};
  const char* names[3] = {"HBM", "VMEM", "SMEM"};
  for (int s = 0; s < 3; ++s) {
    if (cap[s] > 0 && static_cast<double>(next[s]) > cap[s]) {  // 0: unbounded
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
      if (fresh) {
        rows.push_back({name, {}});
        const std::string_view root = isa::provenance_root(name);
        for (const auto& r : programs[c]->reuse) {
          if (r.label == root) rows.back().occurrences = r.extra + 1;
        }
      }
      ProvenanceStats& m = rows[it->second].stats;
      if (c == 0) m.attributed_s = s.attributed_s;
      m.busy_s += s.busy_s;
      for (std::size_t r = 0; r < kResources; ++r) m.busy_by[r] += s.busy_by[r];
      m.flops += s.flops;
      m.bf16_flops += s.bf16_flops;
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
  std::vector<std::vector<isa::Program>> one;
  one.push_back(std::move(programs));
  SpmdOptions o;
  o.sim = options;
  auto r = run_system(chip, std::move(one), o, /*network=*/false);
  if (!r.ok()) return r.errors();
  return std::move(r->sim);
}

}  // namespace tpusim

