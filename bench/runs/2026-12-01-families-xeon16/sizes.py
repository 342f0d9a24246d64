"""Bytes and matmul parameters per model from its safetensors header and config.json (for the bandwidth share and
the FLOP rate of bench/runs/2026-12-01-families-xeon16). usage: sizes.py DIR ARCH... -> one JSON line per model."""
import json, os, struct, sys

ESZ = {"BF16": 2, "F16": 2, "F32": 4}
d = sys.argv[1]
for a in sys.argv[2:]:
    with open(os.path.join(d, a, "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
    cfg = json.load(open(os.path.join(d, a, "config.json")))
    tot = emb = head = mm_layers = other = 0
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        nb = ESZ[v["dtype"]]
        cnt = 1
        for s in v["shape"]:
            cnt *= s
        tot += cnt * nb
        if "embed_tokens" in k:
            emb = cnt
        elif k == "lm_head.weight":
            head = cnt
        elif len(v["shape"]) == 2:
            mm_layers += cnt
        else:
            other += cnt
    print(json.dumps({"model": a, "bytes": tot, "embed_params": emb, "lm_head_params": head, "layer_matmul_params": mm_layers,
                      "other_params": other, "tie": cfg.get("tie_word_embeddings"), "layers": cfg["num_hidden_layers"],
                      "heads": cfg["num_attention_heads"], "kv_heads": cfg["num_key_value_heads"],
                      "head_dim": cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"]),
                      "hidden": cfg["hidden_size"], "sliding_window": cfg.get("sliding_window"),
                      "layer_types": cfg.get("layer_types")}))
