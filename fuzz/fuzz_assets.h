// Where the fuzz targets that need the shared assets find them: $MOMENTKV_ASSETS, else
// ../shared/assets beside the source tree. A missing file ends the process with a message (and
// exit code 77, which the replay tests report as skipped).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace mkv::fuzz {

inline std::filesystem::path shared_asset(const char* relative) {
  const char* env = std::getenv("MOMENTKV_ASSETS");
  const std::filesystem::path root =
      env && *env ? std::filesystem::path(env)
                  : std::filesystem::path(MOMENTKV_SOURCE_DIR).parent_path() / "shared" / "assets";
  const std::filesystem::path path = root / relative;
  if (!std::filesystem::exists(path)) {
    std::fprintf(stderr, "fuzz: '%s' not found (set MOMENTKV_ASSETS or place ../shared/assets); skipped\n",
                 path.c_str());
    std::exit(77);
  }
  return path;
}

}  // namespace mkv::fuzz
