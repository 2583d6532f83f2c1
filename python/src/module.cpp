// momentkv._momentkv: the C++ half of the Python module `momentkv` (python/momentkv/ is the other
// half: keyword handling, press objects, the streaming generator). This file holds the bindings;
// the rest is split by concern:
//   gil.h            threads, the GIL, Ctrl-C, streams' cancellation and interpreter exit
//   python_values.h  text and option values between Python and the engine
//   python_press.*   press specs with budgets in Python's words, presses written in Python
//   model.h          Model (loading, tokenizing, logits, generation) and TextStream (streaming)
//   session.h        Session: one sequence kept between calls, its cache as numpy views
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "gil.h"
#include "kv/presses/snapkv.h"
#include "model.h"
#include "python_press.h"
#include "python_values.h"
#include "session.h"

namespace py = pybind11;
using namespace momentkv_python;

PYBIND11_MODULE(_momentkv, m) {
  m.doc() = "momentkv's C++ engine (use the package momentkv, not this module directly)";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const mkv::MkvError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  m.def("_mark_interpreter_exit", &mark_interpreter_exit,
        "Called by momentkv's atexit handler once its streams are closed: threads still computing park "
        "instead of taking the GIL while Python finalizes.");
  m.def(
      "parse_press",
      [](const std::string& spec, std::optional<int64_t> kv_budget, std::optional<double> compression_ratio,
         bool require_budget) {
        const mkv::PressConfig c = parse_press_spec(spec, kv_budget, compression_ratio, require_budget);
        return py::make_tuple(c.name(), c.spec(), c.as_given());
      },
      py::arg("spec"), py::arg("kv_budget") = py::none(), py::arg("compression_ratio") = py::none(),
      py::arg("require_budget") = false,
      "Validates a press spec like --press (with kv_budget/compression_ratio as --kv-budget/--compression-ratio); "
      "returns (name, canonical spec, spec as given). ValueError with the engine's message when it is invalid.");
  m.def("pooling_kernel", [](const py::int_& budget) { return mkv::pooling_kernel(layer_budget(budget)); },
        py::arg("budget"),
        "The max-pool kernel that kernel=auto gives a layer budget of `budget` tokens per KV head "
        "(L/3 made odd, in [7, 31]).");
  m.def("observation_window", [](const py::int_& budget) { return mkv::observation_window(layer_budget(budget)); },
        py::arg("budget"),
        "The observation window that window=auto gives a layer budget of `budget` tokens per KV head "
        "(L/64 in [1, 32]): the queries a window-based press scores with and the recent rows it keeps.");
  m.def("press_catalog", &press_catalog, "Every press with its parameters and defaults (momentkv presses).");

  py::class_<TextStream>(m, "TextStream")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &TextStream::next)
      .def("close", &TextStream::close);

  py::class_<CacheExport>(m, "CacheExport", "The base object of a numpy view of a session's cache.");

  py::class_<PyHeadView>(m, "HeadView")
      .def_readonly("layer", &PyHeadView::layer)
      .def_readonly("kv_head", &PyHeadView::kv_head)
      .def_property_readonly("length", &PyHeadView::length)
      .def("__len__", &PyHeadView::length)
      .def_property_readonly("positions", &PyHeadView::positions)
      .def_property_readonly("keys", [](const PyHeadView& h) { return h.rows(true); })
      .def_property_readonly("values", [](const PyHeadView& h) { return h.rows(false); })
      .def_property_readonly("moments", &PyHeadView::moments);

  py::class_<PyCache>(m, "Cache")
      .def_property_readonly("n_layers", [](const PyCache& c) { return c.cache().shape().n_layers; })
      .def_property_readonly("n_kv_heads", [](const PyCache& c) { return c.cache().shape().n_kv_heads; })
      .def_property_readonly("head_dim_k", [](const PyCache& c) { return c.cache().shape().head_dim_k; })
      .def_property_readonly("head_dim_v", [](const PyCache& c) { return c.cache().shape().head_dim_v; })
      .def_property_readonly("bytes_held", [](const PyCache& c) { return c.cache().bytes_held(); })
      .def_property_readonly("moment_bytes", [](const PyCache& c) { return c.cache().moment_bytes(); })
      .def_property_readonly("row_bytes", [](const PyCache& c) { return c.cache().row_bytes(); })
      .def_property_readonly("total_rows", [](const PyCache& c) { return c.cache().total_tokens(); })
      .def_property_readonly("tracks_moments", [](const PyCache& c) { return c.cache().tracks_moments(); })
      .def_property_readonly("live_views", [](const PyCache& c) { return c.session_obj.cast<PySession&>().exports; })
      .def("head", &PyCache::head, py::arg("layer"), py::arg("kv_head"));

  py::class_<PySession>(m, "Session")
      .def(py::init<py::object, const py::object&, std::optional<int64_t>, std::optional<double>, int, int>(),
           py::arg("model"), py::arg("press"), py::arg("kv_budget"), py::arg("compression_ratio"), py::arg("ctx"),
           py::arg("query_window"))
      .def("prefill", &PySession::prefill, py::arg("ids"))
      .def("decode", &PySession::decode, py::arg("token"))
      .def("evaluate", &PySession::evaluate, py::arg("ids"))
      .def("reset", &PySession::reset)
      .def("compress", &PySession::compress, py::arg("press"), py::arg("kv_budget"), py::arg("compression_ratio"))
      .def_property_readonly("compress_seconds", [](const PySession& s) { return s.session->compress_seconds(); })
      .def_property_readonly("query_window", [](const PySession& s) { return s.queries.window(); })
      .def_property_readonly("n_past", [](const PySession& s) { return s.session->n_past(); })
      .def_property_readonly("n_ctx", [](const PySession& s) { return s.session->n_ctx(); })
      .def_property_readonly("cache", [](py::object self) { return PyCache{self}; });

  py::class_<Model>(m, "Model")
      .def(py::init<const std::string&, std::optional<int>, int, const std::string&, const std::string&>(),
           py::arg("path"), py::arg("threads") = py::none(), py::arg("ctx") = 0, py::arg("precision") = "exact",
           py::arg("cache_type") = "f32")
      .def_property_readonly("cache_type",
                             [](const Model& m) { return mkv::kv_storage_name(m.kv_storage); })
      .def_property_readonly("n_vocab", &Model::n_vocab)
      .def_property_readonly("n_ctx", &Model::n_ctx)
      .def_readonly("path", &Model::path)
      .def_property_readonly("bos", [](const Model& m) { return m.tokenizer->vocab().bos; })
      .def_property_readonly("eos", [](const Model& m) { return m.tokenizer->vocab().eos; })
      .def("tokenize", &Model::tokenize, py::arg("text"), py::arg("add_bos") = true, py::arg("parse_special") = true)
      .def("detokenize", &Model::detokenize, py::arg("ids"), py::arg("render_special") = false)
      .def("logits", &Model::logits, py::arg("ids"))
      .def("chat_ids", &Model::chat_ids, py::arg("messages"), py::arg("chat_template") = "")
      .def(
          "generate",
          [](py::object self, py::object prompt, int max_tokens, float temperature, float top_p,
             int top_k, float min_p, std::optional<int64_t> seed, py::object press,
             std::optional<int64_t> kv_budget, std::optional<double> compression_ratio,
             const std::vector<py::str>& stop, bool ignore_eos, bool stream) -> py::object {
            Model& model = self.cast<Model&>();
            check_not_in_press();
            std::vector<std::string> stop_texts;
            for (const py::str& s : stop) stop_texts.push_back(utf8_text(s, "a stop string"));
            GenerationJob j = model.job(model.prompt_ids(prompt), max_tokens, temperature, top_p, top_k, min_p, seed, press, kv_budget,
                                        compression_ratio, std::move(stop_texts), ignore_eos);
            if (!stream) return model.generate_blocking(j);
            return py::cast(std::make_unique<TextStream>(self, model, std::move(j)));
          },
          py::arg("prompt"), py::arg("max_tokens"), py::arg("temperature"), py::arg("top_p"), py::arg("top_k"),
          py::arg("min_p"), py::arg("seed"), py::arg("press"), py::arg("kv_budget"), py::arg("compression_ratio"),
          py::arg("stop"), py::arg("ignore_eos"), py::arg("stream"));
}
