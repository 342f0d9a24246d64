#!/usr/bin/env python3
"""The note of a bench/vs_llamacpp.sh run, as Markdown on stdout: machine and versions, then per thread count
the tok/s of llama.cpp and of xpuinfer's default kernel choice ("auto") and each forced kernel table, with the
median over rounds of the per-round ratios to llama.cpp, issue 16's targets, and the check that the default is
never more than 5% slower than the fastest forced table. Usage: ratios.py OUT_DIR [--label TITLE]"""
import json
import os
import re
import statistics
import sys
from collections import defaultdict

out = sys.argv[1]
label = sys.argv[sys.argv.index("--label") + 1] if "--label" in sys.argv else os.path.basename(out.rstrip("/"))
names = {"BF16": "bf16", "Q8_0": "q8", "Q4_0": "q4"}
ll = defaultdict(dict)  # (threads, test, depth, quant) -> {round: tok/s}
xp = defaultdict(dict)  # (isa, threads, test, depth, quant) -> {round: (tok/s, gb/s)}
kernels = {}            # (isa, quant) -> what ran
llama_build = "?"
for line in open(f"{out}/llamacpp.jsonl"):
    j = json.loads(line)
    llama_build = f"{j.get('build_commit', '?')} (build {j.get('build_number', '?')}), cpu_info {j.get('cpu_info', '?')}"
    q = next((v for k, v in names.items() if k in j.get("model_type", "")), j.get("model_type", ""))
    test = f"pp{j['n_prompt']}" if j["n_gen"] == 0 else f"tg{j['n_gen']}"
    ll[(j["n_threads"], test, j.get("n_depth", 0), q)][j["round"]] = j["avg_ts"]
for line in open(f"{out}/xpuinfer.jsonl"):
    j = json.loads(line)
    isa = j.get("isa", "auto")
    xp[(isa, j["threads"], j["test"], j["depth"], j["quant"])][j["round"]] = (j["tok_s"], j["gb_s"])
    kernels[(isa, j["quant"])] = j.get("kernels", "")

# issue 16's targets: (threads predicate, test kind, quant) -> minimum ratio to llama.cpp
def target(threads, test, quant):
    if threads >= 16:
        return 1.2 if (test.startswith("tg") and quant == "q4") else 1.0
    if threads == 2:
        if test.startswith("pp"):
            return 1.1 if quant == "q4" else 1.3
        return 1.10 if quant == "q4" else 1.05
    return None


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def ratio(isa, key):
    """median over rounds of xpuinfer/llama.cpp, and xpuinfer's median tok/s"""
    a, b = xp.get((isa,) + key, {}), ll.get(key, {})
    rounds = sorted(set(a) & set(b))
    return med([a[r][0] / b[r] for r in rounds]), med([a[r][0] for r in rounds]), rounds


meta = open(f"{out}/machine.txt").read() if os.path.exists(f"{out}/machine.txt") else ""
field = lambda k: next((l.split(":", 1)[1].strip() for l in meta.splitlines() if l.startswith(k)), "?")
isas = sorted({k[0] for k in xp}, key=lambda i: ["auto", "scalar", "avx2", "avxvnni", "avx512", "amx"].index(i)
              if i in ["auto", "scalar", "avx2", "avxvnni", "avx512", "amx"] else 99)
judged = "auto" if "auto" in isas else isas[0]  # the table the targets judge: auto, or the one forced table run
threads = sorted({k[0] for k in ll})
tests = sorted({(k[1], k[2], k[3]) for k in ll} | {(k[2], k[3], k[4]) for k in xp}, key=lambda k: (k[1], k[0][:2] != "pp", ["bf16", "q8", "q4"].index(k[2])
                                                                   if k[2] in ["bf16", "q8", "q4"] else 9))
print(f"# {label}: xpuinfer vs llama.cpp on the CPU, every kernel table\n")
print(f"- CPU: {field('Model name')} ({field('CPU(s)')} CPUs); flags with amx/avx512: "
      f"{' '.join(f for f in field('Flags').split() if 'amx' in f or 'avx512' in f or 'vnni' in f) or '-'}")
print(f"- xpuinfer: {field('xpuinfer commit')}; llama.cpp: {field('llama.cpp')}, {llama_build}")
load = next((l.strip() for l in meta.splitlines() if "load average" in l), "?")
print(f"- date: {field('date')}; at the start: {load}")
print(f"- command: `{field('command')}`")
print("- method: each round runs llama-bench, then `xpuinfer bench --cpu-isa <all tables>`, per quant and thread "
      "count, one repetition each; ratios are medians over rounds of the per-round ratio (same round, same load).")
print("- what each table ran (a table this CPU lacks falls back to the best one below it):")
for isa in isas:
    ks = "; ".join(kernels[(isa, q)] for q in ["bf16", "q8", "q4"] if (isa, q) in kernels)
    print(f"  - `{isa}`: {ks}")
print()
misses, slow_defaults = [], []
for t in threads:
    print(f"## {t} thread{'s' if t > 1 else ''}\n")
    head = "| test | llama.cpp tok/s | " + " | ".join(f"{i} tok/s (ratio)" for i in isas) + " | target | rounds |"
    print(head)
    print("|---|---:|" + "---:|" * len(isas) + "---|---|")
    for test, depth, q in tests:
        key = (t, test, depth, q)
        if key not in ll:
            if any((i,) + key in xp for i in isas):
                print(f"| {test} {q} | no result (llama-bench failed) | " + " | ".join(
                    f"{med([v[0] for v in xp[(i,) + key].values()]):.1f}" if (i,) + key in xp else "-" for i in isas) + " | - | - |")
                misses.append(f"{t} threads {test} {q}: no llama.cpp result")
            continue
        cells, rounds_txt = [], ""
        for isa in isas:
            r, tok, rounds = ratio(isa, key)
            cells.append("-" if not rounds else f"{tok:.1f} ({r:.2f}x)")
            if isa == judged and rounds:
                per = [xp[(isa,) + key][x][0] / ll[key][x] for x in rounds]
                rounds_txt = ", ".join(f"{p:.2f}" for p in per)
        tg = target(t, test, q) if depth == 0 else None
        r_auto = ratio(judged, key)[0]
        verdict = "-" if tg is None else (f">= {tg:.2f}: met" if r_auto >= tg else f">= {tg:.2f}: **missed by {100 * (1 - r_auto / tg):.0f}%**")
        if tg is not None and not r_auto >= tg:
            misses.append(f"{t} threads {test} {q}: {r_auto:.2f}x (target {tg:.2f}x)")
        name = f"{test} {q}" + (f" @ depth {depth}" if depth else "")
        print(f"| {name} | {med(list(ll[key].values())):.1f} | " + " | ".join(cells) + f" | {verdict} | {rounds_txt} |")
    print()
    # default vs fastest forced table
    rows = []
    for test, depth, q in tests:
        key = (t, test, depth, q)
        if key not in ll or (("auto",) + key) not in xp:
            continue
        forced = [(med([v[0] for v in xp[(i,) + key].values()]), i) for i in isas if i != "auto" and (i,) + key in xp]
        if not forced:
            continue
        best, bi = max(forced)
        a = med([v[0] for v in xp[("auto",) + key].values()])
        rows.append((f"{test} {q}", a, best, bi, a / best))
        if a / best < 0.95:
            slow_defaults.append(f"{t} threads {test} {q}: auto {a:.1f} vs {bi} {best:.1f} tok/s ({a / best:.2f}x)")
    if rows:
        print("Default (auto) against the fastest forced table (medians over rounds; must be >= 0.95):\n")
        print("| test | auto tok/s | fastest forced | its tok/s | auto / fastest |")
        print("|---|---:|---|---:|---:|")
        for n_, a, b, bi, r in rows:
            print(f"| {n_} | {a:.1f} | {bi} | {b:.1f} | {r:.2f}{'' if r >= 0.95 else ' **below 0.95**'} |")
        print()

# bandwidth share, when membw ran
bw = {}
if os.path.exists(f"{out}/membw.txt"):
    for line in open(f"{out}/membw.txt"):
        m = re.match(r"round (\d+): threads=(\d+)\s+best of \d+: ([\d.]+) GB/s", line)
        if m:
            bw[(int(m.group(1)), int(m.group(2)))] = float(m.group(3))
if bw:
    print(f"## tg: effective GB/s of {judged} over membw of the same round\n")
    print("| threads | test | share per round | median |\n|---|---|---|---:|")
    for (isa, t, test, depth, q), v in sorted(xp.items()):
        if isa != judged or not test.startswith("tg"):
            continue
        sh = [v[r][1] / bw[(r, t)] for r in sorted(v) if v[r][1] and (r, t) in bw]
        if sh:
            print(f"| {t} | {test} {q} | {', '.join(f'{100 * s:.0f}%' for s in sh)} | {100 * med(sh):.0f}% |")
    print()
print("## Summary\n")
print("- targets missed: " + ("; ".join(misses) if misses else "none"))
print("- default more than 5% slower than the fastest forced table: " + ("; ".join(slow_defaults) if slow_defaults else "never"))
