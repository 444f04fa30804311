#include "harness/progress.h"

#include <fmt/format.h>
#include <unistd.h>

namespace geotb::harness {

Progress::Progress(std::FILE* out, std::string label, size_t samples_per_step)
    : out_(out), label_(std::move(label)), samples_per_step_(samples_per_step), tty_(isatty(fileno(out)) != 0) {}

void Progress::update(int done, int total, double seconds) {
  const double every = tty_ ? 0.2 : 5.0;
  if (done != total && seconds - last_print_ < every) return;
  last_print_ = seconds;
  const double rate = seconds > 0 ? done * static_cast<double>(samples_per_step_) / seconds : 0;
  const double eta = done > 0 ? seconds * (total - done) / done : 0;
  const std::string line =
      fmt::format("[{}] step {}/{}  {:.0f} samples/s  elapsed {:.1f} s  ETA {:.0f} s", label_, done, total, rate, seconds, eta);
  if (tty_) fmt::print(out_, "\r\033[K{}", line);
  else fmt::print(out_, "{}\n", line);
  std::fflush(out_);
}

void Progress::finish(const std::string& tail) {
  if (tty_) fmt::print(out_, "\r\033[K");
  fmt::print(out_, "[{}] {}\n", label_, tail);
  std::fflush(out_);
}

}  // namespace geotb::harness
