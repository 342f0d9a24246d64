#!/usr/bin/env python3
"""The note of bench/batched_vs_llamacpp.sh: per (quant, n_parallel, test) the median over rounds of each engine's
aggregate tok/s and the median of the per-round ratios; our decode scaling (tg at N over tg at 1); the targets of
issue 13 (tg >= 1.2x llama-batched-bench at 8 and 32 sequences for bf16 and q4; bf16 tg at 32 >= 6x ours at 1;
peak RSS with a 1 GiB KV pool <= model file + 1 GiB + 150 MB) met or missed. Usage: batched_ratios.py OUT_DIR"""
import json, os, re, statistics, sys
from collections import defaultdict

out = sys.argv[1]
ll, xp = defaultdict(dict), defaultdict(dict)
for line in open(f"{out}/llamacpp.jsonl"):
    j = json.loads(line)
    ll[(j["quant"], j["pl"], f"pp{j['pp']}")][j["round"]] = j["speed_pp"]
    ll[(j["quant"], j["pl"], f"tg{j['tg']}")][j["round"]] = j["speed_tg"]
for line in open(f"{out}/xpuinfer.jsonl"):
    j = json.loads(line)
    xp[(j["quant"], j["n_parallel"], j["test"])][j["round"]] = j["tok_s"]

def med(d):
    return statistics.median(d.values()) if d else float("nan")

print("# Batched decode (continuous batching engine) vs llama-batched-bench, Qwen3-0.6B shape, CPU\n")
print("Made by `bench/batched_vs_llamacpp.sh` (the commands below); medians over rounds, ratios per round.\n")
print("```")
print(open(f"{out}/machine.txt").read().strip())
print()
print(open(f"{out}/commands.txt").read().strip())
print("```\n")
errs = open(f"{out}/errors.txt").read().strip() if os.path.exists(f"{out}/errors.txt") else ""
if errs:
    print("Failures during the run:\n\n```\n" + errs + "\n```\n")
print("| quant | n_parallel | test | xpuinfer tok/s | llama.cpp tok/s | ours / llama.cpp | ratio per round |")
print("|---|---:|---|---:|---:|---:|---|")
ratio = {}
for key in sorted(xp, key=lambda k: (k[0], k[1], k[2])):
    rounds = sorted(set(xp[key]) & set(ll.get(key, {})))
    rs = [xp[key][r] / ll[key][r] for r in rounds if ll[key][r] > 0]
    ratio[key] = statistics.median(rs) if rs else float("nan")
    print(f"| {key[0]} | {key[1]} | {key[2]} | {med(xp[key]):.2f} | {med(ll.get(key, {})):.2f} | {ratio[key]:.2f}x | "
          f"{', '.join(f'{r:.2f}' for r in rs)} |")
print()
tg = sorted({k[2] for k in xp if k[2].startswith("tg")})
checks = []
for t in tg:
    for q in ["bf16", "q4"]:
        for n in [8, 32]:
            r = ratio.get((q, n, t), float("nan"))
            checks.append((f"{t} {q} at {n} sequences >= 1.2x llama-batched-bench S_TG", f"{r:.2f}x", r >= 1.2))
    one, many = med(xp.get(("bf16", 1, t), {})), med(xp.get(("bf16", 32, t), {}))
    s = many / one if one > 0 else float("nan")
    checks.append((f"{t} bf16: 32 sequences >= 6x one sequence (ours)", f"{s:.2f}x ({many:.1f} / {one:.1f} tok/s)", s >= 6))
try:
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(f"{out}/rss_time.txt").read()).group(1))
    model = int(open(f"{out}/model_bytes.txt").read())
    limit = model + (1 << 30) + 150e6
    checks.append(("peak RSS, 32 sequences, 1 GiB KV pool <= file + 1 GiB + 150 MB",
                   f"{rss_kb * 1024 / 1e6:.0f} MB (limit {limit / 1e6:.0f} MB)", rss_kb * 1024 <= limit))
except (OSError, AttributeError, ValueError):
    checks.append(("peak RSS, 32 sequences, 1 GiB KV pool", "not measured", False))
print("| target (issue 13) | measured | met |")
print("|---|---|---|")
for name, val, ok in checks:
    print(f"| {name} | {val} | {'yes' if ok else 'NO'} |")
