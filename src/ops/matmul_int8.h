// Integer matrix products for decode, the way llama.cpp computes them: each token's activation
// vector is quantised once per product to 8-bit blocks of 32 (a float scale per block, as Q8_0
// but with a float32 scale and the block's code sum; for K-quant weights one scale per 256
// values, as llama.cpp's Q8_K), and each weight block meets it in an integer dot product (AVX2:
// vpmaddubsw + vpmaddwd, AVX-512: VNNI vpdpbusd; the sign trick for signed x signed). This changes
// the numerics (activations carry ~0.4% relative rounding per block), so it is a mode: matmul()
// uses it only in MatmulPrecision::Fast, for the weight types it supports and batches of at most
// kInt8MaxTokens tokens (decode steps of up to that many sequences, and prompt chunks that short),
// whose every token's products are computed on their own, so a token's outputs do not depend on
// the batch. Longer batches (prefill) take an integer GEMM (matmul_int8_gemm_kernels.h), as
// llama.cpp's prefill does.
#pragma once

#include <cstdint>

#include "ops/matmul.h"

namespace mkv {

enum class MatmulPrecision {
  Exact,  // float32 activations x exactly decoded weights (the default)
  Fast,   // 8-bit quantised activations x integer weight codes for decode-sized batches (and, for
          // prefill-sized ones: the integer GEMM); for F16 weights, fp16
          // activations in products of up to kRowDotMaxTokens tokens; for BF16 weights, bf16
          // activations in every product (matmul.cpp)
};

// Process-wide kernel mode. The initial value is Exact, or Fast when the environment variable
// MOMENTKV_PRECISION=fast is set (lets a whole test suite run on the fast path).
void set_matmul_precision(MatmulPrecision precision);
MatmulPrecision matmul_precision();

inline constexpr int64_t kInt8MaxTokens = 32;  // the server's most slots (serve -np)

// Whether the integer path handles weights of `type` (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K,
// Q6_K).
bool matmul_int8_supported(GgmlType type);

// y = W x for n_tokens tokens with quantised activations (same layout as matmul()). Requires a
// supported type; batches of more than kInt8MaxTokens tokens take the GEMM.
void matmul_int8(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y);

// The activation blocks, exposed for tests: 32 values, scale d, codes q (value ≈ d*q), and
// s = d * sum(q) (used by the types with an offset: Q4_1, Q5_1, Q4_K, Q5_K).
struct ActBlockQ8 {
  float d;
  float s;
  int8_t q[32];
};
// x has n values, n a multiple of 32 * group_blocks; writes n/32 blocks (round to nearest,
// |q| <= 127). Each run of group_blocks consecutive blocks shares one scale d, from the largest
// magnitude among its values.
void quantize_activations_q8(const float* x, int64_t n, ActBlockQ8* out, int group_blocks = 1);

// The blocks that share one activation scale in a product of `type` weights: 8 for the K-quants
// (one scale per 256-value super-block, as llama.cpp's Q8_K activations), whose row dots then sum
// a whole super-block in integers and convert it to float once; 1 for the others.
int activation_group_blocks(GgmlType type);

}  // namespace mkv
