#include "common/config_loader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <sstream>
#include <yaml-cpp/yaml.h>

#include "common/params.h"
#include "common/units.h"

namespace tpusim {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxExtendsDepth = 16;

// Where we are while applying one YAML layer.
struct Layer {
  std::string file;    // shown in diagnostics
  std::string text;    // the YAML text, for source lines
  OriginKind kind;
  std::string extends_base_dir;  // directory for relative `extends:` paths
};

Diagnostic at(const Layer& layer, const YAML::Mark& mark, std::string message) {
  Diagnostic d;
  d.file = layer.file;
  d.message = std::move(message);
  if (!mark.is_null() && layer.kind != OriginKind::kFlag && layer.kind != OriginKind::kDefault) {
    d.line = mark.line + 1;
    d.column = mark.column + 1;
    d.source_line = std::string(line_of(layer.text, d.line));
  }
  return d;
}

std::string did_you_mean(std::string_view key) {
  const auto close = closest_params(key);
  if (close.empty()) return "; see `tpusim config describe` for the keys";
  std::string s = "; did you mean ";
  for (size_t i = 0; i < close.size(); ++i) {
    if (i > 0) s += i + 1 == close.size() ? " or " : ", ";
    s += fmt::format("'{}'", close[i]);
  }
  return s + "?";
}

bool is_pow2(double v) {
  if (v < 1 || v != std::floor(v)) return false;
  const auto u = static_cast<std::uint64_t>(v);
  return (u & (u - 1)) == 0;
}

std::string range_text(const ParamDecl& p) {
  if (auto dim = kind_dimension(p.kind)) {
    return fmt::format("[{}, {}]", format_quantity(p.min, *dim), format_quantity(p.max, *dim));
  }
  return fmt::format("[{:g}, {:g}]", p.min, p.max);
}

// Parses a scalar for `p` into `out` (base units); returns an error message or "".
std::string parse_numeric(const ParamDecl& p, const std::string& text, double& out) {
  if (auto dim = kind_dimension(p.kind)) {
    std::string err;
    if (!parse_quantity(text, *dim, out, err)) return err;
  } else if (!parse_number(text, out)) {
    return fmt::format("expected a {} for '{}', got '{}'", kind_name(p.kind), p.key, text);
  }
  if (p.kind == ParamKind::kCount || p.kind == ParamKind::kOptCount || p.kind == ParamKind::kCountList) {
    if (out != std::floor(out)) return fmt::format("'{}' needs an integer, got '{}'", p.key, text);
  }
  if (p.kind == ParamKind::kSize && out != std::floor(out)) {
    return fmt::format("'{}' must be a whole number of bytes, got '{}'", p.key, text);
  }
  if (p.min != 0 || p.max != 0) {
    if (out < p.min || out > p.max) {
      if (out <= 0 && p.min > 0) {
        return fmt::format("'{}' must be positive, got '{}' (allowed {})", p.key, text, range_text(p));
      }
      return fmt::format("'{}' = '{}' is out of range {}", p.key, text, range_text(p));
    }
  }
  if (p.pow2 && !is_pow2(out)) {
    return fmt::format("'{}' must be a power of two, got '{}'", p.key, text);
  }
  return {};
}

bool parse_bool(const std::string& s, bool& out) {
  if (s == "true") { out = true; return true; }
  if (s == "false") { out = false; return true; }
  return false;
}

class Loader {
 public:
  explicit Loader(LoadedConfig& cfg) : cfg_(cfg) {}

  std::vector<Diagnostic>& diagnostics() { return diags_; }

  void apply_defaults() {
    Layer layer{"<defaults>", "", OriginKind::kDefault, ""};
    for (const auto& p : all_params()) {
      if (p.required()) continue;
      const YAML::Node node = YAML::Load(std::string(p.default_yaml));
      set(p, node, layer);
    }
  }

  // Applies a whole YAML document (after its `extends:` base).
  void apply_document(Layer layer, int depth) {
    if (depth > kMaxExtendsDepth) {
      diags_.push_back(Diagnostic{layer.file, 0, 0,
                                  fmt::format("`extends:` chain deeper than {} (a cycle?)", kMaxExtendsDepth), ""});
      return;
    }
    YAML::Node root;
    try {
      root = YAML::Load(layer.text);
    } catch (const YAML::Exception& e) {
      diags_.push_back(at(layer, e.mark, fmt::format("invalid YAML: {}", e.msg)));
      return;
    }
    if (root.IsNull()) return;  // an empty file changes nothing
    if (!root.IsMap()) {
      diags_.push_back(at(layer, root.Mark(), "a chip config must be a mapping of keys (e.g. `clock: 1.5 GHz`)"));
      return;
    }
    if (const YAML::Node base = root["extends"]) {
      if (!base.IsScalar()) {
        diags_.push_back(at(layer, base.Mark(), "`extends:` takes a preset name or a YAML file path"));
      } else {
        load_base(base.Scalar(), layer, base.Mark(), depth);
      }
    }
    cfg_.layers.push_back(layer.file);
    walk(root, "", layer);
  }

  void apply_override(const std::string& arg) {
    Layer layer{fmt::format("--set '{}'", arg), "", OriginKind::kFlag, ""};
    const size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) {
      diags_.push_back(Diagnostic{layer.file, 0, 0, "expected key=value, e.g. --set core.mxu.count=8", ""});
      return;
    }
    const std::string key = arg.substr(0, eq);
    const std::string value = arg.substr(eq + 1);
    const ParamDecl* p = find_param(key);
    if (p == nullptr) {
      diags_.push_back(Diagnostic{layer.file, 0, 0, fmt::format("unknown key '{}'{}", key, did_you_mean(key)), ""});
      return;
    }
    YAML::Node node;
    try {
      node = YAML::Load(value);
    } catch (const YAML::Exception& e) {
      diags_.push_back(Diagnostic{layer.file, 0, 0, fmt::format("cannot read value '{}': {}", value, e.msg), ""});
      return;
    }
    if (!node.IsDefined() || (node.IsNull() && p->kind != ParamKind::kOptCount)) {
      diags_.push_back(Diagnostic{layer.file, 0, 0, fmt::format("missing value for '{}'", key), ""});
      return;
    }
    set(*p, node, layer);
  }

 private:
  void load_base(const std::string& name, const Layer& from, const YAML::Mark& mark, int depth) {
    const bool looks_like_path = name.find('/') != std::string::npos || name.ends_with(".yaml") ||
                                 name.ends_with(".yml");
    if (!looks_like_path) {
      const PresetText* preset = find_preset(name);
      if (preset == nullptr) {
        std::string names;
        for (const auto& pr : builtin_presets()) names += (names.empty() ? "" : ", ") + std::string(pr.name);
        diags_.push_back(at(from, mark, fmt::format("unknown preset '{}' (presets: {})", name, names)));
        return;
      }
      if (!visiting_.insert(std::string(preset->path)).second) {
        diags_.push_back(at(from, mark, fmt::format("`extends:` cycle through preset '{}'", name)));
        return;
      }
      apply_document(Layer{std::string(preset->path), std::string(preset->yaml), OriginKind::kPreset, ""}, depth + 1);
      visiting_.erase(std::string(preset->path));
      return;
    }
    fs::path path = name;
    if (path.is_relative() && !from.extends_base_dir.empty()) path = fs::path(from.extends_base_dir) / path;
    std::ifstream in(path);
    if (!in) {
      diags_.push_back(at(from, mark, fmt::format("cannot open '{}' named by `extends:`", path.string())));
      return;
    }
    const std::string canon = fs::weakly_canonical(path).string();
    if (!visiting_.insert(canon).second) {
      diags_.push_back(at(from, mark, fmt::format("`extends:` cycle through '{}'", path.string())));
      return;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    apply_document(Layer{path.string(), ss.str(), OriginKind::kFile, path.parent_path().string()}, depth + 1);
    visiting_.erase(canon);
  }

  void walk(const YAML::Node& map, const std::string& prefix, const Layer& layer) {
    std::set<std::string> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      // Copies: yaml-cpp's iterator yields a temporary pair (references to its
      // members would dangle).
      const YAML::Node k = it->first;
      const YAML::Node v = it->second;
      if (!k.IsScalar()) {
        diags_.push_back(at(layer, k.Mark(), "keys must be plain names"));
        continue;
      }
      const std::string key = prefix.empty() ? k.Scalar() : prefix + "." + k.Scalar();
      if (!seen.insert(k.Scalar()).second) {
        diags_.push_back(at(layer, k.Mark(), fmt::format("duplicate key '{}'", key)));
        continue;
      }
      if (prefix.empty() && key == "extends") continue;  // handled first
      if (const ParamDecl* p = find_param(key)) {
        set(*p, v, layer);
        continue;
      }
      if (v.IsMap() && is_group(key)) {
        walk(v, key, layer);
        continue;
      }
      diags_.push_back(at(layer, k.Mark(), fmt::format("unknown key '{}'{}", key, did_you_mean(key))));
    }
  }

  // True if `key` is a proper prefix of some parameter (a YAML group).
  static bool is_group(const std::string& key) {
    const std::string dotted = key + ".";
    return std::any_of(all_params().begin(), all_params().end(),
                       [&](const ParamDecl& p) { return p.key.starts_with(dotted); });
  }

  void set(const ParamDecl& p, const YAML::Node& node, const Layer& layer) {
    const std::size_t before = diags_.size();
    ParamRef ref = p.field(cfg_.chip);
    std::visit(
        [&](auto& field) {
          if constexpr (std::is_pointer_v<std::remove_reference_t<decltype(field)>>) {
            assign(p, node, layer, *field);
          } else {
            assign(p, node, layer, field);
          }
        },
        ref);
    if (diags_.size() == before) {
      Origin o;
      o.kind = layer.kind;
      o.file = layer.file;
      if (!node.Mark().is_null() && layer.kind != OriginKind::kFlag && layer.kind != OriginKind::kDefault) {
        o.line = node.Mark().line + 1;
        o.column = node.Mark().column + 1;
      }
      cfg_.origins[std::string(p.key)] = o;
    }
  }

  bool scalar(const ParamDecl& p, const YAML::Node& node, const Layer& layer, std::string& out) {
    if (!node.IsScalar()) {
      diags_.push_back(at(layer, node.Mark(),
                          fmt::format("'{}' takes a single {} value, not a {}", p.key, kind_name(p.kind),
                                      node.IsSequence() ? "list" : node.IsMap() ? "mapping" : "null")));
      return false;
    }
    out = node.Scalar();
    return true;
  }

  // True when `s` is one of the key's choices (params.def); else reports it.
  bool is_choice(const ParamDecl& p, const YAML::Node& node, const Layer& layer, const std::string& s) {
    std::string choices(p.choices);
    std::stringstream ss(choices);
    for (std::string c; std::getline(ss, c, '|');) {
      if (c == s) return true;
    }
    diags_.push_back(at(layer, node.Mark(), fmt::format("'{}' must be one of {}, got '{}'", p.key, p.choices, s)));
    return false;
  }

  // A string key, or an enum key kept as a name (hbm.model: a registry name).
  void assign(const ParamDecl& p, const YAML::Node& node, const Layer& layer, std::string& field) {
    std::string s;
    if (!scalar(p, node, layer, s)) return;
    if (p.kind == ParamKind::kEnum && !is_choice(p, node, layer, s)) return;
    field = s;
  }

  // An enum key: one of its choices, parsed into the field's enum here, once.
  void assign(const ParamDecl& p, const YAML::Node& node, const Layer& layer, EnumRef& field) {
    std::string s;
    if (!scalar(p, node, layer, s)) return;
    if (is_choice(p, node, layer, s) && !field.parse(field.field, s)) {
      diags_.push_back(at(layer, node.Mark(),
                          fmt::format("internal: '{}' is a choice of '{}' but not a value of its enum", s, p.key)));
    }
  }

  void assign(const ParamDecl& p, const YAML::Node& node, const Layer& layer, bool& field) {
    std::string s;
    if (!scalar(p, node, layer, s)) return;
    if (!parse_bool(s, field)) {
      diags_.push_back(at(layer, node.Mark(), fmt::format("'{}' must be true or false, got '{}'", p.key, s)));
    }
  }

  bool number(const ParamDecl& p, const YAML::Node& node, const Layer& layer, double& out) {
    std::string s;
    if (!scalar(p, node, layer, s)) return false;
    const std::string err = parse_numeric(p, s, out);
    if (!err.empty()) {
      diags_.push_back(at(layer, node.Mark(), err));
      return false;
    }
    return true;
  }

  void assign(const ParamDecl& p, const YAML::Node& node, const Layer& layer, double& field) {
    double v = 0;
    if (number(p, node, layer, v)) field = v;
  }

  void assign(const ParamDecl& p, const YAML::Node& node, const Layer& layer, std::int64_t& field) {
    double v = 0;
    if (number(p, node, layer, v)) field = static_cast<std::int64_t>(v);
  }

  void assign(const ParamDecl& p, const YAML::Node& node, const Layer& layer, std::optional<std::int64_t>& field) {
    if (node.IsNull()) {
      field.reset();
      return;
    }
    double v = 0;
    if (number(p, node, layer, v)) field = static_cast<std::int64_t>(v);
  }

  void assign(const ParamDecl& p, const YAML::Node& node, const Layer& layer, std::vector<std::int64_t>& field) {
    if (!node.IsSequence()) {
      diags_.push_back(at(layer, node.Mark(), fmt::format("'{}' takes a list, e.g. [4, 4]", p.key)));
      return;
    }
    std::vector<std::int64_t> out;
    for (const auto& item : node) {
      double v = 0;
      if (!number(p, item, layer, v)) return;
      out.push_back(static_cast<std::int64_t>(v));
    }
    if (out.empty()) {
      diags_.push_back(at(layer, node.Mark(), fmt::format("'{}' needs at least one entry", p.key)));
      return;
    }
    field = std::move(out);
  }

  void assign(const ParamDecl& p, const YAML::Node& node, const Layer& layer, std::vector<bool>& field) {
    if (!node.IsSequence()) {
      diags_.push_back(at(layer, node.Mark(), fmt::format("'{}' takes a list, e.g. [true, false]", p.key)));
      return;
    }
    std::vector<bool> out;
    for (const auto& item : node) {
      std::string s;
      bool b = false;
      if (!scalar(p, item, layer, s)) return;
      if (!parse_bool(s, b)) {
        diags_.push_back(at(layer, item.Mark(), fmt::format("'{}' entries must be true or false, got '{}'", p.key, s)));
        return;
      }
      out.push_back(b);
    }
    field = std::move(out);
  }

  LoadedConfig& cfg_;
  std::vector<Diagnostic> diags_;
  std::set<std::string> visiting_;
};

// A diagnostic pointing at where `key` was set (or at the config as a whole).
Diagnostic at_key(const LoadedConfig& c, std::string_view key, std::string message) {
  Diagnostic d;
  d.message = std::move(message);
  auto it = c.origins.find(key);
  if (it != c.origins.end() && it->second.kind != OriginKind::kDefault && it->second.kind != OriginKind::kRule) {
    d.file = it->second.file;
    d.line = it->second.line;
    d.column = it->second.column;
  } else {
    d.file = c.layers.empty() ? std::string("<config>") : c.layers.back();
  }
  return d;
}

std::string origin_of(const LoadedConfig& c, std::string_view key) {
  auto it = c.origins.find(key);
  return it == c.origins.end() ? std::string("unset") : it->second.describe();
}

Result<LoadedConfig> finish(LoadedConfig cfg, std::vector<Diagnostic> diags) {
  // No layer stated system.wraparound: the generation's rule decides.
  if (auto it = cfg.origins.find("system.wraparound");
      it == cfg.origins.end() || it->second.kind == OriginKind::kDefault) {
    auto& system = cfg.chip.system;
    system.wraparound.clear();
    for (const auto& a : wrap_by_rule(system)) system.wraparound.push_back(a.wraps);
    system.wraparound_by_rule = true;
    cfg.origins["system.wraparound"] = Origin{OriginKind::kRule, "system.wrap_rule", 0, 0};
  }
  if (diags.empty()) {
    for (const auto& p : all_params()) {
      if (p.required() && !cfg.origins.contains(p.key)) {
        diags.push_back(Diagnostic{cfg.layers.empty() ? "<config>" : cfg.layers.back(), 0, 0,
                                   fmt::format("required key '{}' ({}) is not set by the file or its presets: {}",
                                               p.key, kind_name(p.kind), p.doc),
                                   ""});
      }
    }
  }
  if (diags.empty()) diags = validate_config(cfg);
  if (!diags.empty()) return diags;
  return cfg;
}

std::string read_file(const std::string& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  ok = static_cast<bool>(in);
  std::stringstream ss;
  if (ok) ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string Origin::describe() const {
  switch (kind) {
    case OriginKind::kDefault: return "default";
    case OriginKind::kPreset: return fmt::format("preset {}:{}", file, line);
    case OriginKind::kFile: return fmt::format("{}:{}", file, line);
    case OriginKind::kFlag: return file;
    case OriginKind::kRule: return "by " + file;
  }
  return "?";
}

const PresetText* find_preset(std::string_view name) {
  for (const auto& p : builtin_presets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

Result<LoadedConfig> load_config_text(std::string_view yaml, std::string_view file_name,
                                      std::span<const std::string> overrides) {
  LoadedConfig cfg;
  Loader loader(cfg);
  loader.apply_defaults();
  const std::string dir = fs::path(std::string(file_name)).parent_path().string();
  loader.apply_document(Layer{std::string(file_name), std::string(yaml), OriginKind::kFile, dir}, 0);
  for (const auto& o : overrides) loader.apply_override(o);
  return finish(std::move(cfg), std::move(loader.diagnostics()));
}

Result<LoadedConfig> load_config(std::string_view chip, std::span<const std::string> overrides) {
  const std::string spec(chip);
  const bool looks_like_path = spec.find('/') != std::string::npos || spec.ends_with(".yaml") ||
                               spec.ends_with(".yml");
  if (!looks_like_path) {
    const PresetText* preset = find_preset(spec);
    if (preset == nullptr) {
      std::string names;
      std::string_view best;
      std::size_t best_d = 3;
      for (const auto& pr : builtin_presets()) {
        names += (names.empty() ? "" : ", ") + std::string(pr.name);
        const std::size_t d = edit_distance(spec, pr.name);
        if (d < best_d) { best_d = d; best = pr.name; }
      }
      std::string hint = best.empty() ? "" : fmt::format("; did you mean '{}'?", best);
      return Diagnostic{"--chip", 0, 0,
                        fmt::format("'{}' is neither a preset ({}) nor a .yaml file{}", spec, names, hint), ""};
    }
    LoadedConfig cfg;
    Loader loader(cfg);
    loader.apply_defaults();
    loader.apply_document(Layer{std::string(preset->path), std::string(preset->yaml), OriginKind::kPreset, ""}, 0);
    for (const auto& o : overrides) loader.apply_override(o);
    return finish(std::move(cfg), std::move(loader.diagnostics()));
  }
  bool ok = false;
  const std::string text = read_file(spec, ok);
  if (!ok) return Diagnostic{spec, 0, 0, "cannot open chip config file", ""};
  return load_config_text(text, spec, overrides);
}

std::vector<Diagnostic> validate_config(const LoadedConfig& c) {
  std::vector<Diagnostic> out;
  const ChipConfig& chip = c.chip;
  const auto& topo = chip.system.topology;
  const auto& wrap = chip.system.wraparound;
  if (!wrap.empty() && wrap.size() != topo.size()) {
    out.push_back(at_key(c, "system.wraparound",
                         fmt::format("system.wraparound has {} entries but system.topology has {} axes",
                                     wrap.size(), topo.size())));
  }
  if (topo.size() > 3) {
    out.push_back(at_key(c, "system.topology",
                         fmt::format("system.topology has {} axes; ICI tori have at most 3", topo.size())));
  }
  int active_axes = 0;
  for (auto n : topo) {
    if (n > 1) ++active_axes;
  }
  const std::int64_t chips = chip_count(chip.system);
  const std::int64_t product = chips / std::max<std::int64_t>(1, chip.system.slices);
  if (chip.system.chips && *chip.system.chips != chips) {
    out.push_back(at_key(c, "system.chips",
                         fmt::format("system.chips = {} but the topology gives {} chips ({} per slice x {} slices)",
                                     *chip.system.chips, chips, product, chip.system.slices)));
  }
  if (active_axes > 0 && chip.ici.links < 2 * active_axes) {
    out.push_back(at_key(c, "system.topology",
                         fmt::format("a topology with {} axes longer than 1 needs 2 ICI links per axis ({}), "
                                     "but ici.links = {} (from {})",
                                     active_axes, 2 * active_axes, chip.ici.links, origin_of(c, "ici.links"))));
  }
  if (chip.system.twisted && std::none_of(wrap.begin(), wrap.end(), [](bool b) { return b; })) {
    out.push_back(at_key(c, "system.twisted", "a twisted torus needs at least one wrapped axis"));
  }
  if (chip.megacore && chip.tensorcores < 2) {
    out.push_back(at_key(c, "megacore", "megacore needs at least 2 TensorCores"));
  }
  if (chip.core.mxu.weight_load_rows_per_cycle > chip.core.mxu.rows) {
    out.push_back(at_key(c, "core.mxu.weight_load_rows_per_cycle",
                         fmt::format("loads {} rows per cycle into an array of {} rows",
                                     chip.core.mxu.weight_load_rows_per_cycle, chip.core.mxu.rows)));
  }
  const double rates = chip.core.mxu.rate.bf16 + chip.core.mxu.rate.f32 + chip.core.mxu.rate.int8 +
                       chip.core.mxu.rate.fp8 + chip.core.mxu.rate.int4;
  if (rates <= 0) out.push_back(at_key(c, "core.mxu.rate.bf16", "the MXU supports no dtype (every rate is 0)"));
  if (chip.core.dma.chunk > chip.core.vmem.capacity) {
    out.push_back(at_key(c, "core.dma.chunk", "a DMA chunk larger than VMEM"));
  }
  return out;
}

DerivedFigures derive(const ChipConfig& c) {
  DerivedFigures d;
  // Peak = TensorCores × MXUs × rows × cols MACs × 2 FLOP/MAC × clock × dtype rate.
  const double macs_per_s = static_cast<double>(c.tensorcores) * static_cast<double>(c.core.mxu.count) *
                            static_cast<double>(c.core.mxu.rows) * static_cast<double>(c.core.mxu.cols) * c.clock;
  d.peak_flops_bf16 = 2 * macs_per_s * c.core.mxu.rate.bf16;
  d.peak_flops_f32 = 2 * macs_per_s * c.core.mxu.rate.f32;
  d.peak_flops_int8 = 2 * macs_per_s * c.core.mxu.rate.int8;
  d.peak_flops_fp8 = 2 * macs_per_s * c.core.mxu.rate.fp8;
  d.peak_flops_int4 = 2 * macs_per_s * c.core.mxu.rate.int4;
  d.hbm_bytes_per_s = c.hbm.bandwidth;
  d.ici_bytes_per_s_per_chip = static_cast<double>(c.ici.links) * c.ici.link_bandwidth * 2;
  d.critical_intensity_flops_per_byte = c.hbm.bandwidth > 0 ? d.peak_flops_bf16 / c.hbm.bandwidth : 0;
  // VPU: every ALU of every (sublane, lane) does one FLOP per cycle.
  d.vpu_flops_per_s = static_cast<double>(c.tensorcores) * static_cast<double>(c.core.vpu.sublanes) *
                      static_cast<double>(c.core.vpu.lanes) * static_cast<double>(c.core.vpu.alus_per_lane) * c.clock;
  d.chips = chip_count(c.system);
  return d;
}

std::int64_t tensorcores_per_device(const ChipConfig& c) { return c.megacore ? c.tensorcores : 1; }

ChipConfig device_view(const ChipConfig& c) {
  ChipConfig device = c;
  const std::int64_t own = tensorcores_per_device(c);
  if (c.tensorcores > own && own > 0) {
    const auto share = static_cast<double>(own) / static_cast<double>(c.tensorcores);
    device.hbm.bandwidth = c.hbm.bandwidth * share;
    device.hbm.capacity = c.hbm.capacity * share;
    device.hbm.channels = std::max<std::int64_t>(1, c.hbm.channels * own / c.tensorcores);
  }
  return device;
}

DerivedFigures derive_device(const ChipConfig& c) {
  ChipConfig device = device_view(c);
  device.tensorcores = tensorcores_per_device(c);
  return derive(device);
}

std::int64_t chip_count(const SystemTopology& system) {
  std::int64_t product = 1;
  for (auto n : system.topology) product *= n;
  return product * system.slices;
}

std::vector<std::int64_t> system_shape_for(std::int64_t chips, int axes) {
  std::vector<std::int64_t> dims(static_cast<std::size_t>(std::clamp(axes, 1, 3)), 1);
  std::vector<std::int64_t> primes;
  std::int64_t n = std::max<std::int64_t>(1, chips);
  for (std::int64_t p = 2; p * p <= n; ++p) {
    while (n % p == 0) {
      primes.push_back(p);
      n /= p;
    }
  }
  if (n > 1) primes.push_back(n);
  std::sort(primes.rbegin(), primes.rend());
  for (const std::int64_t p : primes) *std::min_element(dims.begin(), dims.end()) *= p;
  std::sort(dims.begin(), dims.end());
  return dims;
}

int torus_axes(const ChipConfig& chip) { return static_cast<int>(std::clamp<std::int64_t>(chip.ici.links / 2, 1, 3)); }

std::vector<AxisWrap> wrap_by_rule(const SystemTopology& system) {
  const auto& topo = system.topology;
  const std::int64_t k = system.wrap_size;
  std::vector<AxisWrap> out;
  switch (system.wrap_rule) {
    case WrapRule::kNone:
      for (std::size_t a = 0; a < topo.size(); ++a) out.push_back({false, "wrap_rule none"});
      break;
    case WrapRule::kFullCube: {
      const bool cubes = topo.size() == 3 && std::all_of(topo.begin(), topo.end(), [&](std::int64_t n) {
                           return n >= k && n % k == 0;
                         });
      const std::string why = cubes ? fmt::format("full-cube rule: every axis a multiple of {}", k)
                                    : fmt::format("full-cube rule: not {}x{}x{} cubes (sub-cube slice)", k, k, k);
      for (std::size_t a = 0; a < topo.size(); ++a) out.push_back({cubes, why});
      break;
    }
    case WrapRule::kAxisLength:
      for (auto n : topo) {
        const bool wraps = n == k;
        out.push_back({wraps, fmt::format("axis-length rule: an axis of {} wraps, this one has {}", k, n)});
      }
      break;
  }
  return out;
}

std::vector<std::string> wraparound_notes(const SystemTopology& system) {
  std::vector<std::string> out;
  const auto rule = wrap_by_rule(system);
  for (std::size_t a = 0; a < system.topology.size(); ++a) {
    const bool wraps = a < system.wraparound.size() && system.wraparound[a];
    out.push_back(fmt::format("axis {} ({} chips): {} ({})", a, system.topology[a], wraps ? "wraps" : "no wraparound",
                              system.wraparound_by_rule ? rule[a].why : "system.wraparound set"));
  }
  return out;
}

#define TPUSIM_ENUM_NAMES(Enum, TABLE)          \
  std::string_view enum_name(Enum v) {           \
    switch (v) { TABLE(TPUSIM_ENUM_CASE) }       \
    return "?";                                  \
  }                                              \
  bool parse_enum(std::string_view text, Enum& out) { \
    TABLE(TPUSIM_ENUM_PARSE)                     \
    return false;                                \
  }
#define TPUSIM_ENUM_CASE(id, name) \
  case std::remove_reference_t<decltype(v)>::id: return name;
#define TPUSIM_ENUM_PARSE(id, name)                     \
  if (text == name) {                                    \
    out = std::remove_reference_t<decltype(out)>::id;    \
    return true;                                         \
  }
TPUSIM_ENUM_NAMES(Dataflow, TPUSIM_DATAFLOWS)
TPUSIM_ENUM_NAMES(LoopMode, TPUSIM_LOOP_MODES)
TPUSIM_ENUM_NAMES(CollectiveAlgorithm, TPUSIM_COLLECTIVE_ALGORITHMS)
TPUSIM_ENUM_NAMES(WrapRule, TPUSIM_WRAP_RULES)
TPUSIM_ENUM_NAMES(HbmAddressMap, TPUSIM_HBM_ADDRESS_MAPS)
TPUSIM_ENUM_NAMES(CollectiveHbmTraffic, TPUSIM_COLLECTIVE_HBM_TRAFFIC)
#undef TPUSIM_ENUM_NAMES
#undef TPUSIM_ENUM_CASE
#undef TPUSIM_ENUM_PARSE

std::vector<FittedKey> fitted_keys(std::string_view yaml) {
  std::vector<FittedKey> out;
  std::vector<std::pair<std::size_t, std::string>> path;  // (indent, key) of the enclosing mappings
  while (!yaml.empty()) {
    const std::size_t eol = yaml.find('\n');
    std::string_view line = yaml.substr(0, eol);
    yaml = eol == std::string_view::npos ? std::string_view{} : yaml.substr(eol + 1);
    const std::size_t indent = line.find_first_not_of(' ');
    if (indent == std::string_view::npos) continue;
    const std::size_t hash = line.find('#');
    const std::string_view body = trim(line.substr(0, hash));
    const std::size_t colon = body.find(':');
    if (body.empty() || colon == std::string_view::npos) continue;
    while (!path.empty() && path.back().first >= indent) path.pop_back();
    const std::string key(trim(body.substr(0, colon)));
    const std::string_view value = trim(body.substr(colon + 1));
    if (value.empty()) {
      path.emplace_back(indent, key);
      continue;
    }
    if (hash == std::string_view::npos || trim(line.substr(hash + 1)).rfind("fitted", 0) != 0) continue;
    std::string dotted;
    for (const auto& [i, k] : path) dotted += k + ".";
    out.push_back(FittedKey{dotted + key, std::string(value)});
  }
  return out;
}

}  // namespace tpusim
