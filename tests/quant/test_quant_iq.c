/* The scalar references of the iquants family (src/quant/iq1.c, iq2.c, iq3.c, tq.c, fp4.c, q1_0.c):
 *   1. registration: to_float and vec_dot for each of the 12 types, paired with the activation type
 *      llama.cpp uses (Q8_K for the 256-value types, Q8_0 for MXFP4, NVFP4, Q1_0); from_float for TQ1_0,
 *      TQ2_0, MXFP4, NVFP4, Q1_0;
 *   2. tables (src/quant/iq_tables.c, iq_tables_iq1.c): sizes, value sets, distinct rows, sign parity, and a few entries
 *      compared with llama.cpp's ggml-common.h (as the little-endian integers it stores);
 *   3. random well-formed blocks -> to_float gives finite values equal to a second decoder written here
 *      from the format description (its own sign parity, base-3 and E4M3/E8M0 decoding), and the sign
 *      patterns of the ksigns types have even parity;
 *   4. vec_dot equals the double dot of dequant(x) and dequant(y): |err| <= 1e-5 * sum |x_i * y_i|
 *      (only float accumulation differs from the exact sum), with y (a) hand-made Q8_K / Q8_0 blocks and
 *      (b) floats quantized by the Q8_K / Q8_0 from_float; also over one block (a SIMD tail);
 *   5. from_float: exact round trips of inputs the format can hold, idempotence of TQ1_0/TQ2_0/Q1_0, and
 *      the round-trip error of normal data under a bound (measured value printed).
 *   6. hand-made facts of the quantizers: ties, signed zeros, the E4M3 scale rounding.
 * Bit-exactness against gguf-py is test_quant_gguf_py.c's job (committed fixtures). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/fp16.h"
#include "base/rng.h"
#include "check.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/quant.h"

#define N 4096 /* values per test row: 16 super-blocks */

static const enum qtype types[] = {QT_IQ1_S,  QT_IQ1_M, QT_IQ2_XXS, QT_IQ2_XS, QT_IQ2_S, QT_IQ3_XXS,
                                   QT_IQ3_S,  QT_TQ1_0, QT_TQ2_0,   QT_MXFP4,  QT_NVFP4, QT_Q1_0};
#define NTYPES (int)(sizeof types / sizeof types[0])

static const quant_ops *ops_of(enum qtype t) { return quant_ops_get(t, QUANT_ISA_SCALAR); }
static const char *tname(enum qtype t) { return qtype_get((uint32_t)t)->name; }
static int64_t blck(enum qtype t) { return qtype_get((uint32_t)t)->blck; }
static size_t tsize(enum qtype t) { return qtype_get((uint32_t)t)->type_size; }

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static int parity7(unsigned b) { return __builtin_popcount(b & 127) & 1; }
static float e2m1x2(unsigned code) { /* E2M1 value doubled, from the OCP table */
    static const float mag[8] = {0, 1, 2, 3, 4, 6, 8, 12};
    return code & 8 ? -mag[code & 7] : mag[code & 7];
}
static float ue4m3(uint8_t u) { /* unsigned E4M3, bias 7; 0x7F (NaN) reads as 0 as in ggml */
    if (u == 0x7F) return 0.0f;
    const int e = (u >> 3) & 15, m = u & 7;
    return e == 0 ? ldexpf((float)m, -9) : ldexpf(1.0f + (float)m / 8.0f, e - 7);
}

/* ---- random well-formed blocks: random payload bytes, sane scales ---- */

/* edges: also draw MXFP4's extreme exponents (to_float only: their dot products overflow float) */
static void random_blocks(enum qtype t, uint8_t *b, int64_t nb, bool edges, rng *r) {
    const size_t ts = tsize(t);
    for (size_t i = 0; i < (size_t)nb * ts; i++) b[i] = (uint8_t)rng_u64(r);
    for (int64_t i = 0; i < nb; i++, b += ts) {
        const uint16_t d = fp16_from_f32(rng_uniform(r, 0.5f, 2.0f) * 0.01f);
        switch (t) {
        case QT_TQ1_0: wr16(b + offsetof(block_tq1_0, d), d); break;
        case QT_TQ2_0: /* 2-bit fields hold t in 0..2; 3 is not ternary */
            for (int j = 0; j < QK_K / 4; j++)
                for (int f = 0; f < 8; f += 2)
                    if (((b[j] >> f) & 3) == 3) b[j] = (uint8_t)(b[j] & ~(3 << f)) | (uint8_t)((rng_u64(r) % 3) << f);
            wr16(b + offsetof(block_tq2_0, d), d);
            break;
        case QT_MXFP4: { /* one block in 4 takes an edge exponent: the subnormal scales 0, 1, or the top */
            static const uint8_t edge[] = {0, 1, 2, 3, 251, 252}; /* 253 and up overflow 12 * scale */
            b[0] = !edges || rng_u64(r) % 4 ? (uint8_t)(118 + rng_u64(r) % 13) : edge[rng_u64(r) % 6];
            break;
        }
        case QT_NVFP4: for (int s = 0; s < 4; s++) b[s] = (uint8_t)(rng_u64(r) % 0x80); break;
        case QT_IQ1_M: /* d spread over the top nibbles of the 4 uint16 scales */
            for (int k = 0; k < 4; k++) {
                uint8_t *sc = b + offsetof(block_iq1_m, scales) + 2 * k;
                wr16(sc, (uint16_t)((rd16(sc) & 0x0FFF) | ((d >> (4 * k)) & 15) << 12));
            }
            break;
        default: wr16(b, d); break; /* every other type starts with its fp16 d */
        }
    }
}

/* ---- a second decoder, value v of one block, written from the format description ---- */

/* sign of value j (0..7) of a group whose 7 stored sign bits are s7; the 8th makes the parity even */
static float sign7(unsigned s7, int j) { return ((j < 7 ? s7 >> j : (unsigned)parity7(s7)) & 1) ? -1.0f : 1.0f; }

static float expect_value(enum qtype t, const uint8_t *b, int v) {
    const int j8 = v % 8, ib = v / 32, k = v / 8;
    const float d = fp16_to_f32(rd16(b));
    switch (t) {
    case QT_IQ2_XXS: {
        const uint32_t idx = rd32(b + 2 + 8 * ib), aux = rd32(b + 6 + 8 * ib);
        const int l = (v % 32) / 8;
        const float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
        return sign7(aux >> (7 * l), j8) * db * quant_iq2xxs_grid[(idx >> (8 * l)) & 255][j8];
    }
    case QT_IQ2_XS: {
        const uint16_t q = rd16(b + 2 + 2 * k);
        const unsigned s = (b[2 + 64 + k / 4] >> (4 * ((k / 2) & 1))) & 15;
        return sign7(q >> 9, j8) * d * (0.5f + (float)s) * 0.25f * quant_iq2xs_grid[q & 511][j8];
    }
    case QT_IQ2_S: { /* d, qs[32], signs[32], qh[8], scales[8] */
        const unsigned idx = b[2 + k] | ((b[66 + k / 4] >> (2 * (k % 4))) & 3) << 8;
        const unsigned s = (b[74 + k / 4] >> (4 * ((k / 2) & 1))) & 15;
        const float sg = (b[34 + k] >> j8) & 1 ? -1.0f : 1.0f;
        return sg * d * (0.5f + (float)s) * 0.25f * quant_iq2s_grid[idx][j8];
    }
    case QT_IQ3_XXS: { /* d, qs[64] grid indices, 8 x uint32 signs + scale */
        const uint32_t aux = rd32(b + 66 + 4 * ib);
        const int l = (v % 32) / 8;
        const float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
        return sign7(aux >> (7 * l), j8) * db * quant_iq3xxs_grid[b[2 + v / 4]][v % 4];
    }
    case QT_IQ3_S: { /* d, qs[64], qh[8], signs[32], scales[4] */
        const int g = v / 4;
        const unsigned idx = b[2 + g] | ((b[66 + g / 8] >> (g % 8)) & 1) << 8;
        const unsigned s = (b[106 + ib / 2] >> (4 * (ib & 1))) & 15;
        const float sg = (b[74 + v / 8] >> (v % 8)) & 1 ? -1.0f : 1.0f;
        return sg * d * (float)(1 + 2 * s) * quant_iq3s_grid[idx][v % 4];
    }
    case QT_IQ1_S: { /* d, qs[32], qh[8] x uint16 */
        const uint16_t qh = rd16(b + 34 + 2 * ib);
        const int l = (v % 32) / 8;
        const unsigned idx = b[2 + 4 * ib + l] | ((qh >> (3 * l)) & 7) << 8;
        const float delta = qh & 0x8000 ? -0.125f : 0.125f;
        return d * (float)(2 * ((qh >> 12) & 7) + 1) * ((float)quant_iq1s_grid[idx][j8] + delta);
    }
    case QT_IQ1_M: { /* qs[32], qh[16], scales[4] x uint16 with d in their top nibbles */
        uint16_t h = 0;
        for (int q = 0; q < 4; q++) h |= (uint16_t)((rd16(b + 48 + 2 * q) >> 12) << (4 * q));
        const unsigned nib = (b[32 + k / 2] >> (4 * (k % 2))) & 15, m = (unsigned)k / 2;
        const unsigned s = (rd16(b + 48 + 2 * (m / 4)) >> (3 * (m % 4))) & 7;
        const float delta = nib & 8 ? -0.125f : 0.125f;
        return fp16_to_f32(h) * (float)(2 * s + 1) * ((float)quant_iq1s_grid[b[k] | (nib & 7) << 8][j8] + delta);
    }
    case QT_TQ2_0: {
        const int c = v / 128, l = (v % 128) / 32, m = v % 32;
        return fp16_to_f32(rd16(b + 64)) * (float)(((b[32 * c + m] >> (2 * l)) & 3) - 1);
    }
    case QT_TQ1_0: { /* byte = ceil(V * 256 / 243), V = base-3 digits, most significant first */
        int byte, l, ndig = 5;
        if (v < 160) byte = v % 32, l = v / 32;
        else if (v < 240) byte = 32 + (v - 160) % 16, l = (v - 160) / 16;
        else byte = 48 + (v - 240) % 4, l = (v - 240) / 4;
        const int V = (b[byte] * 243) >> 8;
        int p = 1;
        for (int q = l + 1; q < ndig; q++) p *= 3;
        return fp16_to_f32(rd16(b + 52)) * (float)((V / p) % 3 - 1);
    }
    case QT_MXFP4: {
        const unsigned code = v < 16 ? b[1 + v] & 15 : b[1 + v - 16] >> 4;
        return ldexpf(1.0f, b[0] - 128) * e2m1x2(code);
    }
    case QT_NVFP4: {
        const int s = v / 16, j = v % 16;
        const uint8_t q = b[4 + 8 * s + j % 8];
        return 0.5f * ue4m3(b[s]) * e2m1x2(j < 8 ? q & 15 : q >> 4);
    }
    case QT_Q1_0: return (b[2 + v / 8] >> (v % 8)) & 1 ? d : -d;
    default: return NAN;
    }
}

/* ---- 1. registration ---- */

static void test_registration(void) {
    for (int i = 0; i < NTYPES; i++) {
        const enum qtype t = types[i];
        const quant_ops *o = ops_of(t);
        CHECKF(o && o->to_float && o->vec_dot, "%s: to_float or vec_dot missing", tname(t));
        if (!o) continue;
        const enum qtype want = (t == QT_MXFP4 || t == QT_NVFP4 || t == QT_Q1_0) ? QT_Q8_0 : QT_Q8_K;
        CHECKF(o->vec_dot_type == want, "%s: vec_dot_type %d, expected %s", tname(t), o->vec_dot_type, tname(want));
        const bool has_q = t == QT_TQ1_0 || t == QT_TQ2_0 || t == QT_MXFP4 || t == QT_NVFP4 || t == QT_Q1_0;
        CHECKF((o->from_float != NULL) == has_q, "%s: from_float %s", tname(t), has_q ? "missing" : "unexpected");
    }
}

/* ---- 2. tables ---- */

static int rows_distinct(const uint8_t *g, int rows, int k) {
    int dup = 0;
    for (int a = 0; a < rows; a++)
        for (int c = a + 1; c < rows; c++) dup += memcmp(g + a * k, g + c * k, (size_t)k) == 0;
    return dup;
}

static int values_outside(const uint8_t *g, int count, const int *allowed, int na) {
    int bad = 0;
    for (int i = 0; i < count; i++) {
        int ok = 0;
        for (int a = 0; a < na; a++) ok |= (int)(int8_t)g[i] == allowed[a] || g[i] == allowed[a];
        bad += !ok;
    }
    return bad;
}

static uint64_t row_as_u64(const uint8_t *row, int k) {
    uint64_t v = 0;
    for (int j = k - 1; j >= 0; j--) v = v << 8 | row[j];
    return v;
}

static void test_tables(void) {
    static const int v2[] = {8, 25, 43}, v3x[] = {4, 12, 20, 28, 36, 44, 52, 62}, v3s[] = {1, 3, 5, 7, 9, 11, 13, 15},
                     v1[] = {-1, 0, 1};
    struct { const char *name; const uint8_t *g; int rows, k; const int *allowed; int na; } g[] = {
        {"iq2xxs", &quant_iq2xxs_grid[0][0], 256, 8, v2, 3}, {"iq2xs", &quant_iq2xs_grid[0][0], 512, 8, v2, 3},
        {"iq2s", &quant_iq2s_grid[0][0], 1024, 8, v2, 3},    {"iq3xxs", &quant_iq3xxs_grid[0][0], 256, 4, v3x, 8},
        {"iq3s", &quant_iq3s_grid[0][0], 512, 4, v3s, 8},    {"iq1s", (const uint8_t *)&quant_iq1s_grid[0][0], 2048, 8, v1, 3},
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        CHECKF(values_outside(g[i].g, g[i].rows * g[i].k, g[i].allowed, g[i].na) == 0, "%s grid: values outside the set", g[i].name);
        CHECKF(rows_distinct(g[i].g, g[i].rows, g[i].k) == 0, "%s grid: repeated rows", g[i].name);
    }
    /* entries as llama.cpp's ggml-common.h stores them (little-endian integers) */
    struct { const char *name; const uint8_t *row; int k; uint64_t want; } e[] = {
        {"iq2xxs[1]", quant_iq2xxs_grid[1], 8, 0x080808080808082bull},
        {"iq2xxs[200]", quant_iq2xxs_grid[200], 8, 0x192b081908080808ull},
        {"iq2xs[300]", quant_iq2xs_grid[300], 8, 0x1908190808191908ull},
        {"iq2xs[511]", quant_iq2xs_grid[511], 8, 0x2b2b2b2b2b2b2b2bull},
        {"iq2s[777]", quant_iq2s_grid[777], 8, 0x192b081908082b08ull},
        {"iq3xxs[100]", quant_iq3xxs_grid[100], 4, 0x14040c1cull},
        {"iq3xxs[255]", quant_iq3xxs_grid[255], 4, 0x3e341c04ull},
        {"iq3s[333]", quant_iq3s_grid[333], 4, 0x070b0301ull},
        {"iq1s[5]", (const uint8_t *)quant_iq1s_grid[5], 8, 0xffffffffff00ff00ull},
        {"iq1s[1234]", (const uint8_t *)quant_iq1s_grid[1234], 8, 0x0001ff00ff01ff01ull},
        {"iq1s[2047]", (const uint8_t *)quant_iq1s_grid[2047], 8, 0x0101010101010101ull},
    };
    for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
        CHECKF(row_as_u64(e[i].row, e[i].k) == e[i].want, "%s = %#llx, llama.cpp has %#llx", e[i].name,
               (unsigned long long)row_as_u64(e[i].row, e[i].k), (unsigned long long)e[i].want);
    int bad = 0;
    for (int i = 0; i < 128; i++)
        bad += quant_ksigns_iq2xs[i] != (uint8_t)(i | parity7((unsigned)i) << 7);
    CHECKF(bad == 0, "ksigns: %d entries are not (7 bits | even-parity bit 7)", bad);
    for (int j = 0; j < 8; j++) CHECK(quant_kmask_iq2xs[j] == 1u << j);
    for (unsigned c = 0; c < 16; c++) CHECK(quant_kvalues_mxfp4[c] == (int)e2m1x2(c));
}

/* ---- 3. to_float of random blocks ---- */

static bool has_parity_signs(enum qtype t) { return t == QT_IQ2_XXS || t == QT_IQ2_XS || t == QT_IQ3_XXS; }

static void test_to_float(enum qtype t, rng *r) {
    const int64_t nb = N / blck(t);
    uint8_t *q = malloc((size_t)nb * tsize(t));
    float *y = malloc(N * sizeof(float));
    random_blocks(t, q, nb, true, r);
    ops_of(t)->to_float(q, y, N);
    int nonfinite = 0, wrong = 0, odd = 0, first = -1;
    for (int64_t i = 0; i < N; i++) {
        const uint8_t *b = q + (size_t)(i / blck(t)) * tsize(t);
        const float want = expect_value(t, b, (int)(i % blck(t)));
        nonfinite += !isfinite(y[i]);
        if (!(fabsf(y[i] - want) <= 1e-6f * fabsf(want))) {
            if (first < 0) first = (int)i;
            wrong++;
        }
    }
    if (t == QT_TQ1_0 || t == QT_TQ2_0 || t == QT_Q1_0) { /* only -d, d (and 0 for the ternary types) */
        int seen[3] = {0, 0, 0}, other = 0;
        for (int64_t i = 0; i < N; i++) {
            const uint8_t *b = q + (size_t)(i / blck(t)) * tsize(t);
            const float d = fp16_to_f32(rd16(b + (t == QT_TQ1_0 ? 52 : t == QT_TQ2_0 ? 64 : 0)));
            if (y[i] == -d) seen[0]++;
            else if (y[i] == 0.0f && t != QT_Q1_0) seen[1]++;
            else if (y[i] == d) seen[2]++;
            else other++;
        }
        CHECKF(other == 0 && seen[0] && seen[2] && (seen[1] || t == QT_Q1_0),
               "%s: values -d/0/+d seen %d/%d/%d times, %d others", tname(t), seen[0], seen[1], seen[2], other);
    }
    if (has_parity_signs(t))
        for (int64_t g = 0; g < N / 8; g++) {
            int neg = 0;
            for (int j = 0; j < 8; j++) neg += y[8 * g + j] < 0;
            odd += neg & 1;
        }
    printf("  %-7s to_float: %d values, %d non-finite, %d differ from the format decoder\n", tname(t), N, nonfinite, wrong);
    CHECKF(nonfinite == 0, "%s: %d non-finite values from well-formed blocks", tname(t), nonfinite);
    CHECKF(wrong == 0, "%s: %d values differ, first at %d: got %.9g, expected %.9g", tname(t), wrong, first,
           first >= 0 ? y[first] : 0.0, first >= 0 ? expect_value(t, q + (size_t)(first / blck(t)) * tsize(t), (int)(first % blck(t))) : 0.0);
    CHECKF(odd == 0, "%s: %d groups of 8 with an odd number of negative values", tname(t), odd);
    free(q), free(y);
}

/* ---- 4. vec_dot ---- */

/* Hand-made activation blocks (not from the Q8 quantizers): random int8, random scale; and their floats. */
static void *handmade_q8(enum qtype vt, float *yf, rng *r) {
    if (vt == QT_Q8_K) {
        block_q8_K *y = calloc(N / QK_K, sizeof *y);
        for (int i = 0; i < N / QK_K; i++) {
            y[i].d = rng_uniform(r, 0.005f, 0.02f);
            for (int j = 0; j < QK_K; j++) {
                y[i].qs[j] = (int8_t)((int)(rng_u64(r) % 255) - 127);
                y[i].bsums[j / 16] = (int16_t)(y[i].bsums[j / 16] + y[i].qs[j]);
                yf[i * QK_K + j] = y[i].d * y[i].qs[j];
            }
        }
        return y;
    }
    block_q8_0 *y = calloc(N / QK8_0, sizeof *y);
    for (int i = 0; i < N / QK8_0; i++) {
        y[i].d = fp16_from_f32(rng_uniform(r, 0.005f, 0.02f));
        for (int j = 0; j < QK8_0; j++) {
            y[i].qs[j] = (int8_t)((int)(rng_u64(r) % 255) - 127);
            yf[i * QK8_0 + j] = fp16_to_f32(y[i].d) * y[i].qs[j];
        }
    }
    return y;
}

static void check_dot(enum qtype t, const char *what, const void *qx, const float *xf, const void *qy, const float *yf, int64_t n) {
    double ref = 0, mag = 0;
    for (int64_t i = 0; i < n; i++) {
        ref += (double)xf[i] * yf[i];
        mag += fabs((double)xf[i] * yf[i]);
    }
    float got = NAN;
    ops_of(t)->vec_dot(n, &got, qx, qy);
    const double err = fabs(got - ref) / mag;
    if (n == N) printf("  %-7s vec_dot (%s y): error %.2e of sum|xy| (tol 1e-05)\n", tname(t), what, err);
    CHECKF(err <= 1e-5, "%s x %s (%s y, n = %lld): vec_dot %.9g, float dot %.9g: error %.3g of sum|xy|", tname(t),
           tname(ops_of(t)->vec_dot_type), what, (long long)n, got, ref, err);
}

static void test_vec_dot(enum qtype t, rng *r) {
    const quant_ops *o = ops_of(t);
    const enum qtype vt = o->vec_dot_type;
    const int64_t nb = N / blck(t);
    uint8_t *qx = malloc((size_t)nb * tsize(t));
    float *xf = malloc(N * sizeof(float)), *yf = malloc(N * sizeof(float)), *a = malloc(N * sizeof(float));
    random_blocks(t, qx, nb, false, r);
    o->to_float(qx, xf, N);

    void *qy = handmade_q8(vt, yf, r);
    check_dot(t, "hand-made", qx, xf, qy, yf, N);
    check_dot(t, "hand-made", qx, xf, qy, yf, blck(t) > QK_K ? blck(t) : QK_K); /* one block (or one Q8_K) */
    free(qy);

    const quant_ops *ov = ops_of(vt);
    CHECKF(ov && ov->from_float && ov->to_float, "%s: %s has no from_float/to_float yet (legacy.c / kquants.c): "
           "cannot test vec_dot on quantized activations", tname(t), tname(vt));
    if (ov && ov->from_float && ov->to_float) {
        for (int i = 0; i < N; i++) a[i] = rng_normal(r);
        qy = calloc(1, qtype_row_bytes(vt, N));
        ov->from_float(a, qy, N);
        ov->to_float(qy, yf, N);
        check_dot(t, "quantized", qx, xf, qy, yf, N);
        free(qy);
    }
    free(qx), free(xf), free(yf), free(a);
}

/* ---- 5. from_float ---- */

static void *quantize(enum qtype t, const float *x, int64_t n) {
    void *q = calloc(1, qtype_row_bytes(t, n));
    ops_of(t)->from_float(x, q, n);
    return q;
}

/* Inputs each format holds exactly, so quantize -> dequantize must give them back bit for bit. */
static void exact_input(enum qtype t, float *x, rng *r) {
    const int64_t b = blck(t);
    for (int64_t i0 = 0; i0 < N; i0 += b) {
        float *xb = x + i0;
        if (t == QT_TQ1_0 || t == QT_TQ2_0 || t == QT_Q1_0) {
            const float a = fp16_to_f32(fp16_from_f32(rng_uniform(r, 0.1f, 4.0f)));
            for (int64_t j = 0; j < b; j++) {
                const int c = t == QT_Q1_0 ? (int)(rng_u64(r) % 2) * 2 - 1 : (int)(rng_u64(r) % 3) - 1;
                xb[j] = (float)c * a;
            }
            xb[rng_u64(r) % b] = a; /* the maximum is present */
        } else { /* MXFP4 (one scale per 32) and NVFP4 (per 16): codes times the scale, a +-12 code present */
            const int sub = t == QT_MXFP4 ? 32 : 16;
            for (int s = 0; s < b / sub; s++) {
                /* NVFP4 scales below exponent 15: the reference encoder sends every scale >= 256 to 0x7E */
                const float d = t == QT_MXFP4 ? ldexpf(1.0f, (int)(rng_u64(r) % 20) - 10)
                                              : 0.5f * ue4m3((uint8_t)(1 + rng_u64(r) % 0x77));
                for (int j = 0; j < sub; j++) xb[s * sub + j] = d * e2m1x2((unsigned)(rng_u64(r) % 16));
                xb[s * sub + (int)(rng_u64(r) % sub)] = d * e2m1x2(rng_u64(r) % 2 ? 7 : 15);
            }
        }
    }
}

static void test_from_float(enum qtype t, double rmse_bound, rng *r) {
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    exact_input(t, x, r);
    void *q = quantize(t, x, N);
    ops_of(t)->to_float(q, y, N);
    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += x[i] != y[i];
    CHECKF(wrong == 0, "%s: %d representable values did not survive quantize -> dequantize", tname(t), wrong);
    if (t == QT_TQ1_0 || t == QT_TQ2_0 || t == QT_Q1_0) { /* dequantized data quantizes to the same bytes */
        void *q2 = quantize(t, y, N);
        CHECKF(memcmp(q, q2, qtype_row_bytes(t, N)) == 0, "%s: quantize(dequantize(q)) != q", tname(t));
        free(q2);
    }
    free(q);

    double e = 0, s = 0;
    for (int i = 0; i < N; i++) x[i] = rng_normal(r);
    q = quantize(t, x, N);
    ops_of(t)->to_float(q, y, N);
    for (int i = 0; i < N; i++) e += ((double)x[i] - y[i]) * ((double)x[i] - y[i]), s += (double)x[i] * x[i];
    const double rel = sqrt(e / s);
    printf("  %-7s round trip of N(0,1): rmse/rms %.4f (bound %.3f)\n", tname(t), rel, rmse_bound);
    CHECKF(rel <= rmse_bound, "%s: round-trip rmse/rms %.4f > %.3f", tname(t), rel, rmse_bound);
    free(q), free(x), free(y);
}

/* ---- 6. hand-made facts ---- */

static void test_facts(void) {
    /* Q1_0: bit set for x >= 0, so +0 and -0 both read back as +d; d = mean |x| */
    float x[QK_K];
    for (int j = 0; j < QK1_0; j++) x[j] = j % 4 == 0 ? 0.0f : j % 4 == 1 ? -0.0f : j % 4 == 2 ? -2.0f : 2.0f;
    block_q1_0 q1;
    ops_of(QT_Q1_0)->from_float(x, &q1, QK1_0);
    CHECKF(q1.qs[0] == 0xBB && fp16_to_f32(q1.d) == 1.0f, "Q1_0: qs[0] %#x (want 0xbb), d %g (want 1)", q1.qs[0],
           fp16_to_f32(q1.d));

    /* TQ2_0: x / max rounds half away from zero: +-max/2 -> +-1; just under -> 0 */
    for (int j = 0; j < QK_K; j++) x[j] = 0.0f;
    x[0] = 2.0f, x[1] = 1.0f, x[2] = -1.0f, x[3] = 0.99f;
    block_tq2_0 q2;
    ops_of(QT_TQ2_0)->from_float(x, &q2, QK_K);
    CHECKF((q2.qs[0] & 3) == 2 && (q2.qs[1] & 3) == 2 && (q2.qs[2] & 3) == 0 && (q2.qs[3] & 3) == 1 && fp16_to_f32(q2.d) == 2.0f,
           "TQ2_0 ties: t = %d %d %d %d (want 2 2 0 1), d %g", q2.qs[0] & 3, q2.qs[1] & 3, q2.qs[2] & 3,
           q2.qs[3] & 3, fp16_to_f32(q2.d));

    /* MXFP4: max 6 -> e = floor(log2 6) - 2 + 127 = 127, halved scale 0.5; ties take the lower code */
    for (int j = 0; j < QK_MXFP4; j++) x[j] = 0.0f;
    x[0] = 6.0f, x[1] = 5.0f, x[2] = -5.0f, x[3] = 0.25f, x[4] = -0.25f, x[5] = -6.0f;
    block_mxfp4 qm;
    ops_of(QT_MXFP4)->from_float(x, &qm, QK_MXFP4);
    CHECKF(qm.e == 127, "MXFP4: e = %d, want 127", qm.e);
    static const uint8_t want_m[6] = {7, 6, 14, 0, 0, 15};
    for (int j = 0; j < 6; j++)
        CHECKF((qm.qs[j] & 15) == want_m[j], "MXFP4: value %g -> code %d, want %d", x[j], qm.qs[j] & 15, want_m[j]);

    /* NVFP4: scale = max / 6 in unsigned E4M3, mantissa rounded half up: 1.0625 -> 1.125 = 0x39 */
    for (int j = 0; j < QK_NVFP4; j++) x[j] = 0.0f;
    x[0] = 6.0f * 1.0625f;
    block_nvfp4 qn;
    ops_of(QT_NVFP4)->from_float(x, &qn, QK_NVFP4);
    CHECKF(qn.d[0] == 0x39 && qn.d[1] == 0, "NVFP4: scale bytes %#x %#x, want 0x39 0", qn.d[0], qn.d[1]);
}

int main(void) {
    rng r;
    rng_seed(&r, 170);
    test_registration();
    test_tables();
    for (int i = 0; i < NTYPES; i++) {
        const quant_ops *o = ops_of(types[i]);
        if (!o || !o->to_float || !o->vec_dot) continue; /* reported by test_registration */
        test_to_float(types[i], &r);
        test_vec_dot(types[i], &r);
    }
    /* rmse/rms bounds ~1.15x what the reference gives on this seed (ternary and 1-bit types are coarse) */
    static const struct { enum qtype t; double bound; } q[] = {
        {QT_TQ1_0, 0.92}, {QT_TQ2_0, 0.92}, {QT_MXFP4, 0.135}, {QT_NVFP4, 0.11}, {QT_Q1_0, 0.69},
    };
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        if (ops_of(q[i].t) && ops_of(q[i].t)->from_float) test_from_float(q[i].t, q[i].bound, &r);
    if (ops_of(QT_Q1_0)->from_float && ops_of(QT_TQ2_0)->from_float && ops_of(QT_MXFP4)->from_float &&
        ops_of(QT_NVFP4)->from_float)
        test_facts();
    return check_report("test_quant_iq");
}
