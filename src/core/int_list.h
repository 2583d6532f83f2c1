// Comma-separated integer flags ("-p 128,512", "--budgets 64,128").
#pragma once

#include <string>
#include <vector>

namespace mkv {

// "16,32,64" -> {16, 32, 64}. MkvError naming `flag` and the bad item when an item is not an
// integer or is below min_value, or when the list is empty.
std::vector<int> parse_int_list(const std::string& text, const std::string& flag, int min_value);

}  // namespace mkv
