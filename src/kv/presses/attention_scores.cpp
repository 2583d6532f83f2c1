#include "kv/presses/attention_scores.h"

#include <algorithm>
#include <cmath>

namespace mkv {

void add_attention(const float* q, const float* keys, int32_t visible, int d_k, float scale,
                   float weight, float* acc, std::vector<float>& logits) {
  if (visible <= 0) return;
  logits.resize(visible);
  float top = -INFINITY;
  for (int32_t j = 0; j < visible; ++j) {
    const float* k = keys + std::size_t(j) * d_k;
    float s = 0.0f;
    for (int a = 0; a < d_k; ++a) s += q[a] * k[a];
    logits[j] = scale * s;
    top = std::max(top, logits[j]);
  }
  float total = 0.0f;
  for (int32_t j = 0; j < visible; ++j) total += (logits[j] = std::exp(logits[j] - top));
  const float norm = weight / total;
  for (int32_t j = 0; j < visible; ++j) acc[j] += norm * logits[j];
}

int32_t visible_rows(const int32_t* positions, int32_t n, int32_t position) {
  return int32_t(std::upper_bound(positions, positions + n, position) - positions);
}

}  // namespace mkv
