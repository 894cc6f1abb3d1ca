#include "isa/hlo/analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "common/units.h"
#include "isa/hlo/attribute_values.h"
#include "isa/hlo/parser.h"
#include "isa/hlo/structure.h"

namespace tpusim::hlo {

double RooflineRates::matmul_rate(ElementType t) const {
  for (const auto& [type, rate] : matmul_flops_per_second)
    if (type == t) return rate;
  return matmul_default_flops_per_second;
}

double RooflineRates::vector_rate() const {
  return vector_flops_per_second > 0 ? vector_flops_per_second : matmul_default_flops_per_second;
}

RooflineRates RooflineRates::from_figures(const DerivedFigures& f) {
  RooflineRates r;
  auto add = [&](ElementType t, double v) {
    if (v > 0) r.matmul_flops_per_second.emplace_back(t, v);
  };
  add(ElementType::kBF16, f.peak_flops_bf16);
  add(ElementType::kF16, f.peak_flops_bf16);
  add(ElementType::kF32, f.peak_flops_f32);
  add(ElementType::kF64, f.peak_flops_f32);
  add(ElementType::kS8, f.peak_flops_int8);
  add(ElementType::kU8, f.peak_flops_int8);
  add(ElementType::kS4, f.peak_flops_int4);
  add(ElementType::kU4, f.peak_flops_int4);
  for (ElementType t : {ElementType::kF8E3M4, ElementType::kF8E4M3, ElementType::kF8E4M3FN, ElementType::kF8E4M3FNUZ,
                        ElementType::kF8E4M3B11FNUZ, ElementType::kF8E5M2, ElementType::kF8E5M2FNUZ,
                        ElementType::kF8E8M0FNU})
    add(t, f.peak_flops_fp8);
  r.matmul_default_flops_per_second = f.peak_flops_bf16;
  r.vector_flops_per_second = f.vpu_flops_per_s;
  r.hbm_bytes_per_second = f.hbm_bytes_per_s;
  r.ici_bytes_per_second = f.ici_bytes_per_s_per_chip;
  return r;
}

RooflineRates RooflineRates::example_chip() {
  // Google Cloud TPU v5e documentation: 197 TFLOP/s bf16, 394 TOP/s int8,
  // 819 GB/s HBM2e, ICI 1600 Gbps per chip. The vector rate is an assumption
  // (1/16 of bf16 peak) used only when no chip config is given.
  RooflineRates r;
  r.matmul_flops_per_second = {{ElementType::kBF16, 197e12}, {ElementType::kF16, 197e12},
                               {ElementType::kS8, 394e12},   {ElementType::kU8, 394e12},
                               {ElementType::kF32, 197e12 / 4}};
  r.matmul_default_flops_per_second = 197e12;
  r.vector_flops_per_second = 197e12 / 16;
  r.hbm_bytes_per_second = 819e9;
  r.ici_bytes_per_second = 200e9;
  return r;
}

std::string_view bound_name(Bound b) {
  switch (b) {
    case Bound::kNone: return "none";
    case Bound::kCompute: return "compute";
    case Bound::kMemory: return "memory";
    case Bound::kCommunication: return "communication";
  }
  return "none";
}

namespace {

double safe_div(double a, double b) { return b > 0 ? a / b : 0; }

Bound pick(double compute, double memory, double comm) {
  if (compute <= 0 && memory <= 0 && comm <= 0) return Bound::kNone;
  if (compute >= memory && compute >= comm) return Bound::kCompute;
  if (memory >= comm) return Bound::kMemory;
  return Bound::kCommunication;
}

// Times in reports span ns to s; format_si handles only large prefixes.
std::string format_time(double s) {
  if (s <= 0) return "0 s";
  if (s >= 1) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.3g} us", s * 1e6);
  return fmt::format("{:.3g} ns", s * 1e9);
}

bool is_free(const OpCost& c) {
  return c.flops == 0 && c.transcendentals == 0 && c.bytes_accessed() == 0 && c.collective_bytes == 0;
}

// Does the computation (or one it calls) contain this opcode?
bool contains(const Computation* c, Opcode op, int depth = 0) {
  if (c == nullptr || depth > kMaxCallDepth) return false;
  for (const Instruction* i : c->instructions()) {
    if (i->opcode() == op) return true;
    for (const Computation* called : i->called_computations()) {
      if (contains(called, op, depth + 1)) return true;
    }
  }
  return false;
}

}  // namespace

SourceLines::SourceLines(std::string_view text) {
  starts_.push_back(0);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') starts_.push_back(static_cast<std::uint32_t>(i + 1));
  }
}

int SourceLines::line(std::uint32_t offset) const {
  return static_cast<int>(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin());
}

std::string profile_category(const Instruction& inst) {
  const Opcode op = inst.opcode();
  switch (opcode_category(op)) {
    case OpCategory::kContraction:
      return op == Opcode::kConvolution ? "convolution" : "matmul";
    case OpCategory::kFusion: {
      const Computation* f = inst.fused_computation();
      if (contains(f, Opcode::kConvolution)) return "convolution fusion";
      if (contains(f, Opcode::kDot) || contains(f, Opcode::kScaledDot) || contains(f, Opcode::kRaggedDot)) {
        return "matmul fusion";
      }
      const auto kind = word_attr(inst, AttrId::kKind).value_or("kLoop");
      if (kind == "kInput") return "input fusion";
      if (kind == "kOutput") return "output fusion";
      if (kind == "kCustom") return "custom fusion";
      return "loop fusion";
    }
    case OpCategory::kCollective:
      return "collective";
    case OpCategory::kAsyncDone:
      return op == Opcode::kCopyDone ? "data formatting" : op == Opcode::kAsyncDone || op == Opcode::kAsyncUpdate
                                                              ? "control flow"
                                                              : "collective";
    case OpCategory::kDataMovement:
      return "data formatting";
    case OpCategory::kElementwiseUnary:
    case OpCategory::kElementwiseBinary:
    case OpCategory::kElementwiseTernary:
      return "elementwise";
    case OpCategory::kReduction:
      return "reduction";
    case OpCategory::kCustomCall:
      return "custom call";
    case OpCategory::kControlFlow:
      return "control flow";
    default:
      return "other";
  }
}

std::string profile_category_of_fusion(std::span<const Instruction* const> members) {
  bool reduce = false;
  for (const Instruction* m : members) {
    if (m->opcode() == Opcode::kConvolution) return "convolution fusion";
    if (opcode_category(m->opcode()) == OpCategory::kContraction) return "matmul fusion";
    reduce = reduce || opcode_category(m->opcode()) == OpCategory::kReduction;
  }
  return reduce ? "input fusion" : "loop fusion";
}

RooflineReport roofline(const Module& module, const RooflineRates& rates) {
  RooflineReport r;
  r.module_name = std::string(module.name());
  const Computation* entry = module.entry();
  if (!entry) return r;
  CostAnalysis analysis;
  const std::vector<OpCost> costs = analysis.costs(*entry);
  const SourceLines lines(module.source().text);
  const auto& insts = entry->instructions();
  for (std::size_t i = 0; i < insts.size(); ++i) {
    const OpCost& c = costs[i];
    if (is_free(c)) continue;
    RooflineRow row;
    row.name = std::string(insts[i]->name());
    row.opcode = std::string(insts[i]->opcode_text());
    if (const auto md = metadata_attr(*insts[i])) row.op_name = md->op_name;
    row.category = std::string(op_category_name(opcode_category(insts[i]->opcode())));
    row.profile_category = profile_category(*insts[i]);
    row.line = lines.line(insts[i]->offset());
    row.cost = c;
    row.intensity = safe_div(c.flops + c.transcendentals, c.bytes_accessed());
    const bool matmul = c.matmul_type != ElementType::kTuple;
    // Matmul rows: the contraction runs at the MXU rate; the rest of a fused
    // row's vector work overlaps it, so the matmul rate bounds the row.
    const double peak = matmul ? rates.matmul_rate(c.matmul_type) : rates.vector_rate();
    row.compute_time_s = safe_div(c.flops + c.transcendentals, peak);
    row.memory_time_s = safe_div(c.bytes_accessed(), rates.hbm_bytes_per_second);
    row.communication_time_s = safe_div(c.collective_bytes, rates.ici_bytes_per_second);
    row.bound_time_s = std::max({row.compute_time_s, row.memory_time_s, row.communication_time_s});
    row.bound = pick(row.compute_time_s, row.memory_time_s, row.communication_time_s);
    RooflineTotal& t = r.total;
    t.flops += c.flops;
    t.transcendentals += c.transcendentals;
    t.bytes_accessed += c.bytes_accessed();
    t.collective_bytes += c.collective_bytes;
    t.bound_time_s += row.bound_time_s;
    // Attribute each row's time to its bounding resource.
    if (row.bound == Bound::kCompute) t.compute_time_s += row.bound_time_s;
    if (row.bound == Bound::kMemory) t.memory_time_s += row.bound_time_s;
    if (row.bound == Bound::kCommunication) t.communication_time_s += row.bound_time_s;
    r.ops.push_back(std::move(row));
  }
  r.total.bound = pick(r.total.compute_time_s, r.total.memory_time_s, r.total.communication_time_s);
  r.unknown_trip_loops = analysis.unknown_loops();
  return r;
}

std::string render_text(const RooflineReport& r) {
  std::string out = fmt::format("module {}: {} ops\n", r.module_name, r.ops.size());
  out += fmt::format("{:<40} {:<22} {:>12} {:>12} {:>12} {:>10} {:>12} {:<13}\n", "op", "opcode", "flops", "bytes",
                     "collective", "flop/byte", "time", "bound");
  auto name = [](const std::string& s) { return s.size() > 40 ? s.substr(0, 37) + "..." : s; };
  for (const RooflineRow& row : r.ops) {
    out += fmt::format("{:<40} {:<22} {:>12} {:>12} {:>12} {:>10.2f} {:>12} {:<13}\n", name(row.name), row.opcode,
                       format_si(row.cost.flops + row.cost.transcendentals, "FLOP"),
                       format_si(row.cost.bytes_accessed(), "B"), format_si(row.cost.collective_bytes, "B"),
                       row.intensity, format_time(row.bound_time_s), bound_name(row.bound));
  }
  const RooflineTotal& t = r.total;
  out += fmt::format("{:<40} {:<22} {:>12} {:>12} {:>12} {:>10.2f} {:>12} {:<13}\n", "TOTAL", "",
                     format_si(t.flops + t.transcendentals, "FLOP"), format_si(t.bytes_accessed, "B"),
                     format_si(t.collective_bytes, "B"),
                     t.bytes_accessed > 0 ? (t.flops + t.transcendentals) / t.bytes_accessed : 0.0,
                     format_time(t.bound_time_s), bound_name(t.bound));
  for (const std::string& loop : r.unknown_trip_loops)
    out += fmt::format("while {}: trip count unknown, body and condition counted once\n", loop);
  return out;
}

namespace {
nlohmann::json to_json(const RooflineReport& r) {
  nlohmann::json ops = nlohmann::json::array();
  for (const RooflineRow& row : r.ops) {
    ops.push_back({{"name", row.name},
                   {"opcode", row.opcode},
                   {"category", row.category},
                   {"profile_category", row.profile_category},
                   {"op_name", row.op_name},
                   {"line", row.line},
                   {"flops", row.cost.flops},
                   {"transcendentals", row.cost.transcendentals},
                   {"bytes_read", row.cost.bytes_read},
                   {"bytes_written", row.cost.bytes_written},
                   {"bytes_accessed", row.cost.bytes_accessed()},
                   {"collective_bytes", row.cost.collective_bytes},
                   {"intensity", row.intensity},
                   {"compute_time_s", row.compute_time_s},
                   {"memory_time_s", row.memory_time_s},
                   {"communication_time_s", row.communication_time_s},
                   {"bound_time_s", row.bound_time_s},
                   {"bound", bound_name(row.bound)}});
  }
  const RooflineTotal& t = r.total;
  return {{"module", r.module_name},
          {"ops", std::move(ops)},
          {"unknown_trip_loops", r.unknown_trip_loops},
          {"total",
           {{"flops", t.flops},
            {"transcendentals", t.transcendentals},
            {"bytes_accessed", t.bytes_accessed},
            {"collective_bytes", t.collective_bytes},
            {"compute_time_s", t.compute_time_s},
            {"memory_time_s", t.memory_time_s},
            {"communication_time_s", t.communication_time_s},
            {"bound_time_s", t.bound_time_s},
            {"bound", bound_name(t.bound)}}}};
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string csv_lines(const RooflineReport& r) {
  std::string out;
  for (const RooflineRow& row : r.ops) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(r.module_name), csv_field(row.name),
                       csv_field(row.opcode), row.cost.flops, row.cost.transcendentals, row.cost.bytes_accessed(),
                       row.cost.collective_bytes, row.intensity, row.bound_time_s, bound_name(row.bound),
                       row.category);
  }
  const RooflineTotal& t = r.total;
  out += fmt::format("{},TOTAL,,{},{},{},{},{},{},{},\n", csv_field(r.module_name), t.flops, t.transcendentals,
                     t.bytes_accessed, t.collective_bytes,
                     t.bytes_accessed > 0 ? (t.flops + t.transcendentals) / t.bytes_accessed : 0.0, t.bound_time_s,
                     bound_name(t.bound));
  return out;
}

constexpr const char* kCsvHeader =
    "module,op,opcode,flops,transcendentals,bytes_accessed,collective_bytes,intensity,bound_time_s,bound,category\n";

std::string render_all(const std::vector<RooflineReport>& reports, AnalyzeFormat format) {
  switch (format) {
    case AnalyzeFormat::kText: {
      std::string out;
      for (std::size_t i = 0; i < reports.size(); ++i) out += (i ? "\n" : "") + render_text(reports[i]);
      return out;
    }
    case AnalyzeFormat::kJson: {
      if (reports.size() == 1) return json_text(to_json(reports.front()), 2) + "\n";
      nlohmann::json all = nlohmann::json::array();
      for (const auto& r : reports) all.push_back(to_json(r));
      return json_text(nlohmann::json{{"modules", std::move(all)}}, 2) + "\n";
    }
    case AnalyzeFormat::kCsv: {
      std::string out = kCsvHeader;
      for (const auto& r : reports) out += csv_lines(r);
      return out;
    }
  }
  return {};
}

Result<std::string> analyze(ParsedFile parsed, const RooflineRates& rates, AnalyzeFormat format,
                            std::string* warnings) {
  if (!parsed.ok()) return parsed.errors();
  if (warnings != nullptr) *warnings = format_warnings(parsed.warnings());
  std::vector<RooflineReport> reports;
  for (const auto& m : parsed.modules) reports.push_back(roofline(*m.value(), rates));
  return render_all(reports, format);
}

}  // namespace

std::string render_json(const RooflineReport& r) { return json_text(to_json(r), 2) + "\n"; }
std::string render_csv(const RooflineReport& r) { return std::string(kCsvHeader) + csv_lines(r); }

std::optional<AnalyzeFormat> parse_analyze_format(std::string_view s) {
  if (s == "text") return AnalyzeFormat::kText;
  if (s == "json") return AnalyzeFormat::kJson;
  if (s == "csv") return AnalyzeFormat::kCsv;
  return std::nullopt;
}

Result<std::string> analyze_hlo_file(const std::string& path, const RooflineRates& rates, AnalyzeFormat format,
                                     const ParseOptions& options, std::string* warnings) {
  return analyze(parse_hlo_file(path, options), rates, format, warnings);
}

Result<std::string> analyze_parsed(ParsedFile parsed, const RooflineRates& rates, AnalyzeFormat format,
                                   std::string* warnings) {
  return analyze(std::move(parsed), rates, format, warnings);
}

Result<std::string> analyze_hlo_text(std::string text, std::string file_name, const RooflineRates& rates,
                                     AnalyzeFormat format) {
  return analyze(parse_hlo(std::move(text), std::move(file_name)), rates, format, nullptr);
}

}  // namespace tpusim::hlo
