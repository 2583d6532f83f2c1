# Generated from the engine's press catalogue (src/kv/presses/*.cpp) by
#   momentkv presses --format python > python/momentkv/_catalog.py
# Do not edit by hand: tests/cli fails when this file differs from the catalogue.
"""One class per press of the engine's catalogue (see momentkv.presses)."""

from ._press_base import Press


class Full(Press):
    """no eviction (reference)"""

    name = "full"
    _kinds = {}

    def __init__(self):
        super().__init__()


class StreamingLLM(Press):
    """StreamingLLM: sinks + most recent tokens

    Keyword arguments (None keeps the default):
      sinks (default 4): first tokens always kept
      budget (no default): tokens kept per KV head, window included (default: --kv-budget)
      ratio (no default): fraction of tokens removed (default: --compression-ratio)
      decode_slack (default -1): evict again while decoding when a head exceeds budget + slack; -1 = never
      nc (default 0): normalisation-corrected attention from the evicted tokens' moments
      groups (default 1): moment groups per KV head (virtual slots; k-means on evicted keys)
      clip (default 0): trust region: |τCq| at most the RMS spread of the evicted values
      means_only (default 0): moments store means only (no co-moment)
    """

    name = "streaming_llm"
    _kinds = {
        "sinks": "int",
        "budget": "int",
        "ratio": "real",
        "decode_slack": "int",
        "nc": "bool",
        "groups": "int",
        "clip": "bool",
        "means_only": "bool",
    }

    def __init__(self, *,
                 sinks: int = None,
                 budget: int = None,
                 ratio: float = None,
                 decode_slack: int = None,
                 nc: bool = None,
                 groups: int = None,
                 clip: bool = None,
                 means_only: bool = None):
        super().__init__(sinks=sinks,
                         budget=budget,
                         ratio=ratio,
                         decode_slack=decode_slack,
                         nc=nc,
                         groups=groups,
                         clip=clip,
                         means_only=means_only)


class H2O(Press):
    """H2O: accumulated attention column sums

    Keyword arguments (None keeps the default):
      window (default auto): observation window (last queries scored, recent rows kept), or auto: L/64 in [1, 32]
      sinks (default 4): first tokens always kept
      budget (no default): tokens kept per KV head, window included (default: --kv-budget)
      ratio (no default): fraction of tokens removed (default: --compression-ratio)
      decode_slack (default -1): evict again while decoding when a head exceeds budget + slack; -1 = never
      nc (default 0): normalisation-corrected attention from the evicted tokens' moments
      groups (default 1): moment groups per KV head (virtual slots; k-means on evicted keys)
      clip (default 0): trust region: |τCq| at most the RMS spread of the evicted values
      means_only (default 0): moments store means only (no co-moment)
    """

    name = "h2o"
    _kinds = {
        "window": "int_or_auto",
        "sinks": "int",
        "budget": "int",
        "ratio": "real",
        "decode_slack": "int",
        "nc": "bool",
        "groups": "int",
        "clip": "bool",
        "means_only": "bool",
    }

    def __init__(self, *,
                 window: "int | str" = None,
                 sinks: int = None,
                 budget: int = None,
                 ratio: float = None,
                 decode_slack: int = None,
                 nc: bool = None,
                 groups: int = None,
                 clip: bool = None,
                 means_only: bool = None):
        super().__init__(window=window,
                         sinks=sinks,
                         budget=budget,
                         ratio=ratio,
                         decode_slack=decode_slack,
                         nc=nc,
                         groups=groups,
                         clip=clip,
                         means_only=means_only)


class SnapKV(Press):
    """SnapKV: observation-window attention, max-pooled

    Keyword arguments (None keeps the default):
      window (default auto): observation window (last queries scored, recent rows kept), or auto: L/64 in [1, 32]
      kernel (default auto): max-pool kernel over the scores (odd), or auto: L/3 made odd, in [7, 31]
      sinks (default 4): first tokens always kept
      budget (no default): tokens kept per KV head, window included (default: --kv-budget)
      ratio (no default): fraction of tokens removed (default: --compression-ratio)
      decode_slack (default -1): evict again while decoding when a head exceeds budget + slack; -1 = never
      nc (default 0): normalisation-corrected attention from the evicted tokens' moments
      groups (default 1): moment groups per KV head (virtual slots; k-means on evicted keys)
      clip (default 0): trust region: |τCq| at most the RMS spread of the evicted values
      means_only (default 0): moments store means only (no co-moment)
    """

    name = "snapkv"
    _kinds = {
        "window": "int_or_auto",
        "kernel": "int_or_auto",
        "sinks": "int",
        "budget": "int",
        "ratio": "real",
        "decode_slack": "int",
        "nc": "bool",
        "groups": "int",
        "clip": "bool",
        "means_only": "bool",
    }

    def __init__(self, *,
                 window: "int | str" = None,
                 kernel: "int | str" = None,
                 sinks: int = None,
                 budget: int = None,
                 ratio: float = None,
                 decode_slack: int = None,
                 nc: bool = None,
                 groups: int = None,
                 clip: bool = None,
                 means_only: bool = None):
        super().__init__(window=window,
                         kernel=kernel,
                         sinks=sinks,
                         budget=budget,
                         ratio=ratio,
                         decode_slack=decode_slack,
                         nc=nc,
                         groups=groups,
                         clip=clip,
                         means_only=means_only)


class PyramidKV(Press):
    """PyramidKV: SnapKV scores, budgets decreasing with depth

    Keyword arguments (None keeps the default):
      window (default auto): observation window (last queries scored, recent rows kept), or auto: L/64 in [1, 32]
      kernel (default auto): max-pool kernel over the scores (odd), or auto: L/3 made odd, in [7, 31]
      sinks (default 4): first tokens always kept
      beta (default 20): PyramidKV: smallest layer budget = (L − window)/beta
      budget (no default): tokens kept per KV head, window included (default: --kv-budget)
      ratio (no default): fraction of tokens removed (default: --compression-ratio)
      decode_slack (default -1): evict again while decoding when a head exceeds budget + slack; -1 = never
      nc (default 0): normalisation-corrected attention from the evicted tokens' moments
      groups (default 1): moment groups per KV head (virtual slots; k-means on evicted keys)
      clip (default 0): trust region: |τCq| at most the RMS spread of the evicted values
      means_only (default 0): moments store means only (no co-moment)
    """

    name = "pyramidkv"
    _kinds = {
        "window": "int_or_auto",
        "kernel": "int_or_auto",
        "sinks": "int",
        "beta": "real",
        "budget": "int",
        "ratio": "real",
        "decode_slack": "int",
        "nc": "bool",
        "groups": "int",
        "clip": "bool",
        "means_only": "bool",
    }

    def __init__(self, *,
                 window: "int | str" = None,
                 kernel: "int | str" = None,
                 sinks: int = None,
                 beta: float = None,
                 budget: int = None,
                 ratio: float = None,
                 decode_slack: int = None,
                 nc: bool = None,
                 groups: int = None,
                 clip: bool = None,
                 means_only: bool = None):
        super().__init__(window=window,
                         kernel=kernel,
                         sinks=sinks,
                         beta=beta,
                         budget=budget,
                         ratio=ratio,
                         decode_slack=decode_slack,
                         nc=nc,
                         groups=groups,
                         clip=clip,
                         means_only=means_only)


class AdaKV(Press):
    """Ada-KV: adaptive per-head budgets around any scorer

    Keyword arguments (None keeps the default):
      scorer (default snapkv): scores the adaptive allocation uses (MomentKV with it: momentkv:alloc=adaptive)
      safeguard (default 0.2): Ada-KV: share of each head's budget it keeps regardless of scores
      window (default auto): observation window (last queries scored, recent rows kept), or auto: L/64 in [1, 32]
      kernel (default auto): max-pool kernel over the scores (odd), or auto: L/3 made odd, in [7, 31]
      sinks (default 4): first tokens always kept
      rounds (default 1): eviction rounds, residuals recomputed each round (against the moments the earlier rounds built)
      alloc (default adaptive): per-head budgets inside each layer, in PyramidKV's layer budgets, or over all layers
      beta (default 20): PyramidKV: smallest layer budget = (L − window)/beta
      budget (no default): tokens kept per KV head, window included (default: --kv-budget)
      ratio (no default): fraction of tokens removed (default: --compression-ratio)
      decode_slack (default -1): evict again while decoding when a head exceeds budget + slack; -1 = never
      nc (default 0): normalisation-corrected attention from the evicted tokens' moments
      groups (default 1): moment groups per KV head (virtual slots; k-means on evicted keys)
      clip (default 0): trust region: |τCq| at most the RMS spread of the evicted values
      means_only (default 0): moments store means only (no co-moment)
    """

    name = "adakv"
    _kinds = {
        "scorer": "choice",
        "safeguard": "real",
        "window": "int_or_auto",
        "kernel": "int_or_auto",
        "sinks": "int",
        "rounds": "int",
        "alloc": "choice",
        "beta": "real",
        "budget": "int",
        "ratio": "real",
        "decode_slack": "int",
        "nc": "bool",
        "groups": "int",
        "clip": "bool",
        "means_only": "bool",
    }

    def __init__(self, *,
                 scorer: str = None,
                 safeguard: float = None,
                 window: "int | str" = None,
                 kernel: "int | str" = None,
                 sinks: int = None,
                 rounds: int = None,
                 alloc: str = None,
                 beta: float = None,
                 budget: int = None,
                 ratio: float = None,
                 decode_slack: int = None,
                 nc: bool = None,
                 groups: int = None,
                 clip: bool = None,
                 means_only: bool = None):
        super().__init__(scorer=scorer,
                         safeguard=safeguard,
                         window=window,
                         kernel=kernel,
                         sinks=sinks,
                         rounds=rounds,
                         alloc=alloc,
                         beta=beta,
                         budget=budget,
                         ratio=ratio,
                         decode_slack=decode_slack,
                         nc=nc,
                         groups=groups,
                         clip=clip,
                         means_only=means_only)


class MomentKV(Press):
    """MomentKV: moment-informed eviction (alpha·|residual|) + NC

    Keyword arguments (None keeps the default):
      window (default auto): observation window (last queries scored, recent rows kept), or auto: L/64 in [1, 32]
      kernel (default auto): max-pool kernel over the scores (odd), or auto: L/3 made odd, in [7, 31]
      sinks (default 4): first tokens always kept
      rounds (default 1): eviction rounds, residuals recomputed each round (against the moments the earlier rounds built)
      alloc (default global): budget allocation: global = Ada-KV's rule over every head of every layer
      safeguard (default 0.2): Ada-KV: share of each head's budget it keeps regardless of scores
      beta (default 20): PyramidKV: smallest layer budget = (L − window)/beta
      variant (default means): means: 2 groups of key/value means per head; paper: one unclipped summary with co-moment (arXiv 2606.01563); grouped: groups=16,clip=1 unless given
      budget (no default): tokens kept per KV head, window included (default: --kv-budget)
      ratio (no default): fraction of tokens removed (default: --compression-ratio)
      decode_slack (default -1): evict again while decoding when a head exceeds budget + slack; -1 = never
      nc (default 1): normalisation-corrected attention from the evicted tokens' moments
      groups (default 1): moment groups per KV head (virtual slots; k-means on evicted keys)
      clip (default 0): trust region: |τCq| at most the RMS spread of the evicted values
      means_only (default 0): moments store means only (no co-moment)
    """

    name = "momentkv"
    _kinds = {
        "window": "int_or_auto",
        "kernel": "int_or_auto",
        "sinks": "int",
        "rounds": "int",
        "alloc": "choice",
        "safeguard": "real",
        "beta": "real",
        "variant": "choice",
        "budget": "int",
        "ratio": "real",
        "decode_slack": "int",
        "nc": "bool",
        "groups": "int",
        "clip": "bool",
        "means_only": "bool",
    }

    def __init__(self, *,
                 window: "int | str" = None,
                 kernel: "int | str" = None,
                 sinks: int = None,
                 rounds: int = None,
                 alloc: str = None,
                 safeguard: float = None,
                 beta: float = None,
                 variant: str = None,
                 budget: int = None,
                 ratio: float = None,
                 decode_slack: int = None,
                 nc: bool = None,
                 groups: int = None,
                 clip: bool = None,
                 means_only: bool = None):
        super().__init__(window=window,
                         kernel=kernel,
                         sinks=sinks,
                         rounds=rounds,
                         alloc=alloc,
                         safeguard=safeguard,
                         beta=beta,
                         variant=variant,
                         budget=budget,
                         ratio=ratio,
                         decode_slack=decode_slack,
                         nc=nc,
                         groups=groups,
                         clip=clip,
                         means_only=means_only)


class KeyDiff(Press):
    """KeyDiff: keys least like the head's mean key direction (query-agnostic)

    Keyword arguments (None keeps the default):
      sinks (default 4): first tokens always kept
      alloc (default uniform): budget allocation (allocation.h)
      safeguard (default 0.2): Ada-KV: share of each head's budget it keeps regardless of scores
      beta (default 20): PyramidKV: smallest layer budget = (L − window)/beta
      budget (no default): tokens kept per KV head, window included (default: --kv-budget)
      ratio (no default): fraction of tokens removed (default: --compression-ratio)
      decode_slack (default -1): evict again while decoding when a head exceeds budget + slack; -1 = never
      nc (default 0): normalisation-corrected attention from the evicted tokens' moments
      groups (default 1): moment groups per KV head (virtual slots; k-means on evicted keys)
      clip (default 0): trust region: |τCq| at most the RMS spread of the evicted values
      means_only (default 0): moments store means only (no co-moment)
    """

    name = "keydiff"
    _kinds = {
        "sinks": "int",
        "alloc": "choice",
        "safeguard": "real",
        "beta": "real",
        "budget": "int",
        "ratio": "real",
        "decode_slack": "int",
        "nc": "bool",
        "groups": "int",
        "clip": "bool",
        "means_only": "bool",
    }

    def __init__(self, *,
                 sinks: int = None,
                 alloc: str = None,
                 safeguard: float = None,
                 beta: float = None,
                 budget: int = None,
                 ratio: float = None,
                 decode_slack: int = None,
                 nc: bool = None,
                 groups: int = None,
                 clip: bool = None,
                 means_only: bool = None):
        super().__init__(sinks=sinks,
                         alloc=alloc,
                         safeguard=safeguard,
                         beta=beta,
                         budget=budget,
                         ratio=ratio,
                         decode_slack=decode_slack,
                         nc=nc,
                         groups=groups,
                         clip=clip,
                         means_only=means_only)


class Knorm(Press):
    """key norm: the keys with the smallest L2 norm kept (query-agnostic)

    Keyword arguments (None keeps the default):
      sinks (default 4): first tokens always kept
      alloc (default uniform): budget allocation (allocation.h)
      safeguard (default 0.2): Ada-KV: share of each head's budget it keeps regardless of scores
      beta (default 20): PyramidKV: smallest layer budget = (L − window)/beta
      budget (no default): tokens kept per KV head, window included (default: --kv-budget)
      ratio (no default): fraction of tokens removed (default: --compression-ratio)
      decode_slack (default -1): evict again while decoding when a head exceeds budget + slack; -1 = never
      nc (default 0): normalisation-corrected attention from the evicted tokens' moments
      groups (default 1): moment groups per KV head (virtual slots; k-means on evicted keys)
      clip (default 0): trust region: |τCq| at most the RMS spread of the evicted values
      means_only (default 0): moments store means only (no co-moment)
    """

    name = "knorm"
    _kinds = {
        "sinks": "int",
        "alloc": "choice",
        "safeguard": "real",
        "beta": "real",
        "budget": "int",
        "ratio": "real",
        "decode_slack": "int",
        "nc": "bool",
        "groups": "int",
        "clip": "bool",
        "means_only": "bool",
    }

    def __init__(self, *,
                 sinks: int = None,
                 alloc: str = None,
                 safeguard: float = None,
                 beta: float = None,
                 budget: int = None,
                 ratio: float = None,
                 decode_slack: int = None,
                 nc: bool = None,
                 groups: int = None,
                 clip: bool = None,
                 means_only: bool = None):
        super().__init__(sinks=sinks,
                         alloc=alloc,
                         safeguard=safeguard,
                         beta=beta,
                         budget=budget,
                         ratio=ratio,
                         decode_slack=decode_slack,
                         nc=nc,
                         groups=groups,
                         clip=clip,
                         means_only=means_only)


class TOVA(Press):
    """TOVA: evict the rows the newest query attends to least, at every decode step

    Keyword arguments (None keeps the default):
      window (default 1): queries whose attention is averaged (and newest rows kept); 1 = the newest query, TOVA's
      sinks (default 4): first tokens always kept
      alloc (default uniform): budget allocation (allocation.h)
      safeguard (default 0.2): Ada-KV: share of each head's budget it keeps regardless of scores
      beta (default 20): PyramidKV: smallest layer budget = (L − window)/beta
      budget (no default): tokens kept per KV head, window included (default: --kv-budget)
      ratio (no default): fraction of tokens removed (default: --compression-ratio)
      decode_slack (default -1): evict again while decoding when a head exceeds budget + slack; -1 = never
      nc (default 0): normalisation-corrected attention from the evicted tokens' moments
      groups (default 1): moment groups per KV head (virtual slots; k-means on evicted keys)
      clip (default 0): trust region: |τCq| at most the RMS spread of the evicted values
      means_only (default 0): moments store means only (no co-moment)
    """

    name = "tova"
    _kinds = {
        "window": "int_or_auto",
        "sinks": "int",
        "alloc": "choice",
        "safeguard": "real",
        "beta": "real",
        "budget": "int",
        "ratio": "real",
        "decode_slack": "int",
        "nc": "bool",
        "groups": "int",
        "clip": "bool",
        "means_only": "bool",
    }

    def __init__(self, *,
                 window: "int | str" = None,
                 sinks: int = None,
                 alloc: str = None,
                 safeguard: float = None,
                 beta: float = None,
                 budget: int = None,
                 ratio: float = None,
                 decode_slack: int = None,
                 nc: bool = None,
                 groups: int = None,
                 clip: bool = None,
                 means_only: bool = None):
        super().__init__(window=window,
                         sinks=sinks,
                         alloc=alloc,
                         safeguard=safeguard,
                         beta=beta,
                         budget=budget,
                         ratio=ratio,
                         decode_slack=decode_slack,
                         nc=nc,
                         groups=groups,
                         clip=clip,
                         means_only=means_only)


# Press name -> class (the engine's catalogue names).
CLASSES = {c.name: c for c in (Full, StreamingLLM, H2O, SnapKV, PyramidKV, AdaKV, MomentKV, KeyDiff, Knorm, TOVA)}
