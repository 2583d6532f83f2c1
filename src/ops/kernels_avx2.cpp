// The AVX2/FMA/F16C kernel variant (MKV_SIMD 2), compiled with the native build's flags; absent
// from the portable build (MOMENTKV_NATIVE=OFF).
#if MOMENTKV_NATIVE
#define MKV_SIMD 2
#include "ops/matmul_float_kernels.h"
#include "ops/matmul_int8_kernels.h"

namespace mkv {
namespace {
constexpr KernelTable kTable{CpuVariant::Avx2, &kernels::avx2::matmul_float, &kernels::avx2::matmul_int8};
}  // namespace
const KernelTable* const kAvx2Kernels = &kTable;
}  // namespace mkv
#else
#include "ops/kernel_table.h"
const mkv::KernelTable* const mkv::kAvx2Kernels = nullptr;
#endif
