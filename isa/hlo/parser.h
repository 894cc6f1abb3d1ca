// HLO text parser: a recursive-descent parser over the lexer (lexer.h) for
// the full XLA HLO text grammar. A file may hold several modules separated
// by `// -----` lines; each is parsed, and reported on, on its own.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "isa/hlo/ir.h"

namespace tpusim::hlo {

struct ParseOptions {
  // Run the shape checks (verifier.h) after parsing. Structural checks
  // (structure.h: acyclic dataflow and calls, call depth) always run.
  bool verify_shapes = true;
  // XLA-verifier strictness (`--strict`): a stated shape or signature that
  // differs from the inferred one is an error instead of a warning.
  bool strict = false;
};

struct ParsedFile {
  std::shared_ptr<const SourceFile> source;
  // One entry per module (per `// -----` section that holds one), in order.
  std::vector<Result<std::unique_ptr<Module>>> modules;

  // Every module parsed: commands that use one module still reject a file
  // whose other modules are broken.
  bool ok() const;
  std::vector<Diagnostic> errors() const;    // all modules' errors
  std::vector<Diagnostic> warnings() const;  // all parsed modules' warnings
};

// "file:line:col: warning: message", the source line and a caret, per warning.
std::string format_warnings(const std::vector<Diagnostic>& warnings);

// Parses every module in `text`. An empty file (or only comments) yields one
// error ("expected 'HloModule'").
ParsedFile parse_hlo(std::string text, std::string file_name = "<input>",
                     const ParseOptions& options = {});
// Reads and parses a file; an unreadable file is one error entry.
ParsedFile parse_hlo_file(const std::string& path, const ParseOptions& options = {});
// Exactly one module expected (the first of several is an error).
Result<std::unique_ptr<Module>> parse_hlo_module(std::string text, std::string file_name = "<input>",
                                                 const ParseOptions& options = {});

// Byte ranges of the `// -----`-separated sections of `text` (exposed for tests).
std::vector<std::pair<std::uint32_t, std::uint32_t>> split_modules(std::string_view text);

}  // namespace tpusim::hlo
