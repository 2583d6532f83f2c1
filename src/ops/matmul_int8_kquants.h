// Integer decode dot products for the K-quant types (private to src/ops; see matmul_int8.h): a
// row of 256-value super-blocks against 8-bit activation blocks of 32 values, eight per
// super-block. Each 32-value sub-block (Q4_K, Q5_K) or half of one (Q6_K) has its own scale, so
// each activation block meets exactly one weight sub-block:
//   Σ value·x ≈ Σ_j (d·scale_j)·d_x·Σ code·q_x − (dmin·min_j)·s_x   (s_x = d_x·Σ q_x).
#pragma once

#include <cstdint>

#include "ops/matmul_int8.h"

namespace mkv {

// w: one row of n_super super-blocks (ggml layout); x: its 8·n_super activation blocks.
float q4_k_row_dot(const uint8_t* w, const ActBlockQ8* x, int64_t n_super);
float q5_k_row_dot(const uint8_t* w, const ActBlockQ8* x, int64_t n_super);
float q6_k_row_dot(const uint8_t* w, const ActBlockQ8* x, int64_t n_super);

}  // namespace mkv
