"""Crashes, hangs and aborts that must not happen: a cache view taken while a press's options are
read, streams with a Python press that never returns (Ctrl-C, close()), closing a stream during a
long prefill, and interpreter exit while a stream or a daemon thread computes. Each case that could
crash or hang runs in a subprocess with a time limit, so a regression fails instead of hanging."""

import subprocess
import sys
import textwrap
import time

import momentkv
from conftest import NEEDLE_MODEL, NEEDLE_PROMPT, PACKAGE

PRELUDE = f"""
import sys, threading, time, _thread
sys.path.insert(0, {str(PACKAGE)!r})
import numpy as np
import momentkv
model = momentkv.Model({str(NEEDLE_MODEL)!r}, ctx=9000)
text = open({str(NEEDLE_PROMPT)!r}).read()

class Recency(momentkv.ScorerPress):
    def score(self, keys, values, queries, positions, layer, kv_head):
        return positions

class Stuck(momentkv.ScorerPress):
    entered = threading.Event()
    def score(self, keys, values, queries, positions, layer, kv_head):
        self.entered.set()
        while True:
            time.sleep(0.01)
"""


def run_python(body, timeout=20):
    """Runs PRELUDE + body in a fresh interpreter; returns (returncode, stdout + stderr)."""
    code = PRELUDE + textwrap.dedent(body)
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"hung for {timeout} s; output so far: {e.stdout!r} {e.stderr!r}") from None
    return r.returncode, r.stdout + r.stderr


def test_a_view_taken_while_compress_reads_the_press_is_refused():
    rc, out = run_python("""
        s = model.session()
        s.prefill(model.tokenize(text))
        grab = []

        class Sneaky(momentkv.ScorerPress):
            def _engine_options(self):  # Python code that compress() runs before changing the cache
                if getattr(self, "armed", False):
                    grab.append(s.cache.head(0, 0).keys)
                return super()._engine_options()

            def score(self, keys, values, queries, positions, layer, kv_head):
                return positions

        def compress_armed(press):  # prints BufferError when compress() refuses to run under a view
            press.armed = True
            try:
                s.compress(press, kv_budget=8)
                print("compressed under a live view")
            except BufferError:
                print("BufferError")

        compress_armed(Sneaky())
        [np.ones(100000, np.float32) for _ in range(50)]
        assert grab[0].sum() == grab[0].sum()  # the view is still valid memory
        grab.clear()

        # Another thread, while compress() is inside the press's options with the GIL released.
        reading, taken = threading.Event(), threading.Event()
        class Slow(Recency):
            def _engine_options(self):
                if getattr(self, "armed", False):
                    reading.set()
                    taken.wait(5)
                return super()._engine_options()

        def take_view():
            reading.wait(5)
            grab.append(s.cache.head(0, 0).keys)
            taken.set()

        thread = threading.Thread(target=take_view)
        thread.start()
        compress_armed(Slow())
        thread.join()

        # While a Python press computes (GIL released in its score), the cache cannot be read.
        grab.clear()
        errors = []
        class Waits(Recency):
            def score(self, keys, values, queries, positions, layer, kv_head):
                if not errors:
                    try:
                        s.cache.head(0, 0)
                        errors.append("read while computing")
                    except RuntimeError as e:
                        errors.append("RuntimeError")
                return positions
        s.compress(Waits(), kv_budget=8)
        print(errors[0])
    """)
    assert rc == 0, out
    assert out.split() == ["BufferError", "BufferError", "RuntimeError"], out


def assert_stopped_then_usable(rc, out, how, seconds):
    """The script printed "<how> <seconds taken>" within `seconds`, then True: the model still generates."""
    assert rc == 0, out
    words = out.split()
    assert words[0] == how and float(words[1]) < seconds and words[2] == "True", out


def test_ctrl_c_ends_a_stream_whose_python_press_never_returns():
    rc, out = run_python("""
        threading.Timer(0.5, _thread.interrupt_main).start()
        start = time.monotonic()
        try:
            for piece in model.generate(text, 20, press=Stuck(), kv_budget=64, stream=True):
                pass
        except KeyboardInterrupt:
            print(f"interrupted {time.monotonic() - start:.2f}")
        print(model.generate("Once upon a time", 4, temperature=0) != "")
    """)
    assert_stopped_then_usable(rc, out, "interrupted", 2.0)


def test_close_ends_a_stream_whose_python_press_never_returns():
    rc, out = run_python("""
        press = Stuck()
        stream = model.generate(text, 20, press=press, kv_budget=64, stream=True)
        assert press.entered.wait(10)
        start = time.monotonic()
        stream.close()
        print(f"closed {time.monotonic() - start:.2f}")
        print(model.generate("Once upon a time", 4, temperature=0) != "")
    """)
    assert_stopped_then_usable(rc, out, "closed", 1.0)


def test_close_during_a_long_prefill_is_prompt():
    model = momentkv.Model(NEEDLE_MODEL, ctx=20000)
    ids = (model.tokenize(NEEDLE_PROMPT.read_text()) * 20)[:15000]
    stream = model.generate(ids, 5, temperature=0, stream=True)
    time.sleep(0.3)  # the worker is prefilling (seconds for 15,000 tokens)
    start = time.monotonic()
    stream.close()
    assert time.monotonic() - start < 1.0
    assert model.generate("Once upon a time", 4, temperature=0) != ""


def test_exit_with_a_stream_left_running():
    rc, out = run_python("""
        stream = model.generate(text, 500, press=Recency(decode_slack=0), kv_budget=64, stream=True)
        for piece in stream:
            break
        print("done")
    """)
    assert rc == 0 and out.strip() == "done", out


def test_exit_while_daemon_threads_compute():
    rc, out = run_python("""
        def generate():
            model.generate("Once upon a time", 8000, temperature=0, ignore_eos=True)

        def python_press_session():
            s = model.session(press=Recency(decode_slack=0), kv_budget=64)
            s.prefill(model.tokenize(text))
            while True:
                s.decode(5)

        for work in (generate, python_press_session):
            threading.Thread(target=work, daemon=True).start()
        time.sleep(0.5)
        print("done")
    """)
    assert rc == 0 and out.strip() == "done", out
