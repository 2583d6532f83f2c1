// The one place where scores become kept tokens (kvpress's model): budgets, sink/window
// protection and top-k, on plain arrays. Presses compute scores[kv_head][token]; everything here
// is independent of the cache, so it is tested on arrays.
//
// Budget semantics (docs/METHODS.md §6): L tokens per KV head, sinks and window included; a head is
// compressed only if it is longer than its budget.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mkv {

// Either L tokens per KV head or kvpress's compression ratio (fraction removed).
struct Budget {
  // The one range of budgets (PressConfig::budget_from_flags checks it, the catalogue lists it).
  static constexpr int32_t kMaxTokens = 1'000'000'000;
  static constexpr double kMaxRatio = 0.999999;  // ratios are in [0, 1): at most this

  int32_t tokens = 0;  // L > 0; 0 when `ratio` is used
  double ratio = 0.0;  // in [0, 1): a sequence of T tokens keeps int(T·(1 − ratio))

  // L for a head whose sequence has seen `seen` tokens.
  int32_t resolve(int32_t seen) const;
  bool operator==(const Budget&) const = default;
};

// Rows always kept: the first `sinks` and the last `window` of a head (oldest first). The window
// is also how many of the last queries a window-based scorer observes; kAutoWindow ties it to the
// budget (observation_window).
struct Protection {
  static constexpr int kAutoWindow = -1;
  int sinks = 4;
  int window = kAutoWindow;
};

// The largest window window=auto takes (how many queries a window-based scorer must keep).
inline constexpr int kMaxAutoWindow = 32;

// The window of window=auto at a budget of L tokens per KV head (docs/METHODS.md §5): L/64 within
// [1, kMaxAutoWindow] (1 below L=128, 2 at 128, 16 at 1024, 32 from 2048): the last queries (the
// question) choose the rows, and recent rows take a small share of the budget.
int observation_window(int32_t budget);

// The most queries `window` reads at any budget: itself, or kMaxAutoWindow for kAutoWindow (how
// many a scorer's observation buffer keeps).
int window_capacity(int window);

// `window` at budget L: itself, or observation_window(L) for kAutoWindow. The scorers observe this
// many queries; clamp_protection may protect fewer rows.
int resolve_window(int window, int32_t budget);

// The most queries window `window` (>= 1, or Protection::kAutoWindow) reads under `budget` with
// n_past tokens: window=auto follows the layer's budget, which is L, or at most 2L with pyramid
// layer budgets (its first layers take what the deeper ones give up).
int window_read(int window, const Budget& budget, int32_t n_past, bool pyramid);

// Protection clamped to a budget L: sinks ≤ L, window (resolved) ≤ (L − sinks)/2 (a small budget
// shrinks the protected window, never the budget, and leaves at least half of it to the scores).
Protection clamp_protection(const Protection& protection, int32_t budget);

// The rows a head of scores.size() rows keeps when it may hold n_keep: all rows if it is not
// longer than n_keep; else the protected rows (clamped to the head's length) plus the top
// (n_keep − protected) scores among the other rows (ties: the more recent row). Strictly
// increasing indices. n_keep must cover the protected rows.
std::vector<int32_t> select_keep(std::span<const float> scores, int32_t n_keep,
                                 const Protection& protection);

// Number of protected rows of a head of `length` rows.
int32_t protected_count(int32_t length, const Protection& protection);

// PyramidKV layer budgets (docs/METHODS.md §6.5), window included: B = L − w, min = B/β, max = 2B − min;
// if max ≥ n − w then max = n − w, min = 2B − max; layer l keeps max − l·(max − min)/(layers − 1)
// plus w; uniform L when n < 2B or layers == 1. n = the layer's prompt length. Integer division.
std::vector<int32_t> pyramid_budgets(int32_t budget, int window, int32_t n, int n_layers, double beta);

// Ada-KV allocation inside one layer (docs/METHODS.md §6.6): scores (H heads, each its rows); the
// global top H·B candidate scores (protected rows excluded) give c_h per head, and head h gets
// b_h = c_h(1 − a) + aB candidate slots, rounded by largest remainder so that Σ b_h = H·B, and
// capped at its candidate count. Returns b_h (protected rows not included).
std::vector<int32_t> adaptive_budgets(std::span<const std::vector<float>> scores,
                                      const Protection& protection, int32_t candidate_budget,
                                      double safeguard);

// Rows a head keeps after this round of a `rounds_left`-round schedule towards final_keep: it
// evicts an equal share (rounded up) of the rows still to be evicted.
int32_t round_keep(int32_t length, int32_t final_keep, int rounds_left);

}  // namespace mkv
