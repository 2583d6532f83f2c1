#include "eval/ruler/haystack.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/text_file.h"
#include "eval/metrics/python_text.h"

namespace mkv::eval::ruler {
namespace {

std::string read_text(const std::filesystem::path& path) { return read_text_file(path, "essay text"); }

bool ends_sentence(std::string_view word) {
  static constexpr std::array<std::string_view, 14> kAbbreviations = {
      "mr.", "mrs.", "ms.", "dr.", "st.", "jr.", "sr.", "vs.", "etc.", "e.g.", "i.e.", "mt.", "no.", "prof."};
  while (true) {  // drop closing quotes and brackets
    if (!word.empty() && std::string_view("\"')]").find(word.back()) != std::string_view::npos) word.remove_suffix(1);
    else if (word.ends_with("’") || word.ends_with("”")) word.remove_suffix(3);
    else break;
  }
  if (word.empty() || std::string_view(".!?").find(word.back()) == std::string_view::npos) return false;
  if (word.size() == 2 && word[0] >= 'A' && word[0] <= 'Z') return false;  // an initial: "J."
  std::string lowered(word);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
  return std::find(kAbbreviations.begin(), kAbbreviations.end(), lowered) == kAbbreviations.end();
}

}  // namespace

std::vector<std::string> load_essay_words(const std::vector<std::filesystem::path>& paths) {
  MKV_CHECK(!paths.empty(), "the essay haystack needs at least one text file or directory");
  std::string joined;
  for (const auto& path : paths) {
    MKV_CHECK(std::filesystem::exists(path), "essay text {} does not exist", path.string());
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(path)) {
      for (const auto& entry : std::filesystem::directory_iterator(path))
        if (entry.is_regular_file() && entry.path().extension() == ".txt") files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      MKV_CHECK(!files.empty(), "essay directory {} holds no .txt files", path.string());
    } else {
      files.push_back(path);
    }
    for (const auto& file : files) joined += read_text(file) + " ";
  }
  std::vector<std::string> words = py::split_whitespace(joined);
  MKV_CHECK(!words.empty(), "the essay texts hold no words");
  return words;
}

std::string essay_prefix(const std::vector<std::string>& words, int64_t count) {
  std::string text;
  for (int64_t i = 0; i < count; ++i) {
    if (i > 0) text.push_back(' ');
    text += words[static_cast<size_t>(i) % words.size()];
  }
  return text;
}

std::vector<std::string> split_sentences(std::string_view text) {
  std::vector<std::string> sentences;
  std::string current;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find(' ', start), text.size());
    const std::string_view word = text.substr(start, end - start);
    if (!word.empty()) {
      if (!current.empty()) current.push_back(' ');
      current += word;
      if (ends_sentence(word)) sentences.push_back(std::move(current)), current.clear();
    }
    start = end + 1;
  }
  if (!current.empty()) sentences.push_back(std::move(current));
  return sentences;
}

}  // namespace mkv::eval::ruler
