#include "isa/hlo/attribute.h"

#include <algorithm>
#include <array>
#include <utility>

namespace tpusim::hlo {
namespace {

struct AttrInfo {
  std::string_view name;
  AttrKind kind;
};

constexpr std::array kInfo = {
#define TPUSIM_X(id, name, kind) AttrInfo{name, AttrKind::kind},
    TPUSIM_HLO_ATTRIBUTES(TPUSIM_X)
#undef TPUSIM_X
        AttrInfo{"", AttrKind::kRaw},
};
constexpr std::size_t kKnown = kInfo.size() - 1;

// The table is written in sorted order so lookup can binary-search it.
constexpr bool table_sorted() {
  for (std::size_t i = 1; i < kKnown; ++i)
    if (!(kInfo[i - 1].name < kInfo[i].name)) return false;
  return true;
}
static_assert(table_sorted(), "keep TPUSIM_HLO_ATTRIBUTES sorted by text name");

}  // namespace

std::string_view attr_name(AttrId id) { return kInfo[static_cast<std::size_t>(id)].name; }
AttrKind attr_kind(AttrId id) { return kInfo[static_cast<std::size_t>(id)].kind; }

AttrId attr_id_from_name(std::string_view name) {
  std::size_t lo = 0, hi = kKnown;
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (kInfo[mid].name < name)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < kKnown && kInfo[lo].name == name) return static_cast<AttrId>(lo);
  return AttrId::kUnknown;
}

std::string_view attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::kInt: return "an integer";
    case AttrKind::kFloat: return "a number";
    case AttrKind::kBool: return "true or false";
    case AttrKind::kString: return "a string";
    case AttrKind::kEnum: return "a name";
    case AttrKind::kIntList: return "an integer list like {0,1}";
    case AttrKind::kIntListList: return "a list of integer lists like {{0,1},{1,0}}";
    case AttrKind::kComputation: return "a computation name";
    case AttrKind::kComputationList: return "a computation list like {%a, %b}";
    case AttrKind::kComputationOrList: return "a computation name or list";
    case AttrKind::kInstructionList: return "an instruction list like {%a, %b}";
    case AttrKind::kWindow: return "a window like {size=3x3 stride=1x1 pad=1_1x1_1}";
    case AttrKind::kDimLabels: return "dimension labels like b01f_01io->b01f";
    case AttrKind::kSliceRanges: return "slice ranges like {[0:8:1], [0:4]}";
    case AttrKind::kPadding: return "padding like 0_1_0x2_2_0";
    case AttrKind::kReplicaGroups: return "replica groups like {{0,1},{2,3}} or [2,4]<=[8]";
    case AttrKind::kSharding: return "a sharding like {replicated} or {devices=[2,1]0,1}";
    case AttrKind::kShape: return "a shape";
    case AttrKind::kShapeList: return "a shape list like {f32[2], s32[]}";
    case AttrKind::kLiteral: return "a shape and a literal like s32[] 1";
    case AttrKind::kBraced: return "a {...} block";
    case AttrKind::kStringOrBraced: return "a string or a {...} block";
    case AttrKind::kComputationLayout: return "a computation layout like {(f32[2]{0})->f32[2]{0}}";
    case AttrKind::kRaw: return "a value";
  }
  return "a value";
}

}  // namespace tpusim::hlo
