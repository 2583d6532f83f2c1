// momentkv: command-line entry point. Flags follow llama.cpp's names and meanings.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "core/error.h"

namespace {

using namespace mkv::cli;

// CLI11 rejects multi-letter single-dash flags; llama.cpp users type them, so map them to the
// long forms before parsing.
std::vector<std::string> normalise_args(int argc, char** argv) {
  static const std::map<std::string, std::string> aliases = {
      {"-ub", "--ubatch-size"}, {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"},
      {"-tb", "--threads-batch"}, {"-cnv", "--conversation"}, {"-sys", "--system-prompt"},
  };
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) {  // CLI11 wants them in reverse order
    auto it = aliases.find(argv[i]);
    args.push_back(it == aliases.end() ? argv[i] : it->second);
  }
  return args;
}

void add_model_flags(CLI::App& cmd, ModelOptions& m) {
  cmd.add_option("-m,--model", m.model_path, "GGUF model file (default: $MOMENTKV_MODEL or ../shared/assets/stories260K.gguf)");
  cmd.add_option("-t,--threads", m.threads, "threads (0 = one per core)");
  cmd.add_option("--ubatch-size", m.ubatch, "prefill chunk size in tokens (-ub)")->capture_default_str();
  cmd.add_option("-c,--ctx-size", m.ctx, "context size (0 = from model)")->capture_default_str();
  cmd.add_option("--cache-type-k,--cache-type-v", m.cache_type, "KV cache storage: f32 | f16 (-ctk/-ctv)")
      ->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"momentkv: long-context LLM inference on a fixed KV-cache budget"};
  app.require_subcommand(1);

  GenerateOptions gen;
  auto* generate = app.add_subcommand("generate", "generate text from a prompt (llama.cpp flags)");
  add_model_flags(*generate, gen.model);
  generate->add_option("-p,--prompt", gen.prompt, "prompt text");
  generate->add_option("-f,--file", gen.prompt_file, "read the prompt from a file");
  generate->add_option("-n,--n-predict", gen.n_predict, "tokens to generate (-1 = until end of text)")->capture_default_str();
  generate->add_option("--temp", gen.temperature, "temperature (0 = greedy)")->capture_default_str();
  generate->add_option("--top-k", gen.top_k, "top-k sampling (0 = off)")->capture_default_str();
  generate->add_option("--top-p", gen.top_p, "top-p sampling (1 = off)")->capture_default_str();
  generate->add_option("--min-p", gen.min_p, "min-p sampling (0 = off)")->capture_default_str();
  generate->add_option("-s,--seed", gen.seed, "RNG seed (-1 = random)")->capture_default_str();
  generate->add_flag("--ignore-eos", gen.ignore_eos, "keep generating past end-of-generation tokens");

  LogitsOptions lg;
  auto* logits = app.add_subcommand("logits", "write the logits of every position of a token list (float32)");
  add_model_flags(*logits, lg.model);
  logits->add_option("--tokens", lg.tokens, "token ids, e.g. 1,403,407");
  logits->add_option("--tokens-file", lg.tokens_file, "file with token ids (comma/space separated or a JSON array)");
  logits->add_option("-o,--output", lg.output, "output file: float32 [n_tokens][n_vocab]");

  KlOptions kl;
  auto* kl_cmd = app.add_subcommand("kl", "KL / same-top-1 / ΔNLL of presses against the full cache (teacher-forced text)");
  add_model_flags(*kl_cmd, kl.model);
  kl_cmd->add_option("-f,--file", kl.text_file, "text file (default: ../shared/assets/text/tinystories_val.txt)");
  kl_cmd->add_option("--press", kl.presses, "press spec, repeatable (default: every press)");
  kl_cmd->add_option("--budgets", kl.budgets, "comma-separated budgets L (tokens per KV head)")->capture_default_str();
  kl_cmd->add_option("--nc", kl.nc, "normalisation correction: both | on | off")->capture_default_str();
  kl_cmd->add_flag("--equal-bytes", kl.equal_bytes, "count moment statistics against the budget (token-equivalents)");
  kl_cmd->add_option("--prompt-tokens", kl.prompt_tokens, "compressed prompt length, BOS included")->capture_default_str();
  kl_cmd->add_option("--continuation-tokens", kl.continuation_tokens, "teacher-forced positions compared")->capture_default_str();
  kl_cmd->add_option("--windows", kl.windows, "consecutive text windows to average over")->capture_default_str();
  kl_cmd->add_option("-o,--output", kl.json_output, "also write the rows as JSON");

  MakeModelOptions mm;
  auto* make_model = app.add_subcommand("make-model", "write a seeded random-weight GGUF at a real model's shape");
  make_model->add_option("--shape", mm.shape, "shape: llama-3.2-1b, llama-3.1-8b, qwen3-4b, qwen2.5-7b, tiny-llama, tiny-qwen2, tiny-qwen3")
      ->capture_default_str();
  make_model->add_option("--type", mm.type, "type of the 2-D weights (F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K)")
      ->capture_default_str();
  make_model->add_option("--seed", mm.seed, "weight seed")->capture_default_str();
  make_model->add_option("-o,--output", mm.output, "output GGUF file")->required();

  ImportLlama2cOptions il;
  auto* import_llama2c = app.add_subcommand("import-llama2c", "convert a llama2.c checkpoint (.bin) and vocabulary to GGUF");
  import_llama2c->add_option("--model", il.model, "llama2.c .bin checkpoint (legacy version 0)")->required();
  import_llama2c->add_option("--tokenizer", il.tokenizer, "llama2.c tokenizer .bin (e.g. tok512.bin), or a .gguf to copy the vocabulary from")->required();
  import_llama2c->add_option("-o,--output", il.output, "output GGUF file")->required();
  import_llama2c->add_option("--type", il.type, "type of the 2-D weights: F32 | F16 | Q8_0")->capture_default_str();
  import_llama2c->add_option("--context", il.context, "llama.context_length (0 = the checkpoint's seq_len)")->capture_default_str();
  import_llama2c->add_option("--name", il.name, "general.name")->capture_default_str();

  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  if (argc > 1 && argv[1][0] != '-' && std::find(names.begin(), names.end(), argv[1]) == names.end()) {
    fmt::print(stderr, "error: unknown command '{}' (commands: {})\n", argv[1], fmt::join(names, ", "));
    return 2;
  }
  try {
    app.parse(normalise_args(argc, argv));
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }

  try {
    if (generate->parsed()) return run_generate(gen);
    if (logits->parsed()) return run_logits(lg);
    if (make_model->parsed()) return run_make_model(mm);
    if (kl_cmd->parsed()) return run_kl(kl);
    if (import_llama2c->parsed()) return run_import_llama2c(il);
  } catch (const mkv::MkvError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
