// Splits a fuzzer's input into the values a target needs (a small FuzzedDataProvider: that header
// ships with clang only, and the replay tests build with g++). Reads past the end give zeros and
// empty strings, so every input is a valid sequence of values.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace mkv::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  // A value in [lo, hi] (hi - lo < 2^16) from the next two bytes.
  int in_range(int lo, int hi) {
    const unsigned span = unsigned(hi - lo) + 1u;
    const unsigned raw = unsigned(byte()) | (unsigned(byte()) << 8);
    return lo + int(raw % span);
  }
  // The bytes up to the next `separator` (consumed, not returned), or all that is left.
  std::string_view until(char separator) {
    const std::string_view rest = remaining();
    const std::size_t end = rest.find(separator);
    const std::string_view taken = rest.substr(0, end);
    pos_ += taken.size() + (end == std::string_view::npos ? 0 : 1);
    return taken;
  }
  std::string_view remaining() const {
    return {reinterpret_cast<const char*>(data_) + std::min(pos_, size_), size_ - std::min(pos_, size_)};
  }
  // Everything that is left; nothing is left after it.
  std::string_view rest() {
    const std::string_view taken = remaining();
    pos_ = size_;
    return taken;
  }

 private:
  const uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// A property of the target: when it does not hold, the process aborts with `what` (a crash to the
// fuzzer, and a failed replay test).
inline void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz target: %s\n", what);
    std::abort();
  }
}

}  // namespace mkv::fuzz
