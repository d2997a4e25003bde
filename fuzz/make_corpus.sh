#!/usr/bin/env bash
# Writes the seed corpus of fuzz_gguf to fuzz/corpus/gguf/: a dozen small GGUF files, valid ones that
# reach every value type, nesting, alignment and tensor path, and near-valid ones that stop at each kind
# of check (version, truncation, overlap, unknown type, split), plus the gguf-py fixture. Hand-built bytes
# (Python's struct), so the corpus does not depend on our own writer. Run from anywhere: fuzz/make_corpus.sh
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)/corpus/gguf"
mkdir -p "$out"
python3 - "$out" <<'PY'
import struct, sys, os
out = sys.argv[1]
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?", U64: "<Q",
       I64: "<q", F64: "<d"}

def s(x):
    b = x.encode() if isinstance(x, str) else x
    return struct.pack("<Q", len(b)) + b

def val(t, v):
    if t == STR: return s(v)
    if t == ARR:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(val(et, i) for i in items)
    return struct.pack(FMT[t], v)

def kv(key, t, v): return s(key) + struct.pack("<I", t) + val(t, v)

def tinfo(name, ne, typ, off):
    return s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne) + struct.pack("<IQ", typ, off)

def gguf(kvs=(), tensors=(), align=32, version=3, data=b"", pad=True):
    h = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs) + b"".join(tensors)
    if pad: h += b"\0" * (-len(h) % align)
    return h + data

def put(name, b):
    with open(os.path.join(out, name), "wb") as f: f.write(b)

put("empty_v3.gguf", gguf())
put("scalars.gguf", gguf([kv("u8", U8, 200), kv("i8", I8, -5), kv("u16", U16, 60000), kv("i16", I16, -300),
    kv("u32", U32, 4000000000), kv("i32", I32, -7), kv("f32", F32, 1.5), kv("b", BOOL, True),
    kv("u64", U64, 2**63), kv("i64", I64, -2**40), kv("f64", F64, 0.25), kv("general.name", STR, "tiny")]))
put("strings.gguf", gguf([kv("tokenizer.ggml.model", STR, "gpt2"),
    kv("tokenizer.ggml.tokens", ARR, (STR, ["<s>", "</s>", "hé", "", "日本"])),
    kv("tokenizer.ggml.scores", ARR, (F32, [0.0, -1.0, -2.5, 3.0, 1.0])),
    kv("tokenizer.ggml.token_type", ARR, (I32, [3, 3, 1, 1, 1]))]))
put("nested.gguf", gguf([kv("n3", ARR, (ARR, [(ARR, [(I32, [1, 2]), (I32, [3])]), (ARR, [(U8, [])])])),
    kv("ns", ARR, (ARR, [(STR, ["a", "b"]), (STR, [])])), kv("e", ARR, (BOOL, [True, False, True]))]))
f32 = struct.pack("<8f", *range(8))
put("f32_tensor.gguf", gguf([kv("general.architecture", STR, "llama")], [tinfo("w", [8], 0, 0)], data=f32))
q8 = (struct.pack("<H", 0x3c00) + bytes(range(32))) * 2
f16 = struct.pack("<16H", *([0x3c00] * 16))
put("q8_f16_align64.gguf", gguf([kv("general.alignment", U32, 64)],
    [tinfo("blk.0.attn_q.weight", [32, 2], 8, 0), tinfo("blk.0.attn_norm.weight", [16], 1, 128)], align=64,
    data=q8 + b"\0" * (128 - len(q8)) + f16))
put("align16_zero_dim.gguf", gguf([kv("general.alignment", U32, 16)],
    [tinfo("z", [4, 0, 3], 0, 0), tinfo("o", [4], 0, 0)], align=16, data=struct.pack("<4f", 1, 2, 3, 4)))
put("bad_version2.gguf", gguf([kv("a", U32, 1)], version=2))
put("bad_truncated_data.gguf", gguf([], [tinfo("w", [8], 0, 0)], data=f32[:20]))
put("bad_overlap.gguf", gguf([], [tinfo("a", [8], 0, 0), tinfo("b", [8], 0, 0)], data=f32 * 2))
put("bad_unknown_type.gguf", gguf([], [tinfo("w", [8], 4, 0)], data=f32))
put("bad_split_count.gguf", gguf([kv("split.no", U16, 0), kv("split.count", U16, 2),
    kv("split.tensors.count", I32, 1)], [tinfo("w", [8], 0, 0)], data=f32))
put("bad_dup_key.gguf", gguf([kv("k", U8, 1), kv("k", U8, 2)]))
PY
# gguf-py's own output (every value type, nested arrays, alignment 64), from scripts/gen_gguf_fixtures.py
cp "$out/../../../tests/gguf/fixtures/gguf_py_all_types.gguf" "$out/"
ls -l "$out" | awk 'NR>1 {n++; s+=$5} END {print n " files, " s " bytes in corpus"}'
