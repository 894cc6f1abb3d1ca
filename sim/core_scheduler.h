// The processes of one chip's TensorCores (their sequencers and units) as
// C++20 coroutines run by one SystemC thread (for simulator speed).
//
// A SystemC thread switch costs ~600 instructions of kernel work; a
// TensorCore's sequencer and dozen units used to be a thread each and
// switched ~5 times per simulated instruction. Here they are coroutines (a
// resume is a few instructions) on a small discrete-event scheduler of the
// core's own, with an explicit, deterministic order:
//  - Time is SystemC's: integer ticks of the kernel's resolution.
//  - At one time, processes run in the order they became ready: timed
//    wake-ups by (time, order of the wait), then signal waiters in the order
//    they waited.
//  - A signal notified now wakes its waiters after everything ready now has
//    run (a delta cycle, like sc_event::notify(SC_ZERO_TIME)); several
//    notifications before then wake them once.
//  - A process may wait for a SystemC event of the outside world (a
//    collective's group, the loop coordinator): `external()`. Such waiters are
//    resumed at every step of the scheduler and re-check their condition.
// Synchronized mode follows the kernel's clock: before advancing to its next
// time the scheduler wait()s for it, so every other SystemC process sees
// each access in time order. Run-ahead mode (the default for a chip: its
// state is its own) does not wait and keeps its own time ahead of the
// kernel's (TLM-2.0 temporal decoupling: HBM transports carry the offset as
// their annotated delay). Where a process touches shared state (a
// collective) it first awaits sync(), the kernel catching up with the
// core; while any process waits for the outside world the scheduler follows
// the kernel's clock. At its end it waits once, so the kernel's clock ends
// at the core's.
#pragma once

#include <coroutine>
#include <cstdint>
#include <exception>
#include <limits>
#include <queue>
#include <systemc>
#include <utility>
#include <vector>

namespace tpusim {

// A coroutine a CoreScheduler runs: a process (CoreScheduler::spawn) or a
// sub-routine of one (`co_await sub(...)` runs it to its end, then resumes
// the caller). Owns its frame: destroying a task destroys a suspended
// coroutine with its locals.
class [[nodiscard]] CoTask {
 public:
  struct promise_type {
    std::coroutine_handle<> continuation;  // a sub-routine's caller
    CoTask get_return_object() { return CoTask(std::coroutine_handle<promise_type>::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct Final {
      [[nodiscard]] bool await_ready() const noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        const std::coroutine_handle<> next = h.promise().continuation;
        return next ? next : std::noop_coroutine();
      }
      void await_resume() const noexcept {}
    };
    Final final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    [[noreturn]] void unhandled_exception() noexcept { std::terminate(); }
  };

  CoTask(CoTask&& other) noexcept : h_(std::exchange(other.h_, {})) {}
  CoTask(const CoTask&) = delete;
  CoTask& operator=(const CoTask&) = delete;
  CoTask& operator=(CoTask&&) = delete;
  ~CoTask() {
    if (h_) h_.destroy();
  }
  [[nodiscard]] bool done() const { return !h_ || h_.done(); }

  // Awaiting a task runs it (symmetric transfer) and resumes the caller at its end.
  [[nodiscard]] bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> caller) noexcept {
    h_.promise().continuation = caller;
    return h_;
  }
  void await_resume() const noexcept {}

 private:
  friend class CoreScheduler;
  explicit CoTask(std::coroutine_handle<promise_type> h) : h_(h) {}
  std::coroutine_handle<promise_type> h_;
};

// Something processes of one scheduler wait for and notify.
class CoSignal {
 private:
  friend class CoreScheduler;
  std::vector<std::coroutine_handle<>> waiters_;
  bool pending_ = false;
};

class CoreScheduler {
 public:
  using Ticks = sc_core::sc_time::value_type;  // the kernel's time unit
  static constexpr Ticks kNever = std::numeric_limits<Ticks>::max();

  explicit CoreScheduler(bool run_ahead);
  CoreScheduler(const CoreScheduler&) = delete;
  CoreScheduler& operator=(const CoreScheduler&) = delete;

  // Before run(): a process, started in spawn order.
  void spawn(CoTask task) { tasks_.push_back(std::move(task)); }
  // The body of one SystemC thread: runs until every process has finished
  // or waits for something nobody will do (a deadlock: the processes stay
  // suspended; their waits are the caller's to report).
  void run();

  [[nodiscard]] Ticks now() const { return now_; }
  // sc_time::from_value(now()).to_seconds(), bit for bit.
  [[nodiscard]] double now_seconds() const { return now_s_; }
  // sc_time(s, SC_SEC).value(), bit for bit, without the kernel's context lookups.
  [[nodiscard]] Ticks ticks(double s) const {
    if (ticks_per_s_ <= 0 || s == 0) return sc_core::sc_time(s, sc_core::SC_SEC).value();
    return static_cast<Ticks>(static_cast<std::int64_t>(s * ticks_per_s_ + 0.5));
  }
  [[nodiscard]] bool run_ahead() const { return run_ahead_; }
  void set_run_ahead(bool on) { run_ahead_ = on; }
  // How far this core's time is ahead of the kernel's (run-ahead mode).
  [[nodiscard]] sc_core::sc_time offset() const {
    const Ticks stamp = sc_core::sc_time_stamp().value();
    return sc_core::sc_time::from_value(now_ > stamp ? now_ - stamp : 0);
  }

  // co_await at(t): resume at tick t (at once when t is not in the future).
  struct At {
    CoreScheduler* s;
    Ticks t;
    [[nodiscard]] bool await_ready() const noexcept { return t <= s->now_; }
    void await_suspend(std::coroutine_handle<> h) { s->timed_.push(Timed{t, s->seq_++, h}); }
    void await_resume() const noexcept {}
  };
  At at(Ticks t) { return At{this, t}; }

  // co_await on(sig): resume in the delta after the next notify(sig).
  struct On {
    CoSignal* sig;
    [[nodiscard]] bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) { sig->waiters_.push_back(h); }
    void await_resume() const noexcept {}
  };
  static On on(CoSignal& sig) { return On{&sig}; }
  void notify(CoSignal& sig) {
    if (!sig.pending_) {
      sig.pending_ = true;
      pending_.push_back(&sig);
    }
  }
  [[nodiscard]] static bool has_waiters(const CoSignal& sig) { return !sig.waiters_.empty(); }

  // co_await external(e, until): resume once `e` (a SystemC event) fires or
  // at tick `until`, or earlier: the waiter re-checks its condition.
  struct External {
    CoreScheduler* s;
    const sc_core::sc_event* event;
    Ticks until;
    [[nodiscard]] bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) { s->externals_.push_back(Ext{h, event, until}); }
    void await_resume() const noexcept {}
  };
  External external(const sc_core::sc_event* e, Ticks until = kNever) { return External{this, e, until}; }

  // co_await sync(): resume once the kernel's clock has reached this
  // scheduler's time (at once when it has). Before a process touches state
  // that other SystemC processes read by the kernel's time (the collective
  // fabric), so it sees this core's accesses in time order.
  struct Sync {
    CoreScheduler* s;
    [[nodiscard]] bool await_ready() const noexcept { return sc_core::sc_time_stamp().value() >= s->now_; }
    void await_suspend(std::coroutine_handle<> h) { s->externals_.push_back(Ext{h, nullptr, s->now_}); }
    void await_resume() const noexcept {}
  };
  Sync sync() { return Sync{this}; }

 private:
  struct Timed {
    Ticks t;
    std::uint64_t seq;
    std::coroutine_handle<> h;
    bool operator>(const Timed& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  struct Ext {
    std::coroutine_handle<> h;
    const sc_core::sc_event* event;
    Ticks until;
  };
  // Runs what is ready now, delta after delta, until nothing is.
  void drain();
  void set_now(Ticks t);
  // Makes the timed waits due at now_ and every external waiter ready.
  void release_due();

  bool run_ahead_;
  // The kernel's resolution in fs and ticks per second when the formulas of
  // set_now() and ticks() agree with sc_time bit for bit (else 0: sc_time).
  double resolution_fs_ = 0;
  double ticks_per_s_ = 0;
  Ticks now_ = 0;
  double now_s_ = 0;
  std::uint64_t seq_ = 0;
  std::vector<CoTask> tasks_;
  std::vector<std::coroutine_handle<>> ready_;
  std::vector<CoSignal*> pending_;
  std::priority_queue<Timed, std::vector<Timed>, std::greater<>> timed_;
  std::vector<Ext> externals_;
};

}  // namespace tpusim
