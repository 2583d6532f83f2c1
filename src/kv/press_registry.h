// Press specs: "name:key=value,key=value" → a configured Press, validated (kvpress's presses
// addressed by strings). Unknown presses, unknown or repeated keys, malformed or out-of-range
// values throw MkvError naming the press and the key.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kv/press.h"

namespace mkv {

struct PressParamInfo {
  std::string key;
  std::string default_value;  // "" when it comes from elsewhere (budget flags)
  std::string help;
};

struct PressInfo {
  std::string name;
  std::string summary;
  std::vector<PressParamInfo> params;
};

// Every press with its parameters and defaults, in display order.
const std::vector<PressInfo>& press_catalog();

// The catalog as text for --help.
std::string press_help();

// Builds the press of `spec`. `budget` (the --kv-budget / --compression-ratio flags) applies
// unless the spec sets budget=L or ratio=r itself. The press's spec() is the canonical form with
// every parameter spelled out.
std::unique_ptr<Press> make_press(std::string_view spec, const Budget& budget = {});

}  // namespace mkv
