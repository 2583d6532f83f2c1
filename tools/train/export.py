"""Exports a training checkpoint to llama2.c's .bin (then `momentkv import-llama2c` makes the GGUF)
and optionally writes the PyTorch logits of a fixed token sequence, for the engine's logits test.

  /usr/bin/python3 tools/train/export.py --checkpoint runs/longctx/checkpoint.pt --bin runs/longctx/model.bin \
      --reference-logits tests/engine/data/trained_model_logits.bin

Reference file layout (little-endian): int32 n_tokens, int32 n_vocab, int32 tokens[n_tokens],
float32 logits[n_tokens][n_vocab]. The needle prompt file (--needle-prompt) holds the expected value
on its first line and the prompt after it: a held-out single-needle prompt of 1024 tokens, depth 0.5,
seed 7 (tasks.needle_prompt), for the engine's retrieval test."""
import argparse
import os
import random
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Llama, ModelConfig, export_llama2c  # noqa: E402
from tasks import heldout_corpus, needle_prompt  # noqa: E402

REFERENCE_TOKENS = 48  # 48 x 512 logits = 96 KiB


def load_checkpoint(path):
    state = torch.load(path)
    model = Llama(ModelConfig(**state["config"]))
    model.load_state_dict(state["model"])
    model.eval()
    return model, state["step"]


def reference_tokens(n_vocab):
    """BOS, then ids seeded by 7: a sequence no tokenizer produces, so nothing is special-cased."""
    rng = random.Random(7)
    return [1] + [rng.randrange(3, n_vocab) for _ in range(REFERENCE_TOKENS - 1)]


def write_reference_logits(model, path):
    tokens = reference_tokens(model.c.vocab_size)
    with torch.no_grad():
        logits = model(torch.tensor([tokens]))[0]
    with open(path, "wb") as f:
        f.write(struct.pack(f"<2i{len(tokens)}i", len(tokens), model.c.vocab_size, *tokens))
        f.write(logits.to(torch.float32).contiguous().numpy().tobytes())


def write_needle_prompt(path):
    text, value, _ = needle_prompt(heldout_corpus(), random.Random(7), 1024, 0.5, 1)
    with open(path, "w") as f:
        f.write(value + "\n" + text)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--bin", required=True, help="llama2.c .bin to write")
    p.add_argument("--reference-logits", help="also write the PyTorch logits of the reference tokens here")
    p.add_argument("--needle-prompt", help="also write the retrieval test's needle prompt here")
    args = p.parse_args()
    model, step = load_checkpoint(args.checkpoint)
    export_llama2c(model, args.bin)
    print(f"exported step {step} to {args.bin}")
    if args.reference_logits:
        write_reference_logits(model, args.reference_logits)
        print(f"wrote reference logits to {args.reference_logits}")
    if args.needle_prompt:
        write_needle_prompt(args.needle_prompt)
        print(f"wrote the needle prompt to {args.needle_prompt}")


if __name__ == "__main__":
    main()
