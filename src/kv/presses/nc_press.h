// NcPress: normalisation-corrected attention (docs/METHODS.md §3) as a wrapper around any press.
// The inner press chooses the rows; this one makes the cache fold the evicted rows into moments
// (with the inner press's moment configuration: groups, means_only, clip) and turns NC on in
// attention. Every press's spec takes it as nc=1 (make_scorer_press).
#pragma once

#include <memory>
#include <utility>

#include "kv/press.h"

namespace mkv {

class NcPress : public Press {
 public:
  explicit NcPress(std::unique_ptr<Press> inner) : inner_(std::move(inner)) {}

  void reset(const PressGeometry& geometry) override { inner_->reset(geometry); }
  void observe(int layer, int n_tokens, const float* q, const int32_t* positions, const KvCache& cache) override {
    inner_->observe(layer, n_tokens, q, positions, cache);
  }
  void compress(KvCache& cache, CompressReason reason) override { inner_->compress(cache, reason); }
  MomentConfig moment_config() const override {
    MomentConfig config = inner_->moment_config();
    config.track = true;
    return config;
  }
  bool nc() const override { return true; }

  Press& inner() { return *inner_; }

 private:
  std::unique_ptr<Press> inner_;
};

}  // namespace mkv
