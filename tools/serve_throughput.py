"""Aggregate decode throughput of `momentkv serve` at several slot counts, side by side.

    /usr/bin/python3 tools/serve_throughput.py -m MODEL [--slots 1,2,4,8] [--rounds 2]
        [--prompt-tokens 256] [--max-tokens 64] [--press momentkv --kv-budget 64] [--binary build/momentkv]
        [--decode-only [--short-tokens 8]]

For each round and each slot count N (the order alternates between rounds), starts
`momentkv serve -m MODEL -np N` on a free loopback port, sends N concurrent completions of the
same length (ignore_eos, greedy, `--max-tokens` tokens each, a prompt of about `--prompt-tokens`
tokens that differs per client) and times them. Prints a markdown table: per N the median over
rounds of the aggregate generated tokens per second (all clients' completion tokens / wall time
from the first request to the last reply, prompts included) and of one request's latency, and
the server's largest decode batch (/metrics). With --decode-only, the same N requests are sent
again with --short-tokens tokens each, and the decode-only rate is N x (max - short) tokens over
the difference of the two wall times (the prompts' cost cancels out), the figure to set beside
llama-batched-bench's S_TG. Standard library only; loopback only.
"""
import argparse
import statistics
import sys
import threading
import time

from serve_client import cpu_model, metric, post, start_server


def measure(args, slots):
    """(aggregate tok/s, median latency s, largest decode batch, decode-only aggregate tok/s or None)."""
    proc, port = start_server([args.binary, "serve", "-m", args.model, "--port", "0", "--metrics", "-np", str(slots)])
    try:
        words = "Once upon a time there was a little girl who loved to play in the park with her dog. "
        prompt = lambda i: f"Story {i}. " + words * max(1, args.prompt_tokens // 20)  # noqa: E731
        body = lambda i, n: {"prompt": prompt(i), "max_tokens": n, "temperature": 0,  # noqa: E731
                             "ignore_eos": True, **({"kv_press": args.press, "kv_budget": args.kv_budget}
                                                    if args.press else {})}
        post(port, body(999, 2))  # warm-up: weights paged in, threads started

        def batch(n_tokens):
            results, latencies = [None] * slots, [0.0] * slots

            def client(i):
                t0 = time.perf_counter()
                results[i] = post(port, body(i, n_tokens))
                latencies[i] = time.perf_counter() - t0

            start = time.perf_counter()
            threads = [threading.Thread(target=client, args=(i,)) for i in range(slots)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return sum(r["usage"]["completion_tokens"] for r in results), time.perf_counter() - start, latencies

        tokens, wall, latencies = batch(args.max_tokens)
        decode_tps = None
        if args.decode_only:
            # The same prompts with fewer tokens each: the difference is decode time alone.
            short_tokens, short_wall, _ = batch(args.short_tokens)
            decode_tps = (tokens - short_tokens) / (wall - short_wall)
        return tokens / wall, statistics.median(latencies), int(metric(port, "decode_batch_max")), decode_tps
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-m", "--model", required=True)
    p.add_argument("--binary", default="build/momentkv")
    p.add_argument("--slots", default="1,2,4,8")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--prompt-tokens", type=int, default=256)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--press", default="", help="kv_press of every request (default: the full cache)")
    p.add_argument("--kv-budget", type=int, default=64)
    p.add_argument("--decode-only", action="store_true",
                   help="also send the same requests with --short-tokens tokens each and report the decode rate "
                        "from the difference (prompt processing cancels out; compare with llama-batched-bench's S_TG)")
    p.add_argument("--short-tokens", type=int, default=8)
    args = p.parse_args()
    slot_counts = [int(s) for s in args.slots.split(",")]
    runs = {n: [] for n in slot_counts}
    for r in range(args.rounds):
        order = slot_counts if r % 2 == 0 else list(reversed(slot_counts))
        for n in order:
            runs[n].append(measure(args, n))
            print(f"round {r + 1}, {n} slot(s): {runs[n][-1][0]:.1f} tok/s", file=sys.stderr)
    cpu = cpu_model()
    print(f"model {args.model}; {args.max_tokens} tokens per request, prompts of about {args.prompt_tokens} tokens; "
          f"press {args.press or 'full'}; CPU {cpu}; median of {args.rounds} rounds\n")
    decode_col = " decode-only tok/s |" if args.decode_only else ""
    print(f"| slots | aggregate tok/s | vs 1 slot | request latency s | largest decode batch |{decode_col}")
    print("|---|---|---|---|---|" + ("---|" if args.decode_only else ""))
    base = statistics.median(x[0] for x in runs[slot_counts[0]])
    for n in slot_counts:
        tps = statistics.median(x[0] for x in runs[n])
        lat = statistics.median(x[1] for x in runs[n])
        decode = f" {statistics.median(x[3] for x in runs[n]):.1f} |" if args.decode_only else ""
        print(f"| {n} | {tps:.1f} | {tps / base:.2f}x | {lat:.2f} | {max(x[2] for x in runs[n])} |{decode}")


if __name__ == "__main__":
    main()
