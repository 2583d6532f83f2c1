// A progress bar with rate and ETA for long evaluation runs.
//
// On a terminal it redraws one line in place ("\r", at most every 0.1 s); when the stream is not a
// terminal (a log file, CI) it prints a plain line every `plain_interval_s` seconds instead, so logs
// stay readable. The rate and ETA count only the items done since construction, so a resumed run
// (`already_done` > 0) does not report an inflated rate. Ticks format into a fixed stack buffer:
// no heap allocation per tick.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

namespace mkv {

class ProgressBar {
 public:
  using Clock = std::function<double()>;  // monotonic seconds

  struct Options {
    bool is_tty;                    // redraw in place vs plain periodic lines
    Clock clock;                    // injected by tests; default steady_clock
    double plain_interval_s = 10;   // seconds between plain lines
    double redraw_interval_s = 0.1; // seconds between terminal redraws
  };

  // Defaults: stderr, its tty-ness, steady_clock.
  ProgressBar(std::string label, int64_t total, int64_t already_done = 0);
  ProgressBar(std::string label, int64_t total, int64_t already_done, std::ostream& out, Options options);
  ~ProgressBar();  // finishes the line if finish() was not called

  void advance(int64_t items = 1);
  void finish();  // final line (always printed), then no more output

  int64_t done() const { return done_; }

 private:
  void draw(bool final_line);

  std::string label_;
  int64_t total_;
  int64_t done_;
  int64_t start_done_;
  std::ostream& out_;
  Options options_;
  double start_s_;
  double last_draw_s_;
  int64_t last_drawn_done_ = -1;  // done_ at the last drawn line
  bool finished_ = false;
};

// "1:02:03" or "02:03"; "--:--" for a negative or non-finite value.
std::string format_duration(double seconds);

}  // namespace mkv
