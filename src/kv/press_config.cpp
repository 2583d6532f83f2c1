// Parsing a press spec into its typed value (PressConfig), against the press catalogue: the one
// place where spec text is read and parameters are validated.
#include "kv/press_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "kv/presses/scorer_press.h"

namespace mkv {

namespace {

bool is_budget_key(std::string_view key) { return key == "budget" || key == "ratio"; }

std::string keys_of(const PressDef& def) {
  std::string keys;
  for (const PressParam& p : def.params) keys += keys.empty() ? p.key : ", " + p.key;
  return keys.empty() ? "none" : keys;
}

// The number of an Int or Real parameter's text; MkvError naming the press and key otherwise.
double number_of(const PressDef& def, const PressParam& p, std::string_view text) {
  double value = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  MKV_CHECK(ec == std::errc() && end == text.data() + text.size() && std::isfinite(value) &&
                (p.kind == ParamKind::Real || value == std::floor(value)),
            "press '{}': {}={} is not {}", def.name, p.key, text, p.kind == ParamKind::Int ? "an integer" : "a number");
  MKV_CHECK(value >= p.lo && value <= p.hi, "press '{}': {}={} is out of range [{}, {}]", def.name, p.key, text, p.lo,
            p.hi);
  MKV_CHECK(!p.odd || std::fmod(value, 2.0) != 0.0, "press '{}': {}={} must be odd", def.name, p.key, text);
  return value;
}

}  // namespace

std::optional<Budget> PressConfig::budget_from_flags(std::optional<int64_t> kv_budget,
                                                     std::optional<double> compression_ratio, BudgetNames names) {
  MKV_CHECK(!(kv_budget && compression_ratio), "give {} or {}, not both", names.tokens, names.ratio);
  if (kv_budget) {
    MKV_CHECK(*kv_budget >= 1 && *kv_budget <= Budget::kMaxTokens,
              "{} must be in [1, {}] tokens per KV head, got {}", names.tokens, Budget::kMaxTokens, *kv_budget);
    return Budget{int32_t(*kv_budget), 0.0};
  }
  if (compression_ratio) {
    MKV_CHECK(std::isfinite(*compression_ratio) && *compression_ratio >= 0.0 && *compression_ratio <= Budget::kMaxRatio,
              "{} must be in [0, 1) (the fraction of tokens removed), got {}", names.ratio, *compression_ratio);
    return Budget{0, *compression_ratio};
  }
  return std::nullopt;
}

namespace {

// A Budget value given to parse() or with_budget(), checked by the one budget rule.
void check_budget(const Budget& b) {
  MKV_CHECK(b.tokens == 0 || b.ratio == 0.0,
            "a budget is L >= 1 tokens per KV head or a compression ratio in [0, 1), got {} tokens / ratio {}", b.tokens,
            b.ratio);
  if (b.tokens != 0) PressConfig::budget_from_flags(b.tokens, std::nullopt, {"budget", "ratio"});
  else PressConfig::budget_from_flags(std::nullopt, b.ratio, {"budget", "ratio"});
}

}  // namespace

PressConfig::PressConfig() : def_(&find_press("full")) {}

std::size_t PressConfig::index(std::string_view key) const {
  for (std::size_t i = 0; i < def_->params.size(); ++i)
    if (def_->params[i].key == key) return i;
  fail("press '{}': unknown parameter '{}' (parameters: {})", def_->name, key, keys_of(*def_));
}

bool PressConfig::has(std::string_view key) const { return find_param(*def_, key) != nullptr; }

void PressConfig::default_to(std::string_view key, std::string_view text) {
  const std::size_t i = index(key);
  if (values_[i].given) return;
  const PressParam& p = def_->params[i];
  Value& v = values_[i];
  v = Value{};
  switch (p.kind) {
    case ParamKind::Choice: v.choice = std::string(text); break;
    case ParamKind::Bool: v.number = (text == "1" || text == "true") ? 1.0 : 0.0; break;
    case ParamKind::Int:
    case ParamKind::Real:
      if (p.auto_ok && text == "auto") v.is_auto = true;
      else v.number = number_of(*def_, p, text);
      break;
  }
}

void PressConfig::resolve() {
  const PressDef& def = *def_;
  values_.assign(def.params.size(), Value{});
  for (std::size_t i = 0; i < def.params.size(); ++i)
    if (!def.params[i].fallback.empty()) default_to(def.params[i].key, def.params[i].fallback);
  for (const auto& [key, text] : given_) {
    const std::size_t i = index(key);
    const PressParam& p = def.params[i];
    if (p.auto_ok && text != "auto")  // "auto" or digits (the range is checked below)
      MKV_CHECK(!text.empty() && text.find_first_not_of("0123456789") == std::string::npos,
                "press '{}': {}={} is not {} or auto", def.name, key, text, p.odd ? "an odd integer" : "an integer >= 1");
    if (p.kind == ParamKind::Choice && std::find(p.choices.begin(), p.choices.end(), text) == p.choices.end()) {
      MKV_CHECK(!(key == "scorer" && text == "momentkv"),
                "press '{}': scorer=momentkv is the press momentkv:alloc=adaptive (one name per method)", def.name);
      std::string options;
      for (const std::string& c : p.choices) options += options.empty() ? c : "|" + c;
      fail("press '{}': {}={} is not one of {}", def.name, key, text, options);
    }
    MKV_CHECK(p.kind != ParamKind::Bool || text == "0" || text == "1" || text == "true" || text == "false",
              "press '{}': {}={} is not a boolean (0|1)", def.name, key, text);
    default_to(key, text);
    values_[i].given = true;
  }
  if (def.resolve) def.resolve(*this);
}

PressConfig PressConfig::parse(std::string_view spec, std::optional<Budget> budget) {
  const std::size_t colon = spec.find(':');
  PressConfig config;
  config.def_ = &find_press(spec.substr(0, colon));
  const PressDef& def = *config.def_;
  std::optional<Budget> in_spec;  // budget= or ratio=
  std::vector<std::string> seen;  // keys given, for "given twice"
  if (colon != std::string_view::npos) {
    std::string_view rest = spec.substr(colon + 1);
    MKV_CHECK(!rest.empty(), "press '{}': nothing after ':' (give key=value pairs or leave the ':' out)", def.name);
    while (true) {
      const std::size_t comma = rest.find(',');
      const std::string_view item = rest.substr(0, comma);
      const std::size_t eq = item.find('=');
      MKV_CHECK(eq != std::string_view::npos && eq > 0, "press '{}': '{}' is not key=value", def.name, item);
      const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
      const PressParam& p = def.params[config.index(key)];
      MKV_CHECK(std::find(seen.begin(), seen.end(), key) == seen.end(), "press '{}': parameter '{}' given twice",
                def.name, key);
      seen.emplace_back(key);
      if (is_budget_key(key)) {
        MKV_CHECK(!in_spec, "press '{}': give budget= or ratio=, not both", def.name);
        const double number = number_of(def, p, value);
        in_spec = key == "budget" ? Budget{int32_t(number), 0.0} : Budget{0, number};
      } else {
        config.given_.emplace_back(key, value);
      }
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  config.budget_ = in_spec;
  if (budget) {
    MKV_CHECK(!config.is_full(),
              "press 'full' keeps every token: --kv-budget / --compression-ratio need a compressing --press");
    MKV_CHECK(!config.budget_, "press '{}': the budget is given twice (budget=/ratio= in the spec and "
              "--kv-budget/--compression-ratio); give one", def.name);
    check_budget(*budget);
    config.budget_ = budget;
  }
  config.resolve();
  return config;
}

PressConfig PressConfig::with_budget(const Budget& budget) const {
  MKV_CHECK(!is_full(), "press 'full' keeps every token and takes no budget");
  MKV_CHECK(!budget_, "press '{}' already has a budget ({}); give budgets in one place", name(),
            budget_->tokens > 0 ? fmt::format("budget={}", budget_->tokens) : fmt::format("ratio={}", budget_->ratio));
  check_budget(budget);
  PressConfig copy = *this;
  copy.budget_ = budget;
  return copy;
}

PressConfig PressConfig::without_budget() const {
  PressConfig copy = *this;
  copy.budget_.reset();
  return copy;
}

PressConfig PressConfig::with_param(std::string_view key, std::string_view value) const {
  MKV_CHECK(!is_budget_key(key), "press '{}': set the budget with with_budget", name());
  index(key);  // an unknown key is an error
  PressConfig copy = *this;
  std::erase_if(copy.given_, [&](const auto& p) { return p.first == key; });
  copy.given_.emplace_back(key, value);
  copy.resolve();
  return copy;
}

bool PressConfig::given(std::string_view key) const {
  if (key == "budget") return budget_ && budget_->tokens > 0;
  if (key == "ratio") return budget_ && budget_->tokens == 0;
  return has(key) && values_[index(key)].given;
}

int64_t PressConfig::integer(std::string_view key) const {
  const std::size_t i = index(key);
  MKV_ASSERT(def_->params[i].kind == ParamKind::Int && !values_[i].is_auto);
  return int64_t(values_[i].number);
}

double PressConfig::real(std::string_view key) const {
  const std::size_t i = index(key);
  MKV_ASSERT(def_->params[i].kind == ParamKind::Real);
  return values_[i].number;
}

bool PressConfig::flag(std::string_view key) const {
  const std::size_t i = index(key);
  MKV_ASSERT(def_->params[i].kind == ParamKind::Bool);
  return values_[i].number != 0.0;
}

const std::string& PressConfig::choice(std::string_view key) const {
  const std::size_t i = index(key);
  MKV_ASSERT(def_->params[i].kind == ParamKind::Choice);
  return values_[i].choice;
}

bool PressConfig::is_auto(std::string_view key) const { return values_[index(key)].is_auto; }

int PressConfig::window() const {
  if (!has("window")) return 0;
  return is_auto("window") ? Protection::kAutoWindow : int(integer("window"));
}

Allocation PressConfig::allocation() const {
  if (!has("alloc")) return def_->allocation;
  const std::optional<Allocation> a = allocation_from_name(choice("alloc"));
  MKV_ASSERT(a.has_value());  // the catalogue's alloc choices are allocation names
  return *a;
}

std::string PressConfig::text(std::size_t i) const {
  const PressParam& p = def_->params[i];
  const Value& v = values_[i];
  switch (p.kind) {
    case ParamKind::Choice: return v.choice;
    case ParamKind::Bool: return v.number != 0.0 ? "1" : "0";
    case ParamKind::Int: return v.is_auto ? "auto" : fmt::format("{}", int64_t(v.number));
    case ParamKind::Real: return fmt::format("{}", v.number);
  }
  return "";
}

std::string PressConfig::spec() const {
  std::string out = name();
  char sep = ':';
  for (std::size_t i = 0; i < def_->params.size(); ++i) {
    const std::string& key = def_->params[i].key;
    std::string value;
    if (key == "budget") {
      if (!budget_ || budget_->tokens == 0) continue;
      value = fmt::format("{}", budget_->tokens);
    } else if (key == "ratio") {
      if (!budget_ || budget_->tokens != 0) continue;
      value = fmt::format("{}", budget_->ratio);
    } else {
      value = text(i);
    }
    out += sep + key + "=" + value;
    sep = ',';
  }
  return out;
}

std::string PressConfig::as_given() const {
  std::string out = name();
  char sep = ':';
  for (const auto& [key, value] : given_) {
    out += sep + key + "=" + value;
    sep = ',';
  }
  return out;
}

void PressConfig::require_budget() const {
  MKV_CHECK(is_full() || budget_, "press '{}' needs a budget: give --kv-budget L (tokens per KV head) or "
            "--compression-ratio r, or budget=/ratio= in the spec", name());
}

void PressConfig::require_budget_from_list(std::string_view list) const {
  MKV_CHECK(!budget_, "press '{}' carries a budget: give budgets with {}, not in the spec", as_given(), list);
}

std::unique_ptr<Press> PressConfig::make() const {
  require_budget();
  std::unique_ptr<Press> press = def_->make ? def_->make(*this) : make_scorer_press(*this);
  press->set_spec(spec());
  return press;
}

std::unique_ptr<Press> PressConfig::make_or_null() const { return is_full() ? nullptr : make(); }

int PressConfig::queries_read(int32_t n_past) const {
  const QueryUse use = def_->queries ? def_->queries(*this) : QueryUse::None;
  if (use == QueryUse::None) return 0;
  if (use == QueryUse::All) return -1;
  if (!has("window")) return 0;
  if (!is_auto("window")) return int(integer("window"));
  // Without a budget the press is refused later (make); until then, the most auto may read.
  return budget_ ? window_read(Protection::kAutoWindow, *budget_, n_past, has_pyramid_layers(allocation()))
                 : window_capacity(Protection::kAutoWindow);
}

bool PressConfig::operator==(const PressConfig& other) const {
  return def_ == other.def_ && values_ == other.values_ && budget_ == other.budget_;
}

}  // namespace mkv
