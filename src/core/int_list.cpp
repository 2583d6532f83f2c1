#include "core/int_list.h"

#include <sstream>

#include "core/error.h"

namespace mkv {

std::vector<int> parse_int_list(const std::string& text, const std::string& flag, int min_value) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    MKV_CHECK(used == item.size() && !item.empty(), "{} expects comma-separated integers, got '{}' in '{}'", flag,
              item, text);
    MKV_CHECK(value >= min_value, "{} values must be >= {}, got {}", flag, min_value, value);
    out.push_back(value);
  }
  MKV_CHECK(!out.empty(), "{} expects comma-separated integers, e.g. 128,256; got '{}'", flag, text);
  return out;
}

}  // namespace mkv
