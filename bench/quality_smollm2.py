#!/usr/bin/env python3
"""Quantization quality of xpuinfer and llama.cpp on the same weights and the same tokens: perplexity and
teacher-forced top-1 agreement, computed from per-token data of both engines.

usage: quality_smollm2.py OURS_DIR LLAMA_DIR
  OURS_DIR:  none.json, q8.json, q4.json (bench/perplexity.c: MODEL TEXT QUANT 512 4 OUT)
  LLAMA_DIR: BF16.kld, Q8_0.kld, Q4_0.kld, ... (llama-perplexity -c 512 -b 512 --chunks 4 --kl-divergence-base
             X.kld: its own log-probabilities of every scored position, as uint16 over [max - 16, max])

Both engines tokenize the text with the same tokenizer (checked: the ids must be equal) and evaluate 4 chunks of
512 tokens, each from an empty cache. llama-perplexity scores positions 256..510 of each chunk (the next token
given at least 256 of context): 1020 predictions. Our JSON has every position, so our rows are given on that
protocol ("second halves") and on all 2044 predictions. A llama.cpp log-probability is stored with a step of at
most 16/65535 = 2.4e-4 and clamped at 16 below the position's best, so an argmax can only flip on a near-tie below
that, but a rare next token (NLL more than 16 above the best's) reads low: llama.cpp's perplexity is therefore taken
from its own log (X.log beside X.kld, "Final estimate"), the NLL comparison from the .kld files.
"""
import re
import json
import math
import os
import sys

import numpy as np


def read_kld(path):
    b = open(path, "rb").read()
    if b[:8] != b"_logits_":
        sys.exit(f"{path}: not a llama-perplexity logits file")
    n_ctx, n_vocab, n_chunk = (int(x) for x in np.frombuffer(b[8:20], dtype=np.int32))
    off = 20 + 4 * n_chunk * n_ctx
    toks = np.frombuffer(b[20:off], dtype=np.int32).reshape(n_chunk, n_ctx)
    nv = 2 * ((n_vocab + 1) // 2) + 4
    first = n_ctx // 2
    nt = n_ctx - 1 - first
    lp = np.frombuffer(b[off:], dtype=np.uint16).reshape(n_chunk, nt, nv)
    log = path[:-4] + ".log"
    final = re.findall(r"Final estimate: PPL = ([0-9.]+)", open(log).read()) if os.path.exists(log) else []
    nll, am = [], []
    for c in range(n_chunk):
        head = np.ascontiguousarray(lp[c, :, :4]).view(np.float32)  # scale, min log-prob per position
        q = lp[c, :, 4:4 + n_vocab].astype(np.float64) * head[:, :1] + head[:, 1:2]
        nxt = toks[c, first + 1:]
        nll.append(-q[np.arange(nt), nxt])
        am.append(q.argmax(axis=1))
    return {"ids": toks, "first": first, "nll": np.concatenate(nll), "argmax": np.concatenate(am),
            "ppl": float(final[-1]) if final else None}


def read_ours(path, first):
    j = json.load(open(path))
    ids = np.array([c["ids"] for c in j["chunks"]], dtype=np.int32)
    nll = np.array([c["nll"] for c in j["chunks"]])
    am = np.array([c["argmax"] for c in j["chunks"]])
    return {"ids": ids, "nll_all": nll.ravel(), "argmax_all": am.ravel(), "nll": nll[:, first:].ravel(),
            "argmax": am[:, first:].ravel()}


def ppl(nll):
    return math.exp(float(np.mean(nll)))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    od, ld = sys.argv[1:3]
    lc = {n[:-4]: read_kld(os.path.join(ld, n)) for n in sorted(os.listdir(ld)) if n.endswith(".kld")}
    first = lc["BF16"]["first"]
    ours = {q: read_ours(os.path.join(od, q + ".json"), first) for q in ("none", "q8", "q4")
            if os.path.exists(os.path.join(od, q + ".json"))}
    ids = lc["BF16"]["ids"]
    for name, d in list(lc.items()) + list(ours.items()):
        if not np.array_equal(d["ids"], ids):
            sys.exit(f"{name}: token ids differ from llama.cpp BF16's")
    ob, lb = ours["none"], lc["BF16"]
    n = len(ob["nll"])
    print(f"{ids.shape[0]} chunks of {ids.shape[1]} tokens (same ids on both sides); second halves: {n} predictions;"
          f" all positions: {len(ob['nll_all'])}\n")
    print("| engine | weights | PPL, second halves | top-1 = own bf16 | top-1 = exact bf16 | PPL, all positions |"
          " top-1 = exact bf16, all |")
    print("|---|---|---|---|---|---|---|")
    for q, d in ours.items():
        print(f"| xpuinfer | {'bf16' if q == 'none' else q} | {ppl(d['nll']):.4f} |"
              f" {100 * np.mean(d['argmax'] == ob['argmax']):.2f}% | {100 * np.mean(d['argmax'] == ob['argmax']):.2f}% |"
              f" {ppl(d['nll_all']):.4f} | {100 * np.mean(d['argmax_all'] == ob['argmax_all']):.2f}% |")
    for q, d in lc.items():
        p = f"{d['ppl']:.4f}" if d["ppl"] else f"{ppl(d['nll']):.4f} (from the .kld)"
        print(f"| llama.cpp | {q} | {p} | {100 * np.mean(d['argmax'] == lb['argmax']):.2f}% |"
              f" {100 * np.mean(d['argmax'] == ob['argmax']):.2f}% | | |")
    dn = lb["nll"] - ob["nll"]
    ok = ob["nll"] < 15  # where the .kld's clamp cannot bite (llama.cpp's best logit is within 1 of ours)
    print(f"\nllama.cpp BF16 against xpuinfer bf16 (the exact f32-on-bf16 model, = transformers to 1e-4), at the"
          f" {ok.sum()} of {len(ok)} positions whose NLL is below 15: mean NLL difference {np.mean(dn[ok]):+.4f},"
          f" mean |difference| {np.mean(np.abs(dn[ok])):.4f}, max {np.max(np.abs(dn[ok])):.3f}")


if __name__ == "__main__":
    main()
