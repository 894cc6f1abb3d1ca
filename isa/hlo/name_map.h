// A small open-addressing hash map from names (views into the source text)
// to values, for the parser's symbol tables. std::unordered_map spent a
// node allocation and a cache miss per instruction; this keeps entries
// inline, and clear() touches only the slots in use, so one big computation
// does not make clearing for every later small one expensive.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace tpusim::hlo {

template <typename V>
class NameMap {
 public:
  // Inserts (name, value) unless present; returns the stored value's address
  // and whether it was inserted.
  std::pair<V*, bool> try_emplace(std::string_view name, V value) {
    if ((used_.size() + 1) * 2 > slots_.size()) grow();
    const std::uint64_t h = hash(name);
    std::size_t i = h & mask_;
    while (slots_[i].full) {
      if (slots_[i].hash == h && slots_[i].key == name) return {&slots_[i].value, false};
      i = (i + 1) & mask_;
    }
    slots_[i] = Slot{h, name, value, true};
    used_.push_back(static_cast<std::uint32_t>(i));
    return {&slots_[i].value, true};
  }

  const V* find(std::string_view name) const {
    if (slots_.empty()) return nullptr;
    const std::uint64_t h = hash(name);
    std::size_t i = h & mask_;
    while (slots_[i].full) {
      if (slots_[i].hash == h && slots_[i].key == name) return &slots_[i].value;
      i = (i + 1) & mask_;
    }
    return nullptr;
  }

  void clear() {
    for (std::uint32_t i : used_) slots_[i].full = false;
    used_.clear();
  }
  std::size_t size() const { return used_.size(); }

 private:
  struct Slot {
    std::uint64_t hash = 0;
    std::string_view key;
    V value{};
    bool full = false;
  };

  static std::uint64_t hash(std::string_view s) { return std::hash<std::string_view>{}(s); }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const std::size_t cap = old.empty() ? 64 : old.size() * 2;
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    used_.clear();
    for (const Slot& s : old) {
      if (!s.full) continue;
      std::size_t i = s.hash & mask_;
      while (slots_[i].full) i = (i + 1) & mask_;
      slots_[i] = s;
      used_.push_back(static_cast<std::uint32_t>(i));
    }
  }

  std::vector<Slot> slots_;
  std::vector<std::uint32_t> used_;
  std::size_t mask_ = 0;
};

}  // namespace tpusim::hlo
