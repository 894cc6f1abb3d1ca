#include "app/validate/validate_collective.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/diagnostic.h"
#include "common/json_text.h"
#include "interconnect/collectives.h"
#include "interconnect/network.h"
#include "interconnect/topology.h"

namespace tpusim::interconnect {

namespace {

constexpr int kColumns = 8;
// 4 KiB packets, at most 32 per message: enough to pipeline and share links
// (an uncontended ring step costs bytes/w + h for any packet count), and it
// keeps a 512-chip all-reduce under a million packet events. Bigger packets
// cost direct all-to-all on a torus some efficiency (dimension-ordered FIFO
// routing; measured on 8x8: +1.3% over the busiest link at 64 packets, +2.5%
// at 32, +4.9% at 16).
constexpr std::uint32_t kMaxPacketsPerMessage = 32;
constexpr const char* kHeader[] = {"collective", "topology", "wraparound", "group", "msg_bytes",
                                   "link_bytes_per_s_one_way", "hop_latency_s", "ref_time_s"};
// Optional columns after the eight, named in the header (any order; a file
// without a header, or whose header names only the eight, may give a 9th
// column: the tolerance). Header names not listed here are ignored.
constexpr const char* kTolerance = "tolerance";
constexpr const char* kSlices = "slices";
constexpr const char* kDcnBandwidth = "dcn_bytes_per_s_per_chip";
constexpr const char* kDcnLatency = "dcn_latency_s";
constexpr const char* kAlgorithm = "algorithm";

struct Field {
  std::string_view text;
  int column = 1;  // 1-based
};

struct Row {
  int line = 0;
  std::string collective;
  std::string topology;
  bool wraparound = false;
  std::string group;
  double msg_bytes = 0;
  double link_bytes_per_s = 0;
  double hop_latency_s = 0;
  double ref_time_s = 0;
  std::optional<double> tolerance;
  std::int64_t slices = 1;
  double dcn_bytes_per_s = 0;
  double dcn_latency_s = 0;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  CollectiveKind kind = CollectiveKind::kAllGather;
  std::uint32_t axes_mask = 0;  // 0 = all
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<Field> split(std::string_view line) {
  std::vector<Field> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    const std::string_view raw = line.substr(start, comma == std::string_view::npos ? line.npos : comma - start);
    // Column of the first non-blank character of the field.
    size_t lead = 0;
    while (lead < raw.size() && (raw[lead] == ' ' || raw[lead] == '\t')) ++lead;
    fields.push_back(Field{trim(raw), static_cast<int>(start + lead) + 1});
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<double> parse_tolerance_text(std::string_view s) {
  if (!s.empty() && s.back() == '%') {
    auto v = parse_double(s.substr(0, s.size() - 1));
    if (!v) return std::nullopt;
    return *v / 100;
  }
  return parse_double(s);
}

std::string fmt_us(double s) { return fmt::format("{:.3f}", s * 1e6); }

// The rows of a collective reference file, or every error in it.
class RowReader {
 public:
  explicit RowReader(std::string path) : path_(std::move(path)) {}

  void read(const std::string& text) {
    int line_no = 0;
    size_t pos = 0;
    while (pos < text.size()) {
      const size_t nl = text.find('\n', pos);
      std::string_view line(text.data() + pos, (nl == std::string::npos ? text.size() : nl) - pos);
      pos = nl == std::string::npos ? text.size() : nl + 1;
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      const std::string_view content = trim(line);
      if (content.empty() || content.front() == '#') continue;
      const std::vector<Field> f = split(line);
      if (!seen_data_or_header_ && f[0].text == kHeader[0]) {
        seen_data_or_header_ = true;
        header(line_no, line, f);
        continue;
      }
      seen_data_or_header_ = true;
      row(line_no, line, f);
    }
  }

  std::vector<Diagnostic> errors;
  std::vector<Row> rows;

 private:
  void fail(int line, int column, std::string message, std::string_view source) {
    errors.push_back(Diagnostic{path_, line, column, std::move(message), std::string(source)});
  }

  void header(int line_no, std::string_view line, const std::vector<Field>& f) {
    for (int c = 0; c < kColumns && c < static_cast<int>(f.size()); ++c) {
      if (f[static_cast<size_t>(c)].text != kHeader[c]) {
        fail(line_no, f[static_cast<size_t>(c)].column, fmt::format("header column {} should be '{}'", c + 1, kHeader[c]),
             line);
      }
    }
    if (f.size() <= static_cast<size_t>(kColumns)) return;
    optional_columns_.clear();
    for (size_t c = kColumns; c < f.size(); ++c) {
      const std::string_view name = f[c].text;
      for (const char* known : {kTolerance, kSlices, kDcnBandwidth, kDcnLatency, kAlgorithm}) {
        if (name == known &&
            std::find(optional_columns_.begin(), optional_columns_.end(), name) != optional_columns_.end()) {
          fail(line_no, f[c].column, fmt::format("header names column '{}' twice", name), line);
        }
      }
      optional_columns_.emplace_back(name);
    }
  }

  void row(int line_no, std::string_view line, const std::vector<Field>& f) {
    if (f.size() < static_cast<size_t>(kColumns) || f.size() > kColumns + optional_columns_.size()) {
      std::string optional;
      for (const auto& name : optional_columns_) optional += "," + name;
      fail(line_no, 1,
           fmt::format("expected {} columns (collective,topology,wraparound,group,msg_bytes,"
                       "link_bytes_per_s_one_way,hop_latency_s,ref_time_s[{}]), got {}",
                       kColumns, optional, f.size()),
           line);
      return;
    }
    Row r;
    r.line = line_no;
    const size_t before = errors.size();
    required_fields(r, line, f);
    for (size_t c = kColumns; c < f.size(); ++c) {
      // An empty field is the default.
      if (!f[c].text.empty()) optional_field(r, line, optional_columns_[c - kColumns], f[c]);
    }
    if (r.slices > 1 && r.dcn_bytes_per_s <= 0) {
      fail(line_no, f[1].column,
           fmt::format("{} slices need the column '{}' (per-chip DCN bandwidth, one direction)", r.slices,
                       kDcnBandwidth),
           line);
    }
    if (errors.size() == before) rows.push_back(std::move(r));
  }

  // The eight columns every row has.
  void required_fields(Row& r, std::string_view line, const std::vector<Field>& f) {
    const int line_no = r.line;
    r.collective = std::string(f[0].text);
    if (auto k = parse_collective_kind(f[0].text); k && *k != CollectiveKind::kCollectivePermute) {
      r.kind = *k;
    } else {
      fail(line_no, f[0].column,
           fmt::format("unknown collective '{}'; expected all-gather, reduce-scatter, all-reduce or "
                       "all-to-all",
                       f[0].text),
           line);
    }
    if (f[2].text == "true") {
      r.wraparound = true;
    } else if (f[2].text != "false") {
      fail(line_no, f[2].column, fmt::format("wraparound '{}': expected true or false", f[2].text), line);
    }
    // The topology is validated again when built.
    r.topology = std::string(f[1].text);
    std::optional<int> rank;
    if (auto t = Topology::parse(r.topology, r.wraparound); t.ok()) {
      rank = t->rank();
    } else {
      fail(line_no, f[1].column, t.errors().front().message, line);
    }
    group_field(r, line, f[3], rank);
    struct Num {
      int index;
      double* out;
      const char* what;
      bool allow_zero;
    };
    for (const Num& n : {Num{4, &r.msg_bytes, "msg_bytes", false},
                         Num{5, &r.link_bytes_per_s, "link_bytes_per_s_one_way", false},
                         Num{6, &r.hop_latency_s, "hop_latency_s", true},
                         Num{7, &r.ref_time_s, "ref_time_s", false}}) {
      const Field& fld = f[static_cast<size_t>(n.index)];
      const auto v = parse_double(fld.text);
      if (!v || *v < 0 || (!n.allow_zero && *v == 0)) {
        fail(line_no, fld.column,
             fmt::format("{} '{}': expected a {} number", n.what, fld.text, n.allow_zero ? "non-negative" : "positive"),
             line);
      } else {
        *n.out = *v;
      }
    }
  }

  // "all", or distinct axes of the topology ("x", "xy", ...).
  void group_field(Row& r, std::string_view line, const Field& fld, std::optional<int> rank) {
    r.group = std::string(fld.text);
    if (fld.text == "all") return;
    bool ok = !fld.text.empty();
    for (char c : fld.text) {
      const int axis = c == 'x' ? 0 : c == 'y' ? 1 : c == 'z' ? 2 : -1;
      if (axis < 0 || (rank && axis >= *rank) || (r.axes_mask >> axis & 1u)) {
        ok = false;
        break;
      }
      r.axes_mask |= 1u << axis;
    }
    if (!ok) {
      fail(r.line, fld.column,
           fmt::format("group '{}': expected 'all' or distinct axes of the topology (x, y, z, xy, ...)", fld.text),
           line);
    }
  }

  void optional_field(Row& r, std::string_view line, const std::string& name, const Field& fld) {
    const int line_no = r.line;
    if (name == kTolerance) {
      const auto v = parse_tolerance_text(fld.text);
      if (!v || *v <= 0) {
        fail(line_no, fld.column, fmt::format("tolerance '{}': expected a positive fraction or percentage", fld.text),
             line);
      } else {
        r.tolerance = v;
      }
    } else if (name == kSlices) {
      const auto v = parse_double(fld.text);
      if (!v || *v < 1 || *v > 4096 || *v != std::floor(*v)) {
        fail(line_no, fld.column, fmt::format("slices '{}': expected an integer from 1 to 4096", fld.text), line);
      } else {
        r.slices = static_cast<std::int64_t>(*v);
      }
    } else if (name == kDcnBandwidth || name == kDcnLatency) {
      const bool bw = name == kDcnBandwidth;
      const auto v = parse_double(fld.text);
      if (!v || *v < 0 || (bw && *v == 0)) {
        fail(line_no, fld.column,
             fmt::format("{} '{}': expected a {} number", name, fld.text, bw ? "positive" : "non-negative"), line);
      } else {
        (bw ? r.dcn_bytes_per_s : r.dcn_latency_s) = *v;
      }
    } else if (name == kAlgorithm) {
      const auto a = parse_algorithm(fld.text);
      if (!a || *a == CollectiveAlgorithm::kDirect) {
        fail(line_no, fld.column,
             fmt::format("algorithm '{}': expected auto, per-axis-ring, multi-axis, flat-ring or hierarchical",
                         fld.text),
             line);
      } else if (r.kind == CollectiveKind::kAllToAll && *a != CollectiveAlgorithm::kAuto) {
        fail(line_no, fld.column, "all-to-all has only the direct algorithm; leave algorithm empty or auto", line);
      } else {
        r.algorithm = *a;
      }
    }
  }

  std::string path_;
  bool seen_data_or_header_ = false;
  // Names of the columns after the eight (from the header; "" = ignored).
  std::vector<std::string> optional_columns_{kTolerance};
};

// One row's collective on its network: seconds and the algorithm used.
Result<CollectiveResult> simulate_row(const Row& r) {
  Topology parsed = std::move(Topology::parse(r.topology, r.wraparound)).value();
  std::vector<std::int64_t> dims;
  std::vector<bool> wrap;
  for (int a = 0; a < parsed.rank(); ++a) {
    dims.push_back(parsed.dim(a));
    wrap.push_back(parsed.wraps(a));
  }
  auto built = Topology::create(dims, wrap, false, r.slices);
  if (!built) return built.errors();
  const Topology topo = std::move(built).value();
  NetworkParams params;
  params.ici_bytes_per_s = r.link_bytes_per_s;
  params.ici_hop_latency_s = r.hop_latency_s;
  params.dcn_bytes_per_s = r.dcn_bytes_per_s;
  params.dcn_latency_s = r.dcn_latency_s;
  params.max_packets_per_message = kMaxPacketsPerMessage;
  CollectiveSpec spec;
  spec.kind = r.kind;
  spec.bytes = r.msg_bytes;
  spec.algorithm = r.algorithm;
  if (r.axes_mask != 0) spec.groups = groups_spanning_axes(topo, r.axes_mask);
  return simulate_collective(topo, params, spec);
}

nlohmann::json row_json(const Row& r, const CollectiveResult& result, double error, double tol, bool ok) {
  return {{"line", r.line},
          {"collective", r.collective},
          {"topology", r.topology},
          {"wraparound", r.wraparound},
          {"group", r.group},
          {"msg_bytes", r.msg_bytes},
          {"link_bytes_per_s_one_way", r.link_bytes_per_s},
          {"hop_latency_s", r.hop_latency_s},
          {"slices", r.slices},
          {"dcn_bytes_per_s_per_chip", r.dcn_bytes_per_s},
          {"dcn_latency_s", r.dcn_latency_s},
          {"ref_time_s", r.ref_time_s},
          {"tpusim_time_s", result.seconds},
          {"error", error},
          {"tolerance", tol},
          {"within_tolerance", ok},
          {"algorithm", result.algorithm}};
}

}  // namespace

int validate_collective_csv(const std::string& path, double tolerance, bool json, std::ostream& out,
                            std::ostream& err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    err << Diagnostic{path, 0, 0, "cannot open the collective reference file", {}}.format() << "\n";
    return 2;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  RowReader reader(path);
  reader.read(buffer.str());
  if (!reader.errors.empty()) {
    const std::string all = format_all(reader.errors);
    err << all;
    if (!all.empty() && all.back() != '\n') err << "\n";
    return 2;
  }
  const std::vector<Row>& rows = reader.rows;
  if (rows.empty()) {
    err << Diagnostic{path, 0, 0, "no rows to validate", {}}.format() << "\n";
    return 2;
  }

  nlohmann::json jrows = nlohmann::json::array();
  int outside = 0;
  if (!json) {
    out << fmt::format("{:<15} {:<8} {:<5} {:<5} {:>12} {:>12} {:>12} {:>8} {:>6}  {}\n", "collective",
                       "topology", "wrap", "group", "msg_bytes", "ref_us", "tpusim_us", "error", "status",
                       "algorithm");
  }
  for (const Row& r : rows) {
    auto result = simulate_row(r);
    if (!result) {
      err << Diagnostic{path, r.line, 1, result.errors().front().message, {}}.format() << "\n";
      return 2;
    }
    const double tol = r.tolerance.value_or(tolerance);
    const double error = (result->seconds - r.ref_time_s) / r.ref_time_s;
    const bool ok = std::abs(error) <= tol;
    if (!ok) ++outside;
    if (json) {
      jrows.push_back(row_json(r, *result, error, tol, ok));
    } else {
      out << fmt::format("{:<15} {:<8} {:<5} {:<5} {:>12} {:>12} {:>12} {:>+7.2f}% {:>6}  {}\n", r.collective,
                         r.slices > 1 ? fmt::format("{}x({})", r.slices, r.topology) : r.topology,
                         r.wraparound ? "true" : "false", r.group, static_cast<long long>(std::llround(r.msg_bytes)),
                         fmt_us(r.ref_time_s), fmt_us(result->seconds), error * 100, ok ? "ok" : "FAIL",
                         result->algorithm);
    }
  }
  if (json) {
    nlohmann::json doc = {{"file", path},
                          {"tolerance", tolerance},
                          {"rows", jrows},
                          {"outside_tolerance", outside},
                          {"passed", outside == 0}};
    out << json_text(doc, 2) << "\n";
  } else {
    out << fmt::format("{} rows, {} outside tolerance (default {:.1f}%)\n", rows.size(), outside, tolerance * 100);
  }
  return outside == 0 ? 0 : 1;
}

}  // namespace tpusim::interconnect
