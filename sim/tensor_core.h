// A TensorCore as a SystemC module (DESIGN.md principles 1-4): a sequencer
// issues the program in order into per-unit in-order queues (MXUs, VPU, XLUs,
// EUP, DMA engines, ICI); each unit takes an instruction, waits for its
// dependencies, reserves the shared resources it needs (HBM through a TLM
// socket, VMEM bandwidth), waits for the cost the pure timing functions give,
// and counts. No unit ticks per cycle. The sequencer and the units are
// coroutines on one SystemC thread per core (sim/core_scheduler.h).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <unordered_map>
#include <vector>

#include "common/config.h"
#include "common/stats.h"
#include "isa/program.h"
#include "memory/bandwidth_server.h"
#include "sim/collective_fabric.h"
#include "sim/core/core_stats.h"
#include "sim/core/core_trace.h"
#include "sim/core/retirement.h"
#include "sim/core/reuse_accounts.h"
#include "sim/core/scoreboard.h"
#include "sim/core_scheduler.h"
#include "sim/interval_union.h"
#include "sim/loop_extrapolation.h"
#include "sim/trace.h"

namespace tpusim {

class CollectiveFabric;
class CoreSync;

// A core's place in a multi-chip system: its collectives go through the
// fabric (sim/collective_fabric.h) as `device`. No fabric = a single chip,
// whose collectives use the placeholder cost of instruction_cost().
struct SpmdBinding {
  CollectiveFabric* fabric = nullptr;
  std::int64_t device = 0;
};

class TensorCore : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<TensorCore> hbm_socket;

  TensorCore(sc_core::sc_module_name name, const ChipConfig& chip, const isa::Program& program,
             StatsRegistry& stats, const std::string& stat_prefix, TraceWriter* trace, SpmdBinding spmd = {},
             CoreSync* core_sync = nullptr);
  ~TensorCore() override;

  // Steady-state loop extrapolation (sim/loop_extrapolation.h), when
  // chip.simulation.loops says so; call before sc_start(). Every core of one
  // simulation passes the same coordinator (nullptr: this core decides alone).
  // `stat_prefixes`: stats besides this core's own (its prefix) that its
  // iterations drive, e.g. "chip0.hbm.", scaled with the skipped iterations.
  void set_loop_coordination(LoopCoordinator* coordinator, std::vector<std::string> stat_prefixes);
  // Reuse (isa::Program::reuse): stats besides this core's own that its
  // instructions drive (the chip's HBM), added with the reused sections'
  // counters; call before sc_start().
  void set_reuse_stat_prefixes(std::vector<std::string> prefixes) { reuse_stat_prefixes_ = std::move(prefixes); }
  // Time the reused sections added to end_seconds().
  [[nodiscard]] double reuse_added_seconds() const {
    double s = 0;
    for (const auto& r : reused_) s += r.added_s;
    return s;
  }
  // The sections this core reused, in program order.
  [[nodiscard]] const std::vector<SectionReuse>& reused_sections() const { return reused_; }
  // The loops this core extrapolated, in order of first extrapolation.
  [[nodiscard]] const std::vector<LoopExtrapolation>& extrapolated_loops() const { return loops_.rows(); }
  // A time of this core's simulation as its reports and trace show it (with
  // the iterations extrapolated loops skipped).
  [[nodiscard]] double reported_seconds(double t_s) const { return loops_.skipped().reported(t_s); }

  [[nodiscard]] bool finished() const { return finished_; }
  // Includes the time of extrapolated loop iterations.
  [[nodiscard]] double end_seconds() const { return end_s_; }
  // Set when the program cannot run (e.g. a matmul with no weights loaded).
  [[nodiscard]] const std::string& error() const { return error_; }
  // When the simulation ran out of events before the program finished: what
  // each waiting party was waiting for, with source locations.
  [[nodiscard]] std::vector<std::string> blocked() const;
  // The core's stats after the run (the report reads these).
  [[nodiscard]] CoreUse use() const;
  // Indexed by the program's provenance string id.
  [[nodiscard]] const std::vector<ProvenanceStats>& provenance() const { return prov_; }
  // Seconds some non-ICI unit was busy (the union of their busy intervals).
  [[nodiscard]] double compute_seconds() const { return busy_time_.compute() + loops_.skipped().compute_s; }
  // Seconds a collective was in flight (union of issue..completion).
  [[nodiscard]] double communication_seconds() const { return busy_time_.comm() + loops_.skipped().comm_s; }
  // Seconds a collective was in flight while no other unit was busy.
  [[nodiscard]] double exposed_communication_seconds() const {
    return busy_time_.exposed() + loops_.skipped().exposed_s;
  }

 private:
  struct Unit;
  struct Dyn {
    std::uint32_t pc = 0;
    double start = -1;  // seconds; < 0 = not started
    double done = -1;
  };

  CoTask sequencer();
  // The sequencer's steps that do not wait.
  // Pairs every repeat with its end (repeat_match_); false: error_ says why.
  bool match_repeats();
  // At `repeat` pc: enters the loop (or sets `next` past an empty one);
  // returns the loop when its entry is a sampled boundary.
  LoopFrame* enter_repeat(std::uint32_t pc, std::uint32_t& next);
  // At `end`: sets `next` back to the body for another iteration; returns
  // the loop when that boundary is sampled.
  LoopFrame* end_iteration(std::uint32_t& next);
  void leave_loop();
  void show_progress();
  // After the last instruction completed: the end time, the attribution's
  // last rows, the trace's end, the reused sections, the cycle count.
  void finish_program();
  CoTask run_unit(Unit& u);
  // A DMA engine's completions: signals each in-flight transfer's semaphore
  // when its data has arrived.
  CoTask complete_transfers(Unit& u);
  // Queues program_.code[pc] on `u` (which has a free slot).
  void dispatch(std::uint32_t pc, Unit& u);
  Unit& unit_for(const isa::Instruction& inst);
  // Appends the ids of the unfinished instructions program_.code[pc] must wait
  // for to `u.dep_ids` (ascending, no duplicates) and returns how many.
  std::uint32_t dependencies(std::uint32_t pc, std::uint64_t dyn, Unit& u);
  // include_collectives = false: in-flight collectives may continue (core.barrier).
  // Stall until every issued instruction has completed (collectives only
  // when include_collectives); with `only`, every one on that kind of unit.
  CoTask wait_all_done(bool include_collectives = true, std::optional<isa::Unit> only = std::nullopt);
  // co_await until(t): resume at t seconds (at once when t is not in the future).
  [[nodiscard]] CoreScheduler::At until(double t_s) const;
  // Times of one executed instruction, in seconds after the unit took it.
  struct Exec {
    double begin = 0;     // the work begins (an MXU op may wait for the array)
    double busy_end = 0;  // the unit's busy period ends (stats, trace)
    double free = 0;      // the unit may take its next instruction
    double done = 0;      // results are visible to consumers
    Resource resource = Resource::kVpuAlu;  // what its busy time goes to (the op's limiter)
  };
  Exec execute(Unit& u, const isa::Instruction& inst, Dyn& d);
  // Records instruction `id`'s times (taken at `t`) and its busy time in
  // the counters, unions, reuse sums and trace; returns when it completes.
  double record(Unit& u, const isa::Instruction& inst, std::uint64_t id, double t, const Exec& e, int section);
  // A DMA's or collective's completion signals its semaphore.
  void signal_semaphore(const isa::Instruction& inst);
  Exec execute_mxu(Unit& u, const isa::Instruction& inst, Dyn& d);
  // Sends `tile` to the chip's HBM now (queued behind every earlier request
  // of any engine or core); returns when its last data arrives, in seconds
  // from now, and adds it to the trace's HBM track.
  double hbm_access(const StridedTile& tile, bool write);
  // A collective's HBM side (ici.hbm_traffic) on the ICI unit that polls
  // `ticket`: the chip's reads and writes in chunks spread over the
  // collective's network window as the fabric knows it when each is due,
  // so DMAs running meanwhile share the HBM with them. Ends when the
  // collective has completed and its last chunk has arrived: *done_at.
  CoTask run_collective(Unit& u, const CollectiveFabric::Ticket& ticket, std::uint32_t pc, int section,
                        double* done_at);
  void retire();
  // Valid for dyn_base_ <= id < next_dyn_, until the next push_dyn().
  Dyn& dyn(std::uint64_t id) { return dyn_ring_[static_cast<size_t>(id & dyn_mask_)]; }
  void push_dyn(std::uint32_t pc);
  [[nodiscard]] std::string where(std::uint32_t pc) const;
  // The core's current time in seconds (sc_time::to_seconds() of its ticks;
  // ahead of the kernel's in run-ahead mode).
  [[nodiscard]] double now() const { return sched_->now_seconds(); }
  // The same as kernel ticks.
  [[nodiscard]] CoreScheduler::Ticks ticks(double s) const;

  const ChipConfig& chip_;
  const isa::Program& program_;
  StatsRegistry& stats_;
  std::string prefix_;
  TraceWriter* trace_;
  // The trace's op track and counters (null: no trace).
  std::unique_ptr<CoreTrace> core_trace_;
  double cycle_s_;
  sc_core::sc_time one_cycle_;

  std::vector<std::unique_ptr<Unit>> units_;
  std::vector<Unit*> mxus_, dmas_, xlus_;
  Unit* vpu_ = nullptr;
  Unit* eup_ = nullptr;
  Unit* ici_ = nullptr;
  std::vector<Unit*> icis_;  // ici_ is the first
  // DMAs between HBM and host memory (to the host, to HBM): their own
  // queues, so a long host transfer does not hold up the core's HBM<->VMEM
  // DMA engines (the host interface moves them over the link).
  std::array<Unit*, 2> host_dmas_{};
  std::uint64_t collectives_dispatched_ = 0;  // collectives sent to the ICI queues so far

  // The dynamic instructions not yet dropped, ids [dyn_base_, next_dyn_): a
  // ring indexed by id (power-of-two size, doubled when full).
  std::vector<Dyn> dyn_ring_;
  std::uint64_t dyn_mask_ = 0;
  std::uint64_t dyn_base_ = 0;   // oldest id still held
  std::uint64_t next_dyn_ = 0;
  std::uint64_t retired_ = 0;    // dyn ids below this have been retired
  Retirement retirement_;        // time attribution of the retired instructions
  Scoreboard scoreboard_;
  std::vector<std::uint64_t> dep_scratch_;  // reused by dependencies() (no heap per instruction)
  // One TLM payload for every HBM transfer (a payload allocates its extension
  // array on construction).
  tlm::tlm_generic_payload hbm_payload_;
  std::vector<std::int64_t> sem_;
  CoSignal sem_changed_;
  CoSignal any_started_;
  CoSignal any_popped_;
  BandwidthServer vmem_;
  // The host link's two directions (to the host, to HBM): DMAs between HBM
  // and host memory queue on them.
  std::array<BandwidthServer, 2> host_link_{BandwidthServer{1}, BandwidthServer{1}};

  bool finished_ = false;
  bool program_done_ = false;
  double end_s_ = 0;
  std::string error_;
  // What a party is blocked on, formatted only for the deadlock report.
  struct Waiting {
    enum class Kind {
      kNone, kQueueSlot, kSemaphore, kBarrier, kMxuFence, kCoreBarrier, kEnd, kStart, kComplete, kCollective,
      kLoopLeader
    } kind = Kind::kNone;
    std::uint32_t pc = 0;     // the waiting (sequencer) or awaited (unit) instruction
    std::uint32_t sem = 0;    // kSemaphore: the semaphore
    std::int64_t count = 0;
    std::uint32_t unit = 0;   // kQueueSlot: the unit's slot in units_
  };
  [[nodiscard]] std::string describe(const Waiting& w, const std::string& unit_name) const;
  Waiting sequencer_waiting_;
  // Steady-state loop extrapolation: the tracker keeps the loop stack and
  // the samples (sim/core/loop_tracker.h); the core samples its state and
  // counters for it and meets the other cores at sampled boundaries.
  // At a sampled boundary of `l`: `skip` = the rest is extrapolated.
  CoTask loop_boundary(LoopFrame& l, bool& skip);
  void loop_snapshot(const LoopFrame& l, LoopSnapshot& out);
  void skip_rest(const LoopFrame& l, double iteration_s);
  const LoopTracker::Body& loop_body(std::uint32_t repeat_pc);
  [[nodiscard]] std::uint64_t state_hash() const;
  std::vector<std::uint32_t> repeat_match_;
  LoopTracker loops_;
  LoopCoordinator* coordinator_ = nullptr;
  int coordinator_index_ = 0;
  std::vector<std::string> loop_stat_prefixes_;
  std::vector<Stat*> loop_stats_;                 // counters scaled by extrapolation
  std::map<std::uint32_t, LoopTracker::Body> loop_bodies_;  // by repeat pc
  std::vector<std::uint64_t> loop_entries_;       // by repeat pc: instances entered
  // By repeat pc: the loop's identity shared with the other cores (see
  // number_coordinated_loops), or kNotSampled.
  static constexpr std::uint32_t kNotSampled = 0xffffffffU;
  std::vector<std::uint32_t> loop_ids_;
  void number_coordinated_loops();
  // Reused sections (sim/core/reuse_accounts.h): what each one's
  // instructions add, and what its extra instances add at the end.
  ReuseAccounts reuse_;
  std::vector<std::string> reuse_stat_prefixes_;
  // *stat += v, and to the reuse sums of pc's section.
  void count(Stat* stat, double v, std::uint32_t pc);
  // The time unions and (device 0) the fabric's counters now.
  [[nodiscard]] CoreReadings readings() const;
  std::vector<SectionReuse> reused_;
  std::vector<ProvenanceStats> prov_;
  std::uint64_t pending_signal_count_ = 0;
  std::uint64_t progress_ticks_ = 0;  // instructions issued, for the progress line
  SpmdBinding spmd_;
  CoreSync* core_sync_ = nullptr;  // the chip's cross-core rendezvous (megacore); null = one core
  // Compute (non-ICI units) and collective intervals; the past before every
  // unit's current instruction is folded (bounded memory).
  BusyTime busy_time_;

  CoreCounters counters_;
  SequencerStats sequencer_stats_;
  VmemStats vmem_stats_;
  // What runs this core's processes: its own scheduler, or its megacore
  // chip's (CoreSync). Last: destroyed first (its coroutine frames refer to
  // the members above).
  std::unique_ptr<CoreScheduler> own_sched_;
  CoreScheduler* sched_ = nullptr;
};

}  // namespace tpusim
