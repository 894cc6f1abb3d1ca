#include "sim/core/core_trace.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "isa/verifier.h"
#include "sim/timing/limiter.h"

namespace tpusim {

CoreTrace::CoreTrace(TraceWriter& trace, std::string process, const ChipConfig& chip, const isa::Program& program,
                     const SkippedTime& skipped)
    : trace_(trace), process_(std::move(process)), chip_(chip), program_(program), skipped_(skipped) {
  op_track_ = trace_.track(process_, "HLO ops", "instances");
  trace_.name_ops_on(op_track_);
  std::unordered_map<std::string_view, std::set<std::uint32_t>> ids;
  for (const isa::Instruction& i : program.code) ids[isa::provenance_root(program.provenance(i))].insert(i.provenance);
  for (auto& [root, set] : ids) op_prov_[root].assign(set.begin(), set.end());
  vmem_live_ = isa::live_footprint(program, chip, isa::MemSpace::kVmem);
}

void CoreTrace::retire(std::uint32_t pc, double at_s, const std::vector<ProvenanceStats>& prov) {
  enter_op(isa::provenance_root(program_.provenance(program_.code[pc])), at_s, prov);
  vmem(pc, at_s);
}

ProvenanceStats CoreTrace::op_figures(std::string_view root, const std::vector<ProvenanceStats>& prov) const {
  ProvenanceStats f;
  const auto it = op_prov_.find(root);
  if (it == op_prov_.end()) return f;
  for (const std::uint32_t id : it->second) {
    f.flops += prov[id].flops;
    f.hbm_bytes += prov[id].hbm_bytes;
    for (std::size_t k = 0; k < kResources; ++k) f.busy_by[k] += prov[id].busy_by[k];
  }
  return f;
}

void CoreTrace::enter_op(std::string_view root, double at_s, const std::vector<ProvenanceStats>& prov) {
  if (root == op_open_) return;  // the open op goes on (its slice ends where the next starts)
  if (!op_open_.empty() && at_s > op_start_s_) {
    // What the op's instructions added since its last slice (all of this
    // instance's have started by now; a later instance's that started early
    // count here, so the slices of an op add up to its figures).
    // The slice's limiter: what those instructions kept busy over its time.
    const ProvenanceStats now_f = op_figures(op_open_, prov);
    ProvenanceStats& shown = op_shown_[op_open_];
    const double from = skipped_.reported(op_start_s_), to = skipped_.reported(at_s);
    std::array<double, kResources> busy{};
    for (std::size_t k = 0; k < kResources; ++k) busy[k] = now_f.busy_by[k] - shown.busy_by[k];
    const double hbm_bytes = now_f.hbm_bytes - shown.hbm_bytes;
    trace_.slice(op_track_, op_open_, from, to,
                 TraceFigures{now_f.flops - shown.flops, hbm_bytes,
                              find_limiter(busy, hbm_bytes, to - from, chip_, 1).limiter_name()});
    shown = now_f;
  }
  op_open_ = root;
  op_start_s_ = at_s;
}

void CoreTrace::hbm(double now_s, double start_s, double end_s, double bytes) {
  flush_hbm(static_cast<std::int64_t>(std::floor(now_s / kCounterWindowS)));
  if (!(end_s > start_s) || bytes <= 0) return;
  const double rate = bytes / (end_s - start_s);
  for (auto w = static_cast<std::int64_t>(std::floor(start_s / kCounterWindowS)); w * kCounterWindowS < end_s; ++w) {
    const double lo = std::max(start_s, static_cast<double>(w) * kCounterWindowS);
    const double hi = std::min(end_s, static_cast<double>(w + 1) * kCounterWindowS);
    if (hi > lo) hbm_windows_[w] += rate * (hi - lo);
  }
}

void CoreTrace::flush_hbm(std::int64_t below) {
  // Windows before `below` can gain no more bytes: write them (a window
  // without traffic writes 0 once; the writer drops repeated values).
  for (; hbm_written_ < below; ++hbm_written_) {
    const auto it = hbm_windows_.find(hbm_written_);
    const double bytes = it == hbm_windows_.end() ? 0.0 : it->second;
    if (it != hbm_windows_.end()) hbm_windows_.erase(it);
    trace_.counter(process_, "HBM GB/s", skipped_.reported(static_cast<double>(hbm_written_) * kCounterWindowS),
                   bytes / kCounterWindowS / 1e9);
    // Skip a run of idle windows in one step.
    if (hbm_windows_.empty() && bytes == 0) hbm_written_ = std::max(hbm_written_, below - 1);
  }
}

void CoreTrace::vmem(std::uint32_t pc, double at_s) {
  if (pc >= vmem_live_.size()) return;
  const auto w = static_cast<std::int64_t>(std::floor(at_s / kCounterWindowS));
  const std::int64_t live = vmem_live_[pc];
  if (w != vmem_window_) {
    flush_vmem(w);
    vmem_window_ = w;
    vmem_max_ = live;
  } else {
    vmem_max_ = std::max(vmem_max_, live);
  }
  vmem_last_ = live;
}

void CoreTrace::flush_vmem(std::int64_t next_window) {
  // The window's largest footprint from its start; windows the frontier
  // jumped over hold the last footprint it saw.
  if (vmem_window_ < 0) return;
  const double mib = 1024.0 * 1024.0;
  trace_.counter(process_, kVmemCounter, skipped_.reported(static_cast<double>(vmem_window_) * kCounterWindowS),
                 static_cast<double>(vmem_max_) / mib);
  if (next_window > vmem_window_ + 1) {
    trace_.counter(process_, kVmemCounter, skipped_.reported(static_cast<double>(vmem_window_ + 1) * kCounterWindowS),
                   static_cast<double>(vmem_last_) / mib);
  }
}

void CoreTrace::finish(double last_s, double end_s, const std::vector<ProvenanceStats>& prov) {
  enter_op({}, last_s, prov);  // close the last op
  flush_hbm(static_cast<std::int64_t>(std::ceil(end_s / kCounterWindowS)) + 1);
  if (vmem_window_ >= 0) {  // the last window, then nothing live
    flush_vmem(vmem_window_ + 1);
    trace_.counter(process_, kVmemCounter, skipped_.reported(last_s), 0);
  }
}

}  // namespace tpusim
