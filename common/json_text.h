// JSON to text for everything tpusim writes. Strings in a report come from
// user files (HLO metadata, file names, YAML values) and need not be valid
// UTF-8; nlohmann's default dump throws on such bytes. json_text replaces
// each invalid byte with U+FFFD instead, so a report is always written.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tpusim {

// `indent` < 0 gives the compact one-line form, as nlohmann::json::dump.
// A template so that ordered_json keeps its key order (a conversion to
// nlohmann::json would sort the keys).
template <class Json>
std::string json_text(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace tpusim
