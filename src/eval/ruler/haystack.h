// Haystack text for RULER: the noise sentence block, essay words and sentence splitting.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace mkv::eval::ruler {

// RULER's noise haystack unit, repeated once per haystack sentence.
inline constexpr std::string_view kNoiseSentence =
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";

// Words of the essay text(s): each path is a .txt file or a directory whose *.txt files are read in
// name order; texts are joined with a space and split on whitespace (RULER: re.sub(r'\s+', ' ')
// then split). MkvError if a path is missing or no words are found.
std::vector<std::string> load_essay_words(const std::vector<std::filesystem::path>& paths);

// The first `count` essay words (cycling through the text when it is shorter), space-joined.
std::string essay_prefix(const std::vector<std::string>& words, int64_t count);

// Sentence split standing in for NLTK punkt: a sentence ends at a word ending in '.', '!' or '?'
// (optionally followed by closing quotes or brackets) unless the word is a common abbreviation
// (Mr. Mrs. Dr. St. ...) or a single capital letter with a dot. Input is single-spaced text.
std::vector<std::string> split_sentences(std::string_view text);

}  // namespace mkv::eval::ruler
