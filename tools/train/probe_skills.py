"""Teacher-forced skill probe of a training checkpoint on held-out samples: exact-token accuracy of
the answer tokens (retrieval, variable tracking) and of the copied tokens (repeat, random_repeat).
A model with working induction (copy) heads scores near 1 on random_repeat; one without scores
about 1/500.

  /usr/bin/python3 tools/train/probe_skills.py --checkpoint /work/train_run/checkpoint.pt --length 256"""
import argparse
import os
import random
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Llama, ModelConfig  # noqa: E402
from tasks import ANSWER, COPY, TaskGenerator, heldout_corpus  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--length", type=int, default=256)
    p.add_argument("--samples", type=int, default=16, help="per task")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    torch.set_num_threads(1)
    state = torch.load(args.checkpoint)
    model = Llama(ModelConfig(**state["config"]))
    model.load_state_dict(state["model"])
    model.eval()
    generator = TaskGenerator(heldout_corpus())
    print(f"step {state['step']}, length {args.length}, {args.samples} samples per task")
    for task, kind in [("repeat", COPY), ("random_repeat", COPY), ("retrieval", ANSWER), ("vartrack", ANSWER)]:
        rng = random.Random(args.seed)
        right = total = 0
        for _ in range(args.samples):
            sample = generator.sample(rng, args.length + 1, task)
            ids = torch.tensor([sample.ids])
            selected = torch.tensor(sample.answer_mask[1:]) == kind
            with torch.no_grad():
                predicted = model(ids[:, :-1])[0].argmax(-1)
            right += (predicted[selected] == ids[0, 1:][selected]).sum().item()
            total += selected.sum().item()
        print(f"{task:14s} {'copied' if kind == COPY else 'answer'} tokens right: {right}/{total} = {right / max(total, 1):.2f}")


if __name__ == "__main__":
    main()
