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

/* dot product with 16 independent partial sums (vectorizable without reassociating one sum) */
HOT static float dot(const float *restrict a, const float *restrict b, int n) {
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++) acc[l] += a[i + l] * b[i + l];
    float s = 0;
    for (int l = 0; l < 16; l++) s += acc[l];
    for (; i < n; i++) s += a[i] * b[i];
    return s;
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
