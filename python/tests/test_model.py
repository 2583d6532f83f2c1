"""momentkv.Model against the golden outputs and the CLI: generation, logits, streaming, chat,
errors, Ctrl-C and threads."""

import _thread
import subprocess
import threading
import time

import numpy as np
import pytest

import momentkv
from momentkv import presses
from conftest import NEEDLE_MODEL, NEEDLE_PROMPT


# ---- golden (stories260K, computed with llama.cpp) ---------------------------------------------

def test_greedy_continuation_equals_golden(stories260k_path, golden):
    g = golden["prompt_greedy"]
    model = momentkv.Model(stories260k_path)
    assert model.tokenize(g["prompt"]) == g["input_ids_with_bos"]
    n = len(g["generated"])
    details = model.generate_details(g["prompt"], n, temperature=0)
    assert details["tokens"] == g["generated"]
    # The reply text continues the prompt's text: the golden ids decoded after the prompt's.
    expected = model.detokenize(g["input_ids_with_bos"] + g["generated"])
    prompt_text = model.detokenize(g["input_ids_with_bos"])
    assert expected.startswith(prompt_text)
    assert model.generate(g["prompt"], n, temperature=0) == expected[len(prompt_text):]
    # Token ids as the prompt give the same continuation.
    assert model.generate(g["input_ids_with_bos"], n, temperature=0) == expected[len(prompt_text):]


def test_tokenize_detokenize(needle_model):
    ids = needle_model.tokenize("Once upon a time")
    assert ids[0] == needle_model._m.bos
    assert needle_model.tokenize("Once upon a time", add_bos=False) == ids[1:]
    assert needle_model.detokenize(ids) == "Once upon a time"
    assert needle_model.n_vocab == 512 and needle_model.n_ctx == 2048
    assert momentkv.Model(NEEDLE_MODEL, ctx=256).n_ctx == 256


# ---- the CLI, bit for bit ------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["needle", "stories260K"])
def test_logits_equal_cli(which, cli, tmp_path, request):
    path = NEEDLE_MODEL if which == "needle" else request.getfixturevalue("stories260k_path")
    model = momentkv.Model(path)
    ids = model.tokenize("Once upon a time, there was a little girl who loved the sea.")
    out = tmp_path / "logits.f32"
    subprocess.run([cli, "logits", "-m", str(path), "--tokens", ",".join(map(str, ids)), "-o", str(out)],
                   check=True, capture_output=True)
    expected = np.fromfile(out, dtype=np.float32).reshape(len(ids), model.n_vocab)
    got = model.logits(ids)
    assert got.dtype == np.float32 and got.shape == (len(ids), model.n_vocab)
    assert got.tobytes() == expected.tobytes()
    assert model.logits(np.array(ids)).tobytes() == expected.tobytes()  # numpy ids work too


def cli_generate(cli, *flags):
    prompt = NEEDLE_PROMPT.read_text()
    r = subprocess.run([cli, "generate", "-m", str(NEEDLE_MODEL), "-f", str(NEEDLE_PROMPT), "-n", "8",
                        "--temp", "0", *flags], check=True, capture_output=True, text=True)
    assert r.stdout.startswith(prompt) and r.stdout.endswith("\n")
    return r.stdout[len(prompt):-1]


@pytest.mark.parametrize("press, flags", [
    ("momentkv:kernel=15", ["--press", "momentkv:kernel=15", "--kv-budget", "64"]),
    (presses.MomentKV(kernel=15), ["--press", "momentkv:kernel=15", "--kv-budget", "64"]),
    (presses.SnapKV(window=16), ["--press", "snapkv:window=16", "--kv-budget", "64"]),
])
def test_generate_with_press_equals_cli(press, flags, cli, needle_model):
    prompt = NEEDLE_PROMPT.read_text()
    got = needle_model.generate(prompt, 8, temperature=0, press=press, kv_budget=64)
    assert got == cli_generate(cli, *flags)


def test_compression_ratio_and_full_cache_equal_cli(cli, needle_model):
    prompt = NEEDLE_PROMPT.read_text()
    assert needle_model.generate(prompt, 8, temperature=0) == cli_generate(cli)
    assert (needle_model.generate(prompt, 8, temperature=0, press="h2o", compression_ratio=0.75)
            == cli_generate(cli, "--press", "h2o", "--compression-ratio", "0.75"))


# ---- streaming, sampling, stop strings, chat ------------------------------------------------------

def test_stream_pieces_concatenate_to_the_reply(needle_model):
    kwargs = dict(temperature=0, press="momentkv:kernel=15", kv_budget=64)
    prompt = NEEDLE_PROMPT.read_text()
    text = needle_model.generate(prompt, 24, **kwargs)
    stream = needle_model.generate(prompt, 24, stream=True, **kwargs)
    assert hasattr(stream, "__next__") and hasattr(stream, "close")
    pieces = list(stream)
    assert len(pieces) > 1 and "".join(pieces) == text
    # Sampled, seeded: the same seed streams the same text.
    sampled = needle_model.generate("Once upon a time", 32, seed=7)
    assert "".join(needle_model.generate("Once upon a time", 32, seed=7, stream=True)) == sampled


def test_stream_closed_early_cancels_and_frees_the_model(needle_model):
    stream = needle_model.generate("Once upon a time", -1, temperature=0, ignore_eos=True, stream=True)
    first = next(stream)
    assert isinstance(first, str)
    stream.close()  # cancels the worker; the next computation does not wait for 2,000 tokens
    assert needle_model.generate("Once upon a time", 4, temperature=0) != ""
    # Dropped without being read.
    needle_model.generate("Once upon a time", -1, temperature=0, ignore_eos=True, stream=True)
    assert needle_model.generate("Once upon a time", 4, temperature=0) != ""


def test_stream_errors_are_raised_at_the_call(needle_model):
    with pytest.raises(ValueError, match="budget"):
        needle_model.generate("Once upon a time", 4, press="snapkv", stream=True)


def test_seed_and_stop(needle_model):
    a = needle_model.generate("Once upon a time", 48, seed=1, temperature=1.0)
    assert a == needle_model.generate("Once upon a time", 48, seed=1, temperature=1.0)
    full = needle_model.generate("Once upon a time", 48, temperature=0)
    word = full.split()[3]
    cut = needle_model.generate("Once upon a time", 48, temperature=0, stop=word)
    assert cut == full[:full.index(word)]
    d = needle_model.generate_details("Once upon a time", 48, temperature=0, stop=[word, "zzz"])
    assert d["stop_reason"] == "stop" and d["text"] == cut


def test_chat(needle_model):
    with pytest.raises(ValueError, match="template") as e:
        needle_model.chat([{"role": "user", "content": "Hi"}], 4)
    assert 'chat_template="llama3"' in str(e.value) and "--" not in str(e.value)
    messages = [{"role": "system", "content": "Be brief."}, ("user", "Tell me a story.")]
    got = needle_model.chat(messages, 8, chat_template="chatml", temperature=0)
    rendered = ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nTell me a story.<|im_end|>\n"
                "<|im_start|>assistant\n")
    assert got == needle_model.generate(rendered, 8, temperature=0)
    with pytest.raises(ValueError):
        needle_model.chat(messages, 8, chat_template="nope")
    with pytest.raises(TypeError):
        needle_model.chat(["just text"], 8, chat_template="chatml")


# ---- errors ---------------------------------------------------------------------------------------

def test_bad_inputs_raise(needle_model, tmp_path):
    m = needle_model
    with pytest.raises(FileNotFoundError):
        momentkv.Model(tmp_path / "missing.gguf")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF not really")
    with pytest.raises(ValueError):
        momentkv.Model(bad)
    with pytest.raises(ValueError, match="precision"):
        momentkv.Model(NEEDLE_MODEL, precision="sloppy")
    with pytest.raises(ValueError):
        momentkv.Model(NEEDLE_MODEL, threads=-1)
    with pytest.raises(TypeError):
        momentkv.Model(NEEDLE_MODEL, threads="four")
    with pytest.raises(TypeError):
        momentkv.Model(42)
    with pytest.raises(ValueError, match="unknown|press"):
        m.generate("Hi", 4, press="nosuchpress", kv_budget=64)
    with pytest.raises(ValueError, match="kernel"):
        m.generate("Hi", 4, press="snapkv:kernel=4", kv_budget=64)
    with pytest.raises(ValueError, match="budget"):
        m.generate("Hi", 4, press="snapkv")  # a compressing press without a budget
    with pytest.raises(ValueError):
        m.generate("Hi", 4, press="snapkv", kv_budget=0)
    with pytest.raises(ValueError):
        m.generate("Hi", 4, press="snapkv", kv_budget=64, compression_ratio=0.5)
    with pytest.raises(ValueError):
        m.generate("Hi", 4, press="full", kv_budget=64)
    with pytest.raises(ValueError):
        m.generate("Hi", 4, top_p=0.0)
    with pytest.raises(ValueError):
        m.generate("Hi", -2)
    with pytest.raises(ValueError):
        m.generate("Hi", 4, seed=-1)
    with pytest.raises(ValueError):
        m.generate([1, 99999], 4)
    with pytest.raises(ValueError):
        m.generate([], 4)
    with pytest.raises(ValueError, match="context"):
        momentkv.Model(NEEDLE_MODEL, ctx=16).generate("Once upon a time " * 10, 4)
    with pytest.raises(ValueError):
        m.detokenize([1, 512])
    with pytest.raises(ValueError):
        m.detokenize([-1])
    with pytest.raises(ValueError):
        m.logits([1, 100000])
    with pytest.raises(ValueError):
        m.logits([])
    with pytest.raises(ValueError):
        m.logits([1, 2**40])
    with pytest.raises(TypeError):
        m.generate([1, "x"], 4)
    with pytest.raises(TypeError):
        m.detokenize([1.5])
    with pytest.raises(TypeError):
        m.generate("Hi", "four")
    with pytest.raises(TypeError):
        m.generate("Hi", 4, press=3)
    with pytest.raises(TypeError):
        m.generate("Hi", 4, kv_budget="64", press="snapkv")
    with pytest.raises(TypeError):
        m.generate("Hi", 4, stop=[1])
    with pytest.raises(TypeError):
        m.tokenize(123)
    with pytest.raises(TypeError):
        m.logits("not ids")
    # The model still works after all of that.
    assert m.generate("Once upon a time", 4, temperature=0) != ""


def test_text_must_be_valid_str(needle_model):
    m = needle_model
    for call in (lambda: m.generate("\udcff", 4), lambda: m.generate_details("ok \udcff", 4)):
        with pytest.raises(ValueError, match="prompt is not valid UTF-8 text: .*surrogates not allowed"):
            call()
    with pytest.raises(ValueError, match="text is not valid UTF-8 text"):
        m.tokenize("\udcff")
    with pytest.raises(ValueError, match="a stop string is not valid UTF-8 text"):
        m.generate("Hi", 2, stop=["\udcff"])
    with pytest.raises(ValueError, match="a message's content is not valid UTF-8 text"):
        m.chat([("user", "\udcff")], 2, chat_template="chatml")
    for text in (b"Once upon a time", b"\xff\xfe"):  # like generate, tokenize takes text (str) only
        with pytest.raises(TypeError, match="text must be a str, got bytes"):
            m.tokenize(text)


def test_kv_budget_takes_integers_not_bools(needle_model):
    got = needle_model.generate("Once upon a time", 4, temperature=0, press="snapkv", kv_budget=np.int64(16))
    assert got == needle_model.generate("Once upon a time", 4, temperature=0, press="snapkv", kv_budget=16)
    with pytest.raises(TypeError, match="kv_budget must be an int, got bool"):
        needle_model.generate("Once upon a time", 4, press="snapkv", kv_budget=True)
    with pytest.raises(TypeError, match="kv_budget must be an int, got bool"):
        needle_model.session(press="snapkv", kv_budget=True)
    for huge in (2**70, -2**70):  # past int64: a ValueError like any budget out of range
        with pytest.raises(ValueError, match="kv_budget=.* is out of range"):
            needle_model.generate("Once upon a time", 4, press="snapkv", kv_budget=huge)
    with pytest.raises(ValueError, match=r"kv_budget must be in \[1, 1000000000\]"):
        needle_model.generate("Once upon a time", 4, press="snapkv", kv_budget=2**40)


# ---- Ctrl-C and threads ---------------------------------------------------------------------------

def test_ctrl_c_interrupts_generate():
    # 8,000 tokens take seconds; a KeyboardInterrupt 0.2 s in must end the call well before that.
    model = momentkv.Model(NEEDLE_MODEL, ctx=9000)
    timer = threading.Timer(0.2, _thread.interrupt_main)
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        model.generate("Once upon a time", 8000, temperature=0, ignore_eos=True)
    assert time.monotonic() - start < 1.5
    timer.join()
    assert model.generate("Once upon a time", 4, temperature=0) != ""  # not left locked


def test_ctrl_c_interrupts_a_stream():
    model = momentkv.Model(NEEDLE_MODEL, ctx=9000)
    stream = model.generate("Once upon a time", 8000, temperature=0, ignore_eos=True, stream=True)
    start = time.monotonic()
    timer = threading.Timer(0.2, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        for _ in stream:
            pass
    # Raised in the stream's __next__ (which then cancels) or in this loop's own bytecode (the
    # generator is still referenced here and keeps producing until it is closed or dropped).
    stream.close()
    assert time.monotonic() - start < 1.5
    timer.join()
    assert model.generate("Once upon a time", 4, temperature=0) != ""


def test_ctrl_c_interrupts_a_call_waiting_for_a_running_stream():
    model = momentkv.Model(NEEDLE_MODEL, ctx=9000)
    stream = model.generate("Once upon a time", 8000, temperature=0, ignore_eos=True, stream=True)
    next(stream)  # the worker holds the engine for seconds
    start = time.monotonic()
    timer = threading.Timer(0.2, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        model.logits([1, 403])
    assert time.monotonic() - start < 1.5
    timer.join()
    stream.close()
    assert model.logits([1, 403]).shape == (2, model.n_vocab)


def test_threads_generate_concurrently_with_sequential_results(needle_model):
    prompts = ["Once upon a time", "The little dog", "Lily and Tom", "One day"]
    expected = [needle_model.generate(p, 32, temperature=0) for p in prompts]
    got = [None] * len(prompts)

    def work(i):
        got[i] = needle_model.generate(prompts[i], 32, temperature=0)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == expected
