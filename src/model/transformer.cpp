#include "model/transformer.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "kv/attention.h"
#include "ops/quant.h"
#include "ops/vec.h"

namespace mkv {
namespace {

// Values per batch from which the per-row steps between the products (norms, RoPE, SwiGLU, residual
// adds) run across the thread team: in a prompt chunk they would otherwise leave the other threads
// waiting; for a decode step (one token's rows, qwen3's per-head norms included) waking the team
// costs more than the work.
constexpr int64_t kParallelValuesMin = 16 * 1024;

// row(t) for t in [0, n), rows of row_values values. Each row is computed on its own, so the split
// does not change the results.
template <typename RowFn>
void for_each_row(int n, int64_t row_values, RowFn&& row) {
#pragma omp parallel for schedule(static) if (n * row_values >= kParallelValuesMin)
  for (int t = 0; t < n; ++t) row(t);
}

void add_bias(float* rows, const std::vector<float>& bias, int n) {
  if (bias.empty()) return;
  const std::size_t width = bias.size();
  for_each_row(n, width, [&](int t) { vec_axpy(1.0f, bias.data(), rows + t * width, static_cast<int>(width)); });
}

// rows += add, both n rows of `width` values.
void add_rows(float* rows, const float* add, int n, int width) {
  for_each_row(n, width, [&](int t) {
    const std::size_t offset = static_cast<std::size_t>(t) * width;
    vec_axpy(1.0f, add + offset, rows + offset, width);
  });
}

// y = w x over n rows; with row_invariant, in products of at most row_invariant_tokens(w) rows,
// so that each row gets what it would get alone (forward_decode_batch; asserted bit for bit by
// tests/engine/batched_decode_test.cpp).
void product(const WeightMatrix& w, const float* x, int64_t n, float* y, bool row_invariant) {
  if (!row_invariant) return matmul(w, x, n, y);
  const int64_t group = row_invariant_tokens(w);
  for (int64_t first = 0; first < n; first += group)
    matmul(w, x + first * w.cols, std::min(group, n - first), y + first * w.rows);
}

// RMSNorm of each of n rows of `width` values (per-row, in place into out).
void rmsnorm_rows(const float* x, const std::vector<float>& weight, int n, int width, float eps, float* out) {
  for_each_row(n, width, [&](int t) {
    rmsnorm(x + static_cast<std::size_t>(t) * width, weight.data(), width, eps, out + static_cast<std::size_t>(t) * width);
  });
}

}  // namespace

Transformer::Transformer(const GgufFile& file, int max_batch)
    : config_(ModelConfig::from_gguf(file)),
      weights_(ModelWeights::from_gguf(file, config_)),
      rope_(config_.rope_style, config_.head_dim_k, config_.rope_dim, config_.rope_base, weights_.rope_freqs),
      max_batch_(max_batch) {
  MKV_CHECK(max_batch > 0, "batch size must be positive, got {}", max_batch);
  const auto& c = config_;
  const std::size_t b = max_batch;
  x_ = AlignedBuffer<float>(b * c.n_embd);
  xn_ = AlignedBuffer<float>(b * c.n_embd);
  q_ = AlignedBuffer<float>(b * c.n_heads * c.head_dim_k);
  k_ = AlignedBuffer<float>(b * c.n_kv_heads * c.head_dim_k);
  v_ = AlignedBuffer<float>(b * c.n_kv_heads * c.head_dim_v);
  attn_ = AlignedBuffer<float>(b * c.n_heads * c.head_dim_v);
  gate_ = AlignedBuffer<float>(b * c.n_ff);
  up_ = AlignedBuffer<float>(b * c.n_ff);
}

KvCacheShape Transformer::cache_shape() const {
  return {config_.n_layers, config_.n_kv_heads, config_.head_dim_k, config_.head_dim_v};
}

void Transformer::embed(std::span<const int32_t> tokens) {
  const auto& c = config_;
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    MKV_CHECK(tokens[t] >= 0 && tokens[t] < c.n_vocab, "token id {} is outside the vocabulary (0..{})",
              tokens[t], c.n_vocab - 1);
    dequantize_row(weights_.token_embd.type,
                   static_cast<const uint8_t*>(weights_.token_embd.data) + tokens[t] * weights_.token_embd.row_bytes(),
                   x_.data() + t * c.n_embd, c.n_embd);
  }
}

void Transformer::forward(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                          KvCache& cache, float* logits, bool all_logits, ForwardObserver* observer) {
  const auto& c = config_;
  const int n = static_cast<int>(tokens.size());
  MKV_CHECK(n > 0 && n <= max_batch_ && positions.size() == tokens.size(),
            "forward: {} tokens with {} positions (batch limit {})", n, positions.size(), max_batch_);
  embed(tokens);
  const BatchSegment whole{&cache, observer, 0, n};
  run_layers(n, positions.data(), std::span<const BatchSegment>(&whole, 1), /*row_invariant=*/false);

  // Final norm and classifier, for every row or only the last one.
  const int first = all_logits ? 0 : n - 1;
  const int rows = n - first;
  rmsnorm_rows(x_.data() + static_cast<std::size_t>(first) * c.n_embd, weights_.output_norm, rows, c.n_embd,
               c.rms_eps, xn_.data());
  matmul(weights_.output, xn_.data(), rows, logits);
}

void Transformer::forward_decode_batch(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                       std::span<KvCache* const> caches, std::span<ForwardObserver* const> observers,
                                       float* logits) {
  const auto& c = config_;
  const int n = static_cast<int>(tokens.size());
  MKV_CHECK(n > 0 && n <= max_batch_ && positions.size() == tokens.size() && caches.size() == tokens.size() &&
                observers.size() == tokens.size(),
            "forward_decode_batch: {} tokens, {} positions, {} caches, {} observers (batch limit {})", n,
            positions.size(), caches.size(), observers.size(), max_batch_);
  embed(tokens);
  std::vector<BatchSegment> segments(n);  // (n) one row per sequence
  for (int i = 0; i < n; ++i) {
    MKV_CHECK(caches[i] != nullptr, "forward_decode_batch: row {} has no cache", i);
    for (int j = 0; j < i; ++j) MKV_CHECK(caches[j] != caches[i], "forward_decode_batch: rows {} and {} share a cache", j, i);
    segments[i] = {caches[i], observers[i], i, 1};
  }
  run_layers(n, positions.data(), segments, /*row_invariant=*/true);
  rmsnorm_rows(x_.data(), weights_.output_norm, n, c.n_embd, c.rms_eps, xn_.data());
  product(weights_.output, xn_.data(), n, logits, /*row_invariant=*/true);
}

void Transformer::run_layers(int n, const int32_t* positions, std::span<const BatchSegment> segments,
                             bool row_invariant) {
  for (int l = 0; l < config_.n_layers; ++l) {
    attention_block(l, n, positions, segments, row_invariant);
    ffn_block(l, n, row_invariant);
  }
}

void Transformer::attention_block(int l, int n, const int32_t* positions, std::span<const BatchSegment> segments,
                                  bool row_invariant) {
  const auto& c = config_;
  const LayerWeights& w = weights_.layers[l];
  rmsnorm_rows(x_.data(), w.attn_norm, n, c.n_embd, c.rms_eps, xn_.data());
  product(w.wq, xn_.data(), n, q_.data(), row_invariant);
  product(w.wk, xn_.data(), n, k_.data(), row_invariant);
  product(w.wv, xn_.data(), n, v_.data(), row_invariant);
  add_bias(q_.data(), w.bq, n);
  add_bias(k_.data(), w.bk, n);
  add_bias(v_.data(), w.bv, n);

  const int q_width = c.n_heads * c.head_dim_k, k_width = c.n_kv_heads * c.head_dim_k;
  const int v_width = c.n_kv_heads * c.head_dim_v, out_width = c.n_heads * c.head_dim_v;
  if (c.qk_norm) {  // qwen3: RMSNorm over each head's values, before RoPE
    rmsnorm_rows(q_.data(), w.q_norm, n * c.n_heads, c.head_dim_k, c.rms_eps, q_.data());
    rmsnorm_rows(k_.data(), w.k_norm, n * c.n_kv_heads, c.head_dim_k, c.rms_eps, k_.data());
  }
  for_each_row(n, q_width, [&](int t) {
    rope_.apply(q_.data() + static_cast<std::size_t>(t) * q_width, c.n_heads, positions[t]);
    rope_.apply(k_.data() + static_cast<std::size_t>(t) * k_width, c.n_kv_heads, positions[t]);
  });

  const AttentionShape shape{c.n_heads, c.head_dim_k, c.head_dim_v, c.attention_scale()};
  for (const BatchSegment& s : segments) {  // each sequence with its own cache
    const std::size_t row = s.first;
    const float* q = q_.data() + row * q_width;
    s.cache->append(l, s.count, k_.data() + row * k_width, v_.data() + row * v_width, positions + s.first);
    if (s.observer) s.observer->on_queries(l, s.count, q, positions + s.first, *s.cache);
    attend_layer(*s.cache, l, shape, q, s.count, attn_.data() + row * out_width);
  }

  product(w.wo, attn_.data(), n, xn_.data(), row_invariant);
  add_rows(x_.data(), xn_.data(), n, c.n_embd);
}

void Transformer::ffn_block(int l, int n, bool row_invariant) {
  const auto& c = config_;
  const LayerWeights& w = weights_.layers[l];
  rmsnorm_rows(x_.data(), w.ffn_norm, n, c.n_embd, c.rms_eps, xn_.data());
  product(w.w_gate, xn_.data(), n, gate_.data(), row_invariant);
  product(w.w_up, xn_.data(), n, up_.data(), row_invariant);
  for_each_row(n, c.n_ff, [&](int t) {
    const std::size_t offset = static_cast<std::size_t>(t) * c.n_ff;
    swiglu(gate_.data() + offset, up_.data() + offset, c.n_ff);
  });
  product(w.w_down, gate_.data(), n, xn_.data(), row_invariant);
  add_rows(x_.data(), xn_.data(), n, c.n_embd);
}

}  // namespace mkv
