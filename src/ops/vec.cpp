// rmsnorm, softmax and log_sum_exp here; the other functions are the kernel variant's
// (vec_kernels.h), chosen at run time with the matrix kernels.
#include "ops/vec.h"

#include <algorithm>
#include <cmath>

#include "ops/kernel_table.h"

namespace mkv {

float vec_dot(const float* a, const float* b, int n) { return kernel_table().vec_dot(a, b, n); }
void vec_axpy(float alpha, const float* x, float* y, int n) { kernel_table().vec_axpy(alpha, x, y, n); }
void swiglu(float* gate, const float* up, int64_t n) { kernel_table().swiglu(gate, up, n); }
double vec_exp_shifted(float* x, int n, float shift) { return kernel_table().vec_exp_shifted(x, n, shift); }
float vec_max(const float* x, int n) { return kernel_table().vec_max(x, n); }

void rmsnorm(const float* x, const float* weight, int n, float eps, float* out) {
  double sum_sq = 0.0;
  for (int i = 0; i < n; ++i) sum_sq += static_cast<double>(x[i]) * x[i];
  const float inv_rms = static_cast<float>(1.0 / std::sqrt(sum_sq / n + eps));
  for (int i = 0; i < n; ++i) out[i] = x[i] * inv_rms * weight[i];
}

void softmax(float* x, int n) {
  const double sum = vec_exp_shifted(x, n, vec_max(x, n));
  const float inv = static_cast<float>(1.0 / sum);
  for (int i = 0; i < n; ++i) x[i] *= inv;
}

double log_sum_exp(const float* x, int n) {
  const float max_x = *std::max_element(x, x + n);
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - max_x);
  return max_x + std::log(sum);
}

}  // namespace mkv
