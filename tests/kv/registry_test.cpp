// Press specs: parsing, validation messages naming the press and key, canonical form, help.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>

#include "core/error.h"
#include "kv/press_catalog.h"
#include "kv/press_config.h"
#include "support/test_support.h"

namespace mkv {
namespace {

using test::error_of;

// The MkvError message of parsing spec, or "" when it succeeds.
std::string parse_error(const std::string& spec) {
  try {
    PressConfig::parse(spec);
  } catch (const MkvError& e) {
    return e.what();
  }
  return "";
}

TEST(Registry, RejectsBadSpecsNamingWhatIsWrong) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"snapkvv", "unknown press 'snapkvv'"},
      {"snapkv:windw=8", "unknown parameter 'windw'"},
      {"snapkv:window=abc", "window=abc is not an integer"},
      {"snapkv:window=8.5", "window=8.5 is not an integer"},
      {"snapkv:window=0", "window=0 is out of range"},
      {"snapkv:window=Auto", "window=Auto is not an integer >= 1 or auto"},
      {"snapkv:kernel=4", "kernel=4 must be odd"},
      {"snapkv:kernel=wide", "kernel=wide is not an odd integer or auto"},
      {"snapkv:kernel=-3", "kernel=-3 is not an odd integer or auto"},
      {"snapkv:kernel=65", "kernel=65 is out of range"},
      {"snapkv:window=8,window=9", "'window' given twice"},
      {"snapkv:window", "'window' is not key=value"},
      {"momentkv:alloc=greedy", "alloc=greedy is not one of uniform|adaptive|pyramid"},
      {"momentkv:nc=2", "nc=2 is not a boolean"},
      {"momentkv:variant=paper,groups=4", "variant=paper fixes groups=1"},
      {"adakv:scorer=full", "scorer=full is not one of"},
      {"adakv:scorer=momentkv", "scorer=momentkv is the press momentkv:alloc=adaptive"},
      {"snapkv:budget=32,ratio=0.5", "not both"},
      {"snapkv:ratio=1", "ratio=1 is out of range"},
      {"full:budget=3", "press 'full': unknown parameter 'budget' (parameters: none)"},
      {"streaming_llm:window=8", "unknown parameter 'window'"},
  };
  for (const auto& [spec, message] : cases) EXPECT_NE(parse_error(spec).find(message), std::string::npos)
      << spec << " → \"" << parse_error(spec) << "\"";
  EXPECT_THROW(PressConfig::parse("snapkv", Budget{-3, 0.0}), MkvError);
  EXPECT_NE(parse_error("snapkv:").find("nothing after ':'"), std::string::npos);
  EXPECT_NE(parse_error("snapkv:window=8,").find("'' is not key=value"), std::string::npos);
}

TEST(Registry, CanonicalSpecSpellsOutEveryParameterAndTheBudget) {
  // A budget from the flags is part of the canonical spec, as one written in the spec is.
  const std::string snapkv = "snapkv:window=auto,kernel=5,sinks=4,budget=64,decode_slack=-1,nc=0,groups=1,clip=0,means_only=0";
  EXPECT_EQ(PressConfig::parse("snapkv:kernel=5", Budget{64, 0.0}).spec(), snapkv);
  EXPECT_EQ(PressConfig::parse("snapkv:kernel=5,budget=64").spec(), snapkv);
  EXPECT_EQ(PressConfig::parse("snapkv:kernel=5", Budget{64, 0.0}).make()->spec(), snapkv);
  EXPECT_EQ(PressConfig::parse("momentkv:budget=32,variant=grouped,groups=4").make()->spec(),
            "momentkv:window=auto,kernel=auto,sinks=4,rounds=1,alloc=global,safeguard=0.2,beta=20,"
            "variant=grouped,budget=32,decode_slack=-1,nc=1,groups=4,clip=1,means_only=0");
  EXPECT_EQ(PressConfig::parse("snapkv", Budget{0, 0.25}).spec(),
            "snapkv:window=auto,kernel=auto,sinks=4,ratio=0.25,decode_slack=-1,nc=0,groups=1,clip=0,means_only=0");
  EXPECT_EQ(PressConfig().spec(), "full");
  EXPECT_EQ(PressConfig::parse("full").make()->spec(), "full");
}

TEST(PressConfig, CanonicalSpecRoundTripsForEveryPress) {
  for (const PressConfig& press : compressing_presses())
    for (const Budget& budget : {Budget{48, 0.0}, Budget{0, 0.5}}) {
      const PressConfig config = press.with_budget(budget);
      const PressConfig again = PressConfig::parse(config.spec());
      EXPECT_EQ(again.spec(), config.spec());
      EXPECT_EQ(again, config);
      EXPECT_EQ(again.budget()->tokens, budget.tokens);
      EXPECT_EQ(again.budget()->ratio, budget.ratio);
      EXPECT_EQ(again.make()->spec(), config.spec());
    }
  const PressConfig paper = PressConfig::parse("momentkv:variant=paper,rounds=2", Budget{32, 0.0});
  EXPECT_EQ(PressConfig::parse(paper.spec()), paper);
  EXPECT_EQ(paper.as_given(), "momentkv:variant=paper,rounds=2");
}

TEST(PressConfig, APressWithoutABudgetIsAnErrorNotAFullCache) {
  const PressConfig snapkv = PressConfig::parse("snapkv");
  EXPECT_FALSE(snapkv.budget().has_value());
  EXPECT_NE(error_of([&] { snapkv.make(); }).find("press 'snapkv' needs a budget"), std::string::npos);
  EXPECT_NE(error_of([&] { snapkv.require_budget(); }).find("--kv-budget"), std::string::npos);
  EXPECT_NO_THROW(PressConfig().make());
  EXPECT_NO_THROW(PressConfig().require_budget());
}

TEST(PressConfig, BudgetIsGivenInExactlyOnePlace) {
  EXPECT_NE(error_of([] { PressConfig::parse("snapkv:budget=32", Budget{64, 0.0}); }).find("given twice"),
            std::string::npos);
  EXPECT_NE(error_of([] { PressConfig::parse("full", Budget{64, 0.0}); }).find("press 'full' keeps every token"),
            std::string::npos);
  EXPECT_NE(error_of([] { PressConfig::parse("snapkv:budget=32").with_budget(Budget{16, 0.0}); })
                .find("already has a budget (budget=32)"),
            std::string::npos);
  EXPECT_NE(error_of([] { PressConfig().with_budget(Budget{16, 0.0}); }).find("takes no budget"), std::string::npos);
  EXPECT_NE(error_of([] { PressConfig::parse("snapkv", Budget{16, 0.5}); }).find("a budget is L >= 1"),
            std::string::npos);
}

TEST(PressConfig, BudgetFlagsAreValidatedOnce) {
  using B = std::optional<Budget>;
  EXPECT_EQ(PressConfig::budget_from_flags(std::nullopt, std::nullopt), B{});
  EXPECT_EQ(PressConfig::budget_from_flags(64, std::nullopt)->tokens, 64);
  EXPECT_EQ(PressConfig::budget_from_flags(std::nullopt, 0.0)->ratio, 0.0);  // ratio 0: kvpress's no-op, given
  const std::vector<std::pair<std::function<void()>, std::string>> cases = {
      {[] { PressConfig::budget_from_flags(0, std::nullopt); }, "--kv-budget must be in [1, 1000000000]"},
      {[] { PressConfig::budget_from_flags(-5, std::nullopt); }, "got -5"},
      {[] { PressConfig::budget_from_flags(int64_t{1} << 40, std::nullopt); }, "--kv-budget must be"},
      {[] { PressConfig::budget_from_flags(std::nullopt, 1.0); }, "--compression-ratio must be in [0, 1)"},
      {[] { PressConfig::budget_from_flags(std::nullopt, -0.1); }, "--compression-ratio"},
      {[] { PressConfig::budget_from_flags(std::nullopt, std::nan("")); }, "--compression-ratio"},
      {[] { PressConfig::budget_from_flags(8, 0.5); }, "not both"},
  };
  for (const auto& [call, message] : cases) EXPECT_NE(error_of(call).find(message), std::string::npos) << message;
}

TEST(PressConfig, WithParamValidatesAndReplaces) {
  const PressConfig snapkv = PressConfig::parse("snapkv:nc=1");
  EXPECT_TRUE(snapkv.given("nc"));
  EXPECT_FALSE(snapkv.with_param("nc", "0").with_budget(Budget{8, 0.0}).make()->nc());
  EXPECT_EQ(snapkv.with_param("nc", "0").as_given(), "snapkv:nc=0");
  EXPECT_NE(error_of([&] { snapkv.with_param("kernel", "4"); }).find("kernel=4 must be odd"), std::string::npos);
  EXPECT_NE(error_of([&] { snapkv.with_param("windw", "4"); }).find("unknown parameter 'windw'"), std::string::npos);
}

TEST(Registry, HelpListsEveryPressWithDefaults) {
  const std::string help = press_help();
  for (const PressDef& def : press_catalog()) EXPECT_NE(help.find("  " + def.name + " "), std::string::npos);
  EXPECT_NE(help.find("rounds"), std::string::npos);
  std::vector<std::string> names;
  for (const PressDef& def : press_catalog()) names.push_back(def.name);
  const std::vector<std::string> first = {"full", "streaming_llm", "h2o", "snapkv", "pyramidkv", "adakv", "momentkv"};
  ASSERT_GE(names.size(), first.size());
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + first.size()), first);  // kl's row order
}

}  // namespace
}  // namespace mkv
