#include "model/transformer.h"

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "kv/attention.h"
#include "ops/quant.h"
#include "ops/vec.h"

namespace mkv {
namespace {

void add_bias(float* rows, const std::vector<float>& bias, int n) {
  if (bias.empty()) return;
  const std::size_t width = bias.size();
  for (int t = 0; t < n; ++t) vec_axpy(1.0f, bias.data(), rows + t * width, static_cast<int>(width));
}

// RMSNorm of each of n rows of `width` values (per-row, in place into out).
void rmsnorm_rows(const float* x, const std::vector<float>& weight, int n, int width, float eps, float* out) {
  for (int t = 0; t < n; ++t)
    rmsnorm(x + static_cast<std::size_t>(t) * width, weight.data(), width, eps,
            out + static_cast<std::size_t>(t) * width);
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

void Transformer::forward(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                          KvCache& cache, float* logits, bool all_logits, ForwardObserver* observer) {
  const auto& c = config_;
  const int n = static_cast<int>(tokens.size());
  MKV_CHECK(n > 0 && n <= max_batch_ && positions.size() == tokens.size(),
            "forward: {} tokens with {} positions (batch limit {})", n, positions.size(), max_batch_);
  for (int t = 0; t < n; ++t) {
    MKV_CHECK(tokens[t] >= 0 && tokens[t] < c.n_vocab, "token id {} is outside the vocabulary (0..{})",
              tokens[t], c.n_vocab - 1);
    dequantize_row(weights_.token_embd.type,
                   static_cast<const uint8_t*>(weights_.token_embd.data) + tokens[t] * weights_.token_embd.row_bytes(),
                   x_.data() + static_cast<std::size_t>(t) * c.n_embd, c.n_embd);
  }

  for (int l = 0; l < c.n_layers; ++l) {
    attention_block(l, n, positions.data(), cache, observer);
    ffn_block(l, n);
  }

  // Final norm and classifier, for every row or only the last one.
  const int first = all_logits ? 0 : n - 1;
  const int rows = n - first;
  rmsnorm_rows(x_.data() + static_cast<std::size_t>(first) * c.n_embd, weights_.output_norm, rows, c.n_embd,
               c.rms_eps, xn_.data());
  matmul(weights_.output, xn_.data(), rows, logits);
}

void Transformer::attention_block(int l, int n, const int32_t* positions, KvCache& cache,
                                  ForwardObserver* observer) {
  const auto& c = config_;
  const LayerWeights& w = weights_.layers[l];
  rmsnorm_rows(x_.data(), w.attn_norm, n, c.n_embd, c.rms_eps, xn_.data());
  matmul(w.wq, xn_.data(), n, q_.data());
  matmul(w.wk, xn_.data(), n, k_.data());
  matmul(w.wv, xn_.data(), n, v_.data());
  add_bias(q_.data(), w.bq, n);
  add_bias(k_.data(), w.bk, n);
  add_bias(v_.data(), w.bv, n);

  const int q_width = c.n_heads * c.head_dim_k, k_width = c.n_kv_heads * c.head_dim_k;
  if (c.qk_norm) {  // qwen3: RMSNorm over each head's values, before RoPE
    rmsnorm_rows(q_.data(), w.q_norm, n * c.n_heads, c.head_dim_k, c.rms_eps, q_.data());
    rmsnorm_rows(k_.data(), w.k_norm, n * c.n_kv_heads, c.head_dim_k, c.rms_eps, k_.data());
  }
  for (int t = 0; t < n; ++t) {
    rope_.apply(q_.data() + static_cast<std::size_t>(t) * q_width, c.n_heads, positions[t]);
    rope_.apply(k_.data() + static_cast<std::size_t>(t) * k_width, c.n_kv_heads, positions[t]);
  }

  cache.append(l, n, k_.data(), v_.data(), positions);
  if (observer) observer->on_queries(l, n, q_.data(), positions, cache);
  const AttentionShape shape{c.n_heads, c.head_dim_k, c.head_dim_v, c.attention_scale()};
  attend_layer(cache, l, shape, q_.data(), n, attn_.data());

  matmul(w.wo, attn_.data(), n, xn_.data());
  vec_axpy(1.0f, xn_.data(), x_.data(), n * c.n_embd);
}

void Transformer::ffn_block(int l, int n) {
  const auto& c = config_;
  const LayerWeights& w = weights_.layers[l];
  rmsnorm_rows(x_.data(), w.ffn_norm, n, c.n_embd, c.rms_eps, xn_.data());
  matmul(w.w_gate, xn_.data(), n, gate_.data());
  matmul(w.w_up, xn_.data(), n, up_.data());
  swiglu(gate_.data(), up_.data(), static_cast<int64_t>(n) * c.n_ff);
  matmul(w.w_down, gate_.data(), n, xn_.data());
  vec_axpy(1.0f, xn_.data(), x_.data(), n * c.n_embd);
}

}  // namespace mkv
