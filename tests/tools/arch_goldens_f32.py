#!/usr/bin/env python3
"""Goldens of tests/data/arch_models in float32 throughout (test reference only; needs torch + transformers 5).

usage: arch_goldens_f32.py MODELS_DIR OLD_GOLDENS OUT_JSON [NEW_MODELS_OUT]

The shipped ../shared goldens were computed after model.to(bfloat16).float(), which also rounded the RoPE
inv_freq buffers to bf16. Here every model is loaded fresh from its folder in float32 (inv_freq computed in
f32, as we do), with attn_implementation="eager" (sdpa would drop Gemma 2's attention softcap). The prompts'
input_ids are taken from OLD_GOLDENS, plus a 44-token prompt (longer than every sliding window). For each case:
top-5 ids/logits at EVERY position, the last position's logsumexp, 16 greedy ids with their top-2 margins.
With NEW_MODELS_OUT it first writes tiny-phi3-longrope there (Phi-3 with longrope short/long factors,
original_max_position_embeddings 64) and includes it."""
import json, os, sys
import torch
import transformers
from transformers import AutoModelForCausalLM

MODELS, OLD, OUTJ = sys.argv[1], sys.argv[2], sys.argv[3]
NEW = sys.argv[4] if len(sys.argv) > 4 else None


def make_longrope(out):
    base = dict(vocab_size=4096, hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=256, original_max_position_embeddings=64,
                rms_norm_eps=1e-6, initializer_range=0.25, tie_word_embeddings=False, bos_token_id=None,
                eos_token_id=4093, pad_token_id=None,
                rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 64,
                              "short_factor": [1.0, 1.1, 1.3, 1.6, 2.0, 2.5, 3.1, 3.8],
                              "long_factor": [1.0, 1.5, 2.5, 4.0, 6.0, 9.0, 13.0, 18.0]})
    cfg = transformers.Phi3Config(**base)
    torch.manual_seed(4321)
    m = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    with torch.no_grad():
        for n, p in m.named_parameters():
            if "norm" in n:
                p.copy_(torch.empty_like(p).uniform_(0.5, 1.5))
    m.to(torch.bfloat16).save_pretrained(os.path.join(out, "tiny-phi3-longrope"))


def case(m, ids):
    with torch.no_grad():
        lg = m(torch.tensor([ids])).logits[0].double()
        t5 = torch.topk(lg, 5, dim=-1)
        cur, new, margins = list(ids), [], []
        for _ in range(16):
            l = m(torch.tensor([cur])).logits[0, -1].double()
            t2 = torch.topk(l, 2)
            new.append(int(t2.indices[0])); margins.append(float(t2.values[0] - t2.values[1])); cur.append(new[-1])
    return {"input_ids": ids, "top5_ids": t5.indices.tolist(),
            "top5_logits": [[round(v, 6) for v in r] for r in t5.values.tolist()],
            "last_logsumexp": float(torch.logsumexp(lg[-1], 0)), "greedy_new_ids": new, "greedy_margins": margins}


def main():
    old = json.load(open(OLD))["models"]
    prompts = [c["input_ids"] for c in next(iter(old.values()))["cases"].values()]
    prompts.append((prompts[1] + prompts[0] + prompts[1])[:44])
    names = sorted(old)
    if NEW:
        try:
            make_longrope(NEW)
            names.append("tiny-phi3-longrope")
        except Exception as e:
            print("longrope: cannot build:", type(e).__name__, e, flush=True)
    out = {"transformers": transformers.__version__, "torch": torch.__version__, "dtype": "float32",
           "attn_implementation": "eager", "models": {}}
    for name in names:
        d = os.path.join(NEW if name == "tiny-phi3-longrope" else MODELS, name)
        m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager").eval()
        cases = {f"p{i}": case(m, p) for i, p in enumerate(prompts)}
        out["models"][name] = {"family": m.config.model_type, "cases": cases}
        print(name, "ok, min margin", min(min(c["greedy_margins"]) for c in cases.values()), flush=True)
    json.dump(out, open(OUTJ, "w"), indent=0)


if __name__ == "__main__":
    main()
