"""Differential test: our tokenizer (through tests/tokenizer/tok_driver) against Hugging Face `tokenizers`
on a few thousand generated strings per tokenizer (mixed scripts, NFC/NFD, emoji with ZWJ and skin tones,
combining marks, whitespace runs, digits, contractions, special tokens inside text) and on random id
sequences. Ids and decodes (skip_special both ways) must be identical; the streaming decode's concatenated
pieces must equal the full decode. Exact comparison: tokenization has no tolerance."""
import json
import os
import random
import subprocess
import sys
import unicodedata

from tokenizers import Tokenizer

SRC = os.environ["XPI_SOURCE_DIR"]
BUILD = os.environ["XPI_BUILD_DIR"]
DRIVER = next((p for p in (os.path.join(BUILD, "tests", "tok_driver"), os.path.join(BUILD, "tok_driver"))
               if os.path.exists(p)), os.path.join(BUILD, "tests", "tok_driver"))
TOKENIZERS = {
    "qwen3": os.path.join(SRC, "tests/data/tokenizers/qwen3"),
    "llama3_1": os.path.join(SRC, "tests/data/tokenizers/llama3_1"),
    "llama2": os.path.join(SRC, "tests/data/tokenizers/llama2"),
    "tinyfortunes": os.path.join(SRC, "examples/models/tinyfortunes"),
}
N_STRINGS = 3000
N_ID_SEQS = 400

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
    for name, tok_dir in TOKENIZERS.items():
        hf = Tokenizer.from_file(os.path.join(tok_dir, "tokenizer.json"))
        rng = random.Random(f"xpi-differential-{name}")
        special = specials(hf)
        texts = [gen_string(rng, special) for _ in range(N_STRINGS)]
        texts += ["", " ", "a" * 3000, " " * 500 + "\n" * 50, "😀" * 200, "<|im_end|>" * 5]
        vocab = hf.get_vocab_size(with_added_tokens=True)
        id_seqs = []
        for _ in range(N_ID_SEQS):
            seq = [rng.randrange(vocab) for _ in range(rng.randint(1, 12))]
            if name == "llama2":  # byte-fallback tokens <0x00>..<0xFF> are ids 3..258: split emoji and junk bytes
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
    print(f"compared {compared} inputs (strings and id sequences) over {len(TOKENIZERS)} tokenizers")
    for f in failures[:15]:
        print("MISMATCH", f[0], repr(f[1])[:200], f[2], "\n  got ", repr(f[3])[:300], "\n  want", repr(f[4])[:300])
    print(f"{len(failures)} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
