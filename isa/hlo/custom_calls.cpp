#include "isa/hlo/custom_calls.h"

#include <charconv>
#include <string_view>

#include <nlohmann/json.hpp>

#include "isa/hlo/attribute_values.h"

namespace tpusim::hlo {
namespace {

// `key = N : i64` in an MLIR attribute dictionary (TE's backend_config).
std::optional<std::int64_t> mlir_dict_int(std::string_view text, std::string_view key) {
  std::size_t pos = 0;
  while ((pos = text.find(key, pos)) != std::string_view::npos) {
    const bool starts = pos == 0 || text[pos - 1] == '{' || text[pos - 1] == ' ' || text[pos - 1] == ',';
    std::size_t p = pos + key.size();
    pos = p;
    if (!starts) continue;
    while (p < text.size() && text[p] == ' ') ++p;
    if (p >= text.size() || text[p] != '=') continue;
    ++p;
    while (p < text.size() && text[p] == ' ') ++p;
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data() + p, text.data() + text.size(), v);
    if (ec != std::errc{}) continue;
    return v;
  }
  return std::nullopt;
}

ElementType wider(ElementType a, ElementType b) {
  if (a == ElementType::kTuple) return b;
  if (b == ElementType::kTuple) return a;
  return element_type_bits(b) > element_type_bits(a) ? b : a;
}

const Shape& first_array(const Shape& s) {
  if (s.is_tuple() && !s.tuple_elements().empty()) return first_array(s.tuple_elements().front());
  return s;
}

bool rank4(const Instruction& inst, std::size_t i) {
  return inst.operand_count() > i && !inst.operand(i)->shape().is_tuple() && inst.operand(i)->shape().rank() == 4;
}

}  // namespace

double AttentionCall::flops() const {
  const double scores = static_cast<double>(batch) * static_cast<double>(heads) * static_cast<double>(q_len) *
                        static_cast<double>(kv_len);
  double f = 2 * scores * static_cast<double>(qk_dim) + 2 * scores * static_cast<double>(v_dim);
  if (backward) f *= 2.5;
  return causal ? f / 2 : f;
}

double AttentionCall::transcendentals() const {
  const double scores = static_cast<double>(batch) * static_cast<double>(heads) * static_cast<double>(q_len) *
                        static_cast<double>(kv_len);
  return causal ? scores / 2 : scores;
}

std::optional<AttentionCall> attention_call(const Instruction& inst) {
  if (inst.opcode() != Opcode::kCustomCall) return std::nullopt;
  const std::string_view target = word_attr(inst, AttrId::kCustomCallTarget).value_or("");
  const bool te = target == "te_fused_attn_forward_ffi" || target == "te_fused_attn_backward_ffi";
  const bool cudnn = target.starts_with("__cudnn$fmha");
  if (!te && !cudnn) return std::nullopt;
  // Q [B, Sq, H, Dqk], K [B, Skv, Hkv, Dqk], V [B, Skv, Hkv, Dv] (TE BSHD, cuDNN BTNH).
  if (!rank4(inst, 0) || !rank4(inst, 1) || !rank4(inst, 2)) return std::nullopt;
  const Shape& q = inst.operand(0)->shape();
  const Shape& k = inst.operand(1)->shape();
  const Shape& v = inst.operand(2)->shape();
  AttentionCall a;
  a.batch = q.dim(0);
  a.q_len = q.dim(1);
  a.heads = q.dim(2);
  a.qk_dim = q.dim(3);
  a.kv_len = k.dim(1);
  a.kv_heads = k.dim(2);
  a.v_dim = v.dim(3);
  const Attribute* bc = inst.attribute(AttrId::kBackendConfig);
  const std::string_view text = bc ? bc->value : std::string_view{};
  if (te) {
    a.backward = target == "te_fused_attn_backward_ffi";
    // backend_config overrides the shapes (it is what the kernel was built for).
    auto take = [&](std::string_view key, std::int64_t& field) {
      if (const auto n = mlir_dict_int(text, key); n && *n > 0) field = *n;
    };
    take("input_batch", a.batch);
    take("attn_heads", a.heads);
    take("num_gqa_groups", a.kv_heads);
    take("q_max_seqlen", a.q_len);
    take("kv_max_seqlen", a.kv_len);
    take("qk_head_dim", a.qk_dim);
    take("v_head_dim", a.v_dim);
    if (const auto m = mlir_dict_int(text, "mask_type")) {
      a.causal = *m >= 2 && *m <= 5;
    } else {
      a.assumed = "no mask_type in backend_config: assumed no causal mask; dims from BSHD operand shapes";
    }
  } else {
    a.backward = target.find("Backward") != std::string_view::npos;
    const auto j = backend_config_json(inst);
    const nlohmann::json* cfg = nullptr;
    if (j && j->is_object() && j->contains("cudnn_fmha_backend_config")) cfg = &(*j)["cudnn_fmha_backend_config"];
    if (cfg && cfg->is_object() && cfg->contains("mask_type") && (*cfg)["mask_type"].is_string()) {
      a.causal = (*cfg)["mask_type"].get<std::string>().find("CAUSAL") != std::string::npos;
    } else {
      a.assumed = "no cudnn_fmha_backend_config.mask_type: assumed no causal mask";
    }
    if (a.assumed.empty()) a.assumed = "dims from BTNH operand shapes";
    else a.assumed += "; dims from BTNH operand shapes";
  }
  if (a.batch <= 0 || a.heads <= 0 || a.q_len <= 0 || a.kv_len <= 0 || a.qk_dim <= 0 || a.v_dim <= 0)
    return std::nullopt;
  return a;
}

std::optional<GemmCall> gemm_call(const Instruction& inst) {
  if (inst.opcode() != Opcode::kCustomCall) return std::nullopt;
  const std::string_view target = word_attr(inst, AttrId::kCustomCallTarget).value_or("");
  if (target != "__cublas$gemm" && !target.starts_with("__cublas$lt$matmul")) return std::nullopt;
  if (inst.operand_count() < 2) return std::nullopt;
  const Shape& lhs = inst.operand(0)->shape();
  if (lhs.is_tuple() || lhs.rank() < 1) return std::nullopt;
  GemmCall g;
  g.lhs_contracting = {lhs.rank() - 1};
  g.rhs_contracting = {0};
  if (const auto j = backend_config_json(inst); j && j->is_object() && j->contains("gemm_backend_config")) {
    const nlohmann::json& cfg = (*j)["gemm_backend_config"];
    if (cfg.is_object() && cfg.contains("dot_dimension_numbers") && cfg["dot_dimension_numbers"].is_object()) {
      const nlohmann::json& d = cfg["dot_dimension_numbers"];
      // proto JSON writes int64 as strings.
      const auto read = [&](const char* key, Ints& out) {
        if (!d.contains(key) || !d[key].is_array()) return;
        out.clear();
        for (const nlohmann::json& e : d[key]) {
          std::int64_t n = -1;
          if (e.is_number_integer()) {
            n = e.get<std::int64_t>();
          } else if (e.is_string()) {
            const std::string s = e.get<std::string>();
            std::from_chars(s.data(), s.data() + s.size(), n);
          }
          if (n >= 0) out.push_back(n);
        }
      };
      read("lhs_contracting_dimensions", g.lhs_contracting);
      read("rhs_contracting_dimensions", g.rhs_contracting);
      read("lhs_batch_dimensions", g.lhs_batch);
      read("rhs_batch_dimensions", g.rhs_batch);
    }
  }
  double kdim = 1;
  for (std::int64_t d : g.lhs_contracting)
    if (d < lhs.rank()) kdim *= static_cast<double>(lhs.dim(static_cast<int>(d)));
  g.flops = 2 * static_cast<double>(first_array(inst.shape()).element_count()) * kdim;
  g.type = wider(lhs.element_type(), inst.operand(1)->shape().element_type());
  return g;
}

}  // namespace tpusim::hlo
