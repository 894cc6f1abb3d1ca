// libFuzzer target for sweep specs (configs/sweeps/*.yaml): any input must
// load or fail with file:line:column diagnostics, never crash or hang.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "app/sweep/spec.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();  // an oracle violation: libFuzzer reports it as a crash
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto spec = tpusim::sweep::load_sweep_spec_text(text, "fuzz.yaml");
  if (!spec.ok()) {
    for (const auto& d : spec.errors()) check(!d.format().empty() && !d.message.empty());
  }
  return 0;
}
