"""Held-out retrieval tasks of the trained model in RULER's jsonl format, for `momentkv eval ruler --data`
(accuracy vs KV budget for every press, scored with RULER's string_match_all).

  /usr/bin/python3 tools/train/make_eval_set.py -o models/eval/dev --split dev --samples 30
  /usr/bin/python3 tools/train/make_eval_set.py -o models/eval/test --split test --samples 30

Writes, with depths spread evenly over 0..1:
  own_niah_single.jsonl      one needle "The magic number of KEY is VALUE."
  own_niah_multikey.jsonl    --distractors more needles with other keys, the first asked
  own_niah_multivalue.jsonl  2-3 values of one key ("One of the magic numbers of KEY is V."), all asked
  own_vt.jsonl               variable tracking: "VAR A = 12345." then a chain "VAR B = VAR A." ..., all
                             names asked
Needle values are 7-digit numbers, words or hex codes in the proportions the model was trained on.
Haystacks are from the held-out 10% of TinyStories. The seed decides keys, values and haystacks:
--split dev and --split test use two fixed seeds the trainer never uses (so choices are made on dev
and reported on test), --seed overrides. As in RULER, `length` counts the prompt (BOS included)
plus the tokens the engine generates (128 for niah tasks, 30 for vt), so the prompt has the rest."""
import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tasks import (BOS, TaskGenerator, heldout_corpus, needle_of_many, needle_prompt, question_all,  # noqa: E402
                   variable_chain)

TOKENS_TO_GENERATE = {"niah": 128, "vt": 30}  # what `momentkv eval ruler` generates per task name
SPLIT_SEEDS = {"dev": 3001, "test": 4001}       # never used by the trainer (train.py: 1234 and up)


def hidden_prompt(corpus, rng, length, depth, statements, tail):
    """Haystack sentences with `statements` (the first at `depth`, the others at random places, in
    order), then `tail`; `length` tokens including BOS. Returns (text, ids)."""
    budget = length - 1 - len(corpus.encode(tail)) - sum(len(corpus.encode(s)) for s in statements)
    texts, ids = corpus.haystack(rng, budget)
    while sum(map(len, ids)) > budget:
        texts.pop(), ids.pop()
    slots = sorted([round(depth * len(texts))] + [rng.randint(0, len(texts)) for _ in statements[1:]])
    for offset, (slot, statement) in enumerate(zip(slots, statements)):
        texts.insert(slot + offset, statement)
    text = " ".join(texts + [tail])
    return text, [BOS] + corpus.encode(text)


def niah_row(corpus, rng, length, depth, n_needles):
    text, value, ids = needle_prompt(corpus, rng, length, depth, n_needles, TaskGenerator.random_kind(rng))
    return text, [value], ids


def multivalue_row(corpus, rng, length, depth):
    kind = TaskGenerator.random_kind(rng)
    key = TaskGenerator.random_keys(rng, 1)[0]
    count, values = rng.randint(2, 3), []
    while len(values) < count:
        value = TaskGenerator.random_value(rng, kind)
        if value not in values:
            values.append(value)
    text, ids = hidden_prompt(corpus, rng, length, depth, [needle_of_many(kind, key, v) for v in values],
                              question_all(kind, key))
    return text, values, ids


def vt_row(corpus, rng, length, depth):
    names, chain, tail = variable_chain(rng)
    text, ids = hidden_prompt(corpus, rng, length, depth, chain, tail)
    return text, names, ids


def write_task(path, rows, samples, generated, others):
    with open(path, "w") as f:
        for index in range(samples):
            depth = index / max(1, samples - 1)
            text, outputs, ids = rows(depth)
            row = {"index": index, "input": text, "outputs": outputs, "length": len(ids) + generated,
                   "answer_prefix": "", "others": {"depth": round(depth, 4), **others}}
            f.write(json.dumps(row) + "\n")
    print(f"{path}: {samples} samples")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--out", required=True, help="output folder")
    p.add_argument("--length", type=int, default=2048, help="prompt + generated tokens, as RULER counts")
    p.add_argument("--samples", type=int, default=40, help="per task")
    p.add_argument("--distractors", type=int, default=3, help="extra needles of the multi-key task")
    p.add_argument("--split", choices=sorted(SPLIT_SEEDS), help="dev or test: a fixed seed per split")
    p.add_argument("--seed", type=int, help="seed (default: the --split's, else 2026)")
    args = p.parse_args()
    seed = args.seed if args.seed is not None else SPLIT_SEEDS.get(args.split, 2026)
    niah_prompt = args.length - TOKENS_TO_GENERATE["niah"]
    vt_prompt = args.length - TOKENS_TO_GENERATE["vt"]
    if niah_prompt <= 64:
        p.error(f"--length must exceed {TOKENS_TO_GENERATE['niah'] + 64}")
    os.makedirs(args.out, exist_ok=True)
    corpus = heldout_corpus()
    rng = random.Random(seed)
    out = lambda name: os.path.join(args.out, name)  # noqa: E731
    n, niah = args.samples, TOKENS_TO_GENERATE["niah"]
    write_task(out("own_niah_single.jsonl"), lambda d: niah_row(corpus, rng, niah_prompt, d, 1), n, niah,
               {"needles": 1, "seed": seed})
    write_task(out("own_niah_multikey.jsonl"), lambda d: niah_row(corpus, rng, niah_prompt, d, 1 + args.distractors),
               n, niah, {"needles": 1 + args.distractors, "seed": seed})
    write_task(out("own_niah_multivalue.jsonl"), lambda d: multivalue_row(corpus, rng, niah_prompt, d), n, niah,
               {"seed": seed})
    write_task(out("own_vt.jsonl"), lambda d: vt_row(corpus, rng, vt_prompt, d), n, TOKENS_TO_GENERATE["vt"],
               {"seed": seed})


if __name__ == "__main__":
    main()
