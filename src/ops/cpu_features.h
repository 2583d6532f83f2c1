// Which compiled set of matrix kernels runs: chosen once, at the first matrix product, from CPUID
// (the best set the host runs) or from the environment variable MOMENTKV_CPU=scalar|avx2|avx512.
//   scalar  the portable C++ kernels (the reference the others are tested against)
//   avx2    AVX2/FMA/F16C (what every native build required before run-time dispatch)
//   avx512  AVX-512 F/BW/VL/DQ with VNNI: vpdpbusd integer dots, EVEX code with 32 registers
//   avx512-emulated  the avx512 variant's source with its AVX-512 intrinsics emulated by SIMDe in
//           AVX2 instructions (avx512_emulation.h), for tests on hosts without AVX-512: the
//           avx512 variant's code paths and sums, at avx2's speed or below (a fifth of it in the
//           BF16 GEMM); never chosen unless MOMENTKV_CPU or set_cpu_variant asks.
// A native build (MOMENTKV_NATIVE) holds scalar, avx2 and avx512 (and avx512-emulated where SIMDe
// was found) and runs on any AVX2 host; a portable build holds only scalar. The choice covers
// every kernel: matmul, the integer decode path, cached attention and the vector kernels
// (matmul.h, matmul_int8.h, attention_kernels.h, vec.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mkv {

enum class CpuVariant { Scalar, Avx512Emulated, Avx2, Avx512 };

// In order of preference (the emulated variant below every real one but scalar).
inline constexpr CpuVariant kAllCpuVariants[] = {CpuVariant::Scalar, CpuVariant::Avx512Emulated, CpuVariant::Avx2,
                                                 CpuVariant::Avx512};

// "scalar", "avx512-emulated", "avx2", "avx512" (MOMENTKV_CPU values)
std::string_view cpu_variant_name(CpuVariant variant);
// "scalar", "AVX-512 (emulated)", "AVX2", "AVX-512" (tables)
std::string_view cpu_variant_label(CpuVariant variant);

// Empty when this build holds the variant and this host runs it; else why not (one phrase).
std::string cpu_variant_unavailable_reason(CpuVariant variant);
bool cpu_variant_available(CpuVariant variant);
// The available variants, scalar first, the best last (emulated avx512 second, when available).
std::vector<CpuVariant> available_cpu_variants();

// The variant for a value of MOMENTKV_CPU: nullptr or "" = the best available (never the emulated one). Throws MkvError
// naming the value for an unknown name or a variant this build or host lacks.
CpuVariant cpu_variant_from_env(const char* value);

// The variant in use; the first call reads MOMENTKV_CPU (throws MkvError as cpu_variant_from_env).
CpuVariant cpu_variant();
// Switches every later matrix product to `variant` (tests, comparisons); throws MkvError naming
// the reason when it is not available. Not to be called while products run on other threads.
void set_cpu_variant(CpuVariant variant);

// Whether the host has AVX512_BF16 (vdpbf16ps) next to the avx512 variant's features: the avx512
// variant's BF16 GEMM (prefill-sized products of BF16 weights in MatmulPrecision::Fast) needs it.
bool cpu_has_avx512_bf16();

// One line for --version and logs: the variant in use and what the host offers, e.g.
// "kernels avx512 (available: scalar, avx2, avx512; MOMENTKV_CPU forces one; BF16 prefill
// with avx512_bf16)".
std::string cpu_variant_summary();

}  // namespace mkv
