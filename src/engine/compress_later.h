// Compressing a session's cache later, with a press that did not watch the sequence go by
// (momentkv.Session.compress; "compress once, ask many"). A press scores with what it observed
// during the forward passes; a session therefore keeps the last `window` post-RoPE queries of every
// layer (QueryRecorder) and replays them into the new press before its compression step, which then
// sees exactly what it would have seen attached from the start: the observation-window presses
// (snapkv, pyramidkv, adakv, momentkv, presses written in Python) keep the same rows either way.
// How many queries a press needs is the press's to say (PressConfig::queries_read, from its
// catalogue entry); a press that reads every query of the sequence (h2o) cannot be replayed from a
// window (-1).
//
// The cache must track the moments the press asks for. A cache that has evicted nothing can be
// copied into one that does (with_moments); one that has already evicted keeps its moments.
#pragma once

#include <cstdint>
#include <string>

#include "kv/kv_cache.h"
#include "kv/press.h"
#include "kv/presses/observation_window.h"
#include "model/model_config.h"
#include "model/transformer.h"

namespace mkv {

// Records the last `window` queries of every layer, then hands the call on to `next` (if any).
class QueryRecorder : public ForwardObserver {
 public:
  // Forgets every query (a new sequence) and sets how many per layer are kept.
  void reset(const ModelConfig& config, int window);
  int window() const { return window_; }
  void set_next(ForwardObserver* next) { next_ = next; }

  void on_queries(int layer, int n_tokens, const float* q, const int32_t* positions,
                  const KvCache& cache) override;

  // press.observe() of every layer's recorded queries, oldest first, in one batch per layer.
  void replay(Press& press, const KvCache& cache) const;

 private:
  int window_ = 0;
  int n_layers_ = 0;
  ObservationWindow queries_;
  ForwardObserver* next_ = nullptr;
};

bool same_moments(const MomentConfig& a, const MomentConfig& b);
// "no moments", or "moments in 16 groups, means only" etc. (for messages).
std::string describe_moments(const MomentConfig& moments);

// Whether every head still holds all n_past positions (nothing was evicted).
bool evicted_nothing(const KvCache& cache, int32_t n_past);

// A copy of a cache that evicted nothing (the same rows, positions and NC setting) that tracks
// `moments` from now on.
KvCache with_moments(const KvCache& cache, const MomentConfig& moments);

}  // namespace mkv
