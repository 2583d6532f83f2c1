// Sizes and parameter counts as the CLI prints them: "1.23 GiB", "4.50 MiB"; "1.24 B", "110.59 K".
#pragma once

#include <fmt/format.h>

#include <string>

namespace mkv::cli {

inline std::string size_text(double bytes) {
  if (bytes >= 1 << 30) return fmt::format("{:.2f} GiB", bytes / (1 << 30));
  if (bytes >= 1 << 20) return fmt::format("{:.2f} MiB", bytes / (1 << 20));
  return fmt::format("{:.2f} KiB", bytes / (1 << 10));
}

inline std::string params_text(double p) {
  if (p >= 1e9) return fmt::format("{:.2f} B", p / 1e9);
  if (p >= 1e6) return fmt::format("{:.2f} M", p / 1e6);
  return fmt::format("{:.2f} K", p / 1e3);
}

}  // namespace mkv::cli
