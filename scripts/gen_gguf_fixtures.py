#!/usr/bin/env python3
"""Outside cross-check of our GGUF reader and writer against gguf-py (the format's reference in Python).

  python3 scripts/gen_gguf_fixtures.py
      Writes tests/gguf/fixtures/gguf_py_all_types.gguf with gguf-py's own GGUFWriter: every value type,
      arrays of every fixed type and of strings, nested arrays (3 deep), unicode strings, alignment 64, and
      F32 / F16 / Q8_0 tensors. tests/gguf/test_gguf_pyfixture.c reads it and checks every value.
      (Re-run only when the content below changes; the file is committed.)

  python3 scripts/gen_gguf_fixtures.py --check [FILE]
      Reads FILE (default /tmp/llm170_gguf_c_written.gguf, which test_gguf_pyfixture writes with OUR writer
      from the same content) with gguf-py's GGUFReader and checks every key, type, value and tensor against
      the committed fixture; also reports whether the two files are byte-identical. Exit status 0 = all
      equal. Run test_gguf_pyfixture (ctest -R test_gguf_pyfixture) first.

Needs `pip install gguf numpy` (gguf-py 0.19 was used). Only this script needs Python; the tests do not.
"""
import math
import os
import sys

import numpy as np
from gguf import GGUFReader, GGUFValueType as VT, GGUFWriter, GGMLQuantizationType as QT
from gguf.quants import quantize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests/gguf/fixtures/gguf_py_all_types.gguf")
OURS = "/tmp/llm170_gguf_c_written.gguf"
UNI = "héllo wörld ✓ 日本語"

# (key, value type, value, element type for arrays); the C test mirrors this list.
KVS = [
    ("test.u8", VT.UINT8, 200, None),
    ("test.i8", VT.INT8, -100, None),
    ("test.u16", VT.UINT16, 60000, None),
    ("test.i16", VT.INT16, -30000, None),
    ("test.u32", VT.UINT32, 4000000000, None),
    ("test.i32", VT.INT32, -2000000000, None),
    ("test.f32", VT.FLOAT32, 3.5, None),
    ("test.bool", VT.BOOL, True, None),
    ("test.bool_false", VT.BOOL, False, None),
    ("test.str", VT.STRING, UNI, None),
    ("test.str_empty", VT.STRING, "", None),
    ("test.u64", VT.UINT64, 2**63 + 5, None),
    ("test.i64", VT.INT64, -(2**62) - 7, None),
    ("test.f64", VT.FLOAT64, -1.0 / 3.0, None),
    ("test.arr_u8", VT.ARRAY, [1, 2, 3, 255], VT.UINT8),
    ("test.arr_i8", VT.ARRAY, [-128, 0, 127], VT.INT8),
    ("test.arr_u16", VT.ARRAY, [0, 65535], VT.UINT16),
    ("test.arr_i16", VT.ARRAY, [-32768, 32767], VT.INT16),
    ("test.arr_u32", VT.ARRAY, [7, 4000000000], VT.UINT32),
    ("test.arr_i32", VT.ARRAY, [-1, 1, 2147483647], VT.INT32),
    ("test.arr_f32", VT.ARRAY, [0.5, -2.0, 0.125], VT.FLOAT32),
    ("test.arr_bool", VT.ARRAY, [True, False, True], VT.BOOL),
    ("test.arr_u64", VT.ARRAY, [2**64 - 1], VT.UINT64),
    ("test.arr_i64", VT.ARRAY, [-(2**63), 0], VT.INT64),
    ("test.arr_f64", VT.ARRAY, [math.pi, -0.0], VT.FLOAT64),
    ("test.arr_str", VT.ARRAY, ["a", "", UNI, "last"], VT.STRING),
    # nested: gguf-py infers the inner types (lists -> ARRAY, int -> INT32, str -> STRING)
    ("test.nested", VT.ARRAY, [[[1, 2], [3]], [[4, 5, 6]]], None),
    ("test.nested_str", VT.ARRAY, [["x", "y"], ["z"]], None),
]


def q8_source():
    """2 rows x 64: block b (0..3) is s * (127, -15, -14, ..., 15) with s = 0.5 (b + 1), so Q8_0 is exact:
    d = s and q = (127, -15, ..., 15)."""
    x = np.zeros((2, 64), dtype=np.float32)
    for b in range(4):
        s = 0.5 * (b + 1)
        for j in range(32):
            x[b // 2, (b % 2) * 32 + j] = (127 if j == 0 else j - 16) * s
    return x


def tensors():
    f32 = (np.arange(24, dtype=np.float32) * 0.25 - 1.0).reshape(3, 8)   # ne = [8, 3]
    f16 = (np.arange(16, dtype=np.float32) / 8.0).astype(np.float16)     # ne = [16]
    q8 = quantize(q8_source(), QT.Q8_0)                                   # ne = [64, 2], 2 x 68 bytes
    return [("t.f32", f32, None), ("t.f16", f16, None), ("t.q8_0", q8, QT.Q8_0)]


def write_fixture():
    os.makedirs(os.path.dirname(FIXTURE), exist_ok=True)
    w = GGUFWriter(FIXTURE, "llama")           # adds general.architecture first
    w.add_custom_alignment(64)                 # general.alignment, u32
    for key, vt, val, sub in KVS:
        w.add_key_value(key, val, vt, sub_type=sub)
    for name, data, raw in tensors():
        w.add_tensor(name, data, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {FIXTURE} ({os.path.getsize(FIXTURE)} bytes)")


def field_bytes(field):
    """The encoded value of a field (everything after key length, key and value type)."""
    return b"".join(p.tobytes() for p in field.parts[3:])


def compare(path, ref_path):
    """Checks path against ref_path field by field with GGUFReader; returns a list of differences."""
    r, ref = GGUFReader(path), GGUFReader(ref_path)
    bad = []
    keys, ref_keys = list(r.fields), list(ref.fields)
    # GGUFReader adds GGUF.version, GGUF.tensor_count, GGUF.kv_count pseudo-fields first
    if keys != ref_keys:
        bad.append(f"key order differs: {keys} vs {ref_keys}")
    for key in ref_keys:
        if key not in r.fields:
            bad.append(f"missing key {key}")
            continue
        a, b = r.fields[key], ref.fields[key]
        if a.types != b.types:
            bad.append(f"{key}: types {a.types} vs {b.types}")
        elif field_bytes(a) != field_bytes(b):
            bad.append(f"{key}: value bytes differ")
        elif not (b.types[0] == VT.ARRAY and VT.ARRAY in b.types[1:]):  # contents() flattens nested arrays
            if a.contents() != b.contents():
                bad.append(f"{key}: {a.contents()!r} vs {b.contents()!r}")
    for key, vt, val, sub in KVS:
        f = r.fields.get(key)
        if f is None or f.types[0] != vt:
            bad.append(f"{key}: expected type {vt.name}")
            continue
        if vt != VT.ARRAY or sub is not None:
            got = f.contents()
            if vt == VT.FLOAT32 or sub == VT.FLOAT32:
                val = np.array(val, dtype=np.float32).tolist()
            if got != val:
                bad.append(f"{key}: {got!r}, expected {val!r}")
    if len(r.tensors) != len(ref.tensors):
        bad.append(f"{len(r.tensors)} tensors, expected {len(ref.tensors)}")
    for a, b in zip(r.tensors, ref.tensors):
        if (a.name, a.tensor_type, list(a.shape), a.data_offset - r.data_offset) != \
           (b.name, b.tensor_type, list(b.shape), b.data_offset - ref.data_offset):
            bad.append(f"tensor {a.name}: {a.tensor_type.name} {list(a.shape)} vs {b.name} {b.tensor_type.name} {list(b.shape)}")
        elif a.data.tobytes() != b.data.tobytes():
            bad.append(f"tensor {a.name}: data differs")
    if r.alignment != ref.alignment:
        bad.append(f"alignment {r.alignment} vs {ref.alignment}")
    return bad


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        path = sys.argv[2] if len(sys.argv) > 2 else OURS
        if not os.path.exists(path):
            sys.exit(f"{path} does not exist: run test_gguf_pyfixture first (it writes it with our writer)")
        bad = compare(path, FIXTURE)
        same = open(path, "rb").read() == open(FIXTURE, "rb").read()
        n_fields = len(GGUFReader(path).fields)
        for b in bad:
            print("MISMATCH:", b)
        print(f"{path}: gguf-py's GGUFReader read {n_fields} fields and {len(GGUFReader(path).tensors)} tensors; "
              f"{len(bad)} differences from the gguf-py fixture; byte-identical: {same}")
        sys.exit(1 if bad else 0)
    write_fixture()
    bad = compare(FIXTURE, FIXTURE)
    if bad:
        sys.exit("fixture does not read back: " + "; ".join(bad))


if __name__ == "__main__":
    main()
