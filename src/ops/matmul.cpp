// matmul / dot_row: one generic kernel for every weight type. Weight blocks are decoded on the fly
// (block_decoders.h) into 8-float vectors that feed FMAs against float32 activations; nothing is
// quantised on the activation side.
//
// Blocking: the output (n_tokens x rows) is split into work items of up to kItemTokens tokens x
// kItemRows rows, shared among threads. Within an item, columns are walked in chunks of
// kChunkCols so that the item's activation slice (tokens x chunk) stays in L2 while every row
// tile passes over it; a micro-tile takes kTileRows rows per group of 8 columns and reuses each
// weight vector for kTileTokens tokens (kTileRows x kTileTokens accumulators in registers).
// Quantised weights are decoded once per item: into a small float panel when the item has several
// token tiles, else directly in the micro-tile.
#include "ops/matmul.h"

#include <algorithm>
#include <type_traits>

#include "core/error.h"
#include "ops/block_decoders.h"
#include "ops/matmul_int8.h"

namespace mkv {
namespace {

using simd::F8;

constexpr int kTileRows = 4;
constexpr int64_t kMinParallelMacs = 1 << 18;  // multiply-adds below which one thread is faster
constexpr int kTileTokens = 3;
constexpr int64_t kItemRows = 64;
constexpr int64_t kItemTokens = 64;
constexpr int64_t kChunkCols = 1024;  // 64 tokens x 1024 floats = 256 KiB of activations

// The part of y that one work item owns, and where its inputs are.
struct Item {
  const uint8_t* weights;  // row 0 of the matrix
  std::size_t row_bytes;
  const float* x;          // (n_tokens, cols)
  float* y;                // (n_tokens, rows)
  int64_t rows;            // matrix rows (the stride of y)
  int64_t cols;            // matrix cols (the stride of x)
  int64_t row_begin, row_end, token_begin, token_end;
};

// The operands of one micro-tile, all positioned at the first column of its column range.
struct TileOperands {
  const uint8_t* w;       // first of R weight rows
  std::size_t w_stride;   // bytes from one weight row to the next
  const float* x;         // first of T activation rows
  int64_t x_stride;       // floats from one token's activations to the next
  float* y;               // y of the first token and first row
  int64_t y_stride;       // floats from one token's outputs to the next
  int64_t n_blocks;       // decoder blocks in the column range
};

// y[t][r] += dot(weight row r, token t) over the tile's column range, for R rows and T tokens.
template <typename Decoder, int R, int T>
void add_tile(const TileOperands& op) {
  F8 acc[R][T];
  for (auto& row : acc)
    for (auto& a : row) a = simd::f8_zero();
  // Prefetch once per cache line of each row (blocks of F16/BF16/F32 are smaller than a line).
  constexpr int64_t kBlocksPerPrefetch = std::max<int64_t>(1, 64 / Decoder::kBlockBytes);
  for (int64_t b = 0; b < op.n_blocks; ++b) {
    const float* x = op.x + b * Decoder::kBlockSize;
    for (int r = 0; r < R; ++r) {
      if (b % kBlocksPerPrefetch == 0) simd::prefetch_ahead(op.w + r * op.w_stride + b * Decoder::kBlockBytes);
      Decoder::decode(op.w + r * op.w_stride + b * Decoder::kBlockBytes, [&](int g, F8 w) {
        for (int t = 0; t < T; ++t) acc[r][t] = simd::fmadd(w, simd::f8_load(x + t * op.x_stride + 8 * g), acc[r][t]);
      });
    }
  }
  for (int t = 0; t < T; ++t)
    for (int r = 0; r < R; ++r) op.y[t * op.y_stride + r] += simd::hsum(acc[r][t]);
}

// All token tiles of the item for R rows over one column range (op positioned at the item's
// first token).
template <typename Decoder, int R>
void add_row_tile(TileOperands op, int64_t n_tokens) {
  for (int64_t t0 = 0; t0 < n_tokens;) {
    const int T = n_tokens - t0 >= kTileTokens ? kTileTokens : 1;
    if (T == kTileTokens)
      add_tile<Decoder, R, kTileTokens>(op);
    else
      add_tile<Decoder, R, 1>(op);
    op.x += T * op.x_stride;
    op.y += T * op.y_stride;
    t0 += T;
  }
}

// Decodes blocks [0, n_blocks) of R rows (w_stride bytes apart) into panel rows kChunkCols apart.
template <typename Decoder, int R>
void decode_panel(const uint8_t* w, std::size_t w_stride, int64_t n_blocks, float* panel) {
  for (int r = 0; r < R; ++r)
    for (int64_t b = 0; b < n_blocks; ++b) {
      float* out = panel + r * kChunkCols + b * Decoder::kBlockSize;
      Decoder::decode(w + r * w_stride + b * Decoder::kBlockBytes, [out](int g, F8 v) { simd::f8_store(out + 8 * g, v); });
    }
}

// Columns past the last whole decoder block (float types only, fewer than 8 per row).
void add_tail_columns(GgmlType type, const Item& item, int64_t first_col) {
  for (int64_t t = item.token_begin; t < item.token_end; ++t)
    for (int64_t r = item.row_begin; r < item.row_end; ++r) {
      float sum = 0.0f;
      for (int64_t c = first_col; c < item.cols; ++c)
        sum += decoders::float_type_value(type, item.weights + r * item.row_bytes, c) * item.x[t * item.cols + c];
      item.y[t * item.rows + r] += sum;
    }
}

// Computes the item's part of y. With several token tiles (prefill), each column chunk of a row
// tile is decoded once into a float panel that all token tiles then read (F32 weights are read in
// place); with one token tile (decode), blocks are decoded straight into the FMAs.
template <typename Decoder>
void run_item(GgmlType type, const Item& item) {
  const int64_t n_tokens = item.token_end - item.token_begin;
  for (int64_t t = item.token_begin; t < item.token_end; ++t)
    std::fill(item.y + t * item.rows + item.row_begin, item.y + t * item.rows + item.row_end, 0.0f);

  const int64_t n_blocks = item.cols / Decoder::kBlockSize;
  const bool use_panel = n_tokens > kTileTokens && !std::is_same_v<Decoder, decoders::F32>;
  const int64_t chunk_blocks = n_tokens <= kTileTokens ? n_blocks : kChunkCols / Decoder::kBlockSize;
  alignas(64) float panel[kTileRows * kChunkCols];  // (kTileRows, kChunkCols) decoded weights

  auto add_rows = [&]<int R>(int64_t r0, int64_t b0, int64_t b1) {
    TileOperands op{item.weights + r0 * item.row_bytes + b0 * Decoder::kBlockBytes, item.row_bytes,
                    item.x + item.token_begin * item.cols + b0 * Decoder::kBlockSize, item.cols,
                    item.y + item.token_begin * item.rows + r0, item.rows, b1 - b0};
    if (!use_panel) return add_row_tile<Decoder, R>(op, n_tokens);
    decode_panel<Decoder, R>(op.w, op.w_stride, op.n_blocks, panel);
    op.w = reinterpret_cast<const uint8_t*>(panel);
    op.w_stride = kChunkCols * sizeof(float);
    op.n_blocks = (b1 - b0) * Decoder::kBlockSize / decoders::F32::kBlockSize;
    add_row_tile<decoders::F32, R>(op, n_tokens);
  };
  for (int64_t b0 = 0; b0 < n_blocks; b0 += chunk_blocks) {
    const int64_t b1 = std::min(n_blocks, b0 + chunk_blocks);
    for (int64_t r0 = item.row_begin; r0 < item.row_end;) {
      // Decode-sized batches stream one weight row at a time: several concurrent row streams
      // measured 13% slower (F16, Llama-3.2-1B shape, 2 threads) and there is no reuse to gain.
      if (n_tokens > kTileTokens && item.row_end - r0 >= kTileRows) {
        add_rows.template operator()<kTileRows>(r0, b0, b1);
        r0 += kTileRows;
      } else {
        add_rows.template operator()<1>(r0, b0, b1);
        r0 += 1;
      }
    }
  }
  if (n_blocks * Decoder::kBlockSize < item.cols) add_tail_columns(type, item, n_blocks * Decoder::kBlockSize);
}

void check_matrix(const WeightMatrix& w) {
  const auto& info = ggml_type_info(w.type);
  MKV_CHECK(w.data != nullptr && w.rows >= 0 && w.cols >= 0, "invalid {} weight matrix ({} x {})", info.name,
            w.rows, w.cols);
  MKV_CHECK(w.cols % info.block_size == 0, "{} weight matrix has {} columns, not a multiple of the block size {}",
            info.name, w.cols, info.block_size);
}

}  // namespace

void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) {
  check_matrix(w);
  if (w.rows == 0 || n_tokens <= 0) return;
  // Decode-sized batches in Fast precision: 8-bit activations, integer dot products.
  if (n_tokens <= kInt8MaxTokens && matmul_precision() == MatmulPrecision::Fast && matmul_int8_supported(w.type))
    return matmul_int8(w, x, n_tokens, y);
  // Token batches of (nearly) equal size, at most kItemTokens each.
  const int64_t n_token_items = (n_tokens + kItemTokens - 1) / kItemTokens;
  const int64_t item_tokens = (n_tokens + n_token_items - 1) / n_token_items;
  const int64_t n_row_items = (w.rows + kItemRows - 1) / kItemRows;
  const int64_t n_items = n_token_items * n_row_items;
  const Item whole{static_cast<const uint8_t*>(w.data), w.row_bytes(), x, y, w.rows, w.cols, 0, 0, 0, 0};
  // Waking the thread team costs microseconds: small products run on the calling thread.
  const bool parallel = n_items > 1 && w.rows * w.cols * n_tokens >= kMinParallelMacs;

  decoders::visit_decoder(w.type, [&]<typename Decoder>() {
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
    for (int64_t i = 0; i < n_items; ++i) {
      Item item = whole;
      item.token_begin = (i / n_row_items) * item_tokens;
      item.token_end = std::min(n_tokens, item.token_begin + item_tokens);
      item.row_begin = (i % n_row_items) * kItemRows;
      item.row_end = std::min(w.rows, item.row_begin + kItemRows);
      run_item<Decoder>(w.type, item);
    }
  });
}

float dot_row(const WeightMatrix& w, int64_t r, const float* x) {
  check_matrix(w);
  MKV_CHECK(r >= 0 && r < w.rows, "row {} out of range for a matrix of {} rows", r, w.rows);
  float y = 0.0f;
  // A one-row, one-token item whose weights start at row r.
  const Item item{static_cast<const uint8_t*>(w.data) + r * w.row_bytes(), w.row_bytes(), x, &y, 1, w.cols, 0, 1, 0, 1};
  decoders::visit_decoder(w.type, [&]<typename Decoder>() { run_item<Decoder>(w.type, item); });
  return y;
}

}  // namespace mkv
