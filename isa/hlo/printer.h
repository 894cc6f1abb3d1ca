// Printer: IR back to HLO text that this parser (and XLA's) accepts.
// parse -> print -> parse -> print is a fixpoint (tested on the corpus).
#pragma once

#include <string>

#include "isa/hlo/ir.h"

namespace tpusim::hlo {

struct PrintOptions {
  // XLA prints `add(f32[2]{0} %a, …)` by default; we print bare names unless
  // asked, which keeps the text short and is equally valid.
  bool print_operand_shapes = false;
};

std::string print_module(const Module& module, const PrintOptions& options = {});
void append_instruction(std::string& out, const Instruction& inst, const PrintOptions& options = {});
std::string print_instruction(const Instruction& inst, const PrintOptions& options = {});

}  // namespace tpusim::hlo
