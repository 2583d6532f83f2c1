#include "kv/press_catalog.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "core/error.h"
#include "kv/press_config.h"
#include "kv/selection.h"

namespace mkv {

namespace {

// Registered definitions, in registration order (static initialisation: link order).
std::vector<PressDef>& registered() {
  static std::vector<PressDef> defs;
  return defs;
}

// The wrappers' parameters every scorer press takes after its own (scorer_press.h, nc_press.h).
std::vector<PressParam> wrapper_tail(bool nc_default) {
  const std::string nc_help = "normalisation-corrected attention from the evicted tokens' moments";
  return {
      {.key = "budget", .kind = ParamKind::Int, .lo = 1, .hi = double(Budget::kMaxTokens),
       .help = "tokens kept per KV head, window included (default: --kv-budget)"},
      {.key = "ratio", .kind = ParamKind::Real, .lo = 0, .hi = Budget::kMaxRatio,
       .help = "fraction of tokens removed (default: --compression-ratio)"},
      {.key = "decode_slack", .kind = ParamKind::Int, .fallback = "-1", .lo = -1, .hi = 1e9,
       .help = "evict again while decoding when a head exceeds budget + slack; -1 = never"},
      {.key = "nc", .kind = ParamKind::Bool, .fallback = nc_default ? "1" : "0", .lo = 0, .hi = 1, .help = nc_help},
      {.key = "groups", .kind = ParamKind::Int, .fallback = "1", .lo = 1, .hi = 64,
       .help = "moment groups per KV head (virtual slots; k-means on evicted keys)"},
      {.key = "clip", .kind = ParamKind::Bool, .fallback = "0", .lo = 0, .hi = 1,
       .help = "trust region: |τCq| at most the RMS spread of the evicted values"},
      {.key = "means_only", .kind = ParamKind::Bool, .fallback = "0", .lo = 0, .hi = 1,
       .help = "moments store means only (no co-moment)"},
  };
}

std::vector<PressDef> finished_catalog() {
  std::vector<PressDef> defs = registered();
  std::stable_sort(defs.begin(), defs.end(), [](const PressDef& a, const PressDef& b) { return a.order < b.order; });
  std::vector<std::string> adaptive_scorers;  // adakv:scorer='s choices, in catalogue order
  for (const PressDef& d : defs)
    if (d.adaptive_scorer) adaptive_scorers.push_back(d.name);
  for (PressDef& d : defs) {
    if (d.is_scorer())
      for (PressParam& p : wrapper_tail(d.nc_default)) d.params.push_back(std::move(p));
    for (PressParam& p : d.params)
      if (p.key == "scorer" && p.choices.empty()) p.choices = adaptive_scorers;
  }
  return defs;
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

// "auto or 1–1000000", "1–64, odd", "0|1", "uniform|adaptive"
std::string values_text(const PressParam& p) {
  const auto number = [](double v) { return fmt::format("{}", v); };
  switch (p.kind) {
    case ParamKind::Bool: return "0 \\| 1";
    case ParamKind::Choice: return join(p.choices, " \\| ");
    case ParamKind::Int:
    case ParamKind::Real: {
      std::string out = (p.kind == ParamKind::Int ? "integer " : "") + number(p.lo) + "–" + number(p.hi);
      if (p.odd) out += ", odd";
      if (p.auto_ok) out = "auto, or " + out;
      return out;
    }
  }
  return "";
}

// Text for a markdown table cell: a '|' would end the cell.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string default_text(const PressParam& p) {
  if (!p.fallback.empty()) return p.fallback;
  return p.key == "budget" ? "`--kv-budget`" : p.key == "ratio" ? "`--compression-ratio`" : "-";
}

std::string python_kind(const PressParam& p) {
  switch (p.kind) {
    case ParamKind::Int: return p.auto_ok ? "int_or_auto" : "int";
    case ParamKind::Real: return "real";
    case ParamKind::Bool: return "bool";
    case ParamKind::Choice: return "choice";
  }
  return "";
}

std::string python_annotation(const PressParam& p) {
  switch (p.kind) {
    case ParamKind::Int: return p.auto_ok ? "\"int | str\"" : "int";
    case ParamKind::Real: return "float";
    case ParamKind::Bool: return "bool";
    case ParamKind::Choice: return "str";
  }
  return "";
}

// A Python string literal (the catalogue's texts are printable UTF-8 without control characters).
std::string python_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

PressRegistration::PressRegistration(PressDef def) {
  for (const PressDef& d : registered())
    if (d.name == def.name) {
      std::fprintf(stderr, "momentkv: press '%s' is registered twice\n", def.name.c_str());
      std::abort();
    }
  registered().push_back(std::move(def));
}

const std::vector<PressDef>& press_catalog() {
  static const std::vector<PressDef> catalog = finished_catalog();
  return catalog;
}

const PressDef& find_press(std::string_view name) {
  std::vector<std::string> known;
  for (const PressDef& d : press_catalog()) {
    if (d.name == name) return d;
    known.push_back(d.name);
  }
  fail("unknown press '{}' (known: {})", name, join(known, ", "));
}

const PressParam* find_param(const PressDef& def, std::string_view key) {
  for (const PressParam& p : def.params)
    if (p.key == key) return &p;
  return nullptr;
}

std::optional<ParamRange> param_range(std::string_view key) {
  for (const PressDef& d : press_catalog())
    if (const PressParam* p = find_param(d, key); p && (p->kind == ParamKind::Int || p->kind == ParamKind::Real))
      return ParamRange{p->lo, p->hi};
  return std::nullopt;
}

std::vector<PressConfig> compressing_presses() {
  std::vector<PressConfig> out;
  for (const PressDef& d : press_catalog())
    if (d.name != "full") out.push_back(PressConfig::parse(d.name));
  return out;
}

std::string press_help() {
  std::string out = "Presses (--press name:key=value,...):\n";
  for (const PressDef& d : press_catalog()) {
    out += fmt::format("  {:<14} {}\n", d.name, d.summary);
    for (const PressParam& p : d.params)
      out += fmt::format("      {:<13} {:<8} {}\n", p.key, p.fallback.empty() ? "-" : p.fallback, p.help);
  }
  return out;
}

std::string press_markdown() {
  const std::vector<PressDef>& catalog = press_catalog();
  const std::vector<PressParam> tail = wrapper_tail(false);
  std::vector<std::string> nc_on;  // presses whose nc defaults to 1
  for (const PressDef& d : catalog)
    if (d.is_scorer() && d.nc_default) nc_on.push_back("`" + d.name + "`");
  std::string out =
      "Every press but `full` also takes the parameters of the wrappers it is composed with (budget,\n"
      "decode-time eviction, moments, NC):\n\n"
      "| parameter | default | values | meaning |\n|---|---|---|---|\n";
  for (const PressParam& p : tail) {
    std::string fallback = default_text(p);
    if (p.key == "nc" && !nc_on.empty()) fallback += " (" + join(nc_on, ", ") + ": 1)";
    out += fmt::format("| `{}` | {} | {} | {} |\n", p.key, fallback, values_text(p), cell(p.help));
  }
  out += "\nEach press's own parameters, in spec order:\n\n| press | parameter | default | values | meaning |\n"
         "|---|---|---|---|---|\n";
  for (const PressDef& d : catalog) {
    const std::size_t own = d.params.size() - (d.is_scorer() ? tail.size() : 0);
    if (own == 0) out += fmt::format("| `{}` | — | | | {} |\n", d.name, cell(d.summary));
    for (std::size_t i = 0; i < own; ++i) {
      const PressParam& p = d.params[i];
      out += fmt::format("| {} | `{}` | {} | {} | {} |\n", i == 0 ? "`" + d.name + "`" : "", p.key, default_text(p),
                         values_text(p), cell(p.help));
    }
  }
  return out;
}

std::string press_python_module() {
  std::string out =
      "# Generated from the engine's press catalogue (src/kv/presses/*.cpp) by\n"
      "#   momentkv presses --format python > python/momentkv/_catalog.py\n"
      "# Do not edit by hand: tests/cli fails when this file differs from the catalogue.\n"
      "\"\"\"One class per press of the engine's catalogue (see momentkv.presses).\"\"\"\n\n"
      "from ._press_base import Press\n";
  std::vector<std::string> classes;
  for (const PressDef& d : press_catalog()) {
    classes.push_back(d.python_class);
    out += fmt::format("\n\nclass {}(Press):\n    \"\"\"{}", d.python_class, d.summary);
    if (!d.params.empty()) {
      out += "\n\n    Keyword arguments (None keeps the default):\n";
      for (const PressParam& p : d.params)
        out += fmt::format("      {} ({}): {}\n", p.key, p.fallback.empty() ? "no default" : "default " + p.fallback,
                           p.help);
      out += "    ";
    }
    out += "\"\"\"\n\n";
    out += fmt::format("    name = {}\n", python_string(d.name));
    out += "    _kinds = {";  // parameter key -> kind (momentkv._press_base._format)
    for (const PressParam& p : d.params)
      out += fmt::format("\n        {}: {},", python_string(p.key), python_string(python_kind(p)));
    out += d.params.empty() ? "}" : "\n    }";
    out += "\n\n    def __init__(self";
    if (!d.params.empty()) out += ", *";
    for (const PressParam& p : d.params) out += fmt::format(",\n                 {}: {} = None", p.key, python_annotation(p));
    out += "):\n        super().__init__(";
    for (std::size_t i = 0; i < d.params.size(); ++i)
      out += fmt::format("{}{}={}", i ? ",\n                         " : "", d.params[i].key, d.params[i].key);
    out += ")\n";
  }
  out += "\n\n# Press name -> class (the engine's catalogue names).\nCLASSES = {c.name: c for c in (" +
         join(classes, ", ") + ")}\n";
  return out;
}

}  // namespace mkv
