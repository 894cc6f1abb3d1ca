// HloSharding in structured form (after XLA's hlo_sharding.h): replicated,
// maximal (one device), manual, unknown, tiled (a tile assignment array of
// devices, given as a list or in iota form, optionally with a trailing
// replication dimension), or a tuple of shardings. And the per-device shape
// of an instruction under a sharding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/diagnostic.h"
#include "isa/hlo/lexer.h"
#include "isa/hlo/shape.h"
#include "isa/hlo/values.h"

namespace tpusim::hlo {

class Instruction;

struct HloSharding {
  enum class Kind { kReplicated, kMaximal, kManual, kUnknown, kTiled, kTuple };
  Kind kind = Kind::kReplicated;
  std::int64_t device = -1;  // kMaximal
  // kTiled: tile-assignment dimensions, devices in row-major order of that
  // array (iota forms are expanded), and the iota form if it was used.
  Ints tile_dims;
  Ints devices;
  bool iota = false;
  Ints iota_reshape, iota_perm;
  bool last_tile_dim_replicate = false;
  std::vector<std::string> last_tile_dims;  // subgroup kinds: manual, replicated, …
  std::vector<HloSharding> tuple;           // kTuple

  // Number of trailing tile dimensions that do not shard data
  // (last_tile_dim_replicate / last_tile_dims).
  std::size_t subgroup_dims() const {
    return last_tile_dim_replicate ? 1 : last_tile_dims.size();
  }
  // Number of devices the data is split across (product of data tile dims).
  std::int64_t num_tiles() const;
  std::string to_string() const;
};

bool read_sharding(Lexer& lex, HloSharding& out, ValueError& err);
// Decodes an instruction's sharding= attribute (nullopt-like error if absent).
Result<HloSharding> sharding_of(const Instruction& inst);

// The shape each device holds: every sharded dimension becomes
// ceil(dim / tiles). Tuple shardings apply elementwise to tuple shapes.
// An error explains a rank mismatch between sharding and shape.
Result<Shape> per_device_shape(const Shape& shape, const HloSharding& sharding);
// The per-device shape of an instruction under its sharding= attribute; an
// error (located at the attribute) if it has none or it does not fit.
Result<Shape> per_device_shape(const Instruction& inst);

}  // namespace tpusim::hlo
