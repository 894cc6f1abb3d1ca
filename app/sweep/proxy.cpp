#include "app/sweep/proxy.h"

namespace tpusim::sweep {

double* ProxyModel::find(std::string_view name) {
#define TPUSIM_PROXY_FIND(n, def, doc) \
  if (name == #n) return &n;
  TPUSIM_PROXY_COEFFS(TPUSIM_PROXY_FIND)
#undef TPUSIM_PROXY_FIND
  return nullptr;
}

double area_proxy(const ProxyModel& m, const ChipConfig& c) {
  const double tc = static_cast<double>(c.tensorcores);
  const double macs = static_cast<double>(c.core.mxu.rows) * static_cast<double>(c.core.mxu.cols) *
                      static_cast<double>(c.core.mxu.count) * tc;
  const double vmem_mib = c.core.vmem.capacity / (1024.0 * 1024.0) * tc;
  const double hbm_tbps = c.hbm.bandwidth / 1e12;
  const double hbm_gib = c.hbm.capacity / (1024.0 * 1024.0 * 1024.0);
  return m.mxu_area_per_mac * macs + m.sram_area_per_mib * vmem_mib + m.hbm_area_per_tbps * hbm_tbps +
         m.hbm_area_per_gib * hbm_gib + m.ici_area_per_link * static_cast<double>(c.ici.links) + m.fixed_area;
}

std::optional<double> power_proxy(const ProxyModel& m, double area, const Activity& a) {
  if (!(a.time_s > 0)) return std::nullopt;
  const double joules = (m.energy_per_flop_pj * a.flops + m.energy_per_hbm_byte_pj * a.hbm_bytes +
                         m.energy_per_vmem_byte_pj * a.vmem_bytes) * 1e-12;
  return m.static_power_per_area * area + joules / a.time_s;
}

}  // namespace tpusim::sweep
