// PressConfig: a press and its budget as one validated value. It is parsed once, where the
// flags are read (a spec string "name:key=value,..." plus --kv-budget / --compression-ratio),
// and then carried by value to whatever builds sessions: generate, kl, fidelity, eval, bench.
// Nothing downstream parses a spec string again; the press is built from the parsed values.
//
// Budget rules (docs/METHODS.md §6): a compressing press needs exactly one budget, either
// L ≥ 1 tokens per KV head or a compression ratio r in [0, 1), given in the spec (budget=,
// ratio=) or by the flags, not both; "full" takes none. spec() is canonical (every parameter
// spelled out, the budget included) and round-trips: parse(c.spec()) == c.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kv/press.h"

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
  static std::optional<Budget> budget_from_flags(std::optional<int64_t> kv_budget,
                                                 std::optional<double> compression_ratio, BudgetNames names = {});

  const std::string& name() const { return name_; }
  bool is_full() const { return name_ == "full"; }
  // The budget, when one was given (always nullopt for "full").
  const std::optional<Budget>& budget() const { return budget_; }
  // A copy with this budget (validated); the press must not have one yet. "full": MkvError.
  PressConfig with_budget(const Budget& budget) const;
  // A copy with key=value set (validated like a spec item); replaces an explicit value.
  PressConfig with_param(std::string_view key, std::string_view value) const;
  // Whether `key` was given explicitly (in the spec or by with_param).
  bool given(std::string_view key) const;

  // Canonical spec: every parameter spelled out, the budget included.
  std::string spec() const;
  // The press as the user wrote it: its name and the explicit parameters, in the order given,
  // without the budget ("momentkv:variant=paper"); for labels and result records.
  std::string as_given() const;

  // MkvError unless the press can be built: "full", or a press with a budget.
  void require_budget() const;
  // Builds the press. MkvError when a compressing press has no budget.
  std::unique_ptr<Press> make() const;

  bool operator==(const PressConfig& other) const { return spec() == other.spec(); }

 private:
  std::string name_ = "full";
  std::vector<std::pair<std::string, std::string>> params_;  // explicit key=value, in the order given
  std::optional<Budget> budget_;
};

}  // namespace mkv
