#include "core/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <iostream>

namespace mkv {
namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr int kBarWidth = 24;

template <typename Out>
Out format_duration_to(Out out, double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return fmt::format_to(out, "--:--");
  const auto s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format_to(out, "{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format_to(out, "{:02}:{:02}", s / 60, s % 60);
}

}  // namespace

std::string format_duration(double seconds) {
  std::string text;
  format_duration_to(std::back_inserter(text), seconds);
  return text;
}

ProgressBar::ProgressBar(std::string label, int64_t total, int64_t already_done)
    : ProgressBar(std::move(label), total, already_done, std::cerr,
                  Options{static_cast<bool>(isatty(STDERR_FILENO)), steady_seconds}) {}

ProgressBar::ProgressBar(std::string label, int64_t total, int64_t already_done, std::ostream& out,
                         Options options)
    : label_(std::move(label)),
      total_(total),
      done_(already_done),
      start_done_(already_done),
      out_(out),
      options_(std::move(options)) {
  if (!options_.clock) options_.clock = steady_seconds;
  start_s_ = options_.clock();
  last_draw_s_ = start_s_;
  draw(false);
}

ProgressBar::~ProgressBar() {
  if (!finished_) finish();
}

void ProgressBar::advance(int64_t items) {
  done_ += items;
  const double now = options_.clock();
  const double interval = options_.is_tty ? options_.redraw_interval_s : options_.plain_interval_s;
  if (now - last_draw_s_ >= interval || done_ >= total_) draw(false);
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  // A plain (non-tty) log already ends with the completed line; a terminal needs the newline.
  if (!options_.is_tty && last_drawn_done_ == done_ && done_ >= total_) return;
  draw(true);
}

void ProgressBar::draw(bool final_line) {
  const double now = options_.clock();
  last_draw_s_ = now;
  last_drawn_done_ = done_;
  const double elapsed = now - start_s_;
  const int64_t new_items = done_ - start_done_;
  const double rate = elapsed > 0 ? static_cast<double>(new_items) / elapsed : 0.0;
  const double remaining = rate > 0 ? static_cast<double>(total_ - done_) / rate : -1.0;
  const double fraction = total_ > 0 ? std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_)) : 1.0;

  fmt::memory_buffer line;  // inline storage: no heap allocation for lines under 500 bytes
  auto out = std::back_inserter(line);
  if (options_.is_tty) fmt::format_to(out, "\r");
  fmt::format_to(out, "{} ", label_);
  if (options_.is_tty) {
    const int filled = static_cast<int>(fraction * kBarWidth);
    fmt::format_to(out, "[{:#<{}}{: <{}}] ", "", filled, "", kBarWidth - filled);
  }
  fmt::format_to(out, "{}/{} ({:.0f}%) {:.2f}/s elapsed ", done_, total_, 100 * fraction, rate);
  out = format_duration_to(out, elapsed);
  fmt::format_to(out, " eta ");
  out = format_duration_to(out, final_line ? 0.0 : remaining);
  if (options_.is_tty) fmt::format_to(out, "\x1b[K");  // clear leftovers of a longer previous line
  if (!options_.is_tty || final_line) fmt::format_to(out, "\n");
  out_.write(line.data(), static_cast<std::streamsize>(line.size()));
  out_.flush();
}

}  // namespace mkv
