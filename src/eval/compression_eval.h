// Teacher-forced comparison of presses against the full cache (docs/METHODS.md §7's protocol): each
// text window's prompt is prefilled and compressed once, then its continuation is fed in one
// batch and every continuation position's next-token distribution is compared with the full
// cache's (KL, same top-1, ΔNLL). Runs every press × budget × NC setting in one pass.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "eval/divergence.h"
#include "kv/press_config.h"
#include "model/transformer.h"

namespace mkv {

enum class NcMode { Both, On, Off };

struct CompressionEvalConfig {
  std::vector<PressConfig> presses;  // presses without budget (e.g. "snapkv", "momentkv:rounds=2")
  std::vector<int32_t> budgets;      // L, tokens per KV head
  NcMode nc = NcMode::Both;          // NC setting(s) to run each press with
  bool equal_bytes = false;          // budgets count moment statistics as token-equivalents
  int prompt_tokens = 448;           // compressed prefix, BOS included
  int continuation_tokens = 64;      // teacher-forced positions compared per window
};

struct CompressionEvalRow {
  std::string press;          // canonical spec as run (budget, nc, ... spelled out)
  std::string name;           // the press as given (e.g. "momentkv:variant=paper")
  bool nc = false;
  int32_t budget = 0;         // the nominal L of the row (equal-bytes rows: retained tokens + statistics)
  int32_t token_budget = 0;   // tokens actually retained per head
  double moment_tokens = 0;   // statistics per head in token-equivalents
  double bytes_held = 0;      // cache bytes after compression (mean over windows)
  DivergenceStats stats;      // over every position of every window
  std::vector<DivergenceStats> per_window;  // (windows) the same per window, for intervals
};

// MkvError when `press` is "full": the commands that measure presses against the full cache
// (kl, fidelity) would have nothing to measure in it.
void require_compressing(const PressConfig& press);

// windows: token sequences of prompt_tokens + continuation_tokens + 1 ids (the last one is only
// a target). `on_progress(done, total)` is called after each (window, setting) run.
std::vector<CompressionEvalRow> run_compression_eval(
    Transformer& model, const std::vector<std::vector<int32_t>>& windows, const CompressionEvalConfig& config,
    const std::function<void(int64_t, int64_t)>& on_progress = {});

}  // namespace mkv
