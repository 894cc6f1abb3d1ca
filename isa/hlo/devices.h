// How many devices an SPMD module runs on: num_partitions x replica_count
// from the module header, or, when the header names neither (dumps taken
// after partitioning often omit them), one more than the largest device id
// its collectives' replica groups and source-target pairs name.
// `tpusim run --system auto` builds a system of that many chips.
#pragma once

#include <cstdint>
#include <string>

#include "isa/hlo/ir.h"

namespace tpusim::hlo {

struct ModuleDevices {
  std::int64_t count = 1;
  // How the count was found: "num_partitions=8", "replica groups name devices 0..127", or
  // "no collectives and no num_partitions: one device".
  std::string source;
};

ModuleDevices module_devices(const Module& module);

}  // namespace tpusim::hlo

namespace tpusim::hlo {

// The HBM one device holds for the whole step at least: its parameters
// (weights, optimizer state, inputs; a training step's outputs usually alias
// them). Temporaries come on top, as XLA's buffer assignment packs them.
std::int64_t parameter_bytes(const Module& module);

}  // namespace tpusim::hlo
