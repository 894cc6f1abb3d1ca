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
  EXPECT_EQ(l.begin, 0);
  EXPECT_EQ(l.done, 128);
  EXPECT_EQ(l.free, 0);
  // Matmul of 100 rows taken at t=1: waits for the weights (128), streams 100, drains 255 more.
  MxuStep m = mxu_matmul(a, 1, 100, 255, 0);
  EXPECT_EQ(m.begin, 128);
  EXPECT_EQ(m.busy_end, 228);
  EXPECT_EQ(m.free, 128);
  EXPECT_EQ(m.done, 483);
  // The next load may fill the shadow buffer once that matmul started (128),
  // not when it ends: 128..256, overlapping the stream.
  l = mxu_load_weights(a, false, 129, 128, 0, 128, 128);
  EXPECT_EQ(l.begin, 129);  // the path was free at 128; taken at 129
  EXPECT_EQ(l.done, 257);
  // The second matmul waits for the new weights (257) and the input edge (228): starts at 257.
  m = mxu_matmul(a, 130, 100, 255, 0);
  EXPECT_EQ(m.begin, 257);
  // A pop waits for the last result in the accumulators: 257 + 100 + 255 = 612.
  const MxuStep p = mxu_pop(a, 140, 8, 0);
  EXPECT_EQ(p.begin, 612);
  EXPECT_EQ(p.done, 620);
}

TEST(MxuArray, BareArrayDrainsBeforeNewWeightsAndHoldsTheQueue) {
  MxuArray a;
  mxu_load_weights(a, /*bare=*/true, 0, 128, 0, 128, 128);
  const MxuStep m = mxu_matmul(a, 0, 100, 255, 0);  // 128..228, done 483
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
  const MxuStep m = mxu_matmul(a, 0, 100, 255, 500);
  EXPECT_EQ(m.begin, 300);
  EXPECT_EQ(m.busy_end, 500);
  EXPECT_EQ(m.done, 755);
}

}  // namespace
}  // namespace tpusim
