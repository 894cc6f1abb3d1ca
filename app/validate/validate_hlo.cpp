#include "app/validate/validate_hlo.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <ostream>

#include "common/config_loader.h"
#include "common/csv.h"
#include "app/hlo_run.h"
#include "common/json_text.h"
#include "sim/spmd.h"

namespace tpusim {
namespace {

using nlohmann::json;

// `p` as given when it exists (or names a preset), else next to the CSV.
std::string resolve(const std::string& csv, const std::string& p, bool may_be_preset) {
  namespace fs = std::filesystem;
  if (may_be_preset && find_preset(p) != nullptr) return p;
  if (fs::path(p).is_absolute() || fs::exists(p)) return p;
  const fs::path beside = fs::path(csv).parent_path() / p;
  return fs::exists(beside) ? beside.string() : p;
}

struct Common {
  std::string workload, chip_name, source;
  ChipConfig chip;
};

// Workload, chip (loaded and validated) and source of a row.
bool read_common(const CsvTable& t, const CsvRecord& r, Common& c, std::vector<Diagnostic>& bad,
                 const std::vector<std::string>& sets = {}) {
  c.workload = resolve(t.file, t.text(r, "workload"), false);
  c.chip_name = t.text(r, "chip");
  c.source = t.column("source") >= 0 ? t.text(r, "source") : "";
  if (!std::filesystem::exists(c.workload)) {
    bad.push_back(t.error_at(r, "workload", fmt::format("workload '{}' not found", t.text(r, "workload"))));
    return false;
  }
  auto cfg = load_config(resolve(t.file, c.chip_name, true), sets);
  if (!cfg.ok()) {
    std::string why;
    for (const auto& d : cfg.errors()) why += (why.empty() ? "" : "; ") + d.format();
    bad.push_back(t.error_at(r, "chip", fmt::format("chip '{}': {}", c.chip_name, why)));
    return false;
  }
  c.chip = cfg->chip;
  return true;
}

// An optional positive number column; `fallback` when absent or empty.
bool optional_number(const CsvTable& t, const CsvRecord& r, std::string_view name, double fallback, double& out,
                     std::vector<Diagnostic>& bad) {
  out = fallback;
  if (t.column(name) < 0 || t.text(r, name).empty()) return true;
  auto v = t.number(r, name);
  if (!v.ok()) {
    bad.insert(bad.end(), v.errors().begin(), v.errors().end());
    return false;
  }
  if (!(*v > 0)) {
    bad.push_back(t.error_at(r, name, fmt::format("column '{}' must be positive", name)));
    return false;
  }
  out = *v;
  return true;
}

// Per-op allowance below the bound: a kernel's first DMAs start while the
// previous op's last instructions still run, and in-order retirement
// charges that overlap to the earlier op.
constexpr double kDefaultOpSlack = 0.05;

std::string shorten(const std::string& path) { return std::filesystem::path(path).filename().string(); }

}  // namespace

int validate_step_csv(const std::string& path, double tolerance, bool as_json, std::ostream& out, std::ostream& err,
                      bool strict_hlo) {
  auto table = read_csv_file(path);
  if (!table.ok()) {
    err << format_all(table.errors());
    return 2;
  }
  if (auto missing = table->require({"workload", "chip", "system", "ref_step_time_s"}); !missing.empty()) {
    err << format_all(missing);
    return 2;
  }
  struct Row {
    Common c;
    std::string system;
    double ref = 0, tolerance = 0;
  };
  std::vector<Row> rows;
  std::vector<Diagnostic> bad;
  for (const auto& rec : table->records) {
    Row row;
    row.system = table->text(rec, "system");
    std::vector<std::string> sets;
    if (row.system != "1") {
      // A topology such as 8, 4x4 or 4x4x4: chips per axis.
      const std::string list = system_to_yaml_list(row.system);
      if (list.empty()) {
        bad.push_back(table->error_at(rec, "system",
                         fmt::format("system '{}': expected 1 or chips per axis like 8, 4x4 or 4x4x4", row.system)));
        continue;
      }
      sets.push_back("system.topology=" + list);
    }
    if (!read_common(*table, rec, row.c, bad, sets)) continue;
    auto ref = table->number(rec, "ref_step_time_s");
    if (!ref.ok()) {
      bad.insert(bad.end(), ref.errors().begin(), ref.errors().end());
      continue;
    }
    if (!(*ref > 0)) {
      bad.push_back(table->error_at(rec, "ref_step_time_s", "ref_step_time_s must be a positive time in seconds"));
      continue;
    }
    row.ref = *ref;
    if (!optional_number(*table, rec, "tolerance", tolerance, row.tolerance, bad)) continue;
    rows.push_back(std::move(row));
  }
  if (!bad.empty()) {
    err << format_all(bad);
    return 2;
  }
  json j = json::array();
  int failures = 0;
  if (!as_json) {
    out << fmt::format("{:<40} {:<6} {:>7} {:>14} {:>14} {:>9} {:>6}  {}\n", "workload", "chip", "system",
                       "reference us", "tpusim us", "error", "tol", "result");
  }
  for (const Row& row : rows) {
    const HloRunOutcome run = run_hlo_isolated(row.c.workload, row.c.chip, strict_hlo);
    if (run.exit_code != 0) {
      err << run.error;
      return run.exit_code;
    }
    const double sim = run.report["step_time_s"].get<double>();
    const double error = (sim - row.ref) / row.ref;
    const bool pass = std::fabs(error) <= row.tolerance;
    failures += pass ? 0 : 1;
    if (as_json) {
      j.push_back({{"workload", row.c.workload}, {"chip", row.c.chip_name}, {"system", row.system},
                   {"reference_s", row.ref}, {"tpusim_s", sim}, {"error", error}, {"tolerance", row.tolerance},
                   {"pass", pass}, {"source", row.c.source},
                   {"approximations", run.report["approximations"].size()}});
    } else {
      out << fmt::format("{:<40} {:<6} {:>7} {:>14.3f} {:>14.3f} {:>+8.2f}% {:>5.0f}%  {}\n", shorten(row.c.workload),
                         row.c.chip_name, row.system, row.ref * 1e6, sim * 1e6, 100 * error, 100 * row.tolerance,
                         pass ? "pass" : "FAIL");
    }
  }
  if (as_json) {
    out << json_text(json{{"kind", "step"}, {"tolerance", tolerance}, {"rows", j}, {"failures", failures}}, 2) << "\n";
  } else {
    out << fmt::format("{} rows, {} within tolerance, {} outside\n", rows.size(),
                       rows.size() - static_cast<std::size_t>(failures), failures);
  }
  return failures == 0 ? 0 : 1;
}

int validate_roofline_csv(const std::string& path, double tolerance, bool as_json, std::ostream& out,
                          std::ostream& err, bool strict_hlo) {
  auto table = read_csv_file(path);
  if (!table.ok()) {
    err << format_all(table.errors());
    return 2;
  }
  if (auto missing = table->require({"workload", "chip"}); !missing.empty()) {
    err << format_all(missing);
    return 2;
  }
  struct Row {
    Common c;
    double max_factor = 0;
    double op_slack = 0;
  };
  std::vector<Row> rows;
  std::vector<Diagnostic> bad;
  for (const auto& rec : table->records) {
    Row row;
    if (!read_common(*table, rec, row.c, bad)) continue;
    if (!optional_number(*table, rec, "max_factor", 1 + tolerance, row.max_factor, bad)) continue;
    if (!optional_number(*table, rec, "op_slack", kDefaultOpSlack, row.op_slack, bad)) continue;
    if (row.op_slack >= 1) {
      bad.push_back(table->error_at(rec, "op_slack", "op_slack is a fraction below 1, e.g. 0.05"));
      continue;
    }
    if (row.max_factor < 1) {
      bad.push_back(table->error_at(rec, "max_factor", "max_factor must be at least 1 (a time at or above the bound)"));
      continue;
    }
    rows.push_back(std::move(row));
  }
  if (!bad.empty()) {
    err << format_all(bad);
    return 2;
  }
  // Relative slack for "at least the bound": both sides are sums of doubles.
  constexpr double kSlack = 1e-9;
  json j = json::array();
  int failures = 0;
  if (!as_json) {
    out << fmt::format("{:<40} {:<6} {:>12} {:>12} {:>8} {:>6} {:>10}  {}\n", "workload", "chip", "bound us",
                       "tpusim us", "x bound", "max", "ops<bound", "result");
  }
  for (const Row& row : rows) {
    const HloRunOutcome run = run_hlo_isolated(row.c.workload, row.c.chip, strict_hlo);
    if (run.exit_code != 0) {
      err << run.error;
      return run.exit_code;
    }
    const json& r = run.report;
    const double sim = r["step_time_s"].get<double>(), bound = r["bound_time_s"].get<double>();
    const double factor = bound > 0 ? sim / bound : 0;
    json below = json::array();
    for (const auto& op : r["ops"]) {
      const double b = op["bound_time_s"].get<double>();
      if (b > 0 && op["time_s"].get<double>() < b * (1 - row.op_slack) * (1 - kSlack)) {
        below.push_back({{"op", op["name"]}, {"time_s", op["time_s"]}, {"bound_time_s", b}});
      }
    }
    const bool module_ok = sim >= bound * (1 - kSlack) && factor <= row.max_factor;
    const bool pass = module_ok && below.empty();
    failures += pass ? 0 : 1;
    if (as_json) {
      j.push_back({{"workload", row.c.workload}, {"chip", row.c.chip_name}, {"bound_time_s", bound},
                   {"tpusim_s", sim}, {"time_over_bound", factor}, {"max_factor", row.max_factor},
                   {"op_slack", row.op_slack},
                   {"ops_below_bound", below}, {"ops", r["ops"].size()}, {"pass", pass}, {"source", row.c.source}});
    } else {
      out << fmt::format("{:<40} {:<6} {:>12.3f} {:>12.3f} {:>8.3f} {:>6.2f} {:>10}  {}\n", shorten(row.c.workload),
                         row.c.chip_name, bound * 1e6, sim * 1e6, factor, row.max_factor, below.size(),
                         pass ? "pass" : "FAIL");
      for (const auto& b : below) {
        out << fmt::format("  below its bound: {} simulated {:.3f} us < bound {:.3f} us\n",
                           b["op"].get<std::string>(), b["time_s"].get<double>() * 1e6,
                           b["bound_time_s"].get<double>() * 1e6);
      }
    }
  }
  if (as_json) {
    out << json_text(json{{"kind", "roofline"}, {"tolerance", tolerance}, {"rows", j}, {"failures", failures}}, 2) << "\n";
  } else {
    out << fmt::format("{} rows, {} pass, {} fail\n", rows.size(), rows.size() - static_cast<std::size_t>(failures),
                       failures);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace tpusim
