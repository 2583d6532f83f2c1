// The presses, their parameters and defaults (kvpress's presses addressed by strings): the table
// PressConfig (kv/press_config.h) validates specs against, and the catalog `momentkv presses` prints.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kv/press_config.h"

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

// The range a spec accepts for a numeric parameter (an integer or real key): [min, max].
struct ParamRange {
  double min, max;
};
// The range of the numeric parameter `key` (the same in every press that takes it); nullopt for a
// key that is not numeric or not a parameter. Front ends check their own options against it.
std::optional<ParamRange> param_range(std::string_view key);

// Every press but "full", in catalog order, with its defaults and no budget: what the comparison
// commands (kl, fidelity) run when no --press is given.
std::vector<PressConfig> compressing_presses();

// The catalog as text for --help.
std::string press_help();

}  // namespace mkv
