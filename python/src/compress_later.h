// Compressing a session's cache later, with a press that did not watch the sequence go by
// (momentkv.Session.compress). A press scores with what it observed during the forward passes;
// a session therefore keeps the last `window` post-RoPE queries of every layer (QueryRecorder)
// and replays them into the new press before its compression step, which then sees exactly what
// it would have seen attached from the start: the observation-window presses (snapkv, pyramidkv,
// adakv, momentkv, presses written in Python) keep the same rows either way. A press that reads
// every query of the sequence (h2o) cannot be replayed from a window (queries_read() == -1).
//
// The cache must track the moments the press asks for. A cache that has evicted nothing can be
// copied into one that does (with_moments); one that has already evicted keeps its moments.
#pragma once

#include <cstdint>
#include <string>

#include "kv/kv_cache.h"
#include "kv/press.h"
#include "kv/press_config.h"
#include "kv/presses/observation_window.h"
#include "kv/selection.h"
#include "model/model_config.h"
#include "model/transformer.h"

namespace momentkv_python {

// Records the last `window` queries of every layer, then hands the call on to `next` (if any).
class QueryRecorder : public mkv::ForwardObserver {
 public:
  // Forgets every query (a new sequence) and sets how many per layer are kept.
  void reset(const mkv::ModelConfig& config, int window);
  int window() const { return window_; }
  void set_next(mkv::ForwardObserver* next) { next_ = next; }

  void on_queries(int layer, int n_tokens, const float* q, const int32_t* positions,
                  const mkv::KvCache& cache) override;

  // press.observe() of every layer's recorded queries, oldest first, in one batch per layer.
  void replay(mkv::Press& press, const mkv::KvCache& cache) const;

 private:
  int window_ = 0;
  int n_layers_ = 0;
  mkv::ObservationWindow queries_;
  mkv::ForwardObserver* next_ = nullptr;
};

// How many of the last observed queries per layer a press's scores read when it compresses a
// sequence of n_past tokens: 0 for none (full, streaming_llm), the observation window (snapkv,
// pyramidkv, adakv, momentkv), or -1 for every query of the sequence (h2o, adakv:scorer=h2o).
int queries_read(const mkv::PressConfig& config, int32_t n_past);

// The most queries window `window` (>= 1, or Protection::kAutoWindow) reads under `budget` with
// n_past tokens: window=auto follows the layer's budget, which is L, or at most 2L with pyramid
// allocation (its first layers take what the deeper ones give up).
int window_read(int window, const mkv::Budget& budget, int32_t n_past, bool pyramid);

mkv::PressGeometry press_geometry(const mkv::ModelConfig& config);

bool same_moments(const mkv::MomentConfig& a, const mkv::MomentConfig& b);
// "no moments", or "moments in 16 groups, means only" etc. (for messages).
std::string describe_moments(const mkv::MomentConfig& moments);

// Whether every head still holds all n_past positions (nothing was evicted).
bool evicted_nothing(const mkv::KvCache& cache, int32_t n_past);

// A copy of a cache that evicted nothing (the same rows, positions and NC setting) that tracks
// `moments` from now on.
mkv::KvCache with_moments(const mkv::KvCache& cache, const mkv::MomentConfig& moments);

}  // namespace momentkv_python
