// A line of waiting requests served in arrival order, which a request may leave before its turn
// (its client left): the server's slots and its KV-memory admission both queue with it. Not
// thread-safe by itself: its owner calls it with its own mutex held.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>

namespace mkv::serve {

class TicketLine {
 public:
  // The ticket of a request joining the line.
  uint64_t join() { return next_++; }
  // Whether `ticket` is first in line.
  bool first(uint64_t ticket) const { return served_ == ticket; }
  // The first ticket got its turn: the next one is first now.
  void serve() {
    ++served_;
    skip_left();
  }
  // `ticket` leaves the line before its turn; the tickets behind move up.
  void leave(uint64_t ticket) {
    left_.insert(ticket);
    skip_left();
  }

 private:
  void skip_left() {
    while (left_.erase(served_) > 0) ++served_;
  }

  uint64_t next_ = 0;          // the ticket the next request draws
  uint64_t served_ = 0;        // tickets served so far, in order (given their turn or left)
  std::set<uint64_t> left_;    // tickets after served_ whose requests left the line
};

// Waits on `changed` (with `lock` held on entry and return) until ready(): true. With `abandon`,
// asks it every `poll` while waiting and returns false as soon as it says true; the caller is
// then still in its TicketLine and leaves it.
template <typename Ready>
bool wait_unless_abandoned(std::condition_variable& changed, std::unique_lock<std::mutex>& lock, Ready&& ready,
                           const std::function<bool()>& abandon,
                           std::chrono::milliseconds poll = std::chrono::milliseconds(50)) {
  if (!abandon) {
    changed.wait(lock, ready);
    return true;
  }
  while (!ready()) {
    changed.wait_for(lock, poll);
    if (!ready() && abandon()) return false;
  }
  return true;
}

}  // namespace mkv::serve
