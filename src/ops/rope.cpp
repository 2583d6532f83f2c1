#include "ops/rope.h"

#include <cmath>

#include "core/error.h"

namespace mkv {

Rope::Rope(RopeStyle style, int head_dim, int rope_dim, float base, std::vector<float> freq_factors)
    : style_(style), head_dim_(head_dim), rope_dim_(rope_dim) {
  MKV_CHECK(rope_dim > 0 && rope_dim % 2 == 0 && rope_dim <= head_dim,
            "rope dimension {} must be even and at most the head size {}", rope_dim, head_dim);
  MKV_CHECK(freq_factors.empty() || static_cast<int>(freq_factors.size()) == rope_dim / 2,
            "rope_freqs has {} values, expected {} (rope dimension / 2)", freq_factors.size(),
            rope_dim / 2);
  inv_freq_.resize(rope_dim / 2);
  for (int i = 0; i < rope_dim / 2; ++i) {
    double theta = std::pow(static_cast<double>(base), -2.0 * i / rope_dim);
    if (!freq_factors.empty()) theta /= freq_factors[i];
    inv_freq_[i] = theta;
  }
}

void Rope::apply(float* x, int n_heads, int32_t pos) const {
  const int half = rope_dim_ / 2;
  for (int i = 0; i < half; ++i) {
    const double angle = pos * inv_freq_[i];
    const float c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
    for (int h = 0; h < n_heads; ++h) {
      float* head = x + static_cast<std::size_t>(h) * head_dim_;
      const int a = style_ == RopeStyle::Norm ? 2 * i : i;
      const int b = style_ == RopeStyle::Norm ? 2 * i + 1 : i + half;
      const float x0 = head[a], x1 = head[b];
      head[a] = x0 * c - x1 * s;
      head[b] = x0 * s + x1 * c;
    }
  }
}

}  // namespace mkv
