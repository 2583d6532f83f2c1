"""A seeded, bounded fuzz of the Python API (api_fuzz_cases.py): random hostile arguments to every
public method must succeed or raise TypeError, ValueError, IndexError or BufferError, never crash
the interpreter or raise anything else. Each seed runs in a subprocess with a time limit, so that a
crash or a hang fails its case instead of the whole run."""

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NEEDLE_MODEL, PACKAGE

CASES = Path(__file__).with_name("api_fuzz_cases.py")


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_hostile_arguments_are_refused_cleanly(seed):
    run = subprocess.run([sys.executable, str(CASES), str(PACKAGE), str(NEEDLE_MODEL), str(seed), "600"],
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, f"seed {seed} ended with {run.returncode}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert "UNEXPECTED" not in run.stdout, run.stdout
    summary = run.stdout.strip().splitlines()[-1]
    assert summary.startswith(f"seed {seed}:") and " ok " in summary + " ", summary
