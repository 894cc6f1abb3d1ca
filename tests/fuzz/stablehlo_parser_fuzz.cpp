// libFuzzer target for the StableHLO front end (isa/stablehlo): any input
// must convert and parse, or fail with located diagnostics -- never crash,
// hang or grow memory without bound (DESIGN.md, principle 9). Modules that
// convert must also parse as HLO or report errors that format; those that
// parse are printed back as StableHLO (printer.h) and read again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "isa/stablehlo/printer.h"
#include "isa/stablehlo/stablehlo.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();  // an oracle violation: libFuzzer reports it as a crash
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  std::string text(reinterpret_cast<const char*>(data), size);
  (void)stablehlo::looks_like_mlir(text);
  const hlo::ParsedFile file = stablehlo::parse_stablehlo(text, "fuzz.mlir");
  for (const auto& m : file.modules) {
    if (m.ok()) {
      const hlo::ParsedFile again = stablehlo::parse_stablehlo(stablehlo::print_stablehlo(*m.value()), "printed.mlir");
      for (const auto& d : again.errors()) check(!d.format().empty() && !d.message.empty());
      continue;
    }
    for (const auto& d : m.errors()) check(!d.format().empty() && !d.message.empty());
  }
  return 0;
}
