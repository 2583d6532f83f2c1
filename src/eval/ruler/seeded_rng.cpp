#include "eval/ruler/seeded_rng.h"

#include <numeric>

#include "core/error.h"

namespace mkv::eval::ruler {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t fnv1a64(std::string_view text) {
  uint64_t hash = 0xCBF29CE484222325ULL;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001B3ULL;
  return hash;
}

SeededRng::SeededRng(uint64_t seed, std::string_view task, uint64_t stream)
    : engine_(splitmix64(seed ^ splitmix64(fnv1a64(task) + stream))) {}

uint64_t SeededRng::below(uint64_t n) {
  MKV_ASSERT(n > 0);
  const uint64_t threshold = (0 - n) % n;  // 2^64 mod n: draws below it would bias the modulo
  uint64_t x = engine_();
  while (x < threshold) x = engine_();
  return x % n;
}

std::vector<size_t> SeededRng::sample_indices(size_t n, size_t k) {
  MKV_ASSERT(k <= n);
  std::vector<size_t> pool(n);
  std::iota(pool.begin(), pool.end(), size_t{0});
  for (size_t i = 0; i < k; ++i) std::swap(pool[i], pool[i + below(n - i)]);
  pool.resize(k);
  return pool;
}

}  // namespace mkv::eval::ruler
