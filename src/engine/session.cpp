#include "engine/session.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace mkv {

Session::Session(Transformer& model, SessionOptions options)
    : model_(model),
      options_(options),
      n_ctx_(options.n_ctx > 0 ? options.n_ctx : model.config().context_length),
      cache_(model.cache_shape(), options.kv_storage, options.track_moments) {
  if (options_.ubatch == 0) options_.ubatch = model.max_batch();
  MKV_CHECK(options_.ubatch > 0 && options_.ubatch <= model.max_batch(),
            "ubatch {} must be between 1 and the model's batch limit {}", options_.ubatch, model.max_batch());
  positions_.resize(options_.ubatch);
  logits_.resize(model.config().n_vocab);
}

void Session::reset() {
  cache_.clear();
  n_past_ = 0;
}

void Session::run(std::span<const int32_t> tokens, float* out, bool all_logits) {
  const auto n = static_cast<int64_t>(tokens.size());
  MKV_CHECK(n > 0, "nothing to evaluate: empty token list");
  MKV_CHECK(n_past_ + n <= n_ctx_, "context is full: {} positions held + {} new > context size {} (raise -c)",
            n_past_, n, n_ctx_);
  const int n_vocab = model_.config().n_vocab;
  for (int64_t start = 0; start < n; start += options_.ubatch) {
    const int chunk = static_cast<int>(std::min<int64_t>(options_.ubatch, n - start));
    std::iota(positions_.begin(), positions_.begin() + chunk, n_past_);
    // Every chunk of a last-row-only run overwrites `out`; the final chunk's row remains.
    float* chunk_out = all_logits ? out + start * n_vocab : out;
    model_.forward(tokens.subspan(start, chunk), std::span<const int32_t>(positions_.data(), chunk), cache_,
                   chunk_out, all_logits, observer_);
    n_past_ += chunk;
  }
}

std::span<const float> Session::prefill(std::span<const int32_t> tokens) {
  run(tokens, logits_.data(), /*all_logits=*/false);
  return logits_;
}

std::span<const float> Session::decode(int32_t token) { return prefill(std::span<const int32_t>(&token, 1)); }

void Session::evaluate(std::span<const int32_t> tokens, float* out) { run(tokens, out, /*all_logits=*/true); }

}  // namespace mkv
