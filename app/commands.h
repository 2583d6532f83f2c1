// The momentkv subcommands. main.cpp parses flags (CLI11) into these option structs; each
// command lives in its own file and returns the process exit code.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "kv/kv_cache.h"
#include "kv/press_config.h"
#include "engine/session.h"
#include "model/transformer.h"
#include "text/tokenizer.h"

namespace mkv::cli {

// Flags every model-running command shares (llama.cpp names).
struct ModelOptions {
  std::string model_path;      // -m; empty = $MOMENTKV_MODEL or the shared stories260K
  int threads = 0;             // -t; 0 = one per core
  int ubatch = 512;            // -ub
  int ctx = 0;                 // -c; 0 = the model's context length
  std::string cache_type = "f32";  // -ctk/-ctv: f32 | f16 (generate and serve: f16, llama.cpp's default)
  bool no_mmap = false;            // --no-mmap: read the model into huge-page memory
  std::string precision;           // --precision exact | fast (--fast); empty = $MOMENTKV_PRECISION, else the below
  // The command's precision when neither --precision nor $MOMENTKV_PRECISION is given: "fast" for
  // the commands that serve text (generate, serve, bench), "exact" for the analysis commands
  // (logits, kl, fidelity, eval), whose figures must not depend on activation rounding.
  std::string default_precision = "exact";
};

// A model file opened for inference: the mapping, the weights bound to it, the tokenizer.
struct LoadedModel {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Transformer> transformer;
  std::unique_ptr<Tokenizer> tokenizer;
  KvStorage kv_storage = KvStorage::F32;
};

// The command line as typed (main() records it) and "command: … · commit … · date UTC · CPU …",
// the line every results table starts with.
void set_command_line(int argc, char** argv);
std::string provenance_line();
// The commit the binary was configured at (`git describe`), "unknown" outside a checkout.
std::string build_commit();

// Resolves the model path (flag, environment, default), sets the thread count, loads the model.
LoadedModel load_model(const ModelOptions& options);
// "exact" or "fast": `flag` (--precision) when given, else $MOMENTKV_PRECISION when set, else
// `command_default`. Throws MkvError naming a value that is neither.
std::string resolve_precision(const std::string& flag, const std::string& command_default);
// How a command's sessions run: -ub, -c and -ctk/-ctv of `options` (no press: each caller sets its own).
SessionOptions session_options(const ModelOptions& options, const LoadedModel& model, bool compress_each_chunk);
// The model file a -m flag names: the flag, else $MOMENTKV_MODEL, else the shared stories260K.
std::string resolve_model_path(const std::string& flag);

struct GenerateOptions {
  ModelOptions model;
  std::string prompt;          // -p
  std::string prompt_file;     // -f
  int n_predict = -1;          // -n; -1 = until end of generation or context
  float temperature = 0.8f;    // --temp
  int top_k = 40;              // --top-k
  float top_p = 0.95f;         // --top-p
  float min_p = 0.05f;         // --min-p
  int64_t seed = -1;           // -s; -1 = random
  bool ignore_eos = false;     // --ignore-eos
  PressConfig press;           // --press SPEC with --kv-budget L | --compression-ratio r (default: full)
  bool compress_each_chunk = false;  // --compress-chunks: compress after every -ub chunk
  bool conversation = false;   // -cnv: chat with the model's template (turns from -p, else stdin lines)
  std::string system_prompt;   // -sys
  std::string chat_template;   // --chat-template llama3|chatml|qwen3 (default: from the model)
};

struct TokenizeOptions {
  std::string model_path;      // -m
  std::string prompt;          // -p
  std::string prompt_file;     // -f
  bool ids_only = false;       // --ids
  bool no_bos = false;         // --no-bos: do not add BOS/EOS
  bool no_parse_special = false;  // --no-parse-special: control-token texts stay plain text
};
int run_tokenize(const TokenizeOptions& options);
int run_generate(const GenerateOptions& options);

struct LogitsOptions {
  ModelOptions model;
  std::string tokens;          // --tokens "1,2,3"
  std::string tokens_file;     // --tokens-file: ids separated by commas/whitespace, or a JSON array
  std::string output;          // -o: float32 [n_tokens][n_vocab] little-endian
};
int run_logits(const LogitsOptions& options);

}  // namespace mkv::cli

namespace mkv::cli {

struct MakeModelOptions {
  std::string shape = "tiny-llama";  // --shape: a RandomModelSpec preset
  std::string type = "F32";          // --type: tensor type of the 2-D weights
  uint64_t seed = 1;                 // --seed
  std::string output;                // -o
};
int run_make_model(const MakeModelOptions& options);

}  // namespace mkv::cli

namespace mkv::cli {

// The text windows kl and fidelity compare on (eval/held_out.h).
struct TextWindowOptions {
  std::string text_file;              // -f; default: shared tinystories_val.txt
  int prompt_tokens = 448;            // --prompt-tokens (BOS included)
  int continuation_tokens = 64;       // --continuation-tokens
  int windows = 3;                    // --windows
  std::string split = "first";        // --split first|dev|test
  uint64_t seed = 1;                  // --seed: the order windows are drawn in (dev/test)
};

// Reads the text, checks the lengths against the model and cuts the windows (MkvError when the
// text is too short for them).
std::vector<std::vector<int32_t>> comparison_windows(const TextWindowOptions& options, const LoadedModel& model);
// "split S, N windows of P + C tokens (slots ...), seed K": what a table was measured on.
std::string describe_windows(const TextWindowOptions& options);

struct KlOptions {
  ModelOptions model;
  TextWindowOptions text;
  std::vector<PressConfig> presses;   // --press (repeatable; no budget); default: every press
  std::string budgets = "16,32,64,128";
  std::string nc = "both";            // --nc both|on|off
  bool equal_bytes = false;           // --equal-bytes
  std::string json_output;            // -o
};
int run_kl(const KlOptions& options);

// Shared assets path of a file (../shared/assets/<relative>, next to the working directory or
// the repository the binary was built in); empty when not found.
std::string find_shared_asset(const std::string& relative);

}  // namespace mkv::cli

namespace mkv::cli {

struct ImportLlama2cOptions {
  std::string model;            // --model: llama2.c .bin checkpoint
  std::string tokenizer;        // --tokenizer: llama2.c tokenizer .bin, or a .gguf to copy tokenizer.* from
  std::string output;           // -o
  std::string type = "F32";     // --type: F32 | F16 | Q8_0 for the 2-D weights
  int context = 0;              // --context: llama.context_length; 0 = the checkpoint's seq_len
  std::string name = "llama";   // --name: general.name
};
int run_import_llama2c(const ImportLlama2cOptions& options);

}  // namespace mkv::cli

namespace mkv::cli {

struct FidelityOptions {
  ModelOptions model;
  TextWindowOptions text;
  std::vector<PressConfig> presses;   // --press (repeatable; no budget, no nc); default: every press
  std::string budgets = "16,32,64,128";
  bool no_output_metrics = false;     // --no-output-metrics: skip KL / top-1 / ΔNLL
  std::string output_dir;             // -o DIR
};
int run_fidelity(const FidelityOptions& options);

}  // namespace mkv::cli

namespace mkv::cli {

struct BenchOptions {
  std::vector<std::string> models;   // -m, repeatable; none = the default model
  std::string n_prompt = "512";      // -p: comma-separated prompt lengths (0 = none)
  std::string n_gen = "128";         // -n: comma-separated generation lengths (0 = none)
  std::string depths = "0";          // -d: comma-separated depths prefilled before each test
  int repetitions = 5;               // -r
  std::string threads = "2";         // -t: comma-separated thread counts
  std::string output = "md";         // -o md|json|csv
  std::vector<PressConfig> presses;  // --press SPEC (repeatable) with --kv-budget L: tg at depth > 0 also with it
  int ubatch = 512;                  // -ub
  std::string cache_type = "f16";    // -ctk/-ctv (llama-bench's default)
  std::string precision;             // --precision exact|fast (--fast); empty = $MOMENTKV_PRECISION, else fast
  bool mlock = false;                // --mlock
  bool no_mmap = false;              // --no-mmap: read the model into huge-page memory
  bool fresh_depth = false;          // --fresh-depth: re-prefill the depth before every repetition
  bool nc_ab = false;                // --nc-ab: also time NC off, interleaved, on the same compressed cache
  bool depth0_ab = false;            // --depth0-ab: also time depth-0 decode, interleaved, beside each press row
  bool no_probe = false;             // --no-probe: skip the bandwidth and FMA-peak probes
  bool progress = false;             // --progress: stderr lines per test, depth prefill, repetition
};
int run_bench_command(const BenchOptions& options);

}  // namespace mkv::cli

namespace mkv::cli {

// Flags shared by `eval ruler` and `eval longbench`.
struct EvalCommonOptions {
  ModelOptions model;
  std::vector<std::string> data;      // --data FILE/DIR (repeatable for RULER)
  std::vector<PressConfig> presses;   // --press SPEC (repeatable; no budget); default: full
  std::string budgets = "128,256,512,1024";  // --budgets
  std::string protocol = "snapkv";    // --protocol snapkv|kvpress
  std::string chat_template = "auto"; // --chat-template auto|none|llama3|chatml|qwen3
  std::string output_dir;             // -o DIR
  std::string shard = "0/1";          // --shard i/n
  int64_t max_samples = -1;           // --max-samples: stop after k new predictions
  bool compress_each_chunk = false;   // --compress-chunks
};

struct EvalRulerOptions {
  EvalCommonOptions common;
  std::string tasks = "niah_single_1";  // --tasks a,b
  int64_t length = 4096;                // --length
  int64_t samples = 25;                 // --samples
  uint64_t seed = 42;                   // --seed
  std::string essay;                    // --essay (default: shared frankenstein.txt)
};
int run_eval_ruler(const EvalRulerOptions& options);

struct EvalLongBenchOptions {
  EvalCommonOptions common;
  std::string dataset2prompt;  // --dataset2prompt FILE
  std::string dataset2maxlen;  // --dataset2maxlen FILE
  std::string datasets;        // --datasets a,b
  int64_t max_length = 0;      // --max-length (0 = context − generation length)
};
int run_eval_longbench(const EvalLongBenchOptions& options);

struct ReportOptions {
  std::vector<std::string> folders;  // result folders (searched recursively)
  std::string output_dir;            // -o: report.md + SVG plots
};
int run_report(const ReportOptions& options);

}  // namespace mkv::cli

namespace mkv::cli {

struct ServeOptions {
  ModelOptions model;
  std::string host = "127.0.0.1";     // --host
  int port = 8080;                    // --port (0 = any free port)
  bool reuse_port = false;            // --reuse-port: SO_REUSEPORT
  bool metrics = false;               // --metrics: the Prometheus endpoint
  bool slots = true;                  // --slots / --no-slots: the slots endpoint
  bool web_page = true;               // --no-webui: no chat page at /
  std::string cors_origins;           // --cors-origins: comma-separated origins CORS allows (default: any)
  int parallel = 1;                   // -np / --parallel
  double kv_memory_mib = 0;           // --kv-memory: cap on the KV bytes of all requests (0 = none)
  int queue = 16;                     // --queue: requests that may wait; more get 503
  std::string api_key;                // --api-key (else $MOMENTKV_API_KEY)
  int timeout_seconds = 600;          // --timeout: connection read/write timeout
  int header_timeout_seconds = 30;    // --header-timeout: a request's headers are due within this
  int body_timeout_seconds = 60;      // --body-timeout: a request's body is due whole within this
  std::string chat_template;          // --chat-template override
  std::string alias;                  // -a/--alias: the model's name in /v1/models and responses
  PressConfig press;                  // --press with --kv-budget | --compression-ratio (default: full)
  bool compress_each_chunk = false;   // --compress-chunks
};
int run_serve(const ServeOptions& options);

}  // namespace mkv::cli

namespace mkv::cli {

// momentkv sweep submit | status | run: one sweep file (src/sweep/sweep_spec.h) on Slurm or locally.
struct SweepOptions {
  std::string file;         // the sweep file (JSON)
  bool dry_run = false;     // submit --dry-run: print the array script, submit nothing
  std::string only;         // submit/run --only failed|unfinished: a subset by state
  std::string array;        // submit/run --array LIST: these task indices ("0-3,5")
  bool json = false;        // status --json
  int local = 0;            // run --local N: parallel processes
};
int run_sweep_submit(const SweepOptions& options);
int run_sweep_status(const SweepOptions& options);
int run_sweep_run(const SweepOptions& options);

}  // namespace mkv::cli
