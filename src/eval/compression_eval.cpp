#include "eval/compression_eval.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/error.h"
#include "engine/session.h"

namespace mkv {
namespace {

// One press configuration to run: NC fixed, the retained-token budget set.
struct Setting {
  std::string label;  // the press as the user gave it
  PressConfig press;
  int32_t budget;
  int32_t token_budget;
};

std::vector<Setting> expand_settings(const CompressionEvalConfig& config, const PressGeometry& geometry) {
  std::vector<Setting> settings;
  std::vector<bool> nc_values;
  if (config.nc != NcMode::Off) nc_values.push_back(true);
  if (config.nc != NcMode::On) nc_values.push_back(false);
  for (const PressConfig& press : config.presses) {
    require_compressing(press);
    press.require_budget_from_list();
    const bool fixed_nc = press.given("nc");
    for (bool nc : nc_values) {
      if (fixed_nc && nc != nc_values.front()) continue;  // the spec decides; run it once
      const PressConfig with_nc = fixed_nc ? press : press.with_param("nc", nc ? "1" : "0");
      for (int32_t budget : config.budgets) {
        int32_t token_budget = budget;
        if (config.equal_bytes) {
          const double stats = with_nc.with_budget(Budget{budget, 0.0}).make()->moment_token_equivalents(geometry);
          token_budget = budget - static_cast<int32_t>(std::ceil(stats));
          if (token_budget < 1) continue;  // the statistics alone exceed the budget
        }
        settings.push_back({press.as_given(), with_nc.with_budget(Budget{token_budget, 0.0}), budget, token_budget});
      }
    }
  }
  return settings;
}

}  // namespace

void require_compressing(const PressConfig& press) {
  MKV_CHECK(!press.is_full(), "press 'full' keeps every token: the compressing presses are measured against it, so "
            "it has nothing to measure (leave it out)");
}

std::vector<CompressionEvalRow> run_compression_eval(Transformer& model,
                                                     const std::vector<std::vector<int32_t>>& windows,
                                                     const CompressionEvalConfig& config,
                                                     const std::function<void(int64_t, int64_t)>& on_progress) {
  const ModelConfig& mc = model.config();
  const int P = config.prompt_tokens, C = config.continuation_tokens, n_vocab = mc.n_vocab;
  MKV_CHECK(P > 0 && C > 0, "prompt and continuation lengths must be positive ({} and {})", P, C);
  MKV_CHECK(!windows.empty(), "no text windows to evaluate (is the text long enough for {} tokens?)", P + C + 1);
  const PressGeometry geometry = mc.press_geometry();
  const std::vector<Setting> settings = expand_settings(config, geometry);

  std::vector<CompressionEvalRow> rows(settings.size());
  for (std::size_t i = 0; i < settings.size(); ++i) {
    auto press = settings[i].press.make();
    rows[i].press = press->spec();
    rows[i].name = settings[i].label;
    rows[i].nc = press->nc();  // what runs: a spec's own nc= is not the loop's value
    rows[i].budget = settings[i].budget;
    rows[i].token_budget = std::min(settings[i].token_budget, P);  // a budget above the prompt keeps it all
    rows[i].moment_tokens = press->moment_token_equivalents(geometry);
  }

  const int64_t total = static_cast<int64_t>(windows.size()) * (1 + settings.size());
  int64_t done = 0;
  std::vector<float> full((P + C) * static_cast<std::size_t>(n_vocab));  // (P + C, n_vocab)
  std::vector<float> compressed(C * static_cast<std::size_t>(n_vocab));  // (C, n_vocab)
  for (const auto& window : windows) {
    MKV_CHECK(static_cast<int>(window.size()) == P + C + 1, "window of {} tokens, expected {}", window.size(),
              P + C + 1);
    const std::span<const int32_t> tokens(window);
    Session reference(model, SessionOptions{});
    reference.evaluate(tokens.first(P + C), full.data());
    if (on_progress) on_progress(++done, total);

    for (std::size_t i = 0; i < settings.size(); ++i) {
      auto press = settings[i].press.make();
      SessionOptions options;
      options.press = press.get();
      Session session(model, options);
      session.prefill(tokens.first(P));
      rows[i].bytes_held += static_cast<double>(session.cache().bytes_held()) / windows.size();
      session.evaluate(tokens.subspan(P, C), compressed.data());
      DivergenceStats window_stats;
      for (int j = 0; j < C; ++j)
        window_stats.add(full.data() + static_cast<std::size_t>(P + j) * n_vocab,
                         compressed.data() + static_cast<std::size_t>(j) * n_vocab, n_vocab, tokens[P + j + 1]);
      rows[i].stats.merge(window_stats);
      rows[i].per_window.push_back(window_stats);
      if (on_progress) on_progress(++done, total);
    }
  }
  return rows;
}

}  // namespace mkv
