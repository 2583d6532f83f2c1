// A Session runs one sequence through a Transformer: chunked prefill, single-token decode and
// teacher-forced evaluation. It owns the KV cache. This is the only inference loop; presses and
// observers hook into it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "kv/kv_cache.h"
#include "engine/model_runner.h"
#include "kv/press.h"
#include "model/transformer.h"

namespace mkv {

struct SessionOptions {
  int ubatch = 0;                       // prefill chunk (llama.cpp -ub); 0 = the model's batch limit
  int n_ctx = 0;                        // context limit in positions; 0 = the model's
  KvStorage kv_storage = KvStorage::F32;
  Press* press = nullptr;               // KV compression (not owned); nullptr = full cache
  bool compress_each_chunk = false;     // also compress after every prefill chunk (bounded memory)
  ModelRunner* runner = nullptr;        // shared with other sessions of the model (not owned): every
                                        // forward pass runs on it, decode steps batched; null = here
};

// Hooks: the press observes every layer's queries; it compresses after each prefill chunk (when
// compress_each_chunk), after every prefill() and after every decode(). evaluate() only observes,
// so a teacher-forced continuation attends to exactly what the last compression left.
class Session : private ForwardObserver {
 public:
  Session(Transformer& model, SessionOptions options);

  // Prefills `tokens` after what the session already holds, in chunks of ubatch; returns the
  // logits (n_vocab) predicting the token after the last one. `keep_going`, when given, is asked
  // before every chunk but the first: false stops there and returns an empty span (the session
  // then holds the chunks fed so far, not compressed: reset() it or drop it).
  std::span<const float> prefill(std::span<const int32_t> tokens, const std::function<bool()>& keep_going = {});
  // Feeds one token; returns the logits predicting the next one.
  std::span<const float> decode(int32_t token);
  // Feeds `tokens` and writes the logits of every position into out ((n, n_vocab) row-major).
  void evaluate(std::span<const int32_t> tokens, float* out);

  int32_t n_past() const { return n_past_; }
  int n_ctx() const { return n_ctx_; }
  KvCache& cache() { return cache_; }
  const KvCache& cache() const { return cache_; }
  // Turns normalisation-corrected attention on or off for the following steps (an A/B of NC on
  // one compressed cache); the press's own setting applies again after reset().
  void set_nc(bool enabled) { cache_.set_nc(enabled); }
  Transformer& model() { return model_; }
  void set_observer(ForwardObserver* observer) { observer_ = observer; }
  // Compresses the cache now with `press` instead of the session's own, as after a prefill, and
  // turns NC on or off as that press says (on-demand compression). The caller has reset `press`
  // for this model and let it observe the queries it scores with; the cache must track the
  // moments press.moment_config() asks for. Counted in compress_seconds().
  void compress_with(Press& press);
  // Wall-clock seconds spent in the press's compression passes since construction or reset().
  double compress_seconds() const { return compress_seconds_; }
  void reset();

 private:
  // Runs tokens in chunks; `out` receives either every row or only the final row. False when
  // keep_going said stop before a chunk.
  bool run(std::span<const int32_t> tokens, float* out, bool all_logits, bool compress_chunks,
           const std::function<bool()>& keep_going = {});
  void on_queries(int layer, int n_tokens, const float* q, const int32_t* positions,
                  const KvCache& cache) override;
  void compress(CompressReason reason);
  PressGeometry geometry() const;

  Transformer& model_;
  SessionOptions options_;
  int n_ctx_;
  KvCache cache_;
  ForwardObserver* observer_ = nullptr;
  int32_t n_past_ = 0;                // positions consumed so far
  std::vector<int32_t> positions_;    // (ubatch) scratch
  std::vector<float> logits_;         // (n_vocab) last logits
  double compress_seconds_ = 0.0;
};

}  // namespace mkv
