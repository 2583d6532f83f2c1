// The scalar kernel variant: the portable C++ kernels (MKV_SIMD 0), in every build. The reference
// the other variants are tested against (tests/ops), and what MOMENTKV_CPU=scalar selects.
#define MKV_SIMD 0
#include "ops/kernel_variant.h"

const mkv::KernelTable* const mkv::kScalarKernels = &mkv::kernels::portable::kTable;
