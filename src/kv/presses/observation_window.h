// The observation window of a window-based scorer (SnapKV and its relatives, presses written in
// Python): per layer, the post-RoPE queries of the last `window` observed tokens, oldest first.
#pragma once

#include <cstdint>
#include <vector>

namespace mkv {

class ObservationWindow {
 public:
  // `row`: numbers per token (n_heads · head_dim_k).
  void reset(int n_layers, int window, std::size_t row);
  // Keeps the last `window` of this batch's queries q (n_tokens, row) and positions (n_tokens).
  void observe(int layer, int n_tokens, const float* q, const int32_t* positions);

  // The last `window` (or fewer) observed queries of a layer: q (count, row), positions (count).
  struct Queries {
    const float* q = nullptr;
    const int32_t* positions = nullptr;
    int count = 0;
  };
  Queries last(int layer) const { return last(layer, window_); }
  // The last min(n, window) of them.
  Queries last(int layer, int n) const;

 private:
  // One layer's queries (n, row) and positions (n), n < 2·window: trimmed to the last window only
  // once twice the window has gathered, so that a decode step does not shift the whole buffer.
  struct Layer {
    std::vector<float> q;
    std::vector<int32_t> positions;
  };
  int window_ = 0;
  std::size_t row_ = 0;
  std::vector<Layer> layers_;  // (n_layers)
};

}  // namespace mkv
