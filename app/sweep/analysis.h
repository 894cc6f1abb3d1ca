// Reading sweep results: CSV export, best points per metric, the Pareto
// front of time vs area proxy vs power proxy, and per-parameter sensitivity.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "app/sweep/record.h"

namespace tpusim::sweep {

// CSV with a header: identity columns, one column per parameter (its value
// in base units), one per metric, then time_s, area_proxy, power_proxy,
// wall_s, error. Empty field = no value. pandas.read_csv reads it as is.
std::string export_csv(const std::vector<Record>& records);

// Indices of the points no other point beats in every objective (all
// minimized): p dominates q if p <= q everywhere and p < q somewhere.
std::vector<std::size_t> pareto_front(const std::vector<std::array<double, 3>>& objectives);

// True if larger is better for this metric (utilizations, rates).
bool maximize_metric(std::string_view name);

// The report as JSON: {statuses, workloads: [{workload, best, pareto, sensitivity}]}.
nlohmann::ordered_json sweep_report(const std::vector<Record>& records);
std::string format_report(const nlohmann::ordered_json& report);

}  // namespace tpusim::sweep
