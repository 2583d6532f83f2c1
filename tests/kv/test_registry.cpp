// Press specs: parsing, validation messages naming the press and key, canonical form, help.
#include <gtest/gtest.h>

#include "core/error.h"
#include "kv/press_registry.h"

namespace mkv {
namespace {

// The MkvError message of make_press(spec), or "" when it succeeds.
std::string parse_error(const std::string& spec) {
  try {
    make_press(spec, Budget{64, 0.0});
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
      {"snapkv:kernel=4", "kernel=4 must be odd"},
      {"snapkv:window=8,window=9", "'window' given twice"},
      {"snapkv:window", "'window' is not key=value"},
      {"momentkv:alloc=greedy", "alloc=greedy is not one of uniform|adaptive|pyramid"},
      {"momentkv:nc=2", "nc=2 is not a boolean"},
      {"momentkv:variant=paper,groups=4", "variant=paper fixes groups=1"},
      {"adakv:scorer=full", "scorer=full is not one of"},
      {"snapkv:budget=32,ratio=0.5", "not both"},
      {"snapkv:ratio=1", "ratio=1 is out of range"},
      {"full:budget=3", "press 'full': unknown parameter 'budget' (parameters: none)"},
      {"streaming_llm:window=8", "unknown parameter 'window'"},
  };
  for (const auto& [spec, message] : cases) EXPECT_NE(parse_error(spec).find(message), std::string::npos)
      << spec << " → \"" << parse_error(spec) << "\"";
  EXPECT_THROW(make_press("snapkv", Budget{-3, 0.0}), MkvError);
}

TEST(Registry, CanonicalSpecSpellsOutEveryParameter) {
  EXPECT_EQ(make_press("snapkv:kernel=5", Budget{64, 0.0})->spec(),
            "snapkv:window=32,kernel=5,sinks=4,decode_slack=-1,nc=0,groups=1,clip=0,means_only=0");
  EXPECT_EQ(make_press("momentkv:budget=32,variant=grouped,groups=4")->spec(),
            "momentkv:window=32,kernel=7,sinks=4,rounds=4,alloc=uniform,safeguard=0.2,beta=20,"
            "variant=grouped,budget=32,decode_slack=-1,nc=1,groups=4,clip=1,means_only=0");
  EXPECT_EQ(make_press("full")->spec(), "full");
}

TEST(Registry, HelpListsEveryPressWithDefaults) {
  const std::string help = press_help();
  for (const PressInfo& info : press_catalog()) EXPECT_NE(help.find(info.name), std::string::npos);
  EXPECT_NE(help.find("rounds"), std::string::npos);
  EXPECT_EQ(press_catalog().size(), 7u);
}

}  // namespace
}  // namespace mkv
