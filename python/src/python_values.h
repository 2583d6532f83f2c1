// Python values to and from the engine's: text, and the Model's string options.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every translation unit: the same casters for std::optional and vectors everywhere

#include <optional>
#include <string>

#include "kv/kv_cache.h"
#include "ops/matmul_int8.h"

namespace momentkv_python {

namespace py = pybind11;

// Python text from engine bytes (invalid UTF-8 from byte-fallback tokens becomes U+FFFD).
inline py::str to_str(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

// The UTF-8 bytes of a Python str argument: TypeError for another type (bytes included: text is
// str), ValueError naming the argument for a str that is not valid text (a lone surrogate).
inline std::string utf8_text(const py::handle& text, const std::string& what) {
  if (!py::isinstance<py::str>(text))
    throw py::type_error(what + " must be a str, got " + std::string(py::str(py::type::handle_of(text).attr("__name__"))));
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
  if (!data) {
    const std::string reason = py::error_already_set().what();  // fetches (clears) the UnicodeEncodeError
    throw py::value_error(what + " is not valid UTF-8 text: " + reason);
  }
  return std::string(data, std::size_t(size));
}

inline mkv::MatmulPrecision parse_precision(const std::string& p) {
  if (p == "exact") return mkv::MatmulPrecision::Exact;
  if (p == "fast") return mkv::MatmulPrecision::Fast;
  throw py::value_error("precision must be \"exact\" or \"fast\", got \"" + p + "\"");
}

inline mkv::KvStorage parse_cache_type(const std::string& t) {
  if (const std::optional<mkv::KvStorage> storage = mkv::kv_storage_from_name(t)) return *storage;
  throw py::value_error("cache_type must be \"f32\" or \"f16\", got \"" + t + "\"");
}

}  // namespace momentkv_python
