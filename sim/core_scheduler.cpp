#include "sim/core_scheduler.h"

#include <algorithm>
#include <cmath>

namespace tpusim {

CoreScheduler::CoreScheduler(bool run_ahead) : run_ahead_(run_ahead) {
  // As sc_time::to_seconds() and sc_time(double, SC_SEC) compute (SystemC
  // 2.3.4 sc_time.cpp); used only if they agree with the kernel bit for bit.
  const double res_fs = std::round(sc_core::sc_get_time_resolution().to_seconds() * 1e15);
  resolution_fs_ = res_fs;
  ticks_per_s_ = res_fs > 0 ? 1e15 / res_fs : 0;
  bool same = res_fs > 0;
  for (Ticks v : {Ticks{1}, Ticks{3}, Ticks{666667}, Ticks{123456789012345}}) {
    same = same && static_cast<double>(v) * res_fs * 1e-15 == sc_core::sc_time::from_value(v).to_seconds();
  }
  for (double s : {1.0 / 1.5e9, 1.0 / 9.4e8, 0.5e-12, 1.5e-12, 3.3333333e-10, 1.2803e-6, 0.123456789, 7.77e-3 / 3}) {
    same = same && ticks(s) == sc_core::sc_time(s, sc_core::SC_SEC).value();
  }
  if (!same) resolution_fs_ = ticks_per_s_ = 0;
}

void CoreScheduler::set_now(Ticks t) {
  now_ = t;
  now_s_ = resolution_fs_ > 0 ? static_cast<double>(t) * resolution_fs_ * 1e-15
                              : sc_core::sc_time::from_value(t).to_seconds();
}

void CoreScheduler::drain() {
  while (true) {
    // By index: nothing becomes ready during a delta (timed waits are in the
    // future, signals wake in the next delta), but stay safe if it did.
    for (std::size_t i = 0; i < ready_.size(); ++i) {
      const std::coroutine_handle<> h = ready_[i];
      h.resume();
    }
    ready_.clear();
    if (pending_.empty()) return;
    for (CoSignal* sig : pending_) {
      sig->pending_ = false;
      ready_.insert(ready_.end(), sig->waiters_.begin(), sig->waiters_.end());
      sig->waiters_.clear();
    }
    pending_.clear();
  }
}

void CoreScheduler::release_due() {
  while (!timed_.empty() && timed_.top().t <= now_) {
    ready_.push_back(timed_.top().h);
    timed_.pop();
  }
  for (const Ext& x : externals_) ready_.push_back(x.h);
  externals_.clear();
}

void CoreScheduler::run() {
  set_now(sc_core::sc_time_stamp().value());
  for (CoTask& t : tasks_) ready_.push_back(t.h_);
  while (true) {
    drain();
    if (timed_.empty() && externals_.empty()) break;
    Ticks next = timed_.empty() ? kNever : timed_.top().t;
    for (const Ext& x : externals_) next = std::min(next, x.until);
    if (externals_.empty() && run_ahead_) {
      set_now(next);
      release_due();
      continue;
    }
    // Synchronized: let the kernel's clock (and every other process) catch up.
    const Ticks stamp = sc_core::sc_time_stamp().value();
    sc_core::sc_event_or_list any;
    bool events = false;
    for (const Ext& x : externals_) {
      if (x.event != nullptr) {
        any |= *x.event;
        events = true;
      }
    }
    if (events && next == kNever) {
      sc_core::wait(any);
    } else if (events) {
      sc_core::wait(sc_core::sc_time::from_value(next > stamp ? next - stamp : 0), any);
    } else if (next == kNever) {
      break;  // external waiters with neither event nor time: nothing can wake them
    } else if (next > stamp) {
      sc_core::wait(sc_core::sc_time::from_value(next - stamp));
    }
    set_now(std::max(now_, sc_core::sc_time_stamp().value()));
    release_due();
  }
  // The end or a deadlock: the kernel's clock catches up with this core's.
  const Ticks stamp = sc_core::sc_time_stamp().value();
  if (now_ > stamp) sc_core::wait(sc_core::sc_time::from_value(now_ - stamp));
}

}  // namespace tpusim
