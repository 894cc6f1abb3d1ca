#include "isa/types.h"

#include <array>

namespace tpusim::isa {
namespace {

#define TPUSIM_ISA_TEXT_SECOND(e, text, ...) std::string_view{text},

constexpr std::array kMemSpaceNames{TPUSIM_ISA_MEMSPACES(TPUSIM_ISA_TEXT_SECOND)};
constexpr std::array kDTypeNames{TPUSIM_ISA_DTYPES(TPUSIM_ISA_TEXT_SECOND)};
constexpr std::array kLatencyNames{TPUSIM_ISA_LATENCY_CLASSES(TPUSIM_ISA_TEXT_SECOND)};
constexpr std::array kVpuOpNames{TPUSIM_ISA_VPU_OPS(TPUSIM_ISA_TEXT_SECOND)};
constexpr std::array kReduceNames{TPUSIM_ISA_REDUCE_OPS(TPUSIM_ISA_TEXT_SECOND)};
constexpr std::array kEupNames{TPUSIM_ISA_EUP_OPS(TPUSIM_ISA_TEXT_SECOND)};
constexpr std::array kCollectiveNames{TPUSIM_ISA_COLLECTIVES(TPUSIM_ISA_TEXT_SECOND)};

#undef TPUSIM_ISA_TEXT_SECOND

template <typename E, std::size_t N>
std::optional<E> find_name(const std::array<std::string_view, N>& names, std::string_view text) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == text) return static_cast<E>(i);
  }
  return std::nullopt;
}

template <typename E, std::size_t N>
std::string_view name_at(const std::array<std::string_view, N>& names, E v) {
  const auto i = static_cast<std::size_t>(v);
  return i < N ? names[i] : std::string_view{"?"};
}

// MxuRates has no member for dtypes the MXU never takes as input.
struct NoRate {
  double none = 0.0;
};

}  // namespace

std::string_view name(MemSpace v) { return name_at(kMemSpaceNames, v); }
std::string_view name(DType v) { return name_at(kDTypeNames, v); }
std::string_view name(LatencyClass v) { return name_at(kLatencyNames, v); }
std::string_view name(VpuOp v) { return name_at(kVpuOpNames, v); }
std::string_view name(ReduceOp v) { return name_at(kReduceNames, v); }
std::string_view name(EupOp v) { return name_at(kEupNames, v); }
std::string_view name(CollectiveKind v) { return name_at(kCollectiveNames, v); }

template <> std::optional<MemSpace> parse_enum<MemSpace>(std::string_view t) { return find_name<MemSpace>(kMemSpaceNames, t); }
template <> std::optional<DType> parse_enum<DType>(std::string_view t) { return find_name<DType>(kDTypeNames, t); }
template <> std::optional<LatencyClass> parse_enum<LatencyClass>(std::string_view t) { return find_name<LatencyClass>(kLatencyNames, t); }
template <> std::optional<VpuOp> parse_enum<VpuOp>(std::string_view t) { return find_name<VpuOp>(kVpuOpNames, t); }
template <> std::optional<ReduceOp> parse_enum<ReduceOp>(std::string_view t) { return find_name<ReduceOp>(kReduceNames, t); }
template <> std::optional<EupOp> parse_enum<EupOp>(std::string_view t) { return find_name<EupOp>(kEupNames, t); }
template <> std::optional<CollectiveKind> parse_enum<CollectiveKind>(std::string_view t) { return find_name<CollectiveKind>(kCollectiveNames, t); }

std::span<const std::string_view> all_names(MemSpace) { return kMemSpaceNames; }
std::span<const std::string_view> all_names(DType) { return kDTypeNames; }
std::span<const std::string_view> all_names(LatencyClass) { return kLatencyNames; }
std::span<const std::string_view> all_names(VpuOp) { return kVpuOpNames; }
std::span<const std::string_view> all_names(ReduceOp) { return kReduceNames; }
std::span<const std::string_view> all_names(EupOp) { return kEupNames; }
std::span<const std::string_view> all_names(CollectiveKind) { return kCollectiveNames; }

std::int64_t dtype_bits(DType d) {
  switch (d) {
#define TPUSIM_X(e, text, bits, rate) \
  case DType::e: return bits;
    TPUSIM_ISA_DTYPES(TPUSIM_X)
#undef TPUSIM_X
  }
  return 0;
}

std::int64_t dtype_bytes(DType d, std::int64_t elements) {
  return (elements * dtype_bits(d) + 7) / 8;
}

LatencyClass latency_class(VpuOp op) {
  switch (op) {
#define TPUSIM_X(e, text, cls, inputs, arith, doc) \
  case VpuOp::e: return LatencyClass::cls;
    TPUSIM_ISA_VPU_OPS(TPUSIM_X)
#undef TPUSIM_X
  }
  return LatencyClass::kAlu;
}

int vpu_op_inputs(VpuOp op) {
  switch (op) {
#define TPUSIM_X(e, text, cls, inputs, arith, doc) \
  case VpuOp::e: return inputs;
    TPUSIM_ISA_VPU_OPS(TPUSIM_X)
#undef TPUSIM_X
  }
  return 0;
}

bool vpu_op_is_arith(VpuOp op) {
  switch (op) {
#define TPUSIM_X(e, text, cls, inputs, arith, doc) \
  case VpuOp::e: return arith;
    TPUSIM_ISA_VPU_OPS(TPUSIM_X)
#undef TPUSIM_X
  }
  return false;
}

bool vpu_needs_f32(const VpuConfig& vpu, VpuOp op, DType d) {
  return d == DType::kBf16 && !vpu.bf16_alu && vpu_op_is_arith(op);
}

bool eup_needs_f32(const VpuConfig& vpu, DType d) { return d == DType::kBf16 && !vpu.bf16_alu; }

std::string_view vpu_op_doc(VpuOp op) {
  switch (op) {
#define TPUSIM_X(e, text, cls, inputs, arith, doc) \
  case VpuOp::e: return doc;
    TPUSIM_ISA_VPU_OPS(TPUSIM_X)
#undef TPUSIM_X
  }
  return "";
}

std::string_view eup_op_doc(EupOp op) {
  switch (op) {
#define TPUSIM_X(e, text, doc) \
  case EupOp::e: return doc;
    TPUSIM_ISA_EUP_OPS(TPUSIM_X)
#undef TPUSIM_X
  }
  return "";
}

std::string_view collective_doc(CollectiveKind k) {
  switch (k) {
#define TPUSIM_X(e, text, doc, ...) \
  case CollectiveKind::e: return doc;
    TPUSIM_ISA_COLLECTIVES(TPUSIM_X)
#undef TPUSIM_X
  }
  return "";
}

double mxu_rate(const MxuRates& rates, DType d) {
  // One view with both the config's members and `none`, so the table's
  // fourth column can name either.
  struct RateView : MxuRates, NoRate {};
  const RateView view{rates, NoRate{}};
  switch (d) {
#define TPUSIM_X(e, text, bits, member) \
  case DType::e: return view.member;
    TPUSIM_ISA_DTYPES(TPUSIM_X)
#undef TPUSIM_X
  }
  return 0.0;
}

std::int64_t vpu_latency(const VpuLatency& lat, LatencyClass c) {
  switch (c) {
#define TPUSIM_X(e, text, member) \
  case LatencyClass::e: return lat.member;
    TPUSIM_ISA_LATENCY_CLASSES(TPUSIM_X)
#undef TPUSIM_X
  }
  return 0;
}

}  // namespace tpusim::isa
