import sys, statistics as st
# lines: round threads model bin tok_s cpu_ms load
ov = {'moe': 568.0, 'dense': 502.0}  # CPU ms of load + warm-up + 1 token (-p 1 -r 1), measured
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
d = {}
for r in rows:
    if len(r) < 7 or not r[4]: continue
    rnd, t, m, b, tps, cpu, load = r[:7]
    d.setdefault((t, b, m), []).append((int(rnd), float(tps), float(cpu), float(load)))
def ms(v): return f"{st.mean(v):.3f} (sd {st.stdev(v):.3f}, {min(v):.3f}-{max(v):.3f})" if len(v) > 1 else f"{v[0]:.3f}"
bins = sorted(set(k[1] for k in d))
for t in sorted(set(k[0] for k in d), reverse=True):
    for b in bins:
        mo, de = d.get((t, b, 'moe'), []), d.get((t, b, 'dense'), [])
        rounds = sorted(set(x[0] for x in mo) & set(x[0] for x in de))
        mo = {x[0]: x for x in mo}; de = {x[0]: x for x in de}
        wall = [mo[r][1] / de[r][1] for r in rounds]
        cpu_rep = lambda x, m: (x[2] - ov[m]) / 3 / 512 * 1000  # CPU us per token
        cm = [cpu_rep(mo[r], 'moe') for r in rounds]; cd = [cpu_rep(de[r], 'dense') for r in rounds]
        cr = [b_ / a_ for a_, b_ in zip(cm, cd)]
        print(f"t={t} {b}: rounds {len(rounds)} | moe tok/s {ms([mo[r][1] for r in rounds])} | dense tok/s {ms([de[r][1] for r in rounds])} | "
              f"ratio (wall, per round) {ms(wall)} | CPU us/token moe {ms(cm)} dense {ms(cd)} | ratio (CPU) {ms(cr)} | load {st.mean([mo[r][3] for r in rounds]):.3f}")
