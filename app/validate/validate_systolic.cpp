#include "app/validate/validate_systolic.h"

#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <ostream>

#include "common/config_loader.h"
#include "common/csv.h"
#include "common/isolated.h"
#include "common/json_text.h"
#include "sim/timing/mxu_timing.h"
#include "sim/simulate.h"

namespace tpusim {

Result<ChipConfig> systolic_chip(const SystolicCase& c) {
  const std::vector<std::string> sets{
      "core.mxu.count=1",
      fmt::format("core.mxu.rows={}", c.rows),
      fmt::format("core.mxu.cols={}", c.cols),
      "core.mxu.dataflow=" + c.dataflow,
      "core.mxu.double_buffered_weights=false",
      "core.mxu.weight_load_rows_per_cycle=1",
      "core.mxu.drain_extra_cycles=0",
      // Operands are already in VMEM and VMEM never stalls the array.
      "core.vmem.capacity=1 TB",
      "core.vmem.bytes_per_cycle=1e7",
      // Instructions reach the MXU queue immediately.
      "core.sequencer.dispatch_latency=0",
      "core.sequencer.issue_width=64",
      "clock=1 GHz",
  };
  auto r = load_config("v5e", sets);
  if (!r.ok()) return r.errors();
  return r->chip;
}

isa::Program systolic_program(const SystolicCase& c) {
  const Dataflow d = parse_dataflow(c.dataflow).value_or(Dataflow::kWs);
  const FoldMapping f = fold_mapping(d, GemmShape{c.m, c.k, c.n}, c.rows, c.cols);
  isa::Program p;
  p.file = fmt::format("systolic {}x{}x{} on {}x{} {}", c.m, c.k, c.n, c.rows, c.cols, c.dataflow);
  // The stationary operand (Sr x Sc) and the streamed one (T x Sr), bf16 in VMEM.
  p.buffers.push_back(isa::Buffer{"stationary", isa::MemSpace::kVmem, isa::DType::kBf16, {f.sr, f.sc}, -1, {}, isa::TileRef::kNone});
  p.buffers.push_back(isa::Buffer{"stream", isa::MemSpace::kVmem, isa::DType::kBf16, {f.t, f.sr}, -1, {}, isa::TileRef::kNone});
  const std::uint32_t label = p.strings.intern(fmt::format("gemm_{}x{}x{}", c.m, c.k, c.n));
  for (std::int64_t i = 0; i < f.row_folds; ++i) {
    const std::int64_t r0 = i * c.rows, r1 = std::min(f.sr, r0 + c.rows);
    for (std::int64_t j = 0; j < f.col_folds; ++j) {
      const std::int64_t c0 = j * c.cols, c1 = std::min(f.sc, c0 + c.cols);
      isa::TileRef w;
      w.buffer = 0;
      w.row = r0;
      w.rows = static_cast<std::int32_t>(r1 - r0);
      w.col = static_cast<std::int32_t>(c0);
      w.cols = static_cast<std::int32_t>(c1 - c0);
      isa::MxuLoadWeights load;
      load.src = w;
      p.code.push_back(isa::Instruction{load, label, {}});
      isa::TileRef x;
      x.buffer = 1;
      x.row = 0;
      x.rows = static_cast<std::int32_t>(f.t);
      x.col = static_cast<std::int32_t>(r0);
      x.cols = static_cast<std::int32_t>(r1 - r0);
      isa::MxuMatmul mm;
      mm.lhs = x;
      mm.mode = isa::AccMode::kOverwrite;
      p.code.push_back(isa::Instruction{mm, label, {}});
    }
  }
  return p;
}

Result<double> simulate_systolic(const SystolicCase& c) {
  auto chip = systolic_chip(c);
  if (!chip.ok()) return chip.errors();
  std::string error;
  auto out = run_isolated(
      [&]() -> std::string {
        auto r = simulate(*chip, systolic_program(c));
        if (!r.ok()) return "error:" + format_all(r.errors());
        if (!r->finished) return "error: the MXU program did not finish";
        return fmt::format("{}", r->cycles);
      },
      error);
  if (!out) return Diagnostic{"<systolic>", 0, 0, error, ""};
  if (out->starts_with("error:")) return Diagnostic{"<systolic>", 0, 0, out->substr(6), ""};
  const double count = std::stod(*out);
  return static_cast<double>(scalesim_total_cycles(static_cast<Cycles>(count)));
}

int validate_systolic_csv(const std::string& path, double tolerance, bool json, std::ostream& out,
                          std::ostream& err) {
  auto table = read_csv_file(path);
  if (!table.ok()) {
    err << format_all(table.errors());
    return 2;
  }
  const std::vector<std::string> cols{"layer", "M", "K", "N", "rows", "cols", "dataflow", "ref_compute_cycles"};
  if (auto missing = table->require(cols); !missing.empty()) {
    err << format_all(missing);
    return 2;
  }
  struct Row {
    std::string layer;
    SystolicCase c;
    double ref;
  };
  std::vector<Row> rows;
  std::vector<Diagnostic> bad;
  for (const auto& rec : table->records) {
    Row row;
    row.layer = table->text(rec, "layer");
    double v[6] = {};
    const char* names[6] = {"M", "K", "N", "rows", "cols", "ref_compute_cycles"};
    bool ok = true;
    for (int i = 0; i < 6; ++i) {
      auto n = table->number(rec, names[i]);
      if (!n.ok()) {
        bad.insert(bad.end(), n.errors().begin(), n.errors().end());
        ok = false;
      } else if (*n < (i < 5 ? 1 : 0) || std::floor(*n) != *n) {
        bad.push_back(table->error_at(rec, names[i],
                                      fmt::format("column '{}' must be a {} integer", names[i],
                                                  i < 5 ? "positive" : "non-negative")));
        ok = false;
      } else {
        v[i] = *n;
      }
    }
    row.c.dataflow = table->text(rec, "dataflow");
    if (!parse_dataflow(row.c.dataflow)) {
      bad.push_back(table->error_at(rec, "dataflow", fmt::format("dataflow must be ws, os or is, got '{}'", row.c.dataflow)));
      ok = false;
    }
    if (!ok) continue;
    row.c.m = static_cast<std::int64_t>(v[0]);
    row.c.k = static_cast<std::int64_t>(v[1]);
    row.c.n = static_cast<std::int64_t>(v[2]);
    row.c.rows = static_cast<std::int64_t>(v[3]);
    row.c.cols = static_cast<std::int64_t>(v[4]);
    row.ref = v[5];
    rows.push_back(row);
  }
  if (!bad.empty()) {
    err << format_all(bad);
    return 2;
  }
  nlohmann::json j = nlohmann::json::array();
  int failures = 0;
  if (!json) out << fmt::format("{:<20} {:>6} {:>6} {:>6} {:>9} {:>3} {:>12} {:>12} {:>8}  {}\n", "layer", "M", "K", "N",
                                "array", "df", "reference", "tpusim", "error", "result");
  for (const auto& row : rows) {
    auto sim = simulate_systolic(row.c);
    if (!sim.ok()) {
      err << format_all(sim.errors());
      return 1;
    }
    const double error = row.ref == 0 ? (*sim == 0 ? 0 : 1) : (*sim - row.ref) / row.ref;
    const bool pass = std::fabs(error) <= tolerance;
    failures += pass ? 0 : 1;
    if (json) {
      j.push_back({{"layer", row.layer}, {"M", row.c.m}, {"K", row.c.k}, {"N", row.c.n}, {"rows", row.c.rows},
                   {"cols", row.c.cols}, {"dataflow", row.c.dataflow}, {"reference", row.ref}, {"tpusim", *sim},
                   {"error", error}, {"pass", pass}});
    } else {
      out << fmt::format("{:<20} {:>6} {:>6} {:>6} {:>9} {:>3} {:>12.0f} {:>12.0f} {:>7.2f}%  {}\n", row.layer, row.c.m,
                         row.c.k, row.c.n, fmt::format("{}x{}", row.c.rows, row.c.cols), row.c.dataflow, row.ref, *sim,
                         100 * error, pass ? "pass" : "FAIL");
    }
  }
  if (json) {
    out << json_text(nlohmann::json{{"kind", "systolic"}, {"tolerance", tolerance}, {"rows", j}, {"failures", failures}}, 2)
        << "\n";
  } else {
    out << fmt::format("{} rows, {} within {:.2f}%, {} outside\n", rows.size(), rows.size() - static_cast<size_t>(failures),
                       100 * tolerance, failures);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace tpusim
