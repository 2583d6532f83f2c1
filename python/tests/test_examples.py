"""The examples in examples/ run: compare_presses.py with tiny settings prints its table and writes
its plot; --help describes the options."""

import importlib.util
import os
import re
import subprocess
import sys

import pytest

from conftest import PACKAGE, REPO

EXAMPLE = REPO / "examples" / "compare_presses.py"


def run_example(*args, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(PACKAGE), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, str(EXAMPLE), *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_compare_presses_help():
    r = run_example("--help")
    assert r.returncode == 0, r.stderr
    for option in ("--presses", "--budgets", "--samples", "--prompt-tokens", "--continuation-tokens", "--out"):
        assert option in r.stdout


def test_compare_presses_writes_the_table_and_the_plot(tmp_path):
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib is not installed (Debian: apt-get install python3-matplotlib)")
    out = tmp_path / "presses.png"
    r = run_example("--presses", "full,snapkv,momentkv", "--budgets", "16,64", "--samples", "1",
                    "--prompt-tokens", "128", "--continuation-tokens", "8", "--out", out)
    assert r.returncode == 0, r.stderr
    rows = re.findall(r"^\| (\S+) \| (\S+) \| ([\d.]+) \| ([\d.]+)% \| (\d)/1 \| (\d+) \|$", r.stdout, re.M)
    assert [(p, b) for p, b, *_ in rows] == [("full", "all"), ("snapkv", "16"), ("snapkv", "64"),
                                            ("momentkv", "16"), ("momentkv", "64")], r.stdout
    full = rows[0]
    assert float(full[2]) == 0 and full[3] == "100.0" and full[4] == "1"  # the reference against itself
    assert all(float(kl) > 0 for _, _, kl, *_ in rows[1:])  # 128 tokens squeezed to 16 or 64 rows per head
    assert int(rows[1][5]) < int(rows[2][5]) < int(full[5])  # KiB held grow with the budget
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert f"plot: {out}" in r.stdout


def test_compare_presses_rejects_a_bad_press(tmp_path):
    r = run_example("--presses", "snapkv:kernel=4", "--out", tmp_path / "x.png")
    assert r.returncode != 0 and "kernel=4 must be odd" in r.stderr
    assert not (tmp_path / "x.png").exists()


def test_bench_scorer_prints_the_pass_times():
    r = subprocess.run([sys.executable, str(REPO / "examples" / "bench_scorer.py"), "--runs", "1", "--tokens", "300",
                        "--kv-budget", "32"], env=dict(os.environ, PYTHONPATH=str(PACKAGE), PYTHONDONTWRITEBYTECODE="1"),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "one compression pass of a 300-token prompt to kv_budget=32" in r.stdout
    assert re.search(r"^CPU: .+, \d+ hardware threads", r.stdout, re.M)
    times = dict(re.findall(r"^\| (snapkv|PySnapKV|streaming_llm|recency) .*?\| ([\d.]+) ms \|", r.stdout, re.M))
    assert set(times) == {"snapkv", "PySnapKV", "streaming_llm", "recency"}, r.stdout
    assert float(times["snapkv"]) > 0 and float(times["PySnapKV"]) > float(times["recency"]), r.stdout
    assert re.search(r"inside score\(\), median \|\n.*\n\| snapkv .* - \|\n\| PySnapKV .* [\d.]+ ms \|", r.stdout)
