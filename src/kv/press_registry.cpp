#include "kv/press_registry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "core/error.h"
#include "kv/presses/adakv.h"
#include "kv/presses/full.h"
#include "kv/presses/h2o.h"
#include "kv/presses/momentkv.h"
#include "kv/presses/pyramidkv.h"
#include "kv/presses/snapkv.h"
#include "kv/presses/streaming_llm.h"

namespace mkv {

namespace {

enum class Kind { Int, Real, Bool, Choice };

// One parameter: its kind, default, range [lo, hi] (Int/Real) or choices, and help.
struct Param {
  const char* key;
  Kind kind;
  const char* fallback;  // default; "" = unset (budget/ratio from the flags)
  double lo, hi;
  std::vector<std::string> choices;
  const char* help;
};

const Param kBudget{"budget", Kind::Int, "", 1, 1e9, {}, "tokens kept per KV head, window included (default: --kv-budget)"};
constexpr double kMaxRatio = 0.999999;  // ratios are in [0, 1): at most this
const Param kRatio{"ratio", Kind::Real, "", 0, kMaxRatio, {}, "fraction of tokens removed (default: --compression-ratio)"};
const Param kSlack{"decode_slack", Kind::Int, "-1", -1, 1e9, {}, "evict again while decoding when a head exceeds budget + slack; -1 = never"};
const Param kSinks{"sinks", Kind::Int, "4", 0, 1e6, {}, "first tokens always kept"};
// "auto" or an integer >= 1 (Values::check); auto = tied to the budget (observation_window).
const Param kWindow{"window", Kind::Int, "auto", 1, 1e6, {},
                    "observation window (last queries scored, recent rows kept), or auto: L/64 in [1, 32]"};
// "auto" or an odd integer (Values::check); auto = tied to the budget (pooling_kernel).
const Param kKernel{"kernel", Kind::Int, "auto", 1, 63, {}, "max-pool kernel over the scores (odd), or auto: L/3 made odd, in [7, 31]"};
const Param kBeta{"beta", Kind::Real, "20", 1, 1e6, {}, "PyramidKV: smallest layer budget = (L − window)/beta"};
const Param kSafeguard{"safeguard", Kind::Real, "0.2", 0, 1, {}, "Ada-KV: share of each head's budget it keeps regardless of scores"};
// MomentKV's scores with Ada-KV's allocation are one method with one name: momentkv:alloc=adaptive.
const Param kScorer{"scorer", Kind::Choice, "snapkv", 0, 0, {"snapkv", "h2o"},
                    "scores the adaptive allocation uses (MomentKV with it: momentkv:alloc=adaptive)"};
const Param kRounds{"rounds", Kind::Int, "1", 1, 64, {}, "eviction rounds, residuals recomputed each round (against the moments the earlier rounds built)"};
// The default "global" was chosen on the dev split (docs/results/defaults_dev.md, "Allocation across
// layers"): lower KL at every budget and higher retrieval at 48 and 64 than "adaptive".
const Param kAlloc{"alloc", Kind::Choice, "global", 0, 0, {"uniform", "adaptive", "pyramid", "pyramid_adaptive", "global"},
                   "budget allocation: global = Ada-KV's rule over every head of every layer"};
// Ada-KV's own two: per-head budgets in uniform layers (Ada-SnapKV), or in PyramidKV's layers
// (Ada-Pyramid, arXiv 2407.11550 §5).
const Param kAdaAlloc{"alloc", Kind::Choice, "adaptive", 0, 0, {"adaptive", "pyramid_adaptive", "global"},
                      "per-head budgets inside each layer, in PyramidKV's layer budgets, or over all layers"};
// The default "means" (2 groups) was chosen on the dev split: KL as low as 16 groups at equal tokens
// for an eighth of the statistics, so it also wins at equal bytes (docs/results/defaults_dev.md).
const Param kVariant{"variant", Kind::Choice, "means", 0, 0, {"paper", "grouped", "means"},
                     "means: 2 groups of key/value means per head; paper: one unclipped summary with co-moment "
                     "(arXiv 2606.01563); grouped: groups=16,clip=1 unless given"};
const Param kNcOff{"nc", Kind::Bool, "0", 0, 1, {}, "normalisation-corrected attention from the evicted tokens' moments"};
const Param kNcOn{"nc", Kind::Bool, "1", 0, 1, {}, "normalisation-corrected attention from the evicted tokens' moments"};
const Param kGroups{"groups", Kind::Int, "1", 1, 64, {}, "moment groups per KV head (virtual slots; k-means on evicted keys)"};
const Param kClip{"clip", Kind::Bool, "0", 0, 1, {}, "trust region: |τCq| at most the RMS spread of the evicted values"};
const Param kMeansOnly{"means_only", Kind::Bool, "0", 0, 1, {}, "moments store means only (no co-moment)"};

struct PressDef {
  const char* name;
  const char* summary;
  std::vector<Param> params;
};

std::vector<Param> with_common(std::vector<Param> own, const Param& nc) {
  for (const Param& p : {kBudget, kRatio, kSlack, nc, kGroups, kClip, kMeansOnly}) own.push_back(p);
  return own;
}

const std::vector<PressDef>& definitions() {
  static const std::vector<PressDef> defs = {
      {"full", "no eviction (reference)", {}},
      {"streaming_llm", "StreamingLLM: sinks + most recent tokens", with_common({kSinks}, kNcOff)},
      {"h2o", "H2O: accumulated attention column sums", with_common({kWindow, kSinks}, kNcOff)},
      {"snapkv", "SnapKV: observation-window attention, max-pooled", with_common({kWindow, kKernel, kSinks}, kNcOff)},
      {"pyramidkv", "PyramidKV: SnapKV scores, budgets decreasing with depth",
       with_common({kWindow, kKernel, kSinks, kBeta}, kNcOff)},
      {"adakv", "Ada-KV: adaptive per-head budgets around any scorer",
       with_common({kScorer, kSafeguard, kWindow, kKernel, kSinks, kRounds, kAdaAlloc, kBeta}, kNcOff)},
      {"momentkv", "MomentKV: moment-informed eviction (alpha·|residual|) + NC",
       with_common({kWindow, kKernel, kSinks, kRounds, kAlloc, kSafeguard, kBeta, kVariant}, kNcOn)},
  };
  return defs;
}

const PressDef& find_press(std::string_view name) {
  std::string known;
  for (const PressDef& d : definitions()) {
    if (d.name == name) return d;
    known += known.empty() ? d.name : std::string(", ") + d.name;
  }
  fail("unknown press '{}' (known: {})", name, known);
}

// Parsed values of one spec: key → (value text, given explicitly).
class Values {
 public:
  Values(const PressDef& def) : def_(def) {
    for (const Param& p : def.params) values_[p.key] = {p.fallback, false};
  }
  void set(std::string_view key, std::string_view text) {
    const Param* param = nullptr;
    for (const Param& p : def_.params) if (p.key == key) param = &p;
    if (!param) {
      std::string keys;
      for (const Param& p : def_.params) keys += keys.empty() ? p.key : std::string(", ") + p.key;
      fail("press '{}': unknown parameter '{}' (parameters: {})", def_.name, key, keys.empty() ? "none" : keys);
    }
    auto& slot = values_[param->key];
    MKV_CHECK(!slot.second, "press '{}': parameter '{}' given twice", def_.name, key);
    check(*param, text);
    slot = {std::string(text), true};
  }
  // Keys the press does not have read as unset ("", not given).
  bool given(const char* key) const { return lookup(key).second; }
  const std::string& text(const char* key) const { return lookup(key).first; }
  double real(const char* key) const { return std::stod(text(key)); }
  int integer(const char* key) const { return int(real(key)); }
  bool flag(const char* key) const { return text(key) == "1" || text(key) == "true"; }
  void set_default(const char* key, const char* text) { if (!given(key)) values_[key].first = text; }
  std::string canonical() const {
    std::string out = def_.name;
    char sep = ':';
    for (const Param& p : def_.params) {
      if (text(p.key).empty()) continue;
      out += sep + std::string(p.key) + "=" + text(p.key);
      sep = ',';
    }
    return out;
  }

 private:
  const std::pair<std::string, bool>& lookup(const char* key) const {
    static const std::pair<std::string, bool> unset{"", false};
    const auto it = values_.find(key);
    return it == values_.end() ? unset : it->second;
  }
  void check(const Param& p, std::string_view text) const {
    const bool kernel = std::string_view(p.key) == kKernel.key;
    if (kernel || std::string_view(p.key) == kWindow.key) {  // "auto" or digits (range checked below)
      if (text == "auto") return;
      MKV_CHECK(!text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos,
                "press '{}': {}={} is not {} or auto", def_.name, p.key, text,
                kernel ? "an odd integer" : "an integer >= 1");
    }
    if (p.kind == Kind::Choice) {
      for (const std::string& c : p.choices) if (c == text) return;
      MKV_CHECK(!(std::string_view(p.key) == "scorer" && text == "momentkv"),
                "press '{}': scorer=momentkv is the press momentkv:alloc=adaptive (one name per method)", def_.name);
      std::string options;
      for (const std::string& c : p.choices) options += options.empty() ? c : "|" + c;
      fail("press '{}': {}={} is not one of {}", def_.name, p.key, text, options);
    }
    if (p.kind == Kind::Bool) {
      MKV_CHECK(text == "0" || text == "1" || text == "true" || text == "false",
                "press '{}': {}={} is not a boolean (0|1)", def_.name, p.key, text);
      return;
    }
    double value = 0.0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    MKV_CHECK(ec == std::errc() && end == text.data() + text.size() && std::isfinite(value) &&
                  (p.kind == Kind::Real || value == std::floor(value)),
              "press '{}': {}={} is not {}", def_.name, p.key, text, p.kind == Kind::Int ? "an integer" : "a number");
    MKV_CHECK(value >= p.lo && value <= p.hi, "press '{}': {}={} is out of range [{}, {}]", def_.name,
              p.key, text, p.lo, p.hi);
  }

  const PressDef& def_;
  std::map<std::string, std::pair<std::string, bool>, std::less<>> values_;
};

// The pooling kernel of a validated spec: an odd integer, or SnapKVScorer::kAutoKernel.
int kernel_of(const Values& v) {
  return v.text("kernel") == "auto" ? SnapKVScorer::kAutoKernel : v.integer("kernel");
}

// The window of a validated spec: an integer >= 1, Protection::kAutoWindow, or 0 for a press
// without one (StreamingLLM).
int window_of(const Values& v) {
  if (v.text("window").empty()) return 0;
  return v.text("window") == "auto" ? Protection::kAutoWindow : v.integer("window");
}

std::unique_ptr<Scorer> make_scorer(std::string_view name, const Values& v) {
  if (name == "streaming_llm") return std::make_unique<RecencyScorer>();
  if (name == "h2o") return std::make_unique<H2OScorer>();
  if (name == "snapkv") return std::make_unique<SnapKVScorer>(window_of(v), kernel_of(v));
  MKV_ASSERT(name == "momentkv");
  return std::make_unique<MomentScorer>(window_of(v), kernel_of(v));
}

ScorerPressOptions common_options(const PressDef& def, Values& v, const Budget& budget) {
  ScorerPressOptions o;
  o.budget = budget;
  o.protection.sinks = v.integer("sinks");
  o.protection.window = window_of(v);
  o.decode_slack = v.integer("decode_slack");
  if (v.text("variant") == "grouped") {
    v.set_default("groups", "16");
    v.set_default("clip", "1");
  } else if (v.text("variant") == "means") {
    v.set_default("groups", "2");
    v.set_default("means_only", "1");
  } else if (v.text("variant") == "paper") {
    MKV_CHECK(!v.flag("clip") && v.integer("groups") == 1 && !v.flag("means_only"),
              "press '{}': variant=paper fixes groups=1, clip=0, means_only=0 (use variant=grouped)", def.name);
  }
  o.nc = v.flag("nc");
  o.moments.groups = v.integer("groups");
  o.moments.clip = v.flag("clip");
  o.moments.comoment = !v.flag("means_only");
  if (v.given("kernel") && v.text("kernel") != "auto")
    MKV_CHECK(v.integer("kernel") % 2 == 1, "press '{}': kernel={} must be odd", def.name, v.text("kernel"));
  return o;
}

// The press of a validated parameter set with `budget` (unused by "full").
std::unique_ptr<Press> build_press(const PressDef& def, Values& v, const Budget& budget) {
  const std::string name = def.name;
  if (name == "full") return std::make_unique<FullPress>();
  ScorerPressOptions o = common_options(def, v, budget);
  if (name == "pyramidkv") {
    o.beta = v.real("beta");
    return make_pyramidkv(window_of(v), kernel_of(v), o);
  }
  if (name == "adakv") {
    o.safeguard = v.real("safeguard");
    o.rounds = v.integer("rounds");
    o.beta = v.real("beta");
    o.allocation = *allocation_from_name(v.text("alloc"));  // one of kAdaAlloc's choices
    return make_adakv(make_scorer(v.text("scorer"), v), o);
  }
  if (name == "momentkv") {
    o.rounds = v.integer("rounds");
    o.safeguard = v.real("safeguard");
    o.beta = v.real("beta");
    o.allocation = *allocation_from_name(v.text("alloc"));  // one of kAlloc's choices
  }
  return std::make_unique<ScorerPress>(make_scorer(name, v), o);
}

void check_budget(const Budget& b) {
  MKV_CHECK((b.tokens >= 1 && b.tokens <= 1'000'000'000 && b.ratio == 0.0) || (b.tokens == 0 && b.ratio >= 0.0 && b.ratio <= kMaxRatio),
            "a budget is L >= 1 tokens per KV head or a compression ratio in [0, 1), got {} tokens / ratio {}",
            b.tokens, b.ratio);
}

std::string budget_key(const Budget& b) { return b.tokens > 0 ? "budget" : "ratio"; }
std::string budget_text(const Budget& b) { return b.tokens > 0 ? fmt::format("{}", b.tokens) : fmt::format("{}", b.ratio); }

// A PressConfig's explicit parameters, and its budget when it has one, as Values of `def`.
Values values_of(const PressDef& def, const std::vector<std::pair<std::string, std::string>>& params,
                 const std::optional<Budget>& budget) {
  Values v(def);
  for (const auto& [key, value] : params) v.set(key, value);
  if (budget) v.set(budget_key(*budget), budget_text(*budget));
  return v;
}

}  // namespace

const std::vector<PressInfo>& press_catalog() {
  static const std::vector<PressInfo> catalog = [] {
    std::vector<PressInfo> out;
    for (const PressDef& d : definitions()) {
      PressInfo info{d.name, d.summary, {}};
      for (const Param& p : d.params) info.params.push_back({p.key, p.fallback, p.help});
      out.push_back(std::move(info));
    }
    return out;
  }();
  return catalog;
}

std::optional<ParamRange> param_range(std::string_view key) {
  for (const PressDef& d : definitions())
    for (const Param& p : d.params)
      if (p.key == key && (p.kind == Kind::Int || p.kind == Kind::Real)) return ParamRange{p.lo, p.hi};
  return std::nullopt;
}

std::vector<PressConfig> compressing_presses() {
  std::vector<PressConfig> out;
  for (const PressDef& d : definitions())
    if (std::string_view(d.name) != "full") out.push_back(PressConfig::parse(d.name));
  return out;
}

std::string press_help() {
  std::string out = "Presses (--press name:key=value,...):\n";
  for (const PressInfo& info : press_catalog()) {
    out += fmt::format("  {:<14} {}\n", info.name, info.summary);
    for (const PressParamInfo& p : info.params)
      out += fmt::format("      {:<13} {:<8} {}\n", p.key, p.default_value.empty() ? "-" : p.default_value, p.help);
  }
  return out;
}

PressConfig::PressConfig() = default;

std::optional<Budget> PressConfig::budget_from_flags(std::optional<int64_t> kv_budget,
                                                     std::optional<double> compression_ratio, BudgetNames names) {
  MKV_CHECK(!(kv_budget && compression_ratio), "give {} or {}, not both", names.tokens, names.ratio);
  if (kv_budget) {
    MKV_CHECK(*kv_budget >= 1 && *kv_budget <= 1'000'000'000,
              "{} must be in [1, 1000000000] tokens per KV head, got {}", names.tokens, *kv_budget);
    return Budget{int32_t(*kv_budget), 0.0};
  }
  if (compression_ratio) {
    MKV_CHECK(std::isfinite(*compression_ratio) && *compression_ratio >= 0.0 && *compression_ratio <= kMaxRatio,
              "{} must be in [0, 1) (the fraction of tokens removed), got {}", names.ratio, *compression_ratio);
    return Budget{0, *compression_ratio};
  }
  return std::nullopt;
}

PressConfig PressConfig::parse(std::string_view spec, std::optional<Budget> budget) {
  const std::size_t colon = spec.find(':');
  const PressDef& def = find_press(spec.substr(0, colon));
  PressConfig config;
  config.name_ = def.name;
  Values v(def);
  if (colon != std::string_view::npos) {
    std::string_view rest = spec.substr(colon + 1);
    MKV_CHECK(!rest.empty(), "press '{}': nothing after ':' (give key=value pairs or leave the ':' out)", def.name);
    while (true) {
      const std::size_t comma = rest.find(',');
      const std::string_view item = rest.substr(0, comma);
      const std::size_t eq = item.find('=');
      MKV_CHECK(eq != std::string_view::npos && eq > 0, "press '{}': '{}' is not key=value", def.name, item);
      const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
      v.set(key, value);
      if (key != "budget" && key != "ratio") config.params_.emplace_back(key, value);
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  MKV_CHECK(!(v.given("budget") && v.given("ratio")), "press '{}': give budget= or ratio=, not both", def.name);
  if (v.given("budget")) config.budget_ = Budget{v.integer("budget"), 0.0};
  if (v.given("ratio")) config.budget_ = Budget{0, v.real("ratio")};
  if (budget) {
    MKV_CHECK(!config.is_full(),
              "press 'full' keeps every token: --kv-budget / --compression-ratio need a compressing --press");
    MKV_CHECK(!config.budget_, "press '{}': the budget is given twice (budget=/ratio= in the spec and "
              "--kv-budget/--compression-ratio); give one", def.name);
    check_budget(*budget);
    config.budget_ = budget;
  }
  build_press(def, v, Budget{1, 0.0});  // validates the combination (variant, kernel parity, ...)
  return config;
}

PressConfig PressConfig::with_budget(const Budget& budget) const {
  MKV_CHECK(!is_full(), "press 'full' keeps every token and takes no budget");
  MKV_CHECK(!budget_, "press '{}' already has a budget ({}={}); give budgets in one place", name_,
            budget_key(*budget_), budget_text(*budget_));
  check_budget(budget);
  PressConfig copy = *this;
  copy.budget_ = budget;
  return copy;
}

PressConfig PressConfig::with_param(std::string_view key, std::string_view value) const {
  MKV_CHECK(key != "budget" && key != "ratio", "press '{}': set the budget with with_budget", name_);
  PressConfig copy = *this;
  std::erase_if(copy.params_, [&](const auto& p) { return p.first == key; });
  copy.params_.emplace_back(key, value);
  const PressDef& def = find_press(name_);
  Values v = values_of(def, copy.params_, std::nullopt);
  build_press(def, v, Budget{1, 0.0});  // validates the combination
  return copy;
}

bool PressConfig::given(std::string_view key) const {
  if (key == "budget") return budget_ && budget_->tokens > 0;
  if (key == "ratio") return budget_ && budget_->tokens == 0;
  return std::any_of(params_.begin(), params_.end(), [&](const auto& p) { return p.first == key; });
}

std::string PressConfig::as_given() const {
  std::string out = name_;
  char sep = ':';
  for (const auto& [key, value] : params_) {
    out += sep + key + "=" + value;
    sep = ',';
  }
  return out;
}

std::string PressConfig::spec() const {
  const PressDef& def = find_press(name_);
  Values v = values_of(def, params_, budget_);
  build_press(def, v, budget_.value_or(Budget{1, 0.0}));  // fills the variant's defaults
  return v.canonical();
}

void PressConfig::require_budget() const {
  MKV_CHECK(is_full() || budget_, "press '{}' needs a budget: give --kv-budget L (tokens per KV head) or "
            "--compression-ratio r, or budget=/ratio= in the spec", name_);
}

std::unique_ptr<Press> PressConfig::make() const {
  require_budget();
  const PressDef& def = find_press(name_);
  Values v = values_of(def, params_, budget_);
  std::unique_ptr<Press> press = build_press(def, v, budget_.value_or(Budget{}));
  press->set_spec(v.canonical());  // with the variant's defaults build_press filled in
  return press;
}

}  // namespace mkv
