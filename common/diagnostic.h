// Diagnostic: an error in user input, located at file:line:column.
// Parsers and loaders return these as values (STYLE.md, practice 6); the CLI
// prints them and exits 2.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>
#include <utility>

namespace tpusim {

struct Diagnostic {
  std::string file;     // as the user named it; "<flag>" for --set, "<input>" for strings
  int line = 0;         // 1-based; 0 = whole file
  int column = 0;       // 1-based; 0 = whole line
  std::string message;  // what is wrong and what was expected
  std::string source_line;  // optional: the offending line, for a caret

  // "file:line:col: error: message" plus the source line and a caret, if known.
  [[nodiscard]] std::string format() const;
};

std::string format_all(const std::vector<Diagnostic>& diagnostics);

// The line of `text` with 1-based number `line` (without its newline).
std::string_view line_of(std::string_view text, int line);

// A value or the diagnostics that explain why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Diagnostic d) : v_(std::vector<Diagnostic>{std::move(d)}) {}  // NOLINT
  Result(std::vector<Diagnostic> ds) : v_(std::move(ds)) {}  // NOLINT

  [[nodiscard]] bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  [[nodiscard]] const std::vector<Diagnostic>& errors() const {
    return std::get<std::vector<Diagnostic>>(v_);
  }

 private:
  std::variant<T, std::vector<Diagnostic>> v_;
};

}  // namespace tpusim
