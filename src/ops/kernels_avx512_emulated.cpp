// The emulated AVX-512 kernel variant: the source of the avx512 variant (MKV_SIMD 3) compiled
// with the native build's AVX2 flags, its AVX-512 intrinsics supplied by SIMDe
// (avx512_emulation.h), so that the AVX-512 code paths (VNNI dots, the 6-token integer GEMM
// tiles, the vdpbf16ps GEMM) are tested on hosts without AVX-512. Its products run at about the
// avx2 variant's speed (the BF16 GEMM at a fifth of it), which says nothing of the real variant's;
// never chosen unless asked for (MOMENTKV_CPU=avx512-emulated, tests). Present when the build
// found SIMDe (MOMENTKV_AVX512_EMULATION).
#if MOMENTKV_NATIVE && MOMENTKV_AVX512_EMULATION
#define MKV_SIMD 3
#define MKV_SIMD_EMULATED 1
#include "ops/kernel_variant.h"
const mkv::KernelTable* const mkv::kAvx512EmulatedKernels = &mkv::kernels::avx512_emulated::kTable;
#else
#include "ops/kernel_table.h"
const mkv::KernelTable* const mkv::kAvx512EmulatedKernels = nullptr;
#endif
