#include "app/cli/config_command.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>

#include "common/json_text.h"
#include "common/params.h"
#include "common/units.h"

namespace tpusim::cli {
namespace {

using nlohmann::json;

json param_json(const ParamDecl& p, const ChipConfig& c) {
  auto& mutable_c = const_cast<ChipConfig&>(c);  // field() serves readers and writers
  return std::visit(
      overloaded{[](EnumRef e) -> json { return json(std::string(e.name(e.field))); },
                 [](auto* ptr) -> json {
                   using T = std::remove_cvref_t<decltype(*ptr)>;
                   if constexpr (std::is_same_v<T, std::optional<std::int64_t>>) {
                     return ptr->has_value() ? json(**ptr) : json(nullptr);
                   } else {
                     return json(*ptr);
                   }
                 }},
      p.field(mutable_c));
}

// Sets j["a"]["b"]["c"] = v for key "a.b.c".
void set_nested(json& j, std::string_view key, json v) {
  json* node = &j;
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    const std::string part(key.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) {
      (*node)[part] = std::move(v);
      return;
    }
    node = &(*node)[part];
    start = dot + 1;
  }
}

json derived_json(const DerivedFigures& d) {
  json j;
  j["peak_flops_per_s"] = {{"bf16", d.peak_flops_bf16}, {"f32", d.peak_flops_f32},
                           {"int8", d.peak_flops_int8}, {"fp8", d.peak_flops_fp8},
                           {"int4", d.peak_flops_int4}};
  j["hbm_bytes_per_s"] = d.hbm_bytes_per_s;
  j["ici_bytes_per_s_per_chip"] = d.ici_bytes_per_s_per_chip;
  j["critical_intensity_flops_per_byte"] = d.critical_intensity_flops_per_byte;
  j["vpu_flops_per_s"] = d.vpu_flops_per_s;
  j["chips"] = d.chips;
  return j;
}

std::string peak_text(double v, std::string_view unit) { return v > 0 ? format_si(v, unit) : "not supported"; }

std::string unit_text(const ParamDecl& p) {
  switch (p.kind) {
    case ParamKind::kSize: return "size (B, KiB, MiB, GiB, kB, MB, GB)";
    case ParamKind::kBandwidth: return "bandwidth (GB/s, TB/s, GiB/s, Gbps)";
    case ParamKind::kFrequency: return "frequency (MHz, GHz)";
    case ParamKind::kTime: return "time (ns, us, ms, s)";
    case ParamKind::kEnum: return fmt::format("one of {}", p.choices);
    default: return std::string(kind_name(p.kind));
  }
}

std::string range_text(const ParamDecl& p) {
  if (p.min == 0 && p.max == 0) return "";
  std::string s;
  if (auto dim = kind_dimension(p.kind)) {
    s = fmt::format("{} .. {}", format_quantity(p.min, *dim), format_quantity(p.max, *dim));
  } else {
    s = fmt::format("{:g} .. {:g}", p.min, p.max);
  }
  if (p.pow2) s += ", power of two";
  return s;
}

}  // namespace

bool load_chip(const CommonOptions& opt, LoadedConfig& cfg, std::ostream& err) {
  auto r = load_config(opt.chip, opt.overrides);
  if (!r.ok()) {
    err << format_all(r.errors());
    return false;
  }
  cfg = std::move(r).value();
  return true;
}

bool load_lower_chip(const CommonOptions& opt, std::optional<ChipConfig>& chip, std::ostream& err) {
  chip.reset();
  if (opt.lower_for.empty()) return true;
  auto r = load_config(opt.lower_for, {});
  if (!r.ok()) {
    err << "--lower-for: " << format_all(r.errors());
    return false;
  }
  chip = std::move(r).value().chip;
  return true;
}

bool write_output_file(const CommonOptions& opt, const std::string& name, const std::string& text,
                       std::ostream& err) {
  if (opt.out_dir.empty()) return true;
  std::error_code ec;
  std::filesystem::create_directories(opt.out_dir, ec);
  const auto path = std::filesystem::path(opt.out_dir) / name;
  std::ofstream f(path);
  f << text;
  if (ec || !f) {
    err << fmt::format("{}: error: cannot write ({})\n", path.string(), ec ? ec.message() : "open failed");
    return false;
  }
  return true;
}

int config_show(const CommonOptions& opt, std::ostream& out, std::ostream& err) {
  LoadedConfig cfg;
  if (!load_chip(opt, cfg, err)) return kUsageError;
  const ChipConfig& c = cfg.chip;
  const DerivedFigures d = derive(c);

  json j;
  j["chip"] = c.name;
  j["layers"] = cfg.layers;
  json values = json::object();
  json origins = json::object();
  for (const auto& p : all_params()) {
    set_nested(values, p.key, param_json(p, c));
    auto it = cfg.origins.find(p.key);
    origins[std::string(p.key)] = it == cfg.origins.end() ? "unset" : it->second.describe();
  }
  j["config"] = values;
  j["origin"] = origins;
  j["derived"] = derived_json(d);
  j["wraparound"] = wraparound_notes(c.system);
  const DerivedFigures dev = derive_device(c);
  j["device"] = {{"tensorcores", tensorcores_per_device(c)},
                 {"peak_flops_per_s", derived_json(dev)["peak_flops_per_s"]},
                 {"vpu_flops_per_s", dev.vpu_flops_per_s},
                 {"hbm_bytes_per_s", dev.hbm_bytes_per_s},
                 {"hbm_capacity_bytes", device_view(c).hbm.capacity},
                 {"critical_intensity_flops_per_byte", dev.critical_intensity_flops_per_byte}};
  if (!write_output_file(opt, "config.json", json_text(j, 2) + "\n", err)) return kUsageError;

  if (opt.format == Format::kJson) {
    out << json_text(j, 2) << "\n";
    return kOk;
  }
  if (opt.format == Format::kCsv) {
    out << "key,value,origin\n";
    for (const auto& p : all_params()) {
      out << fmt::format("{},\"{}\",\"{}\"\n", p.key, param_value_text(p, c), origins[std::string(p.key)].get<std::string>());
    }
    return kOk;
  }
  out << fmt::format("chip {}: {}\n\n", c.name, c.description);
  out << fmt::format("{:<36} {:<18} {}\n", "key", "value", "from");
  for (const auto& p : all_params()) {
    out << fmt::format("{:<36} {:<18} {}\n", p.key, param_value_text(p, c),
                       origins[std::string(p.key)].get<std::string>());
  }
  out << "\nderived (per chip)\n";
  out << fmt::format("  {:<34} {}\n", "peak bf16", peak_text(d.peak_flops_bf16, "FLOP/s"));
  out << fmt::format("  {:<34} {}\n", "peak f32 (DEFAULT precision)", peak_text(d.peak_flops_f32, "FLOP/s"));
  out << fmt::format("  {:<34} {}\n", "peak int8", peak_text(d.peak_flops_int8, "OP/s"));
  out << fmt::format("  {:<34} {}\n", "peak fp8", peak_text(d.peak_flops_fp8, "FLOP/s"));
  out << fmt::format("  {:<34} {}\n", "peak int4", peak_text(d.peak_flops_int4, "OP/s"));
  out << fmt::format("  {:<34} {}\n", "VPU", format_si(d.vpu_flops_per_s, "FLOP/s"));
  out << fmt::format("  {:<34} {}\n", "HBM", format_si(d.hbm_bytes_per_s, "B/s"));
  out << fmt::format("  {:<34} {}\n", "ICI per chip (all links, both ways)", format_si(d.ici_bytes_per_s_per_chip, "B/s"));
  out << fmt::format("  {:<34} {:.1f} FLOP/B\n", "critical intensity (bf16 / HBM)", d.critical_intensity_flops_per_byte);
  out << fmt::format("  {:<34} {}\n", "chips in system", d.chips);
  for (const auto& axis : wraparound_notes(c.system)) out << fmt::format("  {:<34} {}\n", "wraparound", axis);
  if (tensorcores_per_device(c) != c.tensorcores) {
    // Each TensorCore is a device: a module runs on one, and its roofline uses these.
    out << fmt::format("\nper device ({} of the chip's {} TensorCores, with their share of the HBM; ICI is the chip's)\n",
                       tensorcores_per_device(c), c.tensorcores);
    out << fmt::format("  {:<34} {}\n", "peak bf16", peak_text(dev.peak_flops_bf16, "FLOP/s"));
    out << fmt::format("  {:<34} {}\n", "peak f32 (DEFAULT precision)", peak_text(dev.peak_flops_f32, "FLOP/s"));
    out << fmt::format("  {:<34} {}\n", "peak int8", peak_text(dev.peak_flops_int8, "OP/s"));
    out << fmt::format("  {:<34} {}\n", "peak fp8", peak_text(dev.peak_flops_fp8, "FLOP/s"));
    out << fmt::format("  {:<34} {}\n", "VPU", format_si(dev.vpu_flops_per_s, "FLOP/s"));
    out << fmt::format("  {:<34} {}\n", "HBM", format_si(dev.hbm_bytes_per_s, "B/s"));
    out << fmt::format("  {:<34} {}\n", "HBM capacity", format_si(device_view(c).hbm.capacity, "B"));
    out << fmt::format("  {:<34} {:.1f} FLOP/B\n", "critical intensity (bf16 / HBM)",
                       dev.critical_intensity_flops_per_byte);
  }
  return kOk;
}

int config_describe(const CommonOptions& opt, std::ostream& out) {
  if (opt.format == Format::kJson) {
    json arr = json::array();
    for (const auto& p : all_params()) {
      arr.push_back({{"key", p.key}, {"kind", kind_name(p.kind)}, {"required", p.required()},
                     {"default", p.required() ? json(nullptr) : json(p.default_yaml)},
                     {"min", p.min}, {"max", p.max}, {"power_of_two", p.pow2},
                     {"choices", p.choices}, {"doc", p.doc}});
    }
    out << json_text(arr, 2) << "\n";
    return kOk;
  }
  for (const auto& p : all_params()) {
    out << fmt::format("{}\n    {}\n    {}; {}", p.key, p.doc, unit_text(p),
                       p.required() ? std::string("required") : fmt::format("default {}", p.default_yaml));
    const std::string r = range_text(p);
    if (!r.empty()) out << "; range " << r;
    out << "\n";
  }
  return kOk;
}

std::string config_reference_markdown() {
  std::string s =
      "# Configuration reference\n\n"
      "Generated by `tpusim config docs` from `common/params.def`, the one declaration of every key;\n"
      "a test fails when this file is out of date. A chip file is YAML whose nesting mirrors the dotted\n"
      "keys below (`core: {mxu: {rows: 128}}` sets `core.mxu.rows`). `extends: v5e` (a preset name) or\n"
      "`extends: path/to/base.yaml` inherits another config; `--set key=value` overrides one key.\n"
      "Values with a unit must state it (`819 GB/s`, `128 MiB`, `1.5 GHz`, `1 us`); decimal (kB, MB, GB)\n"
      "and binary (KiB, MiB, GiB) prefixes are distinct, and `KB` is rejected as ambiguous. Bit rates\n"
      "(`Gbps`, `Gb/s`) are accepted for bandwidths. Required keys have no default: a preset or your\n"
      "file must set them. `tpusim config show --chip X` prints every value and where it came from.\n\n"
      "| key | type / unit | default | range | description |\n| --- | --- | --- | --- | --- |\n";
  for (const auto& p : all_params()) {
    std::string unit = unit_text(p);
    for (auto& ch : unit) {
      if (ch == '|') ch = '/';
    }
    s += fmt::format("| `{}` | {} | {} | {} | {} |\n", p.key, unit,
                     p.required() ? std::string("required") : fmt::format("`{}`", p.default_yaml), range_text(p), p.doc);
  }
  s += "\n## Cross-key checks\n\n"
       "- `system.wraparound` has one entry per `system.topology` axis (or is empty: no axis wraps).\n"
       "- `system.topology` has at most 3 axes; `system.chips`, when given, equals product(topology) x `system.slices`.\n"
       "- `ici.links` is at least 2 per topology axis longer than 1 (a ring needs both neighbours).\n"
       "- `system.twisted` needs a wrapped axis; `megacore` needs 2 or more TensorCores.\n"
       "- `core.mxu.weight_load_rows_per_cycle` is at most `core.mxu.rows`; at least one MXU dtype rate is non-zero.\n"
       "- Compiling HLO onto the MXUs needs `core.mxu.rows` and `core.mxu.cols` to be multiples of `core.vpu.lanes`: the\n"
       "  compiler feeds the arrays whole VMEM lane tiles. Otherwise the first op that would run on an MXU is an error\n"
       "  naming the key; ops without MXU work compile, and assembly programs may use an array of any size.\n"
       "\n## Derived figures (`tpusim config show`)\n\n"
       "- peak FLOP/s per dtype = tensorcores x core.mxu.count x rows x cols x 2 x clock x core.mxu.rate.<dtype>\n"
       "- HBM bytes/s = hbm.bandwidth; ICI bytes/s per chip = ici.links x ici.link_bandwidth x 2 (both directions)\n"
       "- critical arithmetic intensity = bf16 peak / HBM bytes/s (FLOP per byte)\n"
       "- VPU FLOP/s = tensorcores x sublanes x lanes x alus_per_lane x clock\n"
       "\n## Fitted constants in the presets\n\n"
       "A preset keeps a key that is an assumption at its nominal or assumed value unless the chip has\n"
       "calibration rows of measured TPU data for it (`tests/validation/refs/hw/`); a fitted value's\n"
       "comment in the preset starts with `fitted` and gives the rows and the fit, `docs/validation.md`\n"
       "the error on the validation rows. Presets with a fitted value (read from the presets themselves):\n\n";
  // Listed from the embedded presets' text, so this section cannot disagree with them.
  for (const PresetText& preset : builtin_presets()) {
    for (const auto& [key, value] : fitted_keys(preset.yaml)) {
      s += fmt::format("- {}: `{}` = {} (`{}`)\n", preset.name, key, value, preset.path);
    }
  }
  return s;
}

}  // namespace tpusim::cli
