"""How many long-context sessions one KV-memory cap serves at once, full cache vs compressed.

    /usr/bin/python3 tools/serve_admission_bench.py -m models/stories-needle-2k.gguf \\
        --data models/eval/test/own_niah_single.jsonl --kv-memory 10 --slots 8 \\
        --setting full --setting momentkv:256 --setting momentkv:128 [--rounds 2]

For each round and each setting (PRESS:BUDGET, or full; the order alternates between rounds) it
starts `momentkv serve -m MODEL -np SLOTS --kv-memory MIB -ub UB [--compress-chunks]` on a free
loopback port, sends every prompt of the RULER jsonl file at once (greedy, `--max-tokens` tokens),
and reports: the most sessions that decoded together (the server's largest decode batch, /metrics),
the aggregate generated tokens per second over the whole run (prompts included), and the accuracy
(RULER string_match_all, %) of the replies. Standard library only; loopback only.
"""
import argparse
import json
import statistics
import sys
import threading
import time

from serve_client import cpu_model, metric, post, start_server


def server_command(args):
    cmd = [args.binary, "serve", "-m", args.model, "--port", "0", "--metrics", "-np", str(args.slots), "--kv-memory",
           str(args.kv_memory), "-ub", str(args.ubatch), "--queue", "24"]
    return cmd + (["--compress-chunks"] if args.compress_chunks else [])


def run(args, rows, setting):
    press = {} if setting == "full" else {"kv_press": setting.split(":")[0], "kv_budget": int(setting.split(":")[1])}
    proc, port = start_server(server_command(args))
    try:
        replies = [None] * len(rows)

        def client(i):
            replies[i] = post(port, {"prompt": rows[i]["input"], "max_tokens": args.max_tokens, "temperature": 0,
                                     **press})

        start = time.perf_counter()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(len(rows))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        tokens = sum(r["usage"]["completion_tokens"] for r in replies)
        correct = [100.0 * sum(o.lower() in r["choices"][0]["text"].lower() for o in row["outputs"]) / len(row["outputs"])
                   for r, row in zip(replies, rows)]
        held = statistics.mean(r["usage"].get("kv_bytes_held", 0) for r in replies)
        return {"together": int(metric(port, "decode_batch_max")), "tok_s": tokens / wall, "wall": wall,
                "accuracy": statistics.mean(correct), "held": held}
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-m", "--model", required=True)
    p.add_argument("--data", required=True, help="RULER jsonl (input, outputs)")
    p.add_argument("--binary", default="build/momentkv")
    p.add_argument("--kv-memory", type=float, required=True, help="MiB")
    p.add_argument("--slots", type=int, default=8)
    p.add_argument("--ubatch", type=int, default=256)
    p.add_argument("--compress-chunks", action="store_true",
                   help="serve with --compress-chunks (a lower peak, but the question is not seen when chunks are compressed)")
    p.add_argument("--max-tokens", type=int, default=16)
    p.add_argument("--setting", action="append", required=True, help="full or PRESS:BUDGET, repeatable")
    p.add_argument("--samples", type=int, default=0, help="first N prompts (0 = all)")
    p.add_argument("--rounds", type=int, default=1)
    args = p.parse_args()
    rows = [json.loads(l) for l in open(args.data) if l.strip()]
    if args.samples:
        rows = rows[:args.samples]
    if len(rows) > 24:  # the server's --queue 24 (its maximum): more at once would get 503
        sys.exit(f"error: {len(rows)} prompts at once; at most 24 (--samples N)")
    results = {s: [] for s in args.setting}
    for r in range(args.rounds):
        for s in (args.setting if r % 2 == 0 else list(reversed(args.setting))):
            results[s].append(run(args, rows, s))
            print(f"round {r + 1} {s}: {results[s][-1]}", file=sys.stderr)
    cpu = cpu_model()
    print(f"{len(rows)} prompts of {args.data} at once; -np {args.slots} --kv-memory {args.kv_memory} MiB "
          f"{'--compress-chunks ' if args.compress_chunks else ''}-ub {args.ubatch}; {args.max_tokens} tokens each; CPU {cpu}; "
          f"median of {args.rounds} round(s)\n")
    print("| setting | sessions decoding together (max) | KV bytes held per session | aggregate tok/s | wall s | accuracy % |")
    print("|---|---|---|---|---|---|")
    for s in args.setting:
        rs = results[s]
        print(f"| {s} | {max(x['together'] for x in rs)} | {statistics.median(x['held'] for x in rs):,.0f} | "
              f"{statistics.median(x['tok_s'] for x in rs):.1f} | {statistics.median(x['wall'] for x in rs):.1f} | "
              f"{statistics.median(x['accuracy'] for x in rs):.1f} |")


if __name__ == "__main__":
    main()
