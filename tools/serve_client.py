"""Helpers of the serve measurement tools (serve_throughput.py, serve_admission_bench.py): start
`momentkv serve` on a free loopback port, post a completion, read a /metrics sample."""
import json
import re
import subprocess
import sys
import threading
import urllib.request


def start_server(cmd):
    """Runs `cmd` (a momentkv serve command line with --port 0); returns (process, port)."""
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    while True:
        line = proc.stderr.readline()
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep the pipe drained
            return proc, int(m.group(1))
        if not line:
            sys.exit("error: " + " ".join(cmd) + " did not start")


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=1200) as r:
        return json.loads(r.read())


def metric(port, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
        m = re.search(rf"^momentkv:{name} (\S+)$", r.read().decode(), re.M)
    return float(m.group(1)) if m else 0.0


def cpu_model():
    return next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
