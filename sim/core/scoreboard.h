// The TensorCore's tile scoreboard: which in-flight instructions a new one
// must wait for. Every synchronous access (an MXU, VPU, XLU or EUP
// instruction's tiles) is recorded per buffer as a rectangle of rows and
// columns; a new instruction depends on the unfinished accesses its tiles
// overlap: earlier writes (RAW, WAW) and, when it writes, earlier reads
// (WAR). DMA and collective accesses are not recorded: readers synchronize
// with them through the program's semaphores (the ISA's contract).
// Plain C++, no SystemC; the core asks it, then waits.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "isa/program.h"

namespace tpusim {

// A tile an instruction reads or writes.
struct TileUse {
  isa::TileRef tile;
  bool write = false;
};

// The tiles of one instruction (at most dst, a, b, c and two more).
struct TileUses {
  std::array<TileUse, 6> use{};
  std::size_t n = 0;
  void push_back(TileUse u) {
    if (n < use.size()) use[n++] = u;
  }
  [[nodiscard]] const TileUse* begin() const { return use.data(); }
  [[nodiscard]] const TileUse* end() const { return use.data() + n; }
};

// The tile operands of an instruction (its "dst" field is the one written).
TileUses tile_uses(const isa::Op& op);

class Scoreboard {
 public:
  explicit Scoreboard(std::size_t buffers) : buffers_(buffers) {}

  // Replaces `deps` with the ids of the unfinished accesses `uses` conflict
  // with, ascending and unique, and records `uses` as accesses of
  // instruction `id` unless `async`. `complete(id)` tells whether an access's
  // instruction has completed (by the core's current time): completed
  // accesses never make anyone wait and are dropped as they are passed, so a
  // list holds little more than the accesses in flight.
  template <class Complete>
  void check(const TileUses& uses, std::uint64_t id, bool async, Complete&& complete,
             std::vector<std::uint64_t>& deps) {
    deps.clear();
    auto scan = [&](std::vector<Access>& list, const isa::TileRef& tile) {
      std::size_t keep = 0;
      for (std::size_t i = 0; i < list.size(); ++i) {
        const Access& a = list[i];
        if (complete(a.id)) continue;
        if (overlaps(tile, a)) deps.push_back(a.id);
        list[keep++] = a;
      }
      list.resize(keep);
    };
    auto prune = [&](std::vector<Access>& list) { std::erase_if(list, [&](const Access& a) { return complete(a.id); }); };
    for (const TileUse& use : uses) {
      Buffer& b = buffers_[use.tile.buffer];
      // Lists a scan does not visit (the readers of a never-written buffer)
      // are pruned once they have doubled since the last cleanup (amortized O(1)).
      if (b.writes.size() > b.prune_writes_at) {
        prune(b.writes);
        b.prune_writes_at = std::max<std::size_t>(8, 2 * b.writes.size());
      }
      if (b.reads.size() > b.prune_reads_at) {
        prune(b.reads);
        b.prune_reads_at = std::max<std::size_t>(16, 2 * b.reads.size());
      }
      scan(b.writes, use.tile);                // RAW, WAW
      if (use.write) scan(b.reads, use.tile);  // WAR
    }
    if (!async) {
      for (const TileUse& use : uses) {
        Buffer& b = buffers_[use.tile.buffer];
        (use.write ? b.writes : b.reads)
            .push_back(Access{use.tile.row, use.tile.row + use.tile.rows, use.tile.col, use.tile.col + use.tile.cols, id});
      }
    }
    if (deps.size() > 1) {
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    }
  }

  // Accesses held (in flight or not yet dropped), for tests of the bound.
  [[nodiscard]] std::size_t held() const;

 private:
  struct Access {
    std::int64_t r0, r1, c0, c1;  // rows [r0, r1), columns [c0, c1)
    std::uint64_t id;
  };
  struct Buffer {
    std::vector<Access> writes;
    std::vector<Access> reads;
    std::size_t prune_writes_at = 8;
    std::size_t prune_reads_at = 16;
  };
  static bool overlaps(const isa::TileRef& t, const Access& a) {
    return t.row < a.r1 && a.r0 < t.row + t.rows && t.col < a.c1 && a.c0 < t.col + t.cols;
  }
  std::vector<Buffer> buffers_;
};

}  // namespace tpusim
