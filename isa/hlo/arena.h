// A bump allocator for IR nodes. A module's instructions, operand and user
// lists and attributes live in one arena: few large allocations keep parse
// time and memory low (target: memory <= 4x the text size). Everything
// placed here must be trivially destructible; the arena frees blocks, it
// never runs destructors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <vector>

namespace tpusim::hlo {

class Arena {
 public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  void* allocate(std::size_t bytes, std::size_t align) {
    std::size_t p = (used_ + align - 1) & ~(align - 1);
    if (!current_ || p + bytes > capacity_) {
      grow(bytes + align);
      p = (used_ + align - 1) & ~(align - 1);
    }
    used_ = p + bytes;
    return current_ + p;
  }

  template <typename T, typename... Args>
  T* make(Args&&... args) {
    static_assert(std::is_trivially_destructible_v<T>);
    return new (allocate(sizeof(T), alignof(T))) T(std::forward<Args>(args)...);
  }

  // Copies `src` into the arena and returns a span over the copy.
  template <typename T>
  std::span<T> copy(std::span<const T> src) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (src.empty()) return {};
    T* p = static_cast<T*>(allocate(sizeof(T) * src.size(), alignof(T)));
    std::memcpy(static_cast<void*>(p), src.data(), sizeof(T) * src.size());
    return {p, src.size()};
  }

  template <typename T>
  std::span<T> alloc_array(std::size_t n) {
    static_assert(std::is_trivially_destructible_v<T>);
    if (n == 0) return {};
    T* p = static_cast<T*>(allocate(sizeof(T) * n, alignof(T)));
    for (std::size_t i = 0; i < n; ++i) new (p + i) T();
    return {p, n};
  }

  // Bytes obtained from the system (blocks), the memory figure we report.
  std::size_t bytes_reserved() const { return reserved_; }

 private:
  void grow(std::size_t min_bytes) {
    // Blocks double up to 1 MiB so tiny modules stay tiny.
    std::size_t size = next_block_;
    if (next_block_ < (std::size_t{1} << 20)) next_block_ *= 2;
    if (size < min_bytes) size = min_bytes;
    blocks_.push_back(std::make_unique_for_overwrite<std::byte[]>(size));
    current_ = blocks_.back().get();
    capacity_ = size;
    used_ = 0;
    reserved_ += size;
  }

  std::vector<std::unique_ptr<std::byte[]>> blocks_;
  std::byte* current_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t used_ = 0;
  std::size_t next_block_ = 4096;
  std::size_t reserved_ = 0;
};

}  // namespace tpusim::hlo
