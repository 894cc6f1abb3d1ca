// HLO opcodes: ONE table (X-macro) from which the enum, the text names, the
// arity and the category are generated (STYLE.md, practice 1). Parser,
// printer, verifier and cost analysis all read this table.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tpusim::hlo {

enum class OpCategory : std::uint8_t {
  kElementwiseUnary,
  kElementwiseBinary,
  kElementwiseTernary,  // select, clamp
  kParameter,
  kConstant,
  kTuple,          // tuple, get-tuple-element
  kDataMovement,   // reshape, transpose, slice, gather, … (no arithmetic)
  kContraction,    // dot, convolution
  kReduction,      // reduce, reduce-window, select-and-scatter, sort, map
  kCollective,     // all-reduce, all-gather, … and their -start forms
  kAsyncDone,      // the -done / -update half of an async pair
  kControlFlow,    // while, conditional, call, async-start
  kFusion,
  kCustomCall,
  kSideEffect,     // send/recv/infeed/outfeed/tokens/rng state
  kOther,
  kUnknown,        // opcode text not in this table: kept and flagged
};

// X(enumerator, text, arity (-1 = variadic), category, transcendental)
#define TPUSIM_HLO_OPCODES(X)                                                     \
  X(kAbs, "abs", 1, kElementwiseUnary, false)                                     \
  X(kAdd, "add", 2, kElementwiseBinary, false)                                    \
  X(kAddDependency, "add-dependency", 2, kSideEffect, false)                      \
  X(kAfterAll, "after-all", -1, kSideEffect, false)                               \
  X(kAllGather, "all-gather", -1, kCollective, false)                             \
  X(kAllGatherDone, "all-gather-done", 1, kAsyncDone, false)                      \
  X(kAllGatherStart, "all-gather-start", -1, kCollective, false)                  \
  X(kAllReduce, "all-reduce", -1, kCollective, false)                             \
  X(kAllReduceDone, "all-reduce-done", 1, kAsyncDone, false)                      \
  X(kAllReduceStart, "all-reduce-start", -1, kCollective, false)                  \
  X(kAllToAll, "all-to-all", -1, kCollective, false)                              \
  X(kAnd, "and", 2, kElementwiseBinary, false)                                    \
  X(kAsyncDone, "async-done", 1, kAsyncDone, false)                               \
  X(kAsyncStart, "async-start", -1, kControlFlow, false)                          \
  X(kAsyncUpdate, "async-update", 1, kAsyncDone, false)                           \
  X(kAtan2, "atan2", 2, kElementwiseBinary, true)                                 \
  X(kBatchNormGrad, "batch-norm-grad", 5, kOther, false)                          \
  X(kBatchNormInference, "batch-norm-inference", 5, kOther, false)                \
  X(kBatchNormTraining, "batch-norm-training", 3, kOther, false)                  \
  X(kBitcast, "bitcast", 1, kDataMovement, false)                                 \
  X(kBitcastConvert, "bitcast-convert", 1, kElementwiseUnary, false)              \
  X(kBroadcast, "broadcast", 1, kDataMovement, false)                             \
  X(kCall, "call", -1, kControlFlow, false)                                       \
  X(kCbrt, "cbrt", 1, kElementwiseUnary, true)                                    \
  X(kCeil, "ceil", 1, kElementwiseUnary, false)                                   \
  X(kCholesky, "cholesky", 1, kOther, false)                                      \
  X(kClamp, "clamp", 3, kElementwiseTernary, false)                               \
  X(kClz, "count-leading-zeros", 1, kElementwiseUnary, false)                     \
  X(kCollectiveBroadcast, "collective-broadcast", -1, kCollective, false)         \
  X(kCollectivePermute, "collective-permute", -1, kCollective, false)             \
  X(kCollectivePermuteDone, "collective-permute-done", 1, kAsyncDone, false)      \
  X(kCollectivePermuteStart, "collective-permute-start", -1, kCollective, false)  \
  X(kCompare, "compare", 2, kElementwiseBinary, false)                            \
  X(kComplex, "complex", 2, kElementwiseBinary, false)                            \
  X(kConcatenate, "concatenate", -1, kDataMovement, false)                        \
  X(kConditional, "conditional", -1, kControlFlow, false)                         \
  X(kConstant, "constant", 0, kConstant, false)                                   \
  X(kConvert, "convert", 1, kElementwiseUnary, false)                             \
  X(kConvolution, "convolution", 2, kContraction, false)                          \
  X(kCopy, "copy", 1, kDataMovement, false)                                       \
  X(kCopyDone, "copy-done", 1, kAsyncDone, false)                                 \
  X(kCopyStart, "copy-start", 1, kDataMovement, false)                            \
  X(kCos, "cosine", 1, kElementwiseUnary, true)                                   \
  X(kCustomCall, "custom-call", -1, kCustomCall, false)                           \
  X(kDivide, "divide", 2, kElementwiseBinary, false)                              \
  X(kDomain, "domain", 1, kOther, false)                                          \
  X(kDot, "dot", -1, kContraction, false)                                         \
  X(kDynamicReshape, "dynamic-reshape", -1, kDataMovement, false)                 \
  X(kDynamicSlice, "dynamic-slice", -1, kDataMovement, false)                     \
  X(kDynamicUpdateSlice, "dynamic-update-slice", -1, kDataMovement, false)        \
  X(kErf, "erf", 1, kElementwiseUnary, true)                                      \
  X(kExp, "exponential", 1, kElementwiseUnary, true)                              \
  X(kExpm1, "exponential-minus-one", 1, kElementwiseUnary, true)                  \
  X(kFft, "fft", 1, kOther, false)                                                \
  X(kFloor, "floor", 1, kElementwiseUnary, false)                                 \
  X(kFusion, "fusion", -1, kFusion, false)                                        \
  X(kGather, "gather", 2, kDataMovement, false)                                   \
  X(kGetDimensionSize, "get-dimension-size", 1, kOther, false)                    \
  X(kGetTupleElement, "get-tuple-element", 1, kTuple, false)                      \
  X(kImag, "imag", 1, kElementwiseUnary, false)                                   \
  X(kInfeed, "infeed", 1, kSideEffect, false)                                     \
  X(kIota, "iota", 0, kOther, false)                                              \
  X(kIsFinite, "is-finite", 1, kElementwiseUnary, false)                          \
  X(kLog, "log", 1, kElementwiseUnary, true)                                      \
  X(kLog1p, "log-plus-one", 1, kElementwiseUnary, true)                           \
  X(kLogistic, "logistic", 1, kElementwiseUnary, true)                            \
  X(kMap, "map", -1, kReduction, false)                                           \
  X(kMaximum, "maximum", 2, kElementwiseBinary, false)                            \
  X(kMinimum, "minimum", 2, kElementwiseBinary, false)                            \
  X(kMultiply, "multiply", 2, kElementwiseBinary, false)                          \
  X(kNegate, "negate", 1, kElementwiseUnary, false)                               \
  X(kNot, "not", 1, kElementwiseUnary, false)                                     \
  X(kOptimizationBarrier, "opt-barrier", 1, kOther, false)                        \
  X(kOr, "or", 2, kElementwiseBinary, false)                                      \
  X(kOutfeed, "outfeed", 2, kSideEffect, false)                                   \
  X(kPad, "pad", 2, kDataMovement, false)                                         \
  X(kParameter, "parameter", 0, kParameter, false)                                \
  X(kPartitionId, "partition-id", 0, kOther, false)                               \
  X(kPopulationCount, "popcnt", 1, kElementwiseUnary, false)                      \
  X(kPower, "power", 2, kElementwiseBinary, true)                                 \
  X(kRaggedAllToAll, "ragged-all-to-all", 6, kCollective, false)                  \
  X(kRaggedDot, "ragged-dot", 3, kContraction, false)                             \
  X(kReal, "real", 1, kElementwiseUnary, false)                                   \
  X(kRecv, "recv", 1, kSideEffect, false)                                         \
  X(kRecvDone, "recv-done", 1, kSideEffect, false)                                \
  X(kReduce, "reduce", -1, kReduction, false)                                     \
  X(kReducePrecision, "reduce-precision", 1, kElementwiseUnary, false)            \
  X(kReduceScatter, "reduce-scatter", -1, kCollective, false)                     \
  X(kReduceWindow, "reduce-window", -1, kReduction, false)                        \
  X(kRemainder, "remainder", 2, kElementwiseBinary, false)                        \
  X(kReplicaId, "replica-id", 0, kOther, false)                                   \
  X(kReshape, "reshape", 1, kDataMovement, false)                                 \
  X(kReverse, "reverse", 1, kDataMovement, false)                                 \
  X(kRng, "rng", -1, kOther, false)                                               \
  X(kRngBitGenerator, "rng-bit-generator", 1, kOther, false)                      \
  X(kRngGetAndUpdateState, "rng-get-and-update-state", 0, kSideEffect, false)     \
  X(kRoundNearestAfz, "round-nearest-afz", 1, kElementwiseUnary, false)           \
  X(kRoundNearestEven, "round-nearest-even", 1, kElementwiseUnary, false)         \
  X(kRsqrt, "rsqrt", 1, kElementwiseUnary, true)                                  \
  X(kScaledDot, "scaled-dot", -1, kContraction, false)                            \
  X(kScatter, "scatter", -1, kDataMovement, false)                                \
  X(kSelect, "select", 3, kElementwiseTernary, false)                             \
  X(kSelectAndScatter, "select-and-scatter", 3, kReduction, false)                \
  X(kSend, "send", 2, kSideEffect, false)                                         \
  X(kSendDone, "send-done", 1, kSideEffect, false)                                \
  X(kSetDimensionSize, "set-dimension-size", 2, kOther, false)                    \
  X(kShiftLeft, "shift-left", 2, kElementwiseBinary, false)                       \
  X(kShiftRightArithmetic, "shift-right-arithmetic", 2, kElementwiseBinary, false) \
  X(kShiftRightLogical, "shift-right-logical", 2, kElementwiseBinary, false)      \
  X(kSign, "sign", 1, kElementwiseUnary, false)                                   \
  X(kSin, "sine", 1, kElementwiseUnary, true)                                     \
  X(kSlice, "slice", 1, kDataMovement, false)                                     \
  X(kSort, "sort", -1, kReduction, false)                                         \
  X(kSqrt, "sqrt", 1, kElementwiseUnary, true)                                    \
  X(kStochasticConvert, "stochastic-convert", 2, kElementwiseBinary, false)       \
  X(kSubtract, "subtract", 2, kElementwiseBinary, false)                          \
  X(kTan, "tan", 1, kElementwiseUnary, true)                                      \
  X(kTanh, "tanh", 1, kElementwiseUnary, true)                                    \
  X(kTopK, "topk", 1, kOther, false)                                              \
  X(kTranspose, "transpose", 1, kDataMovement, false)                             \
  X(kTriangularSolve, "triangular-solve", 2, kOther, false)                       \
  X(kTuple, "tuple", -1, kTuple, false)                                           \
  X(kWhile, "while", 1, kControlFlow, false)                                      \
  X(kXor, "xor", 2, kElementwiseBinary, false)

enum class Opcode : std::uint8_t {
#define TPUSIM_X(e, name, arity, cat, trans) e,
  TPUSIM_HLO_OPCODES(TPUSIM_X)
#undef TPUSIM_X
      kUnknown,  // text not in the table; Instruction::opcode_text() has it
};

std::string_view opcode_name(Opcode op);  // "unknown" for kUnknown
int opcode_arity(Opcode op);              // -1: variadic
OpCategory opcode_category(Opcode op);
// XLA's HloCostAnalysis counts these as transcendentals, not FLOPs.
bool opcode_is_transcendental(Opcode op);
bool opcode_is_elementwise(Opcode op);
std::optional<Opcode> opcode_from_name(std::string_view name);
int opcode_count();
std::string_view op_category_name(OpCategory c);

}  // namespace tpusim::hlo
