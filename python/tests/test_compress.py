"""Session.compress(press, ...): another press's compression step on the cache as it stands. A full
session prefilled with the needle prompt and then compressed keeps the same rows, bytes and moments
as a session created with that press; a second compress shrinks it further; bad arguments and
presses that cannot be applied later raise ValueError, naming Python's arguments."""

import numpy as np
import pytest

import momentkv
from momentkv import presses
from conftest import NEEDLE_PROMPT

BUDGET = 64


@pytest.fixture(scope="module")
def prompt_ids(needle_model):
    return needle_model.tokenize(NEEDLE_PROMPT.read_text())


class QueryKeyScore(momentkv.ScorerPress):
    """A Python press whose scores read the observed queries: mean query of the window · key."""

    def score(self, keys, values, queries, positions, layer, kv_head):
        return keys @ queries.mean(axis=(0, 1))


def prefilled(model, ids, **session_args):
    s = model.session(**session_args)
    s.prefill(ids)
    return s


def kept(session):
    c = session.cache
    return [(c.head(layer, kv).positions.copy(), c.head(layer, kv).keys.copy(), c.head(layer, kv).values.copy())
            for layer in range(c.n_layers) for kv in range(c.n_kv_heads)]


def assert_same_cache(a, b):
    for (pa, ka, va), (pb, kb, vb) in zip(kept(a), kept(b), strict=True):
        assert np.array_equal(pa, pb)
        assert ka.tobytes() == kb.tobytes() and va.tobytes() == vb.tobytes()
    assert a.cache.bytes_held == b.cache.bytes_held and a.cache.moment_bytes == b.cache.moment_bytes


@pytest.mark.parametrize("press", ["momentkv", "snapkv", "adakv:nc=1", "pyramidkv", presses.SnapKV(window=16),
                                   QueryKeyScore(window=8, alloc="adaptive")],
                         ids=["momentkv", "snapkv", "adakv-nc", "pyramidkv", "snapkv-window16", "python"])
def test_compress_equals_a_session_created_with_the_press(needle_model, prompt_ids, press):
    with_press = prefilled(needle_model, prompt_ids, press=press, kv_budget=BUDGET)
    later = prefilled(needle_model, prompt_ids)
    rows_before = later.cache.total_rows
    later.compress(press, kv_budget=BUDGET)
    c = later.cache
    assert rows_before == c.n_layers * c.n_kv_heads * len(prompt_ids)
    assert c.total_rows < rows_before and later.n_past == len(prompt_ids)
    assert_same_cache(later, with_press)
    assert later.compress_seconds > 0
    # The next steps attend to the same cache, with the press's NC: the same logits.
    assert later.decode(5).tobytes() == with_press.decode(5).tobytes()
    assert later.evaluate([7, 8]).tobytes() == with_press.evaluate([7, 8]).tobytes()


def test_momentkv_later_keeps_the_same_moments(needle_model, prompt_ids):
    with_press = prefilled(needle_model, prompt_ids, press="momentkv", kv_budget=BUDGET)
    later = prefilled(needle_model, prompt_ids)
    assert later.cache.head(0, 0).moments is None and not later.cache.tracks_moments
    later.compress("momentkv", kv_budget=BUDGET)
    assert later.cache.tracks_moments and later.cache.moment_bytes > 0
    for layer in range(later.cache.n_layers):
        a, b = later.cache.head(layer, 1).moments, with_press.cache.head(layer, 1).moments
        assert a["count"] == b["count"] == len(prompt_ids) - later.cache.head(layer, 1).length > 0
        assert np.array_equal(a["counts"], b["counts"])
        np.testing.assert_array_equal(a["key_means"], b["key_means"])
    # reset() brings back the session's own press (full): no moments, no NC.
    later.reset()
    assert later.n_past == 0 and not later.cache.tracks_moments
    later.prefill(prompt_ids[:100])
    assert later.cache.total_rows == later.cache.n_layers * later.cache.n_kv_heads * 100
    assert later.cache.head(0, 0).moments is None


def test_second_compress_shrinks_further(needle_model, prompt_ids):
    s = prefilled(needle_model, prompt_ids)
    s.compress("momentkv", kv_budget=BUDGET)
    first = [p for p, _, _ in kept(s)]
    held = s.cache.bytes_held
    s.compress("momentkv", kv_budget=BUDGET)  # already at the budget: nothing to evict
    assert s.cache.bytes_held == held
    # A ratio is a fraction of the sequence (n_past), as everywhere: 1,019 · 0.5 rows > 64 held.
    s.compress(presses.MomentKV(), compression_ratio=0.5)
    assert s.cache.bytes_held == held
    s.compress("momentkv", kv_budget=16)
    c = s.cache
    assert c.total_rows == c.n_layers * c.n_kv_heads * 16 and c.bytes_held < held
    for i, ((pos, _, _), before) in enumerate(zip(kept(s), first, strict=True)):
        assert np.isin(pos, before).all()  # a subset of what the first pass kept
        layer, kv = divmod(i, c.n_kv_heads)
        assert c.head(layer, kv).moments["count"] == len(prompt_ids) - len(pos)  # every other token folded in
    s.compress("full")  # keeps every token
    assert s.cache.total_rows == c.n_layers * c.n_kv_heads * 16


def test_compress_on_a_compressing_session(needle_model, prompt_ids):
    # A session with its own press: compress() applies another budget; decoding goes on with the
    # session's own press (which, without decode_slack, evicts nothing more).
    s = prefilled(needle_model, prompt_ids, press="snapkv", kv_budget=BUDGET)
    s.compress("snapkv", kv_budget=24)
    s.decode(5)
    assert s.cache.head(0, 0).length == 25 and s.n_past == len(prompt_ids) + 1


def test_compress_errors(needle_model, prompt_ids):
    empty = needle_model.session()
    with pytest.raises(ValueError, match="holds no tokens"):
        empty.compress("snapkv", kv_budget=BUDGET)
    s = prefilled(needle_model, prompt_ids)
    rows = s.cache.total_rows
    with pytest.raises(ValueError, match="needs a budget: give kv_budget=L .* or compression_ratio=r"):
        s.compress("snapkv")
    with pytest.raises(ValueError, match="kernel=4 must be odd"):
        s.compress("snapkv:kernel=4", kv_budget=BUDGET)
    with pytest.raises(ValueError, match="unknown press 'nope'"):
        s.compress("nope", kv_budget=BUDGET)
    with pytest.raises(TypeError):
        s.compress(None, kv_budget=BUDGET)
    with pytest.raises(TypeError):
        s.compress("snapkv", kv_budget="64")
    with pytest.raises(ValueError, match="scores with every query"):
        s.compress("h2o", kv_budget=BUDGET)
    with pytest.raises(ValueError, match="scores with every query"):
        s.compress(presses.AdaKV(scorer="h2o"), kv_budget=BUDGET)
    with pytest.raises(ValueError, match=r"observes the last 100 queries, this session keeps the last 64 "
                                         r"\(create it with query_window=100\)"):
        s.compress("snapkv:window=100", kv_budget=BUDGET)
    view = s.cache.head(0, 0).keys
    with pytest.raises(BufferError, match="1 numpy view"):
        s.compress("snapkv", kv_budget=BUDGET)
    del view
    assert s.cache.total_rows == rows and s.n_past == len(prompt_ids)  # the errors changed nothing
    s.compress("snapkv", kv_budget=BUDGET)
    with pytest.raises(ValueError, match="needs a cache that tracks moments in 2 groups, means only; this one "
                                         "tracks no moments and has already evicted tokens"):
        s.compress("momentkv", kv_budget=32)
    assert s.cache.total_rows == s.cache.n_layers * s.cache.n_kv_heads * BUDGET
    with pytest.raises(ValueError, match="query_window must be >= 1"):
        needle_model.session(query_window=0)


def test_a_larger_query_window_takes_a_larger_observation_window(needle_model, prompt_ids):
    spec = "snapkv:window=100"
    s = prefilled(needle_model, prompt_ids, query_window=100)
    assert s.query_window == 100
    s.compress(spec, kv_budget=128)
    assert_same_cache(s, prefilled(needle_model, prompt_ids, press=spec, kv_budget=128))


@pytest.mark.parametrize("press", ["snapkv", "momentkv", presses.PyramidKV(), QueryKeyScore()],
                         ids=["snapkv", "momentkv", "pyramidkv", "python"])
def test_window_auto_reads_only_the_queries_of_its_budget(needle_model, prompt_ids, press):
    # window=auto at L=64 reads 1 query (2 for pyramid allocation, whose layers may hold up to 2L):
    # a session keeping 2 suffices, one keeping 1 suffices unless the allocation is pyramid.
    pyramid = isinstance(press, presses.PyramidKV)
    s = prefilled(needle_model, prompt_ids, query_window=2)
    s.compress(press, kv_budget=BUDGET)
    assert_same_cache(s, prefilled(needle_model, prompt_ids, press=press, kv_budget=BUDGET))
    one = prefilled(needle_model, prompt_ids, query_window=1)
    if pyramid:
        with pytest.raises(ValueError, match=r"observes the last 2 queries.*query_window=2\)"):
            one.compress(press, kv_budget=BUDGET)
    else:
        one.compress(press, kv_budget=BUDGET)
    # At L=256 auto reads 4 queries.
    with pytest.raises(ValueError, match=r"observes the last (4|8) queries"):
        prefilled(needle_model, prompt_ids, query_window=2).compress(press, kv_budget=256)


def test_an_exception_in_a_python_press_resets_the_session(needle_model, prompt_ids):
    class Boom(momentkv.ScorerPress):
        def score(self, keys, values, queries, positions, layer, kv_head):
            raise KeyError("boom")

    s = prefilled(needle_model, prompt_ids)
    with pytest.raises(KeyError, match="boom"):
        s.compress(Boom(), kv_budget=BUDGET)
    assert s.n_past == 0 and s.cache.total_rows == 0 and not s.cache.tracks_moments


# ---- budget messages name Python's arguments ---------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"kv_budget": 0}, r"kv_budget must be in \[1, 1000000000\]"),
    ({"compression_ratio": 1.5}, r"compression_ratio must be in \[0, 1\)"),
    ({"kv_budget": 8, "compression_ratio": 0.5}, "give kv_budget or compression_ratio, not both"),
    ({}, "needs a budget: (give )?kv_budget=L"),
])
def test_budget_errors_name_the_python_arguments(needle_model, prompt_ids, kwargs, message):
    s = prefilled(needle_model, prompt_ids[:20])
    calls = [lambda: needle_model.generate("Hi", 2, press="snapkv", **kwargs),
             lambda: needle_model.session(press="snapkv", **kwargs),
             lambda: s.compress("snapkv", **kwargs),
             lambda: s.compress(QueryKeyScore(), **kwargs)]
    for call in calls:
        with pytest.raises(ValueError, match=message) as e:
            call()
        assert "--" not in str(e.value), str(e.value)


def test_budget_on_the_full_press_or_twice_names_the_python_arguments(needle_model):
    with pytest.raises(ValueError, match="press 'full' keeps every token: kv_budget / compression_ratio need") as e:
        needle_model.generate("Hi", 2, press="full", kv_budget=8)
    assert "--" not in str(e.value)
    with pytest.raises(ValueError, match=r"given twice \(budget=/ratio= in the spec and kv_budget/compression_ratio\)"):
        needle_model.session(press="snapkv:budget=8", compression_ratio=0.5)
    with pytest.raises(ValueError, match=r"budget=0 must be in \[1, "):  # a Python press's own budget= attribute
        needle_model.generate("Hi", 2, press=QueryKeyScore(budget=0))
