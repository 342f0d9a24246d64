"""Per-family ratios for bench/runs/2026-12-01-families-xeon16: decode bandwidth share and prefill FLOP rate of each
family against the qwen3 (and llama) run of the same round. usage: ratios.py families.jsonl sizes.jsonl
Decode bytes per token: every tensor the step reads = all weights, less the embedding table when an lm_head is
separate (one row of it is gathered); tg64 also reads the KV cache, the same for every family at this shape, left
out. q8 scales every matmul alike, so its share uses the bf16 bytes as well (the ratio is what the check needs).
Prefill FLOPs for ppN: 2 * layer matmul params * N + 2 * lm_head params (last token's logits only) + attention
4 * layers * heads * head_dim * (causal pairs, each query's window capped by sliding_window on sliding layers)."""
import json, statistics, sys
from collections import defaultdict

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
sizes = {s["model"]: s for s in map(json.loads, open(sys.argv[2]))}


def dec_bytes(s):
    b = s["bytes"]
    if s["lm_head_params"]:
        b -= (s["embed_params"] - s["hidden"]) * 2
    return b


def pairs(n, w):
    return sum(min(i + 1, w) for i in range(n)) if w else n * (n + 1) // 2


def pf_flops(s, n):
    head = s["lm_head_params"] or s["embed_params"]
    att = 0
    for li in range(s["layers"]):
        lt = (s["layer_types"] or [None] * s["layers"])[li]
        w = s["sliding_window"] if (lt == "sliding_attention" or (lt is None and s["sliding_window"])) else None
        att += 4 * s["heads"] * s["head_dim"] * pairs(n, w)
    return 2 * s["layer_matmul_params"] * n + 2 * head + att


# per (threads, quant, test): round -> model -> tok/s
by = defaultdict(lambda: defaultdict(dict))
for r in rows:
    by[(r["threads"], r["quant"], r["test"])][r["round"]][r["model"]] = r["tok_s"]
models = list(sizes)
for key in sorted(by, key=lambda k: (k[1], k[0], k[2])):
    t, q, test = key
    n = int(test[2:])
    tg = test.startswith("tg")
    unit = (lambda m: dec_bytes(sizes[m])) if tg else (lambda m: pf_flops(sizes[m], n) / n)  # per token
    what = "bandwidth share (bytes/token x tok/s)" if tg else "FLOP rate"
    rounds = by[key]
    print(f"\n### {test} {q}, {t} threads: {what} against ref = mean of qwen3 and llama (those present) in the same round ({len(rounds)} rounds)\n")
    print("| family | tok/s (median) | GB/s or GFLOP/s (median) | / ref, median of rounds | per round | / qwen3 | / llama | >= 0.90 |")
    print("|---|---:|---:|---:|---|---:|---|---|")
    for m in models:
        ts = [rd[m] for rd in rounds.values() if m in rd]
        if not ts:
            continue
        def ratio(rd, peers):
            ps = [rd[p] * unit(p) for p in peers if p in rd]
            return rd[m] * unit(m) / statistics.mean(ps) if ps and m in rd else None
        rr = [x for x in (ratio(rd, ("qwen3", "llama")) for rd in rounds.values()) if x is not None]
        rq = [x for x in (ratio(rd, ("qwen3",)) for rd in rounds.values()) if x is not None]
        rl = [x for x in (ratio(rd, ("llama",)) for rd in rounds.values()) if x is not None]
        med = statistics.median(ts)
        f = lambda v: f"{statistics.median(v):.3f}" if v else "-"
        mr = statistics.median(rr)
        ok = "yes" if mr >= 0.90 else f"**no: {100 * (1 - mr / 0.90):.0f}% below 0.90**"
        print(f"| {m} | {med:.2f} | {med * unit(m) / 1e9:.1f} | {mr:.3f} | {' '.join(f'{x:.2f}' for x in rr)} | {f(rq)} | {f(rl)} | {ok} |")
