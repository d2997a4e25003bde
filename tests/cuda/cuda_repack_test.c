/* cuda_repack_test: the CUDA GEMV weight layout (backends/cuda/repack.c) decoded with the kernel's own
 * unpacking code (kernels/gemv_unpack.h) reproduces the CPU dequantizer bit for bit, for every GEMV type
 * (and its one-word form gives the unit form's words);
 * and types without a kernel are refused by name. Runs without a GPU. */
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/kernels/gemv_unpack.h"
#include "backends/cuda/repack.h"
#include "base/rng.h"
#include "check.h"
#include "quant/quant.h"

static void check_type(enum qtype t, int64_t N, int64_t K, uint64_t seed) {
    const qtype_info *ti = qtype_get(t);
    size_t row_bytes = (size_t)(K / ti->blck) * ti->type_size, nq, nh, nm;
    uint8_t *src = malloc(row_bytes * (size_t)N);
    float *ref = malloc(sizeof(float) * (size_t)(N * K));
    rng r;
    rng_seed(&r, seed);
    CHECK(quant_random_blocks(t, src, N * (K / ti->blck), 0.05f, &r));
    const quant_ops *ops = quant_ops_get(t, QUANT_ISA_SCALAR);
    for (int64_t n = 0; n < N; n++) ops->to_float(src + (size_t)n * row_bytes, ref + n * K, K);
    err e = {0};
    CHECK(cuda_repack_sizes(t, N, K, &nq, &nh, &nm, &e) == 0);
    CHECKF(nq + nh + nm <= row_bytes * (size_t)N + (size_t)(N * K / 256) * 2, "%s: %zu bytes for %zu", ti->name,
           nq + nh + nm, row_bytes * (size_t)N);
    uint8_t *qs = malloc(nq), *hi = malloc(nh ? nh : 1), *meta = malloc(nm);
    CHECK(cuda_repack(t, src, N, K, qs, hi, meta, &e) == 0);
    int64_t U = K / 32, bad = 0;
    int G = gemv_meta_group(t) / 32;
    for (int64_t n = 0; n < N; n++)
        for (int64_t u = 0; u < U; u++) {
            uint32_t q[8], h[2] = {0, 0}, v[8];
            memcpy(q, qs + (size_t)(n * U + u) * (size_t)gemv_qs_bytes(t), (size_t)gemv_qs_bytes(t));
            if (gemv_hi_bytes(t))
                memcpy(h, hi + (size_t)(n * U + u) * (size_t)gemv_hi_bytes(t), (size_t)gemv_hi_bytes(t));
            gemv_unpack_unit(t, q, h, v);
            for (int w = 0; w < 8; w++) /* the one-word form (the batched GEMV's fragments) */
                if (gemv_unpack_word(t, q[t == QT_Q8_0 ? w : w & 3], h, w) != v[w] && bad++ < 5)
                    fprintf(stderr, "%s row %lld unit %lld: word %d differs from the unit's\n", ti->name, (long long)n,
                            (long long)u, w);
            gemv_scale s = gemv_unit_scale(t, meta + (size_t)(n * (U / G) + u / G) * (size_t)gemv_meta_bytes(t),
                                           (int)(u % G));
            for (int i = 0; i < 32; i++) {
                int lane = (int8_t)(v[i / 4] >> (8 * (i % 4)));
                float w = t == QT_Q6_K ? (s.a * (float)(i < 16 ? s.sc0 : s.sc1)) * (float)lane
                                       : s.a * (float)lane + s.b;
                float want = ref[n * K + u * 32 + i];
                if (memcmp(&w, &want, 4) && bad++ < 5)
                    fprintf(stderr, "%s row %lld value %lld: %.9g, dequantizer %.9g\n", ti->name, (long long)n,
                            (long long)(u * 32 + i), w, want);
            }
        }
    CHECKF(bad == 0, "%s: %lld values differ", ti->name, (long long)bad);
    free(src), free(ref), free(qs), free(hi), free(meta);
}

int main(void) {
    const enum qtype types[] = {QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q8_0, QT_Q4_K, QT_Q5_K, QT_Q6_K};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) check_type(types[i], 5, 1024, 7 + i);
    /* large enough for the threaded repack (rows split over threads; 1031 rows: uneven chunks) */
    check_type(QT_Q4_K, 1031, 4096, 99);
    check_type(QT_Q6_K, 1031, 4096, 98);
    size_t a, b, c;
    err e = {0};
    CHECK(cuda_repack_sizes(QT_Q3_K, 4, 256, &a, &b, &c, &e) == ERR_UNSUPPORTED && strstr(e.msg, "Q3_K"));
    CHECK(cuda_repack_sizes(QT_Q4_K, 4, 320, &a, &b, &c, &e) == ERR_ARG);
    return check_report("cuda_repack_test");
}
