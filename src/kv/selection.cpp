#include "kv/selection.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace mkv {

namespace {

// Order key: higher score first, NaN as lowest; ties go to the more recent row.
struct Ranked {
  float score;
  int32_t head;
  int32_t index;
};
bool ranks_before(const Ranked& a, const Ranked& b) {
  const float sa = std::isnan(a.score) ? -INFINITY : a.score;
  const float sb = std::isnan(b.score) ? -INFINITY : b.score;
  if (sa != sb) return sa > sb;
  if (a.index != b.index) return a.index > b.index;
  return a.head < b.head;
}

// Candidate rows [sinks, length − window) of a head, clamped to its length.
void candidate_range(int32_t length, const Protection& p, int32_t& begin, int32_t& end) {
  MKV_ASSERT(p.window >= 0 && p.sinks >= 0);  // resolved (clamp_protection), not kAutoWindow
  begin = std::min<int32_t>(p.sinks, length);
  end = length - std::min<int32_t>(p.window, length - begin);
}

// The top k of `ranked` (moved to its front, unordered).
void take_top(std::vector<Ranked>& ranked, std::size_t k) {
  k = std::min(k, ranked.size());
  std::nth_element(ranked.begin(), ranked.begin() + k, ranked.end(), ranks_before);
  ranked.resize(k);
}

}  // namespace

int32_t Budget::resolve(int32_t seen) const {
  if (tokens > 0) return tokens;
  return int32_t(double(seen) * (1.0 - ratio));
}

int observation_window(int32_t budget) {
  return int(std::clamp<int32_t>(budget / 64, 1, kMaxAutoWindow));
}

int window_capacity(int window) {
  MKV_ASSERT(window >= 0 || window == Protection::kAutoWindow);
  return window == Protection::kAutoWindow ? kMaxAutoWindow : window;
}

int resolve_window(int window, int32_t budget) {
  MKV_ASSERT(window >= 0 || window == Protection::kAutoWindow);
  return window == Protection::kAutoWindow ? observation_window(budget) : window;
}

int window_read(int window, const Budget& budget, int32_t n_past, bool pyramid) {
  if (window != Protection::kAutoWindow) return window;
  const int64_t most_layer_budget = (pyramid ? 2 : 1) * int64_t(std::max<int32_t>(budget.resolve(n_past), 1));
  return observation_window(int32_t(std::min<int64_t>(most_layer_budget, INT32_MAX)));
}

Protection clamp_protection(const Protection& protection, int32_t budget) {
  Protection p;
  p.sinks = std::min<int32_t>(protection.sinks, std::max<int32_t>(budget, 0));
  // [derived] At most half of the non-sink budget goes to the recent window, so that scores
  // still choose tokens at small budgets (L < sinks + 2·window) instead of every press
  // degenerating to StreamingLLM.
  p.window = std::min<int32_t>(resolve_window(protection.window, budget), std::max<int32_t>((budget - p.sinks) / 2, 0));
  return p;
}

int32_t protected_count(int32_t length, const Protection& protection) {
  int32_t begin = 0, end = 0;
  candidate_range(length, protection, begin, end);
  return length - (end - begin);
}

std::vector<int32_t> select_keep(std::span<const float> scores, int32_t n_keep,
                                 const Protection& protection) {
  const int32_t length = int32_t(scores.size());
  std::vector<int32_t> keep;
  if (length <= n_keep) {
    keep.resize(length);
    std::iota(keep.begin(), keep.end(), 0);
    return keep;
  }
  int32_t begin = 0, end = 0;
  candidate_range(length, protection, begin, end);
  const int32_t n_protected = length - (end - begin);
  MKV_ASSERT(n_keep >= n_protected);
  std::vector<Ranked> ranked;  // (end − begin) candidates
  ranked.reserve(end - begin);
  for (int32_t i = begin; i < end; ++i) ranked.push_back({scores[i], 0, i});
  take_top(ranked, std::size_t(n_keep - n_protected));
  keep.reserve(n_keep);
  for (int32_t i = 0; i < begin; ++i) keep.push_back(i);
  for (const Ranked& r : ranked) keep.push_back(r.index);
  for (int32_t i = end; i < length; ++i) keep.push_back(i);
  std::sort(keep.begin(), keep.end());
  return keep;
}

std::vector<int32_t> pyramid_budgets(int32_t budget, int window, int32_t n, int n_layers, double beta) {
  MKV_ASSERT(n_layers >= 1 && beta > 0.0);
  std::vector<int32_t> budgets(n_layers, budget);
  const int32_t b = budget - window;  // B: tokens chosen by score per head
  if (b <= 0 || n_layers == 1 || n < 2 * b) return budgets;
  int32_t min_keep = int32_t(double(b) / beta);
  int32_t max_keep = 2 * b - min_keep;
  if (max_keep >= n - window) {
    max_keep = n - window;
    min_keep = 2 * b - max_keep;
  }
  for (int l = 0; l < n_layers; ++l)
    budgets[l] = max_keep - int32_t(int64_t(l) * (max_keep - min_keep) / (n_layers - 1)) + window;
  return budgets;
}

std::vector<int32_t> adaptive_budgets(std::span<const std::vector<float>> scores,
                                      const Protection& protection, int32_t candidate_budget,
                                      double safeguard) {
  const int n_heads = int(scores.size());
  std::vector<int32_t> n_candidates(n_heads);  // (H)
  std::vector<Ranked> ranked;                  // all heads' candidates
  for (int h = 0; h < n_heads; ++h) {
    int32_t begin = 0, end = 0;
    candidate_range(int32_t(scores[h].size()), protection, begin, end);
    n_candidates[h] = end - begin;
    for (int32_t i = begin; i < end; ++i) ranked.push_back({scores[h][i], h, i});
  }
  const int64_t target = int64_t(n_heads) * candidate_budget;  // H·B
  take_top(ranked, std::size_t(target));
  std::vector<int64_t> chosen(n_heads, 0);  // c_h
  for (const Ranked& r : ranked) ++chosen[r.head];

  // b_h = c_h(1 − a) + aB by largest remainder (Σ b_h = H·B), then capped at the candidates.
  std::vector<int32_t> budgets(n_heads);
  std::vector<double> remainder(n_heads);
  int64_t assigned = 0;
  for (int h = 0; h < n_heads; ++h) {
    const double exact = double(chosen[h]) * (1.0 - safeguard) + safeguard * candidate_budget;
    budgets[h] = int32_t(std::floor(exact));
    remainder[h] = exact - budgets[h];
    assigned += budgets[h];
  }
  std::vector<int> order(n_heads);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return remainder[a] > remainder[b]; });
  for (int i = 0; assigned < target && i < n_heads; ++i, ++assigned) ++budgets[order[i]];
  for (int h = 0; h < n_heads; ++h) budgets[h] = std::min(budgets[h], n_candidates[h]);
  return budgets;
}

int32_t round_keep(int32_t length, int32_t final_keep, int rounds_left) {
  MKV_ASSERT(rounds_left >= 1);
  if (length <= final_keep) return length;
  const int32_t to_evict = length - final_keep;
  return length - (to_evict + rounds_left - 1) / rounds_left;
}

}  // namespace mkv
