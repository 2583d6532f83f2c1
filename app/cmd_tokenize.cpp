// momentkv tokenize: prints the token ids (and pieces) of a text with a model's tokenizer.
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "commands.h"
#include "core/error.h"
#include "core/text_file.h"

namespace mkv::cli {

int run_tokenize(const TokenizeOptions& o) {
  MKV_CHECK(o.prompt.empty() || o.prompt_file.empty(), "give either -p or -f, not both");
  std::string text = o.prompt;
  if (!o.prompt_file.empty()) text = read_text_file(o.prompt_file, "text file (-f)");
  // Only the vocabulary is needed: vocab-only GGUFs work too.
  const GgufFile file = GgufFile::open(resolve_model_path(o.model_path));
  const std::unique_ptr<Tokenizer> tokenizer = Tokenizer::create(Vocab::from_gguf(file));
  const std::vector<int32_t> ids = tokenizer->encode(text, !o.no_bos, !o.no_parse_special);
  if (o.ids_only) {
    fmt::print("[{}]\n", fmt::join(ids, ", "));
    return 0;
  }
  for (int32_t id : ids) {
    std::string piece = tokenizer->token_to_piece(id, /*render_special=*/true);
    std::string escaped;
    for (unsigned char c : piece) escaped += c < 0x20 ? fmt::format("\\x{:02x}", c) : std::string(1, char(c));
    fmt::print("{:>7} -> '{}'\n", id, escaped);
  }
  fmt::print(stderr, "{} tokens\n", ids.size());
  return 0;
}

}  // namespace mkv::cli
