"""KV-cache presses as objects: typed keyword arguments that build a press spec.

Each class maps its keyword arguments to the spec string `momentkv --press` takes
(`SnapKV(window=16, kernel=5)` is `snapkv:window=16,kernel=5`). A parameter left at None keeps the
press's default. Arguments are type-checked here (TypeError) and the spec is validated by the
engine's own parser, so a bad value raises ValueError with the CLI's message. `Press.spec` is the
canonical spec (every parameter spelled out), which `--press` accepts back unchanged.

    >>> from momentkv import presses
    >>> presses.SnapKV(window=16).spec
    'snapkv:window=16,kernel=7,sinks=4,...'
    >>> [p["name"] for p in presses.list()]
    ['full', 'streaming_llm', 'h2o', 'snapkv', 'pyramidkv', 'adakv', 'momentkv']
"""

import builtins
import math

from . import _momentkv

__all__ = ["Press", "Full", "StreamingLLM", "H2O", "SnapKV", "PyramidKV", "AdaKV", "MomentKV", "list"]

# The kind of every parameter key (the engine's registry validates ranges and choices).
_INT = {"window", "kernel", "sinks", "rounds", "budget", "decode_slack", "groups"}
_REAL = {"ratio", "safeguard", "beta"}
_BOOL = {"nc", "clip", "means_only"}
_CHOICE = {"scorer", "alloc", "variant"}


def _format(press, key, value):
    """The spec text of one value, after checking its Python type."""
    if key in _BOOL:
        if not isinstance(value, bool):
            raise TypeError(f"{press}: {key} must be a bool, got {type(value).__name__}")
        return "1" if value else "0"
    if key in _INT:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{press}: {key} must be an int, got {type(value).__name__}")
        return str(value)
    if key in _REAL:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{press}: {key} must be a number, got {type(value).__name__}")
        if not math.isfinite(value):
            raise ValueError(f"press '{press}': {key}={value} is not a finite number")
        return repr(float(value))
    if key in _CHOICE:
        if not isinstance(value, str):
            raise TypeError(f"{press}: {key} must be a str, got {type(value).__name__}")
        return value
    raise TypeError(f"{press}: unknown parameter {key!r}")


class Press:
    """A press spec built from keyword arguments; see the subclasses."""

    name = "full"

    def __init__(self, **params):
        given = {k: v for k, v in params.items() if v is not None}
        items = [f"{k}={_format(self.name, k, v)}" for k, v in given.items()]
        self._given = given
        self._as_given = self.name + (":" + ",".join(items) if items else "")
        # Validates like --press (ValueError with the CLI's message); the budget may come later.
        _, self._spec, _ = _momentkv.parse_press(self._as_given)

    @property
    def spec(self):
        """The canonical spec: every parameter spelled out (and the budget, when given)."""
        return self._spec

    @property
    def params(self):
        """The parameters given explicitly, as passed."""
        return dict(self._given)

    def __str__(self):
        return self._as_given

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._given.items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other):
        return isinstance(other, Press) and self.spec == other.spec

    def __hash__(self):
        return hash(self.spec)


class Full(Press):
    """No eviction: the full cache (the reference)."""

    name = "full"

    def __init__(self):
        super().__init__()


class StreamingLLM(Press):
    """StreamingLLM: attention sinks + the most recent tokens."""

    name = "streaming_llm"

    def __init__(self, *, sinks: int = None, budget: int = None, ratio: float = None, decode_slack: int = None,
                 nc: bool = None, groups: int = None, clip: bool = None, means_only: bool = None):
        super().__init__(sinks=sinks, budget=budget, ratio=ratio, decode_slack=decode_slack, nc=nc, groups=groups,
                         clip=clip, means_only=means_only)


class H2O(Press):
    """H2O: accumulated attention column sums."""

    name = "h2o"

    def __init__(self, *, window: int = None, sinks: int = None, budget: int = None, ratio: float = None,
                 decode_slack: int = None, nc: bool = None, groups: int = None, clip: bool = None,
                 means_only: bool = None):
        super().__init__(window=window, sinks=sinks, budget=budget, ratio=ratio, decode_slack=decode_slack, nc=nc,
                         groups=groups, clip=clip, means_only=means_only)


class SnapKV(Press):
    """SnapKV: observation-window attention, max-pooled over `kernel` (odd) positions."""

    name = "snapkv"

    def __init__(self, *, window: int = None, kernel: int = None, sinks: int = None, budget: int = None,
                 ratio: float = None, decode_slack: int = None, nc: bool = None, groups: int = None,
                 clip: bool = None, means_only: bool = None):
        super().__init__(window=window, kernel=kernel, sinks=sinks, budget=budget, ratio=ratio,
                         decode_slack=decode_slack, nc=nc, groups=groups, clip=clip, means_only=means_only)


class PyramidKV(Press):
    """PyramidKV: SnapKV scores with budgets decreasing with depth."""

    name = "pyramidkv"

    def __init__(self, *, window: int = None, kernel: int = None, sinks: int = None, beta: float = None,
                 budget: int = None, ratio: float = None, decode_slack: int = None, nc: bool = None,
                 groups: int = None, clip: bool = None, means_only: bool = None):
        super().__init__(window=window, kernel=kernel, sinks=sinks, beta=beta, budget=budget, ratio=ratio,
                         decode_slack=decode_slack, nc=nc, groups=groups, clip=clip, means_only=means_only)


class AdaKV(Press):
    """Ada-KV: adaptive per-head budgets around a scorer ("snapkv" or "h2o")."""

    name = "adakv"

    def __init__(self, *, scorer: str = None, safeguard: float = None, window: int = None, kernel: int = None,
                 sinks: int = None, rounds: int = None, budget: int = None, ratio: float = None,
                 decode_slack: int = None, nc: bool = None, groups: int = None, clip: bool = None,
                 means_only: bool = None):
        super().__init__(scorer=scorer, safeguard=safeguard, window=window, kernel=kernel, sinks=sinks,
                         rounds=rounds, budget=budget, ratio=ratio, decode_slack=decode_slack, nc=nc, groups=groups,
                         clip=clip, means_only=means_only)


class MomentKV(Press):
    """MomentKV: moment-informed eviction (alpha * |residual|) + normalisation-corrected attention."""

    name = "momentkv"

    def __init__(self, *, window: int = None, kernel: int = None, sinks: int = None, rounds: int = None,
                 alloc: str = None, safeguard: float = None, beta: float = None, variant: str = None,
                 budget: int = None, ratio: float = None, decode_slack: int = None, nc: bool = None,
                 groups: int = None, clip: bool = None, means_only: bool = None):
        super().__init__(window=window, kernel=kernel, sinks=sinks, rounds=rounds, alloc=alloc,
                         safeguard=safeguard, beta=beta, variant=variant, budget=budget, ratio=ratio,
                         decode_slack=decode_slack, nc=nc, groups=groups, clip=clip, means_only=means_only)


# Press name -> class (the engine's catalog names).
CLASSES = {c.name: c for c in (Full, StreamingLLM, H2O, SnapKV, PyramidKV, AdaKV, MomentKV)}


def list():  # noqa: A001 (momentkv.presses.list(), as the issue names it)
    """Every press with its parameters and defaults, from the engine's catalog (`momentkv presses`):
    a list of dicts {"name", "summary", "params": [{"key", "default", "help"}, ...]}."""
    return builtins.list(_momentkv.press_catalog())
