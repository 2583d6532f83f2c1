// Inputs shared by the microbenchmarks.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace mkv::bench {

// n standard-normal floats from a seeded generator (the same values on every run).
inline std::vector<float> gaussian(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

}  // namespace mkv::bench
