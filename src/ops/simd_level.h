// The instruction set that the kernel code of this translation unit targets (private to src/ops).
//
// The kernel variant files (kernels_scalar.cpp, kernels_avx2.cpp, kernels_avx512.cpp) define
// MKV_SIMD before their first include: 0 = portable C++, 2 = AVX2/FMA/F16C, 3 = AVX-512
// (F/BW/VL/DQ/VNNI, compiled with those flags by CMakeLists.txt). Every other file gets the build's
// default: 2 with MOMENTKV_NATIVE, else 0. kernels_avx512_emulated.cpp sets MKV_SIMD 3 and
// MKV_SIMD_EMULATED: the AVX-512 variant's code compiled with the AVX2 flags only, its AVX-512
// intrinsics supplied by SIMDe (avx512_emulation.h), so that hosts without AVX-512 test it.
//
// Invariant that keeps AVX-512 code off hosts without it: the inline helpers that kernel code
// shares (half.h, simd.h, block_decoders.h, int8_dots.h and the kernel bodies) live in the inline
// namespace MKV_SIMD_NS, so a copy compiled for one instruction set has other symbol names than a
// copy compiled for another, and the linker never merges an AVX-512 copy into code that AVX2
// hosts run (tests/ops/isa_isolation_test.cpp checks the linked binaries).
#pragma once

#ifndef MKV_SIMD
#if MOMENTKV_NATIVE
#define MKV_SIMD 2
#else
#define MKV_SIMD 0
#endif
#endif

#if MKV_SIMD == 3 && defined(MKV_SIMD_EMULATED)
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__) || defined(__AVX512F__)
#error "the emulated AVX-512 variant is compiled with -mavx2 -mfma -mf16c and without AVX-512 flags"
#endif
#define MKV_SIMD_NS avx512_emulated
#elif MKV_SIMD == 3
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VL__) || !defined(__AVX512DQ__) || \
    !defined(__AVX512VNNI__) || !defined(__FMA__) || !defined(__F16C__)
#error "MKV_SIMD 3 needs -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni (set for kernels_avx512.cpp only)"
#endif
#define MKV_SIMD_NS avx512
#elif MKV_SIMD == 2
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "MKV_SIMD 2 needs -mavx2 -mfma -mf16c (MOMENTKV_NATIVE)"
#endif
#define MKV_SIMD_NS avx2
#elif MKV_SIMD == 0
#define MKV_SIMD_NS portable
#else
#error "MKV_SIMD must be 0, 2 or 3"
#endif

#if MKV_SIMD >= 2
#include <immintrin.h>
#endif
#if MKV_SIMD == 3 && defined(MKV_SIMD_EMULATED)
#include "ops/avx512_emulation.h"
#endif
