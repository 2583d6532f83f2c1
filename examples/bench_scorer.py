#!/usr/bin/env python3
"""What a press written in Python costs: one compression pass over a ~2K-token prompt of the
trained model with the built-in snapkv, with SnapKV's score in numpy (examples/python_snapkv.py),
and with the built-in streaming_llm against the same recency scores returned by a one-line Python
scorer (what crossing into Python costs by itself), at the same budget.

Each run prefills the prompt in a fresh session with the press (the engine compresses once,
after the prefill, as `momentkv generate` does) and reads the seconds of that compression pass
(Session.compress_seconds: scoring, selection and eviction of every layer, prefill excluded).
The presses take turns, run after run; the table gives the median, min and max over the runs
and, for the Python presses, the median time spent inside their score() calls. The CPU model is
read from /proc/cpuinfo. The README's figure comes from:

    PYTHONPATH=build/python python3 examples/bench_scorer.py --runs 9 --threads 1
"""

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=str(REPO / "models" / "stories-needle-2k.gguf"), help="GGUF model (default: %(default)s)")
    p.add_argument("--text", default=str(REPO / "tests" / "engine" / "data" / "trained_model_needle.txt"),
                   help="prompt text, repeated until --tokens (default: %(default)s)")
    p.add_argument("--tokens", type=int, default=2000, help="prompt length in tokens (default: %(default)s)")
    p.add_argument("--kv-budget", type=int, default=64, help="tokens kept per KV head (default: %(default)s)")
    p.add_argument("--runs", type=int, default=7, help="runs per press (default: %(default)s)")
    p.add_argument("--threads", type=int, default=1,
                   help="CPU threads of the engine; 0 = every hardware thread (default: %(default)s, steady on a "
                        "shared machine and the Python scorer's own footing)")
    a = p.parse_args(argv)
    if a.runs < 1 or a.tokens < 2 or a.kv_budget < 1:
        p.error("--runs, --kv-budget must be >= 1 and --tokens >= 2")
    return a


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def timed_presses(momentkv):
    """The Python presses, each adding up the seconds spent inside its own score()."""
    from python_snapkv import PySnapKV

    class TimedSnapKV(PySnapKV):
        def reset(self, geometry):
            super().reset(geometry)
            self.score_seconds = 0.0

        def score(self, keys, values, queries, positions, layer, kv_head, query_positions):
            start = time.perf_counter()
            try:
                return super().score(keys, values, queries, positions, layer, kv_head, query_positions)
            finally:
                self.score_seconds += time.perf_counter() - start

    class TimedRecency(momentkv.ScorerPress):
        def reset(self, geometry):
            super().reset(geometry)
            self.score_seconds = 0.0

        def score(self, keys, values, queries, positions, layer, kv_head):
            start = time.perf_counter()
            self.score_seconds += time.perf_counter() - start
            return positions

    return {"snapkv (built-in, C++)": f"snapkv:kernel={PySnapKV.kernel}", "PySnapKV (SnapKV in numpy)": TimedSnapKV(),
            "streaming_llm (built-in recency)": "streaming_llm", "recency (one-line Python scorer)": TimedRecency(sinks=4)}


def kept_positions(session):
    c = session.cache
    return [c.head(layer, kv).positions.copy() for layer in range(c.n_layers) for kv in range(c.n_kv_heads)]


def main(argv=None):
    args = parse_args(argv)
    try:
        import momentkv
    except ImportError as e:
        sys.exit(f"bench_scorer: cannot import momentkv ({e}): `pip install .`, or PYTHONPATH=build/python")
    model = momentkv.Model(args.model, threads=args.threads)
    text = Path(args.text).read_text()
    ids = model.tokenize(text)
    while len(ids) < args.tokens:
        ids += model.tokenize("\n" + text, add_bos=False)
    ids = ids[:args.tokens]
    presses = timed_presses(momentkv)

    def run(press):
        s = model.session(press=press, kv_budget=None if press == "full" else args.kv_budget)
        start = time.perf_counter()
        s.prefill(ids)
        return s, time.perf_counter() - start

    passes = {name: [] for name in presses}
    inside = {name: [] for name in presses}
    prefills = []
    run("snapkv")  # warm-up: page in the weights, start the threads
    for _ in range(args.runs):
        for name, press in presses.items():  # the presses take turns: drift hits them alike
            s, _ = run(press)
            passes[name].append(s.compress_seconds)
            if not isinstance(press, str):
                inside[name].append(press.score_seconds)
        prefills.append(run("full")[1])

    same = all(np.array_equal(a, b) for a, b in zip(kept_positions(run(presses["snapkv (built-in, C++)"])[0]),
                                                   kept_positions(run(presses["PySnapKV (SnapKV in numpy)"])[0])))
    threads = args.threads or os.cpu_count()
    recency = statistics.median(passes["recency (one-line Python scorer)"]) - \
        statistics.median(passes["streaming_llm (built-in recency)"])
    print(f"bench_scorer: one compression pass of a {len(ids)}-token prompt to kv_budget={args.kv_budget}, "
          f"{Path(args.model).name}, {args.runs} runs per press")
    print(f"CPU: {cpu_model()}, {os.cpu_count()} hardware threads, {threads} used")
    print(f"prefill of the prompt without compression: median {statistics.median(prefills) * 1e3:.1f} ms\n")
    print("| press | compression pass, median | min | max | inside score(), median |")
    print("|---|---:|---:|---:|---:|")
    for name, times in passes.items():
        ms = [t * 1e3 for t in times]
        score = f"{statistics.median(inside[name]) * 1e3:.2f} ms" if inside[name] else "-"
        print(f"| {name} | {statistics.median(ms):.2f} ms | {min(ms):.2f} ms | {max(ms):.2f} ms | {score} |")
    base = statistics.median(passes["snapkv (built-in, C++)"])
    py = statistics.median(passes["PySnapKV (SnapKV in numpy)"])
    print(f"\nPython scorer overhead: {(py - base) * 1e3:+.1f} ms per pass ({py / base:.1f}x the built-in snapkv); "
          f"PySnapKV keeps the same rows as snapkv: {'yes' if same else 'NO'}; crossing into Python (recency vs "
          f"streaming_llm): {recency * 1e3:+.1f} ms per pass")


if __name__ == "__main__":
    main()
