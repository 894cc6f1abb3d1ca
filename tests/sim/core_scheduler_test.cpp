// The per-core coroutine scheduler (sim/core_scheduler.h): its order of
// same-time events, delta semantics of signals, run-ahead vs synchronized
// time, waits on SystemC events, sub-routines, deadlock and frame clean-up.
// Each TEST is its own process under ctest (SystemC elaborates once per
// process); the expected logs follow from the rules in the header.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "sim/core_scheduler.h"

namespace tpusim {
namespace {

using ::testing::ElementsAre;
using Ticks = CoreScheduler::Ticks;

// One line per step: "<name>@<core time in ticks>/<kernel time in ticks>".
struct Log {
  std::vector<std::string> lines;
  void add(const CoreScheduler& s, const std::string& what) {
    lines.push_back(what + "@" + std::to_string(s.now()) + "/" + std::to_string(sc_core::sc_time_stamp().value()));
  }
};

// Runs `s` on a SystemC thread, then the kernel until no events remain.
void run_kernel(CoreScheduler& s) {
  sc_core::sc_spawn([&s] { s.run(); }, "scheduler");
  sc_core::sc_start();
}

CoTask sleeper(CoreScheduler& s, Log& log, std::string name, std::vector<Ticks> times) {
  for (Ticks t : times) {
    co_await s.at(t);
    log.add(s, name);
  }
}

TEST(CoreScheduler, SameTimeWakeUpsRunInTheOrderOfTheirWaits) {
  CoreScheduler s(/*run_ahead=*/false);
  Log log;
  // Spawn order b, a: b waits for 10 first, so it runs first at 10 and
  // waits first for 20. a's second wait for 20 and its wait for 5 (the
  // past) do not suspend it.
  s.spawn(sleeper(s, log, "b", {10, 20}));
  s.spawn(sleeper(s, log, "a", {10, 20, 20, 5}));  // 20 again and 5 (the past): no wait
  run_kernel(s);
  EXPECT_THAT(log.lines, ElementsAre("b@10/10", "a@10/10", "b@20/20", "a@20/20", "a@20/20", "a@20/20"));
}

TEST(CoreScheduler, RunAheadKeepsTheCoresTimeAheadOfTheKernelsAndCatchesUpAtTheEnd) {
  CoreScheduler s(/*run_ahead=*/true);
  Log log;
  s.spawn(sleeper(s, log, "a", {100, 250}));
  run_kernel(s);
  // The kernel never advanced while the core ran: one activation at 0.
  EXPECT_THAT(log.lines, ElementsAre("a@100/0", "a@250/0"));
  EXPECT_EQ(sc_core::sc_time_stamp().value(), 250u);  // the final catch-up
}

CoTask notifier(CoreScheduler& s, Log& log, CoSignal& sig, Ticks at, int times) {
  co_await s.at(at);
  log.add(s, "notify");
  for (int i = 0; i < times; ++i) s.notify(sig);
  log.add(s, "after-notify");
}

CoTask listener(CoreScheduler& s, Log& log, CoSignal& sig, std::string name, int wakes) {
  for (int i = 0; i < wakes; ++i) {
    co_await CoreScheduler::on(sig);
    log.add(s, name);
  }
}

TEST(CoreScheduler, ASignalWakesItsWaitersOnceInTheNextDeltaInTheOrderTheyWaited) {
  CoreScheduler s(/*run_ahead=*/false);
  Log log;
  CoSignal sig;
  s.spawn(notifier(s, log, sig, 7, 3));  // three notifications in one delta: one wake-up
  s.spawn(listener(s, log, sig, "x", 2));
  s.spawn(listener(s, log, sig, "y", 1));
  run_kernel(s);
  // The notifier finishes its delta first; x and y wake after it, in the
  // order they waited; x waits again and nobody notifies: it stays suspended.
  EXPECT_THAT(log.lines, ElementsAre("notify@7/7", "after-notify@7/7", "x@7/7", "y@7/7"));
  EXPECT_TRUE(CoreScheduler::has_waiters(sig));
}

CoTask inner(CoreScheduler& s, Log& log, Ticks at, int& out) {
  co_await s.at(at);
  log.add(s, "inner");
  out = 42;
}

CoTask outer(CoreScheduler& s, Log& log) {
  int v = 0;
  co_await inner(s, log, 30, v);
  log.add(s, "outer got " + std::to_string(v));
  co_await inner(s, log, 40, v);
  log.add(s, "outer again");
}

TEST(CoreScheduler, ASubRoutineRunsToItsEndBeforeItsCallerResumes) {
  CoreScheduler s(/*run_ahead=*/false);
  Log log;
  s.spawn(outer(s, log));
  s.spawn(sleeper(s, log, "other", {35}));
  run_kernel(s);
  EXPECT_THAT(log.lines, ElementsAre("inner@30/30", "outer got 42@30/30", "other@35/35", "inner@40/40",
                                     "outer again@40/40"));
}

// Another SystemC process: raises `fired` and notifies `ev` at tick `at`.
struct Raiser : sc_core::sc_module {
  sc_core::sc_event ev;
  Ticks at;
  bool fired = false;
  SC_HAS_PROCESS(Raiser);
  Raiser(sc_core::sc_module_name n, Ticks t) : sc_module(n), at(t) { SC_THREAD(go); }
  void go() {
    wait(sc_core::sc_time::from_value(at));
    fired = true;
    ev.notify(sc_core::SC_ZERO_TIME);
  }
};

// Waits until the raiser fired or tick `until`, re-checking on every resume.
CoTask external_waiter(CoreScheduler& s, Log& log, const Raiser& r, Ticks until, std::string name) {
  while (!r.fired && s.now() < until) co_await s.external(&r.ev, until);
  log.add(s, name);
}

TEST(CoreScheduler, AnExternalWaitEndsAtTheEventOrAtItsTimeout) {
  Raiser r("raiser", 50);
  CoreScheduler s(/*run_ahead=*/true);  // external waits synchronize even when running ahead
  Log log;
  s.spawn(external_waiter(s, log, r, CoreScheduler::kNever, "event"));
  s.spawn(external_waiter(s, log, r, 20, "timeout"));
  s.spawn(sleeper(s, log, "timed", {60}));
  run_kernel(s);
  // While someone waits outside, the core follows the kernel's clock; once
  // nobody does, it runs ahead again (60 reached with the kernel at 50).
  EXPECT_THAT(log.lines, ElementsAre("timeout@20/20", "event@50/50", "timed@60/50"));
  EXPECT_EQ(sc_core::sc_time_stamp().value(), 60u);
}

struct Owner {
  std::shared_ptr<int> alive;
};

CoTask holder(Owner o, CoSignal& never) {
  const std::vector<std::string> heap(100, std::string(64, 'x'));  // freed with the frame (LeakSanitizer checks)
  co_await CoreScheduler::on(never);
  (void)o;
  (void)heap;
}

TEST(CoreScheduler, ADeadlockEndsTheRunAndDestroyingTheSchedulerFreesSuspendedFrames) {
  auto alive = std::make_shared<int>(1);
  CoSignal never;
  {
    CoreScheduler s(/*run_ahead=*/false);
    s.spawn(holder(Owner{alive}, never));
    run_kernel(s);  // returns: nothing can wake the holder
    EXPECT_EQ(alive.use_count(), 2);
  }
  EXPECT_EQ(alive.use_count(), 1);
}

}  // namespace
}  // namespace tpusim
