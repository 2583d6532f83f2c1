"""The base of the press classes (generated into _catalog.py from the engine's catalogue)."""

import math
import numbers
import operator

from . import _momentkv


def _integer(what, value, also=""):
    """`value` as a Python int: any integral type (int, numpy integers: operator.index), not a bool."""
    if not isinstance(value, bool) and hasattr(type(value), "__index__"):
        try:
            return operator.index(value)
        except TypeError:  # e.g. a numpy array of more than one element
            pass
    raise TypeError(f"{what} must be an int{also}, got {type(value).__name__}")


def _format(press, key, value, kind):
    """The spec text of one value of kind `kind` (the catalogue's: int, int_or_auto, real, bool,
    choice), after checking its Python type."""
    if kind == "bool":
        if not isinstance(value, bool):
            raise TypeError(f"{press}: {key} must be a bool, got {type(value).__name__}")
        return "1" if value else "0"
    if kind == "int_or_auto" and isinstance(value, str) and value == "auto":
        return value  # tied to the budget (pooling_kernel, observation_window)
    if kind in ("int", "int_or_auto"):
        return str(_integer(f"{press}: {key}", value, ' or "auto"' if kind == "int_or_auto" else ""))
    if kind == "real":
        if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy floats too
            raise TypeError(f"{press}: {key} must be a number, got {type(value).__name__}")
        if not math.isfinite(value):
            raise ValueError(f"press '{press}': {key}={value} is not a finite number")
        return repr(float(value))
    if kind == "choice":
        if not isinstance(value, str):
            raise TypeError(f"{press}: {key} must be a str, got {type(value).__name__}")
        return value
    raise TypeError(f"{press}: unknown parameter {key!r}")


class Press:
    """A press spec built from keyword arguments; see the subclasses (momentkv.presses)."""

    name = "full"
    _kinds = {}  # parameter key -> kind, from the catalogue

    def __init__(self, **params):
        given = {k: v for k, v in params.items() if v is not None}
        self._given = given  # first, so that repr() works on a press whose arguments are refused
        items = [f"{k}={_format(self.name, k, v, self._kinds.get(k))}" for k, v in given.items()]
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
