"""momentkv: CPU inference of GGUF models with KV-cache compression presses.

    import momentkv
    from momentkv import presses

    model = momentkv.Model("models/stories-needle-2k.gguf")
    print(model.generate("Once upon a time", max_tokens=32, temperature=0))
    text = open("tests/engine/data/trained_model_needle.txt").read()
    reply = model.generate(text, max_tokens=8, temperature=0,
                           press=presses.MomentKV(), kv_budget=64)
    for piece in model.generate("Once upon a time", max_tokens=32, stream=True):
        print(piece, end="", flush=True)
    logits = model.logits(model.tokenize("Once upon a time"))   # numpy (n, n_vocab) float32
    s = model.session(press="momentkv", kv_budget=64)            # step by step, cache visible
    logits = s.prefill(model.tokenize(text)); keys = s.cache.head(0, 0).keys
    s = model.session(); s.prefill(model.tokenize(text))         # full cache, then compress it
    s.compress(presses.SnapKV(), kv_budget=128)                  # on demand, like after a prefill

Computation releases the GIL and runs one at a time per process; Ctrl-C interrupts a long
generate, logits or stream. Engine errors are ValueError (bad spec, budget, ids, GGUF file),
a missing model file is FileNotFoundError.
"""

import atexit
import os
import weakref

from . import _momentkv, presses
from .presses import Press, ScorerPress, _integer

__all__ = ["Model", "Press", "ScorerPress", "Session", "presses"]
__version__ = "0.1.0"


def _press_spec(press):
    """A spec string, or the momentkv.ScorerPress itself (a press written in Python)."""
    if isinstance(press, Press):
        return press.spec
    if isinstance(press, (str, ScorerPress)):
        return press
    raise TypeError(f"press must be a spec string, a momentkv.presses object or a momentkv.ScorerPress, "
                    f"got {type(press).__name__}")


def _stop_list(stop):
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop]
    stop = list(stop)
    for s in stop:
        if not isinstance(s, str):
            raise TypeError(f"stop must be a str or a list of str, got an element of type {type(s).__name__}")
    return stop


def _messages(messages):
    out = []
    for m in messages:
        if isinstance(m, dict):
            role, content = m.get("role"), m.get("content")
        elif isinstance(m, (tuple, list)) and len(m) == 2:
            role, content = m
        else:
            raise TypeError("each message must be a dict {'role': ..., 'content': ...} or a (role, content) pair")
        if not isinstance(role, str) or not isinstance(content, str):
            raise TypeError("a message's role and content must be str")
        out.append((role, content))
    if not out:
        raise ValueError("chat: no messages given")
    return out


def _ids(ids):
    """A list of Python ints from any iterable of integers (numpy arrays included); TypeError otherwise."""
    if isinstance(ids, (str, bytes)):
        raise TypeError("token ids must be an iterable of ints, not a string")
    out = [_integer("a token id", i) for i in ids]
    for index, i in enumerate(out):
        # The engine checks ids against the vocabulary; past int64 it could not take them.
        if not -2**63 <= i < 2**63:
            raise ValueError(f"token id {i} at index {index} is out of range")
    return out


def _kv_budget(kv_budget):
    if kv_budget is None:
        return None
    value = _integer("kv_budget", kv_budget)
    # The engine checks the range (a number of tokens per KV head); past int64 it could not take it.
    if not -2**63 <= value < 2**63:
        raise ValueError(f"kv_budget={value} is out of range: it is a number of tokens per KV head")
    return value


# The engine's streams, closed at interpreter exit: a stream left running (a generator still
# referenced) would keep its worker computing, and calling its Python press, while Python finalizes.
# Then threads still computing (daemon threads) are told to park instead of taking the GIL.
_streams = weakref.WeakSet()


@atexit.register
def _at_exit():
    for stream in list(_streams):
        stream.close()
    _momentkv._mark_interpreter_exit()


def _stream(pieces):
    """A real generator over the engine's stream: closing it (or dropping it) cancels the generation."""
    try:
        yield from pieces
    finally:
        pieces.close()


class Model:
    """A GGUF model loaded for inference.

    Model(path, threads=None, ctx=0, precision="exact", cache_type="f32"): threads None or 0 uses every hardware
    thread; ctx 0 is the model's context length; precision "exact" or "fast" (8-bit activations
    for decode-sized products of quantised weights, fp16 ones for F16 weights' decode, bf16 ones
    for every product of BF16 weights, as `momentkv --precision fast`); cache_type "f32" or "f16"
    stores the keys and values of this model's sessions as float32 or fp16 (`-ctk/-ctv`; the CLI's
    generate, serve and bench default to f16). The thread count and precision are applied whenever
    this model computes.
    """

    def __init__(self, path, threads=None, ctx=0, precision="exact", cache_type="f32"):
        self._m = _momentkv.Model(os.fspath(path), threads, ctx, precision, cache_type)

    @property
    def cache_type(self):
        return self._m.cache_type

    @property
    def n_vocab(self):
        return self._m.n_vocab

    @property
    def n_ctx(self):
        return self._m.n_ctx

    @property
    def path(self):
        return self._m.path

    def tokenize(self, text, add_bos=True, parse_special=True):
        """Token ids of `text` (BOS as the vocab asks when add_bos; special-token texts parsed)."""
        return self._m.tokenize(text, add_bos, parse_special)

    def detokenize(self, ids, render_special=False):
        """The text of token ids (ValueError for an id out of range)."""
        return self._m.detokenize(_ids(ids), render_special)

    def logits(self, ids):
        """Logits of every position of `ids` on a fresh full cache: numpy float32 (len(ids), n_vocab),
        bit for bit what `momentkv logits --tokens ...` writes."""
        return self._m.logits(_ids(ids))

    def generate(self, prompt, max_tokens=-1, *, temperature=0.8, top_p=0.95, top_k=40, min_p=0.05, seed=None,
                 press="full", kv_budget=None, compression_ratio=None, stop=None, ignore_eos=False, stream=False):
        """Continues `prompt` (a str, encoded like `momentkv generate -p`, or a list of token ids).

        Sampling as llama.cpp (temperature <= 0: greedy; seed None: random). `press` is a spec
        string ("snapkv:window=16"), a momentkv.presses object or a momentkv.ScorerPress (a press
        written in Python, whose exceptions propagate from here); a compressing press needs exactly
        one of kv_budget (tokens per KV head) or compression_ratio (fraction removed), or a budget
        in the spec. The prompt is compressed after its prefill, then the reply is decoded.
        `stop`: a str or list of str that ends the reply (excluded). Returns the reply text, or
        with stream=True a generator of text pieces (closing it cancels the generation).
        """
        return self._generate(prompt, max_tokens, temperature, top_p, top_k, min_p, seed, press, kv_budget,
                              compression_ratio, stop, ignore_eos, stream, details=False)

    def generate_details(self, prompt, max_tokens=-1, *, temperature=0.8, top_p=0.95, top_k=40, min_p=0.05,
                         seed=None, press="full", kv_budget=None, compression_ratio=None, stop=None,
                         ignore_eos=False):
        """generate() returning a dict: text, tokens (generated ids), prompt_tokens, stop_reason
        ("eos", "stop", "length", "context"), prefill_seconds, decode_seconds."""
        return self._generate(prompt, max_tokens, temperature, top_p, top_k, min_p, seed, press, kv_budget,
                              compression_ratio, stop, ignore_eos, False, details=True)

    def chat(self, messages, max_tokens=-1, *, chat_template=None, **kwargs):
        """generate() on a conversation rendered with the GGUF's chat template (or chat_template=
        "llama3" | "chatml" | "qwen3"); messages are dicts {"role", "content"} or (role, content)
        pairs. ValueError when the model has no recognised template and none is given."""
        if chat_template is not None and not isinstance(chat_template, str):
            raise TypeError("chat_template must be a str")
        ids = self._m.chat_ids(_messages(messages), chat_template or "")
        return self.generate(ids, max_tokens, **kwargs)

    def _generate(self, prompt, max_tokens, temperature, top_p, top_k, min_p, seed, press, kv_budget,
                  compression_ratio, stop, ignore_eos, stream, details):
        if not isinstance(prompt, str):
            prompt = _ids(prompt)
        out = self._m.generate(prompt, max_tokens, temperature, top_p, top_k, min_p, seed, _press_spec(press),
                               _kv_budget(kv_budget), compression_ratio, _stop_list(stop), ignore_eos, stream)
        if stream:
            _streams.add(out)
            return _stream(out)
        return out if details else out["text"]

    def session(self, press="full", kv_budget=None, compression_ratio=None, ctx=0, query_window=64):
        """A Session on this model: one sequence kept between calls, with its KV cache visible.

        `press`, `kv_budget` and `compression_ratio` as in generate(); ctx 0 is the model's context
        (else at most that); query_window: the last queries per layer kept for Session.compress().
        See momentkv.Session."""
        return Session(self, press, kv_budget, compression_ratio, ctx, query_window)

    def __repr__(self):
        return f"momentkv.Model({self.path!r}, n_vocab={self.n_vocab}, n_ctx={self.n_ctx})"


class Session:
    """One sequence on a Model, fed step by step; its press compresses after every prefill() and
    decode(), exactly as `momentkv generate` does (the prompt is one prefill).

        s = model.session(press="momentkv", kv_budget=64)
        logits = s.prefill(model.tokenize(text))        # numpy (n_vocab,) after the prompt
        logits = s.decode(int(logits.argmax()))          # one token
        h = s.cache.head(layer, kv_head)
        h.positions, h.keys, h.values                    # read-only numpy views of the cache, no copy
        h.moments                                        # evicted-token statistics, or None
        s.cache.bytes_held                               # as `momentkv generate` reports it

    evaluate(ids) feeds ids teacher-forced and returns every position's logits (n, n_vocab),
    without compressing (the tokens stay in the cache).

    compress(press, kv_budget=None, compression_ratio=None) compresses the cache as it stands with
    any press (a spec, a presses object or a ScorerPress): the compression step a session with that
    press runs after its prefill. A full session prefilled then compressed keeps the same rows as a
    session created with that press, and compressing again with a smaller budget shrinks it further.
    The session keeps the last `query_window` (default 64) queries of every layer for this: a press
    with a larger observation window needs a larger query_window, and h2o (which reads every query)
    cannot be applied later. A cache that has already evicted keeps the moments it tracks: a press
    that tracks others (momentkv after snapkv) raises ValueError. The press's NC setting holds for
    the following steps; later steps compress with the session's own press; reset() restores it.

    Views: keys (n, d_k), values (n, d_v) float32 and positions (n,) int32 share the cache's
    memory and keep the session alive. The engine reallocates a head's rows whenever it appends
    or evicts, so while any such view (or a slice of one) is alive the session refuses to change
    its cache: prefill/decode/evaluate/reset raise BufferError (like a bytearray under a
    memoryview). Delete the views, or keep .copy()s, before the next step; cache.live_views
    counts them. A view is thus never stale and never dangles. cache.head() itself is only a
    handle: its properties read the cache as it is when read.

    moments: None when the press tracks none (e.g. snapkv without nc); else a dict of copies:
    count (evicted tokens folded in, all groups), groups (G), comoment (whether a co-moment is
    kept), counts (G,) int64, key_means (G, d_k) and value_means (G, d_v) float64 (NaN rows for
    groups still empty).

    Errors: token ids out of range, or more positions than n_ctx, raise ValueError and change
    nothing; a call that fails during its computation (a Python press's exception, Ctrl-C)
    leaves the session reset (empty). Computation releases the GIL and runs one at a time per
    process; one session serves one call at a time (RuntimeError otherwise).
    """

    def __init__(self, model, press="full", kv_budget=None, compression_ratio=None, ctx=0, query_window=64):
        self.model = model
        self._s = _momentkv.Session(model._m, _press_spec(press), _kv_budget(kv_budget), compression_ratio, ctx,
                                    _integer("query_window", query_window))

    def prefill(self, ids):
        """Feeds ids (in chunks of 512), compresses; returns the logits after the last one (n_vocab,)."""
        return self._s.prefill(_ids(ids))

    def decode(self, token):
        """Feeds one token id, compresses (as the press does per decode step); returns the next logits."""
        return self._s.decode(_integer("token", token))

    def evaluate(self, ids):
        """Feeds ids teacher-forced without compressing; returns their logits (len(ids), n_vocab)."""
        return self._s.evaluate(_ids(ids))

    def reset(self):
        """Drops every token and moment (a new sequence with the same press)."""
        self._s.reset()

    def compress(self, press, kv_budget=None, compression_ratio=None):
        """Compresses the cache now with `press` and its budget (exactly one of kv_budget,
        compression_ratio, or a budget in the press; a ratio is a fraction of the n_past positions,
        as in generate(); a head already within the budget is left as it is; "full" does nothing).
        ValueError for a bad press or budget, an empty session, or a press the session cannot
        apply later (see the class docstring); BufferError while cache views are alive."""
        self._s.compress(_press_spec(press), _kv_budget(kv_budget), compression_ratio)

    @property
    def compress_seconds(self):
        """Seconds spent in compression steps (after prefills, decodes and compress()) since the
        session was created or reset."""
        return self._s.compress_seconds

    @property
    def query_window(self):
        return self._s.query_window

    @property
    def n_past(self):
        return self._s.n_past

    @property
    def n_ctx(self):
        return self._s.n_ctx

    @property
    def cache(self):
        """The KV cache: n_layers, n_kv_heads, bytes_held, moment_bytes, row_bytes, total_rows,
        live_views, head(layer, kv_head)."""
        return self._s.cache

    def __repr__(self):
        return f"momentkv.Session(n_past={self.n_past}, n_ctx={self.n_ctx})"
