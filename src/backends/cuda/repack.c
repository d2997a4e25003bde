/* repack: see repack.h; the layout is documented in kernels/gemv_unpack.h. Each GGUF block is read
 * through its struct (quant/blocks.h): the integer quants of each 32-value unit are formed as the CPU
 * dequantizer forms them, then written as nibbles (qs), high bits (hi) and scales (meta). */
#include "backends/cuda/repack.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "backends/cuda/kernels/gemv_unpack.h"
#include "quant/blocks.h"

static bool gemv_type(enum qtype t) {
    return t == QT_Q4_0 || t == QT_Q4_1 || t == QT_Q5_0 || t == QT_Q8_0 || t == QT_Q4_K || t == QT_Q5_K ||
           t == QT_Q6_K;
}

int cuda_repack_sizes(enum qtype t, int64_t N, int64_t K, size_t *qs, size_t *hi, size_t *meta, err *e) {
    const qtype_info *ti = qtype_get(t);
    if (!gemv_type(t))
        return err_set(e, ERR_UNSUPPORTED, "the CUDA GEMV has no kernel for type %s (it has Q4_0, Q4_1, Q5_0, Q8_0, "
                       "Q4_K, Q5_K, Q6_K)", ti ? ti->name : "?");
    if (N <= 0 || K <= 0 || K % ti->blck)
        return err_set(e, ERR_ARG, "a %s matrix of %lld x %lld: K must be a positive multiple of %lld", ti->name,
                       (long long)N, (long long)K, (long long)ti->blck);
    int64_t units = N * (K / 32);
    *qs = (size_t)(units * gemv_qs_bytes(t));
    *hi = (size_t)(units * gemv_hi_bytes(t));
    *meta = (size_t)(N * (K / gemv_meta_group(t)) * gemv_meta_bytes(t));
    return 0;
}

/* the 32 integer quants (as stored: unsigned, or int8 for Q8_0) of unit u of a row of GGUF blocks, and
 * its meta bytes (written once per meta group) */
static void unit_quants(enum qtype t, const uint8_t *row, int64_t u, int q[32], uint8_t *meta) {
    int64_t b = t == QT_Q4_K || t == QT_Q5_K || t == QT_Q6_K ? u / 8 : u;
    int j = (int)(u % 8);
    switch (t) {
    case QT_Q4_0: {
        const block_q4_0 *x = (const block_q4_0 *)row + b;
        for (int v = 0; v < 16; v++) q[v] = x->qs[v] & 15, q[v + 16] = x->qs[v] >> 4;
        memcpy(meta, &x->d, 2);
        break;
    }
    case QT_Q4_1: {
        const block_q4_1 *x = (const block_q4_1 *)row + b;
        for (int v = 0; v < 16; v++) q[v] = x->qs[v] & 15, q[v + 16] = x->qs[v] >> 4;
        memcpy(meta, &x->d, 2), memcpy(meta + 2, &x->m, 2);
        break;
    }
    case QT_Q5_0: {
        const block_q5_0 *x = (const block_q5_0 *)row + b;
        uint32_t qh;
        memcpy(&qh, x->qh, 4);
        for (int v = 0; v < 16; v++) q[v] = x->qs[v] & 15, q[v + 16] = x->qs[v] >> 4;
        for (int v = 0; v < 32; v++) q[v] |= (int)((qh >> v) & 1) << 4;
        memcpy(meta, &x->d, 2);
        break;
    }
    case QT_Q8_0: {
        const block_q8_0 *x = (const block_q8_0 *)row + b;
        for (int v = 0; v < 32; v++) q[v] = x->qs[v];
        memcpy(meta, &x->d, 2);
        break;
    }
    case QT_Q4_K: case QT_Q5_K: {
        const uint8_t *qs, *qh = NULL;
        if (t == QT_Q4_K) {
            const block_q4_K *x = (const block_q4_K *)row + b;
            qs = x->qs;
            if (j == 0) memcpy(meta, x, 16);
        } else {
            const block_q5_K *x = (const block_q5_K *)row + b;
            qs = x->qs, qh = x->qh;
            if (j == 0) memcpy(meta, &x->d, 2), memcpy(meta + 2, &x->dmin, 2), memcpy(meta + 4, x->scales, 12);
        }
        for (int l = 0; l < 32; l++) {
            q[l] = (qs[32 * (j / 2) + l] >> (4 * (j & 1))) & 15;
            if (qh) q[l] |= ((qh[l] >> j) & 1) << 4;
        }
        break;
    }
    case QT_Q6_K: {
        const block_q6_K *x = (const block_q6_K *)row + b;
        for (int l = 0; l < 32; l++) {
            int p = 32 * j + l, half = p / 128, c = (p % 128) / 32, i = p % 32;
            const uint8_t *ql = x->ql + 64 * half, *qh = x->qh + 32 * half;
            int lo = c & 1 ? ql[i + 32] : ql[i];
            q[l] = (c < 2 ? lo & 15 : lo >> 4) | (((qh[i] >> (2 * c)) & 3) << 4);
        }
        if (j == 0) {
            memcpy(meta, x->scales, 16), memcpy(meta + 16, &x->d, 2);
            meta[18] = meta[19] = 0;
        }
        break;
    }
    default: break;
    }
}

typedef struct repack_job {
    enum qtype t;
    const void *src;
    int64_t n0, n1, K;
    void *qs, *hi, *meta;
    pthread_t th;
    bool threaded;
} repack_job;

/* rows [n0, n1): each row's units go to their own bytes of the three planes (rows are independent) */
static void *repack_rows(void *arg) {
    const repack_job *j = arg;
    const enum qtype t = j->t;
    const int64_t K = j->K;
    const qtype_info *ti = qtype_get(t);
    size_t row_bytes = (size_t)(K / ti->blck) * ti->type_size;
    int64_t U = K / 32, G = K / gemv_meta_group(t);
    int qb = gemv_qs_bytes(t), hb = gemv_hi_bytes(t), mb = gemv_meta_bytes(t), upg = gemv_meta_group(t) / 32;
    for (int64_t n = j->n0; n < j->n1; n++) {
        const uint8_t *row = (const uint8_t *)j->src + (size_t)n * row_bytes;
        for (int64_t u = 0; u < U; u++) {
            int q[32];
            uint8_t *m = (uint8_t *)j->meta + (size_t)(n * G + u / upg) * (size_t)mb;
            unit_quants(t, row, u, q, m);
            uint8_t *o = (uint8_t *)j->qs + (size_t)(n * U + u) * (size_t)qb;
            if (t == QT_Q8_0)
                for (int v = 0; v < 32; v++) o[v] = (uint8_t)q[v];
            else
                for (int v = 0; v < 16; v++) o[v] = (uint8_t)((q[v] & 15) | ((q[v + 16] & 15) << 4));
            if (!hb) continue;
            uint32_t h[2] = {0, 0};
            for (int v = 0; v < 32; v++) {
                int s = (v % 16) / 4, k = v % 4;
                if (hb == 4) h[0] |= (uint32_t)((q[v] >> 4) & 1) << (8 * k + (v / 4));
                else h[v / 16] |= (uint32_t)((q[v] >> 4) & 3) << (8 * k + 2 * s);
            }
            memcpy((uint8_t *)j->hi + (size_t)(n * U + u) * (size_t)hb, h, (size_t)hb);
        }
    }
    return NULL;
}

/* Matrices of at least this many values are repacked by up to REPACK_THREADS threads, rows split evenly
 * (a 35B-A3B's 20 GB loaded at ~0.5 GB/s with one thread on the H200 host: repacking was the load). */
#define REPACK_PAR_VALUES ((int64_t)1 << 22)
#define REPACK_THREADS 16

int cuda_repack(enum qtype t, const void *src, int64_t N, int64_t K, void *qs, void *hi, void *meta, err *e) {
    size_t nq, nh, nm;
    int rc = cuda_repack_sizes(t, N, K, &nq, &nh, &nm, e);
    if (rc) return rc;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = N * K < REPACK_PAR_VALUES || cpus < 2 ? 1 : cpus < REPACK_THREADS ? (int)cpus : REPACK_THREADS;
    if (nt > N) nt = N > 0 ? (int)N : 1; /* jobs[0] always runs (no rows: nothing to do) */
    repack_job jobs[REPACK_THREADS];
    for (int i = 0; i < REPACK_THREADS; i++) /* rows [N i / nt, N (i + 1) / nt) each; jobs past nt unused */
        jobs[i] = (repack_job){.t = t, .src = src, .n0 = i < nt ? N * i / nt : N, .n1 = i < nt ? N * (i + 1) / nt : N,
                               .K = K, .qs = qs, .hi = hi, .meta = meta};
    for (int i = 1; i < nt; i++) { /* a thread that cannot start: the caller does its rows */
        jobs[i].threaded = pthread_create(&jobs[i].th, NULL, repack_rows, &jobs[i]) == 0;
        if (!jobs[i].threaded) repack_rows(&jobs[i]);
    }
    repack_rows(&jobs[0]);
    for (int i = 1; i < nt; i++)
        if (jobs[i].threaded) pthread_join(jobs[i].th, NULL);
    return 0;
}
