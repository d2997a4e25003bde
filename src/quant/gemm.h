/* gemm: int8 matrix products of quantized weights with quantized activations, for prefill.
 *
 * A matrix-vector product (decode) is bound by streaming the weights, and the row-by-row vec_dot kernels
 * are right for it. Prefill multiplies every weight row by hundreds of tokens: there the work is the
 * multiply-adds, and the vec_dot kernels spend most of it unpacking blocks and reducing vectors
 * horizontally. This module instead unpacks a panel of GEMM_PANEL weight rows once into their u8 form
 * (quant.h: w = S * (u - off) - M per sub-block of sb values), interleaved so that one vpdpbusd
 * multiplies 16 rows x 4 consecutive values by one token's 4 activation bytes (broadcast) and adds into
 * 16 int32 lanes, one per row: 64 multiply-adds per instruction, no horizontal sums. Every token of the
 * batch then reuses the unpacked panel from L1/L2. Kernels: AVX-512 VNNI (gemm_avx512.c, the vpdpbusd
 * above) and AVX2 (gemm_avx2.c: vpmaddubsw over 8 rows x 4 values into int16 pair sums, kept exact by
 * the type's u range; it takes every type with a u8 form as well).
 *
 * Shapes: K values per row (a multiple of 256 for k-quant types, of 32 otherwise), a panel of up to
 * GEMM_PANEL rows (rows past the weight's end are zero), T tokens.
 *
 * Panel layout (gemm_panel):
 *   u[K/4][GEMM_PANEL][4]   bytes: step s (values 4s..4s+3) of row r at u + GEMM_PANEL*4*s + 4*r
 *   S[K/sb][GEMM_PANEL]     the sub-block scales, row-contiguous per sub-block
 *   M[K/sb][GEMM_PANEL]     the mins (types with mins only)
 * Activations (gemm_acts, one entry per token, made from the rows quantized to the weight type's
 * vec_dot_type, so the integer products are exactly those of vec_dot):
 *   q[T][K]        int8 quants, contiguous
 *   xo[T][K/sb]    -off * (sum of q over sub-block j), int32
 *   xm[T][K/sb]    (float)(sum of q over sub-block j) * a of its activation block (for the mins)
 *   a[T][K/(sb*ag)] the activation block scales; ag = sub-blocks per activation block (Q8_0: 32/sb,
 *                   Q8_K: 256/sb)
 *
 * The result, defined operation by operation (the scalar reference and every SIMD kernel perform
 * exactly these float operations, so they agree bit for bit; tests/quant/test_gemm.c checks it):
 *   acc = 0
 *   for each activation block g:
 *       blk = 0
 *       for each sub-block j of g:
 *           i   = xo[j] + sum_{k in j} u[k] * q[k]            int32, exact (= sum (u - off) * q)
 *           blk = fma((float)i, S[j], blk)
 *       acc = fma(blk, a[g], acc)
 *   if has_min: for each sub-block j: acc = fma(-M[j], xm[j], acc)
 *   y = acc
 * (The mins get a pass of their own so that the main loop keeps fewer registers live.)
 * The integer sums are vec_dot's; the float combination differs from vec_dot's, by a few ulps of the
 * terms. A token's result does not depend on the other tokens of the batch or on its place in it. */
#ifndef LLM170_QUANT_GEMM_H
#define LLM170_QUANT_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant/quant.h"

#define GEMM_PANEL 32 /* rows per panel: two groups of 16 int32 lanes */

typedef struct gemm_panel {
    int64_t K;
    int sb;
    int nrows;    /* valid rows (<= GEMM_PANEL); the rest are zero */
    bool has_min;
    int off, umax; /* the type's u8 offset and largest u (quant.h): the AVX2 kernel's method depends on them */
    uint8_t *u;   /* [K/4][GEMM_PANEL][4], 64-byte aligned */
    float *S, *M; /* [K/sb][GEMM_PANEL] each, 64-byte aligned */
} gemm_panel;

typedef struct gemm_acts {
    int64_t K;
    int sb, ag;
    const int8_t *q;   /* [T][K] */
    const int32_t *xo; /* [T][K/sb] */
    const float *xm;   /* [T][K/sb] */
    const float *a;    /* [T][K/(sb*ag)] */
} gemm_acts;

/* One token's arrays in a gemm_acts (what a kernel's register tile reads). */
typedef struct gemm_token {
    const int8_t *q;   /* [K] */
    const int32_t *xo; /* [K/sb] */
    const float *xm;   /* [K/sb] */
    const float *a;    /* [K/(sb*ag)] */
} gemm_token;

static inline gemm_token gemm_acts_token(const gemm_acts *x, int t) {
    const int64_t nsb = x->K / x->sb;
    return (gemm_token){.q = x->q + (size_t)t * (size_t)x->K, .xo = x->xo + (size_t)t * (size_t)nsb,
                        .xm = x->xm + (size_t)t * (size_t)nsb, .a = x->a + (size_t)t * (size_t)(nsb / x->ag)};
}

/* Whether the int8 products can run for weights of type t on this CPU: gemm_run_best(t) is not NULL. */
bool gemm_supported(enum qtype t);

/* Bytes of one panel's buffers for K values (for the caller's per-thread scratch). */
size_t gemm_panel_bytes(int64_t K, int sb);

/* Lays a panel's arrays over buf (64-byte aligned, gemm_panel_bytes(K, sb) bytes). */
void gemm_panel_init(gemm_panel *p, void *buf, int64_t K, int sb, bool has_min);

/* Unpacks rows [0, nrows) (nrows <= GEMM_PANEL) of a weight, row r at (const char *)rows + r * row_bytes,
 * into p. tmp: gemm_pack_scratch_bytes(K, sb) bytes. */
void gemm_pack(const quant_ops *ops, const void *rows, size_t row_bytes, int nrows, gemm_panel *p, void *tmp);
size_t gemm_pack_scratch_bytes(int64_t K, int sb);

/* Bytes of the activation arrays for T tokens. */
size_t gemm_acts_bytes(int64_t K, int sb, int ag, int T);

/* Sub-blocks per activation block for activations of type act (Q8_0, Q8_1: 32/sb; Q8_K: 256/sb). */
int gemm_act_group(enum qtype act, int sb);

/* Lays the arrays of T tokens over buf (64-byte aligned, gemm_acts_bytes bytes) for activations of type
 * act (Q8_0, Q8_1 or Q8_K). */
void gemm_acts_layout(gemm_acts *a, void *buf, enum qtype act, int64_t K, int sb, int T);

/* Fills entries [i0, i1) of a from the quantized activation rows at (const char *)xq + rows[i] * xrow.
 * off: the weight type's u8 offset. Entries are independent (threads may fill disjoint ranges). */
void gemm_acts_fill_rows(gemm_acts *a, enum qtype act, const void *xq, size_t xrow, const int32_t *rows, int i0,
                         int i1, int off);

/* y[rows[i] * ldy + r] = the product of panel row r with token i, for i in [t0, t1), r < p->nrows. */
typedef void (*gemm_run_fn)(const gemm_panel *p, const gemm_acts *x, int t0, int t1, const int32_t *rows,
                            float *y, int64_t ldy);

/* The plain-C reference (the oracle of the SIMD kernels). */
void gemm_run_ref(const gemm_panel *p, const gemm_acts *x, int t0, int t1, const int32_t *rows, float *y,
                  int64_t ldy);

/* The SIMD kernel of one ISA (AVX-512 VNNI: gemm_avx512.c; AVX2: gemm_avx2.c) for weights of type t; NULL
 * where this build or CPU lacks it, t has no u8 form, t's activation type is not Q8_0, Q8_1 or Q8_K, or
 * the kernel has no exact method for t's u8 range (AVX2: u up to 127, or off 128 without mins). Tests
 * check every one this CPU runs against the reference. */
gemm_run_fn gemm_run_isa(enum quant_isa isa, enum qtype t);

/* The fastest kernel on this CPU for weights of type t (NULL if none: callers use vec_dot). */
gemm_run_fn gemm_run_best(enum qtype t);

#endif
