"""KV-cache presses as objects: typed keyword arguments that build a press spec.

Each class maps its keyword arguments to the spec string `momentkv --press` takes
(`SnapKV(window=16, kernel=5)` is `snapkv:window=16,kernel=5`). A parameter left at None keeps the
press's default. Arguments are type-checked here (TypeError) and the spec is validated by the
engine's own parser, so a bad value raises ValueError with the CLI's message. `Press.spec` is the
canonical spec (every parameter spelled out), which `--press` accepts back unchanged.

    >>> from momentkv import presses
    >>> presses.SnapKV(window=16).spec
    'snapkv:window=16,kernel=auto,sinks=4,...'
    >>> [p["name"] for p in presses.list()][:4]
    ['full', 'streaming_llm', 'h2o', 'snapkv']

The classes themselves are generated from the engine's catalogue into _catalog.py
(`momentkv presses --format python`), so a press registered in C++ has its class here.
"""

import builtins
import math
import numbers

from . import _momentkv
from ._catalog import *  # noqa: F401,F403 (one class per press of the engine's catalogue)
from ._catalog import CLASSES
from ._press_base import Press, _integer

__all__ = ["Press", "ScorerPress", *(c.__name__ for c in CLASSES.values()), "list", "pooling_kernel",
           "observation_window"]


def pooling_kernel(budget):
    """kernel=auto's max-pool kernel for a layer budget of `budget` tokens per KV head (>= 1):
    L/3 made odd, in [7, 31]."""
    return _momentkv.pooling_kernel(_integer("budget", budget))


def observation_window(budget):
    """window=auto's observation window for a layer budget of `budget` tokens per KV head (>= 1):
    L/64 in [1, 32]."""
    return _momentkv.observation_window(_integer("budget", budget))


def list():  # noqa: A001 (momentkv.presses.list(), as the issue names it)
    """Every press with its parameters and defaults, from the engine's catalog (`momentkv presses`):
    a list of dicts {"name", "summary", "params": [{"key", "default", "help"}, ...]}."""
    return builtins.list(_momentkv.press_catalog())


class ScorerPress:
    """A press written in Python: subclass it and implement score() (kvpress's scorer contract,
    for one layer and KV head, without padding). The engine calls score() during compression and
    applies its own selection around the scores: sinks and window protection, the budget
    allocation (uniform / adaptive / pyramid / pyramid_adaptive / global), rounds and NC.

        class KeyNorm(momentkv.ScorerPress):
            def score(self, keys, values, queries, positions, layer, kv_head):
                return -np.linalg.norm(keys, axis=1)      # one score per row, higher = keep

        model.generate(text, 8, press=KeyNorm(window=16), kv_budget=64)

    score(keys, values, queries, positions, layer, kv_head) -> numpy array (n,):
      keys (n, d_k) and values (n, d_v) float32: the head's cached rows (read-only copies);
      queries (n_obs, group, d_k) float32: the last `window` observed post-RoPE queries of the
        head's query group, oldest first (fewer than window early on);
      positions (n,) int32: the rows' token positions (increasing).
    If score() also takes a `query_positions` parameter it receives the queries' positions (n_obs,)
    int32. Before each call the engine sets self.layer_budget: the tokens per KV head the layer
    being scored may keep (window included), e.g. for pooling_kernel(self.layer_budget). Scores must be real and finite, or -inf; NaN, +inf, a wrong shape or a non-array raise.
    reset(geometry) is called at the start of every sequence with a dict (n_layers, n_heads,
    n_kv_heads, head_dim_k, head_dim_v, group_size, scale = the softmax scale); the default keeps
    it as self.geometry.

    Options (keywords of __init__, or class attributes of a subclass): window (observed queries
    and protected recent rows, >= 1, or "auto": observation_window(self.layer_budget), the
    built-in presses' default), sinks (>= 0), nc (normalisation-corrected attention), alloc
    ("uniform", "adaptive", "pyramid", "pyramid_adaptive", "global": docs/METHODS.md §4), safeguard
    (adaptive ones), beta (pyramid ones), rounds,
    decode_slack (-1: no decode-time eviction), budget / ratio (or generate's kv_budget /
    compression_ratio). Exceptions raised by score() propagate out of generate() unchanged.
    """

    window = "auto"
    sinks = 4
    nc = False
    alloc = "uniform"
    safeguard = 0.2
    beta = 20.0
    rounds = 1
    decode_slack = -1
    budget = None
    ratio = None

    _TYPES = {"window": int, "sinks": int, "rounds": int, "decode_slack": int, "budget": int, "nc": bool,
              "alloc": str, "safeguard": float, "beta": float, "ratio": float}

    def __init__(self, *, window=None, sinks=None, nc=None, alloc=None, safeguard=None, beta=None, rounds=None,
                 decode_slack=None, budget=None, ratio=None):
        given = dict(window=window, sinks=sinks, nc=nc, alloc=alloc, safeguard=safeguard, beta=beta, rounds=rounds,
                     decode_slack=decode_slack, budget=budget, ratio=ratio)
        for key, value in given.items():
            if value is not None:
                setattr(self, key, value)
        self._engine_options()  # checks the types now (ranges are checked by the engine at generate)

    def score(self, keys, values, queries, positions, layer, kv_head):
        raise NotImplementedError(f"{type(self).__name__} must implement score(keys, values, queries, positions, "
                                  f"layer, kv_head)")

    def reset(self, geometry):
        self.geometry = geometry

    def _engine_options(self):
        """The options as the engine reads them, type-checked (TypeError); ints as Python ints."""
        name = type(self).__name__
        out = {}
        for key, kind in self._TYPES.items():
            value = getattr(self, key)
            if (value is None and key in ("budget", "ratio")) or (key == "window" and isinstance(value, str)
                                                                  and value == "auto"):
                out[key] = value
            elif kind is int:
                out[key] = _integer(f"{name}: {key}", value, ' or "auto"' if key == "window" else "")
            elif kind is float:
                if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy floats too
                    raise TypeError(f"{name}: {key} must be a number, got {type(value).__name__}")
                if not math.isfinite(value):
                    raise ValueError(f"press {name}: {key}={value} is not a finite number")
                out[key] = float(value)
            else:
                if not isinstance(value, kind):
                    raise TypeError(f"{name}: {key} must be a {kind.__name__}, got {type(value).__name__}")
                out[key] = value
        out["query_positions"] = _takes_query_positions(self.score)
        return out

    def __repr__(self):
        return f"{type(self).__name__}(window={self.window}, sinks={self.sinks}, nc={self.nc}, alloc={self.alloc!r})"


def _takes_query_positions(fn):
    import inspect
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "query_positions" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
