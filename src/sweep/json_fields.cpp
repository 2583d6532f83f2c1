#include "sweep/json_fields.h"

#include <fmt/format.h>

#include "core/error.h"

namespace mkv::sweep {

using json = nlohmann::json;

namespace {

// A value as messages show it: its JSON text, cut after 60 characters.
std::string shown(const json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

}  // namespace

JsonFields::JsonFields(const json& object, std::string file, std::string prefix)
    : object_(object), file_(std::move(file)), prefix_(std::move(prefix)) {
  MKV_CHECK(object_.is_object(), "{}: {} must be a JSON object", file_,
            prefix_.empty() ? std::string("the top level") : prefix_.substr(0, prefix_.size() - 1));
}

std::string JsonFields::where(const std::string& key) const { return fmt::format("{}: {}{}", file_, prefix_, key); }

bool JsonFields::has(const std::string& key) const { return object_.contains(key); }

const json* JsonFields::get(const std::string& key) {
  asked_.insert(key);
  const auto it = object_.find(key);
  return it == object_.end() ? nullptr : &*it;
}

std::optional<std::string> JsonFields::string(const std::string& key) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  MKV_CHECK(v->is_string(), "{}: must be a string, got {}", where(key), shown(*v));
  return v->get<std::string>();
}

std::optional<int64_t> JsonFields::integer(const std::string& key, int64_t min, int64_t max) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  MKV_CHECK(v->is_number_integer(), "{}: must be an integer, got {}", where(key), shown(*v));
  // Unsigned values above INT64_MAX are out of every range we accept.
  MKV_CHECK(!v->is_number_unsigned() || v->get<uint64_t>() <= static_cast<uint64_t>(max),
            "{}: must be between {} and {}, got {}", where(key), min, max, shown(*v));
  const int64_t value = v->get<int64_t>();
  MKV_CHECK(value >= min && value <= max, "{}: must be between {} and {}, got {}", where(key), min, max, value);
  return value;
}

std::optional<bool> JsonFields::boolean(const std::string& key) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  MKV_CHECK(v->is_boolean(), "{}: must be true or false, got {}", where(key), shown(*v));
  return v->get<bool>();
}

std::optional<std::vector<std::string>> JsonFields::strings(const std::string& key, bool allow_single) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (allow_single && v->is_string()) return std::vector<std::string>{v->get<std::string>()};
  MKV_CHECK(v->is_array(), "{}: must be a list of strings{}, got {}", where(key), allow_single ? " (or one string)" : "",
            shown(*v));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v->size(); ++i) {
    MKV_CHECK((*v)[i].is_string(), "{}[{}]: must be a string, got {}", where(key), i, shown((*v)[i]));
    out.push_back((*v)[i].get<std::string>());
  }
  return out;
}

std::optional<std::vector<int64_t>> JsonFields::integers(const std::string& key, int64_t min, int64_t max) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  MKV_CHECK(v->is_array(), "{}: must be a list of integers, got {}", where(key), shown(*v));
  std::vector<int64_t> out;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const json& item = (*v)[i];
    MKV_CHECK(item.is_number_integer(), "{}[{}]: must be an integer, got {}", where(key), i, shown(item));
    MKV_CHECK(!item.is_number_unsigned() || item.get<uint64_t>() <= static_cast<uint64_t>(max),
              "{}[{}]: must be between {} and {}, got {}", where(key), i, min, max, shown(item));
    const int64_t value = item.get<int64_t>();
    MKV_CHECK(value >= min && value <= max, "{}[{}]: must be between {} and {}, got {}", where(key), i, min, max, value);
    out.push_back(value);
  }
  return out;
}

const json* JsonFields::object(const std::string& key) {
  const json* v = get(key);
  if (!v) return nullptr;
  MKV_CHECK(v->is_object(), "{}: must be a JSON object, got {}", where(key), shown(*v));
  return v;
}

void JsonFields::finish() const {
  for (const auto& [key, value] : object_.items()) {
    if (asked_.count(key)) continue;
    fail("{}: unknown field (known fields{}: {})", where(key), prefix_.empty() ? "" : " here",
         fmt::join(asked_, ", "));
  }
}

}  // namespace mkv::sweep
