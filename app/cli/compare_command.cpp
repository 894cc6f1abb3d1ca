#include "app/cli/compare_command.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "common/json_text.h"
#include "common/units.h"
#include "app/cli/commands.h"
#include "app/report/report.h"
#include "app/cli/config_command.h"
#include "app/hlo_run.h"

namespace tpusim::cli {
namespace {

using nlohmann::json;

struct Side {
  json report;
  std::map<std::string, json> ops;  // by op name
};

double num(const json& j, const char* key) { return j.contains(key) ? j[key].get<double>() : 0.0; }

}  // namespace

int cmd_compare(const CommonOptions& opt, const std::vector<std::string>& input_list,
                const std::vector<std::string>& chip_list, std::ostream& out, std::ostream& err) {
  if (input_list.empty() || input_list.size() > 2 || chip_list.size() > 2 ||
      (input_list.size() == 1 && chip_list.size() != 2)) {
    err << "tpusim compare: error: give two modules (a.hlo b.hlo, on one --chip), or one module and two chips "
           "(--chip A --chip B)\n";
    return kUsageError;
  }
  LoadedConfig cfgs[2];
  for (int s = 0; s < 2; ++s) {
    CommonOptions o = opt;
    if (!chip_list.empty()) o.chip = chip_list[std::min<std::size_t>(static_cast<std::size_t>(s), chip_list.size() - 1)];
    if (!load_chip(o, cfgs[s], err)) return kUsageError;
  }
  std::optional<ChipConfig> lower_chip;
  if (!load_lower_chip(opt, lower_chip, err)) return kUsageError;
  const std::string chip_names[2] = {cfgs[0].chip.name, cfgs[1].chip.name};
  Side side[2];
  const std::string inputs[2] = {input_list.front(), input_list.back()};
  int worst = kOk;
  for (int s = 0; s < 2; ++s) {
    HloRunOutcome run = run_hlo_isolated(inputs[s], cfgs[s].chip, opt.strict, lower_chip ? &*lower_chip : nullptr);
    err << run.warnings;
    if (run.exit_code != 0) {
      err << run.error;
      worst = std::max(worst, run.exit_code);
      continue;
    }
    json& j = run.report;
    for (const auto& op : j["ops"]) side[s].ops.emplace(op["name"].get<std::string>(), op);
    side[s].report = std::move(j);
  }
  if (worst != kOk) return worst;

  // Per-op rows: matched by name. Ops left unmatched on both sides (XLA
  // renames what it fuses: mul.98 becomes dot_multiply_fusion.1) are matched
  // by their metadata op_name, the framework's name for them: every
  // unmatched op of a with op_name X against every unmatched op of b with
  // the same X, as one row named X. An op matched neither way is a row of
  // its own side.
  struct Row {
    std::string name;
    std::vector<const json*> x, y;  // the ops of a and of b the row stands for
    bool by_op_name = false;
    double delta = 0;
  };
  const auto time_of = [](const std::vector<const json*>& ops) {
    double t = 0;
    for (const json* op : ops) t += num(*op, "time_s");
    return t;
  };
  std::vector<Row> rows;
  std::map<std::string, Row> by_op_name;
  const auto op_name = [](const json& op) {
    return op.contains("op_name") && op["op_name"].is_string() ? op["op_name"].get<std::string>() : std::string();
  };
  std::set<std::string> unmatched_b;  // op_names of b's ops unmatched by name
  for (const auto& [name, op] : side[1].ops) {
    if (!side[0].ops.contains(name) && !op_name(op).empty()) unmatched_b.insert(op_name(op));
  }
  std::set<std::string> unmatched_a;
  for (const auto& [name, op] : side[0].ops) {
    if (!side[1].ops.contains(name) && !op_name(op).empty()) unmatched_a.insert(op_name(op));
  }
  for (const auto& [name, op] : side[0].ops) {
    const auto it = side[1].ops.find(name);
    if (it != side[1].ops.end()) {
      rows.push_back({name, {&op}, {&it->second}, false, 0});
    } else if (const std::string k = op_name(op); !k.empty() && unmatched_b.contains(k)) {
      Row& g = by_op_name[k];
      g.name = k;
      g.by_op_name = true;
      g.x.push_back(&op);
    } else {
      rows.push_back({name, {&op}, {}, false, 0});
    }
  }
  for (const auto& [name, op] : side[1].ops) {
    if (side[0].ops.contains(name)) continue;
    if (const std::string k = op_name(op); !k.empty() && unmatched_a.contains(k)) {
      by_op_name[k].y.push_back(&op);
    } else {
      rows.push_back({name, {}, {&op}, false, 0});
    }
  }
  for (auto& [k, g] : by_op_name) rows.push_back(std::move(g));
  for (Row& r : rows) r.delta = time_of(r.y) - time_of(r.x);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& p, const Row& q) { return std::abs(p.delta) > std::abs(q.delta); });

  const double ta = num(side[0].report, "step_time_s"), tb = num(side[1].report, "step_time_s");
  const double delta = tb - ta;
  // A side's bound and limiter: its op's, or its longest op's in a group.
  const auto longest = [](const std::vector<const json*>& ops) {
    const json* best = nullptr;
    for (const json* op : ops) {
      if (best == nullptr || num(*op, "time_s") > num(*best, "time_s")) best = op;
    }
    return best;
  };
  const auto names = [](const std::vector<const json*>& ops) {
    json a = json::array();
    for (const json* op : ops) a.push_back((*op)["name"]);
    return a;
  };
  json rows_json = json::array();
  for (const Row& r : rows) {
    const json* x = longest(r.x);
    const json* y = longest(r.y);
    rows_json.push_back({{"name", r.name},
                         {"a_time_s", x ? json(time_of(r.x)) : json(nullptr)},
                         {"b_time_s", y ? json(time_of(r.y)) : json(nullptr)},
                         {"delta_s", r.delta},
                         {"share_of_difference", delta != 0 ? r.delta / delta : 0.0},
                         {"a_bound", x ? (*x)["bound"] : json(nullptr)},
                         {"b_bound", y ? (*y)["bound"] : json(nullptr)},
                         {"a_limiter", x ? (*x)["limiter"] : json(nullptr)},
                         {"b_limiter", y ? (*y)["limiter"] : json(nullptr)},
                         {"in", x && y ? "both" : x ? "a" : "b"},
                         {"matched_by", x && y ? (r.by_op_name ? "op_name" : "name") : "none"},
                         {"a_ops", names(r.x)},
                         {"b_ops", names(r.y)}});
  }
  auto summary = [](const json& r) {
    double flops = 0;
    for (const auto& op : r["ops"]) flops += num(op, "flops");
    return json{{"program", r["program"]},
                {"step_time_s", r["step_time_s"]},
                {"bound_time_s", r["bound_time_s"]},
                {"ops", r["ops"].size()},
                {"flops", flops},
                {"hbm_bytes", r["hbm"]["bytes"]},
                {"mxu_flop_utilization", r["mxu"]["flop_utilization"]},
                {"hbm_bandwidth_utilization", r["hbm"]["bandwidth_utilization"]},
                {"approximations", r["approximations"].size()}};
  };
  json j{{"chip", chip_names[0] == chip_names[1] ? json(chip_names[0]) : json(nullptr)},
         {"chips", {chip_names[0], chip_names[1]}},
         {"a", summary(side[0].report)},
         {"b", summary(side[1].report)},
         {"delta_s", delta},
         {"relative_change", ta > 0 ? delta / ta : 0.0},
         {"speedup_b_over_a", tb > 0 ? ta / tb : 0.0},
         {"ops", rows_json}};
  if (!write_output_file(opt, "compare.json", json_text(j, 2) + "\n", err)) return kUsageError;
  if (opt.format == Format::kJson) {
    out << json_text(j, 2) << "\n";
    return kOk;
  }
  if (opt.format == Format::kCsv) {  // the op rows, largest change first
    out << rows_csv(j["ops"], {"name", "in", "a_time_s", "b_time_s", "delta_s", "share_of_difference", "a_bound",
                               "b_bound", "a_limiter", "b_limiter", "matched_by"});
    return kOk;
  }
  for (const char* k : {"a", "b"}) {
    const json& s = j[k];
    out << fmt::format("{}: {} on {}: step {:.3f} us (roofline {:.3f} us), {} ops, {} FLOP, {} HBM, "
                       "MXU {:.1f}%, HBM {:.1f}%{}\n",
                       k, s["program"].get<std::string>(), chip_names[k[0] == 'a' ? 0 : 1], s["step_time_s"].get<double>() * 1e6,
                       s["bound_time_s"].get<double>() * 1e6, s["ops"].get<std::size_t>(),
                       format_si(s["flops"].get<double>(), ""), format_si(s["hbm_bytes"].get<double>(), "B"),
                       100 * s["mxu_flop_utilization"].get<double>(),
                       100 * s["hbm_bandwidth_utilization"].get<double>(),
                       s["approximations"].get<std::size_t>() > 0
                           ? fmt::format(", {} approximated ops", s["approximations"].get<std::size_t>())
                           : "");
  }
  out << fmt::format("b - a: {:+.3f} us ({:+.1f}%); b is {:.3f}x the speed of a\n", delta * 1e6,
                     100 * j["relative_change"].get<double>(), j["speedup_b_over_a"].get<double>());
  out << "\nop (largest change first)              a us         b us     delta us  of diff   bound a/b\n";
  const std::size_t shown = opt.verbosity > 0 ? rows.size() : std::min<std::size_t>(rows.size(), 20);
  for (std::size_t i = 0; i < shown; ++i) {
    const json& r = rows_json[i];
    auto us = [](const json& v) { return v.is_null() ? std::string("-") : fmt::format("{:.3f}", v.get<double>() * 1e6); };
    auto bound = [](const json& v) { return v.is_null() ? std::string("-") : v.get<std::string>(); };
    // A row matched by op_name shows how many ops of each side it stands for.
    std::string name = r["name"].get<std::string>();
    if (r["matched_by"] == "op_name") name = fmt::format("{} [{}:{}]", name, r["a_ops"].size(), r["b_ops"].size());
    out << fmt::format("{:<36} {:>10} {:>12} {:>+12.3f} {:>7.1f}%   {}/{}\n", name,
                       us(r["a_time_s"]), us(r["b_time_s"]), r["delta_s"].get<double>() * 1e6,
                       100 * r["share_of_difference"].get<double>(), bound(r["a_bound"]), bound(r["b_bound"]));
  }
  if (shown < rows.size()) out << fmt::format("... {} more rows (-v shows all)\n", rows.size() - shown);
  return kOk;
}

}  // namespace tpusim::cli
