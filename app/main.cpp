// momentkv: command-line entry point. Flags follow llama.cpp's names and meanings.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "core/error.h"
#include "core/message_text.h"
#include "kv/press_catalog.h"
#include "kv/press_config.h"
#include "ops/cpu_features.h"
#include "sweep/subprocess.h"

namespace {

using namespace mkv::cli;

// CLI11 rejects multi-letter single-dash flags; llama.cpp users type them, so map them to the
// long forms before parsing.
std::vector<std::string> normalise_args(int argc, char** argv) {
  static const std::map<std::string, std::string> aliases = {
      {"-ub", "--ubatch-size"}, {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"},
      {"-tb", "--threads-batch"}, {"-cnv", "--conversation"}, {"-sys", "--system-prompt"},
      {"-np", "--parallel"},
  };
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) {  // CLI11 wants them in reverse order
    auto it = aliases.find(argv[i]);
    args.push_back(it == aliases.end() ? argv[i] : it->second);
  }
  return args;
}

constexpr const char* kNoMmapHelp =
    "read the model into memory (2 MiB transparent huge pages) instead of mapping the file";

// -ctk / -ctv (llama.cpp's separate K and V types). momentkv stores keys and values in one type,
// so either flag sets it, and giving both is fine when they agree.
void add_cache_type_flag(CLI::App& cmd, std::string& cache_type) {
  cmd.add_option_function<std::vector<std::string>>(
         "--cache-type-k,--cache-type-v",
         [&cache_type](const std::vector<std::string>& types) {
           for (const auto& t : types)
             if (t != types.front())
               throw CLI::ValidationError("--cache-type-k/--cache-type-v",
                                          fmt::format("keys and values share one cache type here; got both '{}' and "
                                                      "'{}'",
                                                      types.front(), t));
           cache_type = types.front();
         },
         fmt::format("KV cache storage: f32 | f16 (-ctk/-ctv; default {})", cache_type))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

// --precision / --fast: the matmul kernels' activation precision for decode-sized products.
void add_precision_flags(CLI::App& cmd, std::string& precision, const char* default_text) {
  cmd.add_option("--precision", precision,
                 fmt::format("matmul precision: exact | fast (8-bit activations x integer weight codes for decode, "
                             "Q8_0/Q4_0/Q4_1/Q5_0/Q5_1/Q4_K/Q5_K/Q6_K weights; fp16 activations for F16 weights' decode, "
                             "bf16 ones for every BF16 product; default {})",
                             default_text))
      ->check(CLI::IsMember({"exact", "fast"}));
  cmd.add_flag_callback("--fast", [&precision] { precision = "fast"; }, "same as --precision fast");
}

// The press flags of one command as typed; turned into PressConfigs (validated) right after the
// command line is parsed, the only place specs and budget flags are read.
struct PressFlags {
  std::vector<std::string> specs;  // --press, in order
  int64_t kv_budget = 0;           // --kv-budget (when given)
  double compression_ratio = 0;    // --compression-ratio (when given)
  CLI::Option* kv_budget_flag = nullptr;
  CLI::Option* ratio_flag = nullptr;

  std::optional<mkv::Budget> budget() const {
    auto given = [](const CLI::Option* flag) { return flag != nullptr && flag->count() > 0; };
    return mkv::PressConfig::budget_from_flags(given(kv_budget_flag) ? std::optional(kv_budget) : std::nullopt,
                                               given(ratio_flag) ? std::optional(compression_ratio) : std::nullopt);
  }
  // Presses that carry the budget flags and must be buildable (generate, bench).
  std::vector<mkv::PressConfig> with_budget() const {
    const std::optional<mkv::Budget> b = budget();
    std::vector<mkv::PressConfig> out;
    for (const std::string& spec : specs) {
      out.push_back(mkv::PressConfig::parse(spec, b));
      out.back().require_budget();
    }
    MKV_CHECK(!b || !specs.empty(), "--kv-budget / --compression-ratio need a --press");
    return out;
  }
  // Presses whose budgets come from a --budgets list (kl, fidelity, eval): none in the spec.
  std::vector<mkv::PressConfig> without_budget() const {
    std::vector<mkv::PressConfig> out;
    for (const std::string& spec : specs) {
      out.push_back(mkv::PressConfig::parse(spec));
      out.back().require_budget_from_list();
    }
    return out;
  }
};

void add_model_flags(CLI::App& cmd, ModelOptions& m) {
  cmd.add_option("-m,--model", m.model_path, "GGUF model file (default: $MOMENTKV_MODEL or ../shared/assets/stories260K.gguf)");
  cmd.add_option("-t,--threads", m.threads, "threads (0 = one per core)");
  cmd.add_option("--ubatch-size", m.ubatch, "prefill chunk size in tokens (-ub)")->capture_default_str();
  cmd.add_option("-c,--ctx-size", m.ctx, "context size (0 = from model)")->capture_default_str();
  add_cache_type_flag(cmd, m.cache_type);
  add_precision_flags(cmd, m.precision,
                      fmt::format("$MOMENTKV_PRECISION, else {}", m.default_precision).c_str());
  cmd.add_flag("--no-mmap", m.no_mmap, kNoMmapHelp);
}

// -f, --prompt-tokens, --continuation-tokens, --windows, --split, --seed of kl and fidelity.
void add_window_flags(CLI::App& cmd, TextWindowOptions& t) {
  cmd.add_option("-f,--file", t.text_file, "text file (default: ../shared/assets/text/tinystories_val.txt)");
  cmd.add_option("--prompt-tokens", t.prompt_tokens, "compressed prompt length, BOS included")->capture_default_str();
  cmd.add_option("--continuation-tokens", t.continuation_tokens, "teacher-forced positions compared")->capture_default_str();
  cmd.add_option("--windows", t.windows, "text windows to average over")->capture_default_str();
  cmd.add_option("--split", t.split,
                 "first: the first consecutive windows; dev | test: seeded windows from the whole text, the two "
                 "splits disjoint (choose defaults on dev, report on test)")
      ->capture_default_str();
  cmd.add_option("--seed", t.seed, "order the dev/test windows are drawn in")->capture_default_str();
}

// Every option of `cmd` and its subcommands refuses an empty value (`-n ""`, `--temp=`), which CLI11
// would otherwise read as 0 or, for a file, as "not given", except the texts that may be empty.
void refuse_empty_values(CLI::App& cmd) {
  static const char* const may_be_empty[] = {"--prompt", "--system-prompt", "--api-key"};
  const auto empty_allowed = [](const CLI::Option* option) {
    return std::any_of(std::begin(may_be_empty), std::end(may_be_empty),
                       [&](const char* name) { return option->check_name(name); });
  };
  const CLI::Validator non_empty(
      [](std::string& value) { return value.empty() ? std::string("an empty value was given") : std::string(); }, "",
      "non-empty");
  for (CLI::Option* option : cmd.get_options())
    if (option->get_items_expected_max() > 0 && !empty_allowed(option))
      option->check(non_empty);
  for (CLI::App* sub : cmd.get_subcommands({})) refuse_empty_values(*sub);
}

// A task process of `sweep run --local` (which sets kStopWithParentEnv to its pid) ends when that
// parent dies, even by SIGKILL, as a Ctrl-C would end both: a task left running on its own would
// hold its lock and keep writing while the sweep is run again. Its rows so far stay stored.
void stop_with_parent() {
  const char* parent = std::getenv(mkv::sweep::kStopWithParentEnv);
  if (parent == nullptr) return;
  const std::string parent_pid = parent;
  ::unsetenv(mkv::sweep::kStopWithParentEnv);  // not for what this process may start in turn
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (std::to_string(::getppid()) != parent_pid) std::raise(SIGTERM);  // it died before prctl
}

// What a command printed to stdout is buffered: a full disk or a closed pipe shows when it is
// flushed, which must fail the command instead of losing the output silently.
int flush_stdout(int code) {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return code;
  fmt::print(stderr, "error: cannot write to standard output: {}\n", std::strerror(errno));
  return code != 0 ? code : 1;
}

}  // namespace

int main(int argc, char** argv) {
  stop_with_parent();
  mkv::cli::set_command_line(argc, argv);
  CLI::App app{"momentkv: long-context LLM inference on a fixed KV-cache budget", "momentkv"};
  app.require_subcommand(1);
  // The build (commit, CPU) and the matrix kernels this host runs (src/ops/cpu_features.h).
  app.set_version_flag("--version", [] {
    std::string kernels;
    try {
      kernels = mkv::cpu_variant_summary();
    } catch (const mkv::MkvError& e) {
      kernels = std::string("kernels: error: ") + e.what();
    }
    return fmt::format("momentkv · {}\n{}", kernels, mkv::cli::provenance_line());
  });

  GenerateOptions gen;
  gen.model.default_precision = "fast";
  gen.model.cache_type = "f16";  // llama.cpp's default, like the precision
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
  PressFlags gen_press;
  generate->add_option("--press", gen_press.specs, "KV compression press spec, e.g. snapkv:window=16 (see `momentkv presses`; default full)");
  gen_press.kv_budget_flag = generate->add_option("--kv-budget", gen_press.kv_budget, "tokens kept per KV head, window included");
  gen_press.ratio_flag = generate->add_option("--compression-ratio", gen_press.compression_ratio, "fraction of the prompt's tokens removed (kvpress)");
  generate->add_flag("--compress-chunks", gen.compress_each_chunk, "compress after every prefill chunk (bounded memory)");
  generate->add_flag("--conversation", gen.conversation, "chat with the model's template: -p is one user turn, else one turn per stdin line (-cnv)");
  generate->add_option("--system-prompt", gen.system_prompt, "system message in conversation mode (-sys)");
  generate->add_option("--chat-template", gen.chat_template, "override the model's template: llama3 | chatml | qwen3");

  TokenizeOptions tk;
  auto* tokenize = app.add_subcommand("tokenize", "print the token ids and pieces of a text");
  tokenize->add_option("-m,--model", tk.model_path, "GGUF model file (default: $MOMENTKV_MODEL or ../shared/assets/stories260K.gguf)");
  tokenize->add_option("-p,--prompt", tk.prompt, "text");
  tokenize->add_option("-f,--file", tk.prompt_file, "read the text from a file");
  tokenize->add_flag("--ids", tk.ids_only, "print only the ids, as a JSON array");
  tokenize->add_flag("--no-bos", tk.no_bos, "do not add BOS/EOS");
  tokenize->add_flag("--no-parse-special", tk.no_parse_special, "treat control-token texts as plain text");

  LogitsOptions lg;
  auto* logits = app.add_subcommand("logits", "write the logits of every position of a token list (float32)");
  add_model_flags(*logits, lg.model);
  logits->add_option("--tokens", lg.tokens, "token ids, e.g. 1,403,407");
  logits->add_option("--tokens-file", lg.tokens_file, "file with token ids (comma/space separated or a JSON array)");
  logits->add_option("-o,--output", lg.output, "output file: float32 [n_tokens][n_vocab]");

  KlOptions kl;
  auto* kl_cmd = app.add_subcommand("kl", "KL / same-top-1 / ΔNLL of presses against the full cache (teacher-forced text)");
  add_model_flags(*kl_cmd, kl.model);
  add_window_flags(*kl_cmd, kl.text);
  PressFlags kl_press;
  kl_cmd->add_option("--press", kl_press.specs, "press spec without budget, repeatable (default: every press)");
  kl_cmd->add_option("--budgets", kl.budgets, "comma-separated budgets L (tokens per KV head)")->capture_default_str();
  kl_cmd->add_option("--nc", kl.nc, "normalisation correction: both | on | off")->capture_default_str();
  kl_cmd->add_flag("--equal-bytes", kl.equal_bytes, "count moment statistics against the budget (token-equivalents)");
  kl_cmd->add_option("-o,--output", kl.json_output, "also write the rows as JSON");

  auto* presses = app.add_subcommand("presses", "list the KV compression presses, their parameters and defaults");
  std::string presses_format = "text";
  presses->add_option("--format", presses_format,
                      "text; markdown (docs/METHODS.md's generated tables) or python (python/momentkv/_catalog.py)")
      ->check(CLI::IsMember({"text", "markdown", "python"}))
      ->capture_default_str();

  MakeModelOptions mm;
  auto* make_model = app.add_subcommand("make-model", "write a seeded random-weight GGUF at a real model's shape");
  make_model->add_option("--shape", mm.shape, "shape: llama-3.2-1b, llama-3.1-8b, qwen3-4b, qwen2.5-7b, tiny-llama, tiny-qwen2, tiny-qwen3")
      ->capture_default_str();
  make_model->add_option("--type", mm.type, "type of the 2-D weights (F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K), or llama.cpp's mix Q4_K_M / Q5_K_M (Q6_K for the classifier and some attn_v, ffn_down)")
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

  FidelityOptions fid;
  auto* fidelity_cmd = app.add_subcommand("fidelity", "attention fidelity per layer/head: evicted mass, cos(f_R, f_E), error with/without NC, KL");
  add_model_flags(*fidelity_cmd, fid.model);
  add_window_flags(*fidelity_cmd, fid.text);
  PressFlags fid_press;
  fidelity_cmd->add_option("--press", fid_press.specs, "press spec without budget/nc, repeatable (default: every press)");
  fidelity_cmd->add_option("--budgets", fid.budgets, "comma-separated budgets L (tokens per KV head)")->capture_default_str();
  fidelity_cmd->add_flag("--no-output-metrics", fid.no_output_metrics, "skip KL / same-top-1 / ΔNLL at the model output");
  fidelity_cmd->add_option("-o,--output", fid.output_dir, "output folder (fidelity.md, fidelity.json, *.svg)")->required();

  BenchOptions bo;
  auto* bench = app.add_subcommand("bench", "llama-bench-style throughput: pp / tg tests at depths, with and without a press");
  bench->add_option("-m,--model", bo.models, "GGUF model file, repeatable (default: $MOMENTKV_MODEL or stories260K)");
  bench->add_option("-p,--n-prompt", bo.n_prompt, "prompt lengths, comma-separated (0 = no pp test)")->capture_default_str();
  bench->add_option("-n,--n-gen", bo.n_gen, "generation lengths, comma-separated (0 = no tg test)")->capture_default_str();
  bench->add_option("-d,--n-depth", bo.depths, "depths: tokens prefilled (untimed) before each test, comma-separated")->capture_default_str();
  bench->add_option("-r,--repetitions", bo.repetitions, "repetitions per test")->capture_default_str();
  bench->add_option("-t,--threads", bo.threads, "thread counts, comma-separated")->capture_default_str();
  bench->add_option("-o,--output", bo.output, "output format: md | json | csv")->capture_default_str();
  PressFlags bench_press;
  bench->add_option("--press", bench_press.specs, "press spec, repeatable: tg tests at depth > 0 are repeated with it (compressing after the depth prefill)");
  bench_press.kv_budget_flag = bench->add_option("--kv-budget", bench_press.kv_budget, "budget L (tokens per KV head) for the presses");
  bench->add_option("--ubatch-size", bo.ubatch, "prefill chunk size in tokens (-ub)")->capture_default_str();
  add_cache_type_flag(*bench, bo.cache_type);
  add_precision_flags(*bench, bo.precision, "$MOMENTKV_PRECISION, else fast");
  bench->add_flag("--mlock", bo.mlock, "lock the model (and all memory) in RAM");
  bench->add_flag("--no-mmap", bo.no_mmap, kNoMmapHelp);
  bench->add_flag("--fresh-depth", bo.fresh_depth,
                  "re-prefill the depth before every repetition (default: once per test; tests at depth 0 start every "
                  "repetition on an empty cache)");
  bench->add_flag("--nc-ab", bo.nc_ab, "with an NC press, time NC off too: alternating passes on the same compressed cache");
  bench->add_flag("--depth0-ab", bo.depth0_ab,
                  "with a press at depth > 0, time the same decode from depth 0 too (full cache, a second session), "
                  "in alternating passes");
  bench->add_flag("--no-probe", bo.no_probe, "skip the read-bandwidth and FMA-peak probes");
  bench->add_flag("--progress", bo.progress, "print each test, depth prefill and repetition as it starts (stderr)");

  auto add_eval_flags = [](CLI::App& cmd, EvalCommonOptions& e, PressFlags& press) {
    add_model_flags(cmd, e.model);
    cmd.add_option("--press", press.specs, "press spec without budget, repeatable (default: full)");
    cmd.add_option("--budgets", e.budgets, "comma-separated budgets L (tokens per KV head)")->capture_default_str();
    cmd.add_option("--protocol", e.protocol, "snapkv (question compressed with the context) | kvpress (question appended after compression)")->capture_default_str();
    cmd.add_option("--chat-template", e.chat_template, "auto | none | llama3 | chatml | qwen3")->capture_default_str();
    cmd.add_option("-o,--output", e.output_dir, "output folder")->required();
    cmd.add_option("--shard", e.shard, "run the samples with index % n == i")->capture_default_str();
    cmd.add_option("--max-samples", e.max_samples, "stop after this many new predictions (resume later)");
    cmd.add_flag("--compress-chunks", e.compress_each_chunk, "compress after every prefill chunk (bounded memory)");
  };
  auto* eval_cmd = app.add_subcommand("eval", "benchmarks with presses: eval ruler | eval longbench");
  eval_cmd->require_subcommand(1);
  EvalRulerOptions er;
  PressFlags ruler_press, longbench_press;
  auto* eval_ruler = eval_cmd->add_subcommand("ruler", "RULER: generated (seeded) or existing jsonl samples, greedy, RULER layout");
  add_eval_flags(*eval_ruler, er.common, ruler_press);
  eval_ruler->add_option("--data", er.common.data, "existing RULER jsonl file(s) instead of generating");
  eval_ruler->add_option("--tasks", er.tasks, "comma-separated RULER tasks to generate")->capture_default_str();
  eval_ruler->add_option("--length", er.length, "target length: prompt + generation tokens")->capture_default_str();
  eval_ruler->add_option("--samples", er.samples, "samples per task")->capture_default_str();
  eval_ruler->add_option("--seed", er.seed, "generator seed")->capture_default_str();
  eval_ruler->add_option("--essay", er.essay, "essay haystack: .txt file or folder (default: ../shared/assets/text/frankenstein.txt)");
  EvalLongBenchOptions elb;
  auto* eval_longbench = eval_cmd->add_subcommand("longbench", "LongBench v1 jsonl with the user's dataset2prompt/dataset2maxlen");
  add_eval_flags(*eval_longbench, elb.common, longbench_press);
  eval_longbench->add_option("--data", elb.common.data, "folder of {dataset}.jsonl files, or one .jsonl file")->required();
  eval_longbench->add_option("--dataset2prompt", elb.dataset2prompt, "LongBench config/dataset2prompt.json")->required();
  eval_longbench->add_option("--dataset2maxlen", elb.dataset2maxlen, "LongBench config/dataset2maxlen.json")->required();
  eval_longbench->add_option("--datasets", elb.datasets, "comma-separated datasets (default: every file in --data)");
  eval_longbench->add_option("--max-length", elb.max_length, "prompt tokens after middle truncation (0 = context − generation length)");
  ServeOptions srv;
  srv.model.default_precision = "fast";
  srv.model.cache_type = "f16";
  PressFlags serve_press;
  auto* serve_cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server: /v1/completions, /v1/chat/completions, "
                                                "per-request kv_press / kv_budget (llama-server flags)");
  add_model_flags(*serve_cmd, srv.model);
  serve_cmd->add_option("--host", srv.host, "address to listen on")->capture_default_str();
  serve_cmd->add_option("--port", srv.port, "port (0 = any free port, printed at start)")->capture_default_str();
  serve_cmd->add_flag("--metrics", srv.metrics, "answer GET /metrics (Prometheus; llama-server's names too)");
  serve_cmd->add_flag("--slots,!--no-slots", srv.slots, "answer GET /slots (default: on)");
  serve_cmd->add_flag("!--no-webui,!--no-ui", srv.web_page, "no chat page at / (404)");
  serve_cmd->add_option("--cors-origins", srv.cors_origins,
                        "comma-separated origins a browser may call from (Access-Control-Allow-Origin; default: any)");
  serve_cmd->add_flag("--reuse-port", srv.reuse_port,
                      "let other processes listen on the same port (SO_REUSEPORT: the kernel shares connections "
                      "between them); without it a port in use is an error");
  serve_cmd->add_option("--parallel", srv.parallel, "slots: requests generating at once, their decode steps batched (-np)")->capture_default_str();
  serve_cmd->add_option("--kv-memory", srv.kv_memory_mib,
                        "MiB of KV cache all requests may reserve (each its kept + decoded rows, plus room for the one "
                        "prompt being read before its compression); a request waits until it fits (0 = no cap)")
      ->capture_default_str();
  serve_cmd->add_option("--queue", srv.queue, "requests that may wait for KV memory or a slot; more get 503 + Retry-After")
      ->capture_default_str();
  serve_cmd->add_option("--api-key", srv.api_key,
                        "require 'Authorization: Bearer KEY' or 'X-Api-Key: KEY' on every route but /health, "
                        "/v1/health, /models, /v1/models, the page and CORS preflights (default: $MOMENTKV_API_KEY)");
  serve_cmd->add_option("--timeout", srv.timeout_seconds, "connection read/write timeout in seconds")->capture_default_str();
  serve_cmd->add_option("--header-timeout", srv.header_timeout_seconds,
                        "seconds a request's headers may take (from the connection's start or its previous reply); "
                        "later ones get 408 and the connection closes")
      ->capture_default_str();
  serve_cmd->add_option("--body-timeout", srv.body_timeout_seconds,
                        "seconds a request's body may take, from the start of its reading to its last byte; later "
                        "ones get 408 and the connection closes")
      ->capture_default_str();
  serve_cmd->add_option("--chat-template", srv.chat_template, "override the model's template: llama3 | chatml | qwen3");
  serve_cmd->add_option("-a,--alias", srv.alias, "the model's name in /v1/models and responses (default: the file's stem)");
  serve_cmd->add_option("--press", serve_press.specs, "default press of requests that name none (see `momentkv presses`)");
  serve_press.kv_budget_flag = serve_cmd->add_option("--kv-budget", serve_press.kv_budget, "default budget: tokens per KV head");
  serve_press.ratio_flag = serve_cmd->add_option("--compression-ratio", serve_press.compression_ratio, "default budget: fraction removed");
  serve_cmd->add_flag("--compress-chunks", srv.compress_each_chunk, "compress after every prefill chunk (bounded memory)");

  ReportOptions rep;
  auto* report_cmd = app.add_subcommand("report", "merge result folders into a markdown table and score-vs-budget SVG plots");
  report_cmd->add_option("folders", rep.folders, "result folders (searched recursively)")->required();
  report_cmd->add_option("-o,--output", rep.output_dir, "write report.md and SVG plots here");

  SweepOptions sw;
  auto* sweep_cmd = app.add_subcommand("sweep", "a sweep file (models x presses x budgets x shards) as a Slurm array job, "
                                                "or locally: sweep submit | status | run");
  sweep_cmd->require_subcommand(1);
  auto* sweep_submit = sweep_cmd->add_subcommand("submit", "write the Slurm array script (one task per config and shard) "
                                                           "and sbatch it; again to resume");
  auto* sweep_status = sweep_cmd->add_subcommand("status", "done / running / failed / pending per task, from the result "
                                                           "folders (and squeue/sacct when installed)");
  auto* sweep_run = sweep_cmd->add_subcommand("run", "run the sweep's tasks without Slurm, N processes at a time");
  for (auto* cmd : {sweep_submit, sweep_status, sweep_run})
    cmd->add_option("file", sw.file, "sweep file (JSON; see docs/SWEEPS.md)")->required();
  sweep_submit->add_flag("--dry-run", sw.dry_run, "print the array script and the sbatch command; submit nothing");
  for (auto* cmd : {sweep_submit, sweep_run}) {
    cmd->add_option("--only", sw.only, "only tasks in this state: failed | unfinished (failed, or pending and not queued)")
        ->check(CLI::IsMember({"failed", "unfinished"}));
    cmd->add_option("--array", sw.array, "only these task indices, e.g. 0-3,5");
  }
  sweep_status->add_flag("--json", sw.json, "machine-readable output");
  sweep_run->add_option("--local", sw.local, "parallel processes (child processes of this binary)")->required();

  refuse_empty_values(app);
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
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }

  const auto run_parsed = [&]() -> int {
    if (generate->parsed()) {
      const std::vector<mkv::PressConfig> presses = gen_press.with_budget();
      MKV_CHECK(presses.size() <= 1, "give one --press for generate, got {}", presses.size());
      if (!presses.empty()) gen.press = presses.front();
    }
    kl.presses = kl_press.without_budget();
    fid.presses = fid_press.without_budget();
    bo.presses = bench_press.with_budget();
    er.common.presses = ruler_press.without_budget();
    elb.common.presses = longbench_press.without_budget();
    if (serve_cmd->parsed()) {
      const std::vector<mkv::PressConfig> presses = serve_press.with_budget();
      MKV_CHECK(presses.size() <= 1, "give one --press for serve, got {}", presses.size());
      if (!presses.empty()) srv.press = presses.front();
      return run_serve(srv);
    }
    if (generate->parsed()) return run_generate(gen);
    if (logits->parsed()) return run_logits(lg);
    if (make_model->parsed()) return run_make_model(mm);
    if (kl_cmd->parsed()) return run_kl(kl);
    if (tokenize->parsed()) return run_tokenize(tk);
    if (fidelity_cmd->parsed()) return run_fidelity(fid);
    if (eval_ruler->parsed()) return run_eval_ruler(er);
    if (eval_longbench->parsed()) return run_eval_longbench(elb);
    if (report_cmd->parsed()) return run_report(rep);
    if (sweep_submit->parsed()) return run_sweep_submit(sw);
    if (sweep_status->parsed()) return run_sweep_status(sw);
    if (sweep_run->parsed()) return run_sweep_run(sw);
    if (presses->parsed()) {
      fmt::print("{}", presses_format == "markdown" ? mkv::press_markdown()
                       : presses_format == "python" ? mkv::press_python_module()
                                                    : mkv::press_help());
      return 0;
    }
    if (import_llama2c->parsed()) return run_import_llama2c(il);
    if (bench->parsed()) return run_bench_command(bo);
    return 0;
  };
  try {
    return flush_stdout(run_parsed());
  } catch (const mkv::MkvError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", mkv::escape_for_message(e.what()));  // one line, whatever the library says
  }
  std::fflush(stdout);  // the command failed already: one error line is enough
  return 1;
}
