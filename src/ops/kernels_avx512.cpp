// The AVX-512 kernel variant (MKV_SIMD 3): the only file compiled with -mavx512f -mavx512bw
// -mavx512vl -mavx512dq -mavx512vnni (CMakeLists.txt). Its code runs only after cpu_features.cpp
// has seen those features in CPUID: its table is constant data, and this file has no static
// initialisers (tests/ops/isa_isolation_test.cpp checks the linked binaries for AVX-512
// instructions outside mkv::kernels::avx512). Absent from the portable build.
#if MOMENTKV_NATIVE
#define MKV_SIMD 3
#include "ops/kernel_variant.h"
const mkv::KernelTable* const mkv::kAvx512Kernels = &mkv::kernels::avx512::kTable;
#else
#include "ops/kernel_table.h"
const mkv::KernelTable* const mkv::kAvx512Kernels = nullptr;
#endif
