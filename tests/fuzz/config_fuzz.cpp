// libFuzzer target for the chip/system YAML loader: any input must load or
// fail with file:line:column diagnostics -- never crash, hang, or accept a
// config the cross-field checks reject.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/config_loader.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();  // an oracle violation: libFuzzer reports it as a crash
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto cfg = load_config_text(text, "fuzz.yaml");
  if (!cfg.ok()) {
    for (const auto& d : cfg.errors()) check(!d.format().empty() && !d.message.empty());
    return 0;
  }
  check(validate_config(*cfg).empty());
  const DerivedFigures f = derive(cfg->chip);
  check(f.peak_flops_bf16 >= 0 && f.hbm_bytes_per_s >= 0);
  return 0;
}
