// What a TensorCore's ICI unit calls to run a collective instruction in a
// multi-chip simulation; the only SystemC-aware piece of the SPMD model, and
// a thin one: every time comes from a CollectiveTimer (collective_timer.h).
//
// - Symmetric mode: one representative chip is simulated; by SPMD symmetry
//   every chip issues the collective when it does, so it completes at
//   issue + the network time of all groups running at once.
// - Full mode: every chip is simulated. The n-th collective a device issues
//   is matched with the n-th of every other member of its replica group (of
//   the connected component of its source/target pairs for a permute); it
//   completes for all of them at (the last member's issue) + the network time.
//   A member that never arrives leaves the others waiting; blocked() names who
//   waits for whom, for the deadlock report.
// - Concurrent collectives (`concurrent` = ici.concurrent_collectives > 1):
//   a collective that starts while others are in flight shares the links
//   with them. The fabric keeps the busy period (collectives since the last
//   moment none was in flight, each with its start time) and, whenever one
//   starts, re-times the whole period on one network run
//   (CollectiveTimer::time_together); collectives still in flight get their
//   new completion and their waiters are woken to re-check it. In full mode
//   the n-th collective of a device (program order) is one network job for
//   all its groups, started when its first group is complete; each group
//   completes at its last member's issue + the job's time.
#pragma once

#include <array>
#include <functional>
#include <limits>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <systemc>
#include <vector>

#include "common/diagnostic.h"
#include "isa/program.h"
#include "sim/collective_timer.h"
#include "sim/core/fabric_counters.h"
#include "sim/trace.h"

namespace tpusim {

enum class SpmdMode { kSymmetric, kFull };
std::string_view spmd_mode_name(SpmdMode m);

// One row of the collective table: a distinct (op, bytes, group size, algorithm).
struct CollectiveRow {
  std::string op;
  double bytes = 0;  // V of the collective cost forms
  std::int64_t group_size = 0;
  std::string algorithm;
  std::string bound;
  double seconds = 0;  // network time of one execution
  std::int64_t count = 0;
};

class CollectiveFabric {
 public:
  CollectiveFabric(SpmdMode mode, CollectiveTimer& timer, bool concurrent = false);

  // What issue() hands back: the completion time (symmetric mode, one
  // collective at a time), or completion < 0 and the job (symmetric,
  // concurrent) or instance (full mode) to poll() until it is ready.
  // `share`: the issuing chip's part of it (what its HBM moves, collective_hbm_bytes).
  struct Ticket {
    double completion = -1;
    std::pair<std::uint64_t, std::int64_t> instance{};
    std::uint64_t job = 0;  // 0 = none
    CollectiveShare share;
    double start = -1;  // symmetric mode, one at a time: when its transfers start (now)
  };
  // Called from `device`'s ICI unit at the current simulated time for
  // the collective at program.code[pc], the device's `ordinal`-th collective
  // in program order (members of a group match by it); `where` names it for
  // messages.
  Result<Ticket> issue(std::int64_t device, const isa::Program& program, std::uint32_t pc, std::uint64_t ordinal,
                       const std::string& where);
  // Where a ticket stands at the current simulated time. Ready: the
  // collective completes at `completion` (absolute seconds) and the ticket
  // is used up. Not ready: in full mode not every member of the group has
  // issued it; with concurrent collectives its completion (which later
  // collectives may push back) is still ahead. The caller waits for `event`
  // or until `until_s` (either may be absent) and polls again. `start`: when
  // the collective's transfers start (its group complete; -1 = not yet), so
  // [start, until_s or completion] is its network window as known now.
  struct Poll {
    bool ready = false;
    double completion = 0;
    const sc_core::sc_event* event = nullptr;
    double until_s = std::numeric_limits<double>::infinity();
    double start = -1;
  };
  Poll poll(const Ticket& ticket);

  [[nodiscard]] SpmdMode mode() const { return mode_; }
  [[nodiscard]] std::int64_t num_devices() const { return timer_.num_devices(); }
  // Collectives waiting for members (deadlock report), one line each.
  [[nodiscard]] std::vector<std::string> blocked() const;
  // Distinct collectives, in order of first execution.
  [[nodiscard]] const std::vector<CollectiveRow>& rows() const { return rows_; }
  // Link busy seconds summed over executions (each collective instance once).
  [[nodiscard]] const std::array<double, 3>& axis_busy_s() const { return axis_busy_s_; }
  [[nodiscard]] const std::array<std::int64_t, 3>& axis_links() const { return axis_links_; }
  [[nodiscard]] double dcn_busy_s() const { return dcn_busy_s_; }
  [[nodiscard]] std::int64_t dcn_ports() const { return dcn_ports_; }
  // What the collectives of some iterations add (loop extrapolation,
  // sim/loop_extrapolation.h): a snapshot of the counters, and adding
  // `times` x (b - a) for iterations that were extrapolated instead of run.
  using Counters = FabricCounters;
  [[nodiscard]] Counters counters() const;
  void add_repeats(const Counters& a, const Counters& b, std::int64_t times);
  // Largest number of data-parallel copies the replica groups were tiled over.
  [[nodiscard]] std::int64_t tiled_copies() const { return tiled_; }

  // Link tracks for a trace: from now on the busy intervals of `devices`'
  // links (each ICI link direction, the DCN ports) are kept, one slice per
  // interval named by its collective.
  void trace_links(const std::vector<std::int64_t>& devices);
  // Writes them to `trace` (a process "chipN.links" per device, a track per
  // link direction: "ICI x+", …, "DCN out", "DCN in"), times passed through
  // `reported` (the cores' timeline with extrapolated loops); call once, at the end.
  void write_link_tracks(TraceWriter& trace, const std::function<double(double)>& reported);

 private:
  struct Groups {
    std::shared_ptr<const interconnect::ReplicaGroups> groups;
    std::vector<std::int64_t> group_of;  // device -> index into `members`
    std::vector<std::vector<std::int64_t>> members;
  };
  struct Instance {
    std::string where;  // of the first arrival
    std::uint32_t pc = 0;
    const isa::Program* program = nullptr;
    interconnect::CollectiveKind kind = interconnect::CollectiveKind::kAllReduce;
    double bytes = 0;
    std::set<std::int64_t> arrived;
    std::size_t expected = 0;
    std::size_t consumed = 0;
    double last_issue = 0;
    double completion = -1;
    std::uint64_t job = 0;  // concurrent: the network job it completes with
    CollectiveRequest request;
    std::unique_ptr<sc_core::sc_event> done;
  };
  // A collective on the network while others may be in flight (concurrent).
  struct Job {
    CollectiveRequest request;
    double start = 0;
    double seconds = 0;  // network time with the collectives it overlapped
    int refs = 0;        // tickets / instances still to read it
    bool in_period = false;
    std::pair<std::uint64_t, std::pair<const isa::Program*, std::uint32_t>> key{};  // full mode: ordinal, pc
    std::unique_ptr<sc_core::sc_event> changed;
  };

  Result<const Groups*> groups_for(const isa::Program& program, const isa::Collective& c);
  void record(std::uint64_t ordinal, const CollectiveTiming& t, interconnect::CollectiveKind kind, double bytes);
  // Starts a job at `now` in the busy period and re-times the period.
  Result<std::uint64_t> admit(const CollectiveRequest& request, double now,
                              std::pair<std::uint64_t, std::pair<const isa::Program*, std::uint32_t>> key);
  // The job's completion, `base` + its (possibly growing) time: ready once reached.
  Poll poll_job(std::uint64_t id, double base) const;
  void release(std::uint64_t id);

  // A watched link's busy intervals (absolute seconds), named by collective.
  struct LinkSlice {
    double start = 0, end = 0;
    std::string_view name;
  };
  bool tracing_links_ = false;
  std::map<interconnect::LinkId, std::vector<LinkSlice>> link_slices_;
  // Concurrent collectives: the busy period's latest joint run (origin, its
  // collectives' names by tag), kept until the period ends.
  std::vector<LinkBusy> period_busy_;
  double period_origin_ = 0;
  std::vector<std::string_view> period_names_;
  std::set<std::uint64_t> traced_ordinals_;  // full mode: ordinals whose links were traced
  void add_link_busy(const std::vector<LinkBusy>& busy, double origin, const std::vector<std::string_view>& names);
  void flush_period();

  SpmdMode mode_;
  CollectiveTimer& timer_;
  bool concurrent_ = false;
  std::map<std::uint64_t, Job> jobs_;
  std::uint64_t next_job_ = 1;
  std::vector<std::uint64_t> period_;  // the busy period's jobs, in start order
  // Full mode: the job of a collective instance, by (ordinal, program, pc).
  std::map<std::pair<std::uint64_t, std::pair<const isa::Program*, std::uint32_t>>, std::uint64_t> job_of_;
  std::map<std::pair<const isa::Program*, std::uint32_t>, Groups> groups_;
  std::map<std::pair<std::uint64_t, std::int64_t>, Instance> pending_;  // (ordinal, group) -> instance
  std::set<std::uint64_t> recorded_;  // full mode: ordinals whose network time was counted
  std::vector<CollectiveRow> rows_;
  std::array<double, 3> axis_busy_s_{};
  std::array<std::int64_t, 3> axis_links_{};
  double dcn_busy_s_ = 0;
  std::int64_t dcn_ports_ = 0;
  std::int64_t tiled_ = 1;
};

}  // namespace tpusim
