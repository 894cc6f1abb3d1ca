// A small CSV reader for reference-data files (`tpusim validate KIND FILE.csv`):
// a header row naming the columns, then one record per line. Fields may be
// quoted ("a,b"); blank lines and lines starting with # are skipped. Errors
// name file:line:column.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"

namespace tpusim {

struct CsvRecord {
  int line = 0;
  std::vector<std::string> fields;
  std::vector<int> columns;  // 1-based column where each field starts
};

struct CsvTable {
  std::string file;
  std::vector<std::string> header;
  std::vector<CsvRecord> records;

  // Index of a header column, or -1.
  [[nodiscard]] int column(std::string_view name) const;
  // Checks every name is a header column; the error lists the missing ones.
  [[nodiscard]] std::vector<Diagnostic> require(const std::vector<std::string>& names) const;
  // Field `name` of `r`, parsed as a number; a diagnostic at the field when malformed.
  [[nodiscard]] Result<double> number(const CsvRecord& r, std::string_view name) const;
  [[nodiscard]] const std::string& text(const CsvRecord& r, std::string_view name) const;
  // An error at field `name` of `r` (file:line:column; column 1 when the
  // record lacks it).
  [[nodiscard]] Diagnostic error_at(const CsvRecord& r, std::string_view name, std::string message) const;
};

Result<CsvTable> read_csv_file(const std::string& path);
Result<CsvTable> parse_csv(std::string_view text, std::string_view file_name);

// "1%", "0.5 %" or "0.01" -> 0.01; false when malformed.
bool parse_tolerance(std::string_view text, double& out);

}  // namespace tpusim
