// What one TensorCore writes to the trace besides its units' slices (plain
// C++ over TraceWriter): the "HLO ops" track, with one slice per op
// instance and its FLOPs, HBM bytes and limiter; an "HBM GB/s" counter; and
// a "VMEM live MiB" counter. Times are the core's, shown as the report
// shows them (the iterations extrapolated loops skipped included).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/config.h"
#include "isa/program.h"
#include "sim/core/loop_tracker.h"
#include "sim/core/retirement.h"
#include "sim/trace.h"

namespace tpusim {

class CoreTrace {
 public:
  // The counters sample windows of this length.
  static constexpr double kCounterWindowS = 10e-6;
  static constexpr std::string_view kVmemCounter = "VMEM live MiB";

  // Creates the op track of process `process` (call before the units'
  // tracks, so it is the first). `skipped` maps the core's times to reported
  // ones and must outlive this.
  CoreTrace(TraceWriter& trace, std::string process, const ChipConfig& chip, const isa::Program& program,
            const SkippedTime& skipped);

  // The retirement frontier reaches instruction `pc` at `at_s`; `prov` holds
  // the provenance figures so far (indexed by provenance id).
  void retire(std::uint32_t pc, double at_s, const std::vector<ProvenanceStats>& prov);
  // An HBM transfer of `bytes` spread over [start_s, end_s), seen at core
  // time `now_s`: windows before now_s can gain no more bytes and are written.
  void hbm(double now_s, double start_s, double end_s, double bytes);
  // The program ended: the last op closes at `last_s` (where the frontier
  // stopped), HBM windows are written to `end_s`, the VMEM counter drops to 0.
  void finish(double last_s, double end_s, const std::vector<ProvenanceStats>& prov);

 private:
  // The frontier enters op `root` ("" = none) at `at_s`.
  void enter_op(std::string_view root, double at_s, const std::vector<ProvenanceStats>& prov);
  [[nodiscard]] ProvenanceStats op_figures(std::string_view root, const std::vector<ProvenanceStats>& prov) const;
  void flush_hbm(std::int64_t below);
  void vmem(std::uint32_t pc, double at_s);
  void flush_vmem(std::int64_t next_window);

  TraceWriter& trace_;
  std::string process_;
  const ChipConfig& chip_;
  const isa::Program& program_;
  const SkippedTime& skipped_;
  // The op track: one slice per op instance, from when the retirement
  // frontier reached the op's first instruction to when it left its last
  // (ops in program order, as the report charges them).
  int op_track_ = -1;
  std::string_view op_open_;  // the op whose slice is open ("" = none)
  double op_start_s_ = 0;
  // Each op's provenance ids (for its slices' figures) and the figures its
  // slices have shown so far.
  std::unordered_map<std::string_view, std::vector<std::uint32_t>> op_prov_;
  std::unordered_map<std::string_view, ProvenanceStats> op_shown_;
  // HBM bytes per window (index -> bytes); windows below hbm_written_ are written.
  std::map<std::int64_t, double> hbm_windows_;
  std::int64_t hbm_written_ = 0;
  // The VMEM footprint live at each pc (isa::live_footprint); the window
  // being sampled, its largest footprint and the last one seen.
  std::vector<std::int64_t> vmem_live_;
  std::int64_t vmem_window_ = -1;
  std::int64_t vmem_max_ = 0, vmem_last_ = 0;
};

}  // namespace tpusim
