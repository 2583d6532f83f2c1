"""Held-out needle tasks of the trained model in RULER's jsonl format, for `momentkv eval ruler --data`
(accuracy vs KV budget for every press, scored with RULER's string_match_all).

  /usr/bin/python3 tools/train/make_eval_set.py -o /work/own_eval --length 2048 --samples 40

Writes OUT/own_niah_single.jsonl (one needle) and OUT/own_niah_multikey.jsonl (--distractors more
needles with other keys, the first asked), with depths spread evenly over 0..1. Haystacks are from
the held-out 10% of TinyStories and keys/values from --seed, which the trainer never uses. As in
RULER, `length` counts the prompt (BOS included) plus the 128 tokens the engine generates for niah
tasks, so the prompt has length - 128 tokens."""
import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tasks import heldout_corpus, needle_prompt  # noqa: E402

TOKENS_TO_GENERATE = 128  # what `momentkv eval ruler` generates for task names containing "niah"


def write_task(path, corpus, rng, length, samples, n_needles):
    with open(path, "w") as f:
        for index in range(samples):
            depth = index / max(1, samples - 1)
            text, value, ids = needle_prompt(corpus, rng, length - TOKENS_TO_GENERATE, depth, n_needles)
            row = {"index": index, "input": text, "outputs": [value], "length": len(ids) + TOKENS_TO_GENERATE,
                   "answer_prefix": "", "others": {"depth": round(depth, 4), "needles": n_needles}}
            f.write(json.dumps(row) + "\n")
    print(f"{path}: {samples} samples, {n_needles} needle(s)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--out", required=True, help="output folder")
    p.add_argument("--length", type=int, default=2048, help="prompt + generated tokens, as RULER counts")
    p.add_argument("--samples", type=int, default=40, help="per task")
    p.add_argument("--distractors", type=int, default=3, help="extra needles of the multi-key task")
    p.add_argument("--seed", type=int, default=2026)
    args = p.parse_args()
    if args.length <= TOKENS_TO_GENERATE + 64:
        p.error(f"--length must exceed {TOKENS_TO_GENERATE + 64} (the prompt gets length - {TOKENS_TO_GENERATE})")
    os.makedirs(args.out, exist_ok=True)
    corpus = heldout_corpus()
    rng = random.Random(args.seed)
    write_task(os.path.join(args.out, "own_niah_single.jsonl"), corpus, rng, args.length, args.samples, 1)
    write_task(os.path.join(args.out, "own_niah_multikey.jsonl"), corpus, rng, args.length, args.samples,
               1 + args.distractors)


if __name__ == "__main__":
    main()
