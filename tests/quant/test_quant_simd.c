/* test_quant_simd: every SIMD member of the quant dispatch table (AVX2, AVX-512, NEON: those this CPU
 * runs) against the scalar reference of the same type, on fresh random inputs (never all zero) of 1, 7
 * and 64 blocks (plain float types: odd lengths, to reach the scalar tails).
 *
 * Contracts checked, per ISA and type:
 *   - vec_dot_type equals the scalar table's (a kernel paired with another activation format would read
 *     the wrong bytes);
 *   - from_float gives the scalar reference's bytes exactly (activation formats Q8_0, Q8_1, Q8_K), also on
 *     hand-made blocks that hit the rounding ties: roundf's half-away-from-zero for Q8_0/Q8_1 and
 *     nearest_int's half-to-even for Q8_K, and a +-max tie that decides Q8_K's sign;
 *   - to_float is bit-identical to the scalar one;
 *   - vec_dot is within VEC_DOT_RTOL * sum_i |x_i * y_i| (dequantized values) of the scalar one: the
 *     integer block sums are the same, only the float accumulation order differs (float32 rounding of a
 *     few thousand additions stays well below 1e-5 of the absolute sum);
 *   - the grid-coded types (IQ1_S .. IQ3_S, Q1_0: simd_x86_iquants.h), whose kernels have no mins or
 *     offsets, against an error model instead (grid_tol below), on 1, 7, 33 and 64 blocks; and exactly
 *     on blocks whose float work is exact (grid_exact below), so that an integer sum off by one shows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/fp16.h"
#include "base/rng.h"
#include "check.h"
#include "quant/blocks.h"
#include "quant/qtype.h"
#include "quant/quant.h"

#define VEC_DOT_RTOL 1e-5

static const enum quant_isa simd_isas[] = {QUANT_ISA_AVX2, QUANT_ISA_AVX512, QUANT_ISA_NEON};
static const int nblocks_cases[] = {1, 7, 64};

/* The grid-coded types and the unit c of their integer sums: every kernel computes
 * sum_b (d_b * dy_b * c) * I_b with exact integers I_b (per block, or per lane of a block).
 *
 * Error model: a float result of m block terms t_b = d_b * dy_b * c * I_b, formed by products and then
 * added in any order, is within gamma_k * sum |t_b| of the exact sum, gamma_k = k u / (1 - k u), u = 2^-24,
 * k = the longest chain of roundings: two products plus the additions. Both kernels' chains are below
 * n / 32 + 8 (the SIMD kernels: one term per super-block and lane (Q1_0: per Q8_0 block and lane), then
 * an 8-lane horizontal sum; the scalar ones: one term per block (Q1_0: 4 inner + 1 outer)). A lane's
 * terms are sums of the products x_i y_i of its values, except IQ1_S, whose lanes hold 8 * ls * g * y
 * and ls * (+-1) * y of a value apart (|8g| + 1 <= 9/7 |8g +- 1| when g != 0, equal when g == 0):
 * sum |t_b| <= 9/7 * sum |x_i y_i| (1 + 2u; the dequantized x_i carry a rounding). So
 *     |simd - scalar| <= 2 * gamma_k * 9/7 * sum |x_i y_i| < 3 * (n / 32 + 8) * u * sum |x_i y_i|.
 * A wrong sign, grid row or scale changes block terms by their own magnitude, far above this. */
static const struct {
    enum qtype t;
    double c;
} grid_types[] = {{QT_IQ1_S, 0.125},    {QT_IQ1_M, 0.125}, {QT_IQ2_XXS, 0.125}, {QT_IQ2_XS, 0.125},
                  {QT_IQ2_S, 0.125},    {QT_IQ3_XXS, 0.25}, {QT_IQ3_S, 1.0},    {QT_Q1_0, 1.0}};
#define N_GRID_TYPES (int)(sizeof grid_types / sizeof grid_types[0])
static const int grid_nblocks_cases[] = {1, 7, 33, 64};

static int grid_index(enum qtype t) {
    for (int i = 0; i < N_GRID_TYPES; i++)
        if (grid_types[i].t == t) return i;
    return -1;
}

static double grid_tol(int64_t n, double sum_abs) { return 3.0 * ((double)n / 32 + 8) * 0x1p-24 * sum_abs; }

static void fill_normal(rng *r, float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float v = rng_normal(r);
        x[i] = v != 0.0f ? v : 0.5f; /* never an all-zero block */
    }
}

/* Values per test case: blocks of the type, or odd lengths for the plain float types. */
static int64_t case_len(enum qtype t, int nb) {
    const qtype_info *info = qtype_get((uint32_t)t);
    if (info->blck == 1) return (int64_t)nb * 32 + (nb == 1 ? -1 : 5);
    return (int64_t)nb * info->blck;
}

/* Random weights of type t: the synthetic generator where it has the type, else the scalar quantizer of
 * random normals. Returns false if neither exists. */
static bool random_row(enum qtype t, void *dst, int64_t n, rng *r, float *tmp) {
    const int64_t nb = n / qtype_get((uint32_t)t)->blck;
    if (quant_random_blocks(t, dst, nb, 1.0f, r)) return true;
    const quant_ops *s = quant_ops_get(t, QUANT_ISA_SCALAR);
    if (!s->from_float) return false;
    fill_normal(r, tmp, n);
    s->from_float(tmp, dst, n);
    return true;
}

static void test_vec_dot(enum quant_isa isa, enum qtype t, rng *r) {
    const quant_ops *s = quant_ops_get(t, QUANT_ISA_SCALAR), *v = quant_ops_get(t, isa);
    if (!v->vec_dot) return;
    CHECKF(v->vec_dot_type == s->vec_dot_type, "%s %s: vec_dot_type %d, scalar %d", quant_isa_name(isa),
           qtype_get((uint32_t)t)->name, (int)v->vec_dot_type, (int)s->vec_dot_type);
    const quant_ops *sy = quant_ops_get(s->vec_dot_type, QUANT_ISA_SCALAR);
    const bool grid = grid_index(t) >= 0;
    const int *cases = grid ? grid_nblocks_cases : nblocks_cases;
    const size_t ncases = grid ? sizeof grid_nblocks_cases / sizeof *cases : sizeof nblocks_cases / sizeof *cases;
    for (size_t c = 0; c < ncases; c++) {
        const int64_t n = case_len(t, cases[c]);
        void *x = malloc(qtype_row_bytes(t, n)), *y = malloc(qtype_row_bytes(s->vec_dot_type, n));
        float *fx = malloc((size_t)n * sizeof(float)), *fy = malloc((size_t)n * sizeof(float));
        CHECK(random_row(t, x, n, r, fx));
        fill_normal(r, fy, n);
        sy->from_float(fy, y, n);
        float ref = 0.0f, got = 0.0f;
        s->vec_dot(n, &ref, x, y);
        v->vec_dot(n, &got, x, y);
        s->to_float(x, fx, n);
        sy->to_float(y, fy, n);
        double mag = 0.0;
        for (int64_t i = 0; i < n; i++) mag += fabs((double)fx[i] * (double)fy[i]);
        const double err = fabs((double)got - (double)ref);
        const double tol = grid ? grid_tol(n, mag) : VEC_DOT_RTOL * mag;
        CHECKF(isfinite(got) && mag > 0.0 && err <= tol,
               "%s %s vec_dot n=%lld: got %.9g, scalar %.9g, |err| %.3g > %.3g (sum|xy| %.4g)",
               quant_isa_name(isa), qtype_get((uint32_t)t)->name, (long long)n, got, ref, err, tol, mag);
        free(x), free(y), free(fx), free(fy);
    }
}

/* Sets the fp16 scale d of every block of a grid-type row (IQ1_M: d's nibbles are the top nibbles of the
 * four uint16 scales; the others store d first). */
static void set_block_d(enum qtype t, void *x, int64_t nb, uint16_t h) {
    const size_t bs = qtype_get((uint32_t)t)->type_size;
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *blk = (uint8_t *)x + (size_t)b * bs;
        if (t == QT_IQ1_M) {
            uint16_t sc[4];
            memcpy(sc, blk + offsetof(block_iq1_m, scales), sizeof sc);
            for (int k = 0; k < 4; k++) sc[k] = (uint16_t)((sc[k] & 0x0fff) | ((h >> (4 * k)) & 15) << 12);
            memcpy(blk + offsetof(block_iq1_m, scales), sc, sizeof sc);
        } else {
            memcpy(blk, &h, sizeof h);
        }
    }
}

/* Activations with power-of-two scales and small quants (-31..31, never a zero row): Q8_K with its
 * bsums, or Q8_0. */
static void small_acts(enum qtype act, void *y, int64_t n, rng *r) {
    for (int64_t b = 0; b < n / qtype_get((uint32_t)act)->blck; b++) {
        int8_t *q;
        if (act == QT_Q8_K) {
            block_q8_K *yb = (block_q8_K *)y + b;
            yb->d = 0x1p-7f;
            q = yb->qs;
        } else {
            block_q8_0 *yb = (block_q8_0 *)y + b;
            yb->d = fp16_from_f32(0x1p-7f);
            q = yb->qs;
        }
        const int len = (int)qtype_get((uint32_t)act)->blck;
        for (int i = 0; i < len; i++) q[i] = (int8_t)((int)(rng_u64(r) % 63) - 31);
        q[0] = q[0] ? q[0] : 1;
        if (act == QT_Q8_K)
            for (int g = 0; g < QK_K / 16; g++) {
                int sum = 0;
                for (int i = 0; i < 16; i++) sum += q[16 * g + i];
                ((block_q8_K *)y + b)->bsums[g] = (int16_t)sum;
            }
    }
}

/* Exactness of the integer sums: with d = 2^-6 for every weight block and dy = 2^-7 for every activation
 * block, each term is a multiple of q = 2^-13 * c, and if (9/7) sum |x_i y_i| < 2^24 q (checked) every
 * partial sum, in any order and lane split (error model above), is an exact float. Then scalar and SIMD
 * must both equal the exact dot (double) bit for bit: an integer sum off by one would be off by q. */
static void test_grid_exact(enum quant_isa isa, enum qtype t, rng *r) {
    const quant_ops *s = quant_ops_get(t, QUANT_ISA_SCALAR), *v = quant_ops_get(t, isa);
    const quant_ops *sy = quant_ops_get(s->vec_dot_type, QUANT_ISA_SCALAR);
    const double q = 0x1p-13 * grid_types[grid_index(t)].c;
    for (int nb = 1; nb <= 3; nb += 2) {
        const int64_t n = case_len(t, nb);
        void *x = malloc(qtype_row_bytes(t, n)), *y = malloc(qtype_row_bytes(s->vec_dot_type, n));
        float *fx = malloc((size_t)n * sizeof(float)), *fy = malloc((size_t)n * sizeof(float));
        CHECK(random_row(t, x, n, r, fx));
        set_block_d(t, x, n / qtype_get((uint32_t)t)->blck, fp16_from_f32(0x1p-6f));
        small_acts(s->vec_dot_type, y, n, r);
        s->to_float(x, fx, n);
        sy->to_float(y, fy, n);
        double exact = 0.0, mag = 0.0; /* exact: every product and partial sum fits a double's 53 bits */
        for (int64_t i = 0; i < n; i++) {
            exact += (double)fx[i] * (double)fy[i];
            mag += fabs((double)fx[i] * (double)fy[i]);
        }
        CHECKF(9.0 / 7.0 * mag < 0x1p24 * q, "%s exact case n=%lld: sum|xy| %.6g too large for exact floats",
               qtype_get((uint32_t)t)->name, (long long)n, mag);
        float ref = 0.0f, got = 0.0f;
        s->vec_dot(n, &ref, x, y);
        v->vec_dot(n, &got, x, y);
        CHECKF((double)ref == exact && (double)got == exact,
               "%s %s vec_dot n=%lld on exact floats: got %.9g (%+.1f q), scalar %.9g (%+.1f q), exact %.9g",
               quant_isa_name(isa), qtype_get((uint32_t)t)->name, (long long)n, got, ((double)got - exact) / q, ref,
               ((double)ref - exact) / q, exact);
        free(x), free(y), free(fx), free(fy);
    }
}

static void test_to_float(enum quant_isa isa, enum qtype t, rng *r) {
    const quant_ops *s = quant_ops_get(t, QUANT_ISA_SCALAR), *v = quant_ops_get(t, isa);
    if (!v->to_float) return;
    for (size_t c = 0; c < sizeof nblocks_cases / sizeof nblocks_cases[0]; c++) {
        const int64_t n = case_len(t, nblocks_cases[c]);
        void *x = malloc(qtype_row_bytes(t, n));
        float *a = malloc((size_t)n * sizeof(float)), *b = malloc((size_t)n * sizeof(float));
        CHECK(random_row(t, x, n, r, a));
        s->to_float(x, a, n);
        v->to_float(x, b, n);
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (memcmp(&a[i], &b[i], sizeof(float)) != 0) bad = i;
        CHECKF(bad < 0, "%s %s to_float n=%lld: value %lld is %.9g, scalar %.9g", quant_isa_name(isa),
               qtype_get((uint32_t)t)->name, (long long)n, (long long)bad, bad < 0 ? 0.0 : (double)b[bad],
               bad < 0 ? 0.0 : (double)a[bad]);
        free(x), free(a), free(b);
    }
}

static void compare_from_float(enum quant_isa isa, enum qtype t, const float *x, int64_t n, const char *what) {
    const quant_ops *s = quant_ops_get(t, QUANT_ISA_SCALAR), *v = quant_ops_get(t, isa);
    const size_t bytes = qtype_row_bytes(t, n);
    /* both outputs start from the same garbage so bytes left unwritten compare equal only if both skip */
    unsigned char *a = malloc(bytes), *b = malloc(bytes);
    memset(a, 0xa5, bytes);
    memset(b, 0xa5, bytes);
    s->from_float(x, a, n);
    v->from_float(x, b, n);
    size_t bad = bytes;
    for (size_t i = 0; i < bytes && bad == bytes; i++)
        if (a[i] != b[i]) bad = i;
    CHECKF(bad == bytes, "%s %s from_float (%s) n=%lld: byte %zu is 0x%02x, scalar 0x%02x", quant_isa_name(isa),
           qtype_get((uint32_t)t)->name, what, (long long)n, bad, bad < bytes ? b[bad] : 0, bad < bytes ? a[bad] : 0);
    free(a), free(b);
}

static void test_from_float(enum quant_isa isa, enum qtype t, rng *r) {
    const quant_ops *v = quant_ops_get(t, isa);
    if (!v->from_float) return;
    const int64_t blck = qtype_get((uint32_t)t)->blck;
    for (size_t c = 0; c < sizeof nblocks_cases / sizeof nblocks_cases[0]; c++) {
        const int64_t n = case_len(t, nblocks_cases[c]);
        float *x = malloc((size_t)n * sizeof(float));
        fill_normal(r, x, n);
        compare_from_float(isa, t, x, n, "normal");
        for (int64_t i = 0; i < n; i++) x[i] = rng_uniform(r, -1e-3f, 1e-3f) + (i % 97 == 0 ? 1e3f : 0.0f);
        compare_from_float(isa, t, x, n, "outliers");
        free(x);
    }
    if (blck < 32) return;
    /* Ties: with max |x| = 127 the scale is exactly 1 (Q8_0: d = 1, id = 1; Q8_K: max = -127, iscale = 1),
     * so x = k + 0.5 lands exactly halfway. The last block puts +127 before -127 (Q8_K keeps the first). */
    float *x = malloc((size_t)(2 * blck) * sizeof(float));
    for (int64_t i = 0; i < 2 * blck; i++) x[i] = (float)((i % 41) - 20) + 0.5f;
    x[3] = -127.0f;
    x[blck + 1] = 127.0f;
    x[blck + 5] = -127.0f;
    compare_from_float(isa, t, x, 2 * blck, "halfway ties");
    free(x);
}

int main(void) {
    rng r;
    rng_seed(&r, 170);
    int isas_run = 0;
    for (size_t k = 0; k < sizeof simd_isas / sizeof simd_isas[0]; k++) {
        const enum quant_isa isa = simd_isas[k];
        if (!quant_isa_available(isa)) {
            printf("%s: not available on this CPU/build, skipped\n", quant_isa_name(isa));
            continue;
        }
        isas_run++;
        int members = 0;
        for (uint32_t t = 0; t < QT_COUNT; t++) {
            if (!qtype_get(t)) continue;
            const quant_ops *v = quant_ops_get((enum qtype)t, isa);
            const quant_ops *s = quant_ops_get((enum qtype)t, QUANT_ISA_SCALAR);
            CHECK(v && s);
            /* every SIMD member must have a scalar reference to be tested against */
            CHECKF(!v->vec_dot || s->vec_dot, "%s: %s vec_dot without scalar", quant_isa_name(isa), qtype_get(t)->name);
            CHECKF(!v->to_float || s->to_float, "%s: %s to_float without scalar", quant_isa_name(isa), qtype_get(t)->name);
            CHECKF(!v->from_float || s->from_float, "%s: %s from_float without scalar", quant_isa_name(isa),
                   qtype_get(t)->name);
            if ((v->vec_dot || v->from_float) && v->vec_dot_type != s->vec_dot_type)
                CHECKF(0, "%s %s: vec_dot_type %d, scalar %d", quant_isa_name(isa), qtype_get(t)->name,
                       (int)v->vec_dot_type, (int)s->vec_dot_type);
            members += (v->vec_dot != NULL) + (v->to_float != NULL) + (v->from_float != NULL);
            if (v->vec_dot && s->vec_dot) test_vec_dot(isa, (enum qtype)t, &r);
            if (v->vec_dot && s->vec_dot && grid_index((enum qtype)t) >= 0) test_grid_exact(isa, (enum qtype)t, &r);
            if (v->to_float && s->to_float) test_to_float(isa, (enum qtype)t, &r);
            if (v->from_float && s->from_float) test_from_float(isa, (enum qtype)t, &r);
        }
        printf("%s: %d members checked against scalar\n", quant_isa_name(isa), members);
    }
#if defined(__x86_64__)
    /* this suite exists for the SIMD kernels: on the x86 machines we run it, AVX2 at least must run */
    CHECKF(isas_run > 0, "no SIMD ISA available: nothing was tested");
#endif
    return check_report("test_quant_simd");
}
