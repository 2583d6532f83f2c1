// matmul / dot_row: argument checks, the choice between the float kernels and the integer decode
// path, and the call into the kernel variant in use (cpu_features.h). The kernels themselves are
// in matmul_float_kernels.h and matmul_int8_kernels.h, compiled once per variant
// (kernels_*.cpp).
#include "ops/matmul.h"

#include <vector>

#include "core/error.h"
#include "ops/kernel_table.h"
#include "ops/half.h"
#include "ops/matmul_int8.h"

namespace mkv {
namespace {

void check_matrix(const WeightMatrix& w) {
  const auto& info = ggml_type_info(w.type);
  MKV_CHECK(w.data != nullptr && w.rows >= 0 && w.cols >= 0, "invalid {} weight matrix ({} x {})", info.name,
            w.rows, w.cols);
  MKV_CHECK(w.cols % info.block_size == 0, "{} weight matrix has {} columns, not a multiple of the block size {}",
            info.name, w.cols, info.block_size);
}

// At least n values of scratch owned by the calling thread, one buffer per element type and slot,
// reused across products: the float kernels' sub-block sums (float, slot 0), the rounded
// activations of matmul_half_fast and matmul_bf16_gemm (uint16_t) and of the portable BF16 GEMM
// (float, slot 1).
template <typename T, int kSlot = 0>
T* thread_scratch(int64_t n) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < static_cast<std::size_t>(n)) buffer.resize(n);
  return buffer.data();
}

// KernelTable::matmul_float's scratch: n_tokens * cols / 16 floats.
float* sums_scratch(int64_t n_tokens, int64_t cols) { return thread_scratch<float>(n_tokens * (cols / 16) + 1); }

// In Fast precision, the quantised types take 8-bit activations: integer dot products for
// decode-sized batches, the integer GEMM for prefill-sized ones.
bool takes_int8_path(const WeightMatrix& w) {
  return matmul_precision() == MatmulPrecision::Fast && matmul_int8_supported(w.type);
}

// In Fast precision, decode-sized products of F16 / BF16 weights take fp16 / bf16 activations
// (llama.cpp's numerics for them), and so do prefill-sized ones of BF16 weights (a bf16 GEMM with
// vdpbf16ps where the host has AVX512_BF16); prefill-sized F16 products keep the float GEMM, and so
// do matrices whose rows are not whole 8-value groups (the half kernels have no tail columns).
bool takes_half_activations(const WeightMatrix& w, int64_t n_tokens) {
  return matmul_precision() == MatmulPrecision::Fast && (w.type == GgmlType::F16 || w.type == GgmlType::BF16) &&
         (n_tokens <= kRowDotMaxTokens || w.type == GgmlType::BF16) && w.cols % 8 == 0;
}

// A prefill-sized BF16 product with x rounded to bf16: vdpbf16ps where the variant and host have it,
// else the float GEMM on the rounded values (the same products, summed in another order).
void matmul_bf16_prefill(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) {
  const KernelTable& kernels = kernel_table();
  if (bf16_gemm_runs(kernels))
    return kernels.matmul_bf16_gemm(w, x, n_tokens, y, thread_scratch<uint16_t>(bf16_gemm_scratch(n_tokens, w.cols)));
  float* rounded = thread_scratch<float, 1>(n_tokens * w.cols);
  const int64_t values = n_tokens * w.cols;
#pragma omp parallel for schedule(static) if (values >= (int64_t{1} << 18))
  for (int64_t i = 0; i < values; ++i) rounded[i] = bf16_to_f32_inline(f32_to_bf16_inline(x[i]));
  kernels.matmul_float(w, rounded, n_tokens, y, sums_scratch(n_tokens, w.cols));
}

}  // namespace

void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) {
  check_matrix(w);
  if (w.rows == 0 || n_tokens <= 0) return;
  if (takes_int8_path(w)) return matmul_int8(w, x, n_tokens, y);
  if (takes_half_activations(w, n_tokens)) {
    if (n_tokens > kRowDotMaxTokens) return matmul_bf16_prefill(w, x, n_tokens, y);
    return kernel_table().matmul_half_fast(w, x, n_tokens, y, thread_scratch<uint16_t>(n_tokens * w.cols));
  }
  kernel_table().matmul_float(w, x, n_tokens, y, sums_scratch(n_tokens, w.cols));
}

int64_t row_invariant_tokens(const WeightMatrix& w) {
  return takes_int8_path(w) ? kInt8MaxTokens : kRowDotMaxTokens;
}

float dot_row(const WeightMatrix& w, int64_t r, const float* x) {
  check_matrix(w);
  MKV_CHECK(r >= 0 && r < w.rows, "row {} out of range for a matrix of {} rows", r, w.rows);
  // The one-row matrix that starts at row r, against one token (the same sums as matmul's row r).
  const WeightMatrix row{w.type, static_cast<const uint8_t*>(w.data) + r * w.row_bytes(), 1, w.cols};
  float y = 0.0f;
  kernel_table().matmul_float(row, x, 1, &y, sums_scratch(1, w.cols));
  return y;
}

}  // namespace mkv
