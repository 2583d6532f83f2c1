#include "eval/held_out.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "core/error.h"

namespace mkv {
namespace {

constexpr uint64_t kSplitSalt = 0x6d6f6d656e746b76ULL;  // "momentkv"

// splitmix64: a fixed, platform-independent hash.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

TextSplit parse_text_split(const std::string& text) {
  if (text == "first") return TextSplit::First;
  if (text == "dev") return TextSplit::Dev;
  if (text == "test") return TextSplit::Test;
  fail("--split must be dev, test or first, got '{}'", text);
}

const char* text_split_name(TextSplit split) {
  return split == TextSplit::Dev ? "dev" : split == TextSplit::Test ? "test" : "first";
}

TextSplit slot_split(int64_t slot) { return (mix(uint64_t(slot) ^ kSplitSalt) & 1) ? TextSplit::Test : TextSplit::Dev; }

std::vector<TextWindow> held_out_windows(const std::vector<int32_t>& tokens, int32_t bos, int length, int count,
                                         TextSplit split, uint64_t seed) {
  MKV_CHECK(length >= 2 && count >= 0, "windows of {} tokens, {} of them: invalid", length, count);
  const std::size_t body = std::size_t(length) - 1;
  const int64_t slots = int64_t(tokens.size() / body);
  std::vector<int64_t> chosen;  // slots of the split, in the order they are used
  for (int64_t s = 0; s < slots; ++s)
    if (split == TextSplit::First || slot_split(s) == split) chosen.push_back(s);
  if (split != TextSplit::First) {
    std::mt19937_64 rng(seed);
    for (std::size_t i = chosen.size(); i > 1; --i) std::swap(chosen[i - 1], chosen[rng() % i]);  // Fisher-Yates
  }
  chosen.resize(std::min<std::size_t>(chosen.size(), std::size_t(count)));
  std::vector<TextWindow> windows;
  for (int64_t s : chosen) {
    TextWindow w{s, {bos}};
    w.tokens.insert(w.tokens.end(), tokens.begin() + s * body, tokens.begin() + (s + 1) * body);
    windows.push_back(std::move(w));
  }
  return windows;
}

std::optional<Interval> bootstrap_mean_interval(const std::vector<double>& values, int resamples, uint64_t seed) {
  if (values.size() < 2) return std::nullopt;
  std::mt19937_64 rng(seed);
  std::vector<double> means(std::size_t(std::max(resamples, 1)));
  for (double& mean : means) {
    double sum = 0.0;
    for (std::size_t i = 0; i < values.size(); ++i) sum += values[rng() % values.size()];
    mean = sum / double(values.size());
  }
  std::sort(means.begin(), means.end());
  auto at = [&](double q) { return means[std::min(means.size() - 1, std::size_t(q * double(means.size())))]; };
  return Interval{at(0.025), at(0.975)};
}

}  // namespace mkv
