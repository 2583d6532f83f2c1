#include "ops/attention_kernels.h"

#include <algorithm>

#include "core/error.h"
#include "ops/simd.h"

namespace mkv {
namespace {

using simd::F8;

constexpr int kMaxGroup = 8;
constexpr int32_t kRowBlock = 32;  // value rows per pass of the weighted sum (≤ 16 KiB at dim 128)

inline F8 load_row8(const void* rows, bool f16, std::size_t offset) {
  if (f16) return simd::f8_load_fp16(static_cast<const uint8_t*>(rows) + 2 * offset);
  return simd::f8_load(static_cast<const float*>(rows) + offset);
}
inline float load_one(const void* rows, bool f16, std::size_t offset) {
  if (f16) return fp16_to_f32_inline(static_cast<const uint16_t*>(rows)[offset]);
  return static_cast<const float*>(rows)[offset];
}

template <int NQ, bool F16>
void logits_n(const void* keys, int32_t n_rows, int dim, const float* q, int64_t q_stride, float scale,
              float* logits, int64_t logit_stride) {
  for (int32_t i = 0; i < n_rows; ++i) {
    const std::size_t row = static_cast<std::size_t>(i) * dim;
    F8 acc[NQ];
    for (auto& a : acc) a = simd::f8_zero();
    for (int c = 0; c < dim; c += 8) {
      const F8 k = load_row8(keys, F16, row + c);
      for (int j = 0; j < NQ; ++j) acc[j] = simd::fmadd(simd::f8_load(q + j * q_stride + c), k, acc[j]);
    }
    for (int j = 0; j < NQ; ++j) logits[j * logit_stride + i] = scale * simd::hsum(acc[j]);
  }
}

template <int NQ, bool F16>
void weighted_sum_n(const void* values, int32_t n_rows, int dim, const float* w, int64_t w_stride, float* out,
                    int64_t out_stride) {
  for (int32_t i0 = 0; i0 < n_rows; i0 += kRowBlock) {
    const int32_t i1 = std::min(n_rows, i0 + kRowBlock);
    for (int c = 0; c < dim; c += 8) {
      F8 acc[NQ];
      for (auto& a : acc) a = simd::f8_zero();
      for (int32_t i = i0; i < i1; ++i) {
        const F8 v = load_row8(values, F16, static_cast<std::size_t>(i) * dim + c);
        for (int j = 0; j < NQ; ++j) acc[j] = simd::fmadd(simd::f8_set1(w[j * w_stride + i]), v, acc[j]);
      }
      for (int j = 0; j < NQ; ++j) {
        float* o = out + j * out_stride + c;
        simd::f8_store(o, simd::f8_load(o) + acc[j]);
      }
    }
  }
}

template <template <int, bool> class Kernel, typename... Args>
void dispatch(int nq, bool f16, Args... args) {
  auto go = [&]<int N>() {
    if (f16)
      Kernel<N, true>::run(args...);
    else
      Kernel<N, false>::run(args...);
  };
  switch (nq) {
    case 1: return go.template operator()<1>();
    case 2: return go.template operator()<2>();
    case 3: return go.template operator()<3>();
    case 4: return go.template operator()<4>();
    case 5: return go.template operator()<5>();
    case 6: return go.template operator()<6>();
    case 7: return go.template operator()<7>();
    case 8: return go.template operator()<8>();
    default: fail("internal error: attention group of {} queries", nq);
  }
}

template <int NQ, bool F16>
struct Logits {
  static void run(const void* keys, int32_t n_rows, int dim, const float* q, int64_t q_stride, float scale,
                  float* logits, int64_t logit_stride) {
    logits_n<NQ, F16>(keys, n_rows, dim, q, q_stride, scale, logits, logit_stride);
  }
};
template <int NQ, bool F16>
struct WeightedSum {
  static void run(const void* values, int32_t n_rows, int dim, const float* w, int64_t w_stride, float* out,
                  int64_t out_stride) {
    weighted_sum_n<NQ, F16>(values, n_rows, dim, w, w_stride, out, out_stride);
  }
};

}  // namespace

void attn_group_logits(const void* keys, bool f16, int32_t n_rows, int dim, const float* q, int nq,
                       int64_t q_stride, float scale, float* logits, int64_t logit_stride) {
  MKV_ASSERT(nq >= 1 && nq <= kMaxGroup);
  if (dim % 8 != 0) {  // odd head sizes (tiny test models): plain loops
    for (int j = 0; j < nq; ++j)
      for (int32_t i = 0; i < n_rows; ++i) {
        float s = 0.0f;
        for (int c = 0; c < dim; ++c) s += q[j * q_stride + c] * load_one(keys, f16, static_cast<std::size_t>(i) * dim + c);
        logits[j * logit_stride + i] = scale * s;
      }
    return;
  }
  dispatch<Logits>(nq, f16, keys, n_rows, dim, q, q_stride, scale, logits, logit_stride);
}

void attn_group_weighted_sum(const void* values, bool f16, int32_t n_rows, int dim, const float* w, int nq,
                             int64_t w_stride, float* out, int64_t out_stride) {
  MKV_ASSERT(nq >= 1 && nq <= kMaxGroup);
  if (dim % 8 != 0) {
    for (int j = 0; j < nq; ++j)
      for (int32_t i = 0; i < n_rows; ++i)
        for (int c = 0; c < dim; ++c)
          out[j * out_stride + c] += w[j * w_stride + i] * load_one(values, f16, static_cast<std::size_t>(i) * dim + c);
    return;
  }
  dispatch<WeightedSum>(nq, f16, values, n_rows, dim, w, w_stride, out, out_stride);
}

}  // namespace mkv
