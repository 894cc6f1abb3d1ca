// Instruction and module attributes (`name=value` after the operands).
// Known attributes are listed ONCE in a table {name, kind}; the kind says how
// the parser validates the value (and how accessors decode it). Unknown
// attributes are kept raw, never an error.
#pragma once

#include <cstdint>
#include <string_view>

namespace tpusim::hlo {

enum class AttrKind : std::uint8_t {
  kInt,              // 3, -1
  kFloat,            // 0.001, 1e-5
  kBool,             // true | false
  kString,           // "…"
  kEnum,             // a bare word: GT, kLoop, rng_default, FFT
  kIntList,          // {1,2,3} or {}
  kIntListList,      // {{0,1},{1,2}}
  kComputation,      // %name or name
  kComputationList,  // {%a, %b}
  kComputationOrList,  // calls=x or calls={x, y}
  kInstructionList,  // control-predecessors={%a, %b}
  kWindow,           // {size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=… rhs_dilate=… rhs_reversal=…}
  kDimLabels,        // b01f_01io->b01f
  kSliceRanges,      // {[0:8:1], [0:4]}
  kPadding,          // 2_4_1x3_5_1
  kReplicaGroups,    // {{0,1},{2,3}} | {} | [2,4]<=[8] | [2,4]<=[4,2]T(1,0)
  kSharding,         // {replicated} | {devices=[2,1]0,1} | {{…}, {…}} …
  kShape,            // outfeed_shape=(s32[3]{0})
  kShapeList,        // operand_layout_constraints={f32[3,3], …}
  kLiteral,          // literal=s32[] 1
  kBraced,           // any balanced {…}: metadata, frontend_attributes, …
  kStringOrBraced,   // backend_config="…" or backend_config={…}
  kComputationLayout,  // entry_computation_layout={(shapes)->shape}
  kRaw,              // unknown: one balanced value, kept verbatim
};

// X(c++ identifier, text name, kind)
#define TPUSIM_HLO_ATTRIBUTES(X)                                              \
  X(kAlgorithm, "algorithm", kEnum)                                           \
  X(kApiVersion, "api_version", kEnum)                                        \
  X(kAsyncExecutionThread, "async_execution_thread", kString)                 \
  X(kBackendConfig, "backend_config", kStringOrBraced)                        \
  X(kBatchGroupCount, "batch_group_count", kInt)                              \
  X(kBody, "body", kComputation)                                              \
  X(kBranchComputations, "branch_computations", kComputationList)             \
  X(kCalledComputations, "called_computations", kComputationList)             \
  X(kCalls, "calls", kComputationOrList)                                      \
  X(kChannelId, "channel_id", kInt)                                           \
  X(kCollapsedSliceDims, "collapsed_slice_dims", kIntList)                    \
  X(kCondition, "condition", kComputation)                                    \
  X(kConstrainLayout, "constrain_layout", kBool)                              \
  X(kControlPredecessors, "control-predecessors", kInstructionList)           \
  X(kCustomCallHasSideEffect, "custom_call_has_side_effect", kBool)           \
  X(kCustomCallTarget, "custom_call_target", kString)                         \
  X(kDelta, "delta", kInt)                                                    \
  X(kDimLabels, "dim_labels", kDimLabels)                                     \
  X(kDimensions, "dimensions", kIntList)                                      \
  X(kDirection, "direction", kEnum)                                           \
  X(kDistribution, "distribution", kEnum)                                     \
  X(kDomain, "domain", kBraced)                                               \
  X(kDynamicSliceSizes, "dynamic_slice_sizes", kIntList)                      \
  X(kEntryComputationLayout, "entry_computation_layout", kComputationLayout)  \
  X(kEpsilon, "epsilon", kFloat)                                              \
  X(kExponentBits, "exponent_bits", kInt)                                     \
  X(kFalseComputation, "false_computation", kComputation)                     \
  X(kFeatureGroupCount, "feature_group_count", kInt)                          \
  X(kFeatureIndex, "feature_index", kInt)                                     \
  X(kFftLength, "fft_length", kIntList)                                       \
  X(kFftType, "fft_type", kEnum)                                              \
  X(kFrontendAttributes, "frontend_attributes", kBraced)                      \
  X(kIndex, "index", kInt)                                                    \
  X(kIndexVectorDim, "index_vector_dim", kInt)                                \
  X(kIndicesAreSorted, "indices_are_sorted", kBool)                           \
  X(kInfeedConfig, "infeed_config", kString)                                  \
  X(kInputBatchingDims, "input_batching_dims", kIntList)                      \
  X(kInsertedWindowDims, "inserted_window_dims", kIntList)                    \
  X(kIotaDimension, "iota_dimension", kInt)                                   \
  X(kIsHostTransfer, "is_host_transfer", kBool)                               \
  X(kIsStable, "is_stable", kBool)                                            \
  X(kK, "k", kInt)                                                            \
  X(kKind, "kind", kEnum)                                                     \
  X(kLargest, "largest", kBool)                                               \
  X(kLeftSide, "left_side", kBool)                                            \
  X(kLhsBatchDims, "lhs_batch_dims", kIntList)                                \
  X(kLhsContractingDims, "lhs_contracting_dims", kIntList)                    \
  X(kLiteral, "literal", kLiteral)                                            \
  X(kLower, "lower", kBool)                                                   \
  X(kMantissaBits, "mantissa_bits", kInt)                                     \
  X(kMetadata, "metadata", kBraced)                                           \
  X(kNumPartitions, "num_partitions", kInt)                                   \
  X(kOffsetDims, "offset_dims", kIntList)                                     \
  X(kOperandBatchingDims, "operand_batching_dims", kIntList)                  \
  X(kOperandLayoutConstraints, "operand_layout_constraints", kShapeList)      \
  X(kOutfeedConfig, "outfeed_config", kString)                                \
  X(kOutfeedShape, "outfeed_shape", kShape)                                   \
  X(kPadding, "padding", kPadding)                                            \
  X(kReplicaCount, "replica_count", kInt)                                     \
  X(kReplicaGroups, "replica_groups", kReplicaGroups)                         \
  X(kRhsBatchDims, "rhs_batch_dims", kIntList)                                \
  X(kRhsContractingDims, "rhs_contracting_dims", kIntList)                    \
  X(kScatter, "scatter", kComputation)                                        \
  X(kScatterDimsToOperandDims, "scatter_dims_to_operand_dims", kIntList)      \
  X(kScatterIndicesBatchingDims, "scatter_indices_batching_dims", kIntList)   \
  X(kSchedule, "schedule", kEnum)                                             \
  X(kSelect, "select", kComputation)                                          \
  X(kSharding, "sharding", kSharding)                                         \
  X(kSlice, "slice", kSliceRanges)                                            \
  X(kSliceSizes, "slice_sizes", kIntList)                                     \
  X(kSourceTargetPairs, "source_target_pairs", kIntListList)                  \
  X(kStartIndexMap, "start_index_map", kIntList)                              \
  X(kStartIndicesBatchingDims, "start_indices_batching_dims", kIntList)       \
  X(kToApply, "to_apply", kComputation)                                       \
  X(kTransposeA, "transpose_a", kEnum)                                        \
  X(kTrueComputation, "true_computation", kComputation)                       \
  X(kUniqueIndices, "unique_indices", kBool)                                  \
  X(kUnitDiagonal, "unit_diagonal", kBool)                                    \
  X(kUpdateWindowDims, "update_window_dims", kIntList)                        \
  X(kUseGlobalDeviceIds, "use_global_device_ids", kBool)                      \
  X(kWindow, "window", kWindow)

enum class AttrId : std::uint8_t {
#define TPUSIM_X(id, name, kind) id,
  TPUSIM_HLO_ATTRIBUTES(TPUSIM_X)
#undef TPUSIM_X
      kUnknown,
};

std::string_view attr_name(AttrId id);
AttrKind attr_kind(AttrId id);  // kRaw for kUnknown
AttrId attr_id_from_name(std::string_view name);
std::string_view attr_kind_name(AttrKind k);

// One attribute as written. `value` is the value's source text (a view into
// the module's buffer); accessors in attribute_values.h decode it.
struct Attribute {
  std::string_view name;
  std::string_view value;
  std::uint32_t offset = 0;  // of the value, for diagnostics
  AttrId id = AttrId::kUnknown;
};

}  // namespace tpusim::hlo
