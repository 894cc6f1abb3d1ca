// The state of one MXU between instructions, and how each MXU instruction
// moves it: pure functions of (state, time, costs) with no SystemC, so the
// weight-stationary pipeline is testable on its own.
//
// Weight-stationary array with a weight path and, when double-buffered, a
// shadow weight buffer: weights load through the path while the previous
// tile streams; a matmul streams rows once its weights are ready and the
// array's input edge is free; results leave through the accumulators after
// the array's latency; a pop waits for the last result.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tpusim {

struct MxuArray {
  bool weights_loaded = false;
  std::int64_t weight_k = 0;  // rows of the loaded weight tile (reduction depth)
  std::int64_t weight_n = 0;  // columns (output width)
  double weights_ready = 0;     // when the last loaded weights may be used (s)
  double weight_path_free = 0;  // the weight path may take the next load
  double stream_free = 0;       // the array's input edge may take the next rows
  double last_done = 0;         // the latest matmul result is in the accumulators
  double shadow_free = 0;       // the shadow buffer may be refilled
};

// Absolute times (seconds) of one MXU instruction taken at `t`.
struct MxuStep {
  double begin = 0;     // the work begins
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
  a.weight_path_free = end;
  a.weights_ready = end;
  a.weights_loaded = true;
  a.weight_k = k;
  a.weight_n = n;
  return MxuStep{start, end, bare ? end : t, end};
}

// Streams rows through the loaded weights: `issue_s` of input-edge time;
// the last results reach the accumulators `drain_s` after the last row
// entered (the array's latency minus its issue time). The queue moves on
// once this matmul owns the input edge, so a following weight load overlaps it.
inline MxuStep mxu_matmul(MxuArray& a, double t, double issue_s, double drain_s, double vmem_end) {
  const double start = std::max({t, a.stream_free, a.weights_ready});
  const double stream_end = std::max(start + issue_s, vmem_end);
  const double done = stream_end + drain_s;
  a.stream_free = stream_end;
  a.shadow_free = std::max(a.shadow_free, start);
  a.last_done = std::max(a.last_done, done);
  return MxuStep{start, stream_end, start, done};
}

// Moves results out of the accumulators once the last matmul's are there.
inline MxuStep mxu_pop(const MxuArray& a, double t, double pop_s, double vmem_end) {
  const double start = std::max(t, a.last_done);
  const double end = std::max(start + pop_s, vmem_end);
  return MxuStep{start, end, end, end};
}

}  // namespace tpusim
