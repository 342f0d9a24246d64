"""Differential test: our tokenizer (through tests/tokenizer/tok_driver) against Hugging Face `tokenizers`
on a few thousand generated strings per tokenizer (mixed scripts, NFC/NFD, emoji with ZWJ and skin tones,
combining marks, whitespace runs, digits, contractions, special tokens inside text) and on random id
sequences. Ids and decodes (skip_special both ways) must be identical; the streaming decode's concatenated
pieces must equal the full decode. Exact comparison: tokenization has no tolerance."""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unicodedata

from tokenizers import Tokenizer

SRC = os.environ["XPI_SOURCE_DIR"]
BUILD = os.environ["XPI_BUILD_DIR"]
DRIVER = next((p for p in (os.path.join(BUILD, "tests", "tok_driver"), os.path.join(BUILD, "tok_driver"))
               if os.path.exists(p)), os.path.join(BUILD, "tests", "tok_driver"))
# Under the sanitizers (about 10x slower) the same generators run on a tenth of the inputs.
SCALE = 10 if subprocess.run([DRIVER, "--sanitized"], capture_output=True).stdout.strip() == b"1" else 1
TOKENIZERS = {
    "qwen3": os.path.join(SRC, "tests/data/tokenizers/qwen3"),
    "llama3_1": os.path.join(SRC, "tests/data/tokenizers/llama3_1"),
    "llama2": os.path.join(SRC, "tests/data/tokenizers/llama2"),
    "tinyfortunes": os.path.join(SRC, "examples/models/tinyfortunes"),
}
N_STRINGS = 1500 // SCALE
N_ID_SEQS = 400 // SCALE
N_VARIANT_STRINGS = 500 // SCALE  # per crafted variant (flags and components the shipped files do not use)


def make_variants(tmp):
    """Crafted tokenizer.json variants covering features the four real files do not exercise: added-token
    lstrip/rstrip/single_word/normalized, legacy "a b" merges for Qwen, Metaspace pre-tokenizer and decoder,
    ByteLevel with add_prefix_space + GPT-2 regex, Split behaviors (MergedWithPrevious, Contiguous, Removed,
    MergedWithNext, invert), NFKC + regex Replace, <unk> with and without fuse_unk, and a post-processor that
    adds tokens on both sides."""
    out = {}

    def write(name, j):
        d = os.path.join(tmp, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(j, f, ensure_ascii=False)
        out[name] = d

    def load(name):
        with open(os.path.join(TOKENIZERS[name], "tokenizer.json"), encoding="utf-8") as f:
            return json.load(f)

    q = load("qwen3")
    q["model"]["merges"] = [" ".join(m) for m in q["model"]["merges"]]
    for t in q["added_tokens"]:
        if t["content"] == "<think>":
            t.update(lstrip=True, rstrip=True)
        if t["content"] == "</think>":
            t.update(single_word=True)
        if t["content"] == "<tool_call>":
            t.update(normalized=True)
    q["added_tokens"] += [
        # ids as tokenizers assigns them: a vocabulary token keeps its id, new ones follow the last id
        {"id": 14990, "content": "hello", "single_word": True, "lstrip": False, "rstrip": False, "normalized": True, "special": False},
        {"id": 151669, "content": "x\u00b2y", "single_word": False, "lstrip": False, "rstrip": True, "normalized": True, "special": False},
        {"id": 151670, "content": "[SEP]", "single_word": False, "lstrip": True, "rstrip": False, "normalized": False, "special": True},
    ]
    write("qwen3_flags", q)

    l2 = load("llama2")
    l2["normalizer"] = None
    l2["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False}
    write("llama2_metaspace_first", l2)
    l2 = load("llama2")
    l2["normalizer"] = None
    l2["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
    l2["decoder"] = {"type": "Sequence", "decoders": [{"type": "ByteFallback"},
                     {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}]}
    write("llama2_metaspace_always", l2)

    for fuse in (True, False):  # unknown characters without byte fallback: <unk>, fused or one per character
        l2 = load("llama2")
        l2["model"]["byte_fallback"] = False
        l2["model"]["fuse_unk"] = fuse
        write(f"llama2_unk_fuse{int(fuse)}", l2)

    tf = load("tinyfortunes")
    tf["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "NFKC"}, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        {"type": "Strip", "strip_left": False, "strip_right": True}]}
    tf["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": ","}, "behavior": "MergedWithPrevious", "invert": False},
        {"type": "Split", "pattern": {"Regex": "[0-9]"}, "behavior": "Contiguous", "invert": False},
        {"type": "Split", "pattern": {"String": "|"}, "behavior": "Removed", "invert": False},
        {"type": "Split", "pattern": {"Regex": "\\p{P}"}, "behavior": "MergedWithNext", "invert": False},
        {"type": "Split", "pattern": {"Regex": "\\p{L}+"}, "behavior": "Isolated", "invert": True},
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}]}
    tf["post_processor"] = {"type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "<|im_end|>", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<|im_start|>": {"id": "<|im_start|>", "ids": [4094], "tokens": ["<|im_start|>"]},
                           "<|im_end|>": {"id": "<|im_end|>", "ids": [4095], "tokens": ["<|im_end|>"]}}}
    write("tinyfortunes_gpt2", tf)
    return out

WORDS = ["the", "Intel", "GPU", "xpu", "hello", "World", "naïve", "café", "résumé", "Ångström", "façade",
         "Straße", "ĳssel", "Œuvre", "ﬁne", "日本語", "中文字符", "バックエンド", "한국어", "텍스트", "العربية",
         "مرحبا", "हिन्दी", "नमस्ते", "Привет", "Ελληνικά", "שלום", "ไทย", "tiếng Việt", "x**2", "f(x)", "a_b",
         "https://example.com/a?b=1", "C++", "don", "I", "we", "YOU", "it", "ſ", "K", "İstanbul", "ǅ"]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🇯🇵", "🏳️‍🌈", "❤️", "🤦🏼‍♂️", "1️⃣", "🧑🏿‍💻", "✨"]
COMBINING = ["e\u0301", "a\u0308\u0323", "n\u0303", "o\u0302\u0301", "\u0301", "i\u0307", "\u1100\u1161\u11a8"]
SPACES = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", " \n ", "\u00a0", "\u3000", "\u2009", " \t\n"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'LL", "'D", "'M", "’s"]
PUNCT = [".", ",", "!", "?", "...", "—", "-", "(", ")", "[", "]", "{", "}", ":", ";", "\"", "'", "#", "$", "%",
         "&", "*", "@", "/", "\\", "|", "<", ">", "=", "+", "~", "`", "^", "«", "»", "¿", "。", "、", "！"]


def specials(tok):
    return [t.content for t in tok.get_added_tokens_decoder().values()][:40] + ["<s>", "</s>", "<|im_end|>",
                                                                                 "<|begin_of_text|>", "<think>"]


def gen_string(rng, special):
    parts = []
    for _ in range(rng.randint(1, 12)):
        r = rng.random()
        if r < 0.30:
            w = rng.choice(WORDS)
            if rng.random() < 0.3:
                w = unicodedata.normalize(rng.choice(["NFC", "NFD"]), w)
            if rng.random() < 0.2:
                w = w.upper() if rng.random() < 0.5 else w.capitalize()
            parts.append(w)
        elif r < 0.42:
            parts.append(rng.choice(SPACES))
        elif r < 0.50:
            parts.append("".join(rng.choice("0123456789") for _ in range(rng.randint(1, 9))))
        elif r < 0.58:
            parts.append(rng.choice(EMOJI))
        elif r < 0.64:
            parts.append(rng.choice(COMBINING))
        elif r < 0.72:
            parts.append(rng.choice(CONTRACTIONS))
        elif r < 0.82:
            parts.append(rng.choice(PUNCT))
        elif r < 0.88:
            parts.append(rng.choice(special))
        else:
            # a random code point from a few interesting blocks
            lo, hi = rng.choice([(0x20, 0x7e), (0xa0, 0x24f), (0x300, 0x36f), (0x400, 0x4ff), (0x600, 0x6ff),
                                 (0x900, 0x97f), (0x3040, 0x30ff), (0x4e00, 0x9fff), (0xac00, 0xd7a3),
                                 (0x1f300, 0x1faff), (0x2000, 0x206f)])
            parts.append("".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 4))))
        if rng.random() < 0.5:
            parts.append(" ")
    s = "".join(parts)
    if rng.random() < 0.15:
        s = " " * rng.randint(1, 3) + s
    if rng.random() < 0.15:
        s = s + " " * rng.randint(1, 3)
    return s


def run_driver(tok_dir, requests):
    inp = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests)
    p = subprocess.run([DRIVER, tok_dir], input=inp.encode(), capture_output=True, timeout=240)
    if p.returncode != 0:
        sys.exit(f"tok_driver failed ({p.returncode}): {p.stderr.decode(errors='replace')}")
    lines = p.stdout.decode().split("\n")[:-1]
    assert len(lines) == len(requests), (len(lines), len(requests))
    out = [json.loads(line) for line in lines]
    for o in out:  # texts come back hex-encoded (they may hold NUL bytes)
        for k in ("dec", "dec_skip", "dec_sp", "dec_sp_skip", "stream", "stream_skip"):
            if k in o:
                o[k] = bytes.fromhex(o[k]).decode("utf-8")
    return out


def main():
    failures = []
    compared = 0
    tmp = tempfile.mkdtemp(prefix="xpi_tok_diff_")
    all_toks = dict(TOKENIZERS)
    all_toks.update(make_variants(tmp))
    for name, tok_dir in all_toks.items():
        hf = Tokenizer.from_file(os.path.join(tok_dir, "tokenizer.json"))
        rng = random.Random(f"xpi-differential-{name}")
        special = specials(hf) + [" <think> ", "hello", "xhello", "hello_", " [SEP]", "x\u00b2y ", " x\u00b2yz"]
        n_strings = N_STRINGS if name in TOKENIZERS else N_VARIANT_STRINGS
        texts = [gen_string(rng, special) for _ in range(n_strings)]
        texts += ["", " ", "a" * 3000, " " * 500 + "\n" * 50, "😀" * 200, "<|im_end|>" * 5]
        vocab = hf.get_vocab_size(with_added_tokens=True)
        id_seqs = []
        for _ in range(N_ID_SEQS if name in TOKENIZERS else N_ID_SEQS // 4):
            seq = [rng.randrange(vocab) for _ in range(rng.randint(1, 12))]
            if name.startswith("llama2"):  # byte-fallback tokens <0x00>..<0xFF> are ids 3..258: split emoji and junk bytes
                seq += [3 + b for b in "😀é".encode()] + [3 + rng.randrange(256) for _ in range(rng.randint(0, 4))]
            rng.shuffle(seq)
            id_seqs.append(seq)
        out = run_driver(tok_dir, [{"text": t} for t in texts] + [{"ids": s} for s in id_seqs])
        for text, got in zip(texts, out):
            compared += 1
            if "error" in got:
                failures.append((name, text, "error", got["error"], None))
                continue
            ids = hf.encode(text, add_special_tokens=False).ids
            ids_sp = hf.encode(text, add_special_tokens=True).ids
            want = {"ids": ids, "ids_sp": ids_sp,
                    "dec": hf.decode(ids, skip_special_tokens=False), "dec_skip": hf.decode(ids, skip_special_tokens=True),
                    "dec_sp": hf.decode(ids_sp, skip_special_tokens=False),
                    "dec_sp_skip": hf.decode(ids_sp, skip_special_tokens=True)}
            want["stream"], want["stream_skip"] = want["dec_sp"], want["dec_sp_skip"]
            for k, v in want.items():
                if got.get(k) != v:
                    failures.append((name, text, k, got.get(k), v))
        for seq, got in zip(id_seqs, out[len(texts):]):
            compared += 1
            if "error" in got:
                failures.append((name, seq, "error", got["error"], None))
                continue
            want = {"dec": hf.decode(seq, skip_special_tokens=False), "dec_skip": hf.decode(seq, skip_special_tokens=True)}
            want["stream"], want["stream_skip"] = want["dec"], want["dec_skip"]
            for k, v in want.items():
                if got.get(k) != v:
                    failures.append((name, seq, k, got.get(k), v))
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"compared {compared} inputs (strings and id sequences) over {len(all_toks)} tokenizers")
    summary = {}
    for f in failures:
        summary[(f[0], f[2])] = summary.get((f[0], f[2]), 0) + 1
    for k, v in sorted(summary.items()):
        print("mismatch count", k, v)
    for f in failures[:15]:
        print("MISMATCH", f[0], repr(f[1])[:200], f[2], "\n  got ", repr(f[3])[:300], "\n  want", repr(f[4])[:300])
    print(f"{len(failures)} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
