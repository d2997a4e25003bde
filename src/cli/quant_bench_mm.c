/* quant_bench_mm: `llm170 quant-bench --tokens T,...`, single-thread matrix products of a weight matrix with
 * T tokens, by the two kernel families the CPU backend has (src/engine/cpu_backend.c):
 *   row-by-row  every weight row against the tokens with vec_dot8p (eight packed Q8_0 rows), vec_dot8,
 *               vec_dot4 or vec_dot, as the backend picks them for consecutive rows;
 *   int8        the int8 matrix products of quant/gemm.h: 32-row panels unpacked, then every token.
 * Both include their activation preparation (pack8; the gemm activation layout), neither the
 * quantization of the activations. Figures are multiply-adds per second (rows x K x T / time), the median
 * of --reps passes after a warm-up; "unpack" is the int8 family's share spent unpacking panels. This is
 * where BULK_MIN_ROWS (engine/backend.h) comes from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/timer.h"
#include "cli/quant_bench_mm.h"
#include "quant/gemm.h"

#define MM_MAX_REPS 101

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct mm_case {
    const quant_ops *ops;
    const char *w;
    size_t wrow, xrow;
    const char *xq;
    int64_t K, rows;
    int T;
    float *y;
} mm_case;

static void run_rows(const mm_case *c, void *pack) {
    const quant_ops *o = c->ops;
    const quant_ops pa = quant_ops_best(o->vec_dot_type);
    const int use8p = o->vec_dot8p && pa.pack8;
    const size_t pb = quant_pack8_bytes(c->K);
    if (use8p)
        for (int g = 0; g + 8 <= c->T; g += 8) pa.pack8(c->K, c->xq + (size_t)g * c->xrow, c->xrow, (char *)pack + (size_t)(g / 8) * pb);
    for (int64_t r = 0; r < c->rows; r++) {
        const char *wr = c->w + (size_t)r * c->wrow;
        int t = 0;
        float s[8];
        if (use8p)
            for (; t + 8 <= c->T; t += 8) o->vec_dot8p(c->K, s, wr, (char *)pack + (size_t)(t / 8) * pb);
        if (o->vec_dot8)
            for (; t + 8 <= c->T; t += 8) o->vec_dot8(c->K, s, wr, c->xq + (size_t)t * c->xrow, c->xrow);
        if (o->vec_dot4)
            for (; t + 4 <= c->T; t += 4) o->vec_dot4(c->K, s, wr, c->xq + (size_t)t * c->xrow, c->xrow);
        for (; t < c->T; t++) o->vec_dot(c->K, &c->y[(size_t)t * c->rows + r], wr, c->xq + (size_t)t * c->xrow);
    }
}

/* returns the seconds spent unpacking panels */
static double run_int8(const mm_case *c, void *pbuf, void *tmp, void *abuf, const int32_t *ids, gemm_run_fn run) {
    const quant_ops *o = c->ops;
    const int sb = o->u8.sb;
    gemm_acts a;
    gemm_acts_layout(&a, abuf, o->vec_dot_type, c->K, sb, c->T);
    gemm_acts_fill_rows(&a, o->vec_dot_type, c->xq, c->xrow, ids, 0, c->T, o->u8.off);
    gemm_panel p;
    gemm_panel_init(&p, pbuf, c->K, sb, o->u8.has_min);
    double tp = 0;
    for (int64_t r0 = 0; r0 < c->rows; r0 += GEMM_PANEL) {
        const double t0 = timer_now();
        gemm_pack(o, c->w + (size_t)r0 * c->wrow, c->wrow, (int)(c->rows - r0 < GEMM_PANEL ? c->rows - r0 : GEMM_PANEL), &p, tmp);
        tp += timer_now() - t0;
        run(&p, &a, 0, c->T, ids, c->y + r0, c->rows);
    }
    return tp;
}

int quant_bench_matmul(const enum qtype *types, int ntypes, const int *tokens, int ntok, int64_t K, double mb,
                       int reps) {
    gemm_run_fn run = gemm_run_best();
    printf("| type | K | rows | tokens | row-by-row GMAC/s | int8 GMAC/s | int8 unpack share | int8 / row-by-row |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    rng r;
    rng_seed(&r, 171);
    for (int ti = 0; ti < ntypes; ti++) {
        const enum qtype t = types[ti];
        const quant_ops o = quant_ops_best(t);
        const qtype_info *info = qtype_get((uint32_t)t);
        const quant_ops *act = quant_ops_get(o.vec_dot_type, QUANT_ISA_SCALAR);
        if (!o.vec_dot || !act || !act->from_float || K % info->blck) continue;
        const size_t wrow = qtype_row_bytes(t, K), xrow = qtype_row_bytes(o.vec_dot_type, K);
        int64_t rows = (int64_t)(mb * 1048576.0 / (double)wrow);
        rows = rows < GEMM_PANEL ? GEMM_PANEL : rows / GEMM_PANEL * GEMM_PANEL;
        int tmax = 0;
        for (int k = 0; k < ntok; k++) tmax = tokens[k] > tmax ? tokens[k] : tmax;
        char *w = malloc(wrow * (size_t)rows), *xq = malloc(xrow * (size_t)tmax);
        float *f = malloc(sizeof(float) * (size_t)K), *y = malloc(sizeof(float) * (size_t)rows * (size_t)tmax);
        void *pack = malloc(quant_pack8_bytes(K) * (size_t)(tmax / 8 + 1));
        const int sb = o.u8.sb ? o.u8.sb : 32;
        void *pbuf = aligned_alloc(64, (gemm_panel_bytes(K, sb) + 63) / 64 * 64), *tmp = malloc(gemm_pack_scratch_bytes(K, sb));
        void *abuf = aligned_alloc(64, (gemm_acts_bytes(K, sb, gemm_act_group(o.vec_dot_type, sb), tmax) + 63) / 64 * 64);
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)tmax);
        if (!w || !xq || !f || !y || !pack || !pbuf || !tmp || !abuf || !ids) {
            fprintf(stderr, "quant-bench: out of memory for %s\n", info->name);
            free(w), free(xq), free(f), free(y), free(pack), free(pbuf), free(tmp), free(abuf), free(ids);
            return 1;
        }
        quant_random_blocks(t, w, rows * (K / info->blck), 0.02f, &r);
        for (int i = 0; i < tmax; i++) {
            for (int64_t k = 0; k < K; k++) f[k] = rng_normal(&r);
            act->from_float(f, xq + (size_t)i * xrow, K);
            ids[i] = i;
        }
        for (int k = 0; k < ntok; k++) {
            mm_case c = {&o, w, wrow, xrow, xq, K, rows, tokens[k], y};
            double tr[MM_MAX_REPS] = {0}, tg[MM_MAX_REPS] = {0}, tu[MM_MAX_REPS] = {0};
            const int can_int8 = run && gemm_supported(t);
            for (int rep = -1; rep < reps; rep++) {
                double t0 = timer_now();
                run_rows(&c, pack);
                double t1 = timer_now(), up = can_int8 ? run_int8(&c, pbuf, tmp, abuf, ids, run) : 0;
                if (rep >= 0) tr[rep] = t1 - t0, tg[rep] = timer_now() - t1, tu[rep] = up;
            }
            qsort(tr, (size_t)reps, sizeof tr[0], cmp_d);
            qsort(tg, (size_t)reps, sizeof tg[0], cmp_d);
            qsort(tu, (size_t)reps, sizeof tu[0], cmp_d);
            const double mac = (double)rows * (double)K * tokens[k], a = tr[reps / 2], g = tg[reps / 2];
            if (can_int8)
                printf("| %s | %lld | %lld | %d | %.1f | %.1f | %.0f%% | %.2f |\n", info->name, (long long)K, (long long)rows,
                       tokens[k], mac / a * 1e-9, mac / g * 1e-9, 100 * tu[reps / 2] / g, a / g);
            else
                printf("| %s | %lld | %lld | %d | %.1f | - | - | - |\n", info->name, (long long)K, (long long)rows,
                       tokens[k], mac / a * 1e-9);
            fflush(stdout);
        }
        free(w), free(xq), free(f), free(y), free(pack), free(pbuf), free(tmp), free(abuf), free(ids);
    }
    return 0;
}
