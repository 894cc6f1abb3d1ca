// Progress of a long run on stderr (`tpusim run` on a real model): one line,
// rewritten in place, that names the stage and how far it got ("lowering:
// 812 of 2915 ops", "simulating: 3.2 ms simulated"). Shown only when stderr
// is a terminal and not -q, and only once the run has taken `delay_s`; the
// line is cleared when the run ends. Stages poll `due()` (cheap) before
// formatting their text.
#pragma once

#include <chrono>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace tpusim {

class Progress {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic
  // The process's progress line (disabled until enable()).
  static Progress& global();

  // Writes to `out` from `delay_s` after this call, at most every `interval_s`.
  void enable(std::ostream* out, double delay_s = 2.0, double interval_s = 0.5, Clock clock = {});
  void disable();
  [[nodiscard]] bool enabled() const { return out_ != nullptr; }
  // True when an update would be shown now.
  [[nodiscard]] bool due() const;
  void update(std::string_view stage, std::string_view text);
  // Clears the line (if one was shown).
  void finish();

 private:
  [[nodiscard]] double now() const;
  std::ostream* out_ = nullptr;
  Clock clock_;
  double start_s_ = 0, delay_s_ = 0, interval_s_ = 0, last_s_ = -1;
  std::size_t shown_ = 0;  // length of the line on screen
};

}  // namespace tpusim
