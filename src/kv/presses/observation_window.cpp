#include "kv/presses/observation_window.h"

#include <algorithm>

namespace mkv {

void ObservationWindow::reset(int n_layers, int window, std::size_t row) {
  window_ = window;
  row_ = row;
  layers_.assign(n_layers, {});
}

void ObservationWindow::observe(int layer, int n_tokens, const float* q, const int32_t* positions) {
  Layer& l = layers_[layer];
  const int take = std::min(n_tokens, window_);
  const int first = n_tokens - take;
  l.q.insert(l.q.end(), q + first * row_, q + n_tokens * row_);
  l.positions.insert(l.positions.end(), positions + first, positions + n_tokens);
  const int excess = int(l.positions.size()) - window_;
  if (excess >= window_) {
    l.q.erase(l.q.begin(), l.q.begin() + excess * row_);
    l.positions.erase(l.positions.begin(), l.positions.begin() + excess);
  }
}

ObservationWindow::Queries ObservationWindow::last(int layer, int n) const {
  const Layer& l = layers_[layer];
  const int count = std::min({int(l.positions.size()), window_, n});
  const std::size_t first = l.positions.size() - count;
  return {l.q.data() + first * row_, l.positions.data() + first, count};
}

}  // namespace mkv
