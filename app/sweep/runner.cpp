#include "app/sweep/runner.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <deque>
#include <functional>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <ostream>
#include <poll.h>
#include <map>
#include <set>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app/pipeline.h"
#include "common/config_loader.h"
#include "app/sweep/point.h"
#include "common/json_text.h"

namespace tpusim::sweep {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One (point, workload) to run: everything a rank needs, so a worker rank
// runs it without the spec (item_json / item_from_json carry it over MPI).
struct Item {
  std::size_t index = 0;            // point × workloads + workload (the shard key)
  std::vector<std::string> args;    // argv after the binary
  std::vector<std::string> metrics; // report paths to keep
  double timeout_s = 0;             // 0 = none
  ProxyModel proxy;
  double area = 0;
  Record record;                    // filled up front: identity, params, values, area
};

// ordered_json throughout, so a record keeps its key order across ranks.
Record item_json(const Item& it) {
  Record proxy = Record::object();
#define TPUSIM_PROXY_TO_JSON(n, def, doc) proxy[#n] = it.proxy.n;
  TPUSIM_PROXY_COEFFS(TPUSIM_PROXY_TO_JSON)
#undef TPUSIM_PROXY_TO_JSON
  return {{"index", it.index}, {"args", it.args},   {"metrics", it.metrics}, {"timeout_s", it.timeout_s},
          {"proxy", proxy},    {"area", it.area},   {"record", it.record}};
}

// False if `j` is not an item as item_json writes it.
bool item_from_json(const Record& j, Item& it) {
  try {
    it.index = j.at("index").get<std::size_t>();
    it.args = j.at("args").get<std::vector<std::string>>();
    it.metrics = j.at("metrics").get<std::vector<std::string>>();
    it.timeout_s = j.at("timeout_s").get<double>();
    it.area = j.at("area").get<double>();
    it.record = j.at("record");
    const auto& proxy = j.at("proxy");
#define TPUSIM_PROXY_FROM_JSON(n, def, doc) it.proxy.n = proxy.at(#n).get<double>();
    TPUSIM_PROXY_COEFFS(TPUSIM_PROXY_FROM_JSON)
#undef TPUSIM_PROXY_FROM_JSON
    return it.record.is_object() && !it.args.empty();
  } catch (const std::exception&) {
    return false;
  }
}

struct Child {
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
  std::string out;
  std::string err;
  Clock::time_point start;
  bool timed_out = false;
  Item item;
};

std::string first_line(std::string_view s) {
  const auto nl = s.find('\n');
  return std::string(nl == std::string_view::npos ? s : s.substr(0, nl));
}

std::string trim_error(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  constexpr std::size_t kMax = 4000;
  if (s.size() > kMax) s = s.substr(0, kMax) + "\n… (truncated)";
  return s;
}

bool write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

std::string params_text(const Record& r) {
  std::string s;
  for (const auto& [k, v] : r["params"].items()) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, v.get<std::string>());
  return s;
}

// Starts `argv` with stdout/stderr on pipes; the child dies with us.
bool spawn(const std::vector<std::string>& args, Child& c, std::string& error) {
  int out[2];
  int errp[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    error = fmt::format("pipe: {}", std::strerror(errno));
    return false;
  }
  if (pipe2(errp, O_CLOEXEC) != 0) {
    error = fmt::format("pipe: {}", std::strerror(errno));
    close(out[0]);
    close(out[1]);
    return false;
  }
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    error = fmt::format("fork: {}", std::strerror(errno));
    for (int fd : {out[0], out[1], errp[0], errp[1]}) close(fd);
    return false;
  }
  if (pid == 0) {
    // Only async-signal-safe calls from here on.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(errp[1], STDERR_FILENO);
    execv(argv[0], argv.data());
    const char msg[] = "cannot execute the tpusim binary\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(127);
  }
  close(out[1]);
  close(errp[1]);
  c.pid = pid;
  c.out_fd = out[0];
  c.err_fd = errp[0];
  c.start = Clock::now();
  return true;
}

// Fills status, metrics, time, power from a finished child.
void finish_record(Child& c, int wait_status) {
  Record& r = c.item.record;
  const std::string mode = r["mode"].get<std::string>();
  r["wall_s"] = seconds_since(c.start);
  nlohmann::json report;
  bool parsed = false;
  if (!c.out.empty()) {
    try {
      report = nlohmann::json::parse(c.out);
      parsed = report.is_object();
    } catch (const std::exception&) {
      parsed = false;
    }
  }
  std::string status = "ok";
  std::string error;
  if (c.timed_out) {
    status = "timeout";
    error = fmt::format("killed after the {} s timeout", c.item.timeout_s);
  } else if (WIFSIGNALED(wait_status)) {
    status = "failed";
    error = fmt::format("the simulation process died of signal {} ({})", WTERMSIG(wait_status),
                        strsignal(WTERMSIG(wait_status)));
  } else if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    status = "failed";
    error = fmt::format("exit status {}", WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1);
  } else if (!parsed) {
    status = "failed";
    error = "the simulation printed no JSON report";
  }
  if (!c.err.empty() && status != "ok") error += ": " + trim_error(c.err);
  Record metrics = Record::object();
  if (parsed) {
    for (const auto& p : c.item.metrics) {
      const nlohmann::json* v = find_path(report, p);
      metrics[p] = v == nullptr ? nlohmann::json() : *v;
    }
    auto num = [&](std::string_view path) {
      const nlohmann::json* v = find_path(report, path);
      return v != nullptr && v->is_number() ? v->get<double>() : 0.0;
    };
    Activity a;
    if (mode == "run") {
      a = {num("mxu.flops"), num("hbm.bytes"), num("vmem.bytes"), num("step_time_s")};
    } else if (report.contains("modules") && report["modules"].is_array()) {
      for (const auto& m : report["modules"]) {
        a.flops += find_path(m, "total.flops") ? find_path(m, "total.flops")->get<double>() : 0;
        a.hbm_bytes += find_path(m, "total.bytes_accessed") ? find_path(m, "total.bytes_accessed")->get<double>() : 0;
        a.time_s += find_path(m, "total.bound_time_s") ? find_path(m, "total.bound_time_s")->get<double>() : 0;
      }
    } else {
      a = {num("total.flops"), num("total.bytes_accessed"), 0, num("total.bound_time_s")};
    }
    if (a.time_s > 0) r["time_s"] = a.time_s;
    if (auto p = power_proxy(c.item.proxy, c.item.area, a)) r["power_proxy"] = *p;
  }
  r["status"] = status;
  r["metrics"] = std::move(metrics);
  r["error"] = error;
}

// Runs up to `jobs` items at once as child processes of `binary`.
class Executor {
 public:
  Executor(std::string binary, int jobs) : binary_(std::move(binary)), jobs_(std::max(1, jobs)) {}

  [[nodiscard]] bool has_slot() const { return static_cast<int>(running_.size()) < jobs_; }
  [[nodiscard]] std::size_t running() const { return running_.size(); }

  // Starts `it`; if it cannot be started, returns it with a failed record.
  std::optional<Item> start(Item it) {
    Child c;
    c.item = std::move(it);
    std::vector<std::string> args{binary_};
    args.insert(args.end(), c.item.args.begin(), c.item.args.end());
    std::string e;
    if (!spawn(args, c, e)) {
      c.item.record["status"] = "failed";
      c.item.record["metrics"] = Record::object();
      c.item.record["error"] = e;
      return std::move(c.item);
    }
    running_.push_back(std::move(c));
    return std::nullopt;
  }

  // Collects output for up to `wait_ms` (less if a deadline is nearer),
  // kills children past their timeout, and returns the items that ended,
  // their records filled. With nothing running it just sleeps.
  Result<std::vector<Item>> poll_children(int wait_ms) {
    std::vector<pollfd> fds;
    std::vector<std::pair<std::size_t, int*>> owners;
    for (std::size_t i = 0; i < running_.size(); ++i) {
      Child& c = running_[i];
      for (int* fdp : {&c.out_fd, &c.err_fd}) {
        if (*fdp >= 0) {
          fds.push_back(pollfd{*fdp, POLLIN, 0});
          owners.emplace_back(i, fdp);
        }
      }
      if (c.item.timeout_s > 0 && !c.timed_out) {
        const double left = c.item.timeout_s - seconds_since(c.start);
        wait_ms = std::min(wait_ms, std::max(0, static_cast<int>(left * 1000) + 1));
      }
    }
    const int n = poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno != EINTR) return Diagnostic{"<sweep>", 0, 0, fmt::format("poll: {}", std::strerror(errno)), ""};
    for (std::size_t k = 0; n > 0 && k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      Child& c = running_[owners[k].first];
      int* fdp = owners[k].second;
      char buf[65536];
      const ssize_t got = read(*fdp, buf, sizeof buf);
      if (got > 0) {
        (fdp == &c.out_fd ? c.out : c.err).append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(*fdp);
        *fdp = -1;
      }
    }
    // Timeouts, then reap children whose pipes are closed.
    for (auto& c : running_) {
      if (c.item.timeout_s > 0 && !c.timed_out && seconds_since(c.start) > c.item.timeout_s) {
        kill(c.pid, SIGKILL);
        c.timed_out = true;
      }
    }
    std::vector<Item> ended;
    for (std::size_t i = 0; i < running_.size();) {
      Child& c = running_[i];
      if (c.out_fd >= 0 || c.err_fd >= 0) {
        ++i;
        continue;
      }
      int status = 0;
      while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
      }
      finish_record(c, status);
      ended.push_back(std::move(c.item));
      running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return ended;
  }

 private:
  std::string binary_;
  int jobs_;
  std::vector<Child> running_;
};

// How long rank 0 (and a worker) waits in poll() between looks at the
// message queue: short, so a worker asking for a run waits at most this.
constexpr int kRankPollMs = 2;
constexpr int kLocalPollMs = 200;

class Progress {
 public:
  Progress(const RunnerOptions& opt, std::ostream& err, std::size_t total)
      : opt_(opt), err_(err), total_(total), start_(Clock::now()) {}

  // `rank` >= 0: the rank of a distributed sweep that ran it.
  void point_done(const Record& r, std::size_t ok, std::size_t bad, int rank) {
    ++done_;
    ok_ = ok;
    bad_ = bad;
    if (opt_.verbosity < 0) return;
    if (opt_.tty) {
      draw();
      return;
    }
    err_ << fmt::format("[{}/{}] {:<7} point {} {} {} ({:.2f} s{}){}\n", done_, total_, r["status"].get<std::string>(),
                        r["point"].get<std::size_t>(), r["workload"].get<std::string>(), params_text(r),
                        r.contains("wall_s") ? r["wall_s"].get<double>() : 0.0,
                        rank >= 0 ? fmt::format(", rank {}", rank) : "",
                        r["error"].get<std::string>().empty() ? "" : ": " + first_line(r["error"].get<std::string>()));
    err_.flush();
  }
  void tick() {
    if (opt_.tty && opt_.verbosity >= 0 && seconds_since(last_) > 0.2) draw();
  }
  void end() {
    if (opt_.tty && opt_.verbosity >= 0 && total_ > 0) err_ << "\n";
  }

 private:
  void draw() {
    last_ = Clock::now();
    const double el = seconds_since(start_);
    const double frac = total_ == 0 ? 1.0 : static_cast<double>(done_) / static_cast<double>(total_);
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(frac * kWidth);
    std::string eta = "--:--";
    if (done_ > 0) {
      const auto rem = static_cast<long>(el / static_cast<double>(done_) * static_cast<double>(total_ - done_));
      eta = fmt::format("{}:{:02}", rem / 60, rem % 60);
    }
    err_ << fmt::format("\r\x1b[K[{}{}] {}/{}  ok {}  failed {}  ETA {}", std::string(filled, '#'),
                        std::string(kWidth - filled, '.'), done_, total_, ok_, bad_, eta);
    err_.flush();
  }
  const RunnerOptions& opt_;
  std::ostream& err_;
  std::size_t total_;
  std::size_t done_ = 0;
  std::size_t ok_ = 0;
  std::size_t bad_ = 0;
  Clock::time_point start_;
  Clock::time_point last_;
};

}  // namespace

bool parse_shard(std::string_view text, int& index, int& count, std::string& error) {
  const auto slash = text.find('/');
  int k = -1;
  int n = 0;
  if (slash != std::string_view::npos) {
    try {
      std::size_t used = 0;
      const std::string ks(text.substr(0, slash));
      const std::string ns(text.substr(slash + 1));
      k = std::stoi(ks, &used);
      if (used != ks.size()) k = -1;
      n = std::stoi(ns, &used);
      if (used != ns.size()) n = 0;
    } catch (const std::exception&) {
      k = -1;
    }
  }
  if (k < 0 || n < 1 || k >= n) {
    error = fmt::format("--shard takes K/N with 0 <= K < N (e.g. 0/4), got '{}'", text);
    return false;
  }
  index = k;
  count = n;
  return true;
}

namespace {

// Opens (and locks) the results file; on --resume, the keys of the records
// already there go into `done`.
Result<int> open_results(const RunnerOptions& opt, SweepSummary& sum, std::set<std::string>& done, std::ostream& err) {
  std::error_code ec;
  if (const auto dir = std::filesystem::path(opt.results_path).parent_path(); !dir.empty()) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return Diagnostic{dir.string(), 0, 0, fmt::format("cannot create the directory: {}", ec.message()), ""};
  }
  const int fd = open(opt.results_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Diagnostic{opt.results_path, 0, 0, fmt::format("cannot write: {}", std::strerror(errno)), ""};
  const auto fail = [fd](Diagnostic d) -> Result<int> {
    close(fd);
    return d;
  };
  // One writer per results file: a second sweep into it would run and write
  // every point again. The lock goes with the descriptor (and the process).
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    return fail(Diagnostic{opt.results_path, 0, 0,
                           errno == EWOULDBLOCK
                               ? "another sweep is writing this results file; wait for it (then --resume) or write "
                                 "elsewhere (--results, --out)"
                               : fmt::format("cannot lock: {}", std::strerror(errno)),
                           ""});
  }
  const bool exists = std::filesystem::file_size(opt.results_path, ec) > 0 && !ec;
  if (exists && !opt.resume) {
    return fail(Diagnostic{opt.results_path, 0, 0,
                           "results file already exists; pass --resume to continue it, or remove it to start over",
                           ""});
  }
  if (exists) {
    std::string e;
    if (!repair_jsonl_tail(opt.results_path, e)) return fail(Diagnostic{opt.results_path, 0, 0, e, ""});
    auto old = read_records({opt.results_path});
    if (!old) {
      close(fd);
      return old.errors();
    }
    for (const auto& r : old->records) done.insert(record_key(r));
    // Their points run again (nothing readable records them).
    for (const auto& d : old->skipped) err << d.format() << "; its point runs again\n";
    sum.corrupt = old->corrupt;
  }
  return fd;
}

// This shard's runs: to run (`queue`), or recorded at once (`immediate`:
// invalid or infeasible configurations); those already done are skipped.
void plan_items(const SweepSpec& spec, const std::vector<Point>& points, const RunnerOptions& opt,
                const std::set<std::string>& done, SweepSummary& sum, std::deque<Item>& queue,
                std::vector<Record>& immediate) {
  const std::size_t nw = spec.workloads.size();
  const double timeout = opt.timeout_s.value_or(spec.timeout_s);
  for (const auto& p : points) {
    const auto overrides = p.overrides();
    auto cfg = load_config(spec.base, overrides);
    for (std::size_t w = 0; w < nw; ++w) {
      const std::size_t index = p.index * nw + w;
      if (index % static_cast<std::size_t>(opt.shard_count) != static_cast<std::size_t>(opt.shard_index)) continue;
      ++sum.items;
      const Workload& wl = spec.workloads[w];
      Item it;
      it.index = index;
      it.timeout_s = timeout;
      it.proxy = spec.proxy;
      it.metrics = spec.metrics.empty() ? default_metrics(wl.mode) : spec.metrics;
      const std::string file = cfg ? app::path_for_chips(wl.resolved, chip_count(cfg->chip.system)) : wl.resolved;
      it.args = {std::string(mode_name(wl.mode)), file, "--chip", spec.base};
      for (const auto& o : overrides) {
        it.args.emplace_back("--set");
        it.args.push_back(o);
      }
      if (!spec.lower_for.empty() && wl.mode == Mode::kRun) {
        it.args.emplace_back("--lower-for");
        it.args.push_back(spec.lower_for);
      }
      for (const char* a : {"--format", "json", "-q"}) it.args.emplace_back(a);
      Record& r = it.record;
      r["sweep"] = spec.name;
      r["point"] = p.index;
      r["workload"] = wl.path;
      r["mode"] = std::string(mode_name(wl.mode));
      r["params"] = Record::object();
      r["values"] = Record::object();
      for (const auto& [k, v] : p.params) r["params"][k] = v;
      if (!cfg) {
        std::string why;
        for (const auto& e : cfg.errors()) why += (why.empty() ? "" : "; ") + e.format();
        r["config_hash"] = "";
        r["status"] = "failed";
        r["metrics"] = Record::object();
        r["error"] = "invalid configuration: " + trim_error(why);
        if (done.count(record_key(r)) != 0) {
          ++sum.skipped;
          continue;
        }
        immediate.push_back(std::move(r));
        continue;
      }
      for (const auto& [k, v] : p.params) {
        const ParamValue pv = param_value(cfg->chip, k);
        r["values"][k] = pv.numeric ? Record(pv.number) : Record(pv.text);
      }
      r["config_hash"] = config_hash(cfg->chip);
      it.area = area_proxy(spec.proxy, cfg->chip);
      r["area_proxy"] = it.area;
      if (done.count(record_key(r)) != 0) {
        ++sum.skipped;
        continue;
      }
      const std::string why = check_constraints(spec, cfg->chip);
      if (!why.empty()) {
        r["status"] = "infeasible";
        r["metrics"] = Record::object();
        r["error"] = why;
        immediate.push_back(std::move(r));
        continue;
      }
      queue.push_back(std::move(it));
    }
  }
}

// Rank 0 of a distributed sweep: lends runs from the shared queue to the
// other ranks and records what they send back.
class RankServer {
 public:
  using RecordFn = std::function<bool(Record&, int)>;
  RankServer(RankLink& link, std::deque<Item>& queue, RecordFn record)
      : link_(link), queue_(queue), record_(std::move(record)), nworkers_(link.size() - 1),
        lent_(static_cast<std::size_t>(nworkers_) + 1), finished_(static_cast<std::size_t>(nworkers_) + 1, false) {}

  [[nodiscard]] bool all_done() const { return workers_done_ >= nworkers_; }
  [[nodiscard]] bool write_failed() const { return write_failed_; }

  // Handles every message waiting; an error ends the sweep.
  std::optional<Diagnostic> serve() {
    while (auto m = link_.try_receive()) {
      const auto from = static_cast<std::size_t>(m->from);
      // A rank that said kDone gets nothing more: what it took could never come back.
      if (m->from < 1 || m->from > nworkers_ || finished_[from]) continue;
      if (m->tag == RankTag::kRequest) {
        lend(m->from);
      } else if (m->tag == RankTag::kResult) {
        if (auto d = take_result(m->from, m->payload)) return d;
      } else if (m->tag == RankTag::kDone) {
        finish(m->from);
      }
    }
    return std::nullopt;
  }

 private:
  void lend(int rank) {
    if (queue_.empty()) {
      link_.send(rank, RankTag::kStop, "");
      return;
    }
    Item it = std::move(queue_.front());
    queue_.pop_front();
    link_.send(rank, RankTag::kAssign, json_text(item_json(it)));
    lent_[static_cast<std::size_t>(rank)].emplace(it.index, std::move(it));
  }

  std::optional<Diagnostic> take_result(int rank, const std::string& payload) {
    Record r = Record::parse(payload, nullptr, /*allow_exceptions=*/false);
    if (r.is_discarded()) {
      return Diagnostic{"<sweep>", 0, 0, fmt::format("rank {} sent a malformed record", rank), ""};
    }
    const bool has_index = r.is_object() && r.contains("_index") && r["_index"].is_number_unsigned();
    const auto idx = has_index ? r["_index"].get<std::size_t>() : 0;
    if (has_index) r.erase("_index");
    if (!has_index || lent_[static_cast<std::size_t>(rank)].erase(idx) == 0) {
      return Diagnostic{"<sweep>", 0, 0, fmt::format("rank {} sent a record for run {} it was not given", rank, idx),
                        ""};
    }
    if (!record_(r, rank)) write_failed_ = true;
    return std::nullopt;
  }

  void finish(int rank) {
    ++workers_done_;
    const auto from = static_cast<std::size_t>(rank);
    finished_[from] = true;
    // A rank that ends with runs outstanding lost them: record that, never drop them.
    for (auto& [idx, it] : lent_[from]) {
      it.record["status"] = "failed";
      it.record["metrics"] = Record::object();
      it.record["error"] = fmt::format("rank {} finished without returning this run", rank);
      if (!record_(it.record, rank)) write_failed_ = true;
    }
    lent_[from].clear();
  }

  RankLink& link_;
  std::deque<Item>& queue_;
  RecordFn record_;
  int nworkers_;
  std::vector<std::map<std::size_t, Item>> lent_;  // by rank
  std::vector<bool> finished_;
  int workers_done_ = 0;
  bool write_failed_ = false;
};

}  // namespace

Result<SweepSummary> run_sweep(const SweepSpec& spec, const RunnerOptions& opt, std::ostream& err) {
  const auto t0 = Clock::now();
  SweepSummary sum;
  const std::vector<Point> points = expand_points(spec);
  sum.points = points.size();

  // Results file: resume reads what is there, otherwise it must be new.
  std::set<std::string> done;
  auto opened = open_results(opt, sum, done, err);
  if (!opened) return opened.errors();
  const int fd = *opened;
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};

  // Build this shard's items; record infeasible and invalid ones at once.
  std::deque<Item> queue;
  std::vector<Record> immediate;
  plan_items(spec, points, opt, done, sum, queue, immediate);

  Progress progress(opt, err, immediate.size() + queue.size());
  RankLink* link = opt.workers != nullptr && opt.workers->size() > 1 ? opt.workers : nullptr;
  auto record = [&](Record& r, int rank = -1) -> bool {
    const std::string status = r["status"].get<std::string>();
    if (status == "ok") ++sum.ok;
    if (status == "failed") ++sum.failed;
    if (status == "timeout") ++sum.timeout;
    if (status == "infeasible") ++sum.infeasible;
    if (status == "failed" || status == "timeout") sum.failures.push_back(r);
    const bool ok = write_all(fd, json_text(in_field_order(r)) + "\n");
    progress.point_done(r, sum.ok, sum.failed + sum.timeout, link != nullptr && rank < 0 ? 0 : rank);
    return ok;
  };
  for (auto& r : immediate) {
    if (!record(r)) return Diagnostic{opt.results_path, 0, 0, "write failed", ""};
  }

  // Rank 0 of a distributed sweep serves the other ranks from the same
  // queue between its own runs; with no other ranks this is the local runner.
  std::optional<RankServer> server;
  if (link != nullptr) server.emplace(*link, queue, [&record](Record& r, int rank) { return record(r, rank); });
  bool write_failed = false;
  Executor exec(opt.binary, opt.jobs);
  while (!queue.empty() || exec.running() > 0 || (server && !server->all_done())) {
    while (!queue.empty() && exec.has_slot()) {
      Item it = std::move(queue.front());
      queue.pop_front();
      if (auto failed = exec.start(std::move(it))) {
        if (!record(failed->record)) write_failed = true;
      }
    }
    if (server) {
      if (auto d = server->serve()) return *d;
    }
    auto ended = exec.poll_children(link != nullptr ? kRankPollMs : kLocalPollMs);
    if (!ended) return ended.errors();
    for (auto& it : *ended) {
      if (!record(it.record)) write_failed = true;
    }
    progress.tick();
  }
  progress.end();
  if (write_failed || (server && server->write_failed())) {
    return Diagnostic{opt.results_path, 0, 0, "write failed", ""};
  }
  sum.wall_s = seconds_since(t0);
  return sum;
}

Result<std::size_t> run_sweep_worker(const RunnerOptions& opt, RankLink& link) {
  Executor exec(opt.binary, opt.jobs);
  std::size_t ran = 0;
  bool asked = false;
  bool stopped = false;
  auto send_result = [&](Item& it) {
    it.record["_index"] = it.index;  // rank 0 matches it to the run it lent
    link.send(0, RankTag::kResult, json_text(it.record));
    ++ran;
  };
  while (!stopped || exec.running() > 0) {
    if (!stopped && !asked && exec.has_slot()) {
      link.send(0, RankTag::kRequest, "");
      asked = true;
    }
    while (auto m = link.try_receive()) {
      if (m->from != 0) continue;
      if (m->tag == RankTag::kStop) {
        asked = false;
        stopped = true;
      } else if (m->tag == RankTag::kAssign) {
        asked = false;
        Item it;
        const Record j = Record::parse(m->payload, nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded() || !item_from_json(j, it)) {
          return Diagnostic{"<sweep>", 0, 0, fmt::format("rank {}: malformed run from rank 0", link.rank()), ""};
        }
        if (auto failed = exec.start(std::move(it))) send_result(*failed);
      }
    }
    auto ended = exec.poll_children(kRankPollMs);
    if (!ended) return ended.errors();
    for (auto& it : *ended) send_result(it);
  }
  link.send(0, RankTag::kDone, "");
  link.flush();
  return ran;
}

void release_workers(RankLink& link) {
  int done = 0;
  while (done < link.size() - 1) {
    auto m = link.try_receive();
    if (!m) {
      poll(nullptr, 0, kRankPollMs);
      continue;
    }
    if (m->tag == RankTag::kRequest) link.send(m->from, RankTag::kStop, "");
    if (m->tag == RankTag::kDone) ++done;
  }
  link.flush();
}

std::string format_summary(const SweepSpec& spec, const RunnerOptions& opt, const SweepSummary& s) {
  std::string out = fmt::format("sweep {}: {} points x {} workload{}", spec.name, s.points, spec.workloads.size(),
                                spec.workloads.size() == 1 ? "" : "s");
  if (opt.shard_count > 1) out += fmt::format(", shard {}/{} ({} runs)", opt.shard_index, opt.shard_count, s.items);
  out += fmt::format("\n  {} ok, {} failed, {} timeout, {} infeasible, {} already recorded; {:.1f} s wall\n", s.ok,
                     s.failed, s.timeout, s.infeasible, s.skipped, s.wall_s);
  out += fmt::format("  results: {}\n", opt.results_path);
  if (s.corrupt > 0) {
    out += fmt::format("  {} corrupt line{} in the results file (listed above; their points ran again)\n", s.corrupt,
                       s.corrupt == 1 ? "" : "s");
  }
  if (opt.workers != nullptr && opt.workers->size() > 1) {
    out += fmt::format("  ranks: {} (rank 0 coordinates and writes; up to {} run{} per rank at once)\n",
                       opt.workers->size(), opt.jobs, opt.jobs == 1 ? "" : "s");
  }
  if (!s.failures.empty()) {
    out += "failures:\n";
    for (const auto& r : s.failures) {
      out += fmt::format("  point {} {} [{}] {}: {}\n", r["point"].get<std::size_t>(), r["workload"].get<std::string>(),
                         params_text(r), r["status"].get<std::string>(), first_line(r["error"].get<std::string>()));
    }
  }
  return out;
}

}  // namespace tpusim::sweep
