// Sweep results: one JSON object per line (JSON Lines), appended and flushed
// per point. Fields, in order:
//   sweep, point, workload, mode, params {key: YAML text}, values {key: base
//   units}, config_hash, status (ok|failed|timeout|infeasible), metrics
//   {path: value}, time_s, area_proxy, power_proxy, error, wall_s
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"

namespace tpusim::sweep {

using Record = nlohmann::ordered_json;

// `r` with its fields in the documented order (others after them).
Record in_field_order(const Record& r);

// The resume identity of a record: config hash, workload and mode.
std::string record_key(const Record& r);
std::string record_key(std::string_view hash, std::string_view workload, std::string_view mode);

// Looks up a dotted path in a report ("mxu.flop_utilization",
// "stats.chip0.core0.cycles"): at each level the longest key that matches
// wins, so keys that themselves contain dots resolve; an object with a
// "value" member (a stats entry) yields that value. nullptr if absent.
const nlohmann::json* find_path(const nlohmann::json& j, std::string_view path);

struct ReadRecords {
  std::vector<Record> records;
  std::vector<Diagnostic> skipped;  // malformed lines (e.g. cut by kill -9)
  // The malformed lines of `skipped` that are not an unterminated last line
  // (a write in progress or cut short): the file was damaged.
  std::size_t corrupt = 0;
};
// Reads one or more JSON Lines files; a file that cannot be opened is an error.
Result<ReadRecords> read_records(const std::vector<std::string>& paths);

// Drops a trailing partial line (a write cut short by kill -9) so appends
// start on a fresh line. Returns false if the file cannot be repaired.
bool repair_jsonl_tail(const std::string& path, std::string& error);

}  // namespace tpusim::sweep
