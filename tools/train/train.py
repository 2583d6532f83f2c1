"""Trains a small llama-architecture model on TinyStories text and RULER-style long-context tasks
(tasks.py) with a length curriculum, on the CPU, seeded and resumable; exports llama2.c's .bin.

  /usr/bin/python3 tools/train/train.py --out runs/longctx \
      --phases 256:600,512:400,1024:300,2048:200

Every step's batch comes from random.Random(seed, step), so a killed run resumed from its last
checkpoint (OUT/checkpoint.pt, written every --checkpoint-every steps) continues identically."""
import argparse
import math
import os
import random
import sys
import time
from dataclasses import asdict

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Llama, ModelConfig, export_llama2c, seed_induction_circuit  # noqa: E402
from tasks import ANSWER, TEXT, TOKENIZER_MODEL, Corpus, TaskGenerator  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="run folder: checkpoint.pt, train_log.tsv, model.bin")
    p.add_argument("--phases", default="256:600,512:400,1024:300,2048:200",
                   help="curriculum: seq_len:steps,... in order")
    p.add_argument("--tokens-per-step", type=int, default=8192, help="batch size in tokens (batch = this / seq_len)")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--answer-weight", type=float, default=1.0, help="weight of the mean loss over answers and copied spans")
    p.add_argument("--mix", type=parse_mix, default=None,
                   help="task weights, e.g. random_repeat:0.3,retrieval:0.5,text:0.2 (default: tasks.py TASKS)")
    p.add_argument("--seed-induction", action="store_true",
                   help="start from a working copy circuit in layers 0-1 (model.seed_induction_circuit)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--checkpoint-every", type=int, default=50)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--hidden-dim", type=int, default=384)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--rope-theta", type=float, default=10000.0,
                   help="RoPE base; import-llama2c reads it back from the exported table")
    p.add_argument("--text", default=TEXT)
    p.add_argument("--tokenizer-model", default=TOKENIZER_MODEL)
    return p.parse_args()


def parse_mix(spec):
    """'retrieval:0.5,text:0.5' -> {'retrieval': 0.5, 'text': 0.5}"""
    return {name: float(weight) for name, weight in (part.split(":") for part in spec.split(","))}


def curriculum(spec):
    """'256:600,512:400' -> [(256, 600), (512, 400)]"""
    return [tuple(int(x) for x in part.split(":")) for part in spec.split(",")]


def seq_len_at(phases, step):
    for seq_len, steps in phases:
        if step < steps:
            return seq_len
        step -= steps
    return phases[-1][0]


def learning_rate(args, step, total):
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, total - args.warmup)
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def make_batch(generator, seed, step, seq_len, batch):
    rng = random.Random(seed * 1_000_003 + step)
    samples = [generator.sample(rng, seq_len + 1) for _ in range(batch)]
    ids = torch.tensor([s.ids for s in samples])
    mask = torch.tensor([s.answer_mask for s in samples])
    return ids[:, :-1], ids[:, 1:], mask[:, 1:]


def losses(model, inputs, targets, mask):
    """Mean LM loss over plain targets, mean loss over answer and copied-span targets, and the
    exact-token accuracy over answers alone (the retrieval skill)."""
    logits = model(inputs)
    nll = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none").view_as(targets)
    weighted, answer = mask > 0, mask == ANSWER
    lm = nll[~weighted].mean()
    extra = nll[weighted].mean() if weighted.any() else torch.zeros(())
    accuracy = (logits.argmax(-1) == targets)[answer].float().mean().item() if answer.any() else float("nan")
    return lm, extra, accuracy


def save_checkpoint(path, model, optimizer, step, config):
    tmp = path + ".tmp"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "config": asdict(config)}, tmp)
    os.replace(tmp, path)


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    phases = curriculum(args.phases)
    total = sum(steps for _, steps in phases)
    config = ModelConfig(dim=args.dim, hidden_dim=args.hidden_dim, n_layers=args.layers, n_heads=args.heads,
                         n_kv_heads=args.kv_heads, seq_len=max(l for l, _ in phases), rope_theta=args.rope_theta)
    model = Llama(config)
    if args.seed_induction:
        seed_induction_circuit(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    checkpoint = os.path.join(args.out, "checkpoint.pt")
    step = 0
    if os.path.exists(checkpoint):
        state = torch.load(checkpoint)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = state["step"]
        print(f"resumed from {checkpoint} at step {step}", flush=True)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model {asdict(config)}: {n_params:,} parameters; {total} steps {phases}", flush=True)

    generator = TaskGenerator(Corpus(args.text, args.tokenizer_model, "train"), args.mix)
    log = open(os.path.join(args.out, "train_log.tsv"), "a")
    if step == 0:
        log.write("step\tseq_len\tlr\tlm_loss\tanswer_loss\tanswer_acc\ttokens_per_s\telapsed_s\n")
    start, tokens_done = time.time(), 0
    while step < total:
        seq_len = seq_len_at(phases, step)
        inputs, targets, mask = make_batch(generator, args.seed, step, seq_len,
                                             max(1, args.tokens_per_step // seq_len))
        lr = learning_rate(args, step, total)
        for group in optimizer.param_groups:
            group["lr"] = lr
        lm, ans, accuracy = losses(model, inputs, targets, mask)
        optimizer.zero_grad(set_to_none=True)
        (lm + args.answer_weight * ans).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        step += 1
        tokens_done += inputs.numel()
        elapsed = time.time() - start
        rate = tokens_done / elapsed
        log.write(f"{step}\t{seq_len}\t{lr:.2e}\t{lm.item():.4f}\t{ans.item():.4f}\t{accuracy:.3f}\t{rate:.0f}\t{elapsed:.0f}\n")
        log.flush()
        print(f"\rstep {step}/{total} len {seq_len} lr {lr:.1e} | lm {lm.item():.3f} answer {ans.item():.3f} "
              f"acc {accuracy:.2f} | {rate:,.0f} tok/s {elapsed / 60:.1f} min", end="", flush=True)
        if step % args.checkpoint_every == 0 or step == total:
            print(flush=True)
            save_checkpoint(checkpoint, model, optimizer, step, config)
    export_llama2c(model, os.path.join(args.out, "model.bin"))
    print(f"\nexported {os.path.join(args.out, 'model.bin')}", flush=True)


if __name__ == "__main__":
    main()
