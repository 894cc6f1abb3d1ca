// HLO modules with one attention custom call, for the lowering and cost
// tests: Transformer Engine (te_fused_attn_forward_ffi / _backward_ffi, its
// BSHD layout and MLIR-dictionary backend_config) and cuDNN (__cudnn$fmha*,
// BTNH with cudnn_fmha_backend_config).
#pragma once

#include <cstdint>
#include <string>

namespace tpusim::testing {

struct AttentionShape {
  std::int64_t batch = 1, heads = 8, kv_heads = 8, q_len = 1024, kv_len = 1024, dim = 128;
  int mask_type = 0;  // NVTE_Mask_Type: 0 none, 2 causal
};

inline std::string te_attention_module(const AttentionShape& s, bool backward) {
  const auto n = [](std::int64_t v) { return std::to_string(v); };
  const std::string q = "bf16[" + n(s.batch) + "," + n(s.q_len) + "," + n(s.heads) + "," + n(s.dim) + "]";
  const std::string kv = "bf16[" + n(s.batch) + "," + n(s.kv_len) + "," + n(s.kv_heads) + "," + n(s.dim) + "]";
  const std::string stats = "f32[" + n(s.batch) + "," + n(s.heads) + "," + n(s.q_len) + ",1]";
  const std::string cfg = "backend_config={attn_heads = " + n(s.heads) + " : i64, input_batch = " + n(s.batch) +
                          " : i64, kv_max_seqlen = " + n(s.kv_len) + " : i64, mask_type = " + n(s.mask_type) +
                          " : i64, num_gqa_groups = " + n(s.kv_heads) + " : i64, q_max_seqlen = " + n(s.q_len) +
                          " : i64, qk_head_dim = " + n(s.dim) + " : i64, v_head_dim = " + n(s.dim) + " : i64}";
  std::string text = "HloModule attention\nENTRY e {\n  q = " + q + " parameter(0)\n  k = " + kv +
                     " parameter(1)\n  v = " + kv + " parameter(2)\n";
  if (backward) {
    text += "  aux = " + stats + " parameter(3)\n  o = " + q + " parameter(4)\n  do = " + q + " parameter(5)\n";
    text += "  ROOT a = (" + q + ", " + kv + ", " + kv +
            ") custom-call(q, k, v, aux, o, do), custom_call_target=\"te_fused_attn_backward_ffi\", "
            "api_version=API_VERSION_TYPED_FFI, " + cfg + "\n}\n";
  } else {
    text += "  ROOT a = (" + q + ", " + stats +
            ") custom-call(q, k, v), custom_call_target=\"te_fused_attn_forward_ffi\", "
            "api_version=API_VERSION_TYPED_FFI, " + cfg + "\n}\n";
  }
  return text;
}

inline std::string cudnn_attention_module(const AttentionShape& s) {
  const auto n = [](std::int64_t v) { return std::to_string(v); };
  const std::string q = "bf16[" + n(s.batch) + "," + n(s.q_len) + "," + n(s.heads) + "," + n(s.dim) + "]";
  const std::string kv = "bf16[" + n(s.batch) + "," + n(s.kv_len) + "," + n(s.kv_heads) + "," + n(s.dim) + "]";
  return "HloModule attention\nENTRY e {\n  q = " + q + " parameter(0)\n  k = " + kv + " parameter(1)\n  v = " + kv +
         " parameter(2)\n  ROOT a = (" + q + ", u8[0]) custom-call(q, k, v), custom_call_target=\"__cudnn$fmhaSoftmax\", "
         "backend_config={\"cudnn_fmha_backend_config\":{\"mask_type\":\"" +
         (s.mask_type >= 2 ? "CAUSAL" : "NO_MASK") + "\"}}\n}\n";
}

}  // namespace tpusim::testing
