/* cuda_mmq_test: the integer expert GEMM's arithmetic (kernels/mmq.cu) proven on the CPU before any device
 * run, for every type the kernel takes, through the host model that shares the kernel's own unit code
 * (backends/cuda/mmq_ref.c over kernels/mmq_unit.h and kernels/gemv_unpack.h):
 *  1. unpacking: each unit's scale-table form (mmq_unit_scale: (a, b), or Q6_K's integer half scales and
 *     super-block a) with the unit's int8 lanes rebuilds the CPU dequantizer bit for bit: fl(a q + b),
 *     fl(fl(a sc) q) (the mins of Q4_1 / Q4_K / Q5_K and the 6-bit / int8 scales included);
 *  2. the int dot and scaling (mmq_ref_dot) against sum to_float(w) x in double over the unquantized x,
 *     within mmq_unit.h's bound, and against the exact sum of its own integers and scales within the bound's
 *     float part;
 *  3. against the CPU's quantized dot (quant_ops vec_dot on its own activation type: q8_K per 256 values, q8_0
 *     or q8_1 per 32) within the sum of both bounds. The CPU's: its activations' error sum |w| |x - x~| (x~ =
 *     to_float of its blocks), (4U + 8) 2^-24 sum m |x~| for its float work (a handful of roundings per block,
 *     each of at most that magnitude; m = |a q| + |b|), and for q8_1 the separately rounded block sum s:
 *     |b| |s - d sum q| per block.
 * Activation rows: N(0, 1), scaled by 1e-3 and by 50, one with a zero unit and one with an outlier per unit.
 * Runs without a GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/kernels/mmq_unit.h"
#include "backends/cuda/mmq_ref.h"
#include "backends/cuda/repack.h"
#include "base/fp16.h"
#include "base/rng.h"
#include "check.h"
#include "quant/blocks.h"
#include "quant/quant.h"

enum { ROWS = 6, XROWS = 5 };

/* unit u of row r: lanes q[32] and the exact weight decomposition w' = a[v] q[v] + b */
static void unit_of(enum qtype t, const uint8_t *qs, const uint8_t *hi, const uint8_t *meta, int64_t r, int64_t U,
                    int64_t u, int q[32], double a[32], double *b, float *p0, float *p1, float *a6) {
    const int G = gemv_meta_group(t) / 32;
    uint32_t w[8], h[2] = {0, 0}, v[8];
    memcpy(w, qs + (size_t)(r * U + u) * (size_t)gemv_qs_bytes(t), (size_t)gemv_qs_bytes(t));
    if (gemv_hi_bytes(t)) memcpy(h, hi + (size_t)(r * U + u) * (size_t)gemv_hi_bytes(t), (size_t)gemv_hi_bytes(t));
    gemv_unpack_unit(t, w, h, v);
    mmq_unit_scale(t, meta + (size_t)(r * (U / G) + u / G) * (size_t)gemv_meta_bytes(t), (int)(u % G), p0, p1, a6);
    for (int i = 0; i < 32; i++) {
        q[i] = (int8_t)(v[i / 4] >> (8 * (i % 4)));
        a[i] = t == QT_Q6_K ? (double)*a6 * (i < 16 ? *p0 : *p1) : (double)*p0;
    }
    *b = t == QT_Q6_K ? 0.0 : (double)*p1;
}

static void fill_x(rng *r, float *x, int64_t K, int row) {
    for (int64_t k = 0; k < K; k++) x[k] = rng_normal(r);
    if (row == 1)
        for (int64_t k = 0; k < K; k++) x[k] *= 1e-3f;
    if (row == 2)
        for (int64_t k = 0; k < K; k++) x[k] *= 50.0f;
    if (row == 3)
        for (int64_t k = 32; k < 64; k++) x[k] = 0.0f; /* a unit of zeros: d = 0 */
    if (row == 4)
        for (int64_t k = 7; k < K; k += 32) x[k] = 40.0f * (k % 64 == 7 ? 1.0f : -1.0f); /* an outlier a unit */
}

static void check_type(enum qtype t, int64_t K, uint64_t seed) {
    const qtype_info *ti = qtype_get(t);
    const quant_ops *ops = quant_ops_get(t, QUANT_ISA_SCALAR);
    const enum qtype at = ops->vec_dot_type;
    const quant_ops *aops = quant_ops_get(at, QUANT_ISA_SCALAR);
    const qtype_info *ai = qtype_get(at);
    const int64_t U = K / 32;
    const size_t row_bytes = (size_t)(K / ti->blck) * ti->type_size, arow = (size_t)(K / ai->blck) * ai->type_size;
    size_t nq, nh, nm;
    err e = {0};
    CHECK(cuda_repack_sizes(t, ROWS, K, &nq, &nh, &nm, &e) == 0);
    uint8_t *src = malloc(row_bytes * ROWS), *qs = malloc(nq), *hi = malloc(nh ? nh : 1), *meta = malloc(nm);
    uint8_t *ab = malloc(arow);
    float *wf = malloc(sizeof(float) * (size_t)K), *x = malloc(sizeof(float) * (size_t)K);
    float *xt = malloc(sizeof(float) * (size_t)K), *ds = malloc(sizeof(float) * (size_t)U * 2);
    int8_t *xq = malloc((size_t)K);
    rng r;
    rng_seed(&r, seed);
    CHECK(quant_random_blocks(t, src, ROWS * (K / ti->blck), 0.02f, &r));
    CHECK(cuda_repack(t, src, ROWS, K, qs, hi, meta, &e) == 0);
    int64_t bad_w = 0;
    double worst = 0, worst_q = 0, worst_cpu = 0;
    for (int64_t n = 0; n < ROWS; n++) {
        ops->to_float(src + (size_t)n * row_bytes, wf, K);
        /* 1: the scale table's form of every unit rebuilds to_float */
        for (int64_t u = 0; u < U; u++) {
            int q[32];
            double a[32], b;
            float p0, p1, a6;
            unit_of(t, qs, hi, meta, n, U, u, q, a, &b, &p0, &p1, &a6);
            for (int i = 0; i < 32; i++) {
                const float w = t == QT_Q6_K ? (a6 * (i < 16 ? p0 : p1)) * (float)q[i] : p0 * (float)q[i] + p1;
                if (memcmp(&w, &wf[u * 32 + i], 4) && bad_w++ < 5)
                    fprintf(stderr, "%s row %lld value %lld: %.9g from the scale table, to_float %.9g\n", ti->name,
                            (long long)n, (long long)(u * 32 + i), w, wf[u * 32 + i]);
            }
        }
        for (int xr = 0; xr < XROWS; xr++) {
            fill_x(&r, x, K, xr);
            check_ref_q8_1(x, xq, ds, K);
            /* 2: the model against the double product, and against its own integers */
            mmq_ref_cmp cmp;
            const float y = mmq_ref_dot(t, qs, hi, meta, n, K, xq, ds, x, wf, &cmp);
            const double q1 = fabs(y - cmp.ref) / cmp.bound, q2 = fabs(y - cmp.ref_q) / cmp.bound_q;
            worst = q1 > worst ? q1 : worst, worst_q = q2 > worst_q ? q2 : worst_q;
            CHECKF(q1 <= 1 && q2 <= 1, "%s K %lld row %lld x %d: y %.9g ref %.9g (bound %.3g) ref_q %.9g (bound %.3g)",
                   ti->name, (long long)K, (long long)n, xr, y, cmp.ref, cmp.bound, cmp.ref_q, cmp.bound_q);
            /* 3: the CPU's quantized dot */
            aops->from_float(x, ab, K);
            aops->to_float(ab, xt, K);
            float s_cpu;
            ops->vec_dot(K, &s_cpu, src + (size_t)n * row_bytes, ab);
            double act = 0, mag = 0, ssum = 0;
            for (int64_t u = 0; u < U; u++) {
                int q[32];
                double a[32], b;
                float p0, p1, a6;
                unit_of(t, qs, hi, meta, n, U, u, q, a, &b, &p0, &p1, &a6);
                for (int i = 0; i < 32; i++) {
                    const int64_t k = u * 32 + i;
                    act += fabs((double)wf[k]) * fabs((double)x[k] - xt[k]);
                    mag += (fabs(a[i] * q[i]) + fabs(b)) * fabs((double)xt[k]);
                }
                if (at == QT_Q8_1) { /* its block sum s, rounded apart from d * sum q */
                    const block_q8_1 *blk = (const block_q8_1 *)ab + u;
                    int sq = 0;
                    for (int i = 0; i < 32; i++) sq += blk->qs[i];
                    ssum += fabs(b) * fabs((double)fp16_to_f32(blk->s) - (double)fp16_to_f32(blk->d) * sq);
                }
            }
            const double bound_cpu = act + (double)(4 * U + 8) * 0x1p-24 * mag + ssum + 1e-30;
            const double q3 = fabs((double)y - s_cpu) / (cmp.bound + bound_cpu);
            worst_cpu = q3 > worst_cpu ? q3 : worst_cpu;
            CHECKF(q3 <= 1, "%s K %lld row %lld x %d: model %.9g, CPU dot %.9g, bounds %.3g + %.3g", ti->name,
                   (long long)K, (long long)n, xr, y, s_cpu, cmp.bound, bound_cpu);
        }
    }
    CHECKF(bad_w == 0, "%s: %lld values of the scale table's form differ from to_float", ti->name, (long long)bad_w);
    printf("%-5s K %5lld: scale form = to_float; model vs f64 %.3f of the bound, vs its integers %.3f, "
           "vs CPU dot %.3f\n",
           ti->name, (long long)K, worst, worst_q, worst_cpu);
    free(src), free(qs), free(hi), free(meta), free(ab), free(wf), free(x), free(xt), free(ds), free(xq);
}

int main(void) {
    const enum qtype types[] = {QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q8_0, QT_Q4_K, QT_Q5_K, QT_Q6_K};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        check_type(types[i], 256, 11 + i);
        check_type(types[i], 2048, 101 + i);
    }
    return check_report("cuda_mmq_test");
}
