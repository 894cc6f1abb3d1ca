// The MXU array's state machine alone (sim/core/mxu_array.h). Times are in
// units of one cycle (1 s stands for a cycle); every expectation is derived
// in its comment from the weight-stationary pipeline's rules.
#include <gtest/gtest.h>

#include "sim/core/mxu_array.h"

namespace tpusim {
namespace {

TEST(MxuArray, DoubleBufferedLoadOverlapsTheStreamingMatmul) {
  MxuArray a;
  // Load 128 rows of weights at t=0: the path is busy 0..128; the queue moves on at once.
  MxuStep l = mxu_load_weights(a, /*bare=*/false, 0, 128, 0, 128, 128);
  EXPECT_EQ(l.begin, 0);  // nothing streams: the whole load holds the array
  EXPECT_EQ(l.done, 128);
  EXPECT_EQ(l.free, 0);
  // Matmul of 100 rows taken at t=1: waits for the weights (128), streams 100, drains 255 more.
  MxuStep m = mxu_matmul(a, 1, 100, 255, 0, 0, 100);
  EXPECT_EQ(m.begin, 128);
  EXPECT_EQ(m.busy_end, 228);
  EXPECT_EQ(m.free, 128);
  EXPECT_EQ(m.done, 483);
  // The next load may fill the shadow buffer once that matmul started (128),
  // not when it ends: 129..257 (taken at 129), under the stream until 228;
  // only 228..257 holds the array.
  l = mxu_load_weights(a, false, 129, 128, 0, 128, 128);
  EXPECT_EQ(l.begin, 228);
  EXPECT_EQ(l.busy_end, 257);
  EXPECT_EQ(l.done, 257);
  // The second matmul (accumulator rows 100..199) waits for the new weights
  // (257) and the input edge (228): starts at 257, done 257 + 100 + 255 = 612.
  m = mxu_matmul(a, 130, 100, 255, 0, 100, 100);
  EXPECT_EQ(m.begin, 257);
  EXPECT_EQ(m.done, 612);
  // A pop of rows 0..99 waits only for the first matmul's results (483), and
  // the queue moves on at once (free = when it was taken).
  const MxuStep p0 = mxu_pop(a, 140, 8, 0, 0, 100);
  EXPECT_EQ(p0.begin, 483);
  EXPECT_EQ(p0.done, 491);
  EXPECT_EQ(p0.free, 140);
  // A pop of rows 100..199 waits for the second (612).
  const MxuStep p1 = mxu_pop(a, 141, 8, 0, 100, 100);
  EXPECT_EQ(p1.begin, 612);
  EXPECT_EQ(p1.done, 620);
}

TEST(MxuArray, PopsTakeTheResultPathInTurnAndMatmulsWaitForPendingPops) {
  MxuArray a;
  mxu_load_weights(a, false, 0, 128, 0, 128, 128);     // weights ready at 128
  mxu_matmul(a, 0, 100, 255, 0, 0, 100);               // 128..228, rows 0..99 land at 483
  mxu_matmul(a, 0, 100, 255, 0, 100, 100);             // 228..328, rows 100..199 land at 583
  // Two pops of rows 0..99 taken at once: the second waits for the first on
  // the result path (483 + 50 = 533).
  const MxuStep p0 = mxu_pop(a, 1, 50, 0, 0, 100);
  const MxuStep p1 = mxu_pop(a, 2, 50, 0, 100, 100);
  EXPECT_EQ(p0.begin, 483);
  EXPECT_EQ(p0.done, 533);
  EXPECT_EQ(p1.begin, 583);  // its rows land at 583, after the path is free (533)
  EXPECT_EQ(p1.done, 633);
  // A matmul into rows 50..149 overlaps both pops' rows: it streams once the
  // later of them has read its rows (633), although the edge is free at 328.
  const MxuStep m = mxu_matmul(a, 3, 100, 255, 0, 50, 100);
  EXPECT_EQ(m.begin, 633);
  // One into rows 200..299 waits for no pop, only for the input edge, which
  // the previous matmul holds until 633 + 100 = 733.
  const MxuStep m2 = mxu_matmul(a, 4, 100, 255, 0, 200, 100);
  EXPECT_EQ(m2.begin, 733);
}

TEST(MxuArray, BareArrayDrainsBeforeNewWeightsAndHoldsTheQueue) {
  MxuArray a;
  mxu_load_weights(a, /*bare=*/true, 0, 128, 0, 128, 128);
  const MxuStep m = mxu_matmul(a, 0, 100, 255, 0, 0, 100);  // 128..228, done 483
  EXPECT_EQ(m.done, 483);
  // Without a shadow buffer the new weights replace the active ones: the
  // load starts after the last result (483) and holds the queue to its end.
  const MxuStep l = mxu_load_weights(a, true, 130, 128, 0, 128, 128);
  EXPECT_EQ(l.begin, 483);
  EXPECT_EQ(l.free, 611);
  EXPECT_EQ(l.done, 611);
}

TEST(MxuArray, VmemBandwidthCanBoundEachStep) {
  MxuArray a;
  // VMEM serves the weight tile only at 300: the load ends then, not at 128.
  const MxuStep l = mxu_load_weights(a, false, 0, 128, 300, 64, 32);
  EXPECT_EQ(l.done, 300);
  EXPECT_EQ(a.weight_k, 64);
  EXPECT_EQ(a.weight_n, 32);
  // Rows arrive from VMEM at 500: the stream ends then, the drain follows.
  const MxuStep m = mxu_matmul(a, 0, 100, 255, 500, 0, 100);
  EXPECT_EQ(m.begin, 300);
  EXPECT_EQ(m.busy_end, 500);
  EXPECT_EQ(m.done, 755);
}

}  // namespace
}  // namespace tpusim
