// The text windows of the comparison commands (kl, fidelity): read once, checked, cut by the
// held-out protocol (eval/held_out.h).
#include <fmt/format.h>

#include "commands.h"
#include "core/error.h"
#include "core/text_file.h"
#include "eval/held_out.h"

namespace mkv::cli {

std::vector<std::vector<int32_t>> comparison_windows(const TextWindowOptions& o, const LoadedModel& m) {
  MKV_CHECK(o.windows > 0, "--windows must be positive, got {}", o.windows);
  MKV_CHECK(o.prompt_tokens > 1 && o.continuation_tokens > 0,
            "--prompt-tokens must be > 1 and --continuation-tokens > 0 (got {} and {})", o.prompt_tokens,
            o.continuation_tokens);
  const TextSplit split = parse_text_split(o.split);
  const std::string path = o.text_file.empty() ? find_shared_asset("text/tinystories_val.txt") : o.text_file;
  MKV_CHECK(!path.empty(), "no text given and ../shared/assets/text/tinystories_val.txt was not found; pass -f FILE");
  const std::string text = read_text_file(path, "text file (-f)");
  const int64_t length = int64_t{o.prompt_tokens} + o.continuation_tokens + 1;
  MKV_CHECK(length - 1 <= m.transformer->config().context_length,
            "prompt + continuation = {} positions exceeds the model's context {}", length - 1,
            m.transformer->config().context_length);
  const std::vector<int32_t> tokens = m.tokenizer->encode(text, /*add_special=*/false, /*parse_special=*/false);
  std::vector<std::vector<int32_t>> windows;
  for (TextWindow& w : held_out_windows(tokens, m.tokenizer->vocab().bos, int(length), o.windows, split, o.seed))
    windows.push_back(std::move(w.tokens));
  MKV_CHECK(int(windows.size()) == o.windows, "the text has {} tokens: too short for {} windows of {}{}", tokens.size(),
            o.windows, length, split == TextSplit::First ? "" : fmt::format(" in the {} split", o.split));
  return windows;
}

std::string describe_windows(const TextWindowOptions& o) {
  const std::string order = o.split == "first" ? "the first consecutive windows of the text"
                                               : fmt::format("seed {} draws them from the whole text", o.seed);
  return fmt::format("split {}: {} windows of {} prompt + {} continuation tokens ({})", o.split, o.windows,
                     o.prompt_tokens, o.continuation_tokens, order);
}

}  // namespace mkv::cli
