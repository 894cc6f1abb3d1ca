// libFuzzer target for the HLO front end: any input must parse or fail with
// diagnostics -- never crash, hang or grow memory without bound (DESIGN.md,
// principle 9). Modules that parse must also print, re-parse to the same
// text, and survive sharding, metadata and backend_config decoding and the
// cost analysis; warnings format like errors.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "isa/hlo/analysis.h"
#include "isa/hlo/attribute_values.h"
#include "isa/hlo/parser.h"
#include "isa/hlo/printer.h"
#include "isa/hlo/sharding.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();  // an oracle violation: libFuzzer reports it as a crash
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpusim::hlo;
  std::string text(reinterpret_cast<const char*>(data), size);
  ParsedFile file = parse_hlo(text, "fuzz.hlo");
  check(!format_warnings(file.warnings()).empty() || file.warnings().empty());
  for (const auto& m : file.modules) {
    if (!m.ok()) {
      for (const auto& d : m.errors()) check(!d.format().empty());
      continue;
    }
    const Module& module = *m.value();
    const std::string once = print_module(module);
    // The printed text re-parses (shape checks off: they already passed or
    // the printed form is compared as text) and prints identically.
    auto again = parse_hlo_module(once, "printed.hlo", ParseOptions{.verify_shapes = false});
    check(again.ok());
    check(print_module(*again.value()) == once);
    (void)frontend_attributes(module);
    for (const Computation* c : module.computations())
      for (const Instruction* i : c->instructions()) {
        if (i->attribute(AttrId::kSharding)) {
          auto s = sharding_of(*i);
          if (s.ok()) (void)per_device_shape(i->shape(), s.value());
        }
        (void)metadata_attr(*i);
        (void)frontend_attributes(*i);
        (void)backend_config_json(*i);
      }
    const RooflineReport r = roofline(module, RooflineRates::example_chip());
    check(r.total.bound_time_s >= 0);
    (void)render_json(r);
  }
  return 0;
}
