#include "isa/hlo/while_loop.h"

#include <charconv>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "isa/hlo/attribute_values.h"
#include "isa/hlo/values.h"

namespace tpusim::hlo {
namespace {

// An integer scalar constant's value.
std::optional<std::int64_t> int_constant(const Instruction* x) {
  if (x == nullptr || x->opcode() != Opcode::kConstant || !x->has_shape()) return std::nullopt;
  if (!is_integral(x->shape().element_type())) return std::nullopt;
  std::string_view t = x->literal();
  while (!t.empty() && (t.front() == ' ' || t.front() == '{')) t.remove_prefix(1);
  while (!t.empty() && (t.back() == ' ' || t.back() == '}')) t.remove_suffix(1);
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return v;
}

// get-tuple-element(<the computation's parameter 0>), index=i: i; else nullopt.
std::optional<std::int64_t> param_element(const Instruction* x) {
  if (x == nullptr || x->opcode() != Opcode::kGetTupleElement || x->operand_count() != 1) return std::nullopt;
  const Instruction* p = x->operand(0);
  if (p->opcode() != Opcode::kParameter || p->parameter_number() != 0) return std::nullopt;
  return int_attr(*x, AttrId::kIndex);
}

std::string_view mirrored(std::string_view dir) {
  if (dir == "LT") return "GT";
  if (dir == "LE") return "GE";
  if (dir == "GT") return "LT";
  if (dir == "GE") return "LE";
  return dir;
}

}  // namespace

std::optional<std::string> known_trip_count_text(const Instruction& x) {
  const auto j = backend_config_json(x);
  if (!j || !j->is_object() || !j->contains("known_trip_count")) return std::nullopt;
  const auto& k = (*j)["known_trip_count"];
  if (!k.is_object() || !k.contains("n")) return std::nullopt;
  const auto& n = k["n"];
  return n.is_string() ? n.get<std::string>() : json_text(n);
}

std::optional<std::int64_t> known_trip_count(const Instruction& x) {
  const auto text = known_trip_count_text(x);
  std::int64_t n = 0;
  if (text && parse_int(*text, n) && n > 0) return n;
  return std::nullopt;
}

std::optional<TripCount> induction_trip_count(const Instruction& x) {
  const Computation* cond = x.called(AttrId::kCondition);
  const Computation* body = x.called(AttrId::kBody);
  if (cond == nullptr || body == nullptr || x.operand_count() != 1) return std::nullopt;
  // The condition: compare(gte(p, i), constant L) or the mirror image.
  const Instruction* cmp = cond->root();
  if (cmp == nullptr || cmp->opcode() != Opcode::kCompare || cmp->operand_count() != 2) return std::nullopt;
  auto dir = word_attr(*cmp, AttrId::kDirection);
  if (!dir) return std::nullopt;
  std::string_view direction = *dir;
  auto index = param_element(cmp->operand(0));
  auto limit = int_constant(cmp->operand(1));
  if (!index || !limit) {
    index = param_element(cmp->operand(1));
    limit = int_constant(cmp->operand(0));
    direction = mirrored(direction);
  }
  if (!index || !limit || *index < 0) return std::nullopt;
  // The body: element i of the root tuple is gte(p, i) +/- constant D.
  const Instruction* root = body->root();
  if (root == nullptr || root->opcode() != Opcode::kTuple ||
      static_cast<std::size_t>(*index) >= root->operand_count()) {
    return std::nullopt;
  }
  const Instruction* next = root->operand(static_cast<std::size_t>(*index));
  if (next->operand_count() != 2) return std::nullopt;
  std::optional<std::int64_t> step;
  if (next->opcode() == Opcode::kAdd) {
    if (param_element(next->operand(0)) == index) step = int_constant(next->operand(1));
    if (!step && param_element(next->operand(1)) == index) step = int_constant(next->operand(0));
  } else if (next->opcode() == Opcode::kSubtract && param_element(next->operand(0)) == index) {
    step = int_constant(next->operand(1));
    if (step) step = -*step;
  }
  if (!step || *step == 0) return std::nullopt;
  // The initial value: element i of the while's operand tuple.
  const Instruction* init = x.operand(0);
  if (init->opcode() != Opcode::kTuple || static_cast<std::size_t>(*index) >= init->operand_count()) {
    return std::nullopt;
  }
  const auto start = int_constant(init->operand(static_cast<std::size_t>(*index)));
  if (!start) return std::nullopt;
  // Values S + k*D, k = 0, 1, ..., while they satisfy `i dir L`.
  const std::int64_t s = *start, l = *limit, d = *step;
  constexpr std::int64_t kMax = std::int64_t{1} << 61;
  if (s <= -kMax || s >= kMax || l <= -kMax || l >= kMax || d <= -kMax || d >= kMax) return std::nullopt;
  std::int64_t span = 0;  // how far the index may move in the step's direction
  if (direction == "LT" && d > 0) {
    span = l - s;
  } else if (direction == "LE" && d > 0) {
    span = l - s + 1;
  } else if (direction == "GT" && d < 0) {
    span = s - l;
  } else if (direction == "GE" && d < 0) {
    span = s - l + 1;
  } else {
    return std::nullopt;  // NE, EQ, or a step away from the limit (no finite count)
  }
  const std::int64_t ad = d > 0 ? d : -d;
  const std::int64_t n = span <= 0 ? 0 : (span + ad - 1) / ad;
  return TripCount{n, fmt::format("induction {}: {} to {} step {} ({})",
                                  cmp->operand(0)->opcode() == Opcode::kGetTupleElement ? cmp->operand(0)->name()
                                                                                         : cmp->operand(1)->name(),
                                  s, l, d, direction)};
}

std::optional<TripCount> while_trip_count(const Instruction& x) {
  if (auto n = known_trip_count(x)) return TripCount{*n, "known_trip_count"};
  return induction_trip_count(x);
}

}  // namespace tpusim::hlo
