#include "engine/session.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "core/error.h"

namespace mkv {

Session::Session(Transformer& model, SessionOptions options)
    : model_(model),
      options_(options),
      n_ctx_(options.n_ctx > 0 ? options.n_ctx : model.config().context_length),
      cache_(model.cache_shape(), options.kv_storage, options.press ? options.press->moment_config() : MomentConfig{}) {
  if (options_.ubatch == 0) options_.ubatch = model.max_batch();
  MKV_CHECK(options_.ubatch > 0 && options_.ubatch <= model.max_batch(),
            "ubatch {} must be between 1 and the model's batch limit {}", options_.ubatch, model.max_batch());
  positions_.resize(options_.ubatch);
  logits_.resize(model.config().n_vocab);
  reset();
}

PressGeometry Session::geometry() const { return model_.config().press_geometry(); }

void Session::reset() {
  cache_.clear();
  n_past_ = 0;
  compress_seconds_ = 0.0;
  if (options_.press) {
    cache_.set_nc(options_.press->nc());
    options_.press->reset(geometry());
  }
}

void Session::on_queries(int layer, int n_tokens, const float* q, const int32_t* positions, const KvCache& cache) {
  if (options_.press) options_.press->observe(layer, n_tokens, q, positions, cache);
  if (observer_) observer_->on_queries(layer, n_tokens, q, positions, cache);
}

void Session::compress(CompressReason reason) {
  if (!options_.press) return;
  const auto job = [&] {
    const auto start = std::chrono::steady_clock::now();
    options_.press->compress(cache_, reason);
    compress_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // With a runner, a prompt's compression runs on the runner's thread, with the process's compute
  // threads, between the other sessions' passes; a decode step's (a layer over budget + slack:
  // little work, often) runs here, so the decode batches stay whole.
  if (options_.runner && reason != CompressReason::AfterDecodeStep)
    options_.runner->exclusive(job);
  else
    job();
}

void Session::compress_with(Press& press) {
  cache_.set_nc(press.nc());
  const auto start = std::chrono::steady_clock::now();
  press.compress(cache_, CompressReason::AfterPrefill);
  compress_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool Session::run(std::span<const int32_t> tokens, float* out, bool all_logits, bool compress_chunks,
                  const std::function<bool()>& keep_going) {
  const auto n = static_cast<int64_t>(tokens.size());
  MKV_CHECK(n > 0, "nothing to evaluate: empty token list");
  MKV_CHECK(n_past_ + n <= n_ctx_, "context is full: {} positions held + {} new > context size {} (raise -c)",
            n_past_, n, n_ctx_);
  const int n_vocab = model_.config().n_vocab;
  for (int64_t start = 0; start < n; start += options_.ubatch) {
    if (start > 0 && keep_going && !keep_going()) return false;
    const int chunk = static_cast<int>(std::min<int64_t>(options_.ubatch, n - start));
    std::iota(positions_.begin(), positions_.begin() + chunk, n_past_);
    // Every chunk of a last-row-only run overwrites `out`; the final chunk's row remains.
    float* chunk_out = all_logits ? out + start * n_vocab : out;
    const auto pass = [&] {
      model_.forward(tokens.subspan(start, chunk), std::span<const int32_t>(positions_.data(), chunk), cache_,
                     chunk_out, all_logits, this);
    };
    if (options_.runner)
      options_.runner->exclusive(pass);
    else
      pass();
    n_past_ += chunk;
    if (compress_chunks) compress(CompressReason::AfterChunk);
  }
  return true;
}

std::span<const float> Session::prefill(std::span<const int32_t> tokens, const std::function<bool()>& keep_going) {
  if (!run(tokens, logits_.data(), /*all_logits=*/false, options_.compress_each_chunk, keep_going)) return {};
  compress(CompressReason::AfterPrefill);
  return logits_;
}

std::span<const float> Session::decode(int32_t token) {
  if (options_.runner) {  // batched with the other sessions' steps
    const int n_vocab = model_.config().n_vocab;
    MKV_CHECK(token >= 0 && token < n_vocab, "token id {} is outside the vocabulary (0..{})", token, n_vocab - 1);
    MKV_CHECK(n_past_ + 1 <= n_ctx_, "context is full: {} positions held + 1 new > context size {} (raise -c)",
              n_past_, n_ctx_);
    options_.runner->decode({token, n_past_, &cache_, this, logits_.data()});
    n_past_ += 1;
    compress(CompressReason::AfterDecodeStep);
    return logits_;
  }
  run(std::span<const int32_t>(&token, 1), logits_.data(), /*all_logits=*/false, /*compress_chunks=*/false);
  compress(CompressReason::AfterDecodeStep);
  return logits_;
}

void Session::evaluate(std::span<const int32_t> tokens, float* out) {
  run(tokens, out, /*all_logits=*/true, /*compress_chunks=*/false);
}

}  // namespace mkv
