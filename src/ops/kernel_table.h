// The entry points of one compiled kernel variant (private to src/ops). Each variant file
// (kernels_scalar.cpp, kernels_avx2.cpp, kernels_avx512.cpp, kernels_avx512_emulated.cpp) defines
// its table as constant data (kernel_variant.h), so that merely linking a variant runs none of its
// instructions; cpu_features.cpp picks the table and matmul.cpp, matmul_int8.cpp,
// attention_kernels.cpp and vec.cpp call through it after checking their arguments.
#pragma once

#include <cstdint>

#include "ops/cpu_features.h"
#include "ops/int8_operands.h"
#include "ops/matmul.h"
#include "ops/matmul_int8.h"

namespace mkv {

struct KernelTable {
  CpuVariant variant;
  // y = W x in float32 for n_tokens >= 1 tokens (layouts as matmul()); w is checked (data set, rows
  // >= 1, cols a multiple of the block size). sums: scratch of at least n_tokens * cols / 16 floats
  // owned by the calling thread (the sub-block sums of x, for the types with offsets).
  void (*matmul_float)(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, float* sums);
  // The same product for F16 or BF16 weights, cols a multiple of 8 and n_tokens <= kRowDotMaxTokens,
  // with x rounded to the weights' format first (MatmulPrecision::Fast); x_half: scratch of n_tokens
  // * cols values owned by the calling thread.
  void (*matmul_half_fast)(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, uint16_t* x_half);
  // The same product for BF16 weights, cols a multiple of 8 and n_tokens > kRowDotMaxTokens, with x
  // rounded to bf16 first and multiplied by AVX512_BF16's vdpbf16ps (MatmulPrecision::Fast); x_bf16:
  // scratch of bf16_gemm_scratch(n_tokens, cols) values owned by the calling thread. Null in the
  // variants that lack it (scalar, avx2); callable only where cpu_has_avx512_bf16(), and always in
  // the emulated avx512 variant (bf16_gemm_runs).
  void (*matmul_bf16_gemm)(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, uint16_t* x_bf16);
  // y = W x with quantised activations (int8_operands.h); w is a type matmul_int8_supported()
  // accepts, checked.
  void (*matmul_int8)(const WeightMatrix& w, const Int8Activations& x, int64_t n_tokens, float* y);
  // Rows [row_begin, row_end) of the same product (at most kGemmRows) for a prefill-sized batch:
  // a GEMM that packs the rows into `panel` (scratch of cols / 32 blocks owned by the calling
  // thread) and sums in another order than matmul_int8; the portable variant, and a last panel of
  // fewer than kGemmRows rows, as matmul_int8 computes them.
  void (*int8_gemm_rows)(const WeightMatrix& w, const Int8Activations& x, int64_t n_tokens, int64_t row_begin,
                         int64_t row_end, GemmBlock* panel, float* y);
  // Cached attention over one KV head, as attn_group_logits and attn_group_weighted_sum
  // (attention_kernels.h, which checks the arguments) for head sizes that are a multiple of 8.
  void (*attn_logits)(const void* keys, bool f16, int32_t n_rows, int dim, const float* q, int nq, int64_t q_stride,
                      float scale, float* logits, int64_t logit_stride);
  void (*attn_weighted_sum)(const void* values, bool f16, int32_t n_rows, int dim, const float* w, int nq,
                            int64_t w_stride, float* out, int64_t out_stride);
  // The dense vector kernels of vec.h (same contracts).
  float (*vec_dot)(const float* a, const float* b, int n);
  void (*vec_axpy)(float alpha, const float* x, float* y, int n);
  void (*swiglu)(float* gate, const float* up, int64_t n);
  double (*vec_exp_shifted)(float* x, int n, float shift);
  float (*vec_max)(const float* x, int n);
};

// The BF16 GEMM's tokens per register block; its rounded activations are stored in whole blocks.
inline constexpr int64_t kBf16GemmTokenBlock = 12;
inline constexpr int64_t bf16_gemm_scratch(int64_t n_tokens, int64_t cols) {
  return (n_tokens + kBf16GemmTokenBlock - 1) / kBf16GemmTokenBlock * kBf16GemmTokenBlock * cols;
}

// Null when the build holds no such variant (the portable build has only scalar).
extern const KernelTable* const kScalarKernels;
extern const KernelTable* const kAvx2Kernels;
extern const KernelTable* const kAvx512Kernels;
extern const KernelTable* const kAvx512EmulatedKernels;  // also null in a build without SIMDe

// Whether the table's matmul_bf16_gemm may be called on this host.
inline bool bf16_gemm_runs(const KernelTable& table) {
  return table.matmul_bf16_gemm != nullptr &&
         (table.variant == CpuVariant::Avx512Emulated || cpu_has_avx512_bf16());
}

// The table of cpu_variant() (chosen on first use; throws MkvError for a bad MOMENTKV_CPU).
const KernelTable& kernel_table();

}  // namespace mkv
