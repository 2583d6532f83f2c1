// The float matrix kernels, compiled once per kernel variant (private to src/ops): included only by
// kernels_scalar.cpp, kernels_avx2.cpp and kernels_avx512.cpp, which set MKV_SIMD (simd_level.h).
// Everything here is in mkv::kernels::MKV_SIMD_NS, in an unnamed namespace: each variant file
// gets its own copy. Entry points: matmul_float() and matmul_half_fast() (the KernelTable signatures).
//
// One generic kernel for every weight type. Weight blocks are decoded on the fly
// (block_decoders.h) into 8-float vectors that feed FMAs against float32 activations, or fp16 / bf16
// ones (matmul_half_fast: MatmulPrecision::Fast for F16 / BF16 weights; Fast sends decode-sized
// products of the integer-friendly types to the integer kernels instead).
//
// Blocking: the output (n_tokens x rows) is split into work items of rows, shared among threads;
// an item spans all the product's tokens (prompt chunks: several token ranges when the rows alone
// would leave threads idle).
// - Prefill-sized items (more than kRowDotMaxTokens tokens) run as a GEMM: each group of
//   kPanelRows rows is decoded once per item into a transposed panel (column-major: the kPanelRows
//   values of one column are adjacent) up to kMaxPanelCols columns wide, and every block of up to
//   kBlockTokens tokens runs over the panel's width adding rank-1 updates to a kBlockTokens x
//   kPanelRows block of y held in 12 registers (per column: 2 panel loads, 6 broadcasts, 12 FMAs).
// - Decode-sized items take each weight row's dot products with kTileTokens or 1 tokens,
//   decoding blocks straight into the FMAs (quantised types: codes x activations per sub-block,
//   its scale applied once) and streaming one row at a time.
// The same 8-lane code serves every native variant, except that the AVX-512 variant runs the F16 row
// dots (add_row_dots_f16x16) and the GEMM's register blocks (add_panel_pair_block: two panels, 32
// rows x 12 tokens) in 16-lane registers (docs/DESIGN.md, "Kernel variants chosen at run time", says
// which 16-lane forms paid where); it also differs in its integer dots (VNNI, matmul_int8_kernels.h)
// and in the compiler's use of EVEX encodings and 32 registers.
#pragma once

#include <omp.h>

#include <algorithm>
#include <array>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops/block_decoders.h"
#include "ops/kernel_table.h"
#include "ops/row_items.h"

namespace mkv::kernels::inline MKV_SIMD_NS {
namespace {

using simd::F8;

constexpr int64_t kMinParallelMacs = 1 << 18;  // multiply-adds below which one thread is faster
constexpr int kTileTokens = kRowDotTileTokens;  // tokens per row-dot tile
constexpr int64_t kItemRows = 64;  // rows per item of the BF16 GEMM (matmul_bf16_gemm_kernels.h)
constexpr int kPanelRows = 16;    // two 8-lane vectors per panel column
constexpr int kBlockTokens = 6;   // 6 x 2 accumulators + 2 panel vectors + 1 broadcast = 15 of 16 registers

// The part of y that one work item owns, and where its inputs are.
struct Item {
  const uint8_t* weights;  // row 0 of the matrix
  std::size_t row_bytes;
  const float* x;          // (n_tokens, x_stride): each token's cols activations first
  float* y;                // (n_tokens, y_stride): each token's outputs at [row_begin, row_end)
  int64_t x_stride;        // floats from one token's activations to the next (matmul: cols)
  int64_t y_stride;        // floats from one token's outputs to the next (matmul: the matrix rows)
  int64_t cols;            // matrix cols
  int64_t row_begin, row_end, token_begin, token_end;
  const float* x_sums = nullptr;  // (n_tokens, cols / kSubBlock) for decoders with offsets (x_sub_sums)
};

// One weight row against some tokens, all positioned at the first column. Act: the activations'
// storage, float32, fp16 (uint16_t bits) or bf16 (Bf16Bits; both from matmul_half_fast).
template <typename Act>
struct RowOperands {
  const uint8_t* w;       // the weight row
  const Act* x;           // first of the tokens' activations
  int64_t x_stride;       // values from one token's activations to the next
  float* y;               // y of the first token at this row
  int64_t y_stride;       // floats from one token's outputs to the next
  int64_t n_blocks;       // decoder blocks in the row
  const float* x_sums;    // types with sub-block offsets: sums of x over each sub-block; else null
  int64_t x_sums_stride;  // floats from one token's sums to the next
};

// bf16 activation bits: a type of their own, so that load_activations tells them from fp16 bits.
struct Bf16Bits {
  uint16_t bits;
};

// A GEMM's panels hold fp16 bits for F16 weights (their values exactly, in half the bytes; the
// kernel converts as it loads, which costs the FMAs next to nothing) and float32 for the others.
template <typename Decoder>
using PanelValue = std::conditional_t<std::is_same_v<Decoder, decoders::F16>, uint16_t, float>;
// Wider rows are packed in pieces of this many columns (a multiple of every block size). A register
// block runs over a whole piece: its accumulators are stored once per piece, and the panel and x
// stream from L2 as fast as the FMAs take them.
constexpr int64_t kMaxPanelCols = 2048;
static_assert(kMaxPanelCols % 256 == 0, "pieces of whole blocks of every type");
// An item's panels together (4 groups of fp16, 2 of float32): they stay in L2 while its tokens pass.
constexpr std::size_t kItemPanelBytes = 256 * 1024;
template <typename Decoder>
constexpr int64_t kPanelGroups = kItemPanelBytes / (kMaxPanelCols * kPanelRows * sizeof(PanelValue<Decoder>));
// Tokens per pass over an item's panels: the x they read stays in L2 from one group to the next.
constexpr int64_t kPanelChunkTokens = 64;
// Tokens per item at least, when a prompt chunk is split into token ranges for more items.
constexpr int64_t kMinItemTokens = 64;

inline F8 load_activations(const float* x) { return simd::f8_load(x); }
inline F8 load_activations(const uint16_t* x) { return simd::f8_load_fp16(reinterpret_cast<const uint8_t*>(x)); }
inline F8 load_activations(const Bf16Bits* x) { return simd::f8_load_bf16(reinterpret_cast<const uint8_t*>(x)); }

// y[t] += dot(weight row, token t) for T tokens. Each token sums into kChains independent
// accumulators (8-wide group i of the row goes to chain i % kChains): with one accumulator, a
// one-token row waits out the FMA latency at every group. The float types take four chains: a
// one-token row then has four FMAs in flight, a cache line of F16 weights per step, where two
// chains cap one core's stream at 8 bytes per cycle, below what it can read when memory is fast;
// 4 chains x kTileTokens accumulators still fit the 16 registers. The quantised types take two:
// each sub-block already sums into two partial chains, and more would not fit. Each token's sums
// run in the same order whatever T is (the row-invariant decode batches rely on it).
//
// Sub-block-scaled types (decoders::SubBlockScaled: the quantised ones) sum code × x over each
// sub-block in two partial chains and apply its scale once, sub-block i of a step feeding chain
// i % kChains, and its offset (if any) once per token as offset × (the sub-block's sum of x, in
// op.x_sums): one multiply per sub-block instead of one multiply (and add) per group, which
// matters because exact decode of quantised weights is partly compute-bound.
template <typename Decoder, int T, typename Act>
void add_row_dots(const RowOperands<Act>& op) {
  constexpr bool kScaled = decoders::SubBlockScaled<Decoder>;
  constexpr int kChains = kScaled ? 2 : 4;
  constexpr int kGroups = Decoder::kBlockSize / 8;  // 8-wide groups per block
  constexpr int kSubs = [] {  // scales per block
    if constexpr (kScaled) return Decoder::kBlockSize / Decoder::kSubBlock;
    else return 0;
  }();
  constexpr int kSteps = kScaled ? kSubs : kGroups;  // chain-feeding steps per block
  constexpr int kUnroll = kChains > kSteps ? kChains / kSteps : 1;  // blocks per loop step
  F8 acc[T][kChains];
  for (auto& chains : acc)
    for (auto& a : chains) a = simd::f8_zero();
  float offset_sum[T] = {};  // Σ offset × sub-block sum of x, per token
  // Adds block b; its groups (or sub-blocks) feed chains (u * kSteps + i) % kChains.
  auto add_block = [&](int64_t b, int u) {
    const Act* x = op.x + b * Decoder::kBlockSize;
    const uint8_t* block = op.w + b * Decoder::kBlockBytes;
    if constexpr (kScaled) {
      constexpr int kSubGroups = Decoder::kSubBlock / 8;
      static_assert(kSubGroups >= 2, "two partial chains per sub-block");
      float scale[kSubs], offset[kSubs];
      Decoder::sub_scales(block, scale, offset);
      F8 partial[T][2];  // code · x over the current sub-block's even / odd groups
      Decoder::decode_codes(block, [&](int g, F8 codes) {
        const int local = g % kSubGroups;
        for (int t = 0; t < T; ++t) {
          const F8 xv = load_activations(x + t * op.x_stride + 8 * g);
          partial[t][local & 1] = local < 2 ? codes * xv : simd::fmadd(codes, xv, partial[t][local & 1]);
        }
        if (local == kSubGroups - 1) {  // the sub-block is complete
          const int sub = g / kSubGroups, c = (u * kSubs + sub) % kChains;
          const F8 sub_scale = simd::f8_set1(scale[sub]);
          for (int t = 0; t < T; ++t) acc[t][c] = simd::fmadd(partial[t][0] + partial[t][1], sub_scale, acc[t][c]);
        }
      });
      if constexpr (Decoder::kHasOffset)
        for (int t = 0; t < T; ++t)
          for (int sub = 0; sub < kSubs; ++sub)
            offset_sum[t] += offset[sub] * op.x_sums[t * op.x_sums_stride + b * kSubs + sub];
    } else {
      Decoder::decode(block, [&](int g, F8 w) {
        const int c = (u * kGroups + g) % kChains;
        for (int t = 0; t < T; ++t) acc[t][c] = simd::fmadd(w, load_activations(x + t * op.x_stride + 8 * g), acc[t][c]);
      });
    }
  };
  // Prefetch once per cache line (blocks of F16/BF16/F32 are smaller than a line). F16 rows are
  // left to the hardware prefetcher: a block converts in one instruction, and on Zen 4 the
  // software prefetches slowed that stream down (docs/results/llamacpp_matrix_zen4_noavx512.md).
  constexpr bool kPrefetch = !std::is_same_v<Decoder, decoders::F16>;
  constexpr int64_t kBlocksPerPrefetch = std::max<int64_t>(1, 64 / Decoder::kBlockBytes);
  int64_t b = 0;
  for (; b + kUnroll <= op.n_blocks; b += kUnroll)
    [&]<int... U>(std::integer_sequence<int, U...>) {
      (((kPrefetch && (b + U) % kBlocksPerPrefetch == 0 ? simd::prefetch_ahead(op.w + (b + U) * Decoder::kBlockBytes)
                                                        : void()),
        add_block(b + U, U)),
       ...);
    }(std::make_integer_sequence<int, kUnroll>{});
  for (; b < op.n_blocks; ++b) add_block(b, 0);
  for (int t = 0; t < T; ++t) {
    F8 sum = acc[t][0];
    for (int c = 1; c < kChains; ++c) sum = sum + acc[t][c];
    op.y[t * op.y_stride] += simd::hsum(sum) + offset_sum[t];
  }
}

#if MKV_SIMD == 3
// GCC 12's AVX-512 intrinsics seed their pass-through operand with _mm512_undefined_ps(), which
// -Wmaybe-uninitialized reports at every use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
inline __m512 f16x16_load(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512 f16x16_load(const float* p) { return _mm512_loadu_ps(p); }
// 8 values into the low lanes, the upper ones zero.
inline __m512 f16x8_load(const uint16_t* p) {
  return _mm512_insertf32x8(_mm512_setzero_ps(), _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 0);
}
inline __m512 f16x8_load(const float* p) { return _mm512_insertf32x8(_mm512_setzero_ps(), _mm256_loadu_ps(p), 0); }

// add_row_dots for F16 weights in 16-lane registers (the AVX-512 variant), against float32
// activations (the exact path) or fp16 bits (Fast). The F16 row dot is bound by its conversions:
// one converts a 32-byte piece of the row, half as many instructions per weight byte as the 8-lane
// code. (Fast's activations stay fp16: expanded once to float32 they made decode slower, twice the
// bytes beside the weight stream in L1.) Four chains, 16-wide piece i of each 64-column step
// feeding chain i; a row whose cols are not a multiple of 64 ends with whole 16-wide pieces (chain
// 0 upwards) and at most one 8-wide piece, into chain 0. The order of each token's sums does not
// depend on T.
template <int T, typename Act>
void add_row_dots_f16x16(const RowOperands<Act>& op) {
  constexpr int kChains = 4;
  const int64_t cols = op.n_blocks * decoders::F16::kBlockSize;
  const auto* w = reinterpret_cast<const uint16_t*>(op.w);
  __m512 acc[T][kChains];
  for (auto& chains : acc)
    for (auto& a : chains) a = _mm512_setzero_ps();
  int64_t c = 0;
  for (; c + 16 * kChains <= cols; c += 16 * kChains)
    for (int k = 0; k < kChains; ++k) {
      const __m512 wv = f16x16_load(w + c + 16 * k);
      for (int t = 0; t < T; ++t)
        acc[t][k] = _mm512_fmadd_ps(wv, f16x16_load(op.x + t * op.x_stride + c + 16 * k), acc[t][k]);
    }
  for (int k = 0; c + 16 <= cols; c += 16, ++k) {
    const __m512 wv = f16x16_load(w + c);
    for (int t = 0; t < T; ++t) acc[t][k] = _mm512_fmadd_ps(wv, f16x16_load(op.x + t * op.x_stride + c), acc[t][k]);
  }
  if (c < cols) {  // 8 columns left
    const __m512 wv = f16x8_load(w + c);
    for (int t = 0; t < T; ++t) acc[t][0] = _mm512_fmadd_ps(wv, f16x8_load(op.x + t * op.x_stride + c), acc[t][0]);
  }
  for (int t = 0; t < T; ++t) {
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]), _mm512_add_ps(acc[t][2], acc[t][3]));
    const __m256 high = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(sum), 1));
    op.y[t * op.y_stride] += simd::hsum(F8{_mm256_add_ps(_mm512_castps512_ps256(sum), high)});
  }
}
#pragma GCC diagnostic pop
#endif

// add_row_dots, or the 16-lane F16 row dot where the variant has one.
template <typename Decoder, int T, typename Act>
void add_row_dots_widest(const RowOperands<Act>& op) {
#if MKV_SIMD == 3
  if constexpr (std::is_same_v<Decoder, decoders::F16>) {
    add_row_dots_f16x16<T>(op);
    return;
  }
#endif
  add_row_dots<Decoder, T, Act>(op);
}

// One weight row against n_tokens tokens, kTileTokens at a time while they last.
template <typename Decoder, typename Act>
void add_row(RowOperands<Act> op, int64_t n_tokens) {
  for (int64_t t0 = 0; t0 < n_tokens;) {
    const int T = n_tokens - t0 >= kTileTokens ? kTileTokens : 1;
    if (T == kTileTokens)
      add_row_dots_widest<Decoder, kTileTokens, Act>(op);
    else
      add_row_dots_widest<Decoder, 1, Act>(op);
    op.x += T * op.x_stride;
    op.y += T * op.y_stride;
    if (op.x_sums) op.x_sums += T * op.x_sums_stride;
    t0 += T;
  }
}

// A panel holds float32 values, or fp16 bits (PanelValue).
inline F8 load_panel_column(const float* p) { return simd::f8_load(p); }
inline F8 load_panel_column(const uint16_t* p) { return simd::f8_load_fp16(reinterpret_cast<const uint8_t*>(p)); }

// Decodes blocks [0, n_blocks) of kPanelRows rows (w_stride bytes apart) into a transposed panel:
// panel[c * kPanelRows + r] = weight (r, c), for c < n_blocks * kBlockSize.
template <typename Decoder>
void pack_panel(const uint8_t* w, std::size_t w_stride, int64_t n_blocks, PanelValue<Decoder>* panel) {
  if constexpr (std::is_same_v<Decoder, decoders::F16>) {
    // fp16 into fp16: the bits are moved as they are, without a round trip through float32.
    for (int r0 = 0; r0 < kPanelRows; r0 += 8)
      for (int64_t b = 0; b < n_blocks; ++b)
        simd::transpose8_u16(w + r0 * w_stride + b * Decoder::kBlockBytes, w_stride, panel + b * 8 * kPanelRows + r0, kPanelRows);
  } else {
    alignas(32) F8 block[8][Decoder::kBlockSize / 8];  // one decoder block of 8 rows
    for (int r0 = 0; r0 < kPanelRows; r0 += 8)
      for (int64_t b = 0; b < n_blocks; ++b) {
        for (int r = 0; r < 8; ++r)
          Decoder::decode(w + (r0 + r) * w_stride + b * Decoder::kBlockBytes, [&](int g, F8 v) { block[r][g] = v; });
        for (int g = 0; g < Decoder::kBlockSize / 8; ++g) {
          F8 columns[8];
          for (int r = 0; r < 8; ++r) columns[r] = block[r][g];
          simd::transpose8(columns);
          float* out = panel + (b * Decoder::kBlockSize + 8 * g) * kPanelRows + r0;
          for (int c = 0; c < 8; ++c) simd::f8_store(out + c * kPanelRows, columns[c]);
        }
      }
  }
}

// Asks for the weights of the next panel to pack (into L2), so that the DRAM reads overlap the
// current panel's FMAs: the panel's row pieces are too short for the hardware prefetcher to pick
// up on its own (the BF16 GEMM's 256-column panels).
template <typename Decoder>
void prefetch_panel(const uint8_t* w, std::size_t w_stride, int64_t n_blocks) {
  const std::size_t bytes = static_cast<std::size_t>(n_blocks) * Decoder::kBlockBytes;
  for (int r = 0; r < kPanelRows; ++r)
    for (std::size_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(w + r * w_stride + offset, 0, 2);
}

// y[t][0..kPanelRows) += sum over c < n_cols of x[t][c] * panel column c, for T tokens (= instead of
// += for the first columns of a row: y is not zeroed beforehand).
template <typename Element, int T>
void add_panel_block(const Element* panel, int64_t n_cols, const float* x, int64_t x_stride, float* y,
                     int64_t y_stride, bool first) {
  F8 acc[T][2];
  for (auto& a : acc) a[0] = a[1] = simd::f8_zero();
  for (int64_t c = 0; c < n_cols; ++c) {
    const F8 w0 = load_panel_column(panel + c * kPanelRows), w1 = load_panel_column(panel + c * kPanelRows + 8);
    for (int t = 0; t < T; ++t) {
      const F8 xv = simd::f8_set1(x[t * x_stride + c]);
      acc[t][0] = simd::fmadd(xv, w0, acc[t][0]);
      acc[t][1] = simd::fmadd(xv, w1, acc[t][1]);
    }
  }
  for (int t = 0; t < T; ++t) {
    float* out = y + t * y_stride;
    simd::f8_store(out, first ? acc[t][0] : simd::f8_load(out) + acc[t][0]);
    simd::f8_store(out + 8, first ? acc[t][1] : simd::f8_load(out + 8) + acc[t][1]);
  }
}

// add_panel_block<Element, T> for T = 1 .. kBlockTokens, indexed by T - 1.
template <typename Element, int... I>
constexpr auto panel_block_kernels(std::integer_sequence<int, I...>) {
  return std::array{&add_panel_block<Element, I + 1>...};
}
template <typename Element>
constexpr auto kPanelBlockKernels = panel_block_kernels<Element>(std::make_integer_sequence<int, kBlockTokens>{});

// Calls block(t0, tokens) for n_tokens tokens in register blocks of up to kBlock tokens; a last block
// of fewer than half that (which would load the panel for one or two tokens) is merged with the one
// before and the two split in halves, 6 + 2 as 4 + 4.
template <int kBlock, typename Block>
void for_each_token_block(int64_t n_tokens, Block&& block) {
  for (int64_t t0 = 0; t0 < n_tokens;) {
    const int64_t left = n_tokens - t0;
    int64_t tokens = std::min<int64_t>(kBlock, left);
    if (left > kBlock && left < kBlock + kBlock / 2) tokens = left - left / 2;
    block(t0, tokens);
    t0 += tokens;
  }
}

// n_tokens tokens against n_cols columns of a packed panel (x and y positioned at its first column /
// row), in blocks of kBlockTokens tokens.
template <typename Element>
void add_panel(const Element* panel, int64_t n_cols, const float* x, int64_t x_stride, float* y, int64_t y_stride,
               int64_t n_tokens, bool first) {
  for_each_token_block<kBlockTokens>(n_tokens, [&](int64_t t0, int64_t tokens) {
    kPanelBlockKernels<Element>[tokens - 1](panel, n_cols, x + t0 * x_stride, x_stride, y + t0 * y_stride, y_stride, first);
  });
}

#if MKV_SIMD == 3
// The AVX-512 variant's GEMM block: two adjacent panels (32 rows) against up to kWideBlockTokens
// tokens, one 16-lane register per panel column (per column: 2 panel loads, T broadcasts, 2T FMAs;
// 2 x 12 accumulators + 2 panel registers + 1 broadcast = 27 of 32 registers). Each y value sums
// its columns in the same order, one FMA each, as add_panel_block, so both give the same floats.
constexpr int kWideBlockTokens = 12;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593: see f16x16_load
template <typename Element, int T>
void add_panel_pair_block(const Element* panel, int64_t next_offset, int64_t n_cols, const float* x, int64_t x_stride,
                          float* y, int64_t y_stride, bool first) {
  static_assert(kPanelRows == 16, "one 16-lane register per panel column");
  const Element* next = panel + next_offset;  // the second panel: rows 16-31 of the block
  __m512 acc[T][2];
  for (auto& a : acc) a[0] = a[1] = _mm512_setzero_ps();
  for (int64_t c = 0; c < n_cols; ++c) {
    const __m512 w0 = f16x16_load(panel + c * kPanelRows), w1 = f16x16_load(next + c * kPanelRows);
    for (int t = 0; t < T; ++t) {
      const __m512 xv = _mm512_set1_ps(x[t * x_stride + c]);
      acc[t][0] = _mm512_fmadd_ps(xv, w0, acc[t][0]);
      acc[t][1] = _mm512_fmadd_ps(xv, w1, acc[t][1]);
    }
  }
  for (int t = 0; t < T; ++t) {
    float* out = y + t * y_stride;
    _mm512_storeu_ps(out, first ? acc[t][0] : _mm512_add_ps(_mm512_loadu_ps(out), acc[t][0]));
    _mm512_storeu_ps(out + 16, first ? acc[t][1] : _mm512_add_ps(_mm512_loadu_ps(out + 16), acc[t][1]));
  }
}
#pragma GCC diagnostic pop

// add_panel_pair_block<Element, T> for T = 1 .. kWideBlockTokens, indexed by T - 1.
template <typename Element, int... I>
constexpr auto panel_pair_block_kernels(std::integer_sequence<int, I...>) {
  return std::array{&add_panel_pair_block<Element, I + 1>...};
}
template <typename Element>
constexpr auto kPanelPairBlockKernels =
    panel_pair_block_kernels<Element>(std::make_integer_sequence<int, kWideBlockTokens>{});

// add_panel for two panels (panel and panel + next_offset, the groups of two adjacent groups of rows)
// and the 32 rows of y they give, in blocks of kWideBlockTokens tokens.
template <typename Element>
void add_panel_pair(const Element* panel, int64_t next_offset, int64_t n_cols, const float* x, int64_t x_stride,
                    float* y, int64_t y_stride, int64_t n_tokens, bool first) {
  for_each_token_block<kWideBlockTokens>(n_tokens, [&](int64_t t0, int64_t tokens) {
    kPanelPairBlockKernels<Element>[tokens - 1](panel, next_offset, n_cols, x + t0 * x_stride, x_stride,
                                                y + t0 * y_stride, y_stride, first);
  });
}
constexpr int kGemmBlockTokens = kWideBlockTokens;  // tokens per register block of this variant's GEMM
#else
constexpr int kGemmBlockTokens = kBlockTokens;
#endif

// Columns past the last whole decoder block (float types only, fewer than 8 per row).
void add_tail_columns(GgmlType type, const Item& item, int64_t first_col) {
  for (int64_t t = item.token_begin; t < item.token_end; ++t)
    for (int64_t r = item.row_begin; r < item.row_end; ++r) {
      float sum = 0.0f;
      for (int64_t c = first_col; c < item.cols; ++c)
        sum += decoders::float_type_value(type, item.weights + r * item.row_bytes, c) * item.x[t * item.x_stride + c];
      item.y[t * item.y_stride + r] += sum;
    }
}

// Tokens per work item of a GEMM: batches of (nearly) equal size, at most max_tokens each, rounded
// up to whole register blocks of block_tokens so that only the last batch ends in a partial
// (slower) block.
constexpr int64_t item_token_count(int64_t n_tokens, int64_t max_tokens, int64_t block_tokens) {
  const int64_t even_split = (n_tokens + max_tokens - 1) / max_tokens;
  return ((n_tokens + even_split - 1) / even_split + block_tokens - 1) / block_tokens * block_tokens;
}

// The item's whole groups of kPanelRows rows as a GEMM (x and y positioned at its first token);
// returns the first row left.
template <typename Decoder>
int64_t add_panels(const Item& item, const float* x, float* y, int64_t n_tokens) {
  const int64_t n_blocks = item.cols / Decoder::kBlockSize;
  int64_t r0 = item.row_begin;
  if (n_blocks == 0) return r0;  // only tail columns: the panels would write none of y
  // The item's groups of rows are packed together, a piece of columns at a time, and its tokens
  // pass over them about kPanelChunkTokens at a time, every group in turn, so that the x read for
  // one group is in L2 for the next.
  constexpr int64_t kGroups = kPanelGroups<Decoder>;
  thread_local std::vector<PanelValue<Decoder>> panels;  // (kGroups, width, kPanelRows), transposed
  const int64_t n_cols = n_blocks * Decoder::kBlockSize;
  const int64_t width = std::min(n_cols, kMaxPanelCols);
  panels.resize(static_cast<std::size_t>(kGroups * width * kPanelRows));
  const int64_t chunk_tokens = item_token_count(n_tokens, kPanelChunkTokens, kGemmBlockTokens);
  while (item.row_end - r0 >= kPanelRows) {
    const int64_t groups = std::min<int64_t>(kGroups, (item.row_end - r0) / kPanelRows);
    for (int64_t p0 = 0; p0 < n_cols; p0 += width) {
      const int64_t p_cols = std::min(width, n_cols - p0);
      for (int64_t g = 0; g < groups; ++g)
        pack_panel<Decoder>(item.weights + (r0 + g * kPanelRows) * item.row_bytes + p0 / Decoder::kBlockSize * Decoder::kBlockBytes,
                            item.row_bytes, p_cols / Decoder::kBlockSize, panels.data() + g * width * kPanelRows);
      for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk_tokens) {
        int64_t g = 0;
#if MKV_SIMD == 3
        for (; g + 1 < groups; g += 2)
          add_panel_pair(panels.data() + g * width * kPanelRows, width * kPanelRows, p_cols, x + t0 * item.x_stride + p0,
                         item.x_stride, y + t0 * item.y_stride + r0 + g * kPanelRows, item.y_stride,
                         std::min(chunk_tokens, n_tokens - t0), p0 == 0);
#endif
        for (; g < groups; ++g)
          add_panel(panels.data() + g * width * kPanelRows, p_cols, x + t0 * item.x_stride + p0, item.x_stride,
                    y + t0 * item.y_stride + r0 + g * kPanelRows, item.y_stride, std::min(chunk_tokens, n_tokens - t0),
                    p0 == 0);
      }
    }
    r0 += groups * kPanelRows;
  }
  return r0;
}

// Computes the item's part of y: whole panels of kPanelRows rows as a GEMM when the item has more
// than kRowDotMaxTokens tokens; the other rows (all of them for decode-sized items) one weight row at
// a time, decoding blocks straight into the FMAs. Decode-sized items stream one row at a time:
// there is no reuse to gain from several rows at once, and several concurrent row streams were
// slower than one.
template <typename Decoder>
void run_item(GgmlType type, const Item& item) {
  const int64_t n_tokens = item.token_end - item.token_begin;
  const int64_t n_blocks = item.cols / Decoder::kBlockSize;
  const float* x = item.x + item.token_begin * item.x_stride;
  float* y = item.y + item.token_begin * item.y_stride;
  const int64_t first_row_left = n_tokens > kRowDotMaxTokens ? add_panels<Decoder>(item, x, y, n_tokens) : item.row_begin;
  for (int64_t t = 0; t < n_tokens; ++t) std::fill(y + t * item.y_stride + first_row_left, y + t * item.y_stride + item.row_end, 0.0f);
  int64_t n_sub = 0;  // sub-block sums per token
  if constexpr (decoders::SubBlockScaled<Decoder>) n_sub = item.cols / Decoder::kSubBlock;
  const float* x_sums = item.x_sums ? item.x_sums + item.token_begin * n_sub : nullptr;
  for (int64_t r = first_row_left; r < item.row_end; ++r)
    add_row<Decoder, float>({item.weights + r * item.row_bytes, x, item.x_stride, y + r, item.y_stride, n_blocks, x_sums, n_sub},
                     n_tokens);
  if (n_blocks * Decoder::kBlockSize < item.cols) add_tail_columns(type, item, n_blocks * Decoder::kBlockSize);
}

// For decoders with sub-block offsets: the sums of x over every sub-block, (n_tokens, cols /
// kSubBlock), written to `sums` (read by the team during this product); else null.
template <typename Decoder>
const float* x_sub_sums(const float* x, int64_t n_tokens, int64_t cols, float* sums) {
  if constexpr (decoders::SubBlockScaled<Decoder>) {
    if constexpr (Decoder::kHasOffset) {
      static_assert(Decoder::kSubBlock >= 16, "KernelTable::matmul_float's scratch holds cols / 16 sums per token");
      const int64_t n_sub = cols / Decoder::kSubBlock;
      for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t s = 0; s < n_sub; ++s) {
          const float* v = x + t * cols + s * Decoder::kSubBlock;
          F8 sum = simd::f8_load(v);
          for (int i = 8; i < Decoder::kSubBlock; i += 8) sum = sum + simd::f8_load(v + i);
          sums[t * n_sub + s] = simd::hsum(sum);
        }
      return sums;
    }
  }
  return nullptr;
}

void matmul_float(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, float* sums) {
  const Item whole{static_cast<const uint8_t*>(w.data), ggml_row_bytes(w.type, w.cols), x, y, w.cols, w.rows, w.cols, 0, 0, 0, 0};
  decoders::visit_decoder(w.type, [&]<typename Decoder>() {
    const bool gemm = n_tokens > kRowDotMaxTokens;
    const int64_t item_rows = gemm ? kPanelGroups<Decoder> * kPanelRows : row_items::item_rows(whole.row_bytes);
    const int64_t n_row_items = (w.rows + item_rows - 1) / item_rows;
    // Each item packs its panels once, so its tokens are all the product's, unless the rows alone
    // give fewer than two items per thread (with many threads, products of few rows).
    const int64_t wanted_items = 2 * omp_get_max_threads();
    int64_t item_tokens = n_tokens;
    if (gemm && n_row_items < wanted_items && n_tokens >= 2 * kMinItemTokens) {
      const int64_t ranges = std::min((wanted_items + n_row_items - 1) / n_row_items, n_tokens / kMinItemTokens);
      item_tokens = item_token_count(n_tokens, (n_tokens + ranges - 1) / ranges, kBlockTokens);
    }
    const int64_t n_token_items = (n_tokens + item_tokens - 1) / item_tokens;
    const int64_t n_items = n_token_items * n_row_items;
    // Waking the thread team costs microseconds: small products run on the calling thread.
    const bool parallel = n_items > 1 && w.rows * w.cols * n_tokens >= kMinParallelMacs;
    const float* x_sums = x_sub_sums<Decoder>(x, n_tokens, w.cols, sums);
    const auto run = [&](int64_t i) {
      Item item = whole;
      item.x_sums = x_sums;
      item.token_begin = (i / n_row_items) * item_tokens;
      item.token_end = std::min(n_tokens, item.token_begin + item_tokens);
      item.row_begin = (i % n_row_items) * item_rows;
      item.row_end = std::min(w.rows, item.row_begin + item_rows);
      run_item<Decoder>(w.type, item);
    };
    if (gemm) {
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
      for (int64_t i = 0; i < n_items; ++i) run(i);
    } else {
      row_items::for_each_row_item(n_items, parallel, run);
    }
  });
}

// MatmulPrecision::Fast for F16 and BF16 weights (cols a multiple of 8) and decode-sized products
// (n_tokens <= kRowDotMaxTokens): x is rounded to the weights' format into x_half (n_tokens x cols,
// the calling thread's scratch), and the row dots read those (as llama.cpp's F16 and BF16 kernels
// do): half the activation bytes per weight, which keeps a whole row's activations in L1 next to
// the weight stream.
void matmul_half_fast(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, uint16_t* x_half) {
  const bool bf16 = w.type == GgmlType::BF16;  // else F16
  for (int64_t i = 0; i < n_tokens * w.cols; i += 8) {
    if (bf16) simd::f8_store_bf16(x_half + i, simd::f8_load(x + i));
    else simd::f8_store_fp16(x_half + i, simd::f8_load(x + i));
  }
  const std::size_t row_bytes = ggml_row_bytes(w.type, w.cols);
  const bool parallel = w.rows * w.cols * n_tokens >= kMinParallelMacs;
  row_items::for_each_row_run(w.rows, row_bytes, parallel, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      for (int64_t t = 0; t < n_tokens; ++t) y[t * w.rows + r] = 0.0f;
      const uint8_t* row = static_cast<const uint8_t*>(w.data) + r * row_bytes;
      if (bf16)
        add_row<decoders::BF16, Bf16Bits>(
            {row, reinterpret_cast<const Bf16Bits*>(x_half), w.cols, y + r, w.rows, w.cols / 8, nullptr, 0}, n_tokens);
      else
        add_row<decoders::F16, uint16_t>({row, x_half, w.cols, y + r, w.rows, w.cols / 8, nullptr, 0}, n_tokens);
    }
  });
}

}  // namespace
}  // namespace mkv::kernels::inline MKV_SIMD_NS
