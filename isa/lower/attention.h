// Attention custom calls (Transformer Engine te_fused_attn_*, cuDNN
// __cudnn$fmha*; isa/hlo/custom_calls.h decodes them) as flash-attention
// kernels on the MXU, VPU, EUP and XLU (docs/lowering.md, "Attention
// kernels"): Q, K and V stream through VMEM in square blocks, the scores of
// one block pair never leave VMEM, and the softmax is the online one.
#pragma once

#include <string>

#include "isa/hlo/custom_calls.h"
#include "isa/lower/context.h"

namespace tpusim::lower {

// The HBM arrays of one call, each in its BSHD layout ([B, S, heads, D]):
// q, k, v always; o and d_o (the forward's output and its gradient) for the
// backward kernel. Outputs: out_q (O forward, dQ backward), and for the
// backward out_k, out_v (dK, dV).
struct AttentionArrays {
  Array q, k, v, o, d_o;
  Array out_q, out_k, out_v;
};

// Emits the kernel into the current section; returns the note that says
// what was emitted (block size, KV blocks skipped by the causal mask).
std::string lower_attention(Ctx& c, const hlo::AttentionCall& call, const AttentionArrays& arrays);

}  // namespace tpusim::lower
