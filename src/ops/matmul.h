// Matrix products of a stored weight matrix with float32 activations, multithreaded (OpenMP),
// with an AVX2/FMA path (MOMENTKV_NATIVE) and a scalar path giving the same results to rounding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/ggml_type.h"

namespace mkv {

// A weight matrix as stored in GGUF: `rows` output features, each a contiguous row of `cols`
// input values in `type` (ggml ne0 = cols, ne1 = rows).
struct WeightMatrix {
  GgmlType type = GgmlType::F32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  std::size_t row_bytes() const { return ggml_row_bytes(type, cols); }
};

// y[t * w.rows + r] = sum_c W[r][c] * x[t * w.cols + c]   for t in [0, n_tokens)
// x: (n_tokens, cols), y: (n_tokens, rows), both row-major float32.
void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y);

// The most tokens one matmul(w, ...) may take with every token's outputs bitwise equal to what that
// token gets alone (batched decode relies on it): kRowDotMaxTokens on the float path (products of
// up to that many tokens take the row dots, each weight row read once for all of them, in tiles
// whose sums run in the same order for every tile size; more take the GEMM, which sums in another
// order), kInt8MaxTokens on the integer path (every token's products are computed on their own).
int64_t row_invariant_tokens(const WeightMatrix& w);
inline constexpr int kRowDotTileTokens = 3;
inline constexpr int kRowDotMaxTokens = 8;

// Dot product of row `r` of w with x (cols values).
float dot_row(const WeightMatrix& w, int64_t r, const float* x);

}  // namespace mkv
