// Chip and system configuration: plain data, validated once by the loader
// (common/config_loader.h). Each simulator module takes only its own struct.
// The YAML tree mirrors this object tree; every field is declared, with unit,
// default, range and documentation, in common/params.def.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpusim {

struct MxuRates {
  // Multiplier of the bf16 MAC rate per dtype; 0 = dtype not supported.
  double bf16 = 1.0;
  double f32 = 0.0;
  double int8 = 0.0;
  double fp8 = 0.0;
  double int4 = 0.0;
};

// Enum-valued config keys: the loader parses them once (params.def lists the
// choices; tests check every choice parses and prints back). Each enum's
// names are in one table, next to it.
#define TPUSIM_DATAFLOWS(X) \
  X(kWs, "ws")              \
  X(kOs, "os")              \
  X(kIs, "is")
enum class Dataflow {
#define TPUSIM_X(id, name) id,
  TPUSIM_DATAFLOWS(TPUSIM_X)
#undef TPUSIM_X
};

#define TPUSIM_LOOP_MODES(X) \
  X(kFull, "full")           \
  X(kExtrapolate, "extrapolate")
enum class LoopMode {
#define TPUSIM_X(id, name) id,
  TPUSIM_LOOP_MODES(TPUSIM_X)
#undef TPUSIM_X
};

// All-gather/reduce-scatter/all-reduce schedules (interconnect/collectives.h);
// `direct` is internal (all-to-all), not a choice of system.collective_algorithm.
#define TPUSIM_COLLECTIVE_ALGORITHMS(X) \
  X(kAuto, "auto")                      \
  X(kPerAxisRing, "per-axis-ring")      \
  X(kMultiAxis, "multi-axis")           \
  X(kFlatRing, "flat-ring")             \
  X(kDirect, "direct")                  \
  X(kHierarchical, "hierarchical")
enum class CollectiveAlgorithm {
#define TPUSIM_X(id, name) id,
  TPUSIM_COLLECTIVE_ALGORITHMS(TPUSIM_X)
#undef TPUSIM_X
};

// Which axes of a slice wrap around when system.wraparound is not stated
// (the generation's rule, data in each preset; common/params.def).
#define TPUSIM_WRAP_RULES(X) \
  X(kNone, "none")           \
  X(kFullCube, "full-cube")  \
  X(kAxisLength, "axis-length")
enum class WrapRule {
#define TPUSIM_X(id, name) id,
  TPUSIM_WRAP_RULES(TPUSIM_X)
#undef TPUSIM_X
};

// How HBM bursts map to channels (sim/timing/hbm_timing.h).
#define TPUSIM_HBM_ADDRESS_MAPS(X) \
  X(kXor, "xor")                   \
  X(kModulo, "modulo")
enum class HbmAddressMap {
#define TPUSIM_X(id, name) id,
  TPUSIM_HBM_ADDRESS_MAPS(TPUSIM_X)
#undef TPUSIM_X
};

// What a collective's part on a chip reads from and writes to the chip's HBM
// (sim/collective_timer.h, collective_hbm_bytes).
#define TPUSIM_COLLECTIVE_HBM_TRAFFIC(X) \
  X(kNone, "none")                       \
  X(kTransfers, "transfers")             \
  X(kTransfersReduction, "transfers+reduction")
enum class CollectiveHbmTraffic {
#define TPUSIM_X(id, name) id,
  TPUSIM_COLLECTIVE_HBM_TRAFFIC(TPUSIM_X)
#undef TPUSIM_X
};

[[nodiscard]] std::string_view enum_name(Dataflow v);
[[nodiscard]] std::string_view enum_name(LoopMode v);
[[nodiscard]] std::string_view enum_name(CollectiveAlgorithm v);
[[nodiscard]] std::string_view enum_name(WrapRule v);
[[nodiscard]] std::string_view enum_name(HbmAddressMap v);
[[nodiscard]] std::string_view enum_name(CollectiveHbmTraffic v);
// False (out unchanged) when `text` is not a name of the enum.
bool parse_enum(std::string_view text, Dataflow& out);
bool parse_enum(std::string_view text, LoopMode& out);
bool parse_enum(std::string_view text, CollectiveAlgorithm& out);
bool parse_enum(std::string_view text, WrapRule& out);
bool parse_enum(std::string_view text, HbmAddressMap& out);
bool parse_enum(std::string_view text, CollectiveHbmTraffic& out);

struct MxuConfig {
  std::int64_t count = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  Dataflow dataflow = Dataflow::kWs;
  bool double_buffered_weights = true;
  std::int64_t weight_load_rows_per_cycle = 1;
  std::int64_t drain_extra_cycles = 0;
  MxuRates rate;
  bool step_sync = false;  // tile-loop steps do not overlap on the MXUs (mxu.fence)
};

struct VpuLatency {
  std::int64_t alu = 0;
  std::int64_t mul = 0;
  std::int64_t div = 0;
  std::int64_t convert = 0;
  std::int64_t compare = 0;
};

struct VpuConfig {
  std::int64_t sublanes = 0;
  std::int64_t lanes = 0;
  std::int64_t vregs = 0;
  std::int64_t alus_per_lane = 0;
  std::int64_t vreg_loads_per_cycle = 0;
  std::int64_t vreg_stores_per_cycle = 0;
  bool bf16_alu = true;  // bf16 float arithmetic natively (else in f32, isa::vpu_needs_f32)
  VpuLatency latency;
};

struct EupConfig {
  double vregs_per_cycle = 0;
  std::int64_t latency = 0;
};

struct XluConfig {
  std::int64_t count = 0;
  double vregs_per_cycle = 0;
  std::int64_t latency = 0;
};

struct VmemConfig {
  double capacity = 0;  // bytes
  std::int64_t ports = 0;
  double bytes_per_cycle = 0;
  double scoped_limit = 0;  // bytes one kernel may use; 0 = the compiler's default share of capacity
};

struct SmemConfig {
  double capacity = 0;  // bytes
};

struct SequencerConfig {
  std::int64_t issue_width = 0;
  std::int64_t dispatch_latency = 0;
  double kernel_overhead = 0;  // seconds, before every lowered op (a `delay`)
};

struct DmaConfig {
  std::int64_t engines = 0;
  std::int64_t outstanding = 0;
  double chunk = 0;  // bytes
};

// The flash-attention kernels' grid steps (rows of Q and of K/V per step):
// what one step of core.mxu.step_sync covers; 0 = tpusim's own block.
struct AttentionKernelConfig {
  std::int64_t block_q = 0;
  std::int64_t block_kv = 0;
  std::int64_t block_q_bwd = 0;
  std::int64_t block_kv_bwd = 0;
};

struct CoreConfig {
  MxuConfig mxu;
  VpuConfig vpu;
  EupConfig eup;
  XluConfig xlu;
  VmemConfig vmem;
  SmemConfig smem;
  SequencerConfig sequencer;
  DmaConfig dma;
  AttentionKernelConfig attention;
};

struct HbmConfig {
  std::string model = "channels";  // memory/hbm_model.h registry name
  double capacity = 0;   // bytes
  double bandwidth = 0;  // bytes/s, whole chip
  std::int64_t channels = 0;
  HbmAddressMap address_map = HbmAddressMap::kModulo;
  double latency = 0;        // seconds
  double access_granularity = 0;  // bytes
  double efficiency = 1.0;   // fraction of nominal bandwidth a long stream reaches
};

struct IciConfig {
  std::int64_t links = 0;
  double link_bandwidth = 0;  // bytes/s, one link, one direction
  double hop_latency = 0;     // seconds
  double collective_startup = 0;  // seconds, once per collective
  double link_efficiency = 1.0;
  double packet_size = 0;     // bytes
  std::int64_t concurrent_collectives = 1;  // collectives in flight per chip
  CollectiveHbmTraffic hbm_traffic = CollectiveHbmTraffic::kTransfersReduction;
};

// The chip's link to its host's memory (PCIe).
struct HostLinkConfig {
  double bandwidth = 0;  // bytes/s, each direction
  double latency = 0;    // seconds
};

struct DcnConfig {
  double bandwidth_per_chip = 0;  // bytes/s, one direction
  double latency = 0;             // seconds
};

struct SystemTopology {
  std::vector<std::int64_t> topology;  // chips per axis, e.g. {4, 4}
  std::vector<bool> wraparound;        // per axis; empty = no axis wraps
  WrapRule wrap_rule = WrapRule::kNone;  // fills wraparound when no layer states it
  std::int64_t wrap_size = 4;          // the rule's cube edge or axis length
  bool wraparound_by_rule = false;     // set by the loader: wraparound came from wrap_rule
  bool twisted = false;
  std::int64_t slices = 1;
  std::int64_t full_mode_max_chips = 256;  // above: symmetric mode unless --mode says otherwise
  CollectiveAlgorithm collective_algorithm = CollectiveAlgorithm::kAuto;  // AG/RS/AR schedule
  std::optional<std::int64_t> chips;   // if stated, must equal product × slices
};

// Chips in the system: the product of the topology's extents × slices (the
// one place this product is computed).
[[nodiscard]] std::int64_t chip_count(const SystemTopology& system);

// A slice shape for `chips` chips on a torus of `axes` axes (1-3): the
// prime factors dealt largest first to the smallest axis, ascending
// ("2x4" for 8 on 2 axes, "4x4x8" for 128 on 3). `tpusim run --system auto`.
[[nodiscard]] std::vector<std::int64_t> system_shape_for(std::int64_t chips, int axes);

// Per axis of system.topology: does it wrap under system.wrap_rule, and why.
struct AxisWrap {
  bool wraps = false;
  std::string why;
};
[[nodiscard]] std::vector<AxisWrap> wrap_by_rule(const SystemTopology& system);
// One line per axis: what wraps and why (the rule, or system.wraparound).
[[nodiscard]] std::vector<std::string> wraparound_notes(const SystemTopology& system);

// How the simulator runs a program (not a hardware property; a config key so
// sweeps and validation rows can set it).
struct SimulationConfig {
  LoopMode loops = LoopMode::kFull;  // sim/loop_extrapolation.h
  std::int64_t full_instruction_limit = 4'000'000'000;  // executed instructions a full-mode run may take
  std::int64_t max_program_instructions = 4'000'000;  // static program size (lower::LowerOptions::max_instructions)
  std::int64_t loop_warmup = 2;   // iterations before steady-state detection starts
  double loop_tolerance = 1e-3;   // relative agreement of consecutive iteration times
  bool run_ahead = true;          // chips ahead of the kernel's clock (sim/core_scheduler.h)
  bool reuse = true;              // repeated ops compiled once (lower::LowerOptions::reuse_repeated_ops)
};

struct ChipConfig {
  std::string name;
  std::string description;
  double clock = 0;  // Hz
  std::int64_t tensorcores = 0;
  bool megacore = false;
  CoreConfig core;
  HbmConfig hbm;
  IciConfig ici;
  HostLinkConfig host;
  DcnConfig dcn;
  SystemTopology system;
  SimulationConfig simulation;
};

// The torus axes of a chip: one per pair of ICI links (ici.links / 2, 1-3).
[[nodiscard]] int torus_axes(const ChipConfig& chip);

// Figures derived from a chip config (no simulation): what `config show`
// prints and what presets are checked against.
struct DerivedFigures {
  double peak_flops_bf16 = 0;
  double peak_flops_f32 = 0;
  double peak_flops_int8 = 0;
  double peak_flops_fp8 = 0;
  double peak_flops_int4 = 0;
  double hbm_bytes_per_s = 0;
  double ici_bytes_per_s_per_chip = 0;  // all links, both directions
  double critical_intensity_flops_per_byte = 0;  // bf16 peak / HBM
  double vpu_flops_per_s = 0;
  std::int64_t chips = 0;
};

// Figures of the whole chip (all TensorCores).
DerivedFigures derive(const ChipConfig& c);
// TensorCores of one device: all of a megacore chip's (or a one-core chip's),
// else one (v7: each TensorCore is a device; a module runs on one).
[[nodiscard]] std::int64_t tensorcores_per_device(const ChipConfig& c);
// The chip as one device sees it (what one module is compiled for and runs
// on). A device that is one TensorCore of a chip of several (TPU7x's
// chiplets, v2, v3) owns its TensorCore's share of the HBM: bandwidth,
// channels and capacity / tensorcores (Pallas' tpu_info lists HBM per
// TensorCore; a chip's figures are the sum). A megacore or one-core chip's
// device has all of it. Apply once, to a chip's config.
[[nodiscard]] ChipConfig device_view(const ChipConfig& c);
// Figures of one device: compute peaks of its TensorCores, HBM of
// device_view; ICI the chip's.
DerivedFigures derive_device(const ChipConfig& c);

}  // namespace tpusim
