/* quant_bench_mm: `llm170 quant-bench --tokens T,...`, single-thread matrix products of a weight matrix with
 * T tokens through the CPU backend's own matmul (backends/cpu/cpu_backend.c), once with no row marked bulk (the
 * row-by-row kernels: vec_dot8p, vec_dot8, vec_dotn, vec_dot4 or vec_dot, as the backend picks them) and once with
 * every row bulk (the int8 matrix products of quant/gemm.h, panel unpacking included). Both include
 * quantizing the activations. Figures are multiply-adds per second (rows x K x T / time), the median of
 * --reps passes after a warm-up. This is where BULK_MIN_ROWS (backends/cpu/cpu_impl.h) comes from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/timer.h"
#include "cli/quant_bench_mm.h"
#include "backends/backend.h"
#include "quant/gemm.h"
#include "quant/quant.h"

#define MM_MAX_REPS 101

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median seconds of one matmul over `reps` passes after a warm-up */
static double time_matmul(exec *ex, const weight *w, const float *x, float *y, int T, bool run, int reps) {
    double t[MM_MAX_REPS] = {0};
    for (int r = -1; r < reps; r++) {
        const double t0 = timer_now();
        ex->ops->matmul(ex, w, 0, x, y, T, (mm_rows){run ? MM_RUN : MM_ROWWISE, 0});
        if (r >= 0) t[r] = timer_now() - t0;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_d);
    return t[reps / 2];
}

int quant_bench_matmul(const enum qtype *types, int ntypes, const int *tokens, int ntok, int64_t K, double mb,
                       int reps) {
    err e = {0};
    backend *be = cpu_backend_new(1, false, &e);
    if (!be) {
        fprintf(stderr, "quant-bench: %s\n", e.msg);
        return 1;
    }
    int tmax = 0;
    for (int k = 0; k < ntok; k++) tmax = tokens[k] > tmax ? tokens[k] : tmax;
    float *x = malloc(sizeof(float) * (size_t)K * (size_t)tmax);
    exec_plan plan = {.max_tokens = tmax, .max_out = tmax, .max_in = (int)K, .n_threads = 1};
    exec *ex = be->ops->exec_new(be, &plan, &e);
    if (!ex || !x) goto oom;
    rng r;
    rng_seed(&r, 171);
    for (int64_t i = 0; i < K * tmax; i++) x[i] = rng_normal(&r);
    printf("| type | K | rows | tokens | row-by-row GMAC/s | int8 GMAC/s | int8 / row-by-row |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    for (int ti = 0; ti < ntypes; ti++) {
        const enum qtype t = types[ti];
        const qtype_info *info = qtype_get((uint32_t)t);
        if (!quant_ops_best(t).vec_dot || K % info->blck) continue;
        const size_t wrow = qtype_row_bytes(t, K);
        int64_t rows = (int64_t)(mb * 1048576.0 / (double)wrow);
        rows = rows < GEMM_PANEL ? GEMM_PANEL : rows / GEMM_PANEL * GEMM_PANEL;
        void *data = malloc(wrow * (size_t)rows);
        float *y = malloc(sizeof(float) * (size_t)rows * (size_t)tmax);
        if (!data || !y) {
            free(data), free(y);
            goto oom;
        }
        quant_random_blocks(t, data, rows * (K / info->blck), 0.02f, &r);
        const gguf_tensor gt = {.name = "bench", .type = (uint32_t)t, .n_dims = 2, .ne = {K, rows, 1, 1},
                                .n_elements = K * rows, .nbytes = wrow * (size_t)rows, .data = data};
        weight w;
        if (be->ops->weight_init(be, &w, &gt, &e)) {
            fprintf(stderr, "quant-bench: %s\n", e.msg);
            free(data), free(y);
            continue;
        }
        for (int k = 0; k < ntok; k++) {
            const double mac = (double)rows * (double)K * tokens[k];
            const double a = time_matmul(ex, &w, x, y, tokens[k], false, reps);
            if (gemm_supported(t)) {
                const double g = time_matmul(ex, &w, x, y, tokens[k], true, reps);
                printf("| %s | %lld | %lld | %d | %.1f | %.1f | %.2f |\n", info->name, (long long)K, (long long)rows,
                       tokens[k], mac / a * 1e-9, mac / g * 1e-9, a / g);
            } else {
                printf("| %s | %lld | %lld | %d | %.1f | - | - |\n", info->name, (long long)K, (long long)rows, tokens[k],
                       mac / a * 1e-9);
            }
            fflush(stdout);
        }
        free(data), free(y);
    }
    free(x);
    exec_free(ex);
    backend_free(be);
    return 0;
oom:
    fprintf(stderr, "quant-bench: out of memory\n");
    free(x);
    exec_free(ex);
    backend_free(be);
    return 1;
}
