#include "isa/hlo/shape_inference.h"

#include <algorithm>
#include <set>

#include "isa/hlo/attribute_values.h"

namespace tpusim::hlo {
namespace {

std::string dims_text(const Ints& d) {
  std::string s = "{";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "}";
}

InferredShape error(std::string message) {
  InferredShape r;
  r.error = std::move(message);
  return r;
}
InferredShape shape_of(Shape s, bool type_known = true) {
  InferredShape r;
  r.shape = std::move(s);
  r.element_type_known = type_known;
  return r;
}
InferredShape none() { return {}; }

bool valid_dim(std::int64_t d, int rank) { return d >= 0 && d < rank; }

// Group size of a collective: size of the first replica group (all groups
// have the same size in valid HLO); nullopt for `{}` (all devices) or mesh form.
std::optional<std::int64_t> group_size(const Instruction& inst) {
  auto g = replica_groups_attr(inst);
  if (!g || g->groups.empty() || g->groups.front().empty()) return std::nullopt;
  return static_cast<std::int64_t>(g->groups.front().size());
}

Shape tuple_or_single(std::vector<Shape> shapes) {
  if (shapes.size() == 1) return std::move(shapes.front());
  return Shape::tuple(std::move(shapes));
}

// Elementwise: all array operands must have the same dimensions.
InferredShape elementwise(const Instruction& inst, std::size_t result_from) {
  const auto ops = inst.operands();
  if (ops.empty() || result_from >= ops.size()) return none();
  const Shape& ref = ops[result_from]->shape();
  if (!ref.is_array()) return none();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Shape& s = ops[i]->shape();
    if (!s.is_array()) return none();
    // select/clamp accept a scalar predicate / bounds.
    if (s.rank() == 0 && (inst.opcode() == Opcode::kSelect || inst.opcode() == Opcode::kClamp)) continue;
    if (s.dims() != ref.dims())
      return error("operands of " + std::string(inst.opcode_text()) + " must have equal dimensions, but operand " +
                   std::to_string(i) + " is " + s.to_string(false) + " and operand " + std::to_string(result_from) +
                   " is " + ref.to_string(false));
  }
  Shape out(ref.element_type(), ref.dims());
  for (int i = 0; i < ref.rank(); ++i) out.set_dynamic(i, ref.is_dynamic(i));
  return shape_of(std::move(out));
}

InferredShape infer_dot(const Instruction& inst) {
  if (inst.operand_count() < 2) return none();
  const Shape& lhs = inst.operand(0)->shape();
  const Shape& rhs = inst.operand(1)->shape();
  if (!lhs.is_array() || !rhs.is_array()) return none();
  const Ints lb = ints_attr(inst, AttrId::kLhsBatchDims).value_or(Ints{});
  const Ints rb = ints_attr(inst, AttrId::kRhsBatchDims).value_or(Ints{});
  const Ints lc = ints_attr(inst, AttrId::kLhsContractingDims).value_or(Ints{});
  const Ints rc = ints_attr(inst, AttrId::kRhsContractingDims).value_or(Ints{});
  if (lb.size() != rb.size())
    return error("dot has " + std::to_string(lb.size()) + " lhs batch dimensions but " + std::to_string(rb.size()) +
                 " rhs batch dimensions");
  if (lc.size() != rc.size())
    return error("dot has " + std::to_string(lc.size()) + " lhs contracting dimensions but " +
                 std::to_string(rc.size()) + " rhs contracting dimensions");
  std::set<std::int64_t> lused, rused;
  for (std::size_t i = 0; i < lb.size(); ++i) {
    if (!valid_dim(lb[i], lhs.rank()) || !valid_dim(rb[i], rhs.rank()))
      return error("dot batch dimension out of range for " + lhs.to_string(false) + " x " + rhs.to_string(false));
    if (lhs.dim(static_cast<int>(lb[i])) != rhs.dim(static_cast<int>(rb[i])))
      return error("dot batch dimensions differ: lhs dim " + std::to_string(lb[i]) + " is " +
                   std::to_string(lhs.dim(static_cast<int>(lb[i]))) + ", rhs dim " + std::to_string(rb[i]) + " is " +
                   std::to_string(rhs.dim(static_cast<int>(rb[i]))));
    lused.insert(lb[i]);
    rused.insert(rb[i]);
  }
  for (std::size_t i = 0; i < lc.size(); ++i) {
    if (!valid_dim(lc[i], lhs.rank()) || !valid_dim(rc[i], rhs.rank()))
      return error("dot contracting dimension out of range for " + lhs.to_string(false) + " x " +
                   rhs.to_string(false));
    if (lhs.dim(static_cast<int>(lc[i])) != rhs.dim(static_cast<int>(rc[i])))
      return error("dot contracting dimensions differ: lhs dim " + std::to_string(lc[i]) + " is " +
                   std::to_string(lhs.dim(static_cast<int>(lc[i]))) + ", rhs dim " + std::to_string(rc[i]) + " is " +
                   std::to_string(rhs.dim(static_cast<int>(rc[i]))));
    lused.insert(lc[i]);
    rused.insert(rc[i]);
  }
  Ints dims;
  for (std::int64_t d : lb) dims.push_back(lhs.dim(static_cast<int>(d)));
  for (int i = 0; i < lhs.rank(); ++i)
    if (!lused.count(i)) dims.push_back(lhs.dim(i));
  for (int i = 0; i < rhs.rank(); ++i)
    if (!rused.count(i)) dims.push_back(rhs.dim(i));
  return shape_of(Shape(lhs.element_type(), std::move(dims)), /*type_known=*/false);
}

InferredShape infer_convolution(const Instruction& inst) {
  if (inst.operand_count() != 2) return none();
  const Shape& in = inst.operand(0)->shape();
  const Shape& k = inst.operand(1)->shape();
  auto labels = dim_labels_attr(inst);
  if (!labels || !in.is_array() || !k.is_array()) return none();
  const Window window = window_attr(inst).value_or(Window{});
  const std::int64_t fgc = int_attr(inst, AttrId::kFeatureGroupCount).value_or(1);
  const std::int64_t bgc = int_attr(inst, AttrId::kBatchGroupCount).value_or(1);
  const std::size_t n = labels->input_spatial.size();
  if (static_cast<std::size_t>(in.rank()) != n + 2 || static_cast<std::size_t>(k.rank()) != n + 2)
    return error("convolution dim_labels describe rank " + std::to_string(n + 2) + " but the input is " +
                 in.to_string(false) + " and the kernel " + k.to_string(false));
  if (window.size() != n)
    return error("convolution window has " + std::to_string(window.size()) + " dimensions but dim_labels have " +
                 std::to_string(n) + " spatial dimensions");
  if (fgc <= 0 || bgc <= 0) return error("feature_group_count and batch_group_count must be positive");
  const std::int64_t in_feat = in.dim(static_cast<int>(labels->input_feature));
  const std::int64_t k_in = k.dim(static_cast<int>(labels->kernel_input_feature));
  if (in_feat != k_in * fgc)
    return error("convolution input features (" + std::to_string(in_feat) + ") must equal kernel input features (" +
                 std::to_string(k_in) + ") x feature_group_count (" + std::to_string(fgc) + ")");
  Ints out(n + 2, 0);
  out[static_cast<std::size_t>(labels->output_batch)] = in.dim(static_cast<int>(labels->input_batch)) / bgc;
  out[static_cast<std::size_t>(labels->output_feature)] = k.dim(static_cast<int>(labels->kernel_output_feature));
  for (std::size_t i = 0; i < n; ++i) {
    const WindowDim& w = window[i];
    const std::int64_t ksize = k.dim(static_cast<int>(labels->kernel_spatial[i]));
    if (w.size != ksize)
      return error("convolution window size " + std::to_string(w.size) + " in spatial dimension " +
                   std::to_string(i) + " differs from the kernel's " + std::to_string(ksize));
    if (w.stride <= 0 || w.lhs_dilate <= 0 || w.rhs_dilate <= 0)
      return error("convolution window strides and dilations must be positive");
    const std::int64_t x = in.dim(static_cast<int>(labels->input_spatial[i]));
    const std::int64_t dilated = x == 0 ? 0 : (x - 1) * w.lhs_dilate + 1;
    const std::int64_t padded = dilated + w.pad_low + w.pad_high;
    const std::int64_t wdil = w.size == 0 ? 0 : (w.size - 1) * w.rhs_dilate + 1;
    out[static_cast<std::size_t>(labels->output_spatial[i])] =
        padded < wdil ? 0 : (padded - wdil) / w.stride + 1;
  }
  return shape_of(Shape(in.element_type(), std::move(out)), /*type_known=*/false);
}

InferredShape infer_reduce(const Instruction& inst) {
  const auto ops = inst.operands();
  if (ops.size() < 2 || ops.size() % 2) return none();
  const std::size_t n = ops.size() / 2;
  auto dims = ints_attr(inst, AttrId::kDimensions);
  if (!dims) return none();
  std::vector<Shape> outs;
  for (std::size_t i = 0; i < n; ++i) {
    const Shape& in = ops[i]->shape();
    const Shape& init = ops[n + i]->shape();
    if (!in.is_array() || !init.is_array()) return none();
    if (i > 0 && in.dims() != ops[0]->shape().dims())
      return error("reduce inputs must have equal dimensions");
    std::set<std::int64_t> drop;
    for (std::int64_t d : *dims) {
      if (!valid_dim(d, in.rank()))
        return error("reduce dimension " + std::to_string(d) + " out of range for " + in.to_string(false));
      drop.insert(d);
    }
    Ints o;
    for (int d = 0; d < in.rank(); ++d)
      if (!drop.count(d)) o.push_back(in.dim(d));
    outs.emplace_back(init.element_type(), std::move(o));
  }
  return shape_of(tuple_or_single(std::move(outs)));
}

InferredShape infer_gather(const Instruction& inst) {
  if (inst.operand_count() != 2) return none();
  const Shape& operand = inst.operand(0)->shape();
  const Shape& idx = inst.operand(1)->shape();
  auto offset_dims = ints_attr(inst, AttrId::kOffsetDims);
  auto collapsed = ints_attr(inst, AttrId::kCollapsedSliceDims);
  auto slice_sizes = ints_attr(inst, AttrId::kSliceSizes);
  auto ivd = int_attr(inst, AttrId::kIndexVectorDim);
  if (!offset_dims || !slice_sizes || !ivd || !operand.is_array() || !idx.is_array()) return none();
  const Ints batching = ints_attr(inst, AttrId::kOperandBatchingDims).value_or(Ints{});
  if (static_cast<int>(slice_sizes->size()) != operand.rank())
    return error("gather slice_sizes has " + std::to_string(slice_sizes->size()) + " entries but the operand " +
                 operand.to_string(false) + " has rank " + std::to_string(operand.rank()));
  std::set<std::int64_t> skip(collapsed ? collapsed->begin() : batching.end(), collapsed ? collapsed->end() : batching.end());
  skip.insert(batching.begin(), batching.end());
  Ints offsets;
  for (int i = 0; i < operand.rank(); ++i)
    if (!skip.count(i)) offsets.push_back((*slice_sizes)[static_cast<std::size_t>(i)]);
  if (offsets.size() != offset_dims->size())
    return error("gather offset_dims has " + std::to_string(offset_dims->size()) + " entries but " +
                 std::to_string(offsets.size()) + " slice dimensions remain");
  Ints batch;
  for (int i = 0; i < idx.rank(); ++i)
    if (i != *ivd) batch.push_back(idx.dim(i));
  const std::size_t rank = batch.size() + offsets.size();
  Ints out(rank, 0);
  std::set<std::int64_t> off(offset_dims->begin(), offset_dims->end());
  std::size_t bi = 0, oi = 0;
  for (std::size_t d = 0; d < rank; ++d) {
    if (off.count(static_cast<std::int64_t>(d)))
      out[d] = oi < offsets.size() ? offsets[oi++] : 0;
    else
      out[d] = bi < batch.size() ? batch[bi++] : 0;
  }
  return shape_of(Shape(operand.element_type(), std::move(out)));
}

InferredShape from_called(const Computation* c) {
  if (!c || !c->root() || !c->root()->has_shape()) return none();
  return shape_of(c->root()->shape());
}

// kConvert, kStochasticConvert
InferredShape infer_convert(const Instruction& inst) {
  const auto ops = inst.operands();
  if (ops.empty() || !ops[0]->shape().is_array()) return none();
  return shape_of(Shape(ops[0]->shape().element_type(), ops[0]->shape().dims()), false);
}

// kBitcastConvert, kReal, kImag, kAbs
InferredShape infer_same_element_type(const Instruction& inst) {
  const auto ops = inst.operands();
  if (ops.empty() || !ops[0]->shape().is_array()) return none();
  if (inst.opcode() == Opcode::kBitcastConvert) return none();  // may change rank with bit width
  return shape_of(Shape(ops[0]->shape().element_type(), ops[0]->shape().dims()), false);
}

// kIsFinite, kCompare: elementwise, pred result
InferredShape infer_to_pred(const Instruction& inst) {
  InferredShape r = elementwise(inst, 0);
  if (r.shape) r.shape->set_element_type(ElementType::kPred);
  return r;
}

// kComplex
InferredShape infer_complex(const Instruction& inst) {
  InferredShape r = elementwise(inst, 0);
  if (r.shape) r.element_type_known = false;
  return r;
}

// kSelect
InferredShape infer_select(const Instruction& inst) {
  const auto ops = inst.operands();
  // XLA's verifier: the predicate is pred (scalar or of the result's dimensions).
  if (!ops.empty() && ops[0]->shape().is_array() && ops[0]->shape().element_type() != ElementType::kPred)
    return error("select's predicate must be pred, but operand 0 is " + ops[0]->shape().to_string(false));
  return elementwise(inst, 1);
}

// kClamp
InferredShape infer_clamp(const Instruction& inst) {
  return elementwise(inst, 1);
}

// kSort
InferredShape infer_sort(const Instruction& inst) {
  const auto ops = inst.operands();
  // Sorts along one dimension of every operand: it must be in range.
  auto dims = ints_attr(inst, AttrId::kDimensions);
  if (!dims || ops.empty() || !ops[0]->shape().is_array()) return none();
  for (std::int64_t d : *dims)
    if (!valid_dim(d, ops[0]->shape().rank()))
      return error("sort dimension " + std::to_string(d) + " out of range for " +
                   ops[0]->shape().to_string(false));
  return none();
}

// kGetTupleElement
InferredShape infer_get_tuple_element(const Instruction& inst) {
  const auto ops = inst.operands();
  if (ops.size() != 1) return none();
  const Shape& t = ops[0]->shape();
  auto index = int_attr(inst, AttrId::kIndex);
  if (!index) return error("get-tuple-element needs index=N");
  if (!t.is_tuple()) return error("get-tuple-element operand is not a tuple: " + t.to_string(false));
  if (*index < 0 || static_cast<std::size_t>(*index) >= t.tuple_elements().size())
    return error("get-tuple-element index " + std::to_string(*index) + " out of range for " + t.to_string(false));
  return shape_of(t.tuple_elements()[static_cast<std::size_t>(*index)]);
}

// kTuple
InferredShape infer_tuple(const Instruction& inst) {
  const auto ops = inst.operands();
  std::vector<Shape> e;
  for (const Instruction* o : ops) e.push_back(o->shape());
  return shape_of(Shape::tuple(std::move(e)));
}

// kTranspose
InferredShape infer_transpose(const Instruction& inst) {
  const auto ops = inst.operands();
  if (ops.size() != 1 || !ops[0]->shape().is_array()) return none();
  auto perm = ints_attr(inst, AttrId::kDimensions);
  if (!perm) return none();
  const Shape& in = ops[0]->shape();
  Ints sorted = *perm;
  std::sort(sorted.begin(), sorted.end());
  bool ok = static_cast<int>(perm->size()) == in.rank();
  for (std::size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<std::int64_t>(i);
  if (!ok) return error("transpose dimensions " + dims_text(*perm) + " are not a permutation of rank " +
                        std::to_string(in.rank()));
  Ints out;
  for (std::int64_t p : *perm) out.push_back(in.dim(static_cast<int>(p)));
  return shape_of(Shape(in.element_type(), std::move(out)));
}

// kBroadcast
InferredShape infer_broadcast(const Instruction& inst) {
  const auto ops = inst.operands();
  if (ops.size() != 1 || !inst.has_shape() || !ops[0]->shape().is_array() || !inst.shape().is_array()) return none();
  auto dims = ints_attr(inst, AttrId::kDimensions);
  if (!dims) return none();
  const Shape& in = ops[0]->shape();
  const Shape& out = inst.shape();
  if (static_cast<int>(dims->size()) != in.rank())
    return error("broadcast dimensions " + dims_text(*dims) + " must have one entry per operand dimension (" +
                 std::to_string(in.rank()) + ")");
  for (std::size_t i = 0; i < dims->size(); ++i) {
    const std::int64_t d = (*dims)[i];
    if (!valid_dim(d, out.rank()))
      return error("broadcast dimension " + std::to_string(d) + " out of range for " + out.to_string(false));
    // A size-1 operand dimension may map to any size (XLA's degenerate broadcast).
    if (in.dim(static_cast<int>(i)) != out.dim(static_cast<int>(d)) && in.dim(static_cast<int>(i)) != 1)
      return error("broadcast maps operand dimension " + std::to_string(i) + " (size " +
                   std::to_string(in.dim(static_cast<int>(i))) + ") to output dimension " + std::to_string(d) +
                   " (size " + std::to_string(out.dim(static_cast<int>(d))) + ")");
  }
  return shape_of(Shape(in.element_type(), out.dims()));
}

// kReshape
InferredShape infer_reshape(const Instruction& inst) {
  const auto ops = inst.operands();
  if (ops.size() != 1 || !inst.has_shape() || !ops[0]->shape().is_array() || !inst.shape().is_array()) return none();
  const Shape& in = ops[0]->shape();
  const Shape& out = inst.shape();
  if (in.has_dynamic_dims() || out.has_dynamic_dims()) return none();
  if (in.element_count() != out.element_count())
    return error("reshape changes the element count: operand " + in.to_string(false) + " has " +
                 std::to_string(in.element_count()) + " elements, result " + out.to_string(false) + " has " +
                 std::to_string(out.element_count()));
  return shape_of(Shape(in.element_type(), out.dims()));
}

// kSlice
InferredShape infer_slice(const Instruction& inst) {
  const auto ops = inst.operands();
  if (ops.size() != 1 || !ops[0]->shape().is_array()) return none();
  auto ranges = slice_attr(inst);
  if (!ranges) return none();
  const Shape& in = ops[0]->shape();
  if (static_cast<int>(ranges->size()) != in.rank())
    return error("slice has " + std::to_string(ranges->size()) + " ranges but the operand has rank " +
                 std::to_string(in.rank()));
  Ints out;
  for (int i = 0; i < in.rank(); ++i) {
    const SliceRange& r = (*ranges)[static_cast<std::size_t>(i)];
    if (r.start < 0 || r.start > r.limit || r.limit > in.dim(i) || r.stride <= 0)
      return error("slice range [" + std::to_string(r.start) + ":" + std::to_string(r.limit) + ":" +
                   std::to_string(r.stride) + "] is invalid for dimension " + std::to_string(i) + " of size " +
                   std::to_string(in.dim(i)));
    out.push_back((r.limit - r.start + r.stride - 1) / r.stride);
  }
  return shape_of(Shape(in.element_type(), std::move(out)));
}

// kDynamicSlice
InferredShape infer_dynamic_slice(const Instruction& inst) {
  const auto ops = inst.operands();
  if (ops.empty() || !ops[0]->shape().is_array()) return none();
  auto sizes = ints_attr(inst, AttrId::kDynamicSliceSizes);
  if (!sizes) return none();
  const Shape& in = ops[0]->shape();
  if (static_cast<int>(sizes->size()) != in.rank())
    return error("dynamic_slice_sizes has " + std::to_string(sizes->size()) + " entries but the operand has rank " +
                 std::to_string(in.rank()));
  for (int i = 0; i < in.rank(); ++i)
    if ((*sizes)[static_cast<std::size_t>(i)] > in.dim(i) || (*sizes)[static_cast<std::size_t>(i)] < 0)
      return error("dynamic slice size " + std::to_string((*sizes)[static_cast<std::size_t>(i)]) +
                   " exceeds dimension " + std::to_string(i) + " of size " + std::to_string(in.dim(i)));
  return shape_of(Shape(in.element_type(), *sizes));
}

// kDynamicUpdateSlice
InferredShape infer_dynamic_update_slice(const Instruction& inst) {
  const auto ops = inst.operands();
  if (ops.size() < 2 || !ops[0]->shape().is_array() || !ops[1]->shape().is_array()) return none();
  const Shape& in = ops[0]->shape();
  const Shape& upd = ops[1]->shape();
  if (upd.rank() != in.rank())
    return error("dynamic-update-slice update " + upd.to_string(false) + " has a different rank than " +
                 in.to_string(false));
  for (int i = 0; i < in.rank(); ++i)
    if (upd.dim(i) > in.dim(i))
      return error("dynamic-update-slice update " + upd.to_string(false) + " is larger than the operand " +
                   in.to_string(false) + " in dimension " + std::to_string(i));
  return shape_of(Shape(in.element_type(), in.dims()));
}

// kConcatenate
InferredShape infer_concatenate(const Instruction& inst) {
  const auto ops = inst.operands();
  if (ops.empty() || !ops[0]->shape().is_array()) return none();
  auto dims = ints_attr(inst, AttrId::kDimensions);
  if (!dims || dims->size() != 1) return none();
  const Shape& first = ops[0]->shape();
  const std::int64_t d = (*dims)[0];
  if (!valid_dim(d, first.rank()))
    return error("concatenate dimension " + std::to_string(d) + " out of range for rank " +
                 std::to_string(first.rank()));
  Ints out = first.dims();
  for (std::size_t k = 1; k < ops.size(); ++k) {
    const Shape& s = ops[k]->shape();
    if (!s.is_array() || s.rank() != first.rank())
      return error("concatenate operands must have equal ranks");
    for (int i = 0; i < s.rank(); ++i)
      if (i != d && s.dim(i) != first.dim(i))
        return error("concatenate operand " + std::to_string(k) + " " + s.to_string(false) + " differs from " +
                     first.to_string(false) + " outside dimension " + std::to_string(d));
    out[static_cast<std::size_t>(d)] += s.dim(static_cast<int>(d));
  }
  return shape_of(Shape(first.element_type(), std::move(out)));
}

// kPad
InferredShape infer_pad(const Instruction& inst) {
  const auto ops = inst.operands();
  if (ops.size() != 2 || !ops[0]->shape().is_array()) return none();
  auto pads = padding_attr(inst);
  if (!pads) return none();
  const Shape& in = ops[0]->shape();
  if (static_cast<int>(pads->size()) != in.rank())
    return error("padding has " + std::to_string(pads->size()) + " dimensions but the operand has rank " +
                 std::to_string(in.rank()));
  Ints out;
  for (int i = 0; i < in.rank(); ++i) {
    const PadDim& p = (*pads)[static_cast<std::size_t>(i)];
    const std::int64_t x = in.dim(i);
    out.push_back(p.low + p.high + x + (x > 0 ? (x - 1) * p.interior : 0));
  }
  return shape_of(Shape(in.element_type(), std::move(out)));
}

// kScatter
InferredShape infer_scatter(const Instruction& inst) {
  const auto ops = inst.operands();
  if (ops.size() < 3 || (ops.size() - 1) % 2) return none();
  const std::size_t n = (ops.size() - 1) / 2;
  // Updates have one dimension per scatter index (the indices' dims
  // minus index_vector_dim) plus one per update_window_dims entry.
  const Shape& indices = ops[n]->shape();
  auto uwd = ints_attr(inst, AttrId::kUpdateWindowDims);
  auto ivd = int_attr(inst, AttrId::kIndexVectorDim);
  if (uwd && ivd && indices.is_array()) {
    const std::int64_t batch = indices.rank() - (*ivd < indices.rank() ? 1 : 0);
    for (std::size_t i = 0; i < n; ++i) {
      const Shape& upd = ops[n + 1 + i]->shape();
      if (upd.is_array() && upd.rank() != batch + static_cast<std::int64_t>(uwd->size()))
        return error("scatter update " + upd.to_string(false) + " should have rank " +
                     std::to_string(batch + static_cast<std::int64_t>(uwd->size())) + " (" +
                     std::to_string(batch) + " scatter dimensions + " + std::to_string(uwd->size()) +
                     " update_window_dims)");
    }
  }
  std::vector<Shape> outs;
  for (std::size_t i = 0; i < n; ++i) outs.push_back(ops[i]->shape());
  return shape_of(tuple_or_single(std::move(outs)));
}

// kAllReduce, kAllToAll, kCollectiveBroadcast
InferredShape infer_same_shape_collective(const Instruction& inst) {
  const auto ops = inst.operands();
  if (ops.empty()) return none();
  std::vector<Shape> outs;
  for (const Instruction* o : ops) outs.push_back(o->shape());
  return shape_of(tuple_or_single(std::move(outs)));
}

// kCollectivePermute
InferredShape infer_collective_permute(const Instruction& inst) {
  const auto ops = inst.operands();
  if (ops.size() != 1) return none();
  return shape_of(ops[0]->shape());
}

// kAllGather, kReduceScatter
InferredShape infer_all_gather(const Instruction& inst) {
  const auto ops = inst.operands();
  auto dims = ints_attr(inst, AttrId::kDimensions);
  auto g = group_size(inst);
  if (!dims || dims->size() != 1 || !g || ops.empty()) return none();
  const std::int64_t d = (*dims)[0];
  std::vector<Shape> outs;
  for (const Instruction* o : ops) {
    const Shape& s = o->shape();
    if (!s.is_array() || !valid_dim(d, s.rank())) return none();
    Ints out = s.dims();
    auto& x = out[static_cast<std::size_t>(d)];
    if (inst.opcode() == Opcode::kAllGather) {
      x *= *g;
    } else {
      if (x % *g)
        return error("reduce-scatter dimension " + std::to_string(d) + " of size " + std::to_string(x) +
                     " is not divisible by the group size " + std::to_string(*g));
      x /= *g;
    }
    outs.emplace_back(s.element_type(), std::move(out));
  }
  return shape_of(tuple_or_single(std::move(outs)));
}

// kCall
InferredShape infer_call(const Instruction& inst) {
  return from_called(inst.called(AttrId::kToApply));
}

// kFusion
InferredShape infer_fusion(const Instruction& inst) {
  return from_called(inst.fused_computation());
}

// kWhile, kOptimizationBarrier, kCopy, kReverse, kReducePrecision: the operand's shape
InferredShape infer_same_as_operand(const Instruction& inst) {
  const auto ops = inst.operands();
  if (ops.size() != 1) return none();
  return shape_of(ops[0]->shape());
}

// One shape rule per opcode (XLA's Handle<Op> style); opcodes without one
// are elementwise (one shared rule) or not checked.
using ShapeRule = InferredShape (*)(const Instruction&);
const std::vector<ShapeRule>& shape_rules() {
  static const std::vector<ShapeRule> table = [] {
    std::vector<ShapeRule> t(static_cast<std::size_t>(opcode_count()) + 1, nullptr);
    t[static_cast<std::size_t>(Opcode::kConvert)] = infer_convert;
    t[static_cast<std::size_t>(Opcode::kStochasticConvert)] = infer_convert;
    t[static_cast<std::size_t>(Opcode::kBitcastConvert)] = infer_same_element_type;
    t[static_cast<std::size_t>(Opcode::kReal)] = infer_same_element_type;
    t[static_cast<std::size_t>(Opcode::kImag)] = infer_same_element_type;
    t[static_cast<std::size_t>(Opcode::kAbs)] = infer_same_element_type;
    t[static_cast<std::size_t>(Opcode::kIsFinite)] = infer_to_pred;
    t[static_cast<std::size_t>(Opcode::kCompare)] = infer_to_pred;
    t[static_cast<std::size_t>(Opcode::kComplex)] = infer_complex;
    t[static_cast<std::size_t>(Opcode::kSelect)] = infer_select;
    t[static_cast<std::size_t>(Opcode::kClamp)] = infer_clamp;
    t[static_cast<std::size_t>(Opcode::kSort)] = infer_sort;
    t[static_cast<std::size_t>(Opcode::kGetTupleElement)] = infer_get_tuple_element;
    t[static_cast<std::size_t>(Opcode::kTuple)] = infer_tuple;
    t[static_cast<std::size_t>(Opcode::kTranspose)] = infer_transpose;
    t[static_cast<std::size_t>(Opcode::kBroadcast)] = infer_broadcast;
    t[static_cast<std::size_t>(Opcode::kReshape)] = infer_reshape;
    t[static_cast<std::size_t>(Opcode::kDot)] = infer_dot;
    t[static_cast<std::size_t>(Opcode::kConvolution)] = infer_convolution;
    t[static_cast<std::size_t>(Opcode::kReduce)] = infer_reduce;
    t[static_cast<std::size_t>(Opcode::kGather)] = infer_gather;
    t[static_cast<std::size_t>(Opcode::kSlice)] = infer_slice;
    t[static_cast<std::size_t>(Opcode::kDynamicSlice)] = infer_dynamic_slice;
    t[static_cast<std::size_t>(Opcode::kDynamicUpdateSlice)] = infer_dynamic_update_slice;
    t[static_cast<std::size_t>(Opcode::kConcatenate)] = infer_concatenate;
    t[static_cast<std::size_t>(Opcode::kPad)] = infer_pad;
    t[static_cast<std::size_t>(Opcode::kScatter)] = infer_scatter;
    t[static_cast<std::size_t>(Opcode::kAllReduce)] = infer_same_shape_collective;
    t[static_cast<std::size_t>(Opcode::kAllToAll)] = infer_same_shape_collective;
    t[static_cast<std::size_t>(Opcode::kCollectiveBroadcast)] = infer_same_shape_collective;
    t[static_cast<std::size_t>(Opcode::kCollectivePermute)] = infer_collective_permute;
    t[static_cast<std::size_t>(Opcode::kAllGather)] = infer_all_gather;
    t[static_cast<std::size_t>(Opcode::kReduceScatter)] = infer_all_gather;
    t[static_cast<std::size_t>(Opcode::kCall)] = infer_call;
    t[static_cast<std::size_t>(Opcode::kFusion)] = infer_fusion;
    t[static_cast<std::size_t>(Opcode::kWhile)] = infer_same_as_operand;
    t[static_cast<std::size_t>(Opcode::kOptimizationBarrier)] = infer_same_as_operand;
    t[static_cast<std::size_t>(Opcode::kCopy)] = infer_same_as_operand;
    t[static_cast<std::size_t>(Opcode::kReverse)] = infer_same_as_operand;
    t[static_cast<std::size_t>(Opcode::kReducePrecision)] = infer_same_as_operand;
    return t;
  }();
  return table;
}

}  // namespace

InferredShape infer_shape(const Instruction& inst) {
  const auto index = static_cast<std::size_t>(inst.opcode());
  if (index < shape_rules().size() && shape_rules()[index] != nullptr) return shape_rules()[index](inst);
  const OpCategory cat = opcode_category(inst.opcode());
  if (cat == OpCategory::kElementwiseUnary || cat == OpCategory::kElementwiseBinary) {
    return elementwise(inst, 0);
  }
  return none();
}

}  // namespace tpusim::hlo
