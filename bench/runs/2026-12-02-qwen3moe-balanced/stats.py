"""Ratios of run.sh's runs.jsonl (device) and ab.sh's lines (local): per round, MoE / dense peer of the same
--qk-norm-scale, mean (sd) and median over the rounds. Equal FLOPs and active weights per token, so the pp ratio
is the FLOP-rate ratio and the tg gb_s ratio the bandwidth-share ratio. usage: stats.py runs.jsonl | stats.py --ab FILE"""
import json, statistics as st, sys
from collections import defaultdict

def summ(xs):
    return "%.3f (%.3f) median %.3f, n %d" % (st.mean(xs), st.stdev(xs) if len(xs) > 1 else 0, st.median(xs), len(xs))

if sys.argv[1] == "--ab":
    fixed, v = {}, defaultdict(dict)
    for l in open(sys.argv[2]):
        f = l.split()
        if f[0] == "fixed": fixed[f[2]] = float(f[5]); continue
        v[(f[0], f[1])][(f[2], f[3])] = (float(f[4]), float(f[5]))
    for fam in ("moe", "moe-qk4"):
        dense = fam.replace("moe", "dense")
        for b in ("base", "new"):
            w = [r[(fam, b)][0] / r[(dense, "new")][0] for r in v.values() if (fam, b) in r and (dense, "new") in r]
            # CPU time per prefill token: task-clock less the fixed cost (load, warm-up, one token) over 3 x 512
            c = [(r[(dense, "new")][1] - fixed[dense]) / (r[(fam, b)][1] - fixed[fam]) for r in v.values()
                 if (fam, b) in r and (dense, "new") in r]
            us = [(r[(fam, b)][1] - fixed[fam]) / 1536 * 1000 for r in v.values() if (fam, b) in r]
            print("%-8s %-4s pp512 MoE/dense: wall %s | CPU time %s | MoE CPU us/token %.0f" % (fam, b, summ(w), summ(c), st.mean(us)))
    sys.exit()
v = defaultdict(dict)
for l in open(sys.argv[1]):
    j = json.loads(l)
    v[(j["round"], j["test"])][(j["model"], j["bin"])] = j
for test, key in (("pp512", "tok_s"), ("tg64", "tok_s"), ("tg64", "gb_s")):
    for fam in ("moe", "moe-qk4"):
        dense = fam.replace("moe", "dense")
        for b in ("base", "new"):
            xs = [r[(fam, b)][key] / r[(dense, "new")][key] for (rd, t), r in v.items() if t == test and (fam, b) in r and (dense, "new") in r]
            ab = [r[(fam, b)][key] for (rd, t), r in v.items() if t == test and (fam, b) in r]
            print("%-6s %-6s %-8s %-4s MoE/dense %s | MoE %s mean %.1f" % (test, key, fam, b, summ(xs), key, st.mean(ab)))
    for m in ("dense", "dense-qk4"):
        ab = [r[(m, "new")][key] for (rd, t), r in v.items() if t == test and (m, "new") in r]
        print("%-6s %-6s %-8s dense %s mean %.1f (sd %.1f)" % (test, key, m, key, st.mean(ab), st.stdev(ab)))
