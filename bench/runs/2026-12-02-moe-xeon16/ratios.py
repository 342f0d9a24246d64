"""MoE / dense-peer ratios for bench/runs/2026-12-02-moe-xeon16: each MoE model against the dense model of equal active
size in the same round (moe3/dense3, moe3b/dense3b, moe2/dense2, moe2b/dense2b). Equal matmul FLOPs per token (the routers and Qwen2-MoE's
shared-expert gate add < 0.1%) and equal bytes of active weights, so the prefill FLOP-rate ratio and the decode
bandwidth-share ratio are both the tok/s ratio. usage: ratios.py moe.jsonl"""
import json, statistics, sys
from collections import defaultdict

by = defaultdict(lambda: defaultdict(dict))  # (threads, quant, test) -> round -> model -> tok/s
for l in open(sys.argv[1]):
    if l.strip():
        r = json.loads(l)
        by[(r["threads"], r["quant"], r["test"])][r["round"]][r["model"]] = r["tok_s"]
print("| threads | quant | test | MoE model | dense peer | MoE tok/s (median) | dense tok/s (median) | ratio per round | median | >= 0.90 |")
print("|---:|---|---|---|---|---:|---:|---|---:|---|")
for (t, q, test), rounds in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2][0] != "p", kv[0][2])):
    for m in ("moe3", "moe3b", "moe2", "moe2b"):
        d = "dense" + m[3:]
        rs = [v[m] / v[d] for _, v in sorted(rounds.items()) if m in v and d in v]
        if not rs:
            continue
        mm = statistics.median(v[m] for v in rounds.values() if m in v)
        dm = statistics.median(v[d] for v in rounds.values() if d in v)
        med = statistics.median(rs)
        print(f"| {t} | {q} | {test} | {m} | {d} | {mm:.2f} | {dm:.2f} | {' '.join(f'{x:.2f}' for x in rs)} | {med:.3f} | {'yes' if med >= 0.9 else 'no'} |")
