#include "isa/hlo/element_type.h"

#include <array>

namespace tpusim::hlo {
namespace {

struct ElementTypeInfo {
  std::string_view name;
  int bits;
  char kind;
};

constexpr std::array kInfo = {
#define TPUSIM_X(e, name, bits, kind) ElementTypeInfo{name, bits, kind},
    TPUSIM_HLO_ELEMENT_TYPES(TPUSIM_X)
#undef TPUSIM_X
        ElementTypeInfo{"tuple", 0, 't'},
        ElementTypeInfo{"b", 0, 't'},
};

const ElementTypeInfo& info(ElementType t) { return kInfo[static_cast<std::size_t>(t)]; }

}  // namespace

std::string_view element_type_name(ElementType t) { return info(t).name; }
int element_type_bits(ElementType t) { return info(t).bits; }
char element_type_kind(ElementType t) { return info(t).kind; }
bool is_floating(ElementType t) { return info(t).kind == 'f' || info(t).kind == 'c'; }
bool is_integral(ElementType t) { return info(t).kind == 's' || info(t).kind == 'u'; }

std::optional<ElementType> element_type_from_name(std::string_view name) {
  // The table is small (32 entries); a linear scan beats a hash map here and
  // the first character filters almost every candidate.
  if (name.empty() || name.size() > 13) return std::nullopt;
  for (std::size_t i = 0; i + 2 < kInfo.size(); ++i) {
    const std::string_view n = kInfo[i].name;
    if (n.size() == name.size() && n[0] == name[0] && n == name) return static_cast<ElementType>(i);
  }
  return std::nullopt;
}

}  // namespace tpusim::hlo
