// A seeded random source whose output is identical on every platform and standard library.
//
// std::mt19937_64's output sequence is fixed by the C++ standard, but the distributions
// (std::uniform_int_distribution, std::shuffle) are implementation-defined, so every draw here is
// written out. Streams are derived from (seed, task, stream index):
//   state = splitmix64(seed ^ splitmix64(fnv1a64(task) + stream))
// and mt19937_64 is seeded with that single 64-bit value. Each RULER sample uses its own stream
// (its index), so samples are independent of each other and of the haystack fitting probes.
#pragma once

#include <cstdint>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

namespace mkv::eval::ruler {

uint64_t splitmix64(uint64_t x);
uint64_t fnv1a64(std::string_view text);

class SeededRng {
 public:
  SeededRng(uint64_t seed, std::string_view task, uint64_t stream);

  uint64_t next() { return engine_(); }
  // Uniform in [0, n), n > 0, by rejection (no modulo bias).
  uint64_t below(uint64_t n);
  // Uniform in [lo, hi] inclusive.
  int64_t between(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1)); }

  // Fisher–Yates from the back.
  template <typename T>
  void shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(i)]);
  }
  // k distinct indices from [0, n) in draw order (partial Fisher–Yates), k ≤ n.
  std::vector<size_t> sample_indices(size_t n, size_t k);

 private:
  std::mt19937_64 engine_;
};

}  // namespace mkv::eval::ruler
