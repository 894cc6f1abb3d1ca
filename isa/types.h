// ISA vocabulary: memory spaces, dtypes and the operation lists of the vector,
// transcendental and cross-lane units. Each list is one X-macro table
// (STYLE.md practice 1); names, parsing and docs are generated from it.
#pragma once

#include "common/collective.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "common/config.h"

namespace tpusim::isa {

// X(enumerator, text)
#define TPUSIM_ISA_MEMSPACES(X) \
  X(kHbm, "hbm")                \
  X(kVmem, "vmem")              \
  X(kSmem, "smem")              \
  X(kHost, "host")              \
  X(kVreg, "vreg")

// X(enumerator, text, bits, MxuRates member or none)
#define TPUSIM_ISA_DTYPES(X)          \
  X(kBf16, "bf16", 16, bf16)          \
  X(kF32, "f32", 32, f32)             \
  X(kF16, "f16", 16, none)            \
  X(kInt8, "s8", 8, int8)             \
  X(kFp8, "f8e4m3", 8, fp8)           \
  X(kFp8E5m2, "f8e5m2", 8, fp8)       \
  X(kInt4, "s4", 4, int4)             \
  X(kInt32, "s32", 32, none)          \
  X(kPred, "pred", 8, none)

// VPU latency classes map onto VpuConfig::latency members.
// X(enumerator, text, VpuLatency member)
#define TPUSIM_ISA_LATENCY_CLASSES(X) \
  X(kAlu, "alu", alu)                 \
  X(kMul, "mul", mul)                 \
  X(kDiv, "div", div)                 \
  X(kConvert, "convert", convert)     \
  X(kCompare, "compare", compare)

// VPU elementwise operations. X(enumerator, text, latency class, inputs,
// arith, doc). `arith`: float arithmetic, which a VPU without a bf16 ALU
// (core.vpu.bf16_alu: false) computes in f32 only; moves, bitwise ops,
// sign ops, compares, select and convert work on bf16 tiles everywhere.
#define TPUSIM_ISA_VPU_OPS(X)                                                              \
  X(kAdd, "add", kAlu, 2, true, "a + b")                                                   \
  X(kSub, "sub", kAlu, 2, true, "a - b")                                                   \
  X(kMul, "mul", kMul, 2, true, "a * b")                                                   \
  X(kFma, "fma", kMul, 3, true, "a * b + c (one rounding)")                                \
  X(kDiv, "div", kDiv, 2, true, "a / b (iterative)")                                       \
  X(kMax, "max", kAlu, 2, true, "max(a, b)")                                               \
  X(kMin, "min", kAlu, 2, true, "min(a, b)")                                               \
  X(kAbs, "abs", kAlu, 1, false, "|a|")                                                    \
  X(kNeg, "neg", kAlu, 1, false, "-a")                                                     \
  X(kAnd, "and", kAlu, 2, false, "bitwise a & b")                                          \
  X(kOr, "or", kAlu, 2, false, "bitwise a | b")                                            \
  X(kXor, "xor", kAlu, 2, false, "bitwise a ^ b")                                          \
  X(kCopy, "copy", kAlu, 1, false, "a")                                                    \
  X(kCmpEq, "cmp_eq", kCompare, 2, false, "a == b (pred)")                                 \
  X(kCmpNe, "cmp_ne", kCompare, 2, false, "a != b (pred)")                                 \
  X(kCmpLt, "cmp_lt", kCompare, 2, false, "a < b (pred)")                                  \
  X(kCmpLe, "cmp_le", kCompare, 2, false, "a <= b (pred)")                                 \
  X(kCmpGt, "cmp_gt", kCompare, 2, false, "a > b (pred)")                                  \
  X(kCmpGe, "cmp_ge", kCompare, 2, false, "a >= b (pred)")                                 \
  X(kSelect, "select", kCompare, 3, false, "a ? b : c (a is pred)")                        \
  X(kConvert, "convert", kConvert, 1, false, "a converted to the destination dtype (RNE)")

// Reductions (VPU across sublanes/vregs, XLU across lanes). X(enumerator, text)
#define TPUSIM_ISA_REDUCE_OPS(X) \
  X(kSum, "sum")                 \
  X(kMax, "max")                 \
  X(kMin, "min")

// Transcendental unit. X(enumerator, text, doc)
#define TPUSIM_ISA_EUP_OPS(X)                      \
  X(kExp, "exp", "e^a")                            \
  X(kLog, "log", "natural log of a")               \
  X(kRsqrt, "rsqrt", "1 / sqrt(a)")                \
  X(kSqrt, "sqrt", "sqrt(a)")                      \
  X(kTanh, "tanh", "tanh(a)")                      \
  X(kRecip, "recip", "1 / a (approximate)")        \
  X(kLogistic, "logistic", "1 / (1 + e^-a)")       \
  X(kErf, "erf", "error function of a")

// Collective kinds (placeholders the multi-chip model fills in).
// X(enumerator, text, doc)
// The collective kinds are the project's one vocabulary (common/collective.h).
#define TPUSIM_ISA_COLLECTIVES(X) TPUSIM_COLLECTIVE_KINDS(X)

#define TPUSIM_ISA_ENUM_FIRST(e, ...) e,

enum class MemSpace : std::uint8_t { TPUSIM_ISA_MEMSPACES(TPUSIM_ISA_ENUM_FIRST) };
enum class DType : std::uint8_t { TPUSIM_ISA_DTYPES(TPUSIM_ISA_ENUM_FIRST) };
enum class LatencyClass : std::uint8_t { TPUSIM_ISA_LATENCY_CLASSES(TPUSIM_ISA_ENUM_FIRST) };
enum class VpuOp : std::uint8_t { TPUSIM_ISA_VPU_OPS(TPUSIM_ISA_ENUM_FIRST) };
enum class ReduceOp : std::uint8_t { TPUSIM_ISA_REDUCE_OPS(TPUSIM_ISA_ENUM_FIRST) };
enum class EupOp : std::uint8_t { TPUSIM_ISA_EUP_OPS(TPUSIM_ISA_ENUM_FIRST) };
using tpusim::CollectiveKind;

std::string_view name(MemSpace v);
std::string_view name(DType v);
std::string_view name(LatencyClass v);
std::string_view name(VpuOp v);
std::string_view name(ReduceOp v);
std::string_view name(EupOp v);
std::string_view name(CollectiveKind v);

// Parsers from the text names above; nullopt when unknown.
template <typename E>
std::optional<E> parse_enum(std::string_view text);
template <> std::optional<MemSpace> parse_enum<MemSpace>(std::string_view text);
template <> std::optional<DType> parse_enum<DType>(std::string_view text);
template <> std::optional<LatencyClass> parse_enum<LatencyClass>(std::string_view text);
template <> std::optional<VpuOp> parse_enum<VpuOp>(std::string_view text);
template <> std::optional<ReduceOp> parse_enum<ReduceOp>(std::string_view text);
template <> std::optional<EupOp> parse_enum<EupOp>(std::string_view text);
template <> std::optional<CollectiveKind> parse_enum<CollectiveKind>(std::string_view text);

// All text names of an enum, in table order (for error messages and docs).
std::span<const std::string_view> all_names(MemSpace);
std::span<const std::string_view> all_names(DType);
std::span<const std::string_view> all_names(LatencyClass);
std::span<const std::string_view> all_names(VpuOp);
std::span<const std::string_view> all_names(ReduceOp);
std::span<const std::string_view> all_names(EupOp);
std::span<const std::string_view> all_names(CollectiveKind);

std::int64_t dtype_bits(DType d);
// Bytes of `elements` values of `d`, rounded up to whole bytes.
std::int64_t dtype_bytes(DType d, std::int64_t elements);

LatencyClass latency_class(VpuOp op);
int vpu_op_inputs(VpuOp op);
// Float arithmetic (the table's `arith` column).
bool vpu_op_is_arith(VpuOp op);
// A VPU op of dtype `d` the vector unit cannot compute: float arithmetic
// on bf16 where core.vpu.bf16_alu is false (the compiler converts to f32).
bool vpu_needs_f32(const VpuConfig& vpu, VpuOp op, DType d);
// The EUP likewise: transcendentals of bf16 where the VPU has no bf16 ALU.
bool eup_needs_f32(const VpuConfig& vpu, DType d);
std::string_view vpu_op_doc(VpuOp op);
std::string_view eup_op_doc(EupOp op);
std::string_view collective_doc(CollectiveKind k);

// The MXU's MAC-rate multiplier for input dtype `d` (0 = unsupported).
double mxu_rate(const MxuRates& rates, DType d);
// The VPU latency (cycles) of a class, from the config.
std::int64_t vpu_latency(const VpuLatency& lat, LatencyClass c);

}  // namespace tpusim::isa
