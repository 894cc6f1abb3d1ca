// The tile scoreboard alone: which earlier accesses a new instruction's tiles
// must wait for. Expectations follow from the hazard rules (RAW, WAW, WAR on
// overlapping rectangles; DMA accesses unrecorded), not from the code.
#include <gtest/gtest.h>

#include <set>

#include "sim/core/scoreboard.h"

namespace tpusim {
namespace {

isa::TileRef tile(std::uint32_t buffer, std::int64_t row, std::int32_t rows, std::int32_t col, std::int32_t cols) {
  isa::TileRef t;
  t.buffer = buffer;
  t.row = row;
  t.rows = rows;
  t.col = col;
  t.cols = cols;
  return t;
}

TileUses uses(std::initializer_list<TileUse> list) {
  TileUses u;
  for (const auto& x : list) u.push_back(x);
  return u;
}

struct Fixture {
  Scoreboard board{4};
  std::set<std::uint64_t> done;  // completed instruction ids
  std::vector<std::uint64_t> deps;
  std::vector<std::uint64_t> check(const TileUses& u, std::uint64_t id, bool async = false) {
    board.check(u, id, async, [&](std::uint64_t d) { return done.count(d) != 0; }, deps);
    return deps;
  }
};

TEST(Scoreboard, ReadAfterOverlappingWriteWaits) {
  Fixture f;
  EXPECT_TRUE(f.check(uses({{tile(0, 0, 8, 0, 128), true}}), 1).empty());
  // Rows 4..11 overlap the write of rows 0..7: RAW on instruction 1.
  EXPECT_EQ(f.check(uses({{tile(0, 4, 8, 0, 128), false}}), 2), std::vector<std::uint64_t>{1});
  // Rows 8..15 touch no written row: independent.
  EXPECT_TRUE(f.check(uses({{tile(0, 8, 8, 0, 128), false}}), 3).empty());
  // Same rows, disjoint columns: independent.
  EXPECT_TRUE(f.check(uses({{tile(0, 0, 8, 128, 128), false}}), 4).empty());
}

TEST(Scoreboard, WriteAfterReadAndWriteAfterWriteWait) {
  Fixture f;
  f.check(uses({{tile(1, 0, 8, 0, 8), true}}), 1);   // write
  f.check(uses({{tile(1, 0, 8, 0, 8), false}}), 2);  // read (waits on 1)
  // A new write of the same tile conflicts with both: WAW on 1, WAR on 2.
  EXPECT_EQ(f.check(uses({{tile(1, 0, 8, 0, 8), true}}), 3), (std::vector<std::uint64_t>{1, 2}));
  // A read of another buffer is independent of all of them.
  EXPECT_TRUE(f.check(uses({{tile(2, 0, 8, 0, 8), false}}), 4).empty());
}

TEST(Scoreboard, CompletedAccessesNeverWaitAndAreDropped) {
  Fixture f;
  f.check(uses({{tile(0, 0, 8, 0, 8), true}}), 1);
  f.done.insert(1);
  EXPECT_TRUE(f.check(uses({{tile(0, 0, 8, 0, 8), false}}), 2).empty());
  // Only the read of instruction 2 remains held.
  EXPECT_EQ(f.board.held(), 1u);
}

TEST(Scoreboard, AsyncAccessesAreCheckedButNotRecorded) {
  Fixture f;
  f.check(uses({{tile(0, 0, 8, 0, 8), true}}), 1);
  // A DMA reading the tile waits for the write (the hazard is real) ...
  EXPECT_EQ(f.check(uses({{tile(0, 0, 8, 0, 8), false}}), 2, /*async=*/true), std::vector<std::uint64_t>{1});
  // ... but later writers do not wait for the DMA: semaphores order them.
  f.done.insert(1);
  EXPECT_TRUE(f.check(uses({{tile(0, 0, 8, 0, 8), true}}), 3).empty());
}

TEST(Scoreboard, DependenciesAreSortedAndUnique) {
  Fixture f;
  f.check(uses({{tile(0, 0, 8, 0, 8), true}}), 5);
  f.check(uses({{tile(1, 0, 8, 0, 8), true}}), 3);
  // Two operands of the same buffer and one of another: ids 3 and 5 once each, ascending.
  EXPECT_EQ(f.check(uses({{tile(0, 0, 4, 0, 8), false}, {tile(0, 4, 4, 0, 8), false}, {tile(1, 0, 8, 0, 8), false}}), 9),
            (std::vector<std::uint64_t>{3, 5}));
}

TEST(Scoreboard, HeldAccessesStayBoundedWhenReadersOfANeverWrittenBufferComplete) {
  // Reads of a buffer nobody writes are never scanned; the prune keeps them
  // bounded by twice what is in flight (here nothing) plus the threshold.
  Fixture f;
  for (std::uint64_t id = 1; id <= 1000; ++id) {
    f.check(uses({{tile(3, 0, 8, 0, 8), false}}), id);
    f.done.insert(id);
  }
  EXPECT_LE(f.board.held(), 17u);
}

TEST(Scoreboard, TileUsesMarksTheDestinationAsWritten) {
  isa::VpuElementwise add;
  add.dst = tile(0, 0, 8, 0, 128);
  add.a = tile(1, 0, 8, 0, 128);
  add.b = tile(2, 0, 8, 0, 128);
  const TileUses u = tile_uses(isa::Op{add});
  ASSERT_EQ(u.n, 3u);
  int writes = 0;
  for (const TileUse& x : u) writes += x.write ? 1 : 0;
  EXPECT_EQ(writes, 1);
}

}  // namespace
}  // namespace tpusim
