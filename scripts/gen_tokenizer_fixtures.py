#!/usr/bin/env python3
"""Writes tests/tokenizer/fixtures/*.tokfix: small, exact stand-ins for real vocabularies plus the token ids
an outside reference gives for a corpus, for tests/tokenizer/test_tok_vocabs.c.

Sources (reference = who produced the expected ids):
  * llama.cpp's test vocabularies models/ggml-vocab-NAME.gguf with NAME.gguf.inp/.out: the .out ids were
    made by HF tokenizers/transformers (llama.cpp's convert_hf_to_gguf_update.py), add_special=False,
    parse_special=False.
  * --hf NAME=TOKENIZER_JSON=GGUF: ids from HF `tokenizers` (run here) on CORPUS below, with and without
    special tokens, for a vocabulary we hold both as tokenizer.json and as GGUF.

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

usage: scripts/gen_tokenizer_fixtures.py [--models DIR] [--out DIR] [--full] [--hf NAME=JSON=GGUF ...] [names]
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


def hf_tests(tokenizer_json):
    from tokenizers import Tokenizer
    tk = Tokenizer.from_file(tokenizer_json)
    tests = []
    for text in CORPUS:
        # HF always matches its added tokens (special ones included): that is our TOK_PARSE_SPECIAL.
        tests.append((2, text, tk.encode(text, add_special_tokens=False).ids))
        tests.append((3, text, tk.encode(text, add_special_tokens=True).ids))
    return tests


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=LLAMACPP_MODELS)
    ap.add_argument("--out", default="tests/tokenizer/fixtures")
    ap.add_argument("--full", action="store_true", help="keep the whole vocabulary (for a one-off check)")
    ap.add_argument("--hf", action="append", default=[], help="NAME=tokenizer.json=vocab.gguf")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    names = a.names or sorted(n[len("ggml-vocab-"):-len(".gguf.inp")] for n in os.listdir(a.models)
                              if n.startswith("ggml-vocab-") and n.endswith(".gguf.inp"))
    for n in names:
        base = os.path.join(a.models, f"ggml-vocab-{n}.gguf")
        if not os.path.exists(base + ".out"):
            continue
        r = GGUFReader(base)
        write_fixture(os.path.join(a.out, f"{n}.tokfix"), n, "llama.cpp models/*.out (HF tokenizers)", r,
                      llamacpp_tests(base), a.full)
    for spec in a.hf:
        name, tj, gg = spec.split("=")
        write_fixture(os.path.join(a.out, f"{name}.tokfix"), name, "HF tokenizers (tokenizer.json)",
                      GGUFReader(gg), hf_tests(tj), a.full)


if __name__ == "__main__":
    sys.exit(main())
