#include "common/progress.h"

#include <algorithm>

namespace tpusim {

Progress& Progress::global() {
  static Progress p;
  return p;
}

double Progress::now() const {
  if (clock_) return clock_();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void Progress::enable(std::ostream* out, double delay_s, double interval_s, Clock clock) {
  out_ = out;
  clock_ = std::move(clock);
  start_s_ = now();
  delay_s_ = delay_s;
  interval_s_ = interval_s;
  last_s_ = -1;
  shown_ = 0;
}

void Progress::disable() {
  finish();
  out_ = nullptr;
}

bool Progress::due() const {
  if (out_ == nullptr) return false;
  const double t = now();
  return t - start_s_ >= delay_s_ && (last_s_ < 0 || t - last_s_ >= interval_s_);
}

void Progress::update(std::string_view stage, std::string_view text) {
  if (!due()) return;
  last_s_ = now();
  std::string line = "tpusim: ";
  line += stage;
  line += ": ";
  line += text;
  const std::size_t pad = shown_ > line.size() ? shown_ - line.size() : 0;
  *out_ << '\r' << line << std::string(pad, ' ') << std::flush;
  shown_ = line.size();
}

void Progress::finish() {
  if (out_ == nullptr || shown_ == 0) return;
  *out_ << '\r' << std::string(shown_, ' ') << '\r' << std::flush;
  shown_ = 0;
}

}  // namespace tpusim
