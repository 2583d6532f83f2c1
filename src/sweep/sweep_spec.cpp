#include "sweep/sweep_spec.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <regex>
#include <set>

#include "core/error.h"
#include "core/text_file.h"
#include "eval/ruler/ruler_tasks.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "sweep/json_fields.h"

namespace mkv::sweep {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr int64_t kMaxTokens = int64_t{1} << 24;  // lengths, budgets, contexts: far above any model's context
constexpr int64_t kMaxShards = 100000;
constexpr int64_t kMaxTasks = 1000000;

// Paths end up in a bash script, in Slurm's --output pattern (where % is special) and in JSON
// written by that script, so characters that would need escaping in any of them are refused.
void check_path_characters(const std::string& path, const std::string& where) {
  for (const char c : path)
    MKV_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != '"' && c != '\\' && c != '%' && c != '$' && c != '`',
              "{}: '{}' contains a character that sweep paths cannot hold (control characters, \" \\ % $ `)", where,
              path);
}

fs::path resolve(const fs::path& base, const std::string& text, const std::string& where) {
  MKV_CHECK(!text.empty(), "{}: must not be empty", where);
  const fs::path path = fs::path(text).is_absolute() ? fs::path(text) : base / text;
  const std::string normal = path.lexically_normal().string();
  check_path_characters(normal, where);
  return normal;
}

fs::path existing(const fs::path& base, const std::string& text, const std::string& where) {
  fs::path path = resolve(base, text, where);
  MKV_CHECK(fs::exists(path), "{}: '{}' does not exist", where, path.string());
  return path;
}

// The log folder goes into an #SBATCH --output line, which sbatch splits at whitespace.
void check_logs_folder(const fs::path& logs, const std::string& where) {
  const std::string text = logs.string();
  MKV_CHECK(std::none_of(text.begin(), text.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
            "{}: the log folder '{}' contains whitespace, which #SBATCH --output cannot hold (set slurm.logs to "
            "another folder)", where, text);
}

// Non-blank lines of a RULER jsonl file: its sample count.
int64_t count_samples(const fs::path& file) {
  int64_t n = 0;
  const std::string text = read_text_file(file, "benchmark.data");
  for (const TextLine& line : split_lines(text))
    n += !is_blank(line.text);
  return n;
}

// Runs `check` and prefixes any MkvError it throws with `where`.
template <typename F>
auto located(const std::string& where, F&& check) {
  try {
    return check();
  } catch (const MkvError& e) {
    fail("{}: {}", where, e.what());
  }
}

ModelFacts read_model(const fs::path& path, const std::string& where) {
  return located(where, [&] {
    MKV_CHECK(fs::is_regular_file(path), "'{}' is not a file", path.string());
    const GgufFile file = GgufFile::open(path.string());
    const ModelConfig config = ModelConfig::from_gguf(file);
    ModelFacts m;
    m.path = path;
    m.stem = path.stem().string();
    m.file_bytes = file.file_size();
    m.n_layers = config.n_layers;
    m.n_heads = config.n_heads;
    m.n_kv_heads = config.n_kv_heads;
    m.head_dim_k = config.head_dim_k;
    m.head_dim_v = config.head_dim_v;
    m.n_embd = config.n_embd;
    m.n_ff = config.n_ff;
    m.n_vocab = config.n_vocab;
    m.context_length = config.context_length;
    return m;
  });
}

std::string one_of(JsonFields& f, const std::string& key, const std::string& fallback, const std::set<std::string>& allowed) {
  const std::string value = f.string(key).value_or(fallback);
  MKV_CHECK(allowed.count(value), "{}: '{}' is not one of {}", f.where(key), value, fmt::join(allowed, ", "));
  return value;
}

bool is_simple_word(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ',';
  });
}

void parse_ruler(JsonFields& b, const fs::path& base, const SweepDefaults& defaults, RulerOptions& r) {
  if (auto data = b.strings("data", true)) {
    MKV_CHECK(!data->empty(), "{}: give at least one RULER jsonl file", b.where("data"));
    for (std::size_t i = 0; i < data->size(); ++i) {
      const std::string where = fmt::format("{}[{}]", b.where("data"), i);
      r.data.push_back(existing(base, (*data)[i], where));
      MKV_CHECK(fs::is_regular_file(r.data.back()), "{}: '{}' is not a file", where, r.data.back().string());
    }
    r.fewest_samples = INT64_MAX;
    for (const fs::path& file : r.data) r.fewest_samples = std::min(r.fewest_samples, count_samples(file));
    for (const char* unused : {"tasks", "length", "samples", "seed", "essay"})
      MKV_CHECK(!b.has(unused), "{}: not used with benchmark.data (the data files are the samples)", b.where(unused));
    return;
  }
  if (auto tasks = b.strings("tasks", true)) {
    MKV_CHECK(!tasks->empty(), "{}: give at least one RULER task", b.where("tasks"));
    std::set<std::string> seen;
    for (std::size_t i = 0; i < tasks->size(); ++i) {
      const std::string where = fmt::format("{}[{}]", b.where("tasks"), i);
      located(where, [&] { return eval::ruler::task_spec((*tasks)[i]).name; });
      MKV_CHECK(seen.insert((*tasks)[i]).second, "{}: task '{}' is listed twice", where, (*tasks)[i]);
    }
    r.tasks = *tasks;
  }
  r.length = b.integer("length", 1, kMaxTokens).value_or(r.length);
  r.samples = b.integer("samples", 1, 100000).value_or(r.samples);
  r.seed = static_cast<uint64_t>(b.integer("seed", 0, INT64_MAX).value_or(static_cast<int64_t>(r.seed)));
  if (auto essay = b.string("essay")) {
    r.essay = existing(base, *essay, b.where("essay"));
  } else {
    MKV_CHECK(!defaults.essay.empty(),
              "{}: not given, and the default essay ../shared/assets/text/frankenstein.txt was not found",
              b.where("essay"));
    r.essay = fs::absolute(defaults.essay).lexically_normal();
    check_path_characters(r.essay.string(), b.where("essay"));
  }
}

void parse_longbench(JsonFields& b, const fs::path& base, LongBenchOptions& l) {
  for (const char* key : {"data", "dataset2prompt", "dataset2maxlen"})
    MKV_CHECK(b.has(key), "{}: required for LongBench", b.where(key));
  l.data = existing(base, *b.string("data"), b.where("data"));
  l.dataset2prompt = existing(base, *b.string("dataset2prompt"), b.where("dataset2prompt"));
  l.dataset2maxlen = existing(base, *b.string("dataset2maxlen"), b.where("dataset2maxlen"));
  if (auto datasets = b.strings("datasets", true)) {
    for (std::size_t i = 0; i < datasets->size(); ++i)
      MKV_CHECK(is_simple_word((*datasets)[i]) && (*datasets)[i].find(',') == std::string::npos,
                "{}[{}]: '{}' is not a dataset name", b.where("datasets"), i, (*datasets)[i]);
    l.datasets = *datasets;
  }
  l.max_length = b.integer("max_length", 0, kMaxTokens).value_or(0);
}

// Slurm --time: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or UNLIMITED/INFINITE.
bool is_slurm_time(const std::string& t) {
  static const std::regex pattern(R"(^(\d+|\d+:\d+|\d+:\d+:\d+|\d+-\d+|\d+-\d+:\d+|\d+-\d+:\d+:\d+|UNLIMITED|INFINITE|unlimited|infinite)$)");
  return std::regex_match(t, pattern);
}

// "16G", "500M", "1T", "2048" (MiB, Slurm's default unit) → MiB.
int64_t parse_memory(const std::string& text, const std::string& where) {
  static const std::regex pattern(R"(^(\d{1,12})([KMGTkmgt]?)$)");
  std::smatch m;
  MKV_CHECK(std::regex_match(text, m, pattern), "{}: '{}' is not a memory size (e.g. 4000, 500M, 16G or \"auto\")", where,
            text);
  const int64_t n = std::stoll(m[1].str());
  const char unit = m[2].length() ? static_cast<char>(std::toupper(m[2].str()[0])) : 'M';
  const int64_t mib = unit == 'K' ? (n + 1023) / 1024 : unit == 'M' ? n : unit == 'G' ? n * 1024 : n * 1024 * 1024;
  MKV_CHECK(mib >= 1, "{}: '{}' is less than 1 MiB", where, text);
  return mib;
}

void parse_slurm(JsonFields& s, const fs::path& base, const fs::path& output, int threads, SlurmOptions& o) {
  if (auto p = s.string("partition")) {
    MKV_CHECK(is_simple_word(*p), "{}: '{}' is not a partition name (letters, digits, _ - . ,)", s.where("partition"), *p);
    o.partition = *p;
  }
  if (auto t = s.string("time")) {
    MKV_CHECK(is_slurm_time(*t), "{}: '{}' is not a Slurm time (minutes, HH:MM:SS or D-HH:MM:SS)", s.where("time"), *t);
    o.time = *t;
  }
  if (const json* mem_value = s.value("mem")) {
    const json& mem = *mem_value;
    if (mem.is_number_integer()) {
      MKV_CHECK(mem.get<int64_t>() >= 1, "{}: must be at least 1 (MiB), got {}", s.where("mem"), mem.dump());
      o.mem_mib = mem.get<int64_t>();
    } else {
      MKV_CHECK(mem.is_string(), "{}: must be MiB (an integer), a size like \"16G\", or \"auto\"", s.where("mem"));
      if (mem.get<std::string>() != "auto") o.mem_mib = parse_memory(mem.get<std::string>(), s.where("mem"));
    }
  }
  o.cpus_per_task = static_cast<int>(s.integer("cpus_per_task", 1, 4096).value_or(threads));
  MKV_CHECK(o.cpus_per_task >= threads,
            "{}: {} CPUs per task is below threads ({}): each task would run more threads than the CPUs it gets",
            s.where("cpus_per_task"), o.cpus_per_task, threads);
  o.logs = s.has("logs") ? resolve(base, *s.string("logs"), s.where("logs")) : output / "logs";
  check_logs_folder(o.logs, s.has("logs") ? s.where("logs") : s.file() + ": output");
  o.max_running = static_cast<int>(s.integer("max_running", 1, kMaxShards).value_or(0));
  for (const char* key : {"account", "qos"})
    if (auto v = s.string(key)) {
      MKV_CHECK(is_simple_word(*v), "{}: '{}' is not a Slurm name (letters, digits, _ - .)", s.where(key), *v);
      (std::string(key) == "account" ? o.account : o.qos) = *v;
    }
  if (auto extra = s.strings("extra")) {
    for (std::size_t i = 0; i < extra->size(); ++i) {
      const std::string& e = (*extra)[i];
      MKV_CHECK(e.rfind("--", 0) == 0 && e.size() > 2, "{}[{}]: '{}' is not an sbatch option (write \"--name=value\")",
                s.where("extra"), i, e);
      for (const char c : e)
        MKV_CHECK(static_cast<unsigned char>(c) > 0x20 && c != '\'' && c != '"' && c != '\\' && c != '$' && c != '`',
                  "{}[{}]: '{}' holds a space, quote or shell character (one option per item, no quoting)",
                  s.where("extra"), i, e);
      for (const char* owned : {"--array", "--output", "--error", "--job-name", "--open-mode"})
        MKV_CHECK(e.rfind(owned, 0) != 0, "{}[{}]: {} is set by momentkv sweep", s.where("extra"), i, owned);
      o.extra.push_back(e);
    }
  }
}

std::vector<PressConfig> parse_presses(JsonFields& f) {
  MKV_CHECK(f.has("presses"), "{}: required (e.g. [\"snapkv\", \"streaming_llm\"]; \"full\" for no compression)",
            f.where("presses"));
  const std::vector<std::string> specs = *f.strings("presses", true);
  MKV_CHECK(!specs.empty(), "{}: give at least one press", f.where("presses"));
  std::vector<PressConfig> presses;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const std::string where = fmt::format("{}[{}]", f.where("presses"), i);
    PressConfig press = located(where, [&] { return PressConfig::parse(specs[i]); });
    located(where, [&] { press.require_budget_from_list("\"budgets\""); });
    MKV_CHECK(seen.insert(press.spec()).second, "{}: '{}' is listed twice", where, specs[i]);
    presses.push_back(std::move(press));
  }
  return presses;
}

}  // namespace

SweepSpec parse_sweep(const std::string& text, const fs::path& file, const SweepDefaults& defaults) {
  const fs::path abs_file = fs::absolute(file).lexically_normal();
  const std::string name_of_file = file.string();
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON ({})", name_of_file, json_error_text(e.what()));
  }
  JsonFields f(root, name_of_file, "");
  const fs::path base = abs_file.parent_path();
  SweepSpec spec;
  spec.file = abs_file;
  f.value("comment");  // free text for the reader of the file; any JSON value

  spec.name = f.string("name").value_or(abs_file.stem().string());
  MKV_CHECK(!spec.name.empty() && spec.name.size() <= 64 && is_simple_word(spec.name) &&
                spec.name.find(',') == std::string::npos,
            "{}: '{}' is not a sweep name (1-64 letters, digits, _ - .; it names the Slurm job and files)",
            f.where("name"), spec.name);

  MKV_CHECK(!(f.has("model") && f.has("models")), "{}: give \"model\" or \"models\", not both", f.where("models"));
  const std::string models_key = f.has("model") ? "model" : "models";
  MKV_CHECK(f.has(models_key), "{}: required (GGUF files, e.g. [\"models/stories-needle-2k.gguf\"])", f.where("models"));
  const std::vector<std::string> models = *f.strings(models_key, true);
  MKV_CHECK(!models.empty(), "{}: give at least one model", f.where(models_key));
  std::set<std::string> stems;
  for (std::size_t i = 0; i < models.size(); ++i) {
    const std::string where = fmt::format("{}[{}]", f.where(models_key), i);
    spec.models.push_back(read_model(existing(base, models[i], where), where));
    MKV_CHECK(stems.insert(spec.models.back().stem).second,
              "{}: another model is also named '{}' (models are told apart by file name)", where,
              spec.models.back().stem);
  }

  spec.presses = parse_presses(f);
  const bool all_full = std::all_of(spec.presses.begin(), spec.presses.end(), [](const PressConfig& p) { return p.is_full(); });
  if (auto budgets = f.integers("budgets", 1, Budget::kMaxTokens)) {  // the one budget range (selection.h)
    std::set<int64_t> seen;
    for (std::size_t i = 0; i < budgets->size(); ++i) {
      MKV_CHECK(seen.insert((*budgets)[i]).second, "{}[{}]: budget {} is listed twice", f.where("budgets"), i, (*budgets)[i]);
      spec.budgets.push_back(static_cast<int32_t>((*budgets)[i]));
    }
  }
  MKV_CHECK(all_full || !spec.budgets.empty(), "{}: required (tokens per KV head, e.g. [64, 128]) for the presses other than full",
            f.where("budgets"));

  spec.shards = static_cast<int>(f.integer("shards", 1, kMaxShards).value_or(1));
  spec.threads = static_cast<int>(f.integer("threads", 1, 1024).value_or(1));
  spec.protocol = one_of(f, "protocol", "snapkv", {"snapkv", "kvpress"});
  spec.chat_template = one_of(f, "chat_template", "auto", {"auto", "none", "llama3", "chatml", "qwen3"});
  spec.cache_type = one_of(f, "cache_type", "f32", {"f32", "f16"});
  spec.ctx_size = static_cast<int>(f.integer("ctx_size", 0, kMaxTokens).value_or(0));
  spec.ubatch_size = static_cast<int>(f.integer("ubatch_size", 1, 65536).value_or(512));
  spec.compress_chunks = f.boolean("compress_chunks").value_or(false);

  MKV_CHECK(f.has("output"), "{}: required (the folder the sweep's results go to)", f.where("output"));
  spec.output = resolve(base, *f.string("output"), f.where("output"));

  const json* bench = f.object("benchmark");
  MKV_CHECK(bench, "{}: required ({{\"name\": \"ruler\", ...}} or {{\"name\": \"longbench\", ...}})", f.where("benchmark"));
  JsonFields b(*bench, name_of_file, "benchmark.");
  MKV_CHECK(b.has("name"), "{}: required (ruler | longbench)", b.where("name"));
  spec.benchmark = one_of(b, "name", "", {"ruler", "longbench"});
  if (spec.benchmark == "ruler") parse_ruler(b, base, defaults, spec.ruler);
  else parse_longbench(b, base, spec.longbench);
  b.finish();

  if (spec.benchmark == "ruler" && spec.ruler.data.empty()) {
    for (std::size_t i = 0; i < spec.models.size(); ++i) {
      const ModelFacts& m = spec.models[i];
      const int context = spec.ctx_size > 0 ? spec.ctx_size : m.context_length;
      MKV_CHECK(spec.ruler.length <= context,
                "{}: {} tokens is above the context of {}[{}] ('{}', {} tokens); lower it or set ctx_size",
                b.where("length"), spec.ruler.length, models_key, i, m.stem, context);
    }
    MKV_CHECK(spec.shards <= spec.ruler.samples,
              "{}: {} shards for {} samples per task would leave shards without samples", f.where("shards"), spec.shards,
              spec.ruler.samples);
  }
  if (spec.benchmark == "ruler" && !spec.ruler.data.empty())
    MKV_CHECK(spec.shards <= spec.ruler.fewest_samples,
              "{}: {} shards for a data file of {} samples would leave shards without samples", f.where("shards"),
              spec.shards, spec.ruler.fewest_samples);

  SlurmOptions& slurm = spec.slurm;
  if (const json* s = f.object("slurm")) {
    JsonFields sf(*s, name_of_file, "slurm.");
    parse_slurm(sf, base, spec.output, spec.threads, slurm);
    sf.finish();
  } else {
    slurm.cpus_per_task = spec.threads;
    slurm.logs = spec.output / "logs";
    check_logs_folder(slurm.logs, f.where("output"));
  }
  f.finish();

  const auto compressing = static_cast<std::size_t>(
      std::count_if(spec.presses.begin(), spec.presses.end(), [](const PressConfig& p) { return !p.is_full(); }));
  const std::size_t settings = (spec.presses.size() - compressing) + compressing * spec.budgets.size();
  const auto tasks = static_cast<int64_t>(spec.models.size() * settings) * spec.shards;
  MKV_CHECK(tasks <= kMaxTasks, "{}: {} tasks (models × presses × budgets × shards) is above the limit of {}",
            name_of_file, tasks, kMaxTasks);
  return spec;
}

SweepSpec load_sweep_file(const fs::path& file, const SweepDefaults& defaults) {
  MKV_CHECK(!file.empty(), "no sweep file given");
  return parse_sweep(read_text_file(file, "sweep file"), file, defaults);
}

}  // namespace mkv::sweep
