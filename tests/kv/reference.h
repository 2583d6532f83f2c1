// Float64 references shared by the kv tests: exact softmax attention over explicit rows.
#pragma once

#include <cmath>
#include <random>
#include <vector>

namespace mkv::test {

// Attention of q over rows (n, d_k)/(n, d_v) in float64: out (d_v) and log Z.
inline double attention_f64(const std::vector<float>& q, const std::vector<float>& keys,
                            const std::vector<float>& values, int d_k, int d_v, double scale,
                            std::vector<double>& out) {
  const std::size_t n = keys.size() / d_k;
  std::vector<double> logits(n);
  double top = -INFINITY;
  for (std::size_t i = 0; i < n; ++i) {
    double s = 0.0;
    for (int a = 0; a < d_k; ++a) s += double(q[a]) * keys[i * d_k + a];
    logits[i] = scale * s;
    top = std::max(top, logits[i]);
  }
  double z = 0.0;
  out.assign(d_v, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const double w = std::exp(logits[i] - top);
    z += w;
    for (int b = 0; b < d_v; ++b) out[b] += w * values[i * d_v + b];
  }
  for (double& x : out) x /= z;
  return top + std::log(z);
}

inline std::vector<float> normal_vector(std::mt19937& rng, std::size_t n, float mean = 0.0f, float sd = 1.0f) {
  std::normal_distribution<float> dist(mean, sd);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace mkv::test
