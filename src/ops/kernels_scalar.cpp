// The scalar kernel variant: the portable C++ kernels (MKV_SIMD 0), in every build. The reference
// the other variants are tested against (tests/ops), and what MOMENTKV_CPU=scalar selects.
#define MKV_SIMD 0
#include "ops/matmul_float_kernels.h"
#include "ops/matmul_int8_kernels.h"

namespace mkv {
namespace {
constexpr KernelTable kTable{CpuVariant::Scalar, &kernels::portable::matmul_float, &kernels::portable::matmul_int8};
}  // namespace
const KernelTable* const kScalarKernels = &kTable;
}  // namespace mkv
