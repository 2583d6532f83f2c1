// The press catalogue: every press registers itself, in its own file under src/kv/presses/, with
// its name, summary, parameters (kind, range or choices, default, one-line help) and factory.
// Everything else reads the catalogue: PressConfig::parse validates specs against it (once), and
// `momentkv presses`, the Python press classes (python/momentkv/_catalog.py) and the parameter
// tables of docs/METHODS.md are generated from it (tests fail when the committed ones differ).
//
// Two kinds of press:
//   - a scorer press (PressDef::scorer set): the press only scores; make_scorer_press composes it
//     with the wrappers every scorer shares: protection (sinks, window), the budget, decode-time
//     eviction, the moments the cache keeps and NC (NcPress), and, when the press lists `alloc`,
//     every budget allocation (allocation.h). The wrappers' parameters (budget, ratio,
//     decode_slack, nc, groups, clip, means_only) are appended to its own;
//   - a plain press (PressDef::make set): built from its config as it is ("full").
//
// Adding a press: one file under src/kv/presses/ that defines a Scorer and a `const
// PressRegistration` (snapkv.cpp, for one), plus its test; then tools/update_press_catalog.sh
// rewrites the generated files. CMake links src/kv whole (WHOLE_ARCHIVE), so a registration that
// nothing refers to is still linked in.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kv/presses/allocation.h"

namespace mkv {

class Press;
class PressConfig;
class Scorer;

enum class ParamKind { Int, Real, Bool, Choice };

// One parameter of a press. `fallback` is the default as spec text ("" = unset: budget and ratio,
// which come from the flags). Int and Real values lie in [lo, hi]; an Int with `auto_ok` also takes
// "auto" (tied to the budget), one with `odd` only odd values; a Choice takes one of `choices`.
struct PressParam {
  std::string key;
  ParamKind kind = ParamKind::Int;
  std::string fallback;
  double lo = 0.0, hi = 0.0;
  std::vector<std::string> choices;
  std::string help;
  bool auto_ok = false;
  bool odd = false;
};

// Which observed queries a press's scores read (what a press that did not watch the sequence needs
// replayed, engine/compress_later.h): none (full, streaming_llm), the last `window`
// (snapkv and the presses built on its scores), or every query of the sequence (h2o).
enum class QueryUse { None, Window, All };

struct PressDef {
  std::string name;          // the spec's name: "snapkv"
  std::string python_class;  // the Python class: "SnapKV"
  std::string summary;       // one line
  int order = 0;             // display order (catalogue, `momentkv presses`, kl's rows)
  std::vector<PressParam> params;  // the press's own, in spec order (the catalogue appends the tail)
  bool nc_default = false;         // the default of the nc tail parameter

  // Scorer presses: the scorer of a validated config, and which queries it reads.
  std::function<std::unique_ptr<Scorer>(const PressConfig&)> scorer;
  std::function<QueryUse(const PressConfig&)> queries;  // null: QueryUse::None
  // The allocation of a press without an `alloc` parameter (pyramidkv: Pyramid).
  Allocation allocation = Allocation::Uniform;
  // Whether adakv:scorer= may name it (its scorer reads no parameter adakv lacks).
  bool adaptive_scorer = false;

  // Plain presses: the press of a validated config.
  std::function<std::unique_ptr<Press>(const PressConfig&)> make;

  // Run on every parse, after the given values are set: defaults that follow other parameters
  // (config.default_to) and rules between parameters (MkvError).
  std::function<void(PressConfig&)> resolve;

  bool is_scorer() const { return static_cast<bool>(scorer); }
};

// Registers a press at static initialisation: `const PressRegistration kRegistration{PressDef{...}};`
// in the press's own file. A name registered twice aborts at start-up.
struct PressRegistration {
  explicit PressRegistration(PressDef def);
};

// Every press, in display order (the tail parameters appended, adakv's scorer choices filled in).
const std::vector<PressDef>& press_catalog();

// The press named `name`; MkvError "unknown press 'x' (known: ...)" otherwise.
const PressDef& find_press(std::string_view name);

// The parameter `key` of `def`, or null.
const PressParam* find_param(const PressDef& def, std::string_view key);

// The range a spec accepts for a numeric parameter: [min, max].
struct ParamRange {
  double min, max;
};
// The range of the numeric parameter `key` (the same in every press that takes it); nullopt for a
// key that is not numeric or not a parameter. Front ends check their own options against it.
std::optional<ParamRange> param_range(std::string_view key);

// Every press but "full", in catalogue order, with its defaults and no budget: what the comparison
// commands (kl, fidelity) run when no --press is given.
std::vector<PressConfig> compressing_presses();

// The catalogue as text for --help and `momentkv presses`.
std::string press_help();
// The catalogue as docs/METHODS.md's generated section (markdown, between its markers).
std::string press_markdown();
// The catalogue as python/momentkv/_catalog.py (one class per press).
std::string press_python_module();

}  // namespace mkv
