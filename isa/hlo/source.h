// Turning a byte offset into a located Diagnostic (file:line:col, the source
// line and a caret). Done only when an error is reported, never while lexing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/diagnostic.h"

namespace tpusim::hlo {

Diagnostic make_diagnostic(std::string_view file, std::string_view text, std::uint32_t offset,
                           std::string message);

}  // namespace tpusim::hlo
