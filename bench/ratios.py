#!/usr/bin/env python3
"""Ratios of xpuinfer to llama.cpp from bench/vs_llamacpp.sh output: per (test, depth, quant) the median over
rounds of each engine's tok/s, and the median of the per-round ratios. Usage: ratios.py OUT_DIR"""
import json, statistics, sys
from collections import defaultdict

out = sys.argv[1]
names = {"BF16": "bf16", "Q8_0": "q8", "Q4_0": "q4"}
ll, xp = defaultdict(dict), defaultdict(dict)
for line in open(f"{out}/llamacpp.jsonl"):
    j = json.loads(line)
    ftype = j.get("model_type", "")
    q = next((v for k, v in names.items() if k in ftype), ftype)
    test = f"pp{j['n_prompt']}" if j["n_gen"] == 0 else f"tg{j['n_gen']}"
    ll[(test, j.get("n_depth", 0), q)][j["round"]] = j["avg_ts"]
for line in open(f"{out}/xpuinfer.jsonl"):
    j = json.loads(line)
    xp[(j["test"], j["depth"], j["quant"])][j["round"]] = (j["tok_s"], j["gb_s"])
print("| test | depth | ours / llama.cpp | xpuinfer tok/s | llama.cpp tok/s | xpuinfer GB/s | ratio per round |")
print("|---|---:|---|---:|---:|---:|---|")
for key in sorted(xp, key=lambda k: (k[1], k[2], k[0])):
    if key not in ll:
        continue
    rounds = sorted(set(xp[key]) & set(ll[key]))
    if not rounds:
        continue
    rs = [xp[key][r][0] / ll[key][r] for r in rounds]
    ours = statistics.median(xp[key][r][0] for r in rounds)
    theirs = statistics.median(ll[key][r] for r in rounds)
    gb = [xp[key][r][1] for r in rounds if xp[key][r][1] is not None]
    print(f"| {key[0]} | {key[1]} | {key[2]} {statistics.median(rs):.2f}x | {ours:.2f} | {theirs:.2f} | "
          f"{statistics.median(gb) if gb else float('nan'):.1f} | {', '.join(f'{r:.2f}' for r in rs)} |")

# Share of the memory bandwidth measured in the same round (membw.txt, the 2-thread line or the run's thread
# count): xpuinfer's effective GB/s of each tg test over it.
import os, re
bw = {}
if os.path.exists(f"{out}/membw.txt"):
    for line in open(f"{out}/membw.txt"):
        m = re.match(r"round (\d+): threads=(\d+)\s+best of \d+: ([\d.]+) GB/s", line)
        if m:
            bw.setdefault(int(m.group(1)), {})[int(m.group(2))] = float(m.group(3))
if bw:
    nt = {}
    for line in open(f"{out}/xpuinfer.jsonl"):
        j = json.loads(line)
        nt[(j["test"], j["depth"], j["quant"], j["round"])] = j["threads"]
    print()
    print("| test | depth | quant | share of membw per round | median |")
    print("|---|---:|---|---|---:|")
    for key in sorted(xp, key=lambda k: (k[1], k[2], k[0])):
        if not key[0].startswith("tg"):
            continue
        sh = [xp[key][r][1] / bw[r][nt[key + (r,)]] for r in sorted(xp[key])
              if xp[key][r][1] is not None and r in bw and nt[key + (r,)] in bw[r]]
        if sh:
            print(f"| {key[0]} | {key[1]} | {key[2]} | {', '.join(f'{100 * s:.0f}%' for s in sh)} | "
                  f"{100 * statistics.median(sh):.0f}% |")
