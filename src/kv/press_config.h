// PressConfig: a press, its typed parameter values and its budget, as one value validated once,
// when it is parsed (a spec string "name:key=value,..." plus --kv-budget / --compression-ratio,
// against the press catalogue, press_catalog.h). It is then carried by value to whatever builds
// sessions: generate, kl, fidelity, eval, bench, serve, Python. Nothing downstream parses a spec
// string again: presses are built from the typed values (make), and copies with another budget or
// parameter (with_budget, without_budget, with_param) are validated by the same one function.
//
// Budget rules (docs/METHODS.md §6): a compressing press needs exactly one budget, either
// L ≥ 1 tokens per KV head or a compression ratio r in [0, 1), given in the spec (budget=,
// ratio=) or by the flags, not both; "full" takes none. spec() is canonical (every parameter
// spelled out, the budget included) and round-trips: parse(c.spec()) == c.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kv/press.h"
#include "kv/press_catalog.h"
#include "kv/selection.h"

namespace mkv {

// How budget errors name the two budget inputs: the CLI's flags unless told otherwise.
struct BudgetNames {
  std::string_view tokens = "--kv-budget";
  std::string_view ratio = "--compression-ratio";
};

class PressConfig {
 public:
  // The full cache (no press).
  PressConfig();

  // Parses and validates `spec`; `budget` (from flags) applies when given. Throws MkvError naming
  // the press and the key for an unknown press or parameter, a malformed or out-of-range value,
  // a budget given twice (spec and flags, or budget= and ratio=), or a budget on "full".
  static PressConfig parse(std::string_view spec, std::optional<Budget> budget = std::nullopt);

  // The budget flags of a command (--kv-budget L, --compression-ratio r; nullopt = not given)
  // as a Budget, validated: L ≥ 1, r in [0, 1), not both. nullopt when neither was given.
  // Messages name the two inputs as `names` says (the server's request fields, for instance).
  // The one budget rule: spec values and with_budget are checked by it too.
  static std::optional<Budget> budget_from_flags(std::optional<int64_t> kv_budget,
                                                 std::optional<double> compression_ratio, BudgetNames names = {});

  const std::string& name() const { return def_->name; }
  const PressDef& def() const { return *def_; }
  bool is_full() const { return def_->name == "full"; }
  // The budget, when one was given (always nullopt for "full").
  const std::optional<Budget>& budget() const { return budget_; }
  // A copy with this budget (validated); the press must not have one yet. "full": MkvError.
  PressConfig with_budget(const Budget& budget) const;
  // A copy without a budget (the press's parameters as they are).
  PressConfig without_budget() const;
  // A copy with key=value set (validated like a spec item); replaces an explicit value.
  PressConfig with_param(std::string_view key, std::string_view value) const;

  // Typed values (after the press's defaults and derived defaults). `key` must be a parameter of
  // the press (has(key)); budget and ratio are read through budget().
  bool has(std::string_view key) const;
  bool given(std::string_view key) const;  // given explicitly (in the spec or by with_param)
  int64_t integer(std::string_view key) const;  // an Int that is not auto
  double real(std::string_view key) const;
  bool flag(std::string_view key) const;
  const std::string& choice(std::string_view key) const;
  bool is_auto(std::string_view key) const;
  // The protection window: window= as Protection takes it (>= 1, or Protection::kAutoWindow), or 0
  // for a press without one (streaming_llm).
  int window() const;
  // The budget allocation: alloc= when the press has it, else its catalogue allocation.
  Allocation allocation() const;

  // For PressDef::resolve: `key` takes `text` unless it was given explicitly.
  void default_to(std::string_view key, std::string_view text);

  // Canonical spec: every parameter spelled out, the budget included.
  std::string spec() const;
  // The press as the user wrote it: its name and the explicit parameters, in the order given,
  // without the budget ("momentkv:variant=paper"); for labels and result records.
  std::string as_given() const;

  // MkvError unless the press can be built: "full", or a press with a budget.
  void require_budget() const;
  // MkvError when the press carries a budget, for commands whose budgets come from a list:
  // `list` names it (--budgets, a sweep file's "budgets").
  void require_budget_from_list(std::string_view list = "--budgets") const;
  // Builds the press. MkvError when a compressing press has no budget.
  std::unique_ptr<Press> make() const;
  // make(), or null for "full" (sessions run without a press then).
  std::unique_ptr<Press> make_or_null() const;

  // How many of the last observed queries per layer the press's scores read when it compresses a
  // sequence of n_past tokens: 0 for none, the observation window, or -1 for every query of the
  // sequence (what a recorder must replay into a press that did not watch the sequence).
  int queries_read(int32_t n_past) const;

  bool operator==(const PressConfig& other) const;

 private:
  // One parameter's value, parallel to def_->params. budget and ratio stay unset here (budget_).
  struct Value {
    double number = 0.0;  // Int, Real, Bool (0 or 1)
    std::string choice;   // Choice
    bool is_auto = false;
    bool given = false;
    bool operator==(const Value& o) const {
      return number == o.number && choice == o.choice && is_auto == o.is_auto;
    }
  };

  // Sets values_ from the defaults and `given_` (in order), applies the resolve hook.
  void resolve();
  std::size_t index(std::string_view key) const;  // of a parameter of the press; MkvError otherwise
  std::string text(std::size_t i) const;           // canonical text of parameter i

  const PressDef* def_;
  std::vector<std::pair<std::string, std::string>> given_;  // explicit key=value, in the order given
  std::vector<Value> values_;                                 // (def_->params.size())
  std::optional<Budget> budget_;
};

// The rows of a scorer press's wrappers read from its config: protection, budget, rounds, decode
// slack and moments (scorer_press.h), and its budget allocation.
struct ScorerPressOptions;
ScorerPressOptions scorer_press_options(const PressConfig& config);

}  // namespace mkv
