// Small dense vector kernels used by attention and the forward pass, float32. vec_dot, vec_axpy,
// swiglu, vec_exp_shifted and vec_max are those of the kernel variant in use (cpu_features.h,
// MOMENTKV_CPU): 8-lane AVX2 code in the native variants, plain loops in the scalar one (the same
// results to rounding).
#pragma once

#include <cstdint>

namespace mkv {

float vec_dot(const float* a, const float* b, int n);
// y += alpha * x
void vec_axpy(float alpha, const float* x, float* y, int n);

// out[i] = x[i] / sqrt(mean(x²) + eps) * weight[i]   (out may alias x)
void rmsnorm(const float* x, const float* weight, int n, float eps, float* out);

// gate[i] = silu(gate[i]) * up[i]   (SwiGLU)
void swiglu(float* gate, const float* up, int64_t n);

// In-place softmax over n logits.
void softmax(float* x, int n);

// x[i] = exp(x[i] - shift) for i < n, in place; returns the sum of the results (float64
// accumulation per lane). Native variants: an 8-lane Cephes-style polynomial (within 2 ulp of
// std::exp for arguments in [-87, 88]; smaller arguments give at most 1e-38 instead of 0);
// scalar variant: std::exp.
double vec_exp_shifted(float* x, int n, float shift);

// The largest of n > 0 values.
float vec_max(const float* x, int n);

// log Σ exp(x[i]) in float64 (stable).
double log_sum_exp(const float* x, int n);

}  // namespace mkv
