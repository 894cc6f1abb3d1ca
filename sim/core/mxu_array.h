// The state of one MXU between instructions, and how each MXU instruction
// moves it: pure functions of (state, time, costs) with no SystemC, so the
// weight-stationary pipeline is testable on its own.
//
// Weight-stationary array with a weight path and, when double-buffered, a
// shadow weight buffer: weights load through the path while the previous
// tile streams; a matmul streams rows once its weights are ready and the
// array's input edge is free; results land in the accumulator rows it names
// after the array's latency. A pop reads accumulator rows through the result
// path, separate from the input edge (the TPU's accumulators are double-
// buffered so the array computes into some rows while others are read out:
// Jouppi et al., ISCA 2017, section 2): it waits for the matmuls that wrote
// those rows, not for later ones, and the queue moves on while it waits, so
// the next matmuls stream meanwhile. A matmul into rows a pending pop still
// has to read waits for that pop.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tpusim {

// Accumulator rows [first, first + rows) and when an access to them ends
// (a matmul's results landed, a pop read them).
struct AccRows {
  std::int64_t first = 0;
  std::int64_t rows = 0;
  double until = 0;
  [[nodiscard]] bool overlaps(std::int64_t f, std::int64_t n) const { return f < first + rows && first < f + n; }
};

// The latest `until` over the accesses in `list` that overlap rows
// [first, first + rows), at least `floor`.
inline double acc_rows_ready(const std::vector<AccRows>& list, std::int64_t first, std::int64_t rows, double floor) {
  for (const AccRows& a : list) {
    if (a.overlaps(first, rows)) floor = std::max(floor, a.until);
  }
  return floor;
}

// Adds an access; entries that ended by `now` are dropped (instructions are
// taken in time order, so no later one can wait for them).
inline void acc_rows_add(std::vector<AccRows>& list, AccRows a, double now) {
  std::erase_if(list, [now](const AccRows& e) { return e.until <= now; });
  list.push_back(a);
}

struct MxuArray {
  bool weights_loaded = false;
  std::int64_t weight_k = 0;  // rows of the loaded weight tile (reduction depth)
  std::int64_t weight_n = 0;  // columns (output width)
  double weights_ready = 0;     // when the last loaded weights may be used (s)
  double weight_path_free = 0;  // the weight path may take the next load
  double stream_free = 0;       // the array's input edge may take the next rows
  double last_done = 0;         // the latest matmul result is in the accumulators
  double shadow_free = 0;       // the shadow buffer may be refilled
  double result_free = 0;       // the result path may take the next pop
  std::vector<AccRows> writes;  // matmul results not yet landed, by accumulator rows
  std::vector<AccRows> reads;   // pops not yet done, by accumulator rows
};

// Absolute times (seconds) of one MXU instruction taken at `t`.
struct MxuStep {
  double begin = 0;     // the array's busy period begins (a hidden weight load: where it ends)
  double busy_end = 0;  // the array's busy period ends (stats, trace)
  double free = 0;      // the unit's queue may take its next instruction
  double done = 0;      // results (or loaded weights) are usable
};

// Loads a k x n weight tile. `bare`: no shadow buffer (or not weight-
// stationary): the new weights replace the active ones, so the array drains
// first and the queue is held until the load ends. `load_s`: the weight
// path's time; `vmem_end`: when VMEM has served the tile's bytes.
inline MxuStep mxu_load_weights(MxuArray& a, bool bare, double t, double load_s, double vmem_end, std::int64_t k,
                                std::int64_t n) {
  // Double-buffered: the shadow buffer is free once the previous weights
  // became active (their first matmul started).
  const double start = bare ? std::max({t, a.last_done, a.weight_path_free})
                            : std::max({t, a.weight_path_free, a.shadow_free});
  const double end = std::max(start + load_s, vmem_end);
  // The array is busy with the load only where it is not streaming: a
  // double-buffered load under a matmul's stream costs the array nothing;
  // what outlasts the stream holds the array (begin..busy_end).
  const double exposed = bare ? start : std::min(end, std::max(start, a.stream_free));
  a.weight_path_free = end;
  a.weights_ready = end;
  a.weights_loaded = true;
  a.weight_k = k;
  a.weight_n = n;
  return MxuStep{exposed, end, bare ? end : t, end};
}

// Streams rows through the loaded weights into accumulator rows
// [acc, acc + rows): `issue_s` of input-edge time; the last results reach
// the accumulators `drain_s` after the last row entered (the array's latency
// minus its issue time). It starts once the rows' pending pops have read
// them. The queue moves on once this matmul owns the input edge, so a
// following weight load overlaps it.
inline MxuStep mxu_matmul(MxuArray& a, double t, double issue_s, double drain_s, double vmem_end, std::int64_t acc,
                          std::int64_t rows) {
  const double start = acc_rows_ready(a.reads, acc, rows, std::max({t, a.stream_free, a.weights_ready}));
  const double stream_end = std::max(start + issue_s, vmem_end);
  const double done = stream_end + drain_s;
  a.stream_free = stream_end;
  a.shadow_free = std::max(a.shadow_free, start);
  a.last_done = std::max(a.last_done, done);
  acc_rows_add(a.writes, AccRows{acc, rows, done}, t);
  return MxuStep{start, stream_end, start, done};
}

// Moves accumulator rows [acc, acc + rows) out through the result path once
// the matmuls that wrote them have landed; pops take the path one at a time.
// The queue moves on at once (the pop's destination is ready at `done`).
inline MxuStep mxu_pop(MxuArray& a, double t, double pop_s, double vmem_end, std::int64_t acc, std::int64_t rows) {
  const double start = acc_rows_ready(a.writes, acc, rows, std::max(t, a.result_free));
  const double end = std::max(start + pop_s, vmem_end);
  a.result_free = end;
  acc_rows_add(a.reads, AccRows{acc, rows, end}, t);
  return MxuStep{start, end, t, end};
}

}  // namespace tpusim
