#!/usr/bin/env python3
"""Compare KV-cache presses on the trained model: KL against the full cache and needle retrieval,
at several budgets, as a printed table and a plot (PNG).

For each press and budget (tokens kept per KV head):
  KL      the prompt's first --prompt-tokens tokens are prefilled (and compressed), then the next
          --continuation-tokens are fed teacher-forced; mean over those positions and samples of
          KL(full ‖ press) of the next-token distributions, and how often the top-1 tokens agree.
  needle  greedy generation after the whole needle prompt (models/eval/own_niah_single.jsonl,
          --samples prompts spread over the needle depths); a hit when the reply holds the answer.

Runs in well under a minute with the defaults on 2 cores. Needs the module momentkv (installed by
`pip install .`, or PYTHONPATH=build/python) and matplotlib (Debian: python3-matplotlib).

    python3 examples/compare_presses.py --budgets 32,64,128 --samples 4 --out presses.png
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Example: python3 examples/compare_presses.py --presses full,snapkv,momentkv "
                                       "--budgets 32,128 --samples 2")
    p.add_argument("--model", default=str(REPO / "models" / "stories-needle-2k.gguf"), help="GGUF model (default: %(default)s)")
    p.add_argument("--needles", default=str(REPO / "models" / "eval" / "own_niah_single.jsonl"),
                   help="needle samples, RULER jsonl with input and outputs (default: %(default)s)")
    p.add_argument("--presses", default="full,snapkv,adakv,momentkv",
                   help="comma-separated press specs; 'full' is the reference (default: %(default)s)")
    p.add_argument("--budgets", default="64,128,256,512", help="comma-separated kv_budget values (default: %(default)s)")
    p.add_argument("--samples", type=int, default=4, help="needle prompts, spread over the depths (default: %(default)s)")
    p.add_argument("--prompt-tokens", type=int, default=1024,
                   help="KL: tokens prefilled (and compressed) before the continuation (default: %(default)s)")
    p.add_argument("--continuation-tokens", type=int, default=32,
                   help="KL: teacher-forced tokens scored after the prompt (default: %(default)s)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: every hardware thread)")
    p.add_argument("--out", default="compare_presses.png", help="plot file, PNG (default: %(default)s)")
    a = p.parse_args(argv)
    a.presses = [s.strip() for s in a.presses.split(",") if s.strip()]
    try:
        a.budgets = sorted({int(b) for b in a.budgets.split(",") if b.strip()})
    except ValueError:
        p.error(f"--budgets must be comma-separated integers, got {a.budgets!r}")
    if not a.presses or not a.budgets:
        p.error("give at least one press and one budget")
    if a.samples < 1 or a.prompt_tokens < 1 or a.continuation_tokens < 2:
        p.error("--samples and --prompt-tokens must be >= 1, --continuation-tokens >= 2")
    return a


def import_momentkv():
    try:
        import momentkv
        return momentkv
    except ImportError as e:
        sys.exit(f"compare_presses: cannot import momentkv ({e}): install it with `pip install .` from the "
                 f"repository, or run with PYTHONPATH=build/python after scripts/setup.sh")


def log_softmax(logits):
    x = logits.astype(np.float64)
    x -= x.max(axis=1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=1, keepdims=True))


def kl_and_top1(reference, logits):
    """Per position KL(softmax(reference) ‖ softmax(logits)) in float64, and top-1 agreement."""
    lp, lq = log_softmax(reference), log_softmax(logits)
    kl = np.maximum((np.exp(lp) * (lp - lq)).sum(axis=1), 0.0)
    return kl, reference.argmax(axis=1) == logits.argmax(axis=1)


def teacher_forced(model, press, budget, context, continuation):
    """Logits predicting every continuation token after the compressed context, and the bytes
    the cache held right after the context's prefill (and compression)."""
    s = model.session(press=press, kv_budget=budget)
    first = s.prefill(context)
    held = s.cache.bytes_held
    rest = s.evaluate(continuation[:-1])
    return np.vstack([first[None, :], rest]), held


def load_samples(path, n):
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    picks = np.unique(np.linspace(0, len(rows) - 1, min(n, len(rows))).round().astype(int))
    return [rows[i] for i in picks]


def measure(model, args, samples):
    """{(press, budget): {"kl", "top1", "hits", "n", "bytes"}}; the full cache under budget None."""
    configs = [(p, None) if p == "full" else (p, b) for p in args.presses for b in ([None] if p == "full" else args.budgets)]
    results = {c: {"kl": [], "top1": [], "hits": 0, "n": 0, "bytes": []} for c in configs}
    for i, sample in enumerate(samples):
        ids = model.tokenize(sample["input"])
        answers = sample["outputs"]
        max_new = max(len(model.tokenize(" " + a, add_bos=False)) for a in answers) + 2
        if len(ids) + max_new > model.n_ctx:
            print(f"  sample {sample.get('index', i)}: {len(ids)} tokens do not fit the context, skipped", file=sys.stderr)
            continue
        cut = min(args.prompt_tokens, len(ids) - args.continuation_tokens)
        context, continuation = ids[:cut], ids[cut:cut + args.continuation_tokens]
        reference, _ = teacher_forced(model, "full", None, context, continuation)
        for press, budget in configs:
            r = results[(press, budget)]
            logits, held = teacher_forced(model, press, budget, context, continuation)
            kl, top1 = kl_and_top1(reference, logits)
            r["kl"].extend(kl)
            r["top1"].extend(top1)
            r["bytes"].append(held)
            reply = model.generate(ids, max_new, temperature=0, press=press, kv_budget=budget)
            r["hits"] += all(a.lower() in reply.lower() for a in answers)
            r["n"] += 1
        print(f"  sample {sample.get('index', i)} (depth {sample.get('others', {}).get('depth', '?')}): done",
              file=sys.stderr)
    return results


def print_table(results, args):
    print(f"\n| press | kv_budget | KL(full ‖ press) | same top-1 | needle | KiB held after {args.prompt_tokens} tokens |")
    print("|---|---:|---:|---:|---:|---:|")
    for (press, budget), r in results.items():
        if not r["n"]:
            continue
        print(f"| {press} | {budget if budget is not None else 'all'} | {np.mean(r['kl']):.4f} | "
              f"{100 * np.mean(r['top1']):.1f}% | {r['hits']}/{r['n']} | {np.mean(r['bytes']) / 1024:.0f} |")


def plot(results, args, model_name):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_kl, ax_needle) = plt.subplots(1, 2, figsize=(11, 4.2))
    for press in args.presses:
        rows = [(b, r) for (p, b), r in results.items() if p == press and r["n"]]
        if not rows:
            continue
        if press == "full":
            acc = rows[0][1]["hits"] / rows[0][1]["n"]
            ax_needle.axhline(100 * acc, color="black", linestyle="--", label="full cache")
            continue
        budgets = [b for b, _ in rows]
        ax_kl.plot(budgets, [max(np.mean(r["kl"]), 1e-6) for _, r in rows], marker="o", label=press)
        ax_needle.plot(budgets, [100 * r["hits"] / r["n"] for _, r in rows], marker="o", label=press)
    for ax in (ax_kl, ax_needle):
        ax.set_xscale("log", base=2)
        ax.set_xticks(args.budgets, [str(b) for b in args.budgets])
        ax.set_xlabel("kv_budget (tokens per KV head)")
        ax.grid(True, alpha=0.3)
        ax.legend()
    ax_kl.set_yscale("log")
    ax_kl.set_ylabel("mean KL(full ‖ press)")
    ax_kl.set_title(f"KL, {args.continuation_tokens} teacher-forced tokens after {args.prompt_tokens}")
    ax_needle.set_ylim(-5, 105)
    ax_needle.set_ylabel("needle retrieved (%)")
    n = max(r["n"] for r in results.values())
    ax_needle.set_title(f"needle retrieval, {n} prompts")
    fig.suptitle(f"presses on {model_name}")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    plt.close(fig)


def main(argv=None):
    args = parse_args(argv)
    momentkv = import_momentkv()
    try:
        import matplotlib  # noqa: F401 - checked before the minutes of work
    except ImportError:
        sys.exit("compare_presses: matplotlib is needed for the plot (Debian: apt-get install python3-matplotlib)")
    start = time.perf_counter()
    model = momentkv.Model(args.model, threads=args.threads)
    for press in args.presses:  # a bad spec fails now, not after the first sample
        try:
            model.session(press=press, kv_budget=None if press == "full" else args.budgets[0])
        except ValueError as e:
            sys.exit(f"compare_presses: --presses: {e}")
    samples = load_samples(args.needles, args.samples)
    print(f"compare_presses: {len(samples)} samples, presses {', '.join(args.presses)}, budgets "
          f"{', '.join(map(str, args.budgets))}", file=sys.stderr)
    results = measure(model, args, samples)
    if not any(r["n"] for r in results.values()):
        sys.exit("compare_presses: no sample fits the model's context")
    print_table(results, args)
    plot(results, args, Path(args.model).name)
    print(f"\nplot: {args.out} ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
