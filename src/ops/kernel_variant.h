// The KernelTable of the kernel variant that MKV_SIMD names (private to src/ops): each variant file
// (kernels_scalar.cpp, kernels_avx2.cpp, kernels_avx512.cpp, kernels_avx512_emulated.cpp) sets
// MKV_SIMD, includes this header once and exports kernels::MKV_SIMD_NS::kTable. The table is
// constant data, so that merely linking a variant runs none of its instructions.
#pragma once

#include "ops/attention_float_kernels.h"
#include "ops/matmul_bf16_gemm_kernels.h"
#include "ops/matmul_float_kernels.h"
#include "ops/matmul_int8_gemm_kernels.h"
#include "ops/matmul_int8_kernels.h"
#include "ops/vec_kernels.h"

namespace mkv::kernels::inline MKV_SIMD_NS {
namespace {

#if defined(MKV_SIMD_EMULATED)
constexpr CpuVariant kVariant = CpuVariant::Avx512Emulated;
#else
constexpr CpuVariant kVariant = MKV_SIMD == 3 ? CpuVariant::Avx512 : MKV_SIMD == 2 ? CpuVariant::Avx2 : CpuVariant::Scalar;
#endif
#if MKV_SIMD >= 3
constexpr auto kBf16Gemm = &matmul_bf16_gemm;
#else
constexpr decltype(KernelTable::matmul_bf16_gemm) kBf16Gemm = nullptr;
#endif
constexpr KernelTable kTable{kVariant,     &matmul_float,    &matmul_half_fast, kBf16Gemm,
                             &matmul_int8, &int8_gemm_rows,  &attn_logits,      &attn_weighted_sum,
                             &vec_dot,     &vec_axpy,        &swiglu,           &vec_exp_shifted,
                             &vec_max};

}  // namespace
}  // namespace mkv::kernels::inline MKV_SIMD_NS
