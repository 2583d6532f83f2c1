#!/usr/bin/env python3
"""Load test of `momentkv serve`: N clients send mixed requests (completions, chats, streams,
per-request presses, tokenize) for a count of requests, with the API key; the server's RSS and
thread count are sampled over time. Prints a markdown report (what it shows, command, commit,
date, CPU, then the figures) and writes an SVG plot of RSS and threads over time beside it.

  python3 tools/serve_load.py --binary build/momentkv --model models/stories-needle-2k.gguf \\
      --clients 16 --requests 2000 -o docs/results/serve_load_stories-needle-2k.md
"""
import argparse
import datetime
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_client import cpu_model, start_server  # noqa: E402

KEY = "load-test-key"
PRESSES = [None, "snapkv", "momentkv", "h2o:decode_slack=2", "tova", "knorm", "streaming_llm"]
PROMPTS = ["Once upon a time", "The little dog ran to the park and", "Lily and Tom wanted to play with the ball",
           "One day, a girl named Sue found a big red box in the garden. She opened it and"]


def proc_status(pid):
    """(VmRSS KiB, Threads) of a process from /proc."""
    rss = threads = -1
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return rss, threads


def one_request(port, rng):
    """Sends one random request; returns (kind, HTTP status or 'error: ...')."""
    kind = rng.choice(["completion", "chat", "stream", "chat_stream", "native", "tokenize"])
    body = {"max_tokens": rng.choice([4, 8, 16]), "temperature": rng.choice([0, 0.8])}
    path = "/v1/completions"
    if kind in ("chat", "chat_stream"):
        path = "/v1/chat/completions"
        body["messages"] = [{"role": "user", "content": rng.choice(PROMPTS)}]
    elif kind == "native":
        path = "/completion"
        body = {"prompt": rng.choice(PROMPTS), "n_predict": body["max_tokens"]}
    elif kind == "tokenize":
        path = "/tokenize"
        body = {"content": rng.choice(PROMPTS)}
    else:
        body["prompt"] = rng.choice(PROMPTS)
    if kind in ("stream", "chat_stream"):
        body["stream"] = True
    press = rng.choice(PRESSES)
    if press and kind not in ("tokenize",):
        body["kv_press"] = press
        body["kv_budget"] = rng.choice([8, 16, 32])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        conn.request("POST", path, json.dumps(body),
                     {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"})
        res = conn.getresponse()
        data = res.read()
        if res.status == 200 and kind in ("stream", "chat_stream") and not data.rstrip().endswith(b"data: [DONE]"):
            return kind, "error: stream without [DONE]"
        if res.status == 200 and kind not in ("stream", "chat_stream"):
            json.loads(data)  # a malformed reply is a failure
        return kind, res.status
    except Exception as e:  # noqa: BLE001 - every failure is counted by its kind
        return kind, f"error: {type(e).__name__}"
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default="build/momentkv")
    ap.add_argument("--model", default="models/stories-needle-2k.gguf")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--output", help="markdown report (an SVG plot is written beside it)")
    args = ap.parse_args()

    cmd = [args.binary, "serve", "-m", args.model, "--port", "0", "-np", str(args.slots), "-t", str(args.threads),
           "--queue", "24", "--api-key", KEY, "--chat-template", "chatml"]
    proc, port = start_server(cmd)
    samples = []  # (seconds, rss KiB, threads)
    results = []  # (kind, status, seconds)
    lock = threading.Lock()
    next_index = [0]
    start = time.monotonic()
    stop = threading.Event()

    def sampler():
        while not stop.is_set():
            rss, threads = proc_status(proc.pid)
            samples.append((time.monotonic() - start, rss, threads))
            stop.wait(0.25)

    def client(seed):
        rng = random.Random(seed)
        while True:
            with lock:
                if next_index[0] >= args.requests:
                    return
                next_index[0] += 1
            t0 = time.monotonic()
            kind, status = one_request(port, rng)
            with lock:
                results.append((kind, status, time.monotonic() - t0))
            if len(results) % 200 == 0:
                print(f"serve_load: {len(results)}/{args.requests} requests", file=sys.stderr)

    watcher = threading.Thread(target=sampler, daemon=True)
    watcher.start()
    clients = [threading.Thread(target=client, args=(args.seed * 1000 + i,)) for i in range(args.clients)]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    elapsed = time.monotonic() - start
    time.sleep(1.0)  # idle after the load
    stop.set()
    watcher.join()
    proc.terminate()
    proc.wait(timeout=30)

    by_status = {}
    for _, status, _ in results:
        by_status[str(status)] = by_status.get(str(status), 0) + 1
    latencies = sorted(s for _, status, s in results if status == 200)
    def pct(p):
        return 1000 * latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))] if latencies else float("nan")
    rss = [s[1] for s in samples]
    threads = [s[2] for s in samples]
    kinds = {}
    for kind, status, _ in results:
        kinds.setdefault(kind, [0, 0])
        kinds[kind][0] += 1
        kinds[kind][1] += status == 200
    commit = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], capture_output=True, text=True).stdout.strip()
    command = "python3 tools/serve_load.py " + " ".join(sys.argv[1:])
    lines = [
        f"# momentkv serve under a mixed load: {args.clients} clients, {args.slots} slots, the API key required",
        "",
        f"- **What it shows:** {args.clients} clients send {args.requests} mixed requests (completions, chats, "
        "streams, llama-server's /completion, /tokenize; a press per request drawn from "
        f"{', '.join(p for p in PRESSES if p)} or none, budgets 8–32) to `momentkv serve -np {args.slots} "
        f"-t {args.threads} --queue 24 --api-key` on the trained model; the server's RSS and thread count are "
        "read every 0.25 s; latency is per request, from send to the last byte.",
        f"- **Command:** `{command}`",
        f"- **Commit:** `{commit}`.",
        f"- **Date:** {datetime.date.today().isoformat()}.",
        f"- **CPU:** {cpu_model()} ({os.cpu_count()} cores, {'AVX-512' if ' avx512f' in open('/proc/cpuinfo').read() else 'AVX2, no AVX-512'}).",
        "",
        "## Current state",
        "",
        f"{len(results)} requests in {elapsed:.1f} s ({len(results) / elapsed:.0f} req/s).",
        "",
        "| replies by status | count |",
        "|---|---:|",
    ]
    lines += [f"| {status} | {count} |" for status, count in sorted(by_status.items())]
    lines += ["", "| kind | requests | 200 |", "|---|---:|---:|"]
    lines += [f"| {kind} | {n} | {ok} |" for kind, (n, ok) in sorted(kinds.items())]
    lines += ["", "| p50 latency | p90 | p99 | max |", "|---:|---:|---:|---:|",
              f"| {pct(50):.1f} ms | {pct(90):.1f} ms | {pct(99):.1f} ms | {1000 * latencies[-1]:.1f} ms |", "",
              "| | start | peak | end (1 s idle) |", "|---|---:|---:|---:|",
              f"| RSS | {rss[0]:,} KiB | {max(rss):,} KiB | {rss[-1]:,} KiB |",
              f"| threads | {threads[0]} | {max(threads)} | {threads[-1]} |", ""]
    report = "\n".join(lines)
    if args.output:
        svg = os.path.splitext(args.output)[0] + ".svg"
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            fig, ax = plt.subplots(figsize=(7, 3.2))
            ax.plot([s[0] for s in samples], [r / 1024 for r in rss], label="RSS (MiB)")
            ax.set_xlabel("seconds")
            ax.set_ylabel("RSS (MiB)")
            ax2 = ax.twinx()
            ax2.plot([s[0] for s in samples], threads, color="tab:orange", label="threads")
            ax2.set_ylabel("threads")
            ax.set_title(f"serve under {args.clients} clients, {args.requests} requests")
            fig.legend(loc="lower right")
            fig.tight_layout()
            fig.savefig(svg)
            report += f"\n![RSS and threads over time]({os.path.basename(svg)})\n"
        except ImportError:
            report += "\n(matplotlib is not installed: no plot)\n"
    print(report)
    failed = sum(count for status, count in by_status.items() if status != "200")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
