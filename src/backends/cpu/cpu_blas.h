/* cpu_blas: the small f32 vector and matrix kernels of the CPU backend's sequence-mixing ops (internal to
 * src/engine/; included by cpu_gdn.c and cpu_attention.c). Static, so each including file gets its own
 * copies; HOT functions are compiled for AVX-512, AVX2 and baseline x86-64 with run-time selection
 * (target_clones), each clone with its ISA's vector instructions. */
#ifndef LLM170_ENGINE_CPU_BLAS_H
#define LLM170_ENGINE_CPU_BLAS_H

#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), optimize("O3")))
#else
#define HOT
#endif

/* y += a * x */
HOT static void axpy(float *restrict y, const float *restrict x, float a, int n) {
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

/* y *= a */
HOT static void scal(float *restrict y, float a, int n) {
    for (int i = 0; i < n; i++) y[i] *= a;
}

/* 16 floats in GCC's vector extension: one zmm in the AVX-512 clone, two ymm / four xmm in the others. The
 * accumulators below are such vectors because plain float arrays of 64 were kept in memory by gcc. */
#pragma GCC diagnostic ignored "-Wpsabi" /* static functions only: the vector ABI note does not apply */
typedef float v16sf __attribute__((vector_size(64)));

static inline __attribute__((always_inline)) v16sf v16_load(const float *p) {
    v16sf v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}

/* the sum of a vector's 16 lanes as a tree (4 shuffles and adds; a lane-by-lane loop is a chain of 16) */
static inline __attribute__((always_inline)) float v16_hsum(v16sf v) {
    typedef int32_t v16si __attribute__((vector_size(64)));
    v += __builtin_shuffle(v, (v16si){8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7});
    v += __builtin_shuffle(v, (v16si){4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11});
    v += __builtin_shuffle(v, (v16si){2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13});
    v += __builtin_shuffle(v, (v16si){1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14});
    return v[0];
}

/* dot product with 4 vector accumulators, so consecutive FMAs do not wait on each other's latency */
HOT static float dot(const float *restrict a, const float *restrict b, int n) {
    v16sf a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    int i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 += v16_load(a + i) * v16_load(b + i);
        a1 += v16_load(a + i + 16) * v16_load(b + i + 16);
        a2 += v16_load(a + i + 32) * v16_load(b + i + 32);
        a3 += v16_load(a + i + 48) * v16_load(b + i + 48);
    }
    for (; i + 16 <= n; i += 16) a0 += v16_load(a + i) * v16_load(b + i);
    float s = v16_hsum((a0 + a1) + (a2 + a3));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* y[j] = alpha * (a . B[j]) for j < M, rows of B at stride ldb: four rows at a time, one accumulator
 * each (four independent chains), a tree sum per row (the scores of one query against a block of keys) */
HOT static void dots(int M, int n, float alpha, const float *restrict a, const float *restrict B, int64_t ldb,
                     float *restrict y) {
    int j = 0;
    for (; j + 4 <= M; j += 4) {
        const float *b0 = B + (int64_t)j * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
        v16sf c0 = {0}, c1 = {0}, c2 = {0}, c3 = {0};
        int i = 0;
        for (; i + 16 <= n; i += 16) {
            const v16sf x = v16_load(a + i);
            c0 += x * v16_load(b0 + i);
            c1 += x * v16_load(b1 + i);
            c2 += x * v16_load(b2 + i);
            c3 += x * v16_load(b3 + i);
        }
        float s0 = v16_hsum(c0), s1 = v16_hsum(c1), s2 = v16_hsum(c2), s3 = v16_hsum(c3);
        for (; i < n; i++) s0 += a[i] * b0[i], s1 += a[i] * b1[i], s2 += a[i] * b2[i], s3 += a[i] * b3[i];
        y[j] = alpha * s0, y[j + 1] = alpha * s1, y[j + 2] = alpha * s2, y[j + 3] = alpha * s3;
    }
    /* the rows left over: the same operations as one chain of the four above (not dot(), whose four
     * accumulators round differently), so a key's score does not depend on which group it falls in: a
     * block of keys one longer (a speculative span's own keys, masked for its first rows) must leave the
     * other keys' scores, and so a span's logits, the bits of one-token passes (issue 16) */
    for (; j < M; j++) {
        const float *b0 = B + (int64_t)j * ldb;
        v16sf c0 = {0};
        int i = 0;
        for (; i + 16 <= n; i += 16) c0 += v16_load(a + i) * v16_load(b0 + i);
        float s0 = v16_hsum(c0);
        for (; i < n; i++) s0 += a[i] * b0[i];
        y[j] = alpha * s0;
    }
}

/* y[0..N) += sum_k a[k] * B[k][0..N) (row stride ldb): a vector-matrix product with the outputs in
 * registers: 256 columns per pass over B's rows (16 vector accumulators, one pass for a 256-wide head),
 * then 64 at a time (the one-row case of gemm_nn without a load and store of y per k) */
HOT static void gemv_t(int N, int K, const float *restrict a, const float *restrict B, int64_t ldb,
                       float *restrict y) {
    int j = 0;
    for (; j + 256 <= N; j += 256) {
        v16sf c[16];
        for (int q = 0; q < 16; q++) c[q] = v16_load(y + j + 16 * q);
        for (int k = 0; k < K; k++) {
            const float *b = B + (int64_t)k * ldb + j;
            const float ak = a[k];
            for (int q = 0; q < 16; q++) c[q] += ak * v16_load(b + 16 * q);
        }
        for (int q = 0; q < 16; q++) __builtin_memcpy(y + j + 16 * q, &c[q], sizeof c[q]);
    }
    for (; j + 64 <= N; j += 64) {
        v16sf c0 = v16_load(y + j), c1 = v16_load(y + j + 16), c2 = v16_load(y + j + 32), c3 = v16_load(y + j + 48);
        for (int k = 0; k < K; k++) {
            const float *b = B + (int64_t)k * ldb + j;
            const float ak = a[k];
            c0 += ak * v16_load(b);
            c1 += ak * v16_load(b + 16);
            c2 += ak * v16_load(b + 32);
            c3 += ak * v16_load(b + 48);
        }
        __builtin_memcpy(y + j, &c0, sizeof c0);
        __builtin_memcpy(y + j + 16, &c1, sizeof c1);
        __builtin_memcpy(y + j + 32, &c2, sizeof c2);
        __builtin_memcpy(y + j + 48, &c3, sizeof c3);
    }
    for (; j < N; j++) {
        float acc = y[j];
        for (int k = 0; k < K; k++) acc += a[k] * B[(int64_t)k * ldb + j];
        y[j] = acc;
    }
}

/* dst[D][n] = src[n][D] (rows of src at stride ld), in 16 x 16 tiles so that the strided side of each
 * tile stays within 16 cache lines (row by row, a 128 x 256 key block
 * transposed 1.6x slower) */
HOT static void transpose(const float *restrict src, int64_t ld, int n, int D, float *restrict dst) {
    for (int j0 = 0; j0 < n; j0 += 16)
        for (int d0 = 0; d0 < D; d0 += 16) {
            const int j1 = j0 + 16 < n ? j0 + 16 : n, d1 = d0 + 16 < D ? d0 + 16 : D;
            for (int j = j0; j < j1; j++)
                for (int d = d0; d < d1; d++) dst[(int64_t)d * n + j] = src[(int64_t)j * ld + d];
        }
}

/* C[M][N] (row stride ldc) += alpha * A[M][K] (lda) . B[K][N] (ldb), row-major floats. The chunked delta
 * rule is five small matrix products per head and chunk; done as dots and axpys they were bound by loads
 * and stores. Blocks of 4 rows x 32 columns keep 128 accumulators in registers (8 zmm / 16 ymm) while
 * B's row streams through; the sums over K run in order, as in the reference. */
#define GB_M 4
#define GB_N 32
HOT static void gemm_nn(int M, int N, int K, float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                        float *C, int64_t ldc) {
    int i = 0;
    for (; i + GB_M <= M; i += GB_M) {
        int j = 0;
        for (; j + GB_N <= N; j += GB_N) {
            float acc[GB_M][GB_N] = {{0}};
            for (int k = 0; k < K; k++) {
                const float *b = B + (int64_t)k * ldb + j;
                _Pragma("GCC unroll 4") for (int r = 0; r < GB_M; r++) {
                    float a = A[(int64_t)(i + r) * lda + k];
                    for (int c = 0; c < GB_N; c++) acc[r][c] += a * b[c];
                }
            }
            _Pragma("GCC unroll 4") for (int r = 0; r < GB_M; r++) axpy(C + (int64_t)(i + r) * ldc + j, acc[r], alpha, GB_N);
        }
        for (; j < N; j++) /* column tail */
            for (int r = 0; r < GB_M; r++) {
                float acc = 0;
                for (int k = 0; k < K; k++) acc += A[(int64_t)(i + r) * lda + k] * B[(int64_t)k * ldb + j];
                C[(int64_t)(i + r) * ldc + j] += alpha * acc;
            }
    }
    for (; i < M; i++) /* row tail */
        for (int k = 0; k < K; k++) axpy(C + (int64_t)i * ldc, B + (int64_t)k * ldb, alpha * A[(int64_t)i * lda + k], N);
}

#endif
