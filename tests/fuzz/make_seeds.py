#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz/corpus (committed; run again only to change them):
   python3 tests/fuzz/make_seeds.py
Seeds are small valid inputs (and a few near misses) built from the project's own fixtures, so that fuzzing
starts from the shapes real files have: tokenizers are the fixture tokenizers pruned to a few hundred tokens."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
OUT = os.path.join(HERE, "corpus")


def put(kind, name, data):
    d = os.path.join(OUT, kind)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def st_image(tensors, metadata=None, pad=0):
    """safetensors bytes: tensors = [(name, dtype, shape, nbytes)] laid out in order."""
    hdr, off = {}, 0
    if metadata is not None:
        hdr["__metadata__"] = metadata
    for name, dt, shape, nb in tensors:
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + nb]}
        off += nb
    h = json.dumps(hdr, separators=(",", ":")).encode() + b" " * pad
    return struct.pack("<Q", len(h)) + h + bytes(range(256)) * (off // 256) + bytes(range(off % 256))


def safetensors():
    put("safetensors", "one_f32", st_image([("w", "F32", [2, 3], 24)]))
    put("safetensors", "bf16_f16_meta", st_image([("model.embed_tokens.weight", "BF16", [4, 2], 16),
                                                 ("model.norm.weight", "F16", [2], 4)], {"format": "pt"}, pad=5))
    put("safetensors", "scalar_and_empty", st_image([("s", "F32", [], 4), ("e", "F16", [0, 7], 0)]))
    put("safetensors", "unsupported_i64", st_image([("i", "I64", [1], 8)]))
    h = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    put("safetensors", "overlap", struct.pack("<Q", len(h)) + h + b"\0" * 4)
    put("safetensors", "huge_shape", st_image([("h", "F32", [9007199254740992, 9007199254740992], 0)]))


def safetensors_index():
    put("safetensors_index", "two_shards", json.dumps({"metadata": {"total_size": 16},
                                                       "weight_map": {"x": "a.safetensors", "y": "b.safetensors"}}))
    put("safetensors_index", "one_shard", json.dumps({"weight_map": {"x": "a.safetensors"}}))
    put("safetensors_index", "wrong_shard", json.dumps({"weight_map": {"x": "b.safetensors"}}))
    put("safetensors_index", "escape", json.dumps({"weight_map": {"x": "../a.safetensors", "y": "sub/b.safetensors"}}))
    put("safetensors_index", "missing", json.dumps({"weight_map": {"x": "c.safetensors"}}))


def config():
    tf = os.path.join(ROOT, "examples", "models", "tinyfortunes")
    cfg = open(os.path.join(tf, "config.json")).read()
    gen = open(os.path.join(tf, "generation_config.json")).read()
    put("config", "tinyfortunes", cfg + "\0" + gen)
    put("config", "tinyfortunes_no_generation", cfg)
    for m in ("llama3-rope", "llama-bias", "mistral"):
        c = json.load(open(os.path.join(ROOT, "tests", "data", "models", m, "config.json")))
        put("config", m, json.dumps(c, indent=1) + "\0" + json.dumps({"eos_token_id": [1, 2], "do_sample": True,
                                                                      "temperature": 0.6, "top_p": 0.9, "top_k": 20}))
    put("config", "qwen2_v4", json.dumps({"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"],
                                          "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
                                          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                                          "max_position_embeddings": 128, "rms_norm_eps": 1e-6, "rope_theta": 1e6,
                                          "rope_scaling": None, "torch_dtype": "float16", "eos_token_id": 3}))


def prune_tokenizer(path, keep):
    """The tokenizer with only ids < keep in its model vocabulary (and the merges among them); added tokens
    renumbered after them."""
    d = json.load(open(path))
    m = d["model"]
    vocab = {t: i for t, i in m["vocab"].items() if i < keep}
    m["vocab"] = vocab
    merges = []
    for mg in m["merges"]:
        a, b = mg if isinstance(mg, list) else mg.split(" ", 1)
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(mg)
    m["merges"] = merges
    renum = {}
    added = [t for t in d["added_tokens"] if t["id"] >= keep][:8]
    d["added_tokens"] = [t for t in d["added_tokens"] if t["id"] < keep] + added
    for k, t in enumerate(added):
        renum[t["id"]] = keep + k
        t["id"] = keep + k

    def fix(o):  # TemplateProcessing ids of renumbered tokens
        if isinstance(o, dict):
            if "ids" in o and isinstance(o["ids"], list):
                o["ids"] = [renum.get(i, i) for i in o["ids"]]
            for v in o.values():
                fix(v)
        elif isinstance(o, list):
            for v in o:
                fix(v)
    fix(d.get("post_processor"))
    return json.dumps(d, ensure_ascii=False, separators=(",", ":"))


def tokenizer():
    toks = os.path.join(ROOT, "tests", "data", "tokenizers")
    text = "Hello, world! It's 2024: caf\u00e9 \u4f60\u597d \U0001F600\n\tend"
    tf = prune_tokenizer(os.path.join(ROOT, "examples", "models", "tinyfortunes", "tokenizer.json"), 400)
    put("tokenizer", "bytelevel_nfc", tf + "\0" + text)
    q = prune_tokenizer(os.path.join(toks, "qwen3", "tokenizer.json"), 300)
    put("tokenizer", "qwen3_small", q + "\0" + "<|im_start|>user\nHi<|im_end|>" + text)
    l3 = prune_tokenizer(os.path.join(toks, "llama3_1", "tokenizer.json"), 300)
    put("tokenizer", "llama3_small", l3 + "\0" + text)
    l2 = prune_tokenizer(os.path.join(toks, "llama2", "tokenizer.json"), 320)
    cfg = open(os.path.join(toks, "llama2", "tokenizer_config.json")).read()
    put("tokenizer", "llama2_small_config", l2 + "\0" + cfg + "\0" + "  <s>lead " + text)
    put("tokenizer", "invalid_utf8", l2.encode() + b"\0ab\xff\xfe")


def hub():
    put("hub", "head_ok", "HTTP/1.1 302 Found\r\nLocation: https://cdn.example/x\r\n"
        "X-Repo-Commit: 0123456789abcdef0123456789abcdef01234567\r\n"
        "X-Linked-Etag: \"sha256abcdef\"\r\nX-Linked-Size: 123456\r\nETag: W/\"1f-abc\"\r\nContent-Length: 31\r\n\r\n")
    put("hub", "redirect_then_ok", "HTTP/1.1 307\r\nLocation: /org/new/resolve/main/config.json\r\n\r\n"
        "HTTP/1.1 200 OK\r\nx-repo-commit: 89abcdef0123456789abcdef0123456789abcdef\r\netag: \"abc.def-1\"\r\n"
        "content-length: 877\r\ncontent-range: bytes 100-876/877\r\n\r\n")
    put("hub", "error_gated", "HTTP/2 403\r\nX-Error-Code: GatedRepo\r\nX-Error-Message: Access restricted\r\n\r\n")
    put("hub", "error_entry", "HTTP/2 404\r\nX-Error-Code: EntryNotFound\r\nX-Repo-Commit: 0123\r\n")
    put("hub", "ref_main", "0123456789abcdef0123456789abcdef01234567\n")
    put("hub", "path", "model-00001-of-00002.safetensors")
    put("hub", "path_escape", "a/../../b")


def detok_stream():
    def ids(tok_skip, seq):
        return bytes([tok_skip]) + b"".join(struct.pack("<H", i) for i in seq)
    # llama2 (bit 0 = 1): the issue-12 case, a skipped special token inside a run of <0xNN> byte tokens
    put("detok_stream", "llama2_bytes_special_skip", ids(3, [44, 0, 191, 296]))
    put("detok_stream", "llama2_bytes_special", ids(1, [44, 0, 191, 296]))
    put("detok_stream", "llama2_words", ids(1, [1, 15043, 29892, 3186, 29991, 2]))
    put("detok_stream", "llama2_emoji_bytes", ids(3, [243, 162, 155, 131, 29871, 232, 192, 163]))
    put("detok_stream", "bytelevel_text", ids(0, [32, 1820, 285, 264, 4093, 300, 5]))
    put("detok_stream", "bytelevel_skip", ids(2, [4093, 32, 4093, 200, 4094, 65535]))


if __name__ == "__main__":
    safetensors()
    safetensors_index()
    config()
    tokenizer()
    hub()
    detok_stream()
