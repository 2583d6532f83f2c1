"""Full-cache scores of a trained model, measured with momentkv's engine on held-out samples:
needle retrieval accuracy by context length and depth (haystacks from the held-out 10% of
TinyStories, keys and values from a seed the trainer never uses) and held-out perplexity.

  /usr/bin/python3 tools/train/eval_retrieval.py --model models/longctx-tinystories.gguf \
      --lengths 1024,2036 --depths 0,0.25,0.5,0.75,1 --per-cell 10 --json models/eval_full_cache.json

A sample is correct when the greedy continuation (`momentkv generate --temp 0`) starts with the
value. The prompt length counts BOS and the question; 2036 + 12 generated tokens fit 2048."""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tasks import BOS, heldout_corpus, needle_prompt  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")


def engine_generate(binary, model, text, n_predict, expected_ids):
    """The greedy continuation of `text`; checks the engine tokenized it to `expected_ids`' length."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    try:
        run = subprocess.run([binary, "generate", "-m", model, "-f", f.name, "-n", str(n_predict), "--temp", "0",
                              "-t", "1"], capture_output=True, text=True, check=True)
    finally:
        os.unlink(f.name)
    assert run.stdout.startswith(text), "the engine echoes the prompt first"
    n_engine = int(re.search(r"prompt: (\d+) tokens", run.stderr).group(1))
    assert n_engine == len(expected_ids), f"engine tokenized {n_engine} tokens, SentencePiece {len(expected_ids)}"
    return run.stdout[len(text):]


def retrieval(args, corpus):
    rng = random.Random(args.seed)
    rows = []
    for length in args.lengths:
        for depth in args.depths:
            for _ in range(args.per_cell):
                text, value, ids = needle_prompt(corpus, rng, length, depth, args.needles)
                answer = engine_generate(args.binary, args.model, text, 12, ids)
                rows.append({"length": len(ids), "target_length": length, "depth": depth, "value": value,
                             "answer": answer, "correct": answer.strip().startswith(value)})
            cell = [r["correct"] for r in rows if r["target_length"] == length and r["depth"] == depth]
            print(f"length {length} depth {depth:.2f}: {sum(cell)}/{len(cell)}", flush=True)
    return rows


def heldout_perplexity(args, corpus):
    """Mean NLL of consecutive windows of held-out text (BOS + window-1 tokens), via `momentkv logits`."""
    stream = [t for s in corpus.sentence_ids for t in s]
    window, nll, count = args.ppl_window, 0.0, 0
    for w in range(args.ppl_windows):
        ids = [BOS] + stream[w * (window - 1):(w + 1) * (window - 1)]
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "logits.f32")
            subprocess.run([args.binary, "logits", "-m", args.model, "--tokens", ",".join(map(str, ids)), "-o", out,
                            "-t", "1"], check=True, capture_output=True)
            logits = np.fromfile(out, dtype=np.float32).reshape(len(ids), -1).astype(np.float64)
        top = logits.max(1, keepdims=True)
        log_z = (top + np.log(np.exp(logits - top).sum(1, keepdims=True)))[:, 0]
        nll += float((log_z[:-1] - logits[np.arange(len(ids) - 1), ids[1:]]).sum())
        count += len(ids) - 1
    return nll / count, count


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--binary", default=os.path.join(ROOT, "build/momentkv"))
    p.add_argument("--lengths", default="1024,2036", type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--depths", default="0,0.25,0.5,0.75,1", type=lambda s: [float(x) for x in s.split(",")])
    p.add_argument("--per-cell", type=int, default=10)
    p.add_argument("--needles", type=int, default=1, help="needles per haystack (>1: multi-key, the first asked)")
    p.add_argument("--seed", type=int, default=99, help="eval seed (the trainer uses --seed 1234 and step offsets)")
    p.add_argument("--ppl-window", type=int, default=1024)
    p.add_argument("--ppl-windows", type=int, default=4)
    p.add_argument("--json", help="write all rows and summaries here")
    args = p.parse_args()
    corpus = heldout_corpus()
    rows = retrieval(args, corpus)
    by_length = {L: np.mean([r["correct"] for r in rows if r["target_length"] == L]) for L in args.lengths}
    mean_nll, n_tokens = heldout_perplexity(args, corpus)
    print("accuracy by length:", {L: f"{a:.0%}" for L, a in by_length.items()})
    print(f"held-out perplexity {np.exp(mean_nll):.3f} (mean NLL {mean_nll:.4f} over {n_tokens} tokens)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": os.path.basename(args.model), "seed": args.seed, "needles": args.needles,
                       "accuracy_by_length": {str(k): v for k, v in by_length.items()},
                       "heldout_mean_nll": mean_nll, "heldout_perplexity": float(np.exp(mean_nll)),
                       "heldout_tokens": n_tokens, "samples": rows}, f, indent=1)


if __name__ == "__main__":
    main()
