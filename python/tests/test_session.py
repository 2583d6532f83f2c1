"""momentkv.Session: step-by-step prefill/decode/evaluate, and the KV cache seen from Python as
read-only numpy views (no copy) that match the CLI's bytes held and the full cache's rows."""

import _thread
import gc
import re
import subprocess
import threading
import time

import numpy as np
import pytest

import momentkv
from momentkv import presses
from conftest import NEEDLE_MODEL, NEEDLE_PROMPT

BUDGET = 64


@pytest.fixture(scope="module")
def prompt_ids(needle_model):
    return needle_model.tokenize(NEEDLE_PROMPT.read_text())  # as `momentkv generate -f` encodes it


@pytest.fixture(scope="module")
def full(needle_model, prompt_ids):
    s = needle_model.session()
    s.prefill(prompt_ids)
    return s


@pytest.fixture(scope="module")
def compressed(needle_model, prompt_ids):
    s = needle_model.session(press="momentkv:alloc=uniform", kv_budget=BUDGET)
    s.prefill(prompt_ids)
    return s


def data_ptr(a):
    return a.__array_interface__["data"][0]


def test_full_session_logits_equal_model_logits(needle_model):
    ids = needle_model.tokenize("Once upon a time, there was a little girl who loved the sea.")
    expected = needle_model.logits(ids)
    # evaluate runs Model.logits' path (all rows, chunks of 512): bit for bit.
    e = needle_model.session()
    assert e.n_ctx == needle_model.n_ctx and e.n_past == 0
    assert e.evaluate(ids).tobytes() == expected.tobytes()
    assert e.n_past == len(ids)
    # evaluate continues a session: the rows of positions k.. of the whole sequence.
    k = 6
    c = needle_model.session()
    c.prefill(ids[:k])
    np.testing.assert_allclose(c.evaluate(ids[k:]), expected[k:], rtol=0, atol=1e-4)  # other chunk shapes
    # prefill/decode compute only the last row (as `momentkv generate`), a different matmul shape
    # than Model.logits' all-rows pass: equal to float32 rounding, not bit for bit.
    s = needle_model.session()
    got = s.prefill(ids[:k])
    assert got.dtype == np.float32 and got.shape == (needle_model.n_vocab,)
    np.testing.assert_allclose(got, expected[k - 1], rtol=0, atol=1e-4)
    for i in range(k, len(ids)):
        got = s.decode(ids[i])
        np.testing.assert_allclose(got, expected[i], rtol=0, atol=1e-4)
        assert got.argmax() == expected[i].argmax()
    assert s.n_past == len(ids)


def greedy(session, ids, n):
    out = []
    logits = session.prefill(ids)
    for _ in range(n):
        out.append(int(logits.argmax()))
        if len(out) < n:
            logits = session.decode(out[-1])
    return out


@pytest.mark.parametrize("press", ["full", "momentkv:alloc=uniform", presses.SnapKV(window=16)])
def test_greedy_session_equals_generate(press, needle_model, prompt_ids):
    # generate() equals `momentkv generate` (test_model.py): the session runs the same steps.
    kv_budget = None if press == "full" else BUDGET
    expected = needle_model.generate_details(prompt_ids, 8, temperature=0, press=press, kv_budget=kv_budget,
                                             ignore_eos=True)["tokens"]
    assert greedy(needle_model.session(press=press, kv_budget=kv_budget), prompt_ids, 8) == expected


def test_bytes_held_equal_cli(cli, compressed, prompt_ids):
    r = subprocess.run([cli, "generate", "-m", str(NEEDLE_MODEL), "-f", str(NEEDLE_PROMPT), "-n", "1", "--temp", "0",
                        "--press", "momentkv:alloc=uniform", "--kv-budget", str(BUDGET),
                        "-ctk", "f32"],  # the Python session's cache type (generate's default is f16)
                       check=True, capture_output=True, text=True)
    held = re.search(r"kv cache after the prompt: (\d+) bytes held", r.stderr)
    assert held, r.stderr
    c = compressed.cache
    assert c.bytes_held == int(held.group(1))
    assert compressed.n_past == len(prompt_ids) > BUDGET
    assert c.total_rows == c.n_layers * c.n_kv_heads * BUDGET
    assert c.moment_bytes > 0 and c.row_bytes > 0
    assert c.bytes_held == c.total_rows * c.row_bytes + c.moment_bytes


def test_fp16_cache_holds_what_the_cli_default_holds(cli, prompt_ids):
    model = momentkv.Model(NEEDLE_MODEL, cache_type="f16")
    assert model.cache_type == "f16" and momentkv.Model(NEEDLE_MODEL).cache_type == "f32"
    s = model.session(press="momentkv:alloc=uniform", kv_budget=BUDGET)
    s.prefill(prompt_ids)
    r = subprocess.run([cli, "generate", "-m", str(NEEDLE_MODEL), "-f", str(NEEDLE_PROMPT), "-n", "1", "--temp", "0",
                        "--press", "momentkv:alloc=uniform", "--kv-budget", str(BUDGET)],  # generate's f16 default
                       check=True, capture_output=True, text=True)
    held = re.search(r"kv cache after the prompt: (\d+) bytes held", r.stderr)
    assert held, r.stderr
    c = s.cache
    assert c.bytes_held == int(held.group(1))
    assert c.bytes_held == c.total_rows * c.row_bytes + c.moment_bytes
    # A key and a value of head_dim fp16 values and a 4-byte position per row.
    assert c.row_bytes == 2 * (c.head(0, 0).keys.shape[1] + c.head(0, 0).values.shape[1]) + 4
    keys = c.head(0, 0).keys  # decoded to float32 (a copy), every value an fp16 one
    assert keys.dtype == np.float32 and keys.shape == (BUDGET, keys.shape[1])
    assert np.array_equal(keys, keys.astype(np.float16).astype(np.float32))


def test_a_bad_cache_type_names_the_choices():
    with pytest.raises(ValueError, match='cache_type must be "f32" or "f16", got "q8_0"'):
        momentkv.Model(NEEDLE_MODEL, cache_type="q8_0")


def test_kept_rows_equal_the_full_cache(full, compressed, prompt_ids):
    fc, cc = full.cache, compressed.cache
    assert (fc.n_layers, fc.n_kv_heads) == (cc.n_layers, cc.n_kv_heads)
    for layer in range(cc.n_layers):
        for kv in range(cc.n_kv_heads):
            h, f = cc.head(layer, kv), fc.head(layer, kv)
            pos = h.positions
            assert pos.dtype == np.int32 and pos.shape == (BUDGET,) and len(h) == BUDGET
            assert np.all(np.diff(pos) > 0)
            assert np.array_equal(f.positions, np.arange(len(prompt_ids), dtype=np.int32))
            keys, values = h.keys, h.values
            assert keys.dtype == np.float32 and keys.shape == (BUDGET, fc.head_dim_k)
            assert values.shape == (BUDGET, fc.head_dim_v)
            assert keys.tobytes() == f.keys[pos].tobytes()
            assert values.tobytes() == f.values[pos].tobytes()
    assert cc.live_views == 3 and fc.live_views == 0  # pos, keys, values (f.keys[pos] is a copy)
    del pos, keys, values
    assert cc.live_views == 0


def test_views_are_read_only_and_not_copies(compressed):
    h = compressed.cache.head(1, 0)
    a, b = h.keys, compressed.cache.head(1, 0).keys
    assert data_ptr(a) == data_ptr(b)  # the cache's own buffer, twice
    assert data_ptr(h.values) == data_ptr(h.values) and data_ptr(h.positions) == data_ptr(h.positions)
    for v in (a, h.values, h.positions):
        assert not v.flags.writeable and not v.flags.owndata
        with pytest.raises(ValueError):
            v[0] = 0
        with pytest.raises(ValueError):
            v.setflags(write=True)
    assert type(a.base).__name__ == "CacheExport"


def test_views_block_changes_until_dropped(needle_model, prompt_ids):
    s = needle_model.session(press="snapkv", kv_budget=16)
    s.prefill(prompt_ids[:40])
    keys = s.cache.head(0, 0).keys
    row = keys[3:5]  # a numpy view of the view keeps the cache's buffer too
    kept = keys.copy()
    del keys
    assert s.cache.live_views == 1
    with pytest.raises(BufferError, match="1 numpy view"):
        s.decode(5)
    with pytest.raises(BufferError):
        s.evaluate([5, 6])
    assert s.n_past == 40  # nothing changed
    assert np.array_equal(row, kept[3:5])
    del row
    assert s.cache.live_views == 0
    s.decode(5)
    assert s.n_past == 41
    # A view keeps the session (and its cache) alive after the session object is dropped.
    pos = s.cache.head(0, 0).positions
    expected = pos.copy()
    del s
    gc.collect()
    assert np.array_equal(pos, expected)


def test_moments(compressed, needle_model, prompt_ids):
    n = len(prompt_ids)
    c = compressed.cache
    for layer in range(c.n_layers):
        for kv in range(c.n_kv_heads):
            m = c.head(layer, kv).moments
            assert m["count"] == n - BUDGET > 0
            assert m["counts"].sum() == m["count"]
            assert m["key_means"].shape == (m["groups"], c.head_dim_k)
            assert m["value_means"].shape == (m["groups"], c.head_dim_v)
            assert np.all(np.isfinite(m["key_means"][m["counts"] > 0]))
    s = needle_model.session(press=presses.SnapKV(), kv_budget=BUDGET)
    s.prefill(prompt_ids)
    assert s.cache.head(0, 0).moments is None and s.cache.moment_bytes == 0
    assert needle_model.session().cache.head(0, 0).moments is None


def test_python_press_in_a_session(needle_model, prompt_ids):
    class Recency(momentkv.ScorerPress):
        def score(self, keys, values, queries, positions, layer, kv_head):
            return positions

    s = needle_model.session(press=Recency(window=8, sinks=0), kv_budget=BUDGET)
    s.prefill(prompt_ids)
    n = len(prompt_ids)
    assert np.array_equal(s.cache.head(0, 0).positions, np.arange(n - BUDGET, n, dtype=np.int32))

    class Boom(momentkv.ScorerPress):
        def score(self, keys, values, queries, positions, layer, kv_head):
            raise KeyError("boom")

    b = needle_model.session(press=Boom(), kv_budget=BUDGET)
    with pytest.raises(KeyError, match="boom"):
        b.prefill(prompt_ids)
    assert b.n_past == 0 and b.cache.total_rows == 0  # a failed computation leaves the session reset
    b.prefill(prompt_ids[:BUDGET])  # under the budget: nothing to score, works

    class Peek(momentkv.ScorerPress):
        def score(self, keys, values, queries, positions, layer, kv_head):
            self.session.cache.head(0, 0)  # the session is computing: RuntimeError
            return positions

    p = Peek()
    p.session = needle_model.session(press=p, kv_budget=BUDGET)
    with pytest.raises(RuntimeError, match="computing"):
        p.session.prefill(prompt_ids)
    assert p.session.n_past == 0
    del p.session  # (a reference cycle otherwise)


def test_ctrl_c_interrupts_a_prefill():
    model = momentkv.Model(NEEDLE_MODEL, ctx=9000)
    s = model.session(press="momentkv:alloc=uniform", kv_budget=64)
    ids = [1] + [400 + i % 100 for i in range(7999)]  # seconds of prefill
    timer = threading.Timer(0.2, _thread.interrupt_main)
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        s.prefill(ids)
    assert time.monotonic() - start < 1.5
    timer.join()
    assert s.n_past == 0 and s.cache.total_rows == 0  # interrupted mid-computation: reset
    assert s.prefill(ids[:100]).shape == (model.n_vocab,) and s.cache.head(0, 0).length == 64


def test_bad_inputs(needle_model, compressed):
    with pytest.raises(IndexError):
        compressed.cache.head(99, 0)
    with pytest.raises(IndexError):
        compressed.cache.head(0, 99)
    with pytest.raises(IndexError):
        compressed.cache.head(-1, 0)
    s = needle_model.session(ctx=16)
    assert s.n_ctx == 16
    with pytest.raises(ValueError, match="out of range"):
        s.prefill([1, needle_model.n_vocab])
    with pytest.raises(ValueError, match="out of range"):
        s.decode(-1)
    with pytest.raises(ValueError, match="no token ids"):
        s.prefill([])
    with pytest.raises(TypeError):
        s.decode("a")
    # Bools and arrays are not token ids (operator.index took True as 1, and a 2-D array's rows gave
    # numpy's own message).
    with pytest.raises(TypeError, match="token must be an int, got bool"):
        s.decode(True)
    with pytest.raises(TypeError, match="a token id must be an int, got ndarray"):
        s.prefill(np.array([[1, 2], [3, 4]]))
    with pytest.raises(TypeError, match="a token id must be an int, got bool"):
        s.prefill([1, True])
    with pytest.raises(TypeError, match="query_window must be an int, got float"):
        needle_model.session(query_window=8.0)
    # Past int64 (pybind11's 'incompatible function arguments', or a RuntimeError from generate).
    with pytest.raises(ValueError, match=r"token id 1180591620717411303424 at index 1 is out of range"):
        s.prefill([1, 2**70])
    with pytest.raises(ValueError, match=r"token id -1180591620717411303424 at index 0 is out of range"):
        needle_model.generate([-2**70], 2)
    # A lone surrogate as a press spec (pybind11's 'Unable to cast Python instance').
    with pytest.raises(ValueError, match="press is not valid UTF-8 text"):
        needle_model.session(press="\udcff", kv_budget=4)
    with pytest.raises(ValueError, match="press is not valid UTF-8 text"):
        needle_model.generate("Once", 2, press="\udcff", kv_budget=4)
    assert s.n_past == 0
    s.prefill(list(range(1, 17)))
    with pytest.raises(ValueError, match="context"):
        s.decode(1)
    with pytest.raises(ValueError, match="context"):
        s.evaluate([1])
    assert s.n_past == 16
    with pytest.raises(ValueError):
        needle_model.session(ctx=needle_model.n_ctx + 1)
    with pytest.raises(ValueError, match="kernel=4 must be odd"):
        needle_model.session(press="snapkv:kernel=4", kv_budget=8)
    with pytest.raises(ValueError):
        needle_model.session(press="snapkv")  # no budget
    with pytest.raises(TypeError):
        needle_model.session(press=3)
    s.reset()
    assert s.n_past == 0 and s.cache.total_rows == 0


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def test_sessions_do_not_leak(needle_model):
    ids = needle_model.tokenize("Once upon a time there was")[:8]

    def churn(n):
        for _ in range(n):
            s = needle_model.session(press="momentkv", kv_budget=4)
            s.prefill(ids)
            h = s.cache.head(0, 0)
            _ = (h.keys, h.values, h.positions, h.moments)
            del h, _, s

    churn(100)
    gc.collect()
    before = rss_kib()
    churn(1000)
    gc.collect()
    grown = rss_kib() - before
    print(f"RSS grew by {grown} KiB over 1,000 sessions")
    assert grown < 4 * 1024, f"RSS grew by {grown} KiB over 1,000 sessions"
