// Internal to isa/lower: how a dot operand's bytes are read in place.
//
// A dot operand's dims fall into three groups: batch, free (M of the lhs,
// N of the rhs) and contracting (K). When, leaving out dims of size 1, they
// are ordered [B1..., X..., B2..., Y...] (X and Y the free and contracting
// groups, each contiguous, in either order; B1 and B2 batch dims in any
// order), every batch element's operand is one rectangular tile of the 2-D
// view [|B1|·|X|, |B2|·|Y|] of the same row-major bytes: rows b1·|X| ..
// b1·|X|+|X|, cols b2·|Y| .. b2·|Y|+|Y|. Batch-leading operands are the case
// B2 = {}; the decode step's KV cache bf16[8,2048,32,128] with batch dims
// {0,2} is [B1=b, X=s, B2=h, Y=d], seen as [8·2048, 32·128].
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "isa/lower/context.h"

namespace tpusim::lower {

struct OperandLayout {
  std::int64_t rows = 1, cols = 1;  // the view [|B1|·|X|, |B2|·|Y|]
  // The tile of one batch element is [K, M] (lhs) / [N, K] (rhs), the
  // transpose of the dot's canonical [M, K] / [K, N].
  bool transposed = false;
  std::vector<BatchDim> batch;  // one per batch dim, in the dot's batch order
  std::int64_t side_by_side = 1;  // |B2|: batch elements sharing one view row
  // The contracting dims (indices into the dot's contracting-dim lists) in
  // the order they are flattened here: both operands must agree.
  std::vector<std::size_t> k_order;
};

// `dims` the operand's shape; `batch` and `contracting` its dims in the
// dot's pairing order (lhs_batch_dims[i] pairs with rhs_batch_dims[i]); the
// remaining dims are free. Prefers the canonical orientation ([M, K] for
// the lhs, [K, N] for the rhs) when both fit. nullopt: no such view.
std::optional<OperandLayout> operand_layout(const std::vector<std::int64_t>& dims,
                                            const std::vector<std::int64_t>& batch,
                                            const std::vector<std::int64_t>& contracting, bool lhs);

}  // namespace tpusim::lower
