#!/usr/bin/env python3
"""`xpuinfer serve` under load: N chat requests from C concurrent clients against the same N sent one at a time
(issue 13's target: >= 4x faster with 64 requests from 16 clients), with time to first token (p50/p95) for both.

Every request is a streamed chat completion (the model's chat template) with its own user message (no two share
a prefix beyond the template's first block, so the prefix cache does not favour either side), greedy, a fixed
max_tokens with ignore_eos so both sides generate the same number of tokens. Rounds alternate the two modes
(sequential, concurrent, sequential, ...) on one server; each round uses prompts not seen before. Time to first
token is measured by the client: from sending the request to the first content chunk.

Writes OUT/ (raw per-request JSON lines, the server log) and OUT.md (the note: machine, commit, command, results),
or, when OUT is bench/runs/NAME, the note as bench/NAME.md (where bench/README.md keeps notes and their runs).
Standard library only:

  python3 bench/serve_bench.py --model /work/bench-models/q06 --out bench/runs/DATE-serve-q06 \
      [--xpuinfer build/xpuinfer] [--threads 2] [--requests 64] [--clients 16] [--max-tokens 64] [--rounds 1]
"""
import argparse
import http.client
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

WORDS = ("river mountain engine lantern silver orchard harbor meadow cipher violet granite falcon ember tundra "
         "quartz willow beacon canyon marble thistle compass glacier saffron timber nebula pepper walnut tide").split()


def user_message(i):
    """A distinct message per request (~40 tokens): different from its first words on."""
    w = [WORDS[(i * 7 + k * 3 + i // len(WORDS)) % len(WORDS)] for k in range(24)]
    return f"Request {i}: write a short story that uses the words " + ", ".join(w) + "."


def one_request(port, model, i, max_tokens):
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": user_message(i)}],
                       "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True, "stream": True,
                       "stream_options": {"include_usage": True}}).encode()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    t0 = time.perf_counter()
    c.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"request {i}: HTTP {r.status}: {r.read()[:300]!r}")
    ttft, usage, buf = None, None, b""
    while True:
        line = r.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        data = line[6:]
        if data == b"[DONE]":
            break
        ev = json.loads(data)
        if ev.get("choices") and ev["choices"][0]["delta"].get("content") and ttft is None:
            ttft = time.perf_counter() - t0
        if ev.get("usage"):
            usage = ev["usage"]
    t1 = time.perf_counter()
    c.close()
    return {"i": i, "ttft_s": ttft, "total_s": t1 - t0, "prompt_tokens": usage and usage["prompt_tokens"],
            "completion_tokens": usage and usage["completion_tokens"]}


def run_mode(port, model, first, n, clients, max_tokens):
    t0 = time.perf_counter()
    if clients == 1:
        res = [one_request(port, model, first + k, max_tokens) for k in range(n)]
    else:
        with ThreadPoolExecutor(clients) as ex:  # C clients, each sending its next request when one ends
            res = list(ex.map(lambda k: one_request(port, model, first + k, max_tokens), range(n)))
    return time.perf_counter() - t0, res


def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--xpuinfer", default="build/xpuinfer")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--extra", default="", help="more `xpuinfer serve` options, e.g. '--quant q8'")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    out = os.path.normpath(a.out)
    name, parent = os.path.basename(out), os.path.dirname(out)
    in_runs = os.path.basename(parent) == "runs"
    note_path = os.path.join(os.path.dirname(parent), name + ".md") if in_runs else out + ".md"
    raw_ref = f"runs/{name}" if in_runs else name
    cmd = [a.xpuinfer, "serve", "-m", a.model, "--port", "0", "--threads", str(a.threads), "--parallel",
           str(a.clients), "--model-name", "bench"] + a.extra.split()
    log = open(os.path.join(a.out, "server.log"), "w")
    srv = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.PIPE, text=True)
    port, lines = None, []
    for line in srv.stderr:  # "listening on http://127.0.0.1:PORT", then "ready:"
        log.write(line)
        lines.append(line)
        if "listening on http://" in line:
            port = int(line.split("http://", 1)[1].split()[0].rsplit(":", 1)[1])
        if "serve: ready:" in line:
            break
    if port is None or srv.poll() is not None:
        sys.exit("the server did not start:\n" + "".join(lines))
    threading.Thread(target=lambda: [log.write(x) for x in srv.stderr], daemon=True).start()

    one_request(port, "bench", 10 ** 6, 4)  # warm-up (first touch of the weights), not counted
    rounds, raw = [], open(os.path.join(a.out, "requests.jsonl"), "w")
    nxt = 0
    for r in range(a.rounds):
        row = {}
        for mode, clients in (("sequential", 1), ("concurrent", a.clients)):
            wall, res = run_mode(port, "bench", nxt, a.requests, clients, a.max_tokens)
            nxt += a.requests
            for x in res:
                raw.write(json.dumps({"round": r, "mode": mode, **x}) + "\n")
            raw.flush()
            ttft = [x["ttft_s"] for x in res]
            row[mode] = {"wall_s": wall, "ttft_p50": pct(ttft, 50), "ttft_p95": pct(ttft, 95),
                         "tokens": sum(x["completion_tokens"] for x in res),
                         "prompt_tokens": sum(x["prompt_tokens"] for x in res)}
            print(f"round {r} {mode}: {wall:.1f} s, ttft p50 {row[mode]['ttft_p50']:.3f} s p95 "
                  f"{row[mode]['ttft_p95']:.3f} s", flush=True)
        row["speedup"] = row["sequential"]["wall_s"] / row["concurrent"]["wall_s"]
        rounds.append(row)
    metrics = subprocess.run(["curl", "-s", f"http://127.0.0.1:{port}/metrics"], capture_output=True, text=True).stdout
    open(os.path.join(a.out, "metrics.txt"), "w").write(metrics)
    srv.terminate()
    rc = srv.wait(60)

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True).stdout.strip()
    cpu = next((ln.split(":", 1)[1].strip() for ln in subprocess.run(["lscpu"], capture_output=True,
                                                                      text=True).stdout.splitlines()
                if ln.startswith("Model name")), platform.processor())
    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
    sp = [r["speedup"] for r in rounds]
    med = statistics.median(sp)
    note = [f"# `xpuinfer serve`: {a.requests} chat requests from {a.clients} concurrent clients vs one at a time",
            "",
            f"Machine: {cpu}, {os.cpu_count()} CPUs visible, load average before the run {' '.join(load)} "
            f"(the machine may be shared: only the ratio of one run means much). Commit {commit}"
            f"{' (with uncommitted changes)' if dirty else ''}. Model `{a.model}`, {a.threads} threads.",
            "",
            "## Command",
            "```",
            "python3 bench/serve_bench.py " + " ".join(
                f"--{k.replace('_', '-')} {v!r}" if k == "extra" else f"--{k.replace('_', '-')} {v}"
                for k, v in vars(a).items() if not (k == "extra" and not v)),
            "```",
            f"Server: `{' '.join(cmd)}`. Each request: a streamed chat completion of a distinct user message "
            f"(~{rounds[0]['sequential']['prompt_tokens'] // a.requests} prompt tokens with the template), greedy, "
            f"max_tokens {a.max_tokens} with ignore_eos; sequential = one client, concurrent = {a.clients} clients "
            "each sending its next request when one ends. Time to first token: client-side, request sent to first "
            "content chunk.",
            "",
            "## Result",
            "| round | sequential s | concurrent s | speedup | TTFT p50 / p95 sequential (s) | TTFT p50 / p95 concurrent (s) "
            "| completion tok/s seq / conc |",
            "|---:|---:|---:|---:|---|---|---|"]
    for k, r in enumerate(rounds):
        s, c = r["sequential"], r["concurrent"]
        note.append(f"| {k} | {s['wall_s']:.1f} | {c['wall_s']:.1f} | {r['speedup']:.2f}x | {s['ttft_p50']:.3f} / "
                    f"{s['ttft_p95']:.3f} | {c['ttft_p50']:.3f} / {c['ttft_p95']:.3f} | "
                    f"{s['tokens'] / s['wall_s']:.1f} / {c['tokens'] / c['wall_s']:.1f} |")
    note += ["", f"Median speedup {med:.2f}x (target >= 4x: {'met' if med >= 4 else 'missed'}). Server exit status "
             f"after SIGTERM: {rc}.", "",
             f"Raw: `{raw_ref}/requests.jsonl` (every request), `server.log`, `metrics.txt` "
             "(/metrics at the end)."]
    open(note_path, "w").write("\n".join(note) + "\n")
    print("\n".join(note))


if __name__ == "__main__":
    main()
