#include "isa/lower/dot_layout.h"

#include <algorithm>

namespace tpusim::lower {
namespace {

enum class Role { kBatch, kFree, kContracting };

// Tries the order [B1..., X..., B2..., Y...] over the non-unit dims.
std::optional<OperandLayout> try_layout(const std::vector<std::int64_t>& dims, const std::vector<Role>& role,
                                        const std::vector<std::int64_t>& batch, Role x, Role y) {
  std::vector<std::size_t> live;  // positions of the dims of size > 1
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] > 1) live.push_back(i);
  }
  std::size_t p = 0;
  const auto run = [&](Role r) {
    const std::size_t from = p;
    while (p < live.size() && role[live[p]] == r) ++p;
    return std::pair{from, p};
  };
  const auto b1 = run(Role::kBatch);
  const auto xr = run(x);
  const auto b2 = run(Role::kBatch);
  const auto yr = run(y);
  if (p != live.size()) return std::nullopt;  // a group is split, or a batch dim trails Y
  // Every dim of X (Y) must be in its run: X's dims are contiguous.
  std::int64_t xs = 1, ys = 1, b1s = 1, b2s = 1;
  for (std::size_t i = xr.first; i < xr.second; ++i) xs *= dims[live[i]];
  for (std::size_t i = yr.first; i < yr.second; ++i) ys *= dims[live[i]];
  for (std::size_t i = b1.first; i < b1.second; ++i) b1s *= dims[live[i]];
  for (std::size_t i = b2.first; i < b2.second; ++i) b2s *= dims[live[i]];
  OperandLayout out;
  out.rows = b1s * xs;
  out.cols = b2s * ys;
  // Strides of each batch dim: row-major within B1 (times |X| rows) and
  // within B2 (times |Y| cols).
  for (const std::int64_t d : batch) {
    BatchDim bd;
    bd.size = dims[static_cast<std::size_t>(d)];
    const auto pos = static_cast<std::size_t>(std::find(live.begin(), live.end(), static_cast<std::size_t>(d)) - live.begin());
    if (pos < live.size()) {
      std::int64_t stride = 1;
      if (pos < b1.second) {
        for (std::size_t i = pos + 1; i < b1.second; ++i) stride *= dims[live[i]];
        bd.row_stride = stride * xs;
      } else {
        for (std::size_t i = pos + 1; i < b2.second; ++i) stride *= dims[live[i]];
        bd.col_stride = stride * ys;
      }
    }
    out.batch.push_back(bd);
  }
  // Batch elements side by side in one view row: when B2 is exactly the
  // trailing (non-unit) batch dims of the dot's order, elements
  // g·|B2| .. g·|B2|+|B2|-1 share their rows.
  std::size_t trailing = 0;
  for (std::size_t i = batch.size(); i > 0; --i) {
    const auto d = static_cast<std::size_t>(batch[i - 1]);
    if (dims[d] <= 1) continue;
    const auto pos = static_cast<std::size_t>(std::find(live.begin(), live.end(), d) - live.begin());
    if (pos < b2.first || pos >= b2.second) break;
    ++trailing;
  }
  out.side_by_side = trailing == b2.second - b2.first ? b2s : 1;
  out.transposed = x != Role::kFree;  // lhs [K, M] or rhs [N, K] (caller flips for the rhs)
  return out;
}

}  // namespace

std::optional<OperandLayout> operand_layout(const std::vector<std::int64_t>& dims,
                                            const std::vector<std::int64_t>& batch,
                                            const std::vector<std::int64_t>& contracting, bool lhs) {
  std::vector<Role> role(dims.size(), Role::kFree);
  for (const auto d : batch) {
    if (d < 0 || static_cast<std::size_t>(d) >= dims.size()) return std::nullopt;
    role[static_cast<std::size_t>(d)] = Role::kBatch;
  }
  for (const auto d : contracting) {
    if (d < 0 || static_cast<std::size_t>(d) >= dims.size()) return std::nullopt;
    role[static_cast<std::size_t>(d)] = Role::kContracting;
  }
  // The canonical orientation first: lhs [M, K], rhs [K, N].
  const Role first_x = lhs ? Role::kFree : Role::kContracting;
  const Role other = first_x == Role::kFree ? Role::kContracting : Role::kFree;
  std::optional<OperandLayout> l = try_layout(dims, role, batch, first_x, other);
  bool transposed = false;
  if (!l) {
    l = try_layout(dims, role, batch, other, first_x);
    transposed = true;
  }
  if (!l) return std::nullopt;
  l->transposed = transposed;
  // The order the contracting dims are flattened in (by position).
  for (std::size_t i = 0; i < contracting.size(); ++i) {
    if (dims[static_cast<std::size_t>(contracting[i])] > 1) l->k_order.push_back(i);
  }
  std::sort(l->k_order.begin(), l->k_order.end(),
            [&](std::size_t a, std::size_t b) { return contracting[a] < contracting[b]; });
  return l;
}

}  // namespace tpusim::lower
