// Custom calls that carry real work, decoded from their operands and
// backend_config so cost analysis (and the lowering) can count that work
// instead of a pass over the bytes.
//
// Attention kernels (flash attention: S = Q·K^T, P = softmax(S), O = P·V):
//   Transformer Engine te_fused_attn_forward_ffi / te_fused_attn_backward_ffi:
//     backend_config is an MLIR attribute dictionary with input_batch,
//     attn_heads, num_gqa_groups, q_max_seqlen, kv_max_seqlen, qk_head_dim,
//     v_head_dim and mask_type (NVTE_Mask_Type: 0 no mask, 1 padding, 2
//     causal, 3 padding+causal, 4 causal bottom-right, 5 padding+causal
//     bottom-right; 2..5 are causal). Missing fields come from the operand
//     shapes in TE's BSHD layout: Q [B, Sq, H, Dqk], K [B, Skv, Hkv, Dqk],
//     V [B, Skv, Hkv, Dv].
//   cuDNN __cudnn$fmha* (XLA GPU): Q, K, V are operands 0..2 in BTNH layout
//     [B, S, H, D] (what jax.nn.dot_product_attention emits); the mask is the
//     cudnn_fmha_backend_config "mask_type" ("CAUSAL" is causal); targets
//     containing "Backward" are the backward kernel.
// FLOPs (forward) = 2·B·H·Sq·Skv·Dqk (Q·K^T) + 2·B·H·Sq·Skv·Dv (P·V), i.e.
// 4·B·H·Sq·Skv·D when Dqk = Dv, halved when causal (the masked upper triangle
// is skipped block by block; the diagonal blocks' half is ignored). Backward
// recomputes S = Q·K^T and runs dV = P^T·dO, dP = dO·V^T, dQ = dS·K and
// dK = dS^T·Q: five products where the forward has two, 2.5x the forward.
// Transcendentals: one exp per score (B·H·Sq·Skv, halved when causal), in
// both directions (backward recomputes P). GQA (Hkv < H) changes the bytes
// of K and V, not the FLOPs: every query head still attends.
//
// GEMMs: __cublas$gemm, __cublas$lt$matmul and its variants: a dot of
// operands 0 and 1 with gemm_backend_config.dot_dimension_numbers (lhs
// contracting dims; the last lhs dim when absent); the result is the first
// array of the output (cuBLASLt also returns a workspace).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "isa/hlo/ir.h"

namespace tpusim::hlo {

struct AttentionCall {
  std::int64_t batch = 0;
  std::int64_t heads = 0;     // query heads
  std::int64_t kv_heads = 0;  // key/value heads (< heads under GQA)
  std::int64_t q_len = 0;
  std::int64_t kv_len = 0;
  std::int64_t qk_dim = 0;
  std::int64_t v_dim = 0;
  bool causal = false;
  bool backward = false;
  // What was assumed (empty when everything came from backend_config).
  std::string assumed;

  // Forward products Q·K^T and P·V; 2.5x that for backward; halved when causal.
  double flops() const;
  double transcendentals() const;
};

struct GemmCall {
  double flops = 0;  // 2 · result elements · ∏ lhs contracting dims
  ElementType type = ElementType::kTuple;  // the wider operand type
  // dot_dimension_numbers (lhs contracting = the last lhs dim, rhs
  // contracting = rhs dim 0, no batch dims when backend_config has none).
  std::vector<std::int64_t> lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
};

// nullopt when `inst` is not one of the attention custom calls above or its
// shapes cannot be read.
std::optional<AttentionCall> attention_call(const Instruction& inst);
std::optional<GemmCall> gemm_call(const Instruction& inst);

}  // namespace tpusim::hlo
