#include "app/sweep/spec.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <sstream>
#include <yaml-cpp/yaml.h>

#include "common/config_loader.h"
#include "common/params.h"
#include "common/units.h"
#include "app/sweep/point.h"

namespace fs = std::filesystem;

namespace tpusim::sweep {

std::string_view mode_name(Mode m) { return m == Mode::kRun ? "run" : "analyze"; }

std::vector<std::string> default_metrics(Mode m) {
  if (m == Mode::kRun) {
    return {"step_time_s", "cycles", "finished", "mxu.flop_utilization", "hbm.bandwidth_utilization"};
  }
  return {"total.bound_time_s", "total.flops", "total.bytes_accessed", "total.bound"};
}

namespace {

constexpr std::string_view kTopKeys[] = {"name",    "base",        "workloads", "mode",     "grid",
                                         "zip",     "random",      "constraints", "metrics", "timeout",
                                         "area_power", "lower_for"};

std::string suggest(std::string_view word, std::span<const std::string> candidates) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(3, word.size() / 3);
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best.empty() ? "" : fmt::format("; did you mean '{}'?", best);
}

std::string param_suggest(std::string_view key) {
  const auto close = closest_params(key);
  if (close.empty()) return "; see `tpusim config describe` for the keys";
  std::string s = "; did you mean ";
  for (size_t i = 0; i < close.size(); ++i) {
    if (i > 0) s += i + 1 == close.size() ? " or " : ", ";
    s += fmt::format("'{}'", close[i]);
  }
  return s + "?";
}

bool numeric_kind(ParamKind k) {
  switch (k) {
    case ParamKind::kCount:
    case ParamKind::kOptCount:
    case ParamKind::kRatio:
    case ParamKind::kSize:
    case ParamKind::kBandwidth:
    case ParamKind::kFrequency:
    case ParamKind::kTime:
      return true;
    default:
      return false;
  }
}

class SpecParser {
 public:
  SpecParser(std::string_view text, std::string_view file) : text_(text), file_(file) {}

  Result<SweepSpec> parse() {
    spec_.file = file_;
    spec_.name = fs::path(file_).stem().string();
    dir_ = fs::path(file_).parent_path();
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text_));
    } catch (const YAML::ParserException& e) {
      return Diagnostic{file_, e.mark.line + 1, e.mark.column + 1, e.msg,
                        std::string(line_of(text_, e.mark.line + 1))};
    }
    if (!root.IsMap()) return at(root.Mark(), "a sweep spec must be a mapping (base:, workloads:, grid:, …)");

    std::vector<std::string> top(std::begin(kTopKeys), std::end(kTopKeys));
    std::set<std::string> seen;
    std::optional<YAML::Node> base_node, lower_for_node;
    for (auto it = root.begin(); it != root.end(); ++it) {
      const YAML::Node k = it->first;
      const YAML::Node v = it->second;
      const std::string key = k.IsScalar() ? k.Scalar() : "";
      if (!seen.insert(key).second) {
        diag(k.Mark(), fmt::format("duplicate key '{}'", key));
        continue;
      }
      if (key == "name") {
        if (scalar(v, "name")) spec_.name = v.Scalar();
      } else if (key == "base") {
        base_node = v;
      } else if (key == "workloads") {
        workloads_node_ = v;
      } else if (key == "mode") {
        mode_node_ = v;
      } else if (key == "grid") {
        parse_grid(v);
      } else if (key == "zip") {
        parse_zip(v);
      } else if (key == "random") {
        parse_random(v);
      } else if (key == "constraints") {
        parse_constraints(v);
      } else if (key == "metrics") {
        parse_metrics(v);
      } else if (key == "timeout") {
        parse_timeout(v);
      } else if (key == "area_power") {
        parse_area_power(v);
      } else if (key == "lower_for") {
        lower_for_node = v;
      } else {
        diag(k.Mark(), fmt::format("unknown key '{}'{}", key, suggest(key, top)));
      }
    }
    if (!base_node) {
      diag(root.Mark(), "missing 'base:' (a chip preset such as v5e, or a chip YAML file)");
    } else {
      parse_base(*base_node);
    }
    if (lower_for_node) parse_lower_for(*lower_for_node);
    parse_workloads(root.Mark());
    validate_values();
    if (!diags_.empty()) return diags_;
    return std::move(spec_);
  }

 private:
  Diagnostic at(const YAML::Mark& m, std::string message) const {
    Diagnostic d{std::string(file_), 0, 0, std::move(message), ""};
    if (!m.is_null()) {
      d.line = m.line + 1;
      d.column = m.column + 1;
      d.source_line = std::string(line_of(text_, d.line));
    }
    return d;
  }
  void diag(const YAML::Mark& m, std::string message) { diags_.push_back(at(m, std::move(message))); }

  bool scalar(const YAML::Node& v, std::string_view what) {
    if (v.IsScalar()) return true;
    diag(v.Mark(), fmt::format("'{}' takes a single value", what));
    return false;
  }

  std::string resolve(const std::string& p) const {
    if (fs::path(p).is_absolute() || dir_.empty()) return p;
    return (dir_ / p).lexically_normal().string();
  }

  void parse_base(const YAML::Node& v) {
    if (!scalar(v, "base")) return;
    const std::string b = v.Scalar();
    const bool path = b.find('/') != std::string::npos || b.ends_with(".yaml") || b.ends_with(".yml");
    spec_.base = path ? resolve(b) : b;
    auto cfg = load_config(spec_.base);
    if (!cfg) {
      std::string why;
      for (const auto& e : cfg.errors()) why += (why.empty() ? "" : "; ") + e.format();
      diag(v.Mark(), fmt::format("base '{}' does not load: {}", b, why));
      return;
    }
    base_ok_ = true;
  }

  void parse_workloads(const YAML::Mark& root_mark) {
    if (!workloads_node_) {
      diag(root_mark, "missing 'workloads:' (a list of .tasm or .hlo files, relative to this spec)");
      return;
    }
    std::optional<Mode> forced;
    if (mode_node_ && scalar(*mode_node_, "mode")) {
      const std::string m = mode_node_->Scalar();
      if (m == "run") {
        forced = Mode::kRun;
      } else if (m == "analyze") {
        forced = Mode::kAnalyze;
      } else {
        diag(mode_node_->Mark(), fmt::format("'mode' must be run or analyze, got '{}'", m));
      }
    }
    const YAML::Node wl = *workloads_node_;
    std::vector<YAML::Node> items;
    if (wl.IsScalar()) {
      items.push_back(wl);
    } else if (wl.IsSequence()) {
      for (std::size_t i = 0; i < wl.size(); ++i) items.push_back(wl[i]);
    } else {
      diag(wl.Mark(), "'workloads' takes a list of files");
      return;
    }
    if (items.empty()) diag(wl.Mark(), "'workloads' is empty");
    for (const auto& item : items) {
      if (!scalar(item, "workloads entry")) continue;
      Workload w;
      w.path = item.Scalar();
      w.resolved = resolve(w.path);
      const bool hlo = w.path.ends_with(".hlo") || w.path.ends_with(".txt");
      if (!hlo && !w.path.ends_with(".tasm")) {
        diag(item.Mark(), fmt::format("workload '{}' is neither .tasm nor .hlo", w.path));
        continue;
      }
      std::error_code ec;
      // A per-size workload ({chips}) is looked for at each point.
      if (w.path.find("{chips}") == std::string::npos && !fs::is_regular_file(w.resolved, ec)) {
        diag(item.Mark(), fmt::format("workload '{}' not found (looked at {})", w.path, w.resolved));
        continue;
      }
      w.mode = forced.value_or(Mode::kRun);
      if (w.mode == Mode::kAnalyze && !hlo) {
        diag(item.Mark(), fmt::format("mode analyze needs an HLO module, got '{}'", w.path));
        continue;
      }
      spec_.workloads.push_back(std::move(w));
    }
  }

  // The YAML text of one value, as `--set key=<text>` takes it.
  std::optional<std::string> value_text(const YAML::Node& v) {
    if (v.IsScalar()) return v.Scalar();
    if (v.IsSequence()) {
      YAML::Emitter e;
      e << YAML::Flow << v;
      return std::string(e.c_str());
    }
    diag(v.Mark(), "a value must be a scalar (8, 819 GB/s, ws) or a list ([4, 4])");
    return std::nullopt;
  }

  bool known_key(const YAML::Node& k) {
    const std::string key = k.Scalar();
    if (find_param(key) == nullptr) {
      diag(k.Mark(), fmt::format("unknown config key '{}'{}", key, param_suggest(key)));
      return false;
    }
    if (!used_keys_.insert(key).second) {
      diag(k.Mark(), fmt::format("'{}' is swept twice (grid, zip and random keys must be distinct)", key));
      return false;
    }
    return true;
  }

  // key: [v1, v2, ...] -> values with their marks.
  bool value_list(const YAML::Node& k, const YAML::Node& v, std::vector<std::string>& out) {
    if (!v.IsSequence() || v.size() == 0) {
      diag(v.Mark(), fmt::format("'{}' takes a non-empty list of values, e.g. [128, 256]", k.Scalar()));
      return false;
    }
    bool ok = true;
    for (std::size_t i = 0; i < v.size(); ++i) {
      auto t = value_text(v[i]);
      if (!t) {
        ok = false;
        continue;
      }
      out.push_back(*t);
      pending_.push_back({k.Scalar(), *t, v[i].Mark()});
    }
    return ok;
  }

  void parse_grid(const YAML::Node& v) {
    if (!v.IsMap()) {
      diag(v.Mark(), "'grid' takes a mapping of config key -> list of values");
      return;
    }
    for (auto it = v.begin(); it != v.end(); ++it) {
      const YAML::Node k = it->first;
      const YAML::Node vals = it->second;
      if (!k.IsScalar() || !known_key(k)) continue;
      Axis a;
      a.keys.push_back(k.Scalar());
      a.values.emplace_back();
      if (value_list(k, vals, a.values.back())) spec_.axes.push_back(std::move(a));
    }
  }

  void parse_zip(const YAML::Node& v) {
    if (!v.IsSequence()) {
      diag(v.Mark(), "'zip' takes a list of groups, each a mapping of key -> equally long value lists");
      return;
    }
    for (std::size_t g = 0; g < v.size(); ++g) {
      const YAML::Node group = v[g];
      if (!group.IsMap() || group.size() == 0) {
        diag(group.Mark(), "a zip group is a mapping of key -> list of values");
        continue;
      }
      Axis a;
      bool ok = true;
      for (auto it = group.begin(); it != group.end(); ++it) {
        const YAML::Node k = it->first;
        const YAML::Node vals = it->second;
        if (!k.IsScalar() || !known_key(k)) {
          ok = false;
          continue;
        }
        std::vector<std::string> list;
        if (!value_list(k, vals, list)) {
          ok = false;
          continue;
        }
        if (!a.values.empty() && list.size() != a.values.front().size()) {
          diag(vals.Mark(), fmt::format("zip lists must be equally long: '{}' has {} values, '{}' has {}",
                                        k.Scalar(), list.size(), a.keys.front(), a.values.front().size()));
          ok = false;
          continue;
        }
        a.keys.push_back(k.Scalar());
        a.values.push_back(std::move(list));
      }
      if (ok) spec_.axes.push_back(std::move(a));
    }
  }

  std::optional<double> bound(const ParamDecl& p, const YAML::Node& v) {
    if (!v.IsScalar()) {
      diag(v.Mark(), "a range bound is a number or a quantity (256 MiB)");
      return std::nullopt;
    }
    double x = 0;
    std::string err;
    if (auto dim = kind_dimension(p.kind)) {
      if (!parse_quantity(v.Scalar(), *dim, x, err)) {
        diag(v.Mark(), fmt::format("'{}': {}", p.key, err));
        return std::nullopt;
      }
    } else if (!parse_number(v.Scalar(), x)) {
      diag(v.Mark(), fmt::format("'{}' range bound must be a number, got '{}'", p.key, v.Scalar()));
      return std::nullopt;
    }
    if (x < p.min || x > p.max) {
      diag(v.Mark(), fmt::format("'{}' range bound {} is outside the key's range [{}, {}]", p.key, v.Scalar(),
                                 p.min, p.max));
      return std::nullopt;
    }
    return x;
  }

  void parse_random(const YAML::Node& v) {
    if (!v.IsMap()) {
      diag(v.Mark(), "'random' takes {samples: N, seed: S, ranges: {key: [lo, hi], ...}}");
      return;
    }
    RandomSpec r;
    bool have_samples = false;
    const std::vector<std::string> keys{"samples", "seed", "ranges"};
    for (auto it = v.begin(); it != v.end(); ++it) {
      const YAML::Node k = it->first;
      const YAML::Node val = it->second;
      const std::string key = k.IsScalar() ? k.Scalar() : "";
      if (key == "samples" || key == "seed") {
        double x = 0;
        if (!val.IsScalar() || !parse_number(val.Scalar(), x) || x < 0 || x != static_cast<double>(static_cast<std::int64_t>(x))) {
          diag(val.Mark(), fmt::format("'random.{}' must be a non-negative integer", key));
          continue;
        }
        if (key == "samples") {
          r.samples = static_cast<std::int64_t>(x);
          have_samples = true;
        } else {
          r.seed = static_cast<std::uint64_t>(x);
        }
      } else if (key == "ranges") {
        if (!val.IsMap()) {
          diag(val.Mark(), "'random.ranges' takes a mapping of key -> [lo, hi]");
          continue;
        }
        for (auto rt = val.begin(); rt != val.end(); ++rt) {
          const YAML::Node rk = rt->first;
          const YAML::Node rv = rt->second;
          if (!rk.IsScalar() || !known_key(rk)) continue;
          const ParamDecl* p = find_param(rk.Scalar());
          if (!numeric_kind(p->kind)) {
            diag(rk.Mark(), fmt::format("'{}' is {} and cannot be sampled from a range; use grid:", p->key,
                                        kind_name(p->kind)));
            continue;
          }
          if (!rv.IsSequence() || rv.size() != 2) {
            diag(rv.Mark(), fmt::format("'{}' range must be [lo, hi]", p->key));
            continue;
          }
          auto lo = bound(*p, rv[0]);
          auto hi = bound(*p, rv[1]);
          if (!lo || !hi) continue;
          if (*lo > *hi) {
            diag(rv.Mark(), fmt::format("'{}' range has lo > hi", p->key));
            continue;
          }
          r.ranges.push_back({p->key.data(), *lo, *hi});
        }
      } else {
        diag(k.Mark(), fmt::format("unknown key 'random.{}'{}", key, suggest(key, keys)));
      }
    }
    if (!have_samples) diag(v.Mark(), "'random' needs 'samples: N'");
    if (r.ranges.empty()) diag(v.Mark(), "'random' needs 'ranges: {key: [lo, hi]}'");
    spec_.random = std::move(r);
  }

  void parse_constraints(const YAML::Node& v) {
    std::vector<YAML::Node> items;
    if (v.IsScalar()) {
      items.push_back(v);
    } else if (v.IsSequence()) {
      for (std::size_t i = 0; i < v.size(); ++i) items.push_back(v[i]);
    } else {
      diag(v.Mark(), "'constraints' takes a list of expressions, e.g. - core.vmem.capacity <= 256 MiB");
      return;
    }
    const std::vector<std::string> names = constraint_names();
    for (const auto& item : items) {
      if (!scalar(item, "constraint")) continue;
      const YAML::Mark m = item.Mark();
      // A quoted scalar starts one column after its quote.
      const int quote = (m.pos >= 0 && static_cast<std::size_t>(m.pos) < text_.size() &&
                         (text_[static_cast<std::size_t>(m.pos)] == '\'' || text_[static_cast<std::size_t>(m.pos)] == '"'))
                            ? 1
                            : 0;
      auto e = parse_expr(item.Scalar(), file_, m.line + 1, m.column + 1 + quote);
      if (!e) {
        for (auto d : e.errors()) {
          d.source_line = std::string(line_of(text_, d.line));
          diags_.push_back(std::move(d));
        }
        continue;
      }
      bool ok = true;
      for (const auto& n : e->names) {
        if (std::find(names.begin(), names.end(), n) != names.end()) continue;
        const auto off = item.Scalar().find(n);
        Diagnostic d = at(m, "");
        d.column += quote + static_cast<int>(off == std::string::npos ? 0 : off);
        std::string hint = find_param(n) == nullptr ? param_suggest(n) : "";
        if (n.starts_with("derived.") || n.starts_with("proxy.")) hint = suggest(n, names);
        d.message = fmt::format("in constraint '{}': unknown name '{}'{}", item.Scalar(), n, hint);
        diags_.push_back(std::move(d));
        ok = false;
      }
      if (ok) spec_.constraints.push_back({std::move(e).value(), at(m, "")});
    }
  }

  void parse_metrics(const YAML::Node& v) {
    if (!v.IsSequence()) {
      diag(v.Mark(), "'metrics' takes a list of report JSON paths, e.g. [step_time_s, mxu.flop_utilization]");
      return;
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (scalar(v[i], "metrics entry")) spec_.metrics.push_back(v[i].Scalar());
    }
  }

  // lower_for: base | a preset | a chip YAML: every point runs the program
  // compiled for that chip (`run --lower-for`), so the sweep moves only the
  // hardware.
  void parse_lower_for(const YAML::Node& v) {
    if (!scalar(v, "lower_for")) return;
    const std::string b = v.Scalar();
    if (b == "base") {
      spec_.lower_for = spec_.base;
      return;
    }
    const bool path = b.find('/') != std::string::npos || b.ends_with(".yaml") || b.ends_with(".yml");
    const std::string chip = path ? resolve(b) : b;
    auto cfg = load_config(chip);
    if (!cfg) {
      std::string why;
      for (const auto& e : cfg.errors()) why += (why.empty() ? "" : "; ") + e.format();
      diag(v.Mark(), fmt::format("lower_for '{}' does not load: {}", b, why));
      return;
    }
    spec_.lower_for = chip;
  }

  void parse_timeout(const YAML::Node& v) {
    if (!scalar(v, "timeout")) return;
    double x = 0;
    std::string err;
    if (parse_number(v.Scalar(), x) || parse_quantity(v.Scalar(), Dimension::kSeconds, x, err)) {
      if (x >= 0) {
        spec_.timeout_s = x;
        return;
      }
    }
    diag(v.Mark(), fmt::format("'timeout' must be a duration such as 30 s (0 = none), got '{}'", v.Scalar()));
  }

  void parse_area_power(const YAML::Node& v) {
    if (!v.IsMap()) {
      diag(v.Mark(), "'area_power' takes a mapping of coefficient -> number");
      return;
    }
    std::vector<std::string> names;
#define TPUSIM_PROXY_NAME(n, def, doc) names.emplace_back(#n);
    TPUSIM_PROXY_COEFFS(TPUSIM_PROXY_NAME)
#undef TPUSIM_PROXY_NAME
    for (auto it = v.begin(); it != v.end(); ++it) {
      const YAML::Node k = it->first;
      const YAML::Node val = it->second;
      const std::string key = k.IsScalar() ? k.Scalar() : "";
      double* slot = spec_.proxy.find(key);
      if (slot == nullptr) {
        diag(k.Mark(), fmt::format("unknown area_power coefficient '{}'{}", key, suggest(key, names)));
        continue;
      }
      double x = 0;
      if (!val.IsScalar() || !parse_number(val.Scalar(), x) || x < 0) {
        diag(val.Mark(), fmt::format("'{}' must be a non-negative number", key));
        continue;
      }
      *slot = x;
    }
  }

  // Each swept value must load on the base: checked here so a typo in a
  // value is an error at its line, not a failed point later.
  void validate_values() {
    if (!base_ok_) return;
    for (const auto& p : pending_) {
      const std::vector<std::string> o{p.key + "=" + p.text};
      auto cfg = load_config(spec_.base, o);
      if (cfg) continue;
      for (const auto& e : cfg.errors()) {
        if (e.file.starts_with("--set")) diag(p.mark, e.message);
      }
    }
  }

  struct PendingValue {
    std::string key;
    std::string text;
    YAML::Mark mark;
  };

  std::string_view text_;
  std::string file_;
  fs::path dir_;
  SweepSpec spec_;
  std::vector<Diagnostic> diags_;
  std::set<std::string> used_keys_;
  std::vector<PendingValue> pending_;
  std::optional<YAML::Node> workloads_node_;
  std::optional<YAML::Node> mode_node_;
  bool base_ok_ = false;
};

}  // namespace

Result<SweepSpec> load_sweep_spec_text(std::string_view yaml, std::string_view file_name) {
  return SpecParser(yaml, file_name).parse();
}

Result<SweepSpec> load_sweep_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Diagnostic{path, 0, 0, "cannot open sweep spec", ""};
  std::stringstream ss;
  ss << in.rdbuf();
  return load_sweep_spec_text(ss.str(), path);
}

}  // namespace tpusim::sweep
