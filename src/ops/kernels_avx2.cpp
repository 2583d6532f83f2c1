// The AVX2/FMA/F16C kernel variant (MKV_SIMD 2), compiled with the native build's flags; absent
// from the portable build (MOMENTKV_NATIVE=OFF).
#if MOMENTKV_NATIVE
#define MKV_SIMD 2
#include "ops/kernel_variant.h"
const mkv::KernelTable* const mkv::kAvx2Kernels = &mkv::kernels::avx2::kTable;
#else
#include "ops/kernel_table.h"
const mkv::KernelTable* const mkv::kAvx2Kernels = nullptr;
#endif
