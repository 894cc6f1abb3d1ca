#include "app/validate/validate_gemm.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>
#include <unistd.h>

#include "app/hlo_run.h"
#include "common/config_loader.h"
#include "common/csv.h"
#include "common/json_text.h"

namespace tpusim {
namespace {

using nlohmann::json;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// HLO element types of the columns (the dtype names the sources use).
const std::map<std::string, std::string, std::less<>> kHloType{
    {"bf16", "bf16"}, {"f32", "f32"}, {"s8", "s8"}, {"s32", "s32"}, {"f16", "f16"}, {"fp8", "f8e4m3fn"}};

struct Row {
  int line = 0;
  std::string chip, dtype, out_dtype, timing, split, flags, source;
  std::int64_t m = 0, n = 0, k = 0, tensorcores = 0;
  double measured_s = 0;
  ChipConfig config;
  double device_s = 0;  // predicted
};

std::string series_of(const Row& r) { return r.chip + " " + r.dtype + " " + r.timing; }

std::string dot_hlo(const Row& r) {
  const std::string in = kHloType.at(r.dtype), out = kHloType.at(r.out_dtype);
  return fmt::format(
      "HloModule gemm_{}x{}x{}\n\nENTRY e {{\n  a = {}[{},{}] parameter(0)\n  b = {}[{},{}] parameter(1)\n"
      "  ROOT d = {}[{},{}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n}}\n",
      r.m, r.n, r.k, in, r.m, r.k, in, r.k, r.n, out, r.m, r.n);
}

}  // namespace

std::optional<double> scoped_vmem_limit_bytes(std::string_view xla_flags) {
  static constexpr std::string_view kFlag = "--xla_tpu_scoped_vmem_limit_kib=";
  const std::size_t at = xla_flags.rfind(kFlag);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view rest = xla_flags.substr(at + kFlag.size());
  const std::size_t end = rest.find_first_not_of("0123456789");
  const std::string_view digits = rest.substr(0, end);
  const bool separated = end == std::string_view::npos || rest[end] == ' ' || rest[end] == ';';
  if (digits.empty() || digits.size() > 9 || !separated || std::stoll(std::string(digits)) <= 0) {
    throw std::invalid_argument(fmt::format("{}{}: expected a positive whole number of KiB", kFlag,
                                            rest.substr(0, rest.find(' '))));
  }
  return static_cast<double>(std::stoll(std::string(digits))) * 1024.0;
}

double call_overhead_s(const std::vector<double>& measured_s, const std::vector<double>& predicted_s) {
  std::vector<double> dominated, all;
  for (std::size_t i = 0; i < measured_s.size() && i < predicted_s.size(); ++i) {
    const double gap = measured_s[i] - predicted_s[i];
    all.push_back(gap);
    if (predicted_s[i] <= 0.25 * measured_s[i]) dominated.push_back(gap);
  }
  return std::max(0.0, median(dominated.empty() ? all : dominated));
}

ErrorStats error_stats(const std::vector<double>& measured, const std::vector<double>& predicted) {
  ErrorStats s;
  for (std::size_t i = 0; i < measured.size() && i < predicted.size(); ++i) {
    if (!(measured[i] > 0)) continue;
    const double e = (predicted[i] - measured[i]) / measured[i];
    s.mape += std::fabs(e);
    s.signed_mean += e;
    ++s.rows;
  }
  if (s.rows > 0) {
    s.mape /= static_cast<double>(s.rows);
    s.signed_mean /= static_cast<double>(s.rows);
  }
  return s;
}

int validate_gemm_csv(const std::string& path, double tolerance, bool as_json, std::ostream& out,
                      std::ostream& err) {
  auto table = read_csv_file(path);
  if (!table.ok()) {
    err << format_all(table.errors());
    return 2;
  }
  if (auto missing = table->require({"chip", "dtype", "out_dtype", "M", "N", "K", "xla_flags", "tensorcores", "timing",
                                     "measured", "unit", "split"});
      !missing.empty()) {
    err << format_all(missing);
    return 2;
  }
  std::vector<Row> rows;
  std::vector<Diagnostic> bad;
  std::map<std::string, ChipConfig> configs;  // by chip and core count
  for (const auto& rec : table->records) {
    Row r;
    r.line = rec.line;
    r.chip = table->text(rec, "chip");
    r.dtype = table->text(rec, "dtype");
    r.out_dtype = table->text(rec, "out_dtype");
    r.timing = table->text(rec, "timing");
    r.split = table->text(rec, "split");
    r.flags = table->text(rec, "xla_flags");
    r.source = table->column("source") >= 0 ? table->text(rec, "source") : "";
    bool ok = true;
    const auto integer = [&](std::string_view col, std::int64_t& v) {
      auto x = table->number(rec, col);
      if (!x.ok() || !(*x >= 1) || *x != std::floor(*x)) {
        bad.push_back(table->error_at(rec, col, fmt::format("{} must be a positive integer", col)));
        ok = false;
        return;
      }
      v = static_cast<std::int64_t>(*x);
    };
    integer("M", r.m);
    integer("N", r.n);
    integer("K", r.k);
    integer("tensorcores", r.tensorcores);
    for (const auto* col : {"dtype", "out_dtype"}) {
      if (!kHloType.contains(table->text(rec, col))) {
        bad.push_back(table->error_at(rec, col, fmt::format("{} '{}': expected bf16, f32, s8, s32, f16 or fp8", col,
                                                      table->text(rec, col))));
        ok = false;
      }
    }
    if (r.timing != "host" && r.timing != "device") {
      bad.push_back(table->error_at(rec, "timing", "timing must be host or device"));
      ok = false;
    }
    if (r.split != "cal" && r.split != "val") {
      bad.push_back(table->error_at(rec, "split", "split must be cal or val"));
      ok = false;
    }
    const std::string unit = table->text(rec, "unit");
    auto measured = table->number(rec, "measured");
    if (!measured.ok() || !(*measured > 0) || (unit != "us" && unit != "ms" && unit != "s")) {
      bad.push_back(table->error_at(rec, "measured", "measured must be a positive time with unit us, ms or s"));
      ok = false;
    } else {
      r.measured_s = *measured * (unit == "us" ? 1e-6 : unit == "ms" ? 1e-3 : 1.0);
    }
    if (!ok) continue;
    const std::string key = fmt::format("{}/{}", r.chip, r.tensorcores);
    if (!configs.contains(key)) {
      auto cfg = load_config(r.chip);
      if (!cfg.ok()) {
        bad.push_back(table->error_at(rec, "chip", fmt::format("chip '{}': {}", r.chip, cfg.errors().front().message)));
        continue;
      }
      ChipConfig c = cfg->chip;
      // One TensorCore of a megacore chip: the dot runs on that core alone.
      if (r.tensorcores < c.tensorcores && c.megacore) {
        c.tensorcores = r.tensorcores;
        c.megacore = r.tensorcores > 1;
      }
      configs.emplace(key, c);
    }
    r.config = configs.at(key);
    try {
      if (const auto limit = scoped_vmem_limit_bytes(r.flags)) r.config.core.vmem.scoped_limit = *limit;
    } catch (const std::invalid_argument& e) {
      bad.push_back(table->error_at(rec, "xla_flags", e.what()));
      continue;
    }
    rows.push_back(std::move(r));
  }
  if (!bad.empty()) {
    err << format_all(bad);
    return 2;
  }
  // Predicted device time of every row (one child process each).
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("tpusim_gemm_{}", ::getpid());
  fs::create_directories(dir);
  for (Row& r : rows) {
    const fs::path hlo = dir / fmt::format("gemm_{}.hlo", r.line);
    std::ofstream(hlo) << dot_hlo(r);
    const HloRunOutcome run = run_hlo_isolated(hlo.string(), r.config);
    if (run.exit_code != 0) {
      err << fmt::format("{}:{}: error: the {}x{}x{} {} dot on {}: {}", table->file, r.line, r.m, r.n, r.k, r.dtype,
                         r.chip, run.error);
      fs::remove_all(dir);
      return run.exit_code;
    }
    r.device_s = run.report["step_time_s"].get<double>();
  }
  fs::remove_all(dir);
  // Per series: the overhead fitted on its cal rows, then the errors.
  struct Series {
    std::vector<const Row*> rows;
    double overhead_s = 0;
    ErrorStats cal, val;
  };
  std::map<std::string, Series> series;
  for (const Row& r : rows) series[series_of(r)].rows.push_back(&r);
  int failures = 0;
  for (auto& [name, s] : series) {
    std::vector<double> cm, cp;
    for (const Row* r : s.rows) {
      if (r->split == "cal") {
        cm.push_back(r->measured_s);
        cp.push_back(r->device_s);
      }
    }
    s.overhead_s = s.rows.front()->timing == "host" ? call_overhead_s(cm, cp) : 0.0;
    std::vector<double> vm, vp;
    cp.clear();
    for (const Row* r : s.rows) {
      if (r->split == "cal") cp.push_back(r->device_s + s.overhead_s);
      if (r->split == "val") {
        vm.push_back(r->measured_s);
        vp.push_back(r->device_s + s.overhead_s);
      }
    }
    s.cal = error_stats(cm, cp);
    s.val = error_stats(vm, vp);
    if (tolerance >= 0 && s.val.rows > 0 && s.val.mape > tolerance) ++failures;
  }
  if (as_json) {
    json jr = json::array(), js = json::array();
    for (const Row& r : rows) {
      const double o = series.at(series_of(r)).overhead_s;
      jr.push_back({{"line", r.line}, {"chip", r.chip}, {"dtype", r.dtype}, {"M", r.m}, {"N", r.n}, {"K", r.k},
                    {"timing", r.timing}, {"split", r.split}, {"xla_flags", r.flags}, {"measured_s", r.measured_s},
                    {"device_s", r.device_s}, {"overhead_s", o}, {"predicted_s", r.device_s + o},
                    {"error", (r.device_s + o - r.measured_s) / r.measured_s}, {"source", r.source}});
    }
    for (const auto& [name, s] : series) {
      const Row& f = *s.rows.front();
      js.push_back({{"chip", f.chip}, {"dtype", f.dtype}, {"timing", f.timing}, {"overhead_s", s.overhead_s},
                    {"cal", {{"rows", s.cal.rows}, {"mape", s.cal.mape}, {"signed_mean", s.cal.signed_mean}}},
                    {"val", {{"rows", s.val.rows}, {"mape", s.val.mape}, {"signed_mean", s.val.signed_mean}}}});
    }
    out << json_text(json{{"kind", "gemm"}, {"tolerance", tolerance >= 0 ? json(tolerance) : json(nullptr)}, {"rows", jr},
                          {"series", js}, {"failures", failures}},
                     2)
        << "\n";
  } else {
    out << fmt::format("{:<22} {:>12} {:>5} {:>5} {:>11} {:>11} {:>11}\n", "series (chip dtype timing)",
                       "overhead us", "cal", "val", "cal MAPE", "val MAPE", "val bias");
    for (const auto& [name, s] : series) {
      out << fmt::format("{:<22} {:>12.1f} {:>5} {:>5} {:>10.1f}% {:>10.1f}% {:>+10.1f}%\n", name, s.overhead_s * 1e6,
                         s.cal.rows, s.val.rows, 100 * s.cal.mape, 100 * s.val.mape, 100 * s.val.signed_mean);
    }
    out << fmt::format("{} rows in {} series{}\n", rows.size(), series.size(),
                       tolerance >= 0 ? fmt::format(", {} over the {:.0f}% val MAPE tolerance", failures, 100 * tolerance)
                                      : std::string(" (report only: no --tolerance)"));
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace tpusim
