#include "isa/stablehlo/attributes.h"

#include <fmt/format.h>

#include "isa/stablehlo/names.h"

namespace tpusim::stablehlo {
namespace {

bool is(const Token& t, std::string_view s) { return t.text == s && t.kind != TokKind::kString; }
bool opens(const Token& t) { return t.kind == TokKind::kPunct && (t.text == "(" || t.text == "[" || t.text == "{" || t.text == "<"); }
bool closes(const Token& t) { return t.kind == TokKind::kPunct && (t.text == ")" || t.text == "]" || t.text == "}" || t.text == ">"); }

// `mhlo.frontend_attributes = {k = "v", ...}` -> `{k="v",...}`.
std::string frontend_attributes(const std::vector<Token>& toks, std::size_t k) {
  std::vector<std::string> parts;
  int depth = 0;
  for (; k < toks.size(); ++k) {
    if (opens(toks[k])) ++depth;
    if (closes(toks[k]) && --depth == 0) break;
    if (depth == 1 && k + 2 < toks.size() && is(toks[k + 1], "=") && toks[k + 2].kind == TokKind::kString) {
      const std::string key = toks[k].kind == TokKind::kString ? unescape_string(toks[k].text) : std::string(toks[k].text);
      parts.push_back(fmt::format("{}={}", key, toks[k + 2].text));
    }
  }
  return fmt::format("{{{}}}", fmt::join(parts, ","));
}

}  // namespace

std::vector<AttrEntry> attr_entries(const std::vector<Token>& toks) {
  std::vector<AttrEntry> out;
  int depth = 0;
  int dict = -1;  // depth inside the dictionary being read
  for (std::size_t k = 0; k < toks.size(); ++k) {
    const Token& t = toks[k];
    if (is(t, "{") && (depth == 0 || (depth == 1 && k > 0 && is(toks[k - 1], "<")))) dict = depth + 1;
    if (opens(t)) ++depth;
    if (closes(t)) {
      if (depth == dict) dict = -1;
      --depth;
      continue;
    }
    if (depth != dict || k + 2 >= toks.size() || !is(toks[k + 1], "=")) continue;
    if (t.kind != TokKind::kIdent && t.kind != TokKind::kString) continue;
    out.push_back({t.kind == TokKind::kString ? unescape_string(t.text) : std::string(t.text), k + 2});
  }
  return out;
}

bool is_extra_attribute(std::string_view name) {
  return name.starts_with(kHloAttrPrefix) || name == kXlaShapeAttr || name == "mhlo.sharding" ||
         name == "mhlo.frontend_attributes" || name == "backend_config";
}

HloExtras hlo_extras(const std::vector<Token>& toks) {
  HloExtras out;
  for (const AttrEntry& e : attr_entries(toks)) {
    const Token& v = toks[e.value];
    if (e.name == "mhlo.frontend_attributes" && is(v, "{")) {
      out.attrs += ", frontend_attributes=" + frontend_attributes(toks, e.value);
      continue;
    }
    if (v.kind != TokKind::kString) continue;
    if (e.name == kXlaShapeAttr) {
      out.shape = unescape_string(v.text);
      out.any_hlo = true;
    } else if (e.name == "mhlo.sharding") {
      out.attrs += ", sharding=" + unescape_string(v.text);
    } else if (e.name == "backend_config") {
      out.attrs += fmt::format(", backend_config={}", v.text);
    } else if (e.name.starts_with(kHloAttrPrefix)) {
      out.attrs += fmt::format(", {}={}", e.name.substr(kHloAttrPrefix.size()), unescape_string(v.text));
      out.any_hlo = true;
    }
  }
  return out;
}

std::string strip_layouts(std::string_view hlo_shape) {
  std::string out;
  int depth = 0;
  for (const char c : hlo_shape) {
    if (c == '{') ++depth;
    if (depth == 0) out += c;
    if (c == '}') --depth;
  }
  return out;
}

std::vector<std::string> tuple_elements(std::string_view hlo_shape) {
  std::vector<std::string> out;
  if (!hlo_shape.starts_with("(")) return out;
  int depth = 0;
  std::size_t begin = 1;
  for (std::size_t i = 0; i < hlo_shape.size(); ++i) {
    const char c = hlo_shape[i];
    if (c == '(' || c == '{' || c == '[') ++depth;
    if (c == ')' || c == '}' || c == ']') --depth;
    if ((c == ',' && depth == 1) || (c == ')' && depth == 0)) {
      std::string_view e = hlo_shape.substr(begin, i - begin);
      while (!e.empty() && e.front() == ' ') e.remove_prefix(1);
      if (!e.empty()) out.emplace_back(e);
      begin = i + 1;
    }
  }
  return out;
}

}  // namespace tpusim::stablehlo
