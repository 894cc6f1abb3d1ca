// `tpusim config show|describe|docs`.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "common/config_loader.h"
#include "app/cli/cli.h"

namespace tpusim::cli {

int config_show(const CommonOptions& opt, std::ostream& out, std::ostream& err);
int config_describe(const CommonOptions& opt, std::ostream& out);
// Markdown reference of every configuration key (docs/config.md).
std::string config_reference_markdown();

// Loads --chip/--set, printing diagnostics to `err` on failure.
bool load_chip(const CommonOptions& opt, LoadedConfig& cfg, std::ostream& err);
// Loads --lower-for (no --set: the base chip as named); empty when not given.
bool load_lower_chip(const CommonOptions& opt, std::optional<ChipConfig>& chip, std::ostream& err);

// Writes `text` to DIR/name if --out was given; reports failure on `err`.
bool write_output_file(const CommonOptions& opt, const std::string& name, const std::string& text,
                       std::ostream& err);

}  // namespace tpusim::cli
