// libFuzzer target for the .tasm assembler and the verifier: any input must
// assemble or fail with located diagnostics, never crash or hang. A program
// that assembles must print, re-assemble to the same text, and verify (with
// findings or without) on the v5e preset.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/config_loader.h"
#include "isa/assembler.h"
#include "isa/printer.h"
#include "isa/verifier.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();  // an oracle violation: libFuzzer reports it as a crash
}

const tpusim::ChipConfig& chip() {
  static const tpusim::ChipConfig c = tpusim::load_config("v5e").value().chip;
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto prog = isa::assemble(text, "fuzz.tasm");
  if (!prog.ok()) {
    for (const auto& d : prog.errors()) check(!d.format().empty() && d.line >= 0);
    return 0;
  }
  const std::string once = isa::print(*prog);
  auto again = isa::assemble(once, "printed.tasm");
  check(again.ok());
  check(isa::print(*again) == once);
  const isa::VerifyReport r = isa::verify(*prog, chip(), text);
  check(!r.format_summary().empty());
  return 0;
}
