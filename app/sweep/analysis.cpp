#include "app/sweep/analysis.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <set>

#include "common/json_text.h"

namespace tpusim::sweep {
namespace {

std::string csv_field(const nlohmann::ordered_json& v) {
  std::string s;
  if (v.is_null()) return "";
  if (v.is_string()) {
    s = v.get<std::string>();
  } else if (v.is_boolean()) {
    s = v.get<bool>() ? "true" : "false";
  } else {
    s = json_text(v);
  }
  // One record per line (line-based readers too): newlines become " / ".
  for (std::size_t i = s.find_first_of("\r\n"); i != std::string::npos; i = s.find_first_of("\r\n", i)) {
    std::size_t j = i;
    while (j < s.size() && (s[j] == '\r' || s[j] == '\n')) ++j;
    s.replace(i, j - i, " / ");
    i += 3;
  }
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

// Keys of `field` over all records, in first-seen order.
std::vector<std::string> union_keys(const std::vector<Record>& records, const char* field) {
  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const auto& r : records) {
    if (!r.contains(field) || !r[field].is_object()) continue;
    for (const auto& [k, v] : r[field].items()) {
      if (seen.insert(k).second) keys.push_back(k);
    }
  }
  return keys;
}

std::optional<double> number_at(const Record& r, const char* field, const std::string& key) {
  if (!r.contains(field) || !r[field].is_object() || !r[field].contains(key)) return std::nullopt;
  const auto& v = r[field][key];
  if (v.is_number()) return v.get<double>();
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  return std::nullopt;
}
std::optional<double> number_top(const Record& r, const char* key) {
  if (r.contains(key) && r[key].is_number()) return r[key].get<double>();
  return std::nullopt;
}

std::string value_text(const Record& r, const std::string& key) {
  if (r.contains("params") && r["params"].contains(key) && r["params"][key].is_string()) {
    return r["params"][key].get<std::string>();
  }
  return "";
}

nlohmann::ordered_json point_summary(const Record& r) {
  nlohmann::ordered_json p;
  p["point"] = r.value("point", 0);
  p["params"] = r.contains("params") ? r["params"] : nlohmann::ordered_json::object();
  for (const char* k : {"time_s", "area_proxy", "power_proxy"}) {
    if (auto v = number_top(r, k)) p[k] = *v;
  }
  p["config_hash"] = r.value("config_hash", "");
  return p;
}

}  // namespace

std::string export_csv(const std::vector<Record>& records) {
  const auto params = union_keys(records, "params");
  const auto metrics = union_keys(records, "metrics");
  std::vector<std::string> header{"sweep", "point", "workload", "mode", "status", "config_hash"};
  std::set<std::string> used(header.begin(), header.end());
  auto unique = [&](const std::string& k, const char* prefix) {
    return used.insert(k).second ? k : (used.insert(prefix + k), prefix + k);
  };
  std::vector<std::string> pcols;
  std::vector<std::string> mcols;
  for (const auto& k : params) pcols.push_back(unique(k, "param:"));
  for (const auto& k : metrics) mcols.push_back(unique(k, "metric:"));
  const std::vector<std::string> tail{"time_s", "area_proxy", "power_proxy", "wall_s", "error"};
  std::string out;
  auto row = [&](const std::vector<std::string>& fields) {
    for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
    out += "\n";
  };
  std::vector<std::string> h = header;
  for (const auto& c : pcols) h.push_back(csv_field(c));
  for (const auto& c : mcols) h.push_back(csv_field(c));
  for (const auto& c : tail) h.push_back(unique(c, "x:") == c ? c : "x:" + c);
  row(h);
  const nlohmann::ordered_json null;
  for (const auto& r : records) {
    std::vector<std::string> f;
    for (const auto& k : header) f.push_back(csv_field(r.contains(k) ? r[k] : null));
    for (const auto& k : params) {
      // Base-unit numbers where the runner resolved them, else the YAML text.
      if (r.contains("values") && r["values"].contains(k)) {
        f.push_back(csv_field(r["values"][k]));
      } else {
        f.push_back(csv_field(r.contains("params") && r["params"].contains(k) ? r["params"][k] : null));
      }
    }
    for (const auto& k : metrics) {
      const auto& v = r.contains("metrics") && r["metrics"].contains(k) ? r["metrics"][k] : null;
      f.push_back(v.is_object() || v.is_array() ? csv_field(json_text(v)) : csv_field(v));
    }
    for (const auto& k : tail) f.push_back(csv_field(r.contains(k) ? r[k] : null));
    row(f);
  }
  return out;
}

std::vector<std::size_t> pareto_front(const std::vector<std::array<double, 3>>& obj) {
  std::vector<std::size_t> front;
  for (std::size_t i = 0; i < obj.size(); ++i) {
    bool dominated = false;
    for (std::size_t j = 0; j < obj.size() && !dominated; ++j) {
      if (i == j) continue;
      bool all_le = true;
      bool some_lt = false;
      for (std::size_t k = 0; k < 3; ++k) {
        all_le = all_le && obj[j][k] <= obj[i][k];
        some_lt = some_lt || obj[j][k] < obj[i][k];
      }
      dominated = all_le && some_lt;
    }
    if (!dominated) front.push_back(i);
  }
  return front;
}

bool maximize_metric(std::string_view name) {
  return name.find("utilization") != std::string_view::npos || name.find("per_s") != std::string_view::npos ||
         name.find("throughput") != std::string_view::npos || name == "finished";
}

namespace {

using Records = std::vector<const Record*>;

// The best value of every numeric metric (and of time, area and power) over
// a workload's successful records, with the point that reached it.
nlohmann::ordered_json best_points(const std::vector<Record>& records, const std::string& w, const Records& ok) {
  std::vector<std::string> names;
  for (const auto& r : records) {
    if (r.value("workload", "") != w || !r.contains("metrics")) continue;
    for (const auto& [k, v] : r["metrics"].items()) {
      if (v.is_number() && std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
    }
  }
  nlohmann::ordered_json best = nlohmann::ordered_json::array();
  auto add_best = [&](const std::string& name, auto getter) {
    const bool maxi = maximize_metric(name);
    const Record* b = nullptr;
    double bv = 0;
    for (const Record* r : ok) {
      auto v = getter(*r);
      if (!v) continue;
      if (b == nullptr || (maxi ? *v > bv : *v < bv)) {
        b = r;
        bv = *v;
      }
    }
    if (b == nullptr) return;
    nlohmann::ordered_json e;
    e["metric"] = name;
    e["goal"] = maxi ? "max" : "min";
    e["value"] = bv;
    e["point"] = point_summary(*b);
    best.push_back(std::move(e));
  };
  for (const auto& n : names) add_best(n, [&](const Record& r) { return number_at(r, "metrics", n); });
  for (const char* n : {"time_s", "area_proxy", "power_proxy"}) {
    add_best(n, [&](const Record& r) { return number_top(r, n); });
  }
  return best;
}

// The Pareto front of time, area and power (all minimized), by time.
nlohmann::ordered_json pareto_points(const Records& ok) {
  std::vector<const Record*> cand;
  std::vector<std::array<double, 3>> obj;
  for (const Record* r : ok) {
    auto t = number_top(*r, "time_s");
    auto a = number_top(*r, "area_proxy");
    auto p = number_top(*r, "power_proxy");
    if (!t || !a || !p) continue;
    cand.push_back(r);
    obj.push_back({*t, *a, *p});
  }
  auto front = pareto_front(obj);
  std::sort(front.begin(), front.end(), [&](std::size_t x, std::size_t y) { return obj[x][0] < obj[y][0]; });
  nlohmann::ordered_json pf = nlohmann::ordered_json::array();
  for (std::size_t i : front) pf.push_back(point_summary(*cand[i]));
  return pf;
}

// Least-squares slope of y on x.
std::optional<double> slope(const std::vector<std::pair<double, double>>& xy) {
  if (xy.size() < 2) return std::nullopt;
  double mx = 0;
  double my = 0;
  for (auto [x, y] : xy) {
    mx += x;
    my += y;
  }
  mx /= static_cast<double>(xy.size());
  my /= static_cast<double>(xy.size());
  double sxy = 0;
  double sxx = 0;
  for (auto [x, y] : xy) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) * (x - mx);
  }
  if (sxx <= 0) return std::nullopt;
  return sxy / sxx;
}

// How time depends on parameter `key` over the successful records: the
// spread of its mean time per value (main effect, relative to the mean
// time) and its elasticity (slope of log time on log value); nullopt when
// it takes fewer than two values.
std::optional<nlohmann::ordered_json> sensitivity(const std::string& key, const Records& ok, double mean_time) {
  std::map<std::string, std::pair<double, std::size_t>> groups;  // value -> (sum time, n)
  std::vector<std::pair<double, double>> xy;                      // (log value, log time)
  for (const Record* r : ok) {
    auto t = number_top(*r, "time_s");
    const std::string v = value_text(*r, key);
    if (!t || v.empty()) continue;
    auto& g = groups[v];
    g.first += *t;
    ++g.second;
    auto x = number_at(*r, "values", key);
    if (x && *x > 0 && *t > 0) xy.emplace_back(std::log(*x), std::log(*t));
  }
  if (groups.size() < 2 || mean_time <= 0) return std::nullopt;
  nlohmann::ordered_json s;
  s["param"] = key;
  s["distinct_values"] = groups.size();
  double lo = INFINITY;
  double hi = -INFINITY;
  nlohmann::ordered_json means = nlohmann::ordered_json::object();
  for (const auto& [v, g] : groups) {
    const double m = g.first / static_cast<double>(g.second);
    lo = std::min(lo, m);
    hi = std::max(hi, m);
    if (groups.size() <= 16) means[v] = m;
  }
  s["time_spread"] = (hi - lo) / mean_time;
  if (groups.size() <= 16) s["mean_time_s"] = std::move(means);
  // Elasticity: +1 = time grows in proportion.
  if (const auto e = slope(xy)) s["elasticity"] = *e;
  return s;
}

// Every parameter's sensitivity, largest time spread first.
nlohmann::ordered_json sensitivities(const std::vector<Record>& records, const Records& ok) {
  double mean_time = 0;
  std::size_t nt = 0;
  for (const Record* r : ok) {
    if (auto t = number_top(*r, "time_s")) {
      mean_time += *t;
      ++nt;
    }
  }
  if (nt > 0) mean_time /= static_cast<double>(nt);
  nlohmann::ordered_json sens = nlohmann::ordered_json::array();
  for (const auto& key : union_keys(records, "params")) {
    if (auto s = sensitivity(key, ok, mean_time)) sens.push_back(std::move(*s));
  }
  std::sort(sens.begin(), sens.end(), [](const auto& a, const auto& b) {
    return a["time_spread"].template get<double>() > b["time_spread"].template get<double>();
  });
  return sens;
}

}  // namespace

nlohmann::ordered_json sweep_report(const std::vector<Record>& records) {
  nlohmann::ordered_json rep;
  std::map<std::string, std::size_t> statuses;
  std::vector<std::string> workloads;
  for (const auto& r : records) {
    ++statuses[r.value("status", "?")];
    const std::string w = r.value("workload", "");
    if (std::find(workloads.begin(), workloads.end(), w) == workloads.end()) workloads.push_back(w);
  }
  rep["records"] = records.size();
  rep["statuses"] = statuses;
  rep["workloads"] = nlohmann::ordered_json::array();
  for (const auto& w : workloads) {
    Records ok;
    for (const auto& r : records) {
      if (r.value("workload", "") == w && r.value("status", "") == "ok") ok.push_back(&r);
    }
    nlohmann::ordered_json wr;
    wr["workload"] = w;
    wr["ok"] = ok.size();
    wr["best"] = best_points(records, w, ok);
    wr["pareto"] = pareto_points(ok);
    wr["sensitivity"] = sensitivities(records, ok);
    rep["workloads"].push_back(std::move(wr));
  }
  return rep;
}

namespace {
std::string params_line(const nlohmann::ordered_json& p) {
  std::string s;
  for (const auto& [k, v] : p["params"].items()) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, v.get<std::string>());
  return s.empty() ? "(base)" : s;
}
std::string num(const nlohmann::ordered_json& v) { return v.is_number() ? fmt::format("{:.4g}", v.get<double>()) : "-"; }
}  // namespace

std::string format_report(const nlohmann::ordered_json& rep) {
  std::string out = fmt::format("{} records:", rep["records"].get<std::size_t>());
  for (const auto& [k, v] : rep["statuses"].items()) out += fmt::format(" {} {}", v.get<std::size_t>(), k);
  out += "\n(area_proxy and power_proxy are a PROXY model, docs/sweeps.md: compare points, not chips)\n";
  for (const auto& w : rep["workloads"]) {
    out += fmt::format("\n== {} ({} ok)\n", w["workload"].get<std::string>(), w["ok"].get<std::size_t>());
    out += "best per metric:\n";
    for (const auto& b : w["best"]) {
      out += fmt::format("  {:<28} {} {:<10} point {:<4} {}\n", b["metric"].get<std::string>(), b["goal"].get<std::string>(),
                         num(b["value"]), b["point"]["point"].get<std::size_t>(), params_line(b["point"]));
    }
    out += "pareto front (time_s, area_proxy, power_proxy; all minimized):\n";
    for (const auto& p : w["pareto"]) {
      out += fmt::format("  point {:<4} time {:<10} area {:<8} power {:<8} {}\n", p["point"].get<std::size_t>(),
                         num(p.value("time_s", nlohmann::ordered_json())), num(p.value("area_proxy", nlohmann::ordered_json())),
                         num(p.value("power_proxy", nlohmann::ordered_json())), params_line(p));
    }
    out += "sensitivity of time_s (spread of mean time over the parameter's values / mean time; elasticity = d log t / d log value):\n";
    for (const auto& s : w["sensitivity"]) {
      out += fmt::format("  {:<32} spread {:>6.1f}%  elasticity {:<8} ({} values)\n", s["param"].get<std::string>(),
                         100 * s["time_spread"].get<double>(), num(s.value("elasticity", nlohmann::ordered_json())),
                         s["distinct_values"].get<std::size_t>());
    }
  }
  return out;
}

}  // namespace tpusim::sweep
