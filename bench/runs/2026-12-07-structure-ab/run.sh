#!/usr/bin/env bash
# Before/after A/B of a structural change: two builds of xpuinfer (OLD, NEW: their build folders), the Qwen3-0.6B
# shape (mkrandmodel --preset qwen3-0.6b, qwen3 tokenizer), pp128 and tg32, bf16 and q8, 2 threads, the two
# builds in turn for ROUNDS rounds; prints the medians and the per-round ratios NEW/OLD.
#   bench/runs/2026-12-07-structure-ab/run.sh OLD_BUILD NEW_BUILD [ROUNDS]
set -euo pipefail
old=$1 new=$2 rounds=${3:-6} out=$(dirname "$0") model=/tmp/q06
[ -f $model/model.safetensors ] || { "$new/mkrandmodel" $model --preset qwen3-0.6b; cp tests/data/tokenizers/qwen3/* $model/; }
for r in $(seq "$rounds"); do
  "$old/xpuinfer" bench -m $model -p 128 -n 32 -r 5 -t 2 --quant bf16,q8 --json > "$out/old-$r.jsonl"
  "$new/xpuinfer" bench -m $model -p 128 -n 32 -r 5 -t 2 --quant bf16,q8 --json > "$out/main-$r.jsonl"
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, R = sys.argv[1], range(1, int(sys.argv[2]) + 1)
rows = {}
for v in ("old", "main"):
    for r in R:
        for l in open(f"{out}/{v}-{r}.jsonl"):
            d = json.loads(l); rows[(v, r, d["test"], d["quant"])] = d["tok_s"]
for t, q in sorted({(k[2], k[3]) for k in rows}):
    rat = [rows[("main", r, t, q)] / rows[("old", r, t, q)] for r in R]
    med = lambda v: statistics.median(rows[(v, r, t, q)] for r in R)
    print(f"{t:6} {q:5} old {med('old'):8.2f} new {med('main'):8.2f}  ratios "
          + " ".join("%.3f" % x for x in rat) + f"  median {statistics.median(rat):.3f}")
PY
