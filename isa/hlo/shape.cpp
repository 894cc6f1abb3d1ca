#include "isa/hlo/shape.h"

#include <charconv>
#include <limits>

namespace tpusim::hlo {

namespace {
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}
}  // namespace

std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return kMax;
  return r;
}
std::int64_t sat_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return kMax;
  return r;
}

Shape::Shape(ElementType type, std::vector<std::int64_t> dims) : type_(type), dims_(std::move(dims)) {}

Shape Shape::tuple(std::vector<Shape> elements) {
  Shape s;
  s.type_ = ElementType::kTuple;
  s.tuple_ = std::move(elements);
  return s;
}

Shape Shape::buffer(Shape element) {
  Shape s;
  s.type_ = ElementType::kBuffer;
  s.tuple_.push_back(std::move(element));
  return s;
}

bool Shape::has_dynamic_dims() const {
  for (bool d : dynamic_)
    if (d) return true;
  return false;
}

void Shape::set_dynamic(int i, bool d) {
  const auto idx = static_cast<std::size_t>(i);
  if (!d && idx >= dynamic_.size()) return;
  if (dynamic_.size() <= idx) dynamic_.resize(dims_.size() > idx ? dims_.size() : idx + 1, false);
  dynamic_[idx] = d;
}

void Shape::clear() {
  type_ = ElementType::kTuple;
  dims_.clear();
  dynamic_.clear();
  layout_.reset();
  tuple_.clear();
}

std::int64_t Shape::element_count() const {
  std::int64_t n = 1;
  for (std::int64_t d : dims_) n = sat_mul(n, d < 0 ? 1 : d);
  return n;
}

std::int64_t Shape::byte_size() const {
  if (is_tuple() || is_buffer()) {
    std::int64_t total = 0;
    for (const Shape& e : tuple_) total = sat_add(total, e.byte_size());
    return total;
  }
  const std::int64_t bits = sat_mul(element_count(), element_type_bits(type_));
  return bits == kMax ? kMax : (bits + 7) / 8;
}

bool Shape::compatible(const Shape& other) const {
  if (type_ != other.type_) return false;
  if (is_tuple() || is_buffer()) {
    if (tuple_.size() != other.tuple_.size()) return false;
    for (std::size_t i = 0; i < tuple_.size(); ++i)
      if (!tuple_[i].compatible(other.tuple_[i])) return false;
    return true;
  }
  return dims_ == other.dims_;
}

std::string Shape::to_string(bool print_layout) const {
  std::string out;
  append_to(out, print_layout);
  return out;
}

void Shape::append_to(std::string& out, bool print_layout) const {
  if (is_buffer()) {
    out += "b(";
    if (!tuple_.empty()) tuple_.front().append_to(out, print_layout);
    out += ')';
    return;
  }
  if (is_tuple()) {
    out += '(';
    for (std::size_t i = 0; i < tuple_.size(); ++i) {
      if (i) out += ", ";
      tuple_[i].append_to(out, print_layout);
    }
    out += ')';
    return;
  }
  out += element_type_name(type_);
  out += '[';
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    if (i) out += ',';
    if (is_dynamic(static_cast<int>(i))) {
      if (dims_[i] == kUnboundedDim) {
        out += '?';
        continue;
      }
      out += "<=";
    }
    append_int(out, dims_[i]);
  }
  out += ']';
  if (!print_layout || !layout_) return;
  const Layout& l = *layout_;
  out += '{';
  for (std::size_t i = 0; i < l.minor_to_major.size(); ++i) {
    if (i) out += ',';
    append_int(out, l.minor_to_major[i]);
  }
  const bool extras =
      !l.tiles.empty() || l.element_size_bits != 0 || l.memory_space != 0 || !l.other_items.empty();
  if (extras) {
    out += ':';
    if (!l.tiles.empty()) out += 'T';  // one T, then each tile: T(8,128)(2,1)
    for (const Tile& t : l.tiles) {
      out += '(';
      for (std::size_t i = 0; i < t.dims.size(); ++i) {
        if (i) out += ',';
        if (t.dims[i] == kCombinedTileDim)
          out += '*';
        else
          append_int(out, t.dims[i]);
      }
      out += ')';
    }
    if (l.element_size_bits != 0) {
      out += "E(";
      append_int(out, l.element_size_bits);
      out += ')';
    }
    if (l.memory_space != 0) {
      out += "S(";
      append_int(out, l.memory_space);
      out += ')';
    }
    out += l.other_items;
  }
  out += '}';
}

}  // namespace tpusim::hlo
