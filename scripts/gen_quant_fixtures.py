#!/usr/bin/env python3
"""Writes the outside-reference fixtures for llm170's quant module (tests/quant/fixtures/).

The reference is gguf-py's numpy code (`gguf.quants.dequantize` / `gguf.quants.quantize`), which is
independent of ggml's C. For every ggml type gguf-py can dequantize we store ~64 random but well-formed
blocks and the float32 values gguf-py makes of them; for every type gguf-py can quantize we store float32
inputs (random data of several magnitudes plus edge blocks) and the bytes gguf-py makes of them.
tests/quant/test_quant_gguf_py.c checks our scalar to_float / from_float against them bit for bit.

Which types are covered is found by trying gguf-py, not listed by hand, so a newer gguf-py that learns a
type adds its fixture on the next run. Output is deterministic: rerunning with the same gguf and numpy
versions rewrites identical bytes (every random stream is seeded from (SEED, type id, kind)).

File format (all little-endian), version 1:
    offset  size  field
    0       8     magic "L170QFX1"
    8       4     u32 format version (1)
    12      4     u32 kind: 1 = dequant, 2 = quantize
    16      4     u32 ggml type id (GGUF numbering)
    20      4     u32 values per block
    24      4     u32 bytes per block
    28      4     u32 header bytes (48; the payload starts here)
    32      8     u64 block count
    40      8     u64 value count (block count * values per block)
    48            payload
      dequant:  block bytes (block count * bytes per block), then the expected float32 values
      quantize: the float32 inputs (value count * 4), then the expected block bytes
tests/quant/fixtures/MANIFEST lists the files, one "file kind type" per line.

Usage: python3 scripts/gen_quant_fixtures.py [--out DIR]
"""
from __future__ import annotations

import argparse
import hashlib
import struct
import sys
from pathlib import Path

import numpy as np

import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

MAGIC = b"L170QFX1"
VERSION = 1
HEADER_BYTES = 48
KIND_DEQUANT, KIND_QUANTIZE = 1, 2
KIND_NAMES = {KIND_DEQUANT: "dequant", KIND_QUANTIZE: "quantize"}
SEED = 170
DEQUANT_VALUES_PLAIN = 1024  # F32 / F16 / BF16 have 1 value per block: store this many values
# Blocks per dequant fixture: 64 of the 32- and 64-value types, 48 of the 256-value ones (which keeps all
# fixtures near 1 MB; 48 x 256 values are plenty to hit every code path of a super-block).
DEQUANT_BLOCKS = {32: 64, 64: 64, 256: 48}

# Byte offsets of the plain fp16 fields (d, and m / dmin where present) in each block, from the ggml block
# layouts (src/quant/blocks.h). Types whose scale is stored otherwise are handled in random_blocks.
F16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
    T.IQ2_XXS: [0], T.IQ2_XS: [0], T.IQ2_S: [0], T.IQ3_XXS: [0], T.IQ3_S: [0], T.IQ1_S: [0],
    T.IQ4_NL: [0], T.IQ4_XS: [0], T.TQ1_0: [52], T.TQ2_0: [64],
}
IQ1_M_SCALES = 48  # 4 x u16; the fp16 super-block scale is their 4 top nibbles, lowest nibble first
# A few fp16 scales every dequant fixture starts with: 1, -1, largest, smallest subnormal (+/-), largest
# subnormal, smallest normal, -0, 0.
F16_EDGE_SCALES = [0x3C00, 0xBC00, 0x7BFF, 0x0001, 0x8001, 0x03FF, 0x0400, 0x8000, 0x0000]


def rng_for(qtype: T, kind: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64([SEED, int(qtype), kind]))


def supported(qtype: T) -> tuple[bool, bool]:
    """(can dequantize, can quantize), found by asking gguf-py on one zero block."""
    blck, size = GGML_QUANT_SIZES[qtype]
    can_dq = can_q = True
    try:
        gguf.quants.dequantize(np.zeros(size, dtype=np.uint8), qtype)
    except NotImplementedError:
        can_dq = False
    try:
        gguf.quants.quantize(np.zeros(blck, dtype=np.float32), qtype)
    except NotImplementedError:
        can_q = False
    return can_dq, can_q


def random_f16_scales(rng: np.random.Generator, n: int) -> np.ndarray:
    """n finite fp16 bit patterns: mostly normals of any exponent, some subnormals, zeros and edges."""
    cat = rng.integers(0, 100, n)
    sign = rng.integers(0, 2, n).astype(np.uint16) << 15
    normal = (rng.integers(1, 31, n) << 10 | rng.integers(0, 1024, n)).astype(np.uint16)
    subnormal = rng.integers(1, 1024, n).astype(np.uint16)
    edge = np.array(F16_EDGE_SCALES, dtype=np.uint16)[rng.integers(0, len(F16_EDGE_SCALES), n)]
    bits = np.where(cat < 70, normal | sign, np.where(cat < 88, subnormal | sign, edge))
    return bits.astype(np.uint16)


def set_f16(blocks: np.ndarray, off: int, bits: np.ndarray) -> None:
    blocks[:, off:off + 2] = bits.astype("<u2").view(np.uint8).reshape(-1, 2)


def random_blocks(qtype: T, rng: np.random.Generator) -> np.ndarray:
    """Random payload bytes with every scale field replaced by a finite value; shape (blocks, bytes)."""
    blck, size = GGML_QUANT_SIZES[qtype]
    if blck == 1:  # plain types: random finite bit patterns (subnormals and -0 included)
        n = DEQUANT_VALUES_PLAIN
        if qtype == T.F32:
            bits = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
            bits[:4] = [0x80000000, 0x00000001, 0x807FFFFF, 0x7F7FFFFF]
            exp_all_ones = (bits & 0x7F800000) == 0x7F800000
            bits = np.where(exp_all_ones, bits ^ 0x00800000, bits).astype("<u4")  # inf/nan -> finite
        else:
            bits = rng.integers(0, 1 << 16, n).astype(np.uint16)
            bits[:4] = [0x8000, 0x0001, 0x83FF, 0x7BFF] if qtype == T.F16 else [0x8000, 0x0001, 0x807F, 0x7F7F]
            inf_mask = 0x7C00 if qtype == T.F16 else 0x7F80
            step = 0x0400 if qtype == T.F16 else 0x0080
            bits = np.where((bits & inf_mask) == inf_mask, bits ^ step, bits).astype("<u2")
        return bits.view(np.uint8).reshape(n, size)

    nb = DEQUANT_BLOCKS[blck]
    blocks = rng.integers(0, 256, (nb, size)).astype(np.uint8)
    if qtype in F16_FIELDS:
        for k, off in enumerate(F16_FIELDS[qtype]):
            bits = random_f16_scales(rng, nb)
            # the first blocks take each edge scale once (rotated per field so d and m differ)
            edges = np.roll(np.array(F16_EDGE_SCALES, dtype=np.uint16), k)
            bits[:len(edges)] = edges
            set_f16(blocks, off, bits)
    elif qtype == T.IQ1_M:
        d = random_f16_scales(rng, nb)
        d[:len(F16_EDGE_SCALES)] = F16_EDGE_SCALES
        sc = blocks[:, IQ1_M_SCALES:IQ1_M_SCALES + 8].copy().view("<u2").astype(np.uint32)
        for i in range(4):
            sc[:, i] = (sc[:, i] & 0x0FFF) | (((d.astype(np.uint32) >> (4 * i)) & 0xF) << 12)
        blocks[:, IQ1_M_SCALES:IQ1_M_SCALES + 8] = sc.astype("<u2").view(np.uint8)
    elif qtype == T.MXFP4:
        # E8M0 exponent e: the block scale is 2^(e-128) (kvalues are doubled). 252 is the largest e whose
        # largest value (12 * 2^124) stays finite; e = 0 gives float32 subnormal outputs.
        e = rng.integers(0, 253, nb)
        e[:6] = [0, 1, 2, 127, 128, 252]
        blocks[:, 0] = e
    elif qtype == T.NVFP4:
        # four unsigned E4M3 sub-block scales (bit 7 unused); 0x7F is the NaN code, read as 0 by ggml
        sc = rng.integers(0, 0x80, (nb, 4))
        sc[0] = [0x00, 0x01, 0x7E, 0x7F]
        sc[1] = [0x08, 0x07, 0x38, 0x77]
        blocks[:, 0:4] = sc
    else:
        raise SystemExit(f"gen_quant_fixtures: {qtype.name} dequantizes in gguf-py but this script does not "
                         f"know where its scales are; add it to F16_FIELDS or random_blocks")
    return blocks


def check_scale_fields(qtype: T, blocks: np.ndarray) -> None:
    """Zeroing the fp16 fields named in F16_FIELDS must zero the output: guards the offsets above."""
    if qtype not in F16_FIELDS:
        return
    z = blocks.copy()
    for off in F16_FIELDS[qtype]:
        z[:, off:off + 2] = 0
    out = gguf.quants.dequantize(z.reshape(-1), qtype)
    if np.any(out != 0):
        raise SystemExit(f"gen_quant_fixtures: F16_FIELDS[{qtype.name}] = {F16_FIELDS[qtype]} does not hold "
                         f"every scale of the block (zeroing them left non-zero output)")


# ---- quantize inputs -------------------------------------------------------------------------------

def tie_blocks(qtype: T, blck: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Blocks whose scaled values land exactly on the quantizer's rounding boundaries.

    Each sets the extreme so that the scale d is a power of two (so x / d is exact) and fills the rest
    with half-integers (or the midpoints between grid values)."""
    out = []

    def halves(lo: int, hi: int, anchors: list[float], scale: float) -> np.ndarray:
        x = rng.integers(lo, hi + 1, blck).astype(np.float32) + np.float32(0.5)
        x[:len(anchors)] = anchors
        return (x * np.float32(scale)).astype(np.float32)

    for scale in (1.0, 2.0 ** -4):
        if qtype == T.Q4_0:    # d = max / -8 = 1: x + 8.5 is an integer
            out.append(halves(-8, 6, [-8.0], scale))
        elif qtype == T.Q4_1:  # min 0, max 15: d = 1
            out.append(halves(0, 14, [0.0, 15.0], scale))
        elif qtype == T.Q5_0:  # d = max / -16 = 1
            out.append(halves(-16, 14, [-16.0], scale))
        elif qtype == T.Q5_1:  # min 0, max 31: d = 1
            out.append(halves(0, 30, [0.0, 31.0], scale))
        elif qtype == T.Q8_0:  # amax 127: d = 1, x.5 rounds away from zero
            out.append(halves(-127, 126, [127.0], scale))
        elif qtype in (T.TQ1_0, T.TQ2_0):  # amax 2: x / 2 = +-0.5 rounds away from zero
            vals = np.array([1, -1, 2, -2, 0, 0.5, -0.5, 1.5, -1.5, 3, -3], dtype=np.float32) / np.float32(2)
            x = vals[rng.integers(0, len(vals), blck)] * np.float32(2)
            x[0] = 2.0
            out.append((x * np.float32(scale)).astype(np.float32))
        elif qtype == T.MXFP4:
            # amax 5: e = floor(log2 5) - 2 + 127 = 127, step d = 0.5; grid d * {0,1,2,3,4,6,8,12};
            # midpoints between neighbours are ties; argmin keeps the first (lowest index) on a tie.
            mids = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 0.5, 1.0, 2.0, 3.0, 4.0], dtype=np.float32)
            x = mids[rng.integers(0, len(mids), blck)] * np.where(rng.integers(0, 2, blck) == 1, -1, 1)
            x[0] = 5.0
            out.append((x * np.float32(scale)).astype(np.float32))
    return out


def edge_blocks(qtype: T, blck: int, rng: np.random.Generator) -> list[np.ndarray]:
    f = np.float32
    g = rng.standard_normal(blck).astype(f)
    blocks = [
        np.zeros(blck, f),
        np.full(blck, -0.0, f),
        np.full(blck, 0.7, f),
        np.full(blck, -3.25, f),
        np.where(np.arange(blck) == 5, f(1000.0), g).astype(f),   # one large outlier
        np.where(np.arange(blck) == 0, f(-1000.0), g).astype(f),  # negative outlier first
        -np.abs(rng.standard_normal(blck).astype(f)) * f(2),        # all negative
        np.abs(rng.standard_normal(blck).astype(f)) * f(2),         # all positive
        np.linspace(-1, 1, blck, dtype=f),
    ]
    # equal |max| with both signs: the first one decides the sign of d in Q4_0 / Q5_0
    for first in (4.0, -4.0):
        x = rng.standard_normal(blck).astype(f)
        x[3], x[9] = f(first), f(-first)
        blocks.append(x)
    if qtype == T.MXFP4:
        # amax just below a power of two: log2f rounds up to the integer for some (prev(16): 4.0), so
        # floor(log2f(amax)) differs from the float's exponent there; and an exact power of two
        for amax in (np.nextafter(f(16), f(0)), np.nextafter(f(1024), f(0)), np.nextafter(f(2), f(0)), f(8)):
            x = rng.uniform(-1, 1, blck).astype(f) * amax
            x[7] = amax
            blocks.append(x.astype(f))
        blocks.append((rng.standard_normal(blck) * 1e-30).astype(f))
        blocks.append((rng.standard_normal(blck) * 1e30).astype(f))
    return blocks


def quantize_inputs_blocks(qtype: T, rng: np.random.Generator) -> np.ndarray:
    blck, _ = GGML_QUANT_SIZES[qtype]
    per_mag = 6 if blck <= 32 else 2
    blocks = []
    for mag in (1e-6, 1e-3, 1.0, 30.0, 3000.0):
        for i in range(per_mag):
            if i % 2 == 0:
                x = rng.standard_normal(blck) * mag
            else:
                x = rng.uniform(-1, 1, blck) * mag
            blocks.append(x.astype(np.float32))
    blocks += edge_blocks(qtype, blck, rng)
    blocks += tie_blocks(qtype, blck, rng)
    return np.stack(blocks).astype(np.float32)


def quantize_inputs_plain(rng: np.random.Generator) -> np.ndarray:
    """Inputs for F32 / F16 / BF16: magnitudes across the F16 range (and past it), and the exact midpoints
    between neighbouring F16 and BF16 values, where round-to-nearest-even decides."""
    f = np.float32
    parts = [(rng.standard_normal(128) * m).astype(f) for m in (1e-7, 1e-5, 1e-2, 1.0, 300.0, 3e4)]
    # F16 midpoints: (h + next(h)) / 2 is exact in float32; normals and subnormals, both signs
    h = np.concatenate([rng.integers(0x0400, 0x7BFF, 96), rng.integers(0x0000, 0x03FF, 32)]).astype(np.uint16)
    lo = h.view(np.float16).astype(f)
    hi = (h + 1).astype(np.uint16).view(np.float16).astype(f)
    mid = (lo + hi) / f(2)
    parts.append(np.where(rng.integers(0, 2, mid.size) == 1, -mid, mid).astype(f))
    # BF16 midpoints: low 16 bits exactly 0x8000, and one either side of it
    top = rng.integers(0x0000, 0x7F7F, 96).astype(np.uint32) << 16
    low = np.array([0x8000, 0x7FFF, 0x8001], dtype=np.uint32)[rng.integers(0, 3, 96)]
    sign = rng.integers(0, 2, 96).astype(np.uint32) << 31
    parts.append((top | low | sign).astype("<u4").view(f))
    edges = [0.0, -0.0, 65504.0, 65519.0, 65520.0, -70000.0, 2.0 ** -24, 2.0 ** -25, -(2.0 ** -25) * 1.5,
             2.0 ** -14, 1e-30, -1e-45, 3.4028235e38, -3.4028235e38, 1.0, -1.0, 0.1, 1.0 / 3.0]
    parts.append(np.array(edges, dtype=f))
    return np.concatenate(parts).astype(f)


# ---- output ----------------------------------------------------------------------------------------

def header(kind: int, qtype: T, nblocks: int) -> bytes:
    blck, size = GGML_QUANT_SIZES[qtype]
    return MAGIC + struct.pack("<6I2Q", VERSION, kind, int(qtype), blck, size, HEADER_BYTES,
                               nblocks, nblocks * blck)


def make_dequant(qtype: T) -> bytes:
    blocks = random_blocks(qtype, rng_for(qtype, KIND_DEQUANT))
    check_scale_fields(qtype, blocks)
    raw = np.ascontiguousarray(blocks).reshape(-1)
    out = np.asarray(gguf.quants.dequantize(raw, qtype), dtype=np.float32).reshape(-1)
    blck, size = GGML_QUANT_SIZES[qtype]
    nblocks = raw.size // size
    assert out.size == nblocks * blck, (qtype.name, out.size)
    if not np.all(np.isfinite(out)):
        raise SystemExit(f"gen_quant_fixtures: {qtype.name}: gguf-py gave non-finite values for blocks meant "
                         f"to be well-formed")
    return header(KIND_DEQUANT, qtype, nblocks) + raw.tobytes() + out.astype("<f4").tobytes()


def make_quantize(qtype: T) -> bytes:
    rng = rng_for(qtype, KIND_QUANTIZE)
    blck, size = GGML_QUANT_SIZES[qtype]
    x = quantize_inputs_plain(rng) if blck == 1 else quantize_inputs_blocks(qtype, rng).reshape(-1)
    x = x.astype(np.float32)
    assert not np.any(np.isnan(x))
    with np.errstate(over="ignore"):  # F16 / BF16 inputs past the largest finite value round to inf
        q = np.asarray(gguf.quants.quantize(x, qtype))
    q = q.view(np.uint8).reshape(-1) if q.dtype != np.uint8 else q.reshape(-1)
    nblocks = x.size // blck
    assert q.size == nblocks * size, (qtype.name, q.size)
    return header(KIND_QUANTIZE, qtype, nblocks) + x.astype("<f4").tobytes() + q.tobytes()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    root = Path(__file__).resolve().parent.parent
    ap.add_argument("--out", type=Path, default=root / "tests" / "quant" / "fixtures")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    if sys.byteorder != "little":
        raise SystemExit("gen_quant_fixtures: the fixtures are little-endian; run on a little-endian host")
    gguf_version = getattr(gguf, "__version__", None)
    if gguf_version is None:
        from importlib.metadata import version
        gguf_version = version("gguf")

    rows, manifest, total = [], [], 0
    skipped = []
    for qtype in sorted(T, key=int):
        can_dq, can_q = supported(qtype)
        if not can_dq and not can_q:
            skipped.append(qtype.name)
            continue
        for kind, ok, make in ((KIND_DEQUANT, can_dq, make_dequant), (KIND_QUANTIZE, can_q, make_quantize)):
            if not ok:
                continue
            data = make(qtype)
            name = f"{qtype.name.lower()}.{KIND_NAMES[kind]}.bin"
            (args.out / name).write_bytes(data)
            nblocks, nvalues = struct.unpack_from("<2Q", data, 32)
            rows.append((qtype.name, int(qtype), KIND_NAMES[kind], nblocks, nvalues, len(data),
                         hashlib.sha256(data).hexdigest()[:12]))
            manifest.append(f"{name} {KIND_NAMES[kind]} {qtype.name}")
            total += len(data)

    # stale fixtures of types gguf-py no longer covers would otherwise linger unchecked
    listed = {line.split()[0] for line in manifest}
    for p in sorted(args.out.glob("*.bin")):
        if p.name not in listed:
            p.unlink()
    head = [f"# llm170 quant fixtures, format L170QFX1 v{VERSION}: made by scripts/gen_quant_fixtures.py",
            f"# with gguf {gguf_version}, numpy {np.__version__}, seed {SEED}. One line per file: file kind type."]
    (args.out / "MANIFEST").write_text("\n".join(head + manifest) + "\n")

    print(f"{'type':<8} {'id':>3} {'kind':<9} {'blocks':>6} {'values':>7} {'bytes':>7}  sha256")
    for r in rows:
        print(f"{r[0]:<8} {r[1]:>3} {r[2]:<9} {r[3]:>6} {r[4]:>7} {r[5]:>7}  {r[6]}")
    print(f"{len(rows)} fixtures, {total} bytes in {args.out}")
    print(f"gguf {gguf_version}, numpy {np.__version__}; not in gguf-py (no fixture): {', '.join(skipped)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
