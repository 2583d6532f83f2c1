"""Presses written in Python (momentkv.ScorerPress): a numpy SnapKV (examples/python_snapkv.py)
and a recency scorer keep the same generations as the built-in presses (with NC and the adaptive /
pyramid allocations around them), and bad scores and exceptions surface from generate(). The
overhead of a Python scorer is measured by examples/bench_scorer.py (test_examples.py runs it)."""

import sys

import numpy as np
import pytest

import momentkv
from conftest import NEEDLE_PROMPT, REPO

sys.path.insert(0, str(REPO / "examples"))
from python_snapkv import PySnapKV  # noqa: E402 - SnapKV's score in numpy, the README's example


class Recency(momentkv.ScorerPress):
    def score(self, keys, values, queries, positions, layer, kv_head):
        return positions


class Returns(momentkv.ScorerPress):
    """Returns whatever make(n) builds."""

    def __init__(self, make, **kw):
        super().__init__(**kw)
        self.make = make

    def score(self, keys, values, queries, positions, layer, kv_head):
        return self.make(len(positions))


@pytest.fixture(scope="module")
def needle_text():
    return NEEDLE_PROMPT.read_text()


def tokens(model, text, press, budget, n=8):
    return model.generate_details(text, n, temperature=0, press=press, kv_budget=budget)["tokens"]


# ---- equal to the built-in presses -------------------------------------------------------------

@pytest.mark.parametrize("budget", [16, 64, 128])
def test_python_snapkv_equals_builtin_snapkv(needle_model, needle_text, budget):
    full = tokens(needle_model, needle_text, "full", None)
    builtin = tokens(needle_model, needle_text, "snapkv", budget)
    assert tokens(needle_model, needle_text, PySnapKV(), budget) == builtin
    if budget == 16:
        assert builtin != full  # the comparison is not vacuous: this budget changes the reply


def test_auto_window_is_the_budgets_window(needle_model, needle_text):
    assert [momentkv.presses.observation_window(b) for b in (16, 64, 96, 128, 4096)] == [1, 1, 1, 2, 32]
    budget = 24  # window=auto observes and protects 1 row here
    auto = tokens(needle_model, needle_text, PySnapKV(), budget)
    assert auto == tokens(needle_model, needle_text, PySnapKV(window=1), budget)
    assert auto == tokens(needle_model, needle_text, "snapkv:window=1", budget)
    assert auto != tokens(needle_model, needle_text, PySnapKV(window=32), budget)  # the window matters here
    with pytest.raises(TypeError, match='window must be an int or "auto", got str'):
        PySnapKV(window="wide")


@pytest.mark.parametrize("budget", [16, 64])
@pytest.mark.parametrize("python_press, spec", [
    (lambda: PySnapKV(nc=True), "snapkv:nc=1"),
    (lambda: PySnapKV(alloc="adaptive"), "adakv"),
    (lambda: PySnapKV(alloc="adaptive", nc=True, safeguard=0.5), "adakv:nc=1,safeguard=0.5"),
    (lambda: PySnapKV(alloc="pyramid"), "pyramidkv"),
    (lambda: PySnapKV(window=16, sinks=2), "snapkv:window=16,sinks=2"),
    (lambda: PySnapKV(alloc="adaptive", rounds=3), "adakv:rounds=3"),
    (lambda: PySnapKV(decode_slack=2), "snapkv:decode_slack=2"),
    (lambda: PySnapKV(alloc="global"), "adakv:alloc=global"),
    (lambda: PySnapKV(alloc="pyramid_adaptive"), "adakv:alloc=pyramid_adaptive"),
], ids=["nc", "adaptive", "adaptive-nc", "pyramid", "window16", "rounds3", "decode-slack", "global", "pyramid-adaptive"])
def test_python_snapkv_with_nc_and_allocations(needle_model, needle_text, budget, python_press, spec):
    assert tokens(needle_model, needle_text, python_press(), budget) == tokens(needle_model, needle_text, spec, budget)


@pytest.mark.parametrize("budget", [16, 64])
def test_recency_scorer_equals_streaming_llm(needle_model, needle_text, budget):
    assert tokens(needle_model, needle_text, Recency(), budget) == \
        tokens(needle_model, needle_text, "streaming_llm", budget)


def test_python_press_with_ratio_and_chat_and_stream(needle_model, needle_text):
    assert needle_model.generate(needle_text, 8, temperature=0, press=PySnapKV(), compression_ratio=0.9) == \
        needle_model.generate(needle_text, 8, temperature=0, press="snapkv", compression_ratio=0.9)
    assert needle_model.generate(needle_text, 8, temperature=0, press=PySnapKV(budget=32)) == \
        needle_model.generate(needle_text, 8, temperature=0, press="snapkv", kv_budget=32)
    streamed = "".join(needle_model.generate(needle_text, 8, temperature=0, press=PySnapKV(), kv_budget=32,
                                             stream=True))
    assert streamed == needle_model.generate(needle_text, 8, temperature=0, press="snapkv", kv_budget=32)


def test_score_sees_the_documented_arrays(needle_model, needle_text):
    seen = []

    class Probe(momentkv.ScorerPress):
        window = 8

        def score(self, keys, values, queries, positions, layer, kv_head):
            g = self.geometry
            n = len(positions)
            assert keys.shape == (n, g["head_dim_k"]) and keys.dtype == np.float32
            assert values.shape == (n, g["head_dim_v"]) and values.dtype == np.float32
            assert queries.shape == (8, g["group_size"], g["head_dim_k"]) and queries.dtype == np.float32
            assert positions.dtype == np.int32 and np.all(np.diff(positions) > 0)
            assert not keys.flags.writeable and not positions.flags.writeable
            seen.append((layer, kv_head, n))
            return -np.linalg.norm(keys, axis=1)

    needle_model.generate(needle_text, 1, temperature=0, press=Probe(), kv_budget=32)
    layers = {layer for layer, _, _ in seen}
    assert seen and layers == set(range(max(layers) + 1))


# ---- errors ------------------------------------------------------------------------------------

def test_bad_scores_raise(needle_model, needle_text):
    def run(make):
        return needle_model.generate(needle_text, 2, temperature=0, press=Returns(make), kv_budget=16)

    with pytest.raises(ValueError, match=r"Returns.score\(layer=0, kv_head=0\) returned an array of shape \(3,\)"):
        run(lambda n: np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"shape \(\d+, 2\)"):
        run(lambda n: np.zeros((n, 2), np.float32))
    with pytest.raises(ValueError, match="NaN at row 5"):
        run(lambda n: np.where(np.arange(n) == 5, np.nan, 0.0))
    with pytest.raises(ValueError, match=r"\+inf"):
        run(lambda n: np.full(n, np.inf))
    with pytest.raises(TypeError, match="must return a numpy array .* got list"):
        run(lambda n: [0.0] * n)
    with pytest.raises(TypeError, match="got NoneType"):
        run(lambda n: None)
    with pytest.raises(TypeError, match="dtype"):
        run(lambda n: np.array(["a"] * n))
    # -inf (never keep unless protected) and integer scores are fine.
    run(lambda n: np.where(np.arange(n) % 2 == 0, -np.inf, 0.0))
    run(lambda n: np.arange(n, dtype=np.int64))
    # The model is still usable after a failed generation.
    assert needle_model.generate(needle_text, 2, temperature=0) == needle_model.generate(needle_text, 2, temperature=0)


def test_exceptions_in_score_propagate(needle_model, needle_text):
    class Divides(momentkv.ScorerPress):
        def score(self, keys, values, queries, positions, layer, kv_head):
            return 1 // 0

    with pytest.raises(ZeroDivisionError):
        needle_model.generate(needle_text, 2, temperature=0, press=Divides(), kv_budget=16)

    class Custom(Exception):
        pass

    class Raises(momentkv.ScorerPress):
        def reset(self, geometry):
            super().reset(geometry)
            self.calls = 0

        def score(self, keys, values, queries, positions, layer, kv_head):
            self.calls += 1
            if layer == 1:
                raise Custom(f"boom at layer {layer}")
            return positions

    press = Raises()
    with pytest.raises(Custom, match="boom at layer 1"):
        needle_model.generate(needle_text, 2, temperature=0, press=press, kv_budget=16)
    assert press.calls > 1  # layer 0's heads were scored first
    # In a stream the exception comes out of the iteration.
    with pytest.raises(Custom):
        "".join(needle_model.generate(needle_text, 2, temperature=0, press=Raises(), kv_budget=16, stream=True))

    class Reenters(momentkv.ScorerPress):
        def score(self, keys, values, queries, positions, layer, kv_head):
            needle_model.generate("Once", 1)
            return positions

    with pytest.raises(RuntimeError, match="cannot use a model"):
        needle_model.generate(needle_text, 2, temperature=0, press=Reenters(), kv_budget=16)

    class NoScore(momentkv.ScorerPress):
        pass

    with pytest.raises(NotImplementedError, match="NoScore must implement score"):
        needle_model.generate(needle_text, 2, temperature=0, press=NoScore(), kv_budget=16)


def test_invalid_options(needle_model):
    def gen(press, **kw):
        return needle_model.generate("Once upon a time", 2, temperature=0, press=press, **kw)

    with pytest.raises(ValueError, match=r"window=0 must be in \[1, "):
        gen(Recency(window=0), kv_budget=16)
    with pytest.raises(ValueError, match="sinks=-1"):
        gen(Recency(sinks=-1), kv_budget=16)
    with pytest.raises(ValueError, match="not one of uniform, adaptive, pyramid"):
        gen(Recency(alloc="random"), kv_budget=16)
    with pytest.raises(ValueError, match="needs a budget"):
        gen(Recency())
    with pytest.raises(ValueError, match="given twice"):
        gen(Recency(budget=16), kv_budget=16)
    with pytest.raises(ValueError):
        gen(Recency(), kv_budget=0)
    with pytest.raises(ValueError):
        gen(Recency(), compression_ratio=1.0)
    with pytest.raises(TypeError, match="window must be an int"):
        Recency(window="32")
    with pytest.raises(TypeError, match="nc must be a bool"):
        Recency(nc=1)
    with pytest.raises(TypeError):
        gen(object(), kv_budget=16)


def test_option_ranges_are_the_press_specs(needle_model):
    # Above a C int, and above the spec parser's limits (window/sinks 1e6, decode_slack 1e9).
    def gen(press):
        return needle_model.generate("Once upon a time", 2, temperature=0, press=press, kv_budget=16)

    for key, limit in (("window", 1_000_000), ("sinks", 1_000_000), ("decode_slack", 1_000_000_000)):
        for value in (limit + 1, 2**40):
            with pytest.raises(ValueError, match=rf"press Recency: {key}={value} must be in \[-?\d+, {limit}\]"):
                gen(Recency(**{key: value}))
    with pytest.raises(ValueError, match=r"budget=1180591620717411303424 must be in \[1, 1000000000\]"):
        needle_model.generate("Once upon a time", 2, press=Recency(budget=2**70))
    with pytest.raises(ValueError, match=r"rounds=65 must be in \[1, 64\]"):
        gen(Recency(rounds=65))


def test_options_accept_numpy_integers_not_bools(needle_model, needle_text):
    press = Recency(window=np.int64(8), sinks=np.int32(4), decode_slack=np.int16(-1))
    assert tokens(needle_model, needle_text, press, np.int64(64)) == tokens(needle_model, needle_text,
                                                                          Recency(window=8), 64)
    with pytest.raises(TypeError, match="sinks must be an int, got bool"):
        Recency(sinks=True)
    with pytest.raises(TypeError, match="kv_budget must be an int, got bool"):
        needle_model.generate("Once upon a time", 2, press=Recency(), kv_budget=True)
