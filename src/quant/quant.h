/* quant: the math of every ggml block format: dequantize to f32, reference quantize from f32, and the dot
 * product of a quantized weight row with a quantized activation row, in the pairing llama.cpp uses
 * (legacy types with Q8_0 / Q8_1, k-quants and IQ types with Q8_K, F16/BF16 with themselves... see
 * quant_ops.vec_dot_type).
 *
 * Each operation exists as a plain scalar reference (the oracle, written for clarity) and, where it pays,
 * as SIMD variants (AVX2, AVX-512, NEON) that are tested against the scalar one. `quant_ops_get` gives one
 * ISA's table (NULL members where that ISA has no variant); `quant_ops_best` gives the fastest available
 * on this CPU, filled in from the scalar table where a SIMD variant is missing.
 *
 * Conventions: n is the number of values (a multiple of the type's block size); x and y are arrays of
 * blocks; nothing here allocates. The scalar dequantizers are bit-exact with gguf-py's numpy dequantize. */
#ifndef LLM170_QUANT_QUANT_H
#define LLM170_QUANT_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant/qtype.h"

/* y[0..n) = dequantize(x) */
typedef void (*quant_to_float_fn)(const void *x, float *y, int64_t n);
/* y = quantize(x[0..n)), reference algorithm */
typedef void (*quant_from_float_fn)(const float *x, void *y, int64_t n);
/* *s = dot(x, y) over n values; x of the row's type, y of its vec_dot_type */
typedef void (*quant_vec_dot_fn)(int64_t n, float *s, const void *x, const void *y);

/* s[j] = dot(x, y_j) for the four activation rows y_j = (char *)y + j * ystride, each bit-identical to
 * vec_dot of the same ISA (it shares the weight block's unpacking across the four rows; prefill) */
typedef void (*quant_vec_dot4_fn)(int64_t n, float *s, const void *x, const void *y, size_t ystride);

/* s[j] = dot(x, y_j) for a span of nrows (1..QUANT_DOTN_MAX) activation rows y_j = (char *)y + j * ystride,
 * each bit-identical to vec_dot of the same ISA. Up to 8 rows (6 for Q6_K) share one pass over the weight
 * row, each block loaded and unpacked once for all of them; longer spans are split into even chunks (9 =
 * 5 + 4), the later ones reading the row again from L1. For spans that fit no fixed width: a speculative
 * verification of 2-9 tokens costs one or two weight passes at the multi-row rate, not one vec_dot per
 * token left over from vec_dot4 / vec_dot8 (simd_x86_span.h says why that matters). */
#define QUANT_DOTN_MAX 16
typedef void (*quant_vec_dotn_fn)(int64_t n, float *s, const void *x, const void *y, size_t ystride, int nrows);

/* Eight activation rows (row j at (char *)y + j * ystride, n values each, of the type whose table holds
 * this member) packed for vec_dot8p: per block, the eight rows' quants + 128 as unsigned bytes (32 per
 * row, row by row), then the eight block scales as floats. Unsigned activations let a VNNI dot product
 * take the weights' signed bytes directly (one vpdpbusd per row and block, no sign trick), and the scales
 * are converted once instead of once per weight row. dst: quant_pack8_bytes(n) bytes. */
typedef void (*quant_pack8_fn)(int64_t n, const void *y, size_t ystride, void *dst);
size_t quant_pack8_bytes(int64_t n);
/* s[j] = dot(x, row j of a pack8), each bit-identical to vec_dot of the same ISA: the same int32 lanes
 * (sum (q + 128) w - 128 sum w == sum q w, exact), the same float operations */
typedef void (*quant_vec_dot8p_fn)(int64_t n, float *s, const void *x, const void *pack);

/* The u8 form of a weight row, what the int8 matrix products of prefill (quant/gemm.h) consume:
 *     w[k] = S[j] * (float)(u[k] - off) - M[j],   j = k / sb,   u[k] in 0..255
 * written as u[n], S[n / sb] and, for types with mins, M[n / sb] (M untouched otherwise). The integers
 * u - off are the block's own quants, and S and M are formed as the dequantizer forms its scales, so
 * that expression in float reproduces to_float bit for bit (tests/quant/test_quant_u8.c). */
typedef void (*quant_to_u8_fn)(const void *x, uint8_t *u, float *S, float *M, int64_t n);

typedef struct quant_u8_form {
    quant_to_u8_fn to_u8; /* NULL: this type has no u8 form (its matmuls stay on vec_dot) */
    int sb;               /* values per sub-block sharing one S (and M): 16 or 32 */
    int off;              /* the offset subtracted from u: 0..128 */
    int umax;             /* the largest u this type's to_u8 writes (bounds the int8 products' int16 sums) */
    bool has_min;         /* M is present (x = d * q - m types); otherwise M == 0 */
} quant_u8_form;

typedef struct quant_ops {
    quant_to_float_fn to_float;     /* NULL: cannot dequantize this type */
    quant_from_float_fn from_float; /* NULL: no quantizer for this type */
    quant_vec_dot_fn vec_dot;       /* NULL: no dot product for this type */
    enum qtype vec_dot_type;        /* what activations are quantized to for vec_dot */
    quant_vec_dot4_fn vec_dot4;     /* NULL: none (callers loop vec_dot) */
    quant_vec_dot4_fn vec_dot8;     /* the same for EIGHT rows y_j; NULL: none */
    quant_vec_dotn_fn vec_dotn;     /* the same for any 1..QUANT_DOTN_MAX rows; NULL: none */
    quant_u8_form u8;               /* sb/off/has_min from the scalar table; to_u8 per ISA */
    quant_vec_dot8p_fn vec_dot8p;   /* eight packed rows (the activation type's pack8); NULL: none */
    quant_pack8_fn pack8;           /* activation types: packs eight rows for vec_dot8p; NULL: none */
} quant_ops;

enum quant_isa { QUANT_ISA_SCALAR, QUANT_ISA_AVX2, QUANT_ISA_AVX512, QUANT_ISA_NEON, QUANT_ISA_COUNT };

/* "scalar", "avx2", "avx512", "neon" */
const char *quant_isa_name(enum quant_isa isa);

/* Whether this build has the ISA's code and this CPU can run it. */
bool quant_isa_available(enum quant_isa isa);

/* The best available ISA on this CPU. */
enum quant_isa quant_isa_best(void);

/* One ISA's table for type t; NULL if t is unknown or the ISA is unavailable. Members are NULL where the
 * ISA has no variant. */
const quant_ops *quant_ops_get(enum qtype t, enum quant_isa isa);

/* The fastest available operations for t (SIMD where present, else scalar); all-NULL for unknown t. */
quant_ops quant_ops_best(enum qtype t);

/* Fills nblocks blocks of type t with random but well-formed content (finite scales of a sane magnitude,
 * about `scale` per value), fast enough for synthesising multi-GB weights. Returns false if t has no
 * generator. */
struct rng;
bool quant_random_blocks(enum qtype t, void *dst, int64_t nblocks, float scale, struct rng *r);

#endif
