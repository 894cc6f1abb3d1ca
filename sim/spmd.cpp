#include "sim/spmd.h"

#include <algorithm>

#include "sim/system.h"

namespace tpusim {

std::string system_to_yaml_list(const std::string& text) {
  std::string list = "[";
  std::size_t pos = 0;
  int axes = 0;
  while (true) {
    const std::size_t x = text.find('x', pos);
    const std::string part = text.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    if (part.empty() || part.size() > 6 || !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoll(part) < 1) {
      return {};
    }
    list += (axes++ ? "," : "") + part;
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  if (axes > 3) return {};
  return list + "]";
}

std::string wrap_all_list(const std::string& yaml_list) {
  std::string out = "[true";
  for (char c : yaml_list) {
    if (c == ',') out += ",true";
  }
  return out + "]";
}

std::string wraparound_override(std::optional<bool> wrap, const std::string& yaml_list) {
  if (!wrap) return "";
  return "system.wraparound=" + (*wrap ? wrap_all_list(yaml_list) : std::string("[]"));
}

Result<SpmdResult> simulate_spmd(const ChipConfig& chip, std::vector<isa::Program> programs,
                                 const SpmdOptions& options) {
  std::vector<std::vector<isa::Program>> per_chip;
  per_chip.reserve(programs.size());
  for (auto& p : programs) {
    per_chip.emplace_back();
    per_chip.back().push_back(std::move(p));
  }
  return run_system(chip, std::move(per_chip), options, /*network=*/true);
}

Result<SpmdResult> simulate_spmd_cores(const ChipConfig& chip, std::vector<isa::Program> core_programs,
                                       const SpmdOptions& options) {
  std::vector<std::vector<isa::Program>> one;
  one.push_back(std::move(core_programs));
  return run_system(chip, std::move(one), options, /*network=*/true);
}

Result<SystemRun> simulate_system(const ChipConfig& chip, std::vector<isa::Program> core_programs, bool multi_chip,
                                  const SpmdOptions& options) {
  SystemRun run;
  if (multi_chip) {
    auto r = simulate_spmd_cores(chip, std::move(core_programs), options);
    if (!r.ok()) return r.errors();
    run.spmd = std::move(r).value();
    run.sim = std::move(run.spmd->sim);
    return run;
  }
  auto r = simulate_cores(chip, std::move(core_programs), options.sim);
  if (!r.ok()) return r.errors();
  run.sim = std::move(r).value();
  return run;
}

}  // namespace tpusim
