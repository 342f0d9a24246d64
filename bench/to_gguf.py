#!/usr/bin/env python3
"""Hugging Face folder (safetensors, BF16) -> BF16 GGUF for llama.cpp, without torch/transformers, so llama.cpp runs
the very same bf16 weights as xpuinfer. Extends the team's Qwen3-only converter (/work/shared/bench/to_gguf.py) to
LlamaForCausalLM. Mirrors what llama.cpp's convert_hf_to_gguf.py (upstream 1425386fd996) writes with --outtype bf16:
2-D weights as BF16 (raw copy), 1-D tensors and *_norm.weight as F32, the same KV keys and tokenizer data; for llama
also its RoPE row permutation of q_proj/k_proj (LlamaModel.permute: GGML rotates interleaved pairs, HF half-split
rows), the vocab size, the rope dimension count, and add_bos false for 49152-token vocabularies (SmolLM2, Granite);
for Qwen3MoeForCausalLM (Qwen2MoeModel.modify_tensors / set_gguf_parameters) the per-expert matrices stacked into one
3-D tensor per projection (blk.N.ffn_{gate,up,down}_exps, numpy [n_expert, rows, cols]), the router as ffn_gate_inp,
and the expert count, experts used per token and expert feed-forward length.

usage: PYTHONPATH=<llama.cpp>/gguf-py python3 to_gguf.py MODEL_DIR OUT.gguf [PRE]
  PRE: tokenizer.ggml.pre, what llama.cpp's get_vocab_base_pre() detects by hashing the tokenizer's output
       (default: qwen2 for Qwen3, smollm for a llama model with a 49152-token vocabulary; others must be given).
Then `llama-quantize OUT.gguf OUT-Q8_0.gguf Q8_0` (and Q4_0). Nothing of llama.cpp is copied here; gguf-py is its
Python package, used as a library.
"""
import json
import re
import struct
import sys
from pathlib import Path

import numpy as np
import gguf

ARCHS = {"Qwen3ForCausalLM": gguf.MODEL_ARCH.QWEN3, "LlamaForCausalLM": gguf.MODEL_ARCH.LLAMA,
         "Qwen3MoeForCausalLM": gguf.MODEL_ARCH.QWEN3MOE}
EXPERT = re.compile(r"model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight$")


def permute(w, n_head):
    """convert_hf_to_gguf LlamaModel.permute (HF -> GGUF rows of q_proj / k_proj), on a numpy array."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    d, out = Path(sys.argv[1]), sys.argv[2]
    hp = json.loads((d / "config.json").read_text())
    hf_arch = hp["architectures"][0]
    if hf_arch not in ARCHS:
        sys.exit(f"{hf_arch}: only {', '.join(ARCHS)} are handled")
    arch = ARCHS[hf_arch]
    llama = arch == gguf.MODEL_ARCH.LLAMA
    n_layer, n_head = hp["num_hidden_layers"], hp["num_attention_heads"]
    n_head_kv = hp.get("num_key_value_heads", n_head)
    if len(sys.argv) == 4:
        pre = sys.argv[3]
    elif not llama:
        pre = "qwen2"
    elif hp.get("vocab_size") == 49152:
        pre = "smollm"
    else:
        sys.exit("give PRE (tokenizer.ggml.pre) for this tokenizer")
    w = gguf.GGUFWriter(out, gguf.MODEL_ARCH_NAMES[arch])
    tmap = gguf.get_tensor_name_map(arch, n_layer)

    # ---- tensors (safetensors: u64 header length + JSON header + raw data) ----
    st = d / "model.safetensors"
    with open(st, "rb") as f:
        hlen = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(hlen))
    raw = np.memmap(st, dtype=np.uint8, mode="r", offset=8 + hlen)
    n_exp = hp.get("num_local_experts", hp.get("num_experts", 0)) if arch == gguf.MODEL_ARCH.QWEN3MOE else 0
    experts = {}  # (layer, proj) -> {expert: array}; written stacked once all n_exp are seen
    for name, info in hdr.items():
        if name == "__metadata__":
            continue
        m = EXPERT.match(name)
        if m and n_exp:
            if info["dtype"] != "BF16":
                sys.exit(f"{name}: {info['dtype']}, only BF16 checkpoints are handled")
            a, b = info["data_offsets"]
            key = (int(m.group(1)), m.group(3))
            experts.setdefault(key, {})[int(m.group(2))] = raw[a:b].view(np.uint16).reshape(info["shape"])
            if len(experts[key]) == n_exp:
                t = np.stack([experts[key][x] for x in range(n_exp)])
                w.add_tensor(f"blk.{key[0]}.ffn_{key[1]}_exps.weight", t, raw_dtype=gguf.GGMLQuantizationType.BF16)
                del experts[key]
            continue
        if info["dtype"] != "BF16":
            sys.exit(f"{name}: {info['dtype']}, only BF16 checkpoints are handled")
        a, b = info["data_offsets"]
        t = raw[a:b].view(np.uint16).reshape(info["shape"])
        if llama and name.endswith("q_proj.weight"):
            t = permute(t, n_head)
        elif llama and name.endswith("k_proj.weight"):
            t = permute(t, n_head_kv)
        new = tmap.get_name(name, try_suffixes=(".weight", ".bias"))
        if new is None:
            sys.exit(f"cannot map {name}")
        if t.ndim <= 1 or new.endswith("_norm.weight"):
            w.add_tensor(new, (t.astype(np.uint32) << 16).view(np.float32))  # bf16 -> f32 exactly
        else:
            w.add_tensor(new, np.ascontiguousarray(t), raw_dtype=gguf.GGMLQuantizationType.BF16)

    # ---- general metadata (same path as the official converter) ----
    total, shared, expert, n_exp = w.get_total_parameter_count()
    md = gguf.Metadata.load(None, d, None, total)
    md.name = md.name or d.name
    md.size_label = md.size_label or gguf.size_label(total, shared, expert, n_exp)
    w.add_type(gguf.GGUFType.MODEL)
    md.set_gguf_meta_model(w)

    # ---- hparams (TextModel.set_gguf_parameters, plus LlamaModel's) ----
    w.add_block_count(n_layer)
    w.add_context_length(hp["max_position_embeddings"])
    w.add_embedding_length(hp["hidden_size"])
    w.add_feed_forward_length(hp["intermediate_size"])
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_rope_freq_base(hp.get("rope_theta", (hp.get("rope_parameters") or {}).get("rope_theta", 10000.0 if llama else 1000000.0)))
    w.add_layer_norm_rms_eps(hp["rms_norm_eps"])
    if "head_dim" in hp:
        w.add_key_length(hp["head_dim"])
        w.add_value_length(hp["head_dim"])
    if llama:
        if hp.get("rope_scaling"):
            sys.exit("rope_scaling is not handled here")
        w.add_vocab_size(hp["vocab_size"])
        w.add_rope_dimension_count(hp.get("head_dim") or hp["hidden_size"] // n_head)
    if n_exp:
        if experts:
            sys.exit(f"incomplete experts: {sorted(experts)[:4]}")
        w.add_expert_count(n_exp)
        w.add_expert_used_count(hp["num_experts_per_tok"])
        w.add_expert_feed_forward_length(hp["moe_intermediate_size"])
        if not hp.get("norm_topk_prob", False):
            sys.exit("llama.cpp's qwen3moe renormalizes the top-k weights: norm_topk_prob false is not handled here")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)

    # ---- tokenizer (TextModel._set_vocab_gpt2) ----
    tok = json.loads((d / "tokenizer.json").read_text(encoding="utf-8"))
    rev = {i: s for s, i in tok["model"]["vocab"].items()}
    added = {a["id"]: a for a in tok.get("added_tokens", [])}
    for i, a in added.items():
        rev[i] = a["content"]
    n_vocab = hp.get("vocab_size", len(rev))
    tokens, types = [], []
    for i in range(n_vocab):
        if i not in rev:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
            continue
        s = rev[i]
        if i in added:
            special = added[i]["special"] or (s.startswith("<|") and s.endswith("|>"))
            types.append(gguf.TokenType.CONTROL if special else gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
        tokens.append(s)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    # merges, bos/eos/pad ids, add_bos, chat template
    sv = gguf.SpecialVocab(d, load_merges=True, n_vocab=n_vocab)
    sv.add_to_gguf(w)
    if llama and n_vocab == 49152 and "bos" not in sv.add_special_token:
        w.add_add_bos_token(False)  # LlamaModel.set_vocab: "granite small models" (SmolLM2 shares the vocabulary)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()
    print(f"wrote {out}: {len(hdr) - 1} tensors, {total} params, pre={pre}")


if __name__ == "__main__":
    main()
