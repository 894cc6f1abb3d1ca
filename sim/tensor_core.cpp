#include "sim/tensor_core.h"

#include "sim/timing/dma_timing.h"
#include "sim/timing/hbm_timing.h"

#include "common/progress.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <type_traits>

#include "memory/hbm.h"
#include "sim/collective_fabric.h"
#include "sim/core/mxu_array.h"
#include "sim/core/retirement.h"
#include "sim/core_sync.h"
#include "sim/timing/instruction_cost.h"
#include "sim/timing/limiter.h"
#include "sim/timing/mxu_timing.h"

// Speed notes: the sequencer and the units are coroutines of one
// scheduler per core (sim/core_scheduler.h) with its own deterministic order
// of same-time events, instead of a SystemC thread each (~600 instructions
// of kernel work per switch, ~5 switches per simulated instruction). Beyond
// that the work per instruction is kept small: the scoreboard drops
// completed accesses as it scans and never records DMA accesses, costs and
// tile uses are memoized by pc, no heap allocation per instruction.
namespace tpusim {

using sc_core::sc_time;
using sc_core::SC_SEC;

constexpr double kNotTaken = std::numeric_limits<double>::infinity();

// One in-order execution unit: a queue and the process (run_unit) that drains it.
struct TensorCore::Unit {
  std::string name;  // "mxu0", "vpu", "dma2", …
  isa::Unit kind;
  int index = 0;            // among the units of its kind
  std::uint32_t slot = 0;   // in TensorCore::units_
  struct Entry {
    std::uint64_t id;
    double visible_at;
    std::uint32_t deps;  // how many of the first dep_ids belong to this entry
    std::uint64_t collective = 0;  // a collective's ordinal on this core, in program order
  };
  std::deque<Entry> queue;
  std::deque<std::uint64_t> dep_ids;  // the entries' dependencies, in queue order
  // instruction_cost() is a pure function of the static instruction: a small
  // direct-mapped memo by pc (a loop body hits it on every iteration).
  struct CostMemo {
    std::uint32_t pc = std::numeric_limits<std::uint32_t>::max();
    InstructionCost cost;
  };
  std::array<CostMemo, 8> cost_memo;
  // tile_uses() of the instructions dispatched to this unit, memoized the same way.
  struct UsesMemo {
    std::uint32_t pc = std::numeric_limits<std::uint32_t>::max();
    TileUses uses;
  };
  std::array<UsesMemo, 8> uses_memo;
  CoSignal pushed;
  int track = -1;
  Waiting waiting;  // what the front instruction waits for (deadlock report)
  std::uint64_t collective = 0;  // ICI: the ordinal of the collective being executed
  bool idle = false;  // waiting for its queue to fill
  double taken_at = kNotTaken;  // ICI: when it took the collective it waits in
  // DMA: the transfers this engine has issued whose data is still arriving,
  // in order (complete_transfers signals their semaphores).
  struct InFlight {
    double done_at;
    std::uint32_t pc;
  };
  std::deque<InFlight> in_flight;
  CoSignal issued;  // a transfer joined in_flight
  double last_done = 0;  // the latest completion of the instructions this unit has taken
  UnitCounters counters;
  Stat* flops = nullptr;  // MXU, VPU
  Stat* bytes = nullptr;  // DMA
  MxuArray mxu;  // MXU units only (sim/core/mxu_array.h)
};

namespace {

constexpr std::size_t kQueueDepth = 32;  // entries per unit queue (sequencer stalls beyond)
constexpr double kTimeEps = kTimeEpsilonSeconds;

}  // namespace

TensorCore::TensorCore(sc_core::sc_module_name name, const ChipConfig& chip, const isa::Program& program,
                       StatsRegistry& stats, const std::string& p, TraceWriter* trace, SpmdBinding spmd,
                       CoreSync* core_sync)
    : sc_module(name),
      hbm_socket("hbm_socket"),
      chip_(chip),
      program_(program),
      stats_(stats),
      prefix_(p),
      trace_(trace),
      cycle_s_(1.0 / chip.clock),
      one_cycle_(cycle_s_, SC_SEC),
      scoreboard_(program.buffers.size()),
      vmem_(1) {
  counters_.add(stats, p);
  loops_ = LoopTracker(LoopPolicy::from(chip.simulation));
  // The op track first: above the units'.
  if (trace_ != nullptr) core_trace_ = std::make_unique<CoreTrace>(*trace_, p, chip, program, loops_.skipped());
  sequencer_stats_.add(stats, p + ".sequencer");
  vmem_stats_.add(stats, p + ".vmem");
  spmd_ = spmd;
  core_sync_ = core_sync;
  auto add_unit = [&](std::string uname, isa::Unit kind, int index) {
    auto u = std::make_unique<Unit>();
    u->name = std::move(uname);
    u->kind = kind;
    u->index = index;
    u->slot = static_cast<std::uint32_t>(units_.size());
    const std::string up = p + "." + u->name;
    u->counters.add(stats, up);
    if (kind == isa::Unit::kMxu || kind == isa::Unit::kVpu) {
      u->flops = &stats.add(up + ".flops", StatUnit::kFlops, "useful floating-point operations");
    }
    if (kind == isa::Unit::kDma) u->bytes = &stats.add(up + ".bytes", StatUnit::kBytes, "bytes copied");
    if (trace_ != nullptr) u->track = trace_->track(p, u->name);
    units_.push_back(std::move(u));
    return units_.back().get();
  };
  for (int i = 0; i < chip.core.mxu.count; ++i) mxus_.push_back(add_unit(fmt::format("mxu{}", i), isa::Unit::kMxu, i));
  vpu_ = add_unit("vpu", isa::Unit::kVpu, 0);
  for (int i = 0; i < chip.core.xlu.count; ++i) xlus_.push_back(add_unit(fmt::format("xlu{}", i), isa::Unit::kXlu, i));
  eup_ = add_unit("eup", isa::Unit::kEup, 0);
  for (int i = 0; i < chip.core.dma.engines; ++i) dmas_.push_back(add_unit(fmt::format("dma{}", i), isa::Unit::kDma, i));
  host_dmas_[0] = add_unit("host_dma_out", isa::Unit::kDma, chip.core.dma.engines);
  host_dmas_[1] = add_unit("host_dma_in", isa::Unit::kDma, chip.core.dma.engines + 1);
  // Several collectives in flight (ici.concurrent_collectives): one in-order
  // ICI queue each ("ici", "ici1", …), the sequencer picks the shortest. A
  // single chip has no network to share, and the placeholder charges each
  // collective the chip's whole ICI bandwidth: one at a time is the same
  // bandwidth sharing there.
  const std::int64_t ici_queues = spmd.fabric != nullptr ? std::max<std::int64_t>(1, chip.ici.concurrent_collectives) : 1;
  for (std::int64_t i = 0; i < ici_queues; ++i) {
    icis_.push_back(add_unit(i == 0 ? std::string("ici") : fmt::format("ici{}", i), isa::Unit::kIci, static_cast<int>(i)));
  }
  ici_ = icis_.front();

  for (const auto& s : program.semaphores) sem_.push_back(s.initial);
  prov_.resize(program.strings.size());
  reuse_ = ReuseAccounts(program);
  // The cores of a megacore chip share one scheduler (sim/core_sync.h). A
  // chip runs ahead of the kernel's clock; its collectives synchronize.
  if (core_sync != nullptr) {
    sched_ = &core_sync->scheduler();
  } else {
    own_sched_ = std::make_unique<CoreScheduler>(chip.simulation.run_ahead);
    sched_ = own_sched_.get();
    sc_core::sc_spawn([this] { sched_->run(); }, "scheduler");
  }
  sched_->spawn(sequencer());
  for (auto& u : units_) {
    sched_->spawn(run_unit(*u));
    if (u->kind == isa::Unit::kDma) sched_->spawn(complete_transfers(*u));
  }
}

TensorCore::~TensorCore() = default;

CoreScheduler::Ticks TensorCore::ticks(double s) const { return sched_->ticks(s); }

CoreScheduler::At TensorCore::until(double t) const {
  const double dt = t - now();
  return sched_->at(dt > kTimeEps ? sched_->now() + ticks(dt) : 0);
}

std::string TensorCore::where(std::uint32_t pc) const {
  const isa::Instruction& i = program_.code[pc];
  const auto& info = isa::opcode_info(isa::opcode(i.op));
  std::string s = fmt::format("{}:{}:{}: {}", program_.file, i.loc.line, i.loc.column, info.mnemonic);
  const auto prov = program_.provenance(i);
  if (!prov.empty()) s += fmt::format(" @ \"{}\"", prov);
  return s;
}

TensorCore::Unit& TensorCore::unit_for(const isa::Instruction& inst) {
  const auto& info = isa::opcode_info(isa::opcode(inst.op));
  switch (info.unit) {
    case isa::Unit::kMxu: {
      std::int64_t m = 0;
      std::visit(
          [&](const auto& o) {
            if constexpr (requires { o.mxu; }) m = o.mxu;
          },
          inst.op);
      if (m < 0 || m >= static_cast<std::int64_t>(mxus_.size())) m = 0;  // the verifier reports it
      return *mxus_[static_cast<size_t>(m)];
    }
    case isa::Unit::kVpu: return *vpu_;
    case isa::Unit::kEup: return *eup_;
    case isa::Unit::kIci:
      return **std::min_element(icis_.begin(), icis_.end(),
                                [](Unit* a, Unit* b) { return a->queue.size() < b->queue.size(); });
    case isa::Unit::kXlu:
      return **std::min_element(xlus_.begin(), xlus_.end(),
                                [](Unit* a, Unit* b) { return a->queue.size() < b->queue.size(); });
    case isa::Unit::kDma:
    default:
      if (const auto* d = std::get_if<isa::DmaStart>(&inst.op)) {
        const auto space = [&](const isa::TileRef& t) { return program_.buffers[program_.storage(t.buffer)].space; };
        if (space(d->dst) == isa::MemSpace::kHost) return *host_dmas_[0];
        if (space(d->src) == isa::MemSpace::kHost) return *host_dmas_[1];
      }
      return **std::min_element(dmas_.begin(), dmas_.end(),
                                [](Unit* a, Unit* b) { return a->queue.size() < b->queue.size(); });
  }
}

std::uint32_t TensorCore::dependencies(std::uint32_t pc, std::uint64_t id, Unit& u) {
  const isa::Instruction& inst = program_.code[pc];
  const auto unit = isa::opcode_info(isa::opcode(inst.op)).unit;
  const bool async = unit == isa::Unit::kDma || unit == isa::Unit::kIci;
  Unit::UsesMemo& memo = u.uses_memo[pc % u.uses_memo.size()];
  if (memo.pc != pc) {
    memo.uses = tile_uses(inst.op);
    memo.pc = pc;
  }
  const double t = now();
  // (A record dropped from the ring has completed.)
  auto complete = [&](std::uint64_t dep) {
    if (dep < dyn_base_) return true;
    const Dyn& d = dyn(dep);
    return d.done >= 0 && d.done <= t + kTimeEps;
  };
  std::vector<std::uint64_t>& deps = dep_scratch_;
  scoreboard_.check(memo.uses, id, async, complete, deps);
  u.dep_ids.insert(u.dep_ids.end(), deps.begin(), deps.end());
  return static_cast<std::uint32_t>(deps.size());
}

void TensorCore::dispatch(std::uint32_t pc, Unit& u) {
  const std::uint64_t id = next_dyn_;
  push_dyn(pc);
  const std::uint32_t ndeps = dependencies(pc, id, u);
  u.queue.push_back(
      Unit::Entry{id, now() + static_cast<double>(chip_.core.sequencer.dispatch_latency) * cycle_s_, ndeps, 0});
  if (u.kind == isa::Unit::kIci) u.queue.back().collective = collectives_dispatched_++;
  count(counters_.instructions, 1, pc);
  if (u.idle) sched_->notify(u.pushed);
}

void TensorCore::push_dyn(std::uint32_t pc) {
  if (next_dyn_ - dyn_base_ == dyn_ring_.size()) {
    std::vector<Dyn> bigger(std::max<std::size_t>(64, 2 * dyn_ring_.size()));
    const std::uint64_t mask = bigger.size() - 1;
    for (std::uint64_t id = dyn_base_; id < next_dyn_; ++id) bigger[id & mask] = dyn(id);
    dyn_ring_ = std::move(bigger);
    dyn_mask_ = mask;
  }
  dyn_ring_[next_dyn_ & dyn_mask_] = Dyn{pc, -1, -1};
  ++next_dyn_;
}

CoTask TensorCore::wait_all_done(bool include_collectives, std::optional<isa::Unit> only) {
  // Collectives are the ICI units' instructions.
  const auto counted = [&](isa::Unit u) { return only ? u == *only : include_collectives || u != isa::Unit::kIci; };
  while (true) {
    bool pending = false;
    double latest = now();
    for (const auto& u : units_) {
      pending = pending || (!u->queue.empty() && counted(u->kind));
      // One kind of unit (mxu.fence, once per tile-loop step): a unit whose
      // queue is empty has recorded every instruction it took (last_done),
      // so the dynamic instructions need no scan.
      if (only && u->kind == *only) latest = std::max(latest, u->last_done);
    }
    if (!pending && !only) {
      for (std::uint64_t id = dyn_base_; id < next_dyn_; ++id) {
        const Dyn& d = dyn(id);
        if (!counted(isa::opcode_info(isa::opcode(program_.code[d.pc].op)).unit)) continue;
        if (d.start < 0) pending = true;
        latest = std::max(latest, d.done);
      }
    }
    if (pending) {
      co_await CoreScheduler::on(any_popped_);
      continue;
    }
    if (latest > now() + kTimeEps) {
      co_await until(latest);
      continue;
    }
    co_return;
  }
}

bool TensorCore::match_repeats() {
  std::vector<std::uint32_t>& match = repeat_match_;
  match.assign(program_.code.size(), 0);
  std::vector<std::uint32_t> open;
  for (std::uint32_t pc = 0; pc < program_.code.size(); ++pc) {
    const auto op = isa::opcode(program_.code[pc].op);
    if (op == isa::Opcode::kRepeat) open.push_back(pc);
    if (op == isa::Opcode::kEnd && !open.empty()) {
      match[open.back()] = pc;
      match[pc] = open.back();
      open.pop_back();
    }
    if (op == isa::Opcode::kEnd && open.empty() && match[pc] == 0 && pc > 0 &&
        isa::opcode(program_.code[0].op) != isa::Opcode::kRepeat) {
      error_ = fmt::format("{}: `end` without `repeat`", where(pc));
    }
  }
  if (!open.empty()) error_ = fmt::format("{}: `repeat` without `end`", where(open.back()));
  return error_.empty();
}

LoopFrame* TensorCore::enter_repeat(std::uint32_t pc, std::uint32_t& next) {
  const auto& r = std::get<isa::Repeat>(program_.code[pc].op);
  if (r.count <= 0 || repeat_match_[pc] == pc + 1) {  // no iterations, or an empty body (takes no time)
    next = repeat_match_[pc] + 1;
    return nullptr;
  }
  const bool sampled = loops_.policy().samples(r.count) && loop_ids_[pc] != kNotSampled;
  LoopKey key{};
  if (sampled) {
    if (loop_entries_.empty()) loop_entries_.assign(program_.code.size(), 0);
    key = {loop_ids_[pc], loop_entries_[pc]++};
  }
  LoopFrame& l = loops_.enter(pc + 1, r.count, sampled, pc, key);
  // Boundary 0, the loop's entry, is sampled when there is no warm-up.
  return sampled && loops_.policy().warmup == 0 ? &l : nullptr;
}

LoopFrame* TensorCore::end_iteration(std::uint32_t& next) {
  if (loops_.empty() || --loops_.top().remaining <= 0) return nullptr;
  next = loops_.top().begin;
  if (!loops_.top().sampled) return nullptr;
  ++loops_.top().done;
  return &loops_.top();
}

void TensorCore::leave_loop() {
  if (loops_.empty()) return;
  if (loops_.top().sampled && coordinator_ != nullptr) coordinator_->leave(loops_.top().key, coordinator_index_);
  loops_.leave();
}

void TensorCore::show_progress() {
  if ((++progress_ticks_ & 0xfff) == 0 && Progress::global().due()) {
    Progress::global().update("simulating",
                              fmt::format("{:.4g} ms simulated ({})", (now() + loops_.skipped().offset_s) * 1e3, prefix_));
  }
}

void TensorCore::finish_program() {
  retire();
  end_s_ = retirement_.retired_until();
  for (std::uint64_t id = dyn_base_; id < next_dyn_; ++id) end_s_ = std::max(end_s_, dyn(id).done);
  end_s_ = std::max(end_s_, retirement_.collective_done());  // its record may be dropped already
  const double last = retirement_.retired_until();
  retirement_.finish(end_s_, prov_);
  if (core_trace_) core_trace_->finish(last, end_s_, prov_);
  if (reuse_.active()) {
    reuse_.enter(-1, readings());
    reused_ = reuse_.apply(prov_, loops_.skipped(), [this](const FabricCounters& a, const FabricCounters& b,
                                                            std::int64_t times) { spmd_.fabric->add_repeats(a, b, times); });
  }
  end_s_ += loops_.skipped().offset_s;
  counters_.cycles->value = std::round(end_s_ / cycle_s_);
  finished_ = true;
}

CoTask TensorCore::sequencer() {
  if (reuse_.active()) reuse_.bind(stats_, prefix_, reuse_stat_prefixes_);
  if (!match_repeats()) co_return;
  number_coordinated_loops();

  const auto width = static_cast<std::uint64_t>(std::max<std::int64_t>(1, chip_.core.sequencer.issue_width));
  std::uint64_t issued_this_cycle = 0;
  std::uint32_t pc = 0;
  while (pc < program_.code.size()) {
    const isa::Instruction& inst = program_.code[pc];
    const isa::Opcode op = isa::opcode(inst.op);
    std::uint32_t next = pc + 1;
    if (op == isa::Opcode::kRepeat) {
      bool skip = false;  // (never at the entry: no samples yet)
      if (LoopFrame* l = enter_repeat(pc, next)) co_await loop_boundary(*l, skip);
    } else if (op == isa::Opcode::kEnd) {
      if (LoopFrame* l = end_iteration(next)) {
        bool skip = false;
        co_await loop_boundary(*l, skip);
        if (skip) next = pc + 1;  // the rest was extrapolated
      }
      if (next == pc + 1) leave_loop();
    } else if (op == isa::Opcode::kSemWait) {
      const auto& w = std::get<isa::SemWait>(inst.op);
      const double from = now();
      while (sem_[w.sem.id] < w.count) {
        sequencer_waiting_ = Waiting{Waiting::Kind::kSemaphore, pc, w.sem.id, w.count};
        co_await CoreScheduler::on(sem_changed_);
      }
      sequencer_waiting_ = {};
      sem_[w.sem.id] -= w.count;
      count(sequencer_stats_.stall_semaphore_cycles, (now() - from) / cycle_s_, pc);
    } else if (op == isa::Opcode::kSemSignal) {
      const auto& s = std::get<isa::SemSignal>(inst.op);
      sem_[s.sem.id] += s.count;
      sched_->notify(sem_changed_);
    } else if (op == isa::Opcode::kBarrier) {
      const double from = now();
      sequencer_waiting_ = Waiting{Waiting::Kind::kBarrier, pc, 0, 0};
      co_await wait_all_done();
      sequencer_waiting_ = {};
      count(sequencer_stats_.stall_barrier_cycles, (now() - from) / cycle_s_, pc);
    } else if (op == isa::Opcode::kCoreBarrier) {
      const double from = now();
      sequencer_waiting_ = Waiting{Waiting::Kind::kBarrier, pc, 0, 0};
      co_await wait_all_done(false);
      if (core_sync_ != nullptr) {
        sequencer_waiting_ = Waiting{Waiting::Kind::kCoreBarrier, pc, 0, 0};
        const std::uint64_t generation = core_sync_->arrive();
        while (core_sync_->generation() == generation) co_await CoreScheduler::on(core_sync_->released());
      }
      sequencer_waiting_ = {};
      count(sequencer_stats_.stall_core_barrier_cycles, (now() - from) / cycle_s_, pc);
    } else if (op == isa::Opcode::kMxuFence) {
      const double from = now();
      sequencer_waiting_ = Waiting{Waiting::Kind::kMxuFence, pc, 0, 0};
      co_await wait_all_done(false, isa::Unit::kMxu);
      sequencer_waiting_ = {};
      count(sequencer_stats_.stall_mxu_fence_cycles, (now() - from) / cycle_s_, pc);
    } else if (op == isa::Opcode::kDelay) {
      // A fixed stall (a kernel's start-up cost): no unit is involved.
      const std::int64_t cycles = std::get<isa::Delay>(inst.op).cycles;
      if (cycles > 0) {
        // (The whole span at once, rounded to the time resolution, not N rounded cycles.)
        co_await until(now() + static_cast<double>(cycles) * cycle_s_);
        count(sequencer_stats_.stall_delay_cycles, static_cast<double>(cycles), pc);
      }
    } else {
      Unit& u = unit_for(inst);
      const double stall_from = now();
      while (u.queue.size() >= kQueueDepth) {
        sequencer_waiting_ = Waiting{Waiting::Kind::kQueueSlot, pc, 0, 0, u.slot};
        co_await CoreScheduler::on(any_popped_);
      }
      count(sequencer_stats_.stall_queue_full_cycles, (now() - stall_from) / cycle_s_, pc);
      sequencer_waiting_ = {};
      dispatch(pc, u);
    }
    show_progress();
    if (++issued_this_cycle >= width) {
      co_await sched_->at(sched_->now() + one_cycle_.value());
      issued_this_cycle = 0;
    }
    pc = next;
  }
  program_done_ = true;
  if (coordinator_ != nullptr && coordinator_index_ == 0) coordinator_->leader_finished();
  sequencer_waiting_ = Waiting{Waiting::Kind::kEnd, 0, 0, 0};
  co_await wait_all_done();
  sequencer_waiting_ = {};
  finish_program();
}

CoTask TensorCore::run_unit(Unit& u) {
  while (true) {
    while (u.queue.empty()) {
      u.idle = true;
      co_await CoreScheduler::on(u.pushed);
      u.idle = false;
    }
    const Unit::Entry entry = u.queue.front();
    const std::uint64_t id = entry.id;
    co_await until(entry.visible_at);
    const double dep_from = now();
    // By index: the sequencer may append to dep_ids while this unit waits.
    for (std::uint32_t k = 0; k < entry.deps; ++k) {
      const std::uint64_t dep = u.dep_ids[k];
      // (A record dropped from the ring has started and completed.)
      while (dep >= dyn_base_ && dyn(dep).start < 0) {
        u.waiting = Waiting{Waiting::Kind::kStart, dyn(dep).pc, 0, 0};
        co_await CoreScheduler::on(any_started_);
      }
      if (dep >= dyn_base_ && dyn(dep).done > now() + kTimeEps) {
        u.waiting = Waiting{Waiting::Kind::kComplete, dyn(dep).pc, 0, 0};
        co_await until(dyn(dep).done);
      }
      u.waiting = {};
    }
    const std::uint32_t pc = dyn(id).pc;
    const isa::Instruction& inst = program_.code[pc];
    // Reuse: what this instruction adds to the counters belongs to its
    // section. Everything below runs without yielding (a collective's wait
    // for its group aside, done before the snapshot), so the change of the
    // counters over it is this instruction's alone.
    const int section = reuse_.section(inst.provenance);
    const bool collective_wait =
        u.kind == isa::Unit::kIci && spmd_.fabric != nullptr && std::holds_alternative<isa::Collective>(inst.op);
    if (section >= 0 && !collective_wait) reuse_.snapshot();
    *u.counters.dependency_stall_cycles += (now() - dep_from) / cycle_s_;
    // Exec times are relative to when the instruction was taken (a collective
    // in full mode waits for the other members of its group).
    const double t = now();
    u.collective = entry.collective;
    Exec e;
    if (u.kind == isa::Unit::kIci && spmd_.fabric != nullptr && std::holds_alternative<isa::Collective>(inst.op)) {
      u.taken_at = t;
      co_await sched_->sync();  // the fabric orders the chips' issues by the kernel's clock
      auto ticket = spmd_.fabric->issue(spmd_.device, program_, pc, u.collective, where(pc));
      if (!ticket.ok()) {
        error_ = ticket.errors().front().message;
        co_return;
      }
      double completion = 0;
      co_await run_collective(u, *ticket, pc, section, &completion);
      if (section >= 0) reuse_.snapshot();
      const double rel = std::max(completion - t, cycle_s_);
      e = Exec{0, rel, rel, rel, Resource::kIci};
    } else {
      e = execute(u, inst, dyn(id));
    }
    if (!error_.empty()) co_return;
    // An engine completes its transfers in order.
    if (u.kind == isa::Unit::kDma) e.done = std::max(e.done, u.last_done - t);
    const double done_at = record(u, inst, id, t, e, section);
    if (CoreScheduler::has_waiters(any_started_)) sched_->notify(any_started_);
    retire();
    // A DMA engine is free once it has issued its transfer's requests; the
    // data arrives (and the semaphore is signalled) an HBM latency or more
    // later, while the engine issues its next transfer (complete_transfers).
    u.last_done = std::max(u.last_done, done_at);
    if (u.kind == isa::Unit::kDma) {
      u.in_flight.push_back(Unit::InFlight{done_at, pc});
      if (CoreScheduler::has_waiters(u.issued)) sched_->notify(u.issued);
    }
    co_await until(t + e.free);
    // A collective signals its semaphore when it completes.
    if (u.kind == isa::Unit::kIci) {
      co_await until(done_at);
      signal_semaphore(inst);
    }
    u.queue.pop_front();
    for (std::uint32_t k = 0; k < entry.deps; ++k) u.dep_ids.pop_front();
    if (CoreScheduler::has_waiters(any_popped_)) sched_->notify(any_popped_);
  }
}

CoTask TensorCore::complete_transfers(Unit& u) {
  while (true) {
    while (u.in_flight.empty()) co_await CoreScheduler::on(u.issued);
    const Unit::InFlight f = u.in_flight.front();
    co_await until(f.done_at);
    u.in_flight.pop_front();
    signal_semaphore(program_.code[f.pc]);
  }
}

double TensorCore::record(Unit& u, const isa::Instruction& inst, std::uint64_t id, double t, const Exec& e,
                          int section) {
  // A collective waits for its group or completion; the ring may have grown meanwhile.
  Dyn& d = dyn(id);
  d.start = t + e.begin;
  d.done = t + e.done;
  const double busy = e.busy_end - e.begin;
  ProvenanceStats& ps = prov_[inst.provenance];
  ps.instructions += 1;
  ps.busy_s += busy;
  ps.busy_by[static_cast<std::size_t>(e.resource)] += busy;
  *u.counters.busy_cycles += busy / cycle_s_;
  *u.counters.instructions += 1;
  if (u.kind == isa::Unit::kIci) {
    busy_time_.add_comm(d.start, d.done);
  } else if (busy > 0) {
    busy_time_.add_compute(d.start, t + e.busy_end);
  }
  if (section >= 0) reuse_.add_since(section);
  // Every later interval begins at or after the time its unit takes its
  // instruction: now, or earlier for a collective still waiting for its group.
  u.taken_at = kNotTaken;
  double horizon = now();
  for (const Unit* ici : icis_) horizon = std::min(horizon, ici->taken_at);
  busy_time_.maybe_fold_before(horizon);
  if (trace_ != nullptr && u.track >= 0) {
    const auto prov = program_.provenance(inst);
    const double shown = loops_.skipped().reported(d.start);
    trace_->slice(u.track, prov.empty() ? isa::opcode_info(isa::opcode(inst.op)).mnemonic : prov, shown,
                  shown + (t + std::max(e.busy_end, e.begin + cycle_s_) - d.start));
  }
  return d.done;  // (no Dyn reference across a wait: the ring may grow)
}

void TensorCore::signal_semaphore(const isa::Instruction& inst) {
  std::visit(
      [&](const auto& o) {
        if constexpr (requires { o.sem; }) {
          if (o.sem.present()) sem_[o.sem.id] += 1;
        }
      },
      inst.op);
  sched_->notify(sem_changed_);
}

TensorCore::Exec TensorCore::execute(Unit& u, const isa::Instruction& inst, Dyn& d) {
  if (u.kind == isa::Unit::kMxu) return execute_mxu(u, inst, d);
  Unit::CostMemo& memo = u.cost_memo[d.pc % u.cost_memo.size()];
  if (memo.pc != d.pc) {
    memo.cost = instruction_cost(chip_, program_, inst);
    memo.pc = d.pc;
  }
  const InstructionCost& c = memo.cost;
  const double t = now();
  double occupy = static_cast<double>(c.timing.issue) * cycle_s_;
  double done = static_cast<double>(c.timing.done) * cycle_s_;
  ProvenanceStats& ps = prov_[inst.provenance];
  if (c.hbm_tile) {
    // HBM is shared by every DMA engine (and core): queue on the device.
    const double hbm_end = hbm_access(*c.hbm_tile, c.hbm_write);
    done = std::max(done, hbm_end);
    // The engine issued its last request an access latency before the last
    // data arrived (queueing behind other transfers included).
    occupy = std::max(occupy, hbm_end - chip_.hbm.latency);
    ps.hbm_bytes += static_cast<double>(c.hbm_tile->useful_bytes());
  }
  if (c.host_bytes > 0) {
    const double end = host_link_[c.host_to_device ? 1 : 0].reserve(t, host_transfer_seconds(chip_.host, c.host_bytes)) - t;
    done = std::max(done, end);
    occupy = std::max(occupy, done);
  }
  // What the busy time goes to: the unit's own work, HBM for a DMA with an
  // HBM side, VMEM when its bandwidth held the instruction up.
  Resource resource = u.kind == isa::Unit::kVpu ? c.timing.limit
                      : u.kind == isa::Unit::kEup ? Resource::kEup
                      : u.kind == isa::Unit::kXlu ? Resource::kXlu
                      : u.kind == isa::Unit::kIci ? Resource::kIci
                      : c.host_bytes > 0          ? Resource::kHost
                      : c.hbm_tile               ? Resource::kHbm
                                                 : Resource::kVmem;
  if (c.vmem_bytes > 0) {
    const double service = static_cast<double>(c.vmem_bytes) / chip_.core.vmem.bytes_per_cycle * cycle_s_;
    const double end = vmem_.reserve(t, service) - t;
    *vmem_stats_.bytes += static_cast<double>(c.vmem_bytes);
    *vmem_stats_.busy_cycles += service / cycle_s_;
    if (end > done && !c.hbm_tile) resource = Resource::kVmem;
    done = std::max(done, end);
    occupy = std::max(occupy, std::min(end, done));
  }
  if (u.flops != nullptr) *u.flops += c.flops;
  if (u.bytes != nullptr) *u.bytes += static_cast<double>(c.hbm_tile ? c.hbm_tile->useful_bytes() : c.vmem_bytes / 2);
  ps.flops += c.flops;
  ps.bf16_flops += c.flops;
  ps.transcendentals += c.transcendentals;
  return Exec{0, occupy, occupy, done, resource};
}

double TensorCore::hbm_access(const StridedTile& tile, bool write) {
  tlm::tlm_generic_payload& payload = hbm_payload_;
  StridedTileExtension ext;
  ext.tile = tile;
  payload.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  payload.set_address(tile.offset);
  payload.set_data_length(static_cast<unsigned>(std::min<Bytes>(tile.useful_bytes(), 0xffffffffu)));
  payload.set_data_ptr(nullptr);
  payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  payload.set_extension(&ext);
  // The request leaves at this core's time: in run-ahead mode, ahead of the
  // kernel's by the annotated delay (TLM-2.0 loosely timed).
  const sc_time ahead = sched_->run_ahead() ? sched_->offset() : sc_core::SC_ZERO_TIME;
  sc_time delay = ahead;
  hbm_socket->b_transport(payload, delay);
  payload.clear_extension(&ext);
  const double end = (delay - ahead).to_seconds();
  if (core_trace_) {
    // The device served the transfer in its last transfer_seconds.
    const double service = hbm_transfer(chip_.hbm, tile).transfer_seconds;
    core_trace_->hbm(now(), now() + end - service, now() + end, static_cast<double>(tile.useful_bytes()));
  }
  return end;
}

CoTask TensorCore::run_collective(Unit& u, const CollectiveFabric::Ticket& ticket, std::uint32_t pc, int section,
                                  double* done_at) {
  const HbmBytes hbm = collective_hbm_bytes(chip_.ici.hbm_traffic, ticket.share);
  // Chunks of at least 1 MiB, at most 1024 per collective: each a read and a
  // write of its share, the FIFO device interleaving them with the DMAs.
  constexpr double kMinChunk = 1024.0 * 1024.0;
  constexpr double kMaxChunks = 1024;
  const double total = hbm.read + hbm.write;
  const std::int64_t chunks =
      total > 0 ? static_cast<std::int64_t>(std::clamp(std::ceil(total / kMinChunk), 1.0, kMaxChunks)) : 0;
  const auto tile_of = [&](double bytes) {
    StridedTile tile;
    tile.rows = 1;
    tile.row_bytes = chunks > 0 ? static_cast<Bytes>(std::ceil(bytes / static_cast<double>(chunks))) : 0;
    tile.stride_bytes = tile.row_bytes;
    return tile;
  };
  const StridedTile read = tile_of(hbm.read);
  const StridedTile write = tile_of(hbm.write);
  ProvenanceStats& ps = prov_[program_.code[pc].provenance];
  std::int64_t issued = 0;
  double hbm_end = 0;  // absolute: the last chunk's data arrived
  CollectiveFabric::Poll p = spmd_.fabric->poll(ticket);
  while (true) {
    if (p.ready && p.start < 0) p.start = now();
    // The network window as known now: chunk k is due at k/chunks of it.
    const double end = p.ready ? p.completion : p.until_s;
    const bool known = p.start >= 0 && std::isfinite(end);
    const auto due = [&](std::int64_t k) {
      return p.start + (end - p.start) * static_cast<double>(k) / static_cast<double>(chunks);
    };
    while (issued < chunks && known && due(issued) <= now() + kTimeEps) {
      if (section >= 0) reuse_.snapshot();
      for (const StridedTile* tile : {&read, &write}) {
        if (tile->row_bytes == 0) continue;
        hbm_end = std::max(hbm_end, now() + hbm_access(*tile, tile == &write));
        ps.hbm_bytes += static_cast<double>(tile->useful_bytes());
      }
      if (section >= 0) reuse_.add_since(section);
      ++issued;
    }
    if (p.ready && issued == chunks) break;
    const double next = issued < chunks && known ? due(issued) : std::numeric_limits<double>::infinity();
    if (p.ready) {
      co_await until(next);
      continue;
    }
    u.waiting = Waiting{Waiting::Kind::kCollective, pc, 0, 0};
    const double dt = std::min(next, p.until_s) - now();
    co_await sched_->external(p.event, std::isfinite(dt) ? sched_->now() + ticks(std::max(dt, 0.0))
                                                         : CoreScheduler::kNever);
    p = spmd_.fabric->poll(ticket);
  }
  u.waiting = {};
  *done_at = std::max(p.completion, hbm_end);
}

TensorCore::Exec TensorCore::execute_mxu(Unit& u, const isa::Instruction& inst, Dyn& d) {
  const MxuConfig& mxu = chip_.core.mxu;
  const bool bare = !mxu.double_buffered_weights || mxu.dataflow != Dataflow::kWs;
  const double t = now();
  ProvenanceStats& ps = prov_[inst.provenance];
  auto vmem = [&](Bytes bytes) {
    if (bytes == 0) return t;
    const double service = static_cast<double>(bytes) / chip_.core.vmem.bytes_per_cycle * cycle_s_;
    *vmem_stats_.bytes += static_cast<double>(bytes);
    *vmem_stats_.busy_cycles += service / cycle_s_;
    return vmem_.reserve(t, service);
  };
  auto relative = [t](const MxuStep& s, Resource r = Resource::kMxuCompute) {
    return Exec{s.begin - t, s.busy_end - t, s.free - t, s.done - t, r};
  };
  if (const auto* lw = std::get_if<isa::MxuLoadWeights>(&inst.op)) {
    // os arrays hold outputs, not weights: nothing shifts in (SCALE-Sim's zero prefix).
    const double load = (mxu.dataflow == Dataflow::kOs ? 0.0 : static_cast<double>(mxu_weight_load_cycles(mxu))) * cycle_s_;
    const double vmem_end = vmem(tile_bytes(program_, lw->src));
    return relative(mxu_load_weights(u.mxu, bare, t, load, vmem_end, lw->src.rows, lw->src.cols),
                    Resource::kMxuWeights);
  }
  if (const auto* mm = std::get_if<isa::MxuMatmul>(&inst.op)) {
    if (!u.mxu.weights_loaded) {
      error_ = fmt::format("{}: mxu.matmul on {} with no weights loaded", where(d.pc), u.name);
      return {};
    }
    const isa::DType dt = program_.buffers[mm->lhs.buffer].dtype;
    MatmulTile tile;
    tile.m_rows = mm->lhs.rows;
    tile.k_depth = std::min<std::int64_t>(mm->lhs.cols, u.mxu.weight_k);
    tile.n_cols = u.mxu.weight_n;
    tile.mac_rate = isa::mxu_rate(mxu.rate, dt);
    if (tile.mac_rate <= 0) {
      error_ = fmt::format("{}: the configured MXU does not support {} inputs (core.mxu.rate is 0)", where(d.pc),
                           isa::name(dt));
      return {};
    }
    const MatmulTiming mt = mxu_matmul_timing(mxu, tile);
    const double vmem_end = vmem(tile_bytes(program_, mm->lhs));
    const MxuStep step = mxu_matmul(u.mxu, t, static_cast<double>(mt.issue) * cycle_s_,
                                    (static_cast<double>(mt.latency) - static_cast<double>(mt.issue)) * cycle_s_,
                                    vmem_end, mm->acc, mm->lhs.rows);
    const double flops = 2.0 * static_cast<double>(tile.m_rows) * static_cast<double>(tile.k_depth) *
                         static_cast<double>(tile.n_cols);
    *u.flops += flops;
    ps.flops += flops;
    ps.bf16_flops += flops * mxu.rate.bf16 / tile.mac_rate;
    return relative(step);
  }
  if (const auto* pop = std::get_if<isa::MxuPop>(&inst.op)) {
    const Cycles c = mxu_pop_cycles(pop->dst.rows, pop->dst.cols, chip_.core.vpu.sublanes, chip_.core.vpu.lanes);
    const double vmem_end = vmem(tile_bytes(program_, pop->dst));
    return relative(mxu_pop(u.mxu, t, static_cast<double>(c) * cycle_s_, vmem_end, pop->acc, pop->dst.rows));
  }
  return {};
}

// --- Steady-state loop extrapolation (sim/loop_extrapolation.h) -----------

void TensorCore::set_loop_coordination(LoopCoordinator* coordinator, std::vector<std::string> stat_prefixes) {
  coordinator_ = coordinator;
  // Cores that extrapolate loops together meet at every sampled boundary:
  // they keep in step with the kernel's clock, so waiting for the leader's
  // decision costs no more simulated time than it did.
  if (coordinator != nullptr && loops_.policy().mode != LoopMode::kFull) sched_->set_run_ahead(false);
  coordinator_index_ = coordinator != nullptr ? coordinator->join() : 0;
  loop_stat_prefixes_ = std::move(stat_prefixes);
}

void TensorCore::number_coordinated_loops() {
  // A loop's identity for the coordinator: its rank among the loops that may
  // be sampled, in program order. The chips of an SPMD run share one program,
  // so every loop may be sampled. The TensorCores of a megacore chip run
  // different programs with the same sections: only loops whose body holds a
  // `core.barrier` (an HLO while around sections) are in every core's program,
  // in the same order and with the same count; the others (a kernel's chunk
  // loops, different per core) run in full, as extrapolating one core's loop
  // alone would change what the other sees of the shared HBM.
  loop_ids_.assign(program_.code.size(), kNotSampled);
  std::uint32_t next_id = 0;
  for (std::uint32_t pc = 0; pc < program_.code.size(); ++pc) {
    if (isa::opcode(program_.code[pc].op) != isa::Opcode::kRepeat) continue;
    bool spans_sections = false;
    for (std::uint32_t i = pc + 1; i < repeat_match_[pc] && !spans_sections; ++i) {
      spans_sections = isa::opcode(program_.code[i].op) == isa::Opcode::kCoreBarrier;
    }
    if (core_sync_ == nullptr || spans_sections) loop_ids_[pc] = next_id++;
  }
}

const LoopTracker::Body& TensorCore::loop_body(std::uint32_t repeat_pc) {
  auto [it, fresh] = loop_bodies_.try_emplace(repeat_pc);
  if (fresh) {
    LoopTracker::Body& b = it->second;
    for (std::uint32_t pc = repeat_pc; pc <= repeat_match_[repeat_pc]; ++pc) {
      b.prov.push_back(program_.code[pc].provenance);
      b.collectives = b.collectives || isa::opcode(program_.code[pc].op) == isa::Opcode::kCollective;
    }
    std::sort(b.prov.begin(), b.prov.end());
    b.prov.erase(std::unique(b.prov.begin(), b.prov.end()), b.prov.end());
    const isa::Instruction& rep = program_.code[repeat_pc];
    b.repeat_prov = rep.provenance;
    b.label = std::string(program_.provenance(rep));
    b.where = fmt::format("{}:{}:{}", program_.file, rep.loc.line, rep.loc.column);
  }
  return it->second;
}

std::uint64_t TensorCore::state_hash() const {
  // FNV-1a over the discrete state a periodic schedule must repeat.
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&](std::uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
  };
  for (const auto& u : units_) {
    mix(u->queue.size() * 2 + (u->mxu.weights_loaded ? 1 : 0));
    mix(u->in_flight.size());
  }
  // Which instructions are in flight, in order: equal counts are not enough
  // (a queue still draining the previous loop's tail has the same length).
  mix(next_dyn_ - retired_);
  for (std::uint64_t id = retired_; id < next_dyn_; ++id) mix(dyn_ring_[static_cast<size_t>(id & dyn_mask_)].pc);
  for (const std::int64_t v : sem_) mix(static_cast<std::uint64_t>(v));
  return h;
}

void TensorCore::loop_snapshot(const LoopFrame& l, LoopSnapshot& out) {
  if (loop_stats_.empty()) {
    const std::string own = prefix_ + ".";
    for (const auto& [name, st] : stats_.all()) {
      bool mine = name.starts_with(own);
      for (const auto& p : loop_stat_prefixes_) mine = mine || name.starts_with(p);
      if (mine) loop_stats_.push_back(&stats_.add(name, st.unit, st.desc));  // (exists: no insertion)
    }
  }
  out.stats.resize(loop_stats_.size());
  for (std::size_t i = 0; i < loop_stats_.size(); ++i) out.stats[i] = loop_stats_[i]->value;
  const LoopTracker::Body& body = loop_body(l.repeat_pc);
  out.prov.resize(body.prov.size());
  for (std::size_t i = 0; i < body.prov.size(); ++i) out.prov[i] = prov_[body.prov[i]];
  out.compute_s = busy_time_.compute_running();
  out.comm_s = busy_time_.comm_running();
  // Exposed communication needs a sweep over both unions: only for loops with collectives.
  out.exposed_s = body.collectives ? busy_time_.exposed() : 0.0;
  if (body.collectives && spmd_.fabric != nullptr && coordinator_index_ == 0) out.fabric = spmd_.fabric->counters();
}

CoTask TensorCore::loop_boundary(LoopFrame& l, bool& skip) {
  // Sample iterations after the warm-up; the last three boundaries decide.
  skip = false;
  if (l.done < loops_.policy().warmup) co_return;
  const double offset = loops_.skipped().offset_s;
  BoundarySample s;
  s.issue_s = now() + offset;
  s.retired_s = retirement_.retired_until() + offset;
  for (const auto& u : units_) s.busy_cycles += u->counters.busy_cycles->value;
  s.state = state_hash();
  LoopSnapshot* fill = nullptr;
  if (!loops_.sample(l, s, fill)) co_return;
  loop_snapshot(l, *fill);
  if (!LoopTracker::decidable(l)) co_return;

  double iteration_s = 0;
  if (coordinator_ == nullptr || coordinator_index_ == 0) {
    const auto steady = loops_.steady_iteration(l);
    skip = steady.has_value();
    if (skip) iteration_s = *steady;
    if (coordinator_ != nullptr && coordinator_->cores() > 1) coordinator_->publish(l.key, l.done, iteration_s);
  } else {
    // A follower skips exactly where the leader did (its collectives must match).
    LoopCoordinator::Verdict v;
    while ((v = coordinator_->follow(l.key, l.done, iteration_s)) == LoopCoordinator::Verdict::kWait) {
      sequencer_waiting_ = Waiting{Waiting::Kind::kLoopLeader, l.repeat_pc, 0, l.done};
      co_await sched_->external(&coordinator_->changed());
    }
    sequencer_waiting_ = {};
    skip = v == LoopCoordinator::Verdict::kSkip;
  }
  if (skip) skip_rest(l, iteration_s);
}

void TensorCore::skip_rest(const LoopFrame& l, double iteration_s) {
  const LoopTracker::Body& body = loop_body(l.repeat_pc);
  const std::vector<double> gains = loops_.skip_rest(l, iteration_s, now(), body, prov_);
  for (std::size_t i = 0; i < loop_stats_.size(); ++i) *loop_stats_[i] += gains[i];
  // A loop of a reused section: its skipped iterations are that section's.
  reuse_.add_gains(reuse_.section(body.repeat_prov), loop_stats_, gains);
  if (body.collectives && spmd_.fabric != nullptr && coordinator_index_ == 0) {
    spmd_.fabric->add_repeats(l.prev.fabric, l.cur.fabric, l.remaining);
  }
}

void TensorCore::count(Stat* stat, double v, std::uint32_t pc) {
  reuse_.count(stat, v, reuse_.section(program_.code[pc].provenance));
}

CoreReadings TensorCore::readings() const {
  CoreReadings r;
  r.compute_s = busy_time_.compute_running();
  r.comm_s = busy_time_.comm_running();
  if (spmd_.fabric != nullptr) {
    r.exposed_s = busy_time_.exposed();
    if (spmd_.device == 0) r.fabric = spmd_.fabric->counters();
  }
  return r;
}

void TensorCore::retire() {
  while (retired_ < next_dyn_) {
    const Dyn& d = dyn(retired_);
    if (d.start < 0) break;
    const isa::Instruction& inst = program_.code[d.pc];
    if (const int section = reuse_.section(inst.provenance); section != reuse_.window()) {
      reuse_.enter(section, readings());
    }
    const double from = retirement_.retired_until();
    retirement_.retire(d.start, d.done, isa::opcode(inst.op) == isa::Opcode::kCollective, inst.provenance, prov_);
    if (core_trace_) core_trace_->retire(d.pc, from, prov_);
    ++retired_;
  }
  // Drop records that are retired and complete (bounded memory).
  const double t = now();
  while (dyn_base_ < next_dyn_ && dyn_base_ < retired_ && dyn(dyn_base_).done <= t + kTimeEps) {
    ++dyn_base_;
  }
}

std::string TensorCore::describe(const Waiting& w, const std::string& /*unit_name*/) const {
  switch (w.kind) {
    case Waiting::Kind::kQueueSlot:
      return fmt::format("a free slot in the {} queue for {}", units_[w.unit]->name, where(w.pc));
    case Waiting::Kind::kSemaphore:
      return fmt::format("semaphore '{}' to reach {} (it is {}) at {}", program_.semaphores[w.sem].name, w.count,
                         sem_[w.sem], where(w.pc));
    case Waiting::Kind::kBarrier: return fmt::format("every earlier instruction to complete at {}", where(w.pc));
    case Waiting::Kind::kMxuFence:
      return fmt::format("the MXUs' earlier instructions to complete at {}", where(w.pc));
    case Waiting::Kind::kCoreBarrier:
      return fmt::format("the chip's other TensorCores to reach core.barrier {}", where(w.pc));
    case Waiting::Kind::kEnd: return "the last instructions to complete";
    case Waiting::Kind::kStart: return fmt::format("{} to start", where(w.pc));
    case Waiting::Kind::kComplete: return fmt::format("{} to complete", where(w.pc));
    case Waiting::Kind::kCollective:
      return fmt::format("the other members of its replica group to issue {}", where(w.pc));
    case Waiting::Kind::kLoopLeader:
      return fmt::format("the leading core to decide on extrapolating the loop at {} (iteration {})", where(w.pc),
                         w.count);
    case Waiting::Kind::kNone: break;
  }
  return {};
}

CoreUse TensorCore::use() const {
  CoreUse c;
  c.core = counters_.values();
  c.sequencer = sequencer_stats_.values();
  c.vmem = vmem_stats_.values();
  for (const auto& u : units_) {
    c.units.push_back(UnitUse{u->name, u->kind, u->counters.values(), u->flops != nullptr ? u->flops->value : 0.0,
                              u->bytes != nullptr ? u->bytes->value : 0.0});
  }
  return c;
}

std::vector<std::string> TensorCore::blocked() const {
  std::vector<std::string> out;
  if (sequencer_waiting_.kind != Waiting::Kind::kNone) {
    out.push_back("sequencer waits for " + describe(sequencer_waiting_, ""));
  }
  for (const auto& u : units_) {
    if (u->waiting.kind != Waiting::Kind::kNone) {
      out.push_back(fmt::format("{} waits for {}", u->name, describe(u->waiting, u->name)));
    }
  }
  return out;
}

}  // namespace tpusim
