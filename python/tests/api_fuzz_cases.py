"""The seeded fuzz of the Python API that test_api_fuzz.py runs in a subprocess:

    python api_fuzz_cases.py PACKAGE_DIR MODEL SEED CALLS

Each call picks a method of the public API (Model, Session, Cache, HeadView, the press classes)
and arguments from a pool of hostile values (wrong types, bools, huge and negative integers,
NaN, lone surrogates, numpy arrays of every shape, objects whose __index__ raises, specs with
out-of-range parameters) mixed with valid ones. A call may succeed or raise TypeError,
ValueError, IndexError (a head out of range) or BufferError (live cache views): anything else is
printed as UNEXPECTED, and a crash kills the process. Prints one summary line at the end.
"""

import collections
import math
import random
import sys

sys.path.insert(0, sys.argv[1])
import numpy as np  # noqa: E402

import momentkv  # noqa: E402
from momentkv import presses  # noqa: E402

ALLOWED = (TypeError, ValueError, IndexError, BufferError)


class RaisingIndex:
    """An object whose conversions raise its own error, which must reach the caller unchanged."""

    def __index__(self):
        raise LookupError("raised by the argument")

    def __iter__(self):
        raise LookupError("raised by the argument")


INTS = [0, 1, -1, 2, 3, 7, 31, 255, 256, 2**31 - 1, 2**31, -2**31, 2**63 - 1, 2**63, -2**63 - 1, 2**70, True,
        np.int64(5), np.uint64(2**64 - 1), np.int8(-1)]
FLOATS = [0.0, -0.0, 1e-45, 0.5, 1.0, 1.5, -1.0, math.inf, -math.inf, math.nan, 1e300, np.float32(0.3),
          np.float64(math.nan)]
TEXTS = ["", "a", "Once upon a time", "\udcff", "\x00", "<s>", "</s>", "x" * 5000, "é" * 300, "\U0001F600",
         "snapkv", "momentkv:budget=4", "full", "snapkv:budget=0", "snapkv:window=1000000000,budget=8",
         "streaming_llm:sinks=100000,budget=2", "adakv:scorer=adakv", "pyramidkv:beta=0.0001,budget=8",
         "momentkv:groups=100000,budget=8", "h2o:budget=1,decode_slack=2147483647", "snapkv:ratio=0.999"]
LISTS = [[], [0], [1, 2, 3], [-1], [2**40], [1] * 300, list(range(256)), [None], ["a"], [1.5], [True],
         np.array([1, 2], dtype=np.int32), np.array([[1, 2]]), np.array([1.5]), np.zeros(0, dtype=np.int64),
         np.array([300], dtype=np.int16), range(5)]
OTHERS = [None, object(), RaisingIndex(), b"bytes", bytearray(b"x"), {}, {"role": "user"},
          [{"role": "user", "content": "hi"}], [{"role": 1, "content": None}], [("user", "hi")], (1, 2),
          np.zeros((2, 2)), print]
PRESS_CLASSES = [presses.SnapKV, presses.StreamingLLM, presses.H2O, presses.PyramidKV, presses.AdaKV,
                 presses.MomentKV]
PRESS_KEYS = ["window", "kernel", "sinks", "beta", "nc", "groups", "clip", "means_only", "decode_slack", "scorer",
              "alloc", "rounds", "variant", "safeguard", "budget", "ratio"]


def main():
    model_path, seed, n_calls = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    model = momentkv.Model(model_path, ctx=256)
    press_objects = [cls() for cls in PRESS_CLASSES]
    sessions = []
    outcomes = collections.Counter()

    def value():
        pool = rng.choice([INTS, INTS, FLOATS, TEXTS, LISTS, LISTS, OTHERS, press_objects])
        return rng.choice(pool)

    def maybe(valid):
        return valid if rng.random() < 0.5 else value()

    def call(name, f, *args, **kwargs):
        try:
            result = f(*args, **kwargs)
            if hasattr(result, "__next__"):  # a stream: read a few pieces, then close it
                for i, _ in enumerate(result):
                    if i >= 4:
                        break
                result.close()
            outcomes["ok"] += 1
            return result
        except ALLOWED:
            outcomes["refused"] += 1
        except LookupError as e:
            if str(e) != "raised by the argument":
                raise
            outcomes["argument's own error"] += 1
        except Exception as e:  # noqa: BLE001: what this fuzz looks for
            outcomes["unexpected"] += 1
            shown = ", ".join([repr(a)[:60] for a in args] + [f"{k}={v!r:.60}" for k, v in kwargs.items()])
            print(f"UNEXPECTED {name}({shown}): {type(e).__name__}: {str(e)[:200]}", flush=True)
        return None

    for _ in range(n_calls):
        which = rng.randrange(12)
        if which == 0:
            call("tokenize", model.tokenize, maybe("Once upon"), add_bos=maybe(True), parse_special=maybe(False))
        elif which == 1:
            call("detokenize", model.detokenize, maybe([1, 2, 3]), render_special=maybe(False))
        elif which == 2:
            call("logits", model.logits, maybe([1, 2, 3]))
        elif which == 3:
            keys = ["temperature", "top_p", "top_k", "min_p", "seed", "press", "kv_budget", "compression_ratio",
                    "stop", "ignore_eos", "stream"]
            kwargs = {k: value() for k in rng.sample(keys, rng.randrange(4))}
            call("generate", model.generate, maybe("Once"), maybe(3), **kwargs)
        elif which == 4:
            call("chat", model.chat, maybe([{"role": "user", "content": "hi"}]), maybe(2),
                 chat_template=maybe("chatml"))
        elif which == 5:
            session = call("session", model.session, press=maybe("snapkv:budget=8"), kv_budget=maybe(None),
                           compression_ratio=maybe(None), ctx=maybe(64), query_window=maybe(64))
            if session is not None:
                sessions.append(session)
        elif which == 6:
            kwargs = {k: value() for k in rng.sample(PRESS_KEYS, rng.randrange(3))}
            press = call("press", rng.choice(PRESS_CLASSES), **kwargs)
            if press is not None:
                press_objects.append(press)
        elif sessions:
            s = rng.choice(sessions)
            if which == 7:
                call("prefill", s.prefill, maybe(list(range(1, 31))))
            elif which == 8:
                call("decode", s.decode, maybe(5))
            elif which == 9:
                call("evaluate", s.evaluate, maybe([1, 2, 3]))
            elif which == 10:
                call("compress", s.compress, maybe("snapkv"), kv_budget=maybe(4), compression_ratio=maybe(None))
            else:
                head = call("head", s.cache.head, maybe(0), maybe(0))
                if head is not None:
                    call("head rows", lambda: (head.keys.sum(), head.values.sum(), head.positions.sum(),
                                               head.moments, len(head)))
                    del head  # its numpy views would hold the session (BufferError) otherwise
                if rng.random() < 0.2:
                    call("reset", s.reset)
    print(f"seed {seed}: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())), flush=True)


if __name__ == "__main__":
    main()
