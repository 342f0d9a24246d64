#!/usr/bin/env python3
"""Goldens for Phi-3 longrope past original_max_position_embeddings (test reference only; torch + transformers 5).

usage: longrope_goldens.py MODEL_DIR OUT_JSON

transformers switches a longrope model from the short to the long factors per forward call, by the largest
position in it: a prompt longer than original_max_position_embeddings (64 here) is computed with the long factors
at every position; a shorter prompt keeps the short ones, and generation with the KV cache switches to the long
factors for each new token at a position >= 64 (the cached keys stay as they were computed). Both cases are
recorded as generation with the cache runs them (the model forward with past_key_values, one token at a time),
in float32 with eager attention: the prompt's last-position top-5 and logsumexp, and per generated token its id,
the top-2 margin and the top-5 logits."""
import json, sys
import torch
from transformers import AutoModelForCausalLM

MODEL, OUT = sys.argv[1], sys.argv[2]
m = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32, attn_implementation="eager").eval()
g = torch.Generator().manual_seed(77)


def case(ids, n_new):
    with torch.no_grad():
        out = m(torch.tensor([ids]), use_cache=True)
        past, lg = out.past_key_values, out.logits[0, -1].double()
        first = {"top5_ids": torch.topk(lg, 5).indices.tolist(),
                 "top5_logits": [round(v, 6) for v in torch.topk(lg, 5).values.tolist()],
                 "logsumexp": float(torch.logsumexp(lg, 0))}
        new, margins, top5 = [], [], []
        for _ in range(n_new):
            t2 = torch.topk(lg, 5)
            new.append(int(t2.indices[0])); margins.append(float(t2.values[0] - t2.values[1]))
            top5.append([round(v, 6) for v in t2.values.tolist()])
            out = m(torch.tensor([[new[-1]]]), past_key_values=past, use_cache=True)
            past, lg = out.past_key_values, out.logits[0, -1].double()
    return {"input_ids": ids, "prompt_last": first, "greedy_new_ids": new, "greedy_margins": margins,
            "greedy_top5_logits": top5}


V = m.config.vocab_size
ids = torch.randint(3, V - 8, (96,), generator=g).tolist()
res = {"transformers": __import__("transformers").__version__, "torch": torch.__version__,
       "original_max_position_embeddings": 64,
       "cases": {"long_prompt_80": case(ids[:80], 24),       # every position long
                 "cross_50": case(ids[:50], 30),             # short for 0..63, long from position 64
                 "short_20": case(ids[:20], 16)}}            # never past 64: short only
json.dump(res, open(OUT, "w"), indent=1)
print("wrote", OUT)
