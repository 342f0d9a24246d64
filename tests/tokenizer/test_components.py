"""Differential test of every tokenizer.json component against Hugging Face `tokenizers` (the reference):
tokenizers built with the library itself in the shapes of the published families (BERT, RoBERTa, GPT-2, T5,
ALBERT, XLNet, SmolLM2, Llama 2 style) and in combinations of the other components, with models trained here on
a deterministic corpus (BPE with affixes, Unigram, WordPiece, WordLevel) and sentencepiece-trained Unigram models
whose precompiled charsmaps (nmt_nfkc, nfkc_cf) are the real ones T5/ALBERT/XLNet ship.

Per tokenizer: generated strings (mixed scripts, whitespace runs, digits, emoji, combining marks, special tokens
inside text, random code points) encoded with and without special tokens and decoded with and without
skip_special_tokens, and random id sequences (byte-token runs with special tokens inside) decoded; the streaming
decode must equal the full decode. Per component: the normalizer and the pre-tokenizer alone on the same strings
and on every code point of planes 0-3 and 14 (tokenizers' normalize_str / pre_tokenize_str). Exact comparison:
tokenization has no tolerance."""
import io
import json
import os
import random
import shutil
import sys
import tempfile
import unicodedata

import sentencepiece as spm
from tokenizers import AddedToken, Regex, Tokenizer, decoders as D, models as M, normalizers as N
from tokenizers import pre_tokenizers as P, processors as PP, trainers as T

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_differential as td  # noqa: E402  (the string generators, the driver and the sanitizer scale)

N_TEXTS = 600 // td.SCALE
N_IDS = 150 // td.SCALE
ALL_CP_STEP = 1 if td.SCALE == 1 else 7  # every code point (every 7th under the sanitizers)
SRC = os.environ["XPI_SOURCE_DIR"]


# ---------------------------------------------------------------- corpus and trained models
def corpus():
    rng = random.Random("xpi-components-corpus")
    lines = [td.gen_string(rng, ["x"]) for _ in range(3000)]
    lines += [" ".join(rng.choice(td.WORDS) for _ in range(12)) for _ in range(2000)]
    return lines


def spm_model(lines, rule, model_type="unigram", vocab=1000, byte_fallback=False):
    """Trains a sentencepiece model; returns (pieces [(piece, score, type)], unk_id, precompiled charsmap)."""
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=buf, vocab_size=vocab,
                                   model_type=model_type, normalization_rule_name=rule, byte_fallback=byte_fallback,
                                   character_coverage=0.98, hard_vocab_limit=False, minloglevel=2,
                                   num_threads=1, seed_sentencepiece_size=20000)
    return parse_spm(buf.getvalue())


def _varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def _fields(b):
    """Top-level protobuf fields of b: [(number, wire type, value)]."""
    i, out = 0, []
    while i < len(b):
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        out.append((num, wt, v))
    return out


def parse_spm(model):
    """ModelProto: pieces = 1 {piece = 1, score = 2 (float), type = 3}, trainer_spec = 2 {unk_id = 40},
    normalizer_spec = 3 {precompiled_charsmap = 2}."""
    import struct
    pieces, unk_id, charsmap = [], 0, b""
    for num, _, v in _fields(model):
        if num == 1:
            p, sc, ty = "", 0.0, 1
            for n2, _, v2 in _fields(v):
                if n2 == 1:
                    p = v2.decode()
                elif n2 == 2:
                    sc = struct.unpack("<f", v2)[0]
                elif n2 == 3:
                    ty = v2
            pieces.append((p, sc, ty))
        elif num == 2:
            for n2, _, v2 in _fields(v):
                if n2 == 40:
                    unk_id = v2
        elif num == 3:
            for n2, _, v2 in _fields(v):
                if n2 == 2:
                    charsmap = v2
    return pieces, unk_id, charsmap


def train(tok, trainer, lines):
    tok.train_from_iterator(lines, trainer=trainer)
    return tok


# ---------------------------------------------------------------- the tokenizers under test
def build(lines):
    """name -> Tokenizer, in the published families' shapes and in combinations of the other components."""
    out = {}
    bert_special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

    # BERT (uncased): BertNormalizer, BertPreTokenizer, WordPiece, TemplateProcessing [CLS] $A [SEP], WordPiece
    t = Tokenizer(M.WordPiece(unk_token="[UNK]", max_input_chars_per_word=24))
    t.normalizer = N.BertNormalizer()
    t.pre_tokenizer = P.BertPreTokenizer()
    train(t, T.WordPieceTrainer(show_progress=False, vocab_size=1500, special_tokens=bert_special), lines)
    t.post_processor = PP.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                             special_tokens=[("[CLS]", t.token_to_id("[CLS]")),
                                                             ("[SEP]", t.token_to_id("[SEP]"))])
    t.decoder = D.WordPiece()
    out["bert"] = t
    # BERT cased, Chinese chars off, accents kept; BertProcessing; decoder without cleanup
    t = Tokenizer(M.WordPiece(unk_token="[UNK]", continuing_subword_prefix="@@"))
    t.normalizer = N.Sequence([N.NFC(), N.BertNormalizer(clean_text=True, handle_chinese_chars=False,
                                                         strip_accents=False, lowercase=False)])
    t.pre_tokenizer = P.Sequence([P.WhitespaceSplit(), P.Punctuation(behavior="merged_with_next")])
    train(t, T.WordPieceTrainer(show_progress=False, vocab_size=1200, special_tokens=bert_special, continuing_subword_prefix="@@"), lines)
    t.post_processor = PP.BertProcessing(("[SEP]", t.token_to_id("[SEP]")), ("[CLS]", t.token_to_id("[CLS]")))
    t.decoder = D.WordPiece(prefix="@@", cleanup=False)
    out["bert_cased"] = t

    # GPT-2: ByteLevel BPE, no prefix space; RoBERTa: with prefix space and <s> $A </s>
    for name, aps in (("gpt2", False), ("roberta", True)):
        t = Tokenizer(M.BPE())
        t.pre_tokenizer = P.ByteLevel(add_prefix_space=aps)
        special = ["<|endoftext|>"] if name == "gpt2" else ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
        train(t, T.BpeTrainer(show_progress=False, vocab_size=1200, special_tokens=special, initial_alphabet=P.ByteLevel.alphabet()),
              lines)
        t.decoder = D.ByteLevel()
        if name == "roberta":
            t.post_processor = PP.RobertaProcessing(("</s>", t.token_to_id("</s>")), ("<s>", t.token_to_id("<s>")))
            t.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True)])
        else:
            t.post_processor = PP.ByteLevel(trim_offsets=False)
        out[name] = t

    # ByteLevel without its regex after WhitespaceSplit; added tokens that strip spaces on both sides
    j = json.loads(out["roberta"].to_str())
    j["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"}, {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                                      "use_regex": False}]}
    t = Tokenizer.from_str(json.dumps(j))
    t.add_tokens([AddedToken("<sep>", rstrip=True, lstrip=True, normalized=False), AddedToken("Hello", single_word=True)])
    out["bytelevel_noregex"] = t

    # T5 / ALBERT / XLNet: sentencepiece Unigram + its real charsmap, as transformers converts them
    pieces, unk_id, nmt_nfkc = spm_model(lines, "nmt_nfkc")
    vocab = [(p, s) for p, s, _ in pieces]
    meta = dict(replacement="\u2581", prepend_scheme="always")
    t = Tokenizer(M.Unigram(vocab + [("</s>", 0.0)], unk_id))
    t.normalizer = N.Sequence([N.Precompiled(nmt_nfkc), N.Replace(Regex(" {2,}"), " ")])
    t.pre_tokenizer = P.Metaspace(**meta)
    t.post_processor = PP.TemplateProcessing(single=["$A", "</s>"], pair=["$A", "</s>", "$B", "</s>"],
                                             special_tokens=[("</s>", len(vocab))])
    t.decoder = D.Metaspace(**meta)
    t.add_special_tokens(["</s>"])
    out["t5"] = t
    for name, single, specials in (("albert", "[CLS] $A [SEP]", ["[CLS]", "[SEP]"]),
                                   ("xlnet", "$A <sep> <cls>", ["<sep>", "<cls>"])):
        v = vocab + [(s, 0.0) for s in specials]
        t = Tokenizer(M.Unigram(v, unk_id))
        t.normalizer = N.Sequence([N.Replace("``", '"'), N.Replace("''", '"'), N.NFKD(), N.StripAccents(),
                                   N.Lowercase(), N.Precompiled(nmt_nfkc), N.Replace(Regex(" {2,}"), " ")])
        t.pre_tokenizer = P.Metaspace(**meta)
        t.post_processor = PP.TemplateProcessing(single=single, pair=single + " $B:1",
                                                 special_tokens=[(s, len(vocab) + i) for i, s in enumerate(specials)])
        t.decoder = D.Metaspace(**meta)
        t.add_special_tokens(specials)
        out[name] = t

    # Llama-2-like Unigram with byte fallback (sentencepiece's <0xNN> pieces), nfkc_cf charsmap, Metaspace first,
    # ByteFallback + Metaspace decoders
    pieces, unk_id, nfkc_cf = spm_model(lines, "nfkc_cf", vocab=1200, byte_fallback=True)
    v = [(p, s) for p, s, _ in pieces]
    t = Tokenizer(M.Unigram(v, unk_id, byte_fallback=True))
    t.normalizer = N.Sequence([N.Precompiled(nfkc_cf), N.Strip(left=True, right=False)])
    t.pre_tokenizer = P.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
    t.decoder = D.Sequence([D.ByteFallback(), D.Metaspace(replacement="\u2581", prepend_scheme="first"),
                            D.Strip(content=" ", left=1, right=0)])
    t.add_special_tokens([AddedToken("<s>", special=True), AddedToken("</s>", special=True)])
    t.add_tokens([AddedToken("<tab>", normalized=True, single_word=True)])
    bos = t.token_to_id("<s>")
    t.post_processor = PP.TemplateProcessing(single=["<s>", "$A"], special_tokens=[("<s>", bos)])
    out["unigram_bytefallback"] = t

    # Unigram trained by tokenizers; UnicodeScripts + Whitespace; ByteLevel + template post-processors; CTC decoder
    t = Tokenizer(M.Unigram())
    t.normalizer = N.Sequence([N.NFKC(), N.Lowercase()])
    t.pre_tokenizer = P.Sequence([P.UnicodeScripts(), P.Whitespace()])
    train(t, T.UnigramTrainer(show_progress=False, vocab_size=4000, special_tokens=["<pad>", "<unk>", "<cls>"], unk_token="<unk>"), lines)
    t.post_processor = PP.Sequence([PP.ByteLevel(), PP.TemplateProcessing(
        single="<cls> $A <pad>", special_tokens=[("<cls>", t.token_to_id("<cls>")), ("<pad>", t.token_to_id("<pad>"))])])
    t.decoder = D.CTC(pad_token="<pad>", word_delimiter_token="\u2581", cleanup=True)
    out["unigram_scripts_ctc"] = t

    # BPE with continuing_subword_prefix + end_of_word_suffix, unk (fused), BPEDecoder; Digits and CharDelimiter
    t = Tokenizer(M.BPE(unk_token="<unk>", continuing_subword_prefix="##", end_of_word_suffix="</w>", fuse_unk=True))
    t.normalizer = N.Sequence([N.NFD(), N.StripAccents(), N.Strip()])
    t.pre_tokenizer = P.Sequence([P.CharDelimiterSplit("-"), P.Digits(individual_digits=False), P.Whitespace()])
    train(t, T.BpeTrainer(show_progress=False, vocab_size=1000, special_tokens=["<unk>", "<eos>"], continuing_subword_prefix="##",
                          end_of_word_suffix="</w>", limit_alphabet=120), lines)
    t.decoder = D.BPEDecoder(suffix="</w>")
    out["bpe_affixes"] = t
    # the same model with ignore_merges, byte_fallback over an added byte alphabet, unk not fused
    j = json.loads(t.to_str())
    j["model"].update(ignore_merges=True, fuse_unk=False, byte_fallback=True)
    base = max(j["model"]["vocab"].values()) + 1
    for b in range(0, 256, 3):  # a partial byte alphabet: characters with a missing byte fall back to <unk>
        j["model"]["vocab"]["<0x%02X>" % b] = base + b // 3
    j["decoder"] = {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "BPEDecoder",
                                                                                "suffix": "</w>"}]}
    out["bpe_flags"] = Tokenizer.from_str(json.dumps(j))

    # WordLevel over WhitespaceSplit + Punctuation(contiguous); Replace/Strip/Fuse decoders; Prepend normalizer
    t = Tokenizer(M.WordLevel(unk_token="<unk>"))
    t.normalizer = N.Sequence([N.Replace(Regex("[0-9]+"), "#"), N.Prepend("\u2581"), N.Replace(" ", "\u2581")])
    t.pre_tokenizer = P.Sequence([P.Split("\u2581", "merged_with_next"), P.Punctuation(behavior="contiguous")])
    train(t, T.WordLevelTrainer(show_progress=False, vocab_size=3000, special_tokens=["<unk>", "<bos>"]), lines)
    t.decoder = D.Sequence([D.Replace("\u2581", " "), D.Fuse(), D.Strip(content=" ", left=1, right=0)])
    t.add_special_tokens(["<bos>"])
    out["wordlevel"] = t

    # Metaspace pre-tokenizer variants after other splits, and Split with every behavior and invert
    for scheme, split in (("first", True), ("always", False), ("never", True)):
        t = Tokenizer(M.WordPiece(unk_token="[UNK]"))
        t.normalizer = N.Sequence([N.Strip(left=True, right=True), N.Lowercase()])
        t.pre_tokenizer = P.Sequence([P.Split(Regex("\\d+|[!?]"), "isolated", invert=False),
                                      P.Metaspace(replacement="_", prepend_scheme=scheme, split=split)])
        train(t, T.WordPieceTrainer(show_progress=False, vocab_size=900, special_tokens=["[UNK]"]), lines)
        t.decoder = D.Metaspace(replacement="_", prepend_scheme=scheme, split=split)
        out["metaspace_%s_%d" % (scheme, split)] = t
    behaviors = ["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]
    for i, beh in enumerate(behaviors):
        t = Tokenizer(M.WordPiece(unk_token="[UNK]"))
        pat = [Regex("\\s+|[,.;]"), ", ", Regex("a*"), "", Regex("(?i)the")][i]
        t.pre_tokenizer = P.Sequence([P.Split(pat, beh, invert=i % 2 == 1), P.WhitespaceSplit()])
        train(t, T.WordPieceTrainer(show_progress=False, vocab_size=700, special_tokens=["[UNK]"]), lines)
        t.decoder = D.WordPiece()
        out["split_" + beh] = t
    return out


# ---------------------------------------------------------------- comparison
def want_for(hf, text):
    ids = hf.encode(text, add_special_tokens=False).ids
    ids_sp = hf.encode(text, add_special_tokens=True).ids
    w = {"ids": ids, "ids_sp": ids_sp,
         "dec": hf.decode(ids, skip_special_tokens=False), "dec_skip": hf.decode(ids, skip_special_tokens=True),
         "dec_sp": hf.decode(ids_sp, skip_special_tokens=False),
         "dec_sp_skip": hf.decode(ids_sp, skip_special_tokens=True)}
    w["stream"], w["stream_skip"] = w["dec_sp"], w["dec_sp_skip"]
    return w


def all_codepoint_chunks(step, unicode14=False):
    """Every code point of planes 0-3 and 14 (surrogates excluded) in chunks, some with spaces between.
    unicode14: only those assigned by Unicode 14 (Python's unicodedata), for pre-tokenizers that run a regex:
    PCRE2 10.42's property tables are Unicode 14 while tokenizers' Oniguruma knows Unicode 16, and PCRE2's \\s
    still matches U+180E (a known gap of user regexes)."""
    cps = [c for c in list(range(0x20, 0x323B0, step)) + list(range(0xE0000, 0xE1000, step))
           if not 0xD800 <= c < 0xE000 and (not unicode14 or (unicodedata.category(chr(c)) != "Cn" and c != 0x180E))]
    chunks = []
    for i in range(0, len(cps), 96):
        part = [chr(c) for c in cps[i:i + 96]]
        chunks.append("".join(part) if (i // 96) % 2 == 0 else " ".join(part))
    return chunks


def compare(name, hf, tok_dir, texts, id_seqs, chunks, failures):
    reqs = [{"text": t} for t in texts] + [{"ids": s} for s in id_seqs]
    comp_texts = texts + chunks
    if hf.normalizer is not None:
        reqs += [{"normalize": t} for t in comp_texts]
    if hf.pre_tokenizer is not None:
        reqs += [{"pretokenize": t} for t in comp_texts]
    got = td.run_driver(tok_dir, reqs)
    k = 0
    for text in texts:
        g = got[k]
        k += 1
        try:
            w = want_for(hf, text)
        except Exception as e:  # tokenizers refuses: so must we
            if "error" not in g:
                failures.append((name, text, "error", g.get("ids"), str(e)))
            continue
        if "error" in g:
            failures.append((name, text, "error", g["error"], None))
            continue
        for key, v in w.items():
            if g.get(key) != v:
                failures.append((name, text, key, g.get(key), v))
    for seq in id_seqs:
        g = got[k]
        k += 1
        w = {"dec": hf.decode(seq, skip_special_tokens=False), "dec_skip": hf.decode(seq, skip_special_tokens=True)}
        w["stream"], w["stream_skip"] = w["dec"], w["dec_skip"]
        for key, v in w.items():
            if g.get(key) != v:
                failures.append((name, seq, key, g.get(key), v))
    if hf.normalizer is not None:
        for text in comp_texts:
            g = got[k]
            k += 1
            v = hf.normalizer.normalize_str(text)
            mine = bytes.fromhex(g["norm"]).decode() if "norm" in g else g.get("error")
            if mine != v:
                failures.append((name, text, "normalizer", mine, v))
    if hf.pre_tokenizer is not None:
        for text in comp_texts:
            g = got[k]
            k += 1
            v = [p for p, _ in hf.pre_tokenizer.pre_tokenize_str(text)]
            mine = [bytes.fromhex(h).decode() for h in g["pieces"]] if "pieces" in g else g.get("error")
            if mine != v:
                failures.append((name, text, "pre_tokenizer", mine, v))


def id_sequences(rng, hf, n):
    vocab = hf.get_vocab(with_added_tokens=True)
    size = hf.get_vocab_size(with_added_tokens=True)
    byte_ids = [vocab["<0x%02X>" % b] for b in range(256) if "<0x%02X>" % b in vocab]
    specials = [i for i, t in hf.get_added_tokens_decoder().items() if t.special]
    seqs = []
    for _ in range(n):
        seq = []
        for _ in range(rng.randint(1, 24)):
            r = rng.random()
            if r < 0.3 and byte_ids:  # a run of byte tokens: a split character, or junk bytes
                if rng.random() < 0.5:
                    seq += [vocab["<0x%02X>" % b] for b in rng.choice("é😀ß中").encode()
                            if "<0x%02X>" % b in vocab]
                else:
                    seq += [rng.choice(byte_ids) for _ in range(rng.randint(1, 4))]
            elif r < 0.45 and specials:
                seq.append(rng.choice(specials))
            else:
                seq.append(rng.randrange(size))
        seqs.append(seq)
    return seqs


# every component the tokenizer implements: each must appear in the tokenizers under test
REQUIRED = {
    "model": {"BPE", "Unigram", "WordPiece", "WordLevel"},
    "normalizer": {"NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Strip", "StripAccents", "Replace", "Prepend",
                   "BertNormalizer", "Precompiled", "Sequence"},
    "pre_tokenizer": {"ByteLevel", "Split", "Digits", "Whitespace", "WhitespaceSplit", "Punctuation", "Metaspace",
                      "BertPreTokenizer", "CharDelimiterSplit", "UnicodeScripts", "Sequence"},
    "post_processor": {"TemplateProcessing", "ByteLevel", "RobertaProcessing", "BertProcessing", "Sequence"},
    "decoder": {"ByteLevel", "Metaspace", "WordPiece", "BPEDecoder", "Replace", "Strip", "Fuse", "ByteFallback", "CTC",
                "Sequence"},
}


def coverage(jsons):
    """The component types (and flags) the saved tokenizer.json files use, by section."""
    seen = {k: set() for k in REQUIRED}

    def walk(section, o):
        if isinstance(o, dict):
            if "type" in o and isinstance(o["type"], str):
                seen[section].add(o["type"])
            for v in o.values():
                walk(section, v)
        elif isinstance(o, list):
            for v in o:
                walk(section, v)
    for j in jsons:
        for section in REQUIRED:
            if j.get(section):
                walk(section, j[section] if section != "model" else {"type": j["model"]["type"]})
    return seen


def main():
    failures = []
    lines = corpus()
    toks = build(lines)
    tmp = tempfile.mkdtemp(prefix="xpi_tok_comp_")
    chunks = all_codepoint_chunks(ALL_CP_STEP)
    chunks14 = all_codepoint_chunks(ALL_CP_STEP, unicode14=True)
    smollm2 = os.path.join(SRC, "tests/data/tokenizers/smollm2")
    dirs = {"smollm2": smollm2}
    for name, t in toks.items():
        d = os.path.join(tmp, name)
        os.makedirs(d)
        t.save(os.path.join(d, "tokenizer.json"))
        dirs[name] = d
    jsons = [json.load(open(os.path.join(d, "tokenizer.json"), encoding="utf-8")) for d in dirs.values()]
    seen = coverage(jsons)
    for section, want in REQUIRED.items():
        if want - seen[section]:
            failures.append(("coverage", section, "missing components", sorted(want - seen[section]), None))
    flags = {"continuing_subword_prefix", "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges"}
    used = {f for j in jsons if j["model"]["type"] == "BPE" for f in flags if j["model"].get(f)}
    if flags - used:
        failures.append(("coverage", "BPE", "missing flags", sorted(flags - used), None))
    used = {f for j in jsons for t in j.get("added_tokens", []) for f in ("lstrip", "rstrip", "single_word",
                                                                            "normalized", "special") if t.get(f)}
    if {"lstrip", "rstrip", "single_word", "normalized", "special"} - used:
        failures.append(("coverage", "added_tokens", "missing flags", sorted(used), None))
    n_cmp = 0
    for name, d in dirs.items():
        hf = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        rng = random.Random("xpi-components-" + name)
        special = [t.content for t in hf.get_added_tokens_decoder().values()][:12]
        texts = [td.gen_string(rng, special + ["<tab>", " <tab> ", "[SEP]x", "a-b-c", "12-34"])
                 for _ in range(N_TEXTS)]
        texts += ["", " ", "  leading", "trailing  ", "\u0301x", "a" * 300, "\u3000\u3000x", "ab" * 60,
                  "e\u0301\u0323 \u1100\u1161\u11a8 \U0001F468\u200d\U0001F469 \U0001F1EF\U0001F1F5", "``quoted''",
                  "don't do not", "x" * 30 + " " + "ab" * 20, "1234567890" * 5, "<s>", "</s>x</s>"]
        ids = id_sequences(rng, hf, N_IDS)
        # the char-class components also see every code point; the rest only the generated strings
        compare(name, hf, d, texts, ids, chunks if name in CHUNKED else chunks14 if name in CHUNKED_U14 else [],
                failures)
        n_cmp += len(texts) + len(ids)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"compared {n_cmp} strings and id sequences over {len(dirs)} tokenizers "
          f"({', '.join(dirs)}), plus every code point through the normalizers and pre-tokenizers of {len(CHUNKED) + len(CHUNKED_U14)}")
    summary = {}
    for f in failures:
        summary[(f[0], f[2])] = summary.get((f[0], f[2]), 0) + 1
    for k, v in sorted(summary.items()):
        print("mismatch count", k, v)
    shown = {}
    for f in failures:  # the first two of each kind
        shown[(f[0], f[2])] = shown.get((f[0], f[2]), 0) + 1
        if shown[(f[0], f[2])] <= 2:
            print("MISMATCH", f[0], repr(f[1])[:200], f[2], "\n  got ", repr(f[3])[:400], "\n  want", repr(f[4])[:400])
    print(f"{len(failures)} mismatches")
    return 1 if failures else 0


# the tokenizers whose normalizer/pre-tokenizer see every code point (one of each character-class component)
CHUNKED = {"bert", "bert_cased", "t5", "albert", "unigram_bytefallback", "unigram_scripts_ctc", "bpe_affixes",
           "wordlevel"}
CHUNKED_U14 = {"gpt2", "smollm2", "split_removed", "metaspace_first_1"}  # regex pre-tokenizers: see all_codepoint_chunks

if __name__ == "__main__":
    sys.exit(main())
