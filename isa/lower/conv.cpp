#include "isa/lower/conv.h"

#include <algorithm>

#include "isa/hlo/attribute_values.h"

namespace tpusim::lower {
namespace {

std::int64_t at_least_1(std::int64_t v) { return std::max<std::int64_t>(1, v); }

std::int64_t dim_or_1(const hlo::Shape& s, std::int64_t d) {
  return d >= 0 && d < s.rank() ? at_least_1(s.dim(static_cast<int>(d))) : 1;
}

}  // namespace

ConvGemm conv_gemm(const hlo::Instruction& conv) {
  ConvGemm g;
  if (conv.operand_count() < 2 || !conv.shape().is_array()) return g;
  const hlo::Shape& kernel = conv.operand(1)->shape();
  const hlo::Shape& out = conv.shape();
  const auto labels = hlo::dim_labels_attr(conv);
  if (!labels || !kernel.is_array()) return g;
  g.groups = at_least_1(hlo::int_attr(conv, hlo::AttrId::kFeatureGroupCount).value_or(1));
  for (const std::int64_t d : labels->kernel_spatial) g.window *= dim_or_1(kernel, d);
  const std::int64_t out_features = dim_or_1(out, labels->output_feature);
  g.m = at_least_1(out.element_count()) / out_features;
  g.k = g.window * dim_or_1(kernel, labels->kernel_input_feature);
  g.n = at_least_1(out_features / g.groups);
  return g;
}

bool is_depthwise(const hlo::Instruction& conv) {
  if (conv.opcode() != hlo::Opcode::kConvolution) return false;
  const ConvGemm g = conv_gemm(conv);
  return g.groups > 1 && g.k == g.window;
}

}  // namespace tpusim::lower
