// Built-in English word lists for RULER keys (adjective-noun pairs, as RULER builds them from the
// wonderwords lists) and for the common-words task. Written for momentkv (not copied from
// wonderwords): everyday adjectives, concrete nouns and verbs, lower-case, no duplicates.
#pragma once

#include <string>
#include <vector>

namespace mkv::eval::ruler {

const std::vector<std::string>& adjectives();
const std::vector<std::string>& nouns();
const std::vector<std::string>& verbs();

// nouns + adjectives + verbs, sorted and de-duplicated (RULER's cwe pool before shuffling).
const std::vector<std::string>& common_words();

}  // namespace mkv::eval::ruler
