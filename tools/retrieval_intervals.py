"""Accuracy with bootstrap 95% intervals from `momentkv eval ruler` result folders.

    /usr/bin/python3 tools/retrieval_intervals.py OUT [--tasks own_niah_single,...] [--seed 1] [--paired A:B ...]

Reads every OUT/*/run.json (press, budget) and OUT/*/pred/{task}.jsonl, scores each prediction
with RULER's string_match_all (the share of the expected outputs found in the prediction,
case-insensitive, x100, as `momentkv eval` scores it) and prints one markdown table: a row per press,
a column per budget, each cell the mean over all the samples of the chosen tasks with a
percentile-bootstrap 95% interval over samples (2,000 resamples, seeded), and the full cache's
mean as a reference row. --paired A:B (repeatable) adds a table of A minus B over the same samples
(paired by task and sample index) with a bootstrap 95% interval over samples. Standard library only.
"""
import argparse
import json
import random
import sys
from pathlib import Path


def sample_score(row):
    outputs = row["outputs"]
    pred = row["pred"].lower()
    return 100.0 * sum(1.0 for o in outputs if o.lower() in pred) / len(outputs)


def bootstrap(values, rng, resamples=2000):
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def load(root, tasks):
    runs = {}
    for run_json in sorted(Path(root).glob("*/run.json")):
        run = json.loads(run_json.read_text())
        scores = []
        for task in tasks:
            pred = run_json.parent / "pred" / f"{task}.jsonl"
            if not pred.exists():
                sys.exit(f"error: {pred} is missing (unfinished run?)")
            rows = [json.loads(line) for line in pred.read_text().splitlines() if line.strip()]
            rows.sort(key=lambda row: row.get("index", 0))  # the same sample order in every run
            scores += [sample_score(row) for row in rows]
        runs[(run["press"], int(run.get("budget") or 0))] = scores
    return runs


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", help="an eval output folder (one subfolder per press x budget)")
    p.add_argument("--tasks", default="own_niah_single,own_niah_multikey,own_niah_multivalue,own_vt")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--paired", action="append", default=[], metavar="A:B",
                   help="also print press A minus press B over the same samples (repeatable)")
    args = p.parse_args()
    tasks = args.tasks.split(",")
    runs = load(args.root, tasks)
    if not runs:
        sys.exit(f"error: no run.json under {args.root}")
    rng = random.Random(args.seed)
    budgets = sorted({b for (_, b) in runs if b > 0})
    presses = []
    for (press, budget) in runs:
        if budget > 0 and press not in presses:
            presses.append(press)
    print(f"tasks: {', '.join(tasks)}; mean string_match_all % over the samples [bootstrap 95% interval]\n")
    print("| press | " + " | ".join(f"L={b}" for b in budgets) + " |")
    print("|---|" + "---|" * len(budgets))
    full = runs.get(("full", 0))
    if full:
        lo, hi = bootstrap(full, rng)
        cell = f"{sum(full) / len(full):.1f} [{lo:.1f}, {hi:.1f}]"
        print("| full cache | " + " | ".join(cell for _ in budgets) + " |")
    for press in presses:
        cells = []
        for b in budgets:
            scores = runs.get((press, b))
            if not scores:
                cells.append("–")
                continue
            lo, hi = bootstrap(scores, rng)
            cells.append(f"{sum(scores) / len(scores):.1f} [{lo:.1f}, {hi:.1f}]")
        print(f"| {press} | " + " | ".join(cells) + " |")
    if args.paired:
        print("\npaired differences, points over the same samples [bootstrap 95% interval]\n")
        print("| difference | " + " | ".join(f"L={b}" for b in budgets) + " |")
        print("|---|" + "---|" * len(budgets))
    for pair in args.paired:
        # Press specs hold colons themselves (momentkv:alloc=...): split at the colon that leaves
        # a known press on each side.
        splits = [(pair[:i], pair[i + 1:]) for i, c in enumerate(pair) if c == ":"]
        known = [(a, b) for a, b in splits if a in presses and b in presses]
        if len(known) != 1:
            sys.exit(f"error: --paired {pair}: want A:B with two presses of {', '.join(presses)}")
        a, b = known[0]
        cells = []
        for budget in budgets:
            x, y = runs.get((a, budget)), runs.get((b, budget))
            if not x or not y or len(x) != len(y):
                cells.append("–")
                continue
            diff = [u - v for u, v in zip(x, y)]
            lo, hi = bootstrap(diff, rng)
            cells.append(f"{sum(diff) / len(diff):+.1f} [{lo:+.1f}, {hi:+.1f}]")
        print(f"| {a} − {b} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
