"""tools/retrieval_intervals.py on a hand-made eval folder: means per press and budget, the full
cache's reference row, paired differences matched by sample index (not by file order), and a clear
error for an unknown press."""

import json
import subprocess
import sys

from conftest import REPO

TOOL = REPO / "tools" / "retrieval_intervals.py"


def write_run(root, press, budget, task, preds):
    """One eval run: preds is [(index, prediction)] with the expected output "42" for every sample."""
    folder = root / f"{press}_L{budget}"
    (folder / "pred").mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"press": press, "budget": budget}))
    rows = [json.dumps({"index": i, "pred": pred, "outputs": ["42"]}) for i, pred in preds]
    (folder / "pred" / f"{task}.jsonl").write_text("\n".join(rows) + "\n")


def run_tool(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=60)


def test_means_full_row_and_paired_differences(tmp_path):
    task = "own_niah_single"
    # a and c answer sample 0 only; c's file lists the samples in the other order. b answers 0 and 1.
    write_run(tmp_path, "a", 48, task, [(0, "it is 42"), (1, "no"), (2, "7")])
    write_run(tmp_path, "c", 48, task, [(2, "7"), (1, "no"), (0, "42.")])
    write_run(tmp_path, "b", 48, task, [(0, "42"), (1, "42"), (2, "no")])
    write_run(tmp_path, "full", 0, task, [(0, "42"), (1, "42"), (2, "42")])
    r = run_tool(tmp_path, "--tasks", task, "--paired", "a:c", "--paired", "b:a")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(line.startswith("| full cache | 100.0 ") for line in lines)
    assert any(line.startswith("| a | 33.3 ") for line in lines)
    assert any(line.startswith("| b | 66.7 ") for line in lines)
    # Paired by sample index, a and c agree on every sample: a zero difference with a zero-width
    # interval (paired by file order it would be +100, 0, -100).
    assert "| a − c | +0.0 [+0.0, +0.0] |" in lines
    assert any(line.startswith("| b − a | +33.3 [") for line in lines)


def test_unknown_press_in_paired_is_an_error(tmp_path):
    task = "own_niah_single"
    write_run(tmp_path, "a", 48, task, [(0, "42")])
    r = run_tool(tmp_path, "--tasks", task, "--paired", "a:nope")
    assert r.returncode != 0
    assert "--paired a:nope" in r.stderr and "a" in r.stderr


def test_paired_presses_whose_specs_hold_colons(tmp_path):
    task = "own_niah_single"
    write_run(tmp_path, "m:alloc=x", 48, task, [(0, "42"), (1, "42")])
    write_run(tmp_path, "adakv", 48, task, [(0, "42"), (1, "no")])
    r = run_tool(tmp_path, "--tasks", task, "--paired", "m:alloc=x:adakv")
    assert r.returncode == 0, r.stderr
    assert any(line.startswith("| m:alloc=x − adakv | +50.0 [") for line in r.stdout.splitlines())
