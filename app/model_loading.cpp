#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <unistd.h>

#include "commands.h"
#include "core/error.h"
#include "core/threading.h"
#include "kv/kv_cache.h"
#include "ops/matmul_int8.h"

namespace mkv::cli {
namespace {

constexpr int kDefaultUbatch = 512;   // -ub's default (commands.h)
constexpr int kMaxUbatch = 1 << 16;   // 65536 tokens per prefill chunk: far above any useful chunk, and the
                                      // per-chunk buffers (activations, FFN) grow linearly with it

std::filesystem::path executable_dir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path(".") : exe.parent_path();
}

}  // namespace

// -m, else $MOMENTKV_MODEL, else stories260K in the shared assets.
std::string resolve_model_path(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("MOMENTKV_MODEL"); env && *env) return env;
  if (std::string path = find_shared_asset("stories260K.gguf"); !path.empty()) return path;
  fail("no model given and the default ../shared/assets/stories260K.gguf was not found; pass -m FILE.gguf "
       "or set MOMENTKV_MODEL (stories260K.gguf is published in Hugging Face's ggml-org/models, "
       "tinyllamas/stories260K.gguf)");
}

std::string find_shared_asset(const std::string& relative) {
  if (const char* env = std::getenv("MOMENTKV_ASSETS"); env && *env) {
    const auto path = std::filesystem::path(env) / relative;
    return std::filesystem::exists(path) ? path.string() : "";
  }
  const std::filesystem::path candidates[] = {
      std::filesystem::path("..") / "shared" / "assets" / relative,
      executable_dir() / ".." / ".." / "shared" / "assets" / relative,
  };
  for (const auto& c : candidates)
    if (std::filesystem::exists(c)) return c.lexically_normal().string();
  return "";
}

std::string resolve_precision(const std::string& flag, const std::string& command_default) {
  auto checked = [](const std::string& value, const char* source) {
    MKV_CHECK(value == "exact" || value == "fast", "{} must be exact or fast, got '{}'", source, value);
    return value;
  };
  if (!flag.empty()) return checked(flag, "--precision");
  const char* env = std::getenv("MOMENTKV_PRECISION");
  if (env != nullptr && *env != '\0') return checked(env, "MOMENTKV_PRECISION");
  return checked(command_default, "the command's default precision");
}

LoadedModel load_model(const ModelOptions& options) {
  MKV_CHECK(options.threads >= 0, "-t must be >= 0, got {}", options.threads);
  MKV_CHECK(options.threads <= max_thread_count(),
            "-t {} is above the limit of {} threads (4 x the {} hardware threads, at least 64)", options.threads,
            max_thread_count(), hardware_thread_count());
  MKV_CHECK(options.ubatch > 0, "-ub must be positive, got {}", options.ubatch);
  MKV_CHECK(options.ubatch <= kMaxUbatch, "-ub {} is above the limit of {} tokens per prefill chunk", options.ubatch,
            kMaxUbatch);
  MKV_CHECK(options.ctx >= 0, "-c must be >= 0, got {}", options.ctx);
  const std::optional<KvStorage> kv_storage = kv_storage_from_name(options.cache_type);
  MKV_CHECK(kv_storage.has_value(), "unsupported cache type '{}' (supported: f32, f16)", options.cache_type);
  set_num_threads(options.threads);
  set_matmul_precision(resolve_precision(options.precision, options.default_precision) == "fast"
                           ? MatmulPrecision::Fast
                           : MatmulPrecision::Exact);

  LoadedModel loaded;
  const auto load = options.no_mmap ? GgufFile::Load::Read : GgufFile::Load::Mmap;
  loaded.file = std::make_unique<GgufFile>(GgufFile::open(resolve_model_path(options.model_path), load));
  // A prefill chunk never holds more tokens than the context: -ub above both the context and the
  // default chunk (512, kept valid for small-context models) only allocates buffers it cannot use.
  const int64_t n_ctx = options.ctx > 0 ? options.ctx : ModelConfig::from_gguf(*loaded.file).context_length;
  MKV_CHECK(options.ubatch <= std::max<int64_t>(n_ctx, kDefaultUbatch),
            "-ub {} is larger than the context size {} ({}); -ub must be at most the context size", options.ubatch,
            n_ctx, options.ctx > 0 ? "-c" : "the model's context_length");
  loaded.transformer = std::make_unique<Transformer>(*loaded.file, options.ubatch);
  loaded.tokenizer = Tokenizer::create(Vocab::from_gguf(*loaded.file));
  loaded.kv_storage = *kv_storage;
  return loaded;
}

SessionOptions session_options(const ModelOptions& options, const LoadedModel& model, bool compress_each_chunk) {
  SessionOptions so;
  so.ubatch = options.ubatch;
  so.n_ctx = options.ctx;
  so.kv_storage = model.kv_storage;
  so.compress_each_chunk = compress_each_chunk;
  return so;
}

}  // namespace mkv::cli
