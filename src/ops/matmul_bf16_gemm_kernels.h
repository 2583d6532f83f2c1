// The BF16 GEMM of MatmulPrecision::Fast (private to src/ops; included by kernel_variant.h, compiled
// only into the AVX-512 variant): prefill-sized products of BF16 weights with the activations
// rounded to bf16, as llama.cpp computes them, multiplied with AVX512_BF16's vdpbf16ps, which adds
// two bf16 products (columns 2p and 2p + 1) into each float32 lane: twice the multiply-adds of a
// float32 FMA per instruction. The functions that use the instruction carry the target attribute
// themselves (the variant's file is not compiled for AVX512_BF16); matmul.cpp calls them only
// where cpu_has_avx512_bf16() (and in the emulated avx512 variant, where SIMDe computes it).
//
// Blocking as matmul_float's GEMM (matmul_float_kernels.h): work items of up to kBf16ItemTokens
// tokens x kItemRows rows shared among threads; in an item, each panel of kBf16PanelRows rows x
// kBf16PanelCols columns is packed once with its column pairs transposed (the 32 rows' 32-bit words of
// one column pair adjacent: two 512-bit vectors), and every block of up to kBf16GemmTokenBlock
// tokens (kernel_table.h) adds its products into 2 x 16-lane accumulators per token held in
// registers (two panel vectors per broadcast of a token's pair: a 16-row panel, one per broadcast,
// ran about a third slower). The last panel of an item may be partial: its missing rows are packed
// as zeros and not stored. The activations are rounded once per product into token blocks
// (matmul_bf16_gemm), so that a block's broadcasts read consecutive words.
#pragma once

#include "ops/matmul_float_kernels.h"

#if MKV_SIMD >= 3

#if defined(MKV_SIMD_EMULATED)
#define MKV_TARGET_AVX512_BF16  // SIMDe's vdpbf16ps needs no instruction beyond AVX2
#else
#define MKV_TARGET_AVX512_BF16 __attribute__((target("avx512bf16")))
#endif

namespace mkv::kernels::inline MKV_SIMD_NS {
namespace {

constexpr int kBf16PanelRows = 32;                   // two 16-lane vectors per column pair
constexpr int64_t kBf16PanelCols = 256;
constexpr int64_t kBf16PanelPairs = kBf16PanelCols / 2;  // column pairs per panel
static_assert(kBf16GemmTokenBlock == 12, "12 x 2 accumulators + 2 panel vectors + broadcasts, of 32 registers");
// Tokens per work item: each item packs its panels once, so longer items pack less often (a panel's
// slice of the item's bf16 activations, 512 B per token, stays in L2).
constexpr int64_t kBf16ItemTokens = 512;

// panel[p * kBf16PanelRows + r] = 32-bit word p (columns 2p, 2p + 1) of row r (rows w_stride bytes
// apart) for r < n_rows, 0 for the other rows of a partial panel; p < n_pairs.
void pack_bf16_pairs(const uint8_t* w, std::size_t w_stride, int64_t n_rows, int64_t n_pairs, uint32_t* panel) {
  int64_t p = 0;
  if (n_rows == kBf16PanelRows)
    for (; p + 8 <= n_pairs; p += 8)
      for (int r0 = 0; r0 < kBf16PanelRows; r0 += 8) {
        F8 tile[8];  // 8 rows x 8 words, moved as float bit patterns (no arithmetic)
        for (int r = 0; r < 8; ++r) tile[r] = simd::f8_load(reinterpret_cast<const float*>(w + (r0 + r) * w_stride) + p);
        simd::transpose8(tile);
        for (int c = 0; c < 8; ++c) simd::f8_store(reinterpret_cast<float*>(panel + (p + c) * kBf16PanelRows + r0), tile[c]);
      }
  for (; p < n_pairs; ++p)
    for (int r = 0; r < kBf16PanelRows; ++r)
      panel[p * kBf16PanelRows + r] = r < n_rows ? load_u32(w + r * w_stride + 4 * p) : 0;
}

// y[t][r] += row r of the panel against token t's column pairs, for the rows in rows_mask (bit r)
// and T tokens; x_block: one token block's pairs, pair p of token t at p * kBf16GemmTokenBlock + t.
template <int T>
MKV_TARGET_AVX512_BF16 void add_bf16_panel_block(const uint32_t* panel, int64_t n_pairs, const uint32_t* x_block, float* y,
                                                 int64_t y_stride, uint32_t rows_mask) {
  __m512 acc[T][2];
  for (auto& a : acc) a[0] = a[1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < n_pairs; ++p) {
    const __m512bh w0 = (__m512bh)_mm512_load_si512(panel + p * kBf16PanelRows);
    const __m512bh w1 = (__m512bh)_mm512_load_si512(panel + p * kBf16PanelRows + 16);
    const uint32_t* xp = x_block + p * kBf16GemmTokenBlock;
    for (int t = 0; t < T; ++t) {
      const __m512bh xv = (__m512bh)_mm512_set1_epi32(static_cast<int>(xp[t]));
      acc[t][0] = _mm512_dpbf16_ps(acc[t][0], w0, xv);
      acc[t][1] = _mm512_dpbf16_ps(acc[t][1], w1, xv);
    }
  }
  for (int h = 0; h < 2; ++h) {
    const __mmask16 mask = static_cast<__mmask16>(rows_mask >> (16 * h));
    for (int t = 0; t < T; ++t) {
      float* out = y + t * y_stride + 16 * h;
      _mm512_mask_storeu_ps(out, mask, _mm512_add_ps(_mm512_maskz_loadu_ps(mask, out), acc[t][h]));
    }
  }
}

// add_bf16_panel_block<T> for T = 1 .. kBf16GemmTokenBlock, indexed by T - 1.
template <int... I>
constexpr auto bf16_panel_block_kernels(std::integer_sequence<int, I...>) {
  return std::array{&add_bf16_panel_block<I + 1>...};
}
constexpr auto kBf16PanelBlockKernels = bf16_panel_block_kernels(std::make_integer_sequence<int, kBf16GemmTokenBlock>{});

// Tokens [token_begin, token_end) x rows [row_begin, row_end) of y; token_begin is a multiple of
// kBf16GemmTokenBlock and x_blocks holds the token blocks (matmul_bf16_gemm).
void run_bf16_item(const WeightMatrix& w, const uint32_t* x_blocks, float* y, int64_t row_begin, int64_t row_end,
                   int64_t token_begin, int64_t token_end) {
  const int64_t n_pairs = w.cols / 2;
  const std::size_t row_bytes = ggml_row_bytes(w.type, w.cols);
  const auto* weights = static_cast<const uint8_t*>(w.data);
  for (int64_t t = token_begin; t < token_end; ++t)
    std::fill(y + t * w.rows + row_begin, y + t * w.rows + row_end, 0.0f);
  alignas(64) uint32_t panel[kBf16PanelPairs * kBf16PanelRows];  // (pairs, rows): the panel's words, transposed
  for (int64_t r0 = row_begin; r0 < row_end; r0 += kBf16PanelRows) {
    const int64_t n_rows = std::min<int64_t>(kBf16PanelRows, row_end - r0);
    const uint32_t rows_mask = n_rows == kBf16PanelRows ? ~uint32_t{0} : (uint32_t{1} << n_rows) - 1;
    for (int64_t p0 = 0; p0 < n_pairs; p0 += kBf16PanelPairs) {
      const int64_t pairs = std::min(kBf16PanelPairs, n_pairs - p0);
      const uint8_t* first = weights + r0 * row_bytes + 4 * p0;
      pack_bf16_pairs(first, row_bytes, n_rows, pairs, panel);
      // The next panel: the next columns of these rows, else the first columns of the next rows
      // (BF16 decoder blocks: 8 values, 4 pairs).
      if (p0 + kBf16PanelPairs < n_pairs)
        prefetch_panel<decoders::BF16>(first + 4 * kBf16PanelPairs, row_bytes,
                                       std::min(kBf16PanelPairs, n_pairs - p0 - kBf16PanelPairs) / 4);
      else if (row_end - r0 >= 2 * kBf16PanelRows)
        prefetch_panel<decoders::BF16>(weights + (r0 + kBf16PanelRows) * row_bytes, row_bytes,
                                       std::min(kBf16PanelPairs, n_pairs) / 4);
      for (int64_t t0 = token_begin; t0 < token_end; t0 += kBf16GemmTokenBlock) {
        const int64_t tokens = std::min<int64_t>(kBf16GemmTokenBlock, token_end - t0);
        const uint32_t* x_block = x_blocks + (t0 / kBf16GemmTokenBlock) * n_pairs * kBf16GemmTokenBlock;
        kBf16PanelBlockKernels[tokens - 1](panel, pairs, x_block + p0 * kBf16GemmTokenBlock, y + t0 * w.rows + r0, w.rows,
                                           rows_mask);
      }
    }
  }
}

void matmul_bf16_gemm(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, uint16_t* x_bf16) {
  // x rounded to bf16 in token blocks (the kernel's broadcasts then read consecutive words, where
  // token-major rows a multiple of 4 KiB apart would fall into one L1 set): block k holds tokens
  // [k * kBf16GemmTokenBlock, ...), pair p of its token t at word p * kBf16GemmTokenBlock + t,
  // tokens past n_tokens zero.
  const int64_t n_pairs = w.cols / 2, n_blocks = (n_tokens + kBf16GemmTokenBlock - 1) / kBf16GemmTokenBlock;
  auto* x_blocks = reinterpret_cast<uint32_t*>(x_bf16);  // (n_blocks, n_pairs, kBf16GemmTokenBlock)
#pragma omp parallel for schedule(static) if (n_tokens * w.cols >= kMinParallelMacs)
  for (int64_t k = 0; k < n_blocks; ++k)
    for (int t = 0; t < kBf16GemmTokenBlock; ++t) {
      const int64_t token = k * kBf16GemmTokenBlock + t;
      uint32_t* out = x_blocks + k * n_pairs * kBf16GemmTokenBlock + t;
      for (int64_t c = 0; c < w.cols; c += 8) {
        alignas(16) uint32_t words[4] = {};  // 8 bf16 values: columns c .. c + 7 as 4 pairs
        if (token < n_tokens) simd::f8_store_bf16(reinterpret_cast<uint16_t*>(words), simd::f8_load(x + token * w.cols + c));
        for (int j = 0; j < 4; ++j) out[(c / 2 + j) * kBf16GemmTokenBlock] = words[j];
      }
    }
  // Token items as matmul_float's, whole token blocks but the last (run_bf16_item relies on it).
  const int64_t item_tokens = item_token_count(n_tokens, kBf16ItemTokens, kBf16GemmTokenBlock);
  const int64_t n_token_items = (n_tokens + item_tokens - 1) / item_tokens;
  const int64_t n_row_items = (w.rows + kItemRows - 1) / kItemRows;
  const int64_t n_items = n_token_items * n_row_items;
  const bool parallel = n_items > 1 && w.rows * w.cols * n_tokens >= kMinParallelMacs;
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
  for (int64_t i = 0; i < n_items; ++i) {
    const int64_t token_begin = (i / n_row_items) * item_tokens, row_begin = (i % n_row_items) * kItemRows;
    run_bf16_item(w, x_blocks, y, row_begin, std::min(w.rows, row_begin + kItemRows), token_begin,
                  std::min(n_tokens, token_begin + item_tokens));
  }
}

}  // namespace
}  // namespace mkv::kernels::inline MKV_SIMD_NS

#undef MKV_TARGET_AVX512_BF16

#endif  // MKV_SIMD >= 3
