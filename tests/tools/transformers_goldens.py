"""Reference outputs from Hugging Face transformers for models the shared goldens do not cover.

Run where torch + transformers are installed (fp32 math, eager attention, TF32 off), e.g.
    python tests/tools/transformers_goldens.py MODEL_DIR NAME OUT.json
Writes the same fields as tests/data/goldens/random_models.json: per case input_ids, per-position top-5 ids and
logits, last_logsumexp, the first 32 logits of the last position, 24 greedy ids with top1-top2 margins.
"""
import json
import sys

import torch
from transformers import AutoModelForCausalLM

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def cases(vocab):
    # Deterministic id sequences of several lengths; long enough that positions reach the rope-scaled band.
    g = torch.Generator().manual_seed(1234)
    out = {}
    for n in (3, 17, 64):
        out[f"ids{n}"] = torch.randint(3, vocab, (n,), generator=g).tolist()
    return out


def main():
    model_dir, name, out_path = sys.argv[1:4]
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager").to(dev)
    model.eval()
    res = {"model": name, "cases": {}}
    for cname, ids in cases(model.config.vocab_size).items():
        x = torch.tensor([ids], device=dev)
        with torch.no_grad():
            logits = model(x).logits[0].float()
        top = torch.topk(logits, 5, dim=-1)
        case = {"input_ids": ids, "top5_ids": top.indices.tolist(),
                "top5_logits": [[round(v, 5) for v in row] for row in top.values.tolist()],
                "last_logsumexp": torch.logsumexp(logits[-1], -1).item(),
                "last_logits_head": [round(v, 5) for v in logits[-1, :32].tolist()]}
        seq, margins, new = list(ids), [], []
        with torch.no_grad():
            for _ in range(24):
                lg = model(torch.tensor([seq], device=dev)).logits[0, -1].float()
                t2 = torch.topk(lg, 2)
                new.append(int(t2.indices[0])); margins.append(round(float(t2.values[0] - t2.values[1]), 5))
                seq.append(new[-1])
        case["greedy_new_ids"], case["greedy_margins"] = new, margins
        res["cases"][cname] = case
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
