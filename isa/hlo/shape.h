// Shape: a value type (element type, dimensions, dynamic flags, optional
// layout with tiles and memory space; or a tuple of shapes), as in XLA's
// xla::Shape. Printing follows XLA's text form, e.g.
// `f32[8,<=128]{1,0:T(8,128)(2,1)S(1)}` or `(s32[], f32[4]{0})`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "isa/hlo/element_type.h"

namespace tpusim::hlo {

// Dimension value of an unbounded dynamic dimension (`?`).
inline constexpr std::int64_t kUnboundedDim = -1;
// Tile dimension printed as `*` (XLA's combined dimension).
inline constexpr std::int64_t kCombinedTileDim = -1;

struct Tile {
  std::vector<std::int64_t> dims;
  bool operator==(const Tile&) const = default;
};

struct Layout {
  std::vector<std::int64_t> minor_to_major;
  std::vector<Tile> tiles;               // `:T(8,128)(2,1)`
  std::int64_t element_size_bits = 0;    // `E(4)`; 0 = natural size
  std::int64_t memory_space = 0;         // `S(1)`; 0 = default (HBM)
  // Other layout items XLA may print (D(…), L(…), #(…), *(…), SC(…), P(…),
  // M(…)), kept as text in the order written and printed back after S(…).
  std::string other_items;
  bool operator==(const Layout&) const = default;
};

class Shape {
 public:
  Shape() = default;
  Shape(ElementType type, std::vector<std::int64_t> dims);
  static Shape tuple(std::vector<Shape> elements);
  static Shape buffer(Shape element);

  ElementType element_type() const { return type_; }
  bool is_tuple() const { return type_ == ElementType::kTuple; }
  // A buffer shape `b(f32[4])` holds its array shape as tuple_elements()[0].
  bool is_buffer() const { return type_ == ElementType::kBuffer; }
  bool is_array() const { return !is_tuple() && element_type_bits(type_) > 0; }
  bool is_token() const { return type_ == ElementType::kToken; }

  int rank() const { return static_cast<int>(dims_.size()); }
  const std::vector<std::int64_t>& dims() const { return dims_; }
  std::int64_t dim(int i) const { return dims_[static_cast<std::size_t>(i)]; }
  // A dynamic dimension prints as `<=N` (bounded by N) or `?` (unbounded).
  bool is_dynamic(int i) const {
    return static_cast<std::size_t>(i) < dynamic_.size() && dynamic_[static_cast<std::size_t>(i)];
  }
  bool has_dynamic_dims() const;
  const std::optional<Layout>& layout() const { return layout_; }
  const std::vector<Shape>& tuple_elements() const { return tuple_; }

  // Number of elements (dynamic dims count at their bound; unbounded as 1).
  // Saturates at INT64_MAX instead of overflowing on hostile input.
  std::int64_t element_count() const;
  // Bytes of the array data (sub-byte types packed); for tuples the sum of
  // the elements' bytes (XLA also counts an index table; we count data only).
  std::int64_t byte_size() const;

  // Same element type and dimensions (layouts ignored), recursively.
  bool compatible(const Shape& other) const;
  bool operator==(const Shape&) const = default;

  std::string to_string(bool print_layout = true) const;
  void append_to(std::string& out, bool print_layout = true) const;

  // Mutators for the parser and for shape inference.
  void set_element_type(ElementType t) { type_ = t; }
  std::vector<std::int64_t>& mutable_dims() { return dims_; }
  void set_dynamic(int i, bool d);
  void set_layout(std::optional<Layout> layout) { layout_ = std::move(layout); }
  std::vector<Shape>& mutable_tuple_elements() { return tuple_; }
  void clear();

 private:
  ElementType type_ = ElementType::kTuple;
  std::vector<std::int64_t> dims_;
  std::vector<bool> dynamic_;  // empty when no dimension is dynamic
  std::optional<Layout> layout_;
  std::vector<Shape> tuple_;
};

// Saturating helpers: shapes come from user input, so products may overflow.
std::int64_t sat_mul(std::int64_t a, std::int64_t b);
std::int64_t sat_add(std::int64_t a, std::int64_t b);

}  // namespace tpusim::hlo
