// Chrome / Perfetto trace-event JSON writer ("X" complete events, one track
// per unit). Slices are streamed to the output as they close, so memory is
// O(tracks), not O(instructions). Consecutive slices on one track with the
// same name (provenance) whose gap is at most `merge_gap_s` are merged into one
// slice carrying a count, which keeps a million-instruction run small.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tpusim {

// Figures a trace slice carries in its args (summed when slices merge); < 0: none.
struct TraceFigures {
  double flops = -1;
  double hbm_bytes = -1;
  // The resource that set the slice's time ("" = none): a name with static
  // storage (sim/timing/limiter.h). Merged slices show the limiter of most
  // of their time.
  std::string_view limiter;
};

class TraceWriter {
 public:
  explicit TraceWriter(std::ostream& out, double merge_gap_s = 0.0);
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;
  ~TraceWriter();

  // A track (thread) `thread` inside process `process` (e.g. "chip0", "core0.mxu1").
  // `count_name` names the count of merged slices in their args.
  int track(std::string_view process, std::string_view thread, std::string_view count_name = "instructions");
  // Slices named `name` on `track` (an HLO-op track) carry "op_name": the framework's name.
  void set_op_names(const std::map<std::string, std::string>* names) { op_names_ = names; }
  void name_ops_on(int track);
  using Figures = TraceFigures;
  // A slice [start_s, end_s) on `track`; times are simulated seconds and must
  // not go backwards on one track.
  void slice(int track, std::string_view name, double start_s, double end_s, TraceFigures figures = TraceFigures());
  // A counter track `name` of `process` ("C" events): `value` from t_s on;
  // times must not go backwards per counter. Repeated values are dropped.
  void counter(std::string_view process, std::string_view name, double t_s, double value);
  // Flushes open slices and closes the JSON document (also done by the destructor).
  void finish();

  [[nodiscard]] std::uint64_t events_written() const { return events_; }

 private:
  struct Open {
    std::string name;
    double start = 0;
    double end = 0;
    std::uint64_t count = 0;
    Figures figures;
    std::vector<std::pair<std::string_view, double>> limiter_s;  // time per limiter of the merged slices
    void add_limiter(std::string_view limiter, double seconds);
  };
  struct Counter {
    int pid;
    std::string name;
    double value;
  };
  void emit(int track, const Open& s);
  int pid_of(std::string_view process);

  std::ostream& out_;
  double merge_gap_s_;
  bool first_ = true;
  bool finished_ = false;
  std::uint64_t events_ = 0;
  std::vector<std::string> processes_;
  std::vector<int> track_pid_;
  std::vector<std::string> count_name_;
  std::vector<bool> named_ops_;  // by track: slices get their op_name
  const std::map<std::string, std::string>* op_names_ = nullptr;
  std::vector<Open> open_;
  std::vector<Counter> counters_;
};

}  // namespace tpusim
