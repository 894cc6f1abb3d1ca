#include "isa/program.h"

#include <algorithm>

namespace tpusim::isa {

static_assert(sizeof(TileRef) == 24, "TileRef grew: instructions must stay small");
static_assert(sizeof(Instruction) <= 200, "instructions must stay <= 200 bytes (simulator memory per instruction)");

std::int64_t Buffer::rows() const {
  std::int64_t r = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) r *= shape[i];
  return r;
}
std::int64_t Buffer::cols() const { return shape.empty() ? 0 : shape.back(); }
std::int64_t Buffer::elements() const { return rows() * cols(); }
std::int64_t Buffer::bytes() const { return dtype_bytes(dtype, elements()); }
std::int64_t Buffer::row_pitch_bytes() const { return dtype_bytes(dtype, cols()); }

StringTable::StringTable() { intern(""); }

std::uint32_t StringTable::intern(std::string_view s) {
  std::string key(s);
  if (auto it = index_.find(key); it != index_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(strings_.size());
  strings_.push_back(key);
  index_.emplace(std::move(key), id);
  return id;
}

std::string_view StringTable::get(std::uint32_t id) const {
  return id < strings_.size() ? std::string_view{strings_[id]} : std::string_view{};
}

std::uint32_t Program::find_buffer(std::string_view name) const {
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].name == name) return static_cast<std::uint32_t>(i);
  }
  return TileRef::kNone;
}

std::uint32_t Program::find_semaphore(std::string_view name) const {
  for (std::size_t i = 0; i < semaphores.size(); ++i) {
    if (semaphores[i].name == name) return static_cast<std::uint32_t>(i);
  }
  return SemRef::kNone;
}

std::uint32_t Program::storage(std::uint32_t buffer) const {
  if (buffer < buffers.size() && buffers[buffer].view_of < buffers.size()) return buffers[buffer].view_of;
  return buffer;
}

TileRef Program::whole(std::uint32_t buffer) const {
  TileRef t;
  if (buffer >= buffers.size()) return t;
  const Buffer& b = buffers[buffer];
  t.buffer = buffer;
  t.rows = static_cast<std::int32_t>(b.rows());
  t.cols = static_cast<std::int32_t>(b.cols());
  return t;
}

bool same_program(const Program& a, const Program& b) {
  const auto buffers_equal = [](const Buffer& x, const Buffer& y) {
    return x.name == y.name && x.space == y.space && x.dtype == y.dtype && x.shape == y.shape &&
           x.offset == y.offset && x.view_of == y.view_of;
  };
  if (a.buffers.size() != b.buffers.size() || a.semaphores.size() != b.semaphores.size() ||
      a.code.size() != b.code.size() || a.replica_groups != b.replica_groups || a.reuse != b.reuse) {
    return false;
  }
  for (std::size_t i = 0; i < a.buffers.size(); ++i) {
    if (!buffers_equal(a.buffers[i], b.buffers[i])) return false;
  }
  for (std::size_t i = 0; i < a.semaphores.size(); ++i) {
    if (a.semaphores[i].name != b.semaphores[i].name ||
        a.semaphores[i].initial != b.semaphores[i].initial) {
      return false;
    }
  }
  for (std::size_t i = 0; i < a.code.size(); ++i) {
    if (!(a.code[i].op == b.code[i].op)) return false;
    if (a.provenance(a.code[i]) != b.provenance(b.code[i])) return false;
  }
  return true;
}

std::string_view provenance_root(std::string_view p) {
  if (p.starts_with("approx:")) {
    const auto space = p.find(' ');
    p = space == std::string_view::npos ? p.substr(7) : p.substr(space + 1);
  }
  return p.substr(0, p.find('/'));
}

}  // namespace tpusim::isa
