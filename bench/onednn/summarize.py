#!/usr/bin/env python3
"""Summarize repeated gemm_bench runs: per (shape, M, engine) the median over runs of the per-run 'x own'
ratio (engine speed / own kernel speed, measured interleaved in the same process) and its min-max across runs.
usage: summarize.py RUN.txt [RUN.txt ...]"""
import re, statistics, sys
from collections import defaultdict

ratio = defaultdict(list)   # (shape, M, engine) -> [x own per run]
gflops = defaultdict(list)
order = []
for path in sys.argv[1:]:
    for line in open(path):
        c = [x.strip() for x in line.strip().strip('|').split('|')]
        if len(c) < 9 or not c[1].isdigit() or c[3] in ('-', '') or c[0] == 'rmsnorm':
            continue
        key = (c[0], int(c[1]), c[2])
        if key not in ratio:
            order.append(key)
        ratio[key].append(float(c[6]))
        gflops[key].append(float(c[4]))
print(f"| shape | M | engine | runs | GFLOP/s (median of runs) | x own: median (min-max over runs) |")
print("|---|---|---|---|---|---|")
for k in order:
    r, g = ratio[k], gflops[k]
    print(f"| {k[0]} | {k[1]} | {k[2]} | {len(r)} | {statistics.median(g):.1f} | "
          f"{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f}) |")
