// matmul / dot_row: one generic kernel for every weight type. Weight blocks are decoded on the fly
// (block_decoders.h) into 8-float vectors that feed FMAs against float32 activations; nothing is
// quantised on the activation side.
//
// Blocking: the output (n_tokens x rows) is split into work items of up to kItemTokens tokens x
// kItemRows rows, shared among threads. Within an item, columns are walked in chunks of
// kChunkCols so that the item's activation slice (tokens x chunk) stays in L2 while every row
// tile passes over it; a micro-tile decodes kTileRows rows once per group of 8 columns and reuses
// each decoded vector for kTileTokens tokens (kTileRows x kTileTokens accumulators in registers).
#include "ops/matmul.h"

#include <algorithm>

#include "core/error.h"
#include "ops/block_decoders.h"

namespace mkv {
namespace {

using simd::F8;

constexpr int kTileRows = 4;
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

// y[t][r] += dot(row r, token t) over blocks [block_begin, block_end), for R rows from r0 and T
// tokens from t0.
template <typename Decoder, int R, int T>
void add_tile(const Item& item, int64_t r0, int64_t t0, int64_t block_begin, int64_t block_end) {
  F8 acc[R][T];
  for (auto& row : acc)
    for (auto& a : row) a = simd::f8_zero();
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = item.weights + (r0 + r) * item.row_bytes;
  const float* tokens[T];
  for (int t = 0; t < T; ++t) tokens[t] = item.x + (t0 + t) * item.cols;

  for (int64_t b = block_begin; b < block_end; ++b) {
    const int64_t col = b * Decoder::kBlockSize;
    for (int r = 0; r < R; ++r) {
      Decoder::decode(rows[r] + b * Decoder::kBlockBytes, [&](int g, F8 w) {
        for (int t = 0; t < T; ++t) acc[r][t] = simd::fmadd(w, simd::f8_load(tokens[t] + col + 8 * g), acc[r][t]);
      });
    }
  }
  for (int t = 0; t < T; ++t)
    for (int r = 0; r < R; ++r) item.y[(t0 + t) * item.rows + r0 + r] += simd::hsum(acc[r][t]);
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

template <typename Decoder>
void run_item(GgmlType type, const Item& item) {
  for (int64_t t = item.token_begin; t < item.token_end; ++t)
    std::fill(item.y + t * item.rows + item.row_begin, item.y + t * item.rows + item.row_end, 0.0f);

  const int64_t n_blocks = item.cols / Decoder::kBlockSize;
  const bool one_token_tile = item.token_end - item.token_begin <= kTileTokens;
  const int64_t chunk_blocks = one_token_tile ? n_blocks : std::max<int64_t>(1, kChunkCols / Decoder::kBlockSize);

  // All token tiles of rows [r0, r0 + R) over one column chunk.
  auto add_row_tile = [&]<int R>(int64_t r0, int64_t b0, int64_t b1) {
    for (int64_t t0 = item.token_begin; t0 < item.token_end;) {
      if (item.token_end - t0 >= kTileTokens) {
        add_tile<Decoder, R, kTileTokens>(item, r0, t0, b0, b1);
        t0 += kTileTokens;
      } else {
        add_tile<Decoder, R, 1>(item, r0, t0, b0, b1);
        t0 += 1;
      }
    }
  };
  for (int64_t b0 = 0; b0 < n_blocks; b0 += chunk_blocks) {
    const int64_t b1 = std::min(n_blocks, b0 + chunk_blocks);
    for (int64_t r0 = item.row_begin; r0 < item.row_end;) {
      if (item.row_end - r0 >= kTileRows) {
        add_row_tile.template operator()<kTileRows>(r0, b0, b1);
        r0 += kTileRows;
      } else {
        add_row_tile.template operator()<1>(r0, b0, b1);
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
  // Token batches of (nearly) equal size, at most kItemTokens each.
  const int64_t n_token_items = (n_tokens + kItemTokens - 1) / kItemTokens;
  const int64_t item_tokens = (n_tokens + n_token_items - 1) / n_token_items;
  const int64_t n_row_items = (w.rows + kItemRows - 1) / kItemRows;
  const int64_t n_items = n_token_items * n_row_items;
  const Item whole{static_cast<const uint8_t*>(w.data), w.row_bytes(), x, y, w.rows, w.cols, 0, 0, 0, 0};

  decoders::visit_decoder(w.type, [&]<typename Decoder>() {
#pragma omp parallel for schedule(dynamic, 1) if (n_items > 1)
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
