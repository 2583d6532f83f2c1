// What the integer kernels read besides the weights (private to src/ops): the quantised
// activations in the layouts the kernels load, and the GEMM's packed weight panel. Plain data:
// matmul_int8.cpp (compiled with the build's flags) owns every buffer, so that the kernel variants
// allocate nothing (docs/DESIGN.md, "Kernel variants chosen at run time").
#pragma once

#include <cstdint>

#include "ops/matmul_int8.h"

namespace mkv {

// n_tokens tokens of cols activations each, quantised (quantize_activations_q8 with
// activation_group_blocks(type) blocks per scale), token-major.
struct Int8Activations {
  const ActBlockQ8* blocks = nullptr;  // (n_tokens, cols / 32)
  // The blocks' fields again, each kind consecutive (the codes 64-byte aligned):
  const int8_t* codes = nullptr;  // (n_tokens, cols): blocks[i].q at codes + 32 i
  const float* d = nullptr;       // (n_tokens, cols / 32): blocks[i].d
  const float* s = nullptr;       // (n_tokens, cols / 32): blocks[i].s
  // Q8_0 and Q6_K prefill only, else null:
  const uint8_t* biased_codes = nullptr;  // (n_tokens, cols): the blocks' q + 128 as unsigned bytes
  // Q6_K only, else null:
  const int16_t* half_sums = nullptr;  // (n_tokens, cols / 16): Σ q over each 16 consecutive values
  // Q4_0 and Q5_0 only, else null: (n_tokens, cols / 32, 8), 64-byte aligned: lane l of block i is
  // -z · Σ q over values 4l .. 4l+3 of blocks[i], z = code_zero_point(type): the start of an
  // integer dot of the weights' unsigned codes c + z, which then sums to the dot of the signed
  // codes c in every lane.
  const int32_t* lane_bias = nullptr;
};

// What the unsigned codes of a block of signed weight codes are offset by: the Q4_0 nibbles as
// stored are c + 8, the Q5_0 5-bit codes c + 16; 0 for the other types.
constexpr int code_zero_point(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0: return 8;
    case GgmlType::Q5_0: return 16;
    default: return 0;
  }
}

// The integer GEMM's rows per packed panel (two 8-lane vectors).
inline constexpr int kGemmRows = 16;

// One 32-column block of a panel of kGemmRows weight rows, unpacked so that each 32-bit lane of a
// vector holds 4 consecutive codes of one row (matmul_int8_gemm_kernels.h). Q6_K's 16-value
// sub-blocks have scales of their own: its columns 0-15 take scale and bias, 16-31 the _high ones.
struct GemmBlock {
  alignas(32) int8_t codes[8][2][32];  // [4-column group][rows 0-7 | 8-15][4 codes per row, row-major]
  alignas(32) float scale[2][8];       // [half][row]: Q8_0, Q4_0/1, Q5_0/1 d; Q4_K, Q5_K d·scale_j; Q6_K d·scale_2j
  alignas(32) float min[2][8];         // subtracted times the block's s: Q4_K, Q5_K dmin·min_j, Q4_0 8·d,
                                       // Q5_0 16·d, Q4_1/Q5_1 −m; Q8_0, Q6_K 0
  alignas(32) int32_t bias[2][8];      // Q8_0, Q6_K: 128·Σ codes (the biased activations' excess;
                                       // Q6_K: over columns 0-15)
  alignas(32) float scale_high[2][8];  // Q6_K: d·scale_2j+1, of columns 16-31
  alignas(32) int32_t bias_high[2][8];  // Q6_K: 128·Σ codes over columns 16-31
};

}  // namespace mkv
