// VMEM port and bank timing against hand-derived numbers.
#include "sim/timing/vmem_timing.h"

#include <gtest/gtest.h>

namespace tpusim {
namespace {

VmemConfig test_vmem() {
  VmemConfig v;
  v.capacity = 128 << 20;
  v.ports = 4;            // 1024 B per port per cycle
  v.bytes_per_cycle = 4096;
  return v;
}

TEST(VmemTiming, PortTimeScalesWithPortsUsed) {
  const VmemConfig v = test_vmem();
  EXPECT_DOUBLE_EQ(vmem_port_bytes_per_cycle(v), 1024.0);
  EXPECT_EQ(vmem_access_cycles(v, 1 << 20, 1), 1024u);  // 1 MiB / 1024
  EXPECT_EQ(vmem_access_cycles(v, 1 << 20, 4), 256u);   // / 4096
  EXPECT_EQ(vmem_access_cycles(v, 1 << 20, 8), 256u);   // clamped to 4 ports
  EXPECT_EQ(vmem_access_cycles(v, 1025, 1), 2u);        // rounds up
  EXPECT_EQ(vmem_access_cycles(v, 0, 1), 0u);
}

}  // namespace
}  // namespace tpusim
