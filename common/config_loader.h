// Loads a chip/system configuration: built-in presets, YAML files with
// `extends:`, and `--set key=value` overrides. Every key is checked against
// common/params.def; every error names file:line:column.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/diagnostic.h"

namespace tpusim {

// kRule: derived from other keys (system.wraparound from system.wrap_rule).
enum class OriginKind { kDefault, kPreset, kFile, kFlag, kRule };

// Where a configuration value came from.
struct Origin {
  OriginKind kind = OriginKind::kDefault;
  std::string file;  // preset file, user file, or the --set argument
  int line = 0;
  int column = 0;
  [[nodiscard]] std::string describe() const;  // "default", "preset configs/chips/v5e.yaml:12", …
};

struct LoadedConfig {
  ChipConfig chip;
  std::map<std::string, Origin, std::less<>> origins;  // by parameter key
  std::vector<std::string> layers;  // files applied, base first
};

struct PresetText {
  std::string_view name;  // "v5e"
  std::string_view path;  // "configs/chips/v5e.yaml"
  std::string_view yaml;
};
// The presets in configs/chips/, embedded in the binary at build time.
std::span<const PresetText> builtin_presets();
const PresetText* find_preset(std::string_view name);

// The keys of a preset's YAML text whose value carries a comment starting with
// `fitted` (a constant fitted on measured data, docs/config.md): the dotted key
// and the value as written ("dcn.latency", "440 us"), in file order.
struct FittedKey {
  std::string key;
  std::string value;
};
std::vector<FittedKey> fitted_keys(std::string_view yaml);

// `chip` is a preset name ("v5e") or a YAML file path. Overrides are
// "key=value" strings (the value is YAML: "[4,4]", "819 GB/s", "8").
Result<LoadedConfig> load_config(std::string_view chip, std::span<const std::string> overrides = {});

// Loads YAML text as if it were the file `file_name` (for tests and tools).
Result<LoadedConfig> load_config_text(std::string_view yaml, std::string_view file_name,
                                      std::span<const std::string> overrides = {});

// Cross-field checks (topology vs chips, links vs axes, …) on a finished config.
std::vector<Diagnostic> validate_config(const LoadedConfig& c);

}  // namespace tpusim
