// The held-out protocol of the comparison commands (kl, fidelity): text windows drawn at seeded
// places from the whole text, split into disjoint dev and test sets, and bootstrap intervals on
// means over the windows (the independent samples).
//
// The text's tokens are cut into consecutive slots of (length − 1) tokens; slot s belongs to the
// test split when a hash of (s, kSplitSalt) is odd, to dev otherwise, so the two splits never share
// a token and do not depend on how many windows are asked for. A run draws `count` slots of its
// split in a seeded order. Defaults are chosen on dev and reported on test.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mkv {

enum class TextSplit { First, Dev, Test };  // First: the first `count` slots (the legacy protocol)
TextSplit parse_text_split(const std::string& text);  // "first" | "dev" | "test"; MkvError otherwise
const char* text_split_name(TextSplit split);

// Which split slot `slot` belongs to (Dev or Test).
TextSplit slot_split(int64_t slot);

struct TextWindow {
  int64_t slot = 0;              // which slot of the text
  std::vector<int32_t> tokens;   // bos + the slot's (length − 1) tokens
};

// Up to `count` windows of `split` (fewer when the text has fewer slots of it), in the seeded
// order (First: slots 0, 1, ...).
std::vector<TextWindow> held_out_windows(const std::vector<int32_t>& tokens, int32_t bos, int length, int count,
                                         TextSplit split, uint64_t seed);

// Percentile bootstrap of the mean: `resamples` seeded resamples of `values` with replacement;
// [2.5%, 97.5%] of their means. nullopt for fewer than two values.
struct Interval {
  double low = 0.0, high = 0.0;
};
std::optional<Interval> bootstrap_mean_interval(const std::vector<double>& values, int resamples = 2000,
                                                uint64_t seed = 1);

}  // namespace mkv
