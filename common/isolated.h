// Runs a function in a forked child process and returns what it wrote.
// SystemC elaborates once per process (DESIGN.md principle 7); a command that
// needs several simulations (validation rows, sweeps) runs each this way,
// which also isolates crashes.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace tpusim {

// The child's return value, or nullopt with `error` set when the child died
// (signal, non-zero exit) or could not be started.
std::optional<std::string> run_isolated(const std::function<std::string()>& fn, std::string& error);

}  // namespace tpusim
