# transformers reference for SmolLM2-135M-Instruct (rebuilt by realmodel.py): fp32 math on the bf16 weights, eager.
import json, sys, math, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
d = sys.argv[1]; out = sys.argv[2]; text = open(sys.argv[3], encoding="utf-8").read()
torch.backends.cuda.matmul.allow_tf32 = False; torch.backends.cudnn.allow_tf32 = False
tok = AutoTokenizer.from_pretrained(d)
m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16, attn_implementation="eager").float().eval()
dev = "cuda" if torch.cuda.is_available() else "cpu"; m.to(dev)
res = {"model": "SmolLM2-135M-Instruct (realmodel.py, sha256 7ef915c9...)", "transformers": __import__("transformers").__version__,
       "torch": torch.__version__, "math": "fp32 on bf16 weights, eager, TF32 off", "prompts": [], "ppl": {}}
def greedy(ids, n=48):
    ids = list(ids); new = []; margins = []
    with torch.no_grad():
        for _ in range(n):
            lg = m(torch.tensor([ids], device=dev)).logits[0, -1].double()
            t2 = torch.topk(lg, 2)
            new.append(int(t2.indices[0])); margins.append(float(t2.values[0] - t2.values[1])); ids.append(new[-1])
            if new[-1] in (tok.eos_token_id,): break
    return new, margins
raw = ["The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village,", "Water boils at"]
chats = [[{"role": "user", "content": "What is the capital of France?"}],
         [{"role": "system", "content": "You are a concise assistant."}, {"role": "user", "content": "Write a haiku about the sea."}],
         [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello! How can I help you today?"}, {"role": "user", "content": "Name three primary colors."}]]
for p in raw:
    ids = tok(p).input_ids
    with torch.no_grad(): lg = m(torch.tensor([ids], device=dev)).logits[0].double()
    top = torch.topk(lg[-1], 5); new, mg = greedy(ids)
    res["prompts"].append({"kind": "raw", "prompt": p, "input_ids": ids, "top5_ids": top.indices.tolist(), "top5_logits": top.values.tolist(),
        "last_logsumexp": float(torch.logsumexp(lg[-1], 0)), "greedy_new_ids": new, "greedy_margins": mg, "greedy_text": tok.decode(new)})
for msgs in chats:
    s = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    ids = tok(s, add_special_tokens=False).input_ids
    with torch.no_grad(): lg = m(torch.tensor([ids], device=dev)).logits[0].double()
    top = torch.topk(lg[-1], 5); new, mg = greedy(ids)
    res["prompts"].append({"kind": "chat", "messages": msgs, "rendered": s, "input_ids": ids, "top5_ids": top.indices.tolist(), "top5_logits": top.values.tolist(),
        "last_logsumexp": float(torch.logsumexp(lg[-1], 0)), "greedy_new_ids": new, "greedy_margins": mg, "greedy_text": tok.decode(new, skip_special_tokens=False)})
ids = tok(text).input_ids[:2048]
C = 512; chunks = []
for s0 in range(0, len(ids) - 1, C):
    c = ids[s0:s0 + C]
    if len(c) < 2: break
    with torch.no_grad(): lg = m(torch.tensor([c], device=dev)).logits[0].double()
    lp = torch.log_softmax(lg, -1)
    nll = [-float(lp[i, c[i + 1]]) for i in range(len(c) - 1)]
    chunks.append({"ids": c, "nll": nll, "argmax": lg.argmax(-1).tolist()[:-1],
                   "top5_ids_first8": torch.topk(lg[:8], 5).indices.tolist(), "top5_logits_first8": torch.topk(lg[:8], 5).values.tolist()})
alln = [x for c in chunks for x in c["nll"]]
res["ppl"] = {"text": "see ppl_text.txt", "chunk": C, "n_scored": len(alln), "ppl": math.exp(sum(alln) / len(alln)), "chunks": chunks}
json.dump(res, open(out, "w"))
print("ppl", res["ppl"]["ppl"], "scored", len(alln))
for p in res["prompts"]: print(repr(p.get("prompt") or p["messages"][-1]["content"]), "->", repr(p["greedy_text"][:80]), "min margin", min(p["greedy_margins"][:16]))
