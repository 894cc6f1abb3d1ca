// A PROXY area/power model for ranking sweep points. It is not a physical
// model: areas are in arbitrary units (au) and power in "proxy watts"; only
// ratios between points of one sweep mean anything. Coefficients come from
// the sweep spec's `area_power:` block (docs/sweeps.md explains each).
//
//   area  = mxu_area_per_mac  × rows × cols × mxu.count × tensorcores
//         + sram_area_per_mib × VMEM MiB × tensorcores
//         + hbm_area_per_tbps × HBM TB/s + hbm_area_per_gib × HBM GiB
//         + ici_area_per_link × ici.links + fixed_area
//   power = static_power_per_area × area
//         + (energy_per_flop_pj × FLOPs + energy_per_hbm_byte_pj × HBM bytes
//            + energy_per_vmem_byte_pj × VMEM bytes) × 1e-12 / time
// The activity (FLOPs, bytes, time) comes from the point's report:
// `run` → mxu.flops, hbm.bytes, vmem.bytes, step_time_s;
// `analyze` → total.flops, total.bytes_accessed, total.bound_time_s.
#pragma once

#include <optional>
#include <string_view>

#include "common/config.h"

namespace tpusim::sweep {

// X-macro: (member, default, meaning). One table for the spec parser, the
// defaults and docs/sweeps.md.
#define TPUSIM_PROXY_COEFFS(X)                                                                          \
  X(mxu_area_per_mac, 1.0e-4, "au per MXU MAC cell (rows x cols x count x tensorcores)")               \
  X(sram_area_per_mib, 0.1, "au per MiB of VMEM per TensorCore (x tensorcores)")                       \
  X(hbm_area_per_tbps, 5.0, "au per TB/s of nominal HBM bandwidth (PHYs, stacks)")                     \
  X(hbm_area_per_gib, 0.0, "au per GiB of HBM capacity (off-die stacks; 0 = not counted)")             \
  X(ici_area_per_link, 0.5, "au per ICI link (SerDes)")                                                \
  X(fixed_area, 5.0, "au for everything else (scalar core, VPU, control)")                             \
  X(static_power_per_area, 0.5, "proxy W per au (leakage and clock tree scale with area)")             \
  X(energy_per_flop_pj, 0.5, "pJ per MXU FLOP (order of a bf16 MAC/2, Horowitz ISSCC 2014 scaled)")    \
  X(energy_per_hbm_byte_pj, 31.0, "pJ per HBM byte (about 3.9 pJ/bit, HBM2, O'Connor et al. MICRO 2017)") \
  X(energy_per_vmem_byte_pj, 1.0, "pJ per VMEM byte (large on-chip SRAM access)")

struct ProxyModel {
#define TPUSIM_PROXY_MEMBER(name, def, doc) double name = def;
  TPUSIM_PROXY_COEFFS(TPUSIM_PROXY_MEMBER)
#undef TPUSIM_PROXY_MEMBER
  // Pointer to a coefficient by name; nullptr if unknown.
  double* find(std::string_view name);
};

struct Activity {
  double flops = 0;
  double hbm_bytes = 0;
  double vmem_bytes = 0;
  double time_s = 0;
};

double area_proxy(const ProxyModel& m, const ChipConfig& c);
// nullopt when the time is not positive (no activity to average).
std::optional<double> power_proxy(const ProxyModel& m, double area, const Activity& a);

}  // namespace tpusim::sweep
