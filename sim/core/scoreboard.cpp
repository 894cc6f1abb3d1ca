#include "sim/core/scoreboard.h"

#include <type_traits>

namespace tpusim {

TileUses tile_uses(const isa::Op& op) {
  TileUses out;
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (!std::is_same_v<T, std::monostate>) {
          isa::for_each_field(o, [&](const isa::FieldInfo& f, const auto& v) {
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, isa::TileRef>) {
              if (v.present()) out.push_back({v, f.name == "dst"});
            }
          });
        }
      },
      op);
  return out;
}

std::size_t Scoreboard::held() const {
  std::size_t n = 0;
  for (const Buffer& b : buffers_) n += b.writes.size() + b.reads.size();
  return n;
}

}  // namespace tpusim
