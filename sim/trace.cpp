#include "sim/trace.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <ostream>

#include "common/json_text.h"

namespace tpusim {
namespace {
std::string json_quote(std::string_view s) { return json_text(nlohmann::json(std::string(s))); }
}  // namespace

TraceWriter::TraceWriter(std::ostream& out, double merge_gap_s) : out_(out), merge_gap_s_(merge_gap_s) {
  out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
}

TraceWriter::~TraceWriter() { finish(); }

int TraceWriter::pid_of(std::string_view process) {
  for (size_t i = 0; i < processes_.size(); ++i) {
    if (processes_[i] == process) return static_cast<int>(i);
  }
  processes_.emplace_back(process);
  const int pid = static_cast<int>(processes_.size() - 1);
  out_ << (first_ ? "" : ",\n")
       << fmt::format("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":{}}}}}", pid,
                      json_quote(process));
  first_ = false;
  return pid;
}

int TraceWriter::track(std::string_view process, std::string_view thread, std::string_view count_name) {
  const int pid = pid_of(process);
  const int tid = static_cast<int>(track_pid_.size());
  track_pid_.push_back(pid);
  count_name_.emplace_back(count_name);
  named_ops_.push_back(false);
  open_.emplace_back();
  out_ << ",\n"
       << fmt::format("{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}", pid,
                      tid, json_quote(thread));
  return tid;
}

void TraceWriter::name_ops_on(int track) {
  if (track >= 0 && static_cast<std::size_t>(track) < named_ops_.size()) named_ops_[static_cast<std::size_t>(track)] = true;
}

void TraceWriter::emit(int track, const Open& s) {
  // Chrome trace timestamps are microseconds.
  out_ << (first_ ? "" : ",\n")
       << fmt::format("{{\"ph\":\"X\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{:.6f},\"dur\":{:.6f}", json_quote(s.name),
                      track_pid_[static_cast<size_t>(track)], track, s.start * 1e6, (s.end - s.start) * 1e6);
  std::string args;
  if (s.count > 1) args += fmt::format("\"{}\":{}", count_name_[static_cast<size_t>(track)], s.count);
  if (s.figures.flops >= 0) args += fmt::format("{}\"flops\":{:.9g}", args.empty() ? "" : ",", s.figures.flops);
  if (s.figures.hbm_bytes >= 0) {
    args += fmt::format("{}\"hbm_bytes\":{:.9g}", args.empty() ? "" : ",", s.figures.hbm_bytes);
  }
  if (!s.limiter_s.empty()) {
    const auto most = std::max_element(s.limiter_s.begin(), s.limiter_s.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
    args += fmt::format("{}\"limiter\":{}", args.empty() ? "" : ",", json_quote(most->first));
  }
  if (op_names_ != nullptr && named_ops_[static_cast<size_t>(track)]) {
    if (const auto it = op_names_->find(s.name); it != op_names_->end()) {
      args += fmt::format("{}\"op_name\":{}", args.empty() ? "" : ",", json_quote(it->second));
    }
  }
  if (!args.empty()) out_ << ",\"args\":{" << args << "}";
  out_ << "}";
  first_ = false;
  ++events_;
}

void TraceWriter::slice(int track, std::string_view name, double start_s, double end_s, Figures figures) {
  if (finished_ || track < 0 || static_cast<size_t>(track) >= open_.size()) return;
  Open& o = open_[static_cast<size_t>(track)];
  if (o.count > 0 && o.name == name && start_s - o.end <= merge_gap_s_) {
    o.end = std::max(o.end, end_s);
    ++o.count;
    if (figures.flops >= 0) o.figures.flops = std::max(0.0, o.figures.flops) + figures.flops;
    if (figures.hbm_bytes >= 0) o.figures.hbm_bytes = std::max(0.0, o.figures.hbm_bytes) + figures.hbm_bytes;
    o.add_limiter(figures.limiter, end_s - start_s);
    return;
  }
  if (o.count > 0) emit(track, o);
  o.name = name;
  o.start = start_s;
  o.end = end_s;
  o.count = 1;
  o.figures = figures;
  o.limiter_s.clear();
  o.add_limiter(figures.limiter, end_s - start_s);
}

void TraceWriter::Open::add_limiter(std::string_view limiter, double seconds) {
  if (limiter.empty()) return;
  for (auto& [name, s] : limiter_s) {
    if (name == limiter) {
      s += seconds;
      return;
    }
  }
  limiter_s.emplace_back(limiter, seconds);
}

void TraceWriter::counter(std::string_view process, std::string_view name, double t_s, double value) {
  if (finished_) return;
  const int pid = pid_of(process);
  auto it = std::find_if(counters_.begin(), counters_.end(),
                         [&](const Counter& c) { return c.pid == pid && c.name == name; });
  if (it == counters_.end()) {
    counters_.push_back(Counter{pid, std::string(name), value});
  } else if (it->value == value) {
    return;
  } else {
    it->value = value;
  }
  out_ << (first_ ? "" : ",\n")
       << fmt::format("{{\"ph\":\"C\",\"name\":{},\"pid\":{},\"ts\":{:.6f},\"args\":{{\"value\":{:.9g}}}}}",
                      json_quote(name), pid, t_s * 1e6, value);
  first_ = false;
  ++events_;
}

void TraceWriter::finish() {
  if (finished_) return;
  for (size_t t = 0; t < open_.size(); ++t) {
    if (open_[t].count > 0) emit(static_cast<int>(t), open_[t]);
  }
  out_ << "\n]}\n";
  out_.flush();
  finished_ = true;
}

}  // namespace tpusim
