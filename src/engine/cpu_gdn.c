/* cpu_gdn: the CPU backend's Gated DeltaNet and attention kernels — the same math as ref_gdn_step,
 * ref_gdn_chunk and ref_attention (ops_ref.c), arranged for speed: every inner loop runs along a
 * contiguous row (axpy form, which the compiler vectorizes), heads run in parallel on the thread pool, and
 * hot loops are compiled for AVX-512, AVX2 and baseline x86-64 with run-time selection (target_clones).
 * Tests hold them to the references (tests/engine/test_cpu_ops.c). */
#include "engine/cpu_ops.h"
#include "engine/cpu_vexp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* ---------------------------------------------------------------- recurrent step */

typedef struct gdn_job {
    float *S;
    const float *q, *k, *v, *g, *beta;
    float *o;
    int T, Hk, Hv, Dk, Dv, chunk;
    enum gdn_head_map map;
    float *scratch;       /* per thread */
    int64_t scratch_per;  /* floats per thread */
} gdn_job;

/* One value head j, one token: decay, read m = S^T k, u = beta (v - m), write S += k u^T, o = S^T q. */
HOT static void step_head(float *restrict S, const float *restrict q, const float *restrict k, const float *restrict v,
                          float g, float beta, float *restrict o, int Dk, int Dv, float *restrict u) {
    float decay = expf(g);
    memset(u, 0, sizeof(float) * (size_t)Dv);
    for (int a = 0; a < Dk; a++) { /* decay and read in one pass over S */
        float *Sa = S + (int64_t)a * Dv;
        scal(Sa, decay, Dv);
        axpy(u, Sa, k[a], Dv);
    }
    for (int b = 0; b < Dv; b++) u[b] = beta * (v[b] - u[b]);
    memset(o, 0, sizeof(float) * (size_t)Dv);
    for (int a = 0; a < Dk; a++) { /* write and output in one pass */
        float *Sa = S + (int64_t)a * Dv;
        axpy(Sa, u, k[a], Dv);
        axpy(o, Sa, q[a], Dv);
    }
}

static void step_heads(void *ctx, int64_t j0, int64_t j1, int thread) {
    gdn_job *J = ctx;
    float *u = J->scratch + thread * J->scratch_per;
    for (int64_t j = j0; j < j1; j++) {
        int hk = gdn_key_head((int)j, J->Hk, J->Hv, J->map);
        step_head(J->S + j * J->Dk * J->Dv, J->q + (int64_t)hk * J->Dk, J->k + (int64_t)hk * J->Dk,
                  J->v + j * J->Dv, J->g[j], J->beta[j], J->o + j * J->Dv, J->Dk, J->Dv, u);
    }
}

/* ---------------------------------------------------------------- chunked form (see ops_ref.c) */

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

/* Per-thread scratch of the chunked form, in floats. */
static int64_t chunk_scratch(int chunk, int Dk, int Dv) {
    return (int64_t)chunk * (2 * Dv + Dk + 1 + 2 * chunk) + 2LL * Dk * chunk;
}

/* One head, one chunk of c tokens; the math of ref_gdn_chunk (ops_ref.c), as matrix products:
 *   QK = Q K^T, KK = K K^T (full c x c; the lower triangles are used), D_ij = exp(gam_i - gam_j)
 *   (I + L) U = diag(beta) V, (I + L) W = diag(beta exp(gam)) K      forward substitution, L_ij = beta_i KK_ij D_ij
 *   V' = U - W S
 *   O  = diag(exp(gam)) Q S + P V',  P_ij = QK_ij D_ij (j <= i)
 *   S  = exp(gam_last) S + K'^T V',  K'_j = exp(gam_last - gam_j) k_j */
HOT static void chunk_head(float *restrict S, const float *q, const float *k, const float *v, const float *g,
                           const float *beta, float *o, int c, int64_t qk_stride, int64_t v_stride, int64_t gb_stride,
                           int Dk, int Dv, float *scratch, int chunk) {
    float *U = scratch, *Vp = U + (int64_t)chunk * Dv, *W = Vp + (int64_t)chunk * Dv;
    float *gam = W + (int64_t)chunk * Dk, *P = gam + chunk, *KK = P + (int64_t)chunk * chunk;
    float *Kt = KK + (int64_t)chunk * chunk, *Ks = Kt + (int64_t)Dk * chunk;
    float acc = 0;
    for (int i = 0; i < c; i++) gam[i] = (acc += g[i * gb_stride]);
    /* K^T (Dk x c) for the c x c products */
    for (int j = 0; j < c; j++)
        for (int a = 0; a < Dk; a++) Kt[(int64_t)a * c + j] = k[j * qk_stride + a];
    memset(P, 0, sizeof(float) * (size_t)c * c);
    memset(KK, 0, sizeof(float) * (size_t)c * c);
    gemm_nn(c, c, Dk, 1.0f, q, qk_stride, Kt, c, P, c);
    gemm_nn(c, c, Dk, 1.0f, k, qk_stride, Kt, c, KK, c);
    /* decay weights: P_ij *= D_ij (j <= i, else 0); KK_ij <- L_ij (j < i); D by the vector exp, 8 j at a
     * time (gam_i - gam_j <= 0 there, so no clamp is reached) */
    for (int i = 0; i < c; i++) {
        float bi = beta[i * gb_stride];
        int j = 0;
        for (; j + 8 <= i + 1; j += 8) {
            v8sf gj, pv, kv;
            memcpy(&gj, gam + j, sizeof gj);
            memcpy(&pv, P + i * c + j, sizeof pv);
            memcpy(&kv, KK + i * c + j, sizeof kv);
            v8sf dv = vexp8(gam[i] - gj);
            pv = pv * dv;
            kv = kv * (bi * dv);
            memcpy(P + i * c + j, &pv, sizeof pv);
            memcpy(KK + i * c + j, &kv, sizeof kv);
        }
        for (; j <= i; j++) {
            float d = expf(gam[i] - gam[j]);
            P[i * c + j] *= d;
            KK[i * c + j] *= bi * d;
        }
        for (j = i + 1; j < c; j++) P[i * c + j] = 0;
    }
    /* U and W by forward substitution through (I + L) */
    for (int i = 0; i < c; i++) {
        const float *ki = k + i * qk_stride;
        float bi = beta[i * gb_stride], bgi = bi * expf(gam[i]);
        float *Ui = U + (int64_t)i * Dv, *Wi = W + (int64_t)i * Dk;
        for (int b = 0; b < Dv; b++) Ui[b] = bi * v[i * v_stride + b];
        for (int a = 0; a < Dk; a++) Wi[a] = bgi * ki[a];
        for (int j = 0; j < i; j++) {
            float l = KK[i * c + j];
            axpy(Ui, U + (int64_t)j * Dv, -l, Dv);
            axpy(Wi, W + (int64_t)j * Dk, -l, Dk);
        }
    }
    /* V' = U - W S */
    memcpy(Vp, U, sizeof(float) * (size_t)c * Dv);
    gemm_nn(c, Dv, Dk, -1.0f, W, Dk, S, Dv, Vp, Dv);
    /* O = diag(exp(gam)) Q S + P V' (rows of o are strided) */
    for (int i = 0; i < c; i++) memset(o + i * v_stride, 0, sizeof(float) * (size_t)Dv);
    gemm_nn(c, Dv, Dk, 1.0f, q, qk_stride, S, Dv, o, v_stride);
    for (int i = 0; i < c; i++) scal(o + i * v_stride, expf(gam[i]), Dv);
    gemm_nn(c, Dv, c, 1.0f, P, c, Vp, Dv, o, v_stride);
    /* S = exp(gam_last) S + K'^T V' */
    float last = gam[c - 1];
    for (int a = 0; a < Dk; a++)
        for (int j = 0; j < c; j++) Ks[(int64_t)a * c + j] = Kt[(int64_t)a * c + j] * expf(last - gam[j]);
    scal(S, expf(last), Dk * Dv);
    gemm_nn(Dk, Dv, c, 1.0f, Ks, c, Vp, Dv, S, Dv);
}

static void chunk_heads(void *ctx, int64_t j0, int64_t j1, int thread) {
    gdn_job *J = ctx;
    int64_t qk_stride = (int64_t)J->Hk * J->Dk, v_stride = (int64_t)J->Hv * J->Dv;
    float *scratch = J->scratch + thread * J->scratch_per;
    for (int64_t j = j0; j < j1; j++) {
        int hk = gdn_key_head((int)j, J->Hk, J->Hv, J->map);
        for (int t0 = 0; t0 < J->T; t0 += J->chunk) {
            int c = J->T - t0 < J->chunk ? J->T - t0 : J->chunk;
            chunk_head(J->S + j * J->Dk * J->Dv, J->q + t0 * qk_stride + (int64_t)hk * J->Dk,
                       J->k + t0 * qk_stride + (int64_t)hk * J->Dk, J->v + t0 * v_stride + j * J->Dv,
                       J->g + (int64_t)t0 * J->Hv + j, J->beta + (int64_t)t0 * J->Hv + j,
                       J->o + t0 * v_stride + j * J->Dv, c, qk_stride, v_stride, J->Hv, J->Dk, J->Dv, scratch,
                       J->chunk);
        }
    }
}

int64_t cpu_gdn_scratch(int n_threads, int chunk, int Dk, int Dv) {
    int64_t step = Dv; /* the step form needs one row of Dv per thread */
    int64_t ch = chunk_scratch(chunk, Dk, Dv);
    return (int64_t)n_threads * (ch > step ? ch : step);
}

void cpu_gdn(threadpool *pool, float *scratch, float *S, const float *q, const float *k, const float *v,
             const float *g, const float *beta, float *o, int T, int Hk, int Hv, int Dk, int Dv, int chunk,
             enum gdn_head_map map) {
    int64_t per = chunk_scratch(chunk, Dk, Dv);
    gdn_job J = {S, q, k, v, g, beta, o, T, Hk, Hv, Dk, Dv, chunk, map, scratch, per > Dv ? per : Dv};
    pool_run(pool, Hv, 1, T == 1 ? step_heads : chunk_heads, &J);
}

/* ---------------------------------------------------------------- attention */

typedef struct att_job {
    const float *q, *k, *v;
    float *out;
    const int32_t *qpos, *kpos;
    int T, S, Hq, Hkv, D;
    float scale;
    int window;
    float *scratch;
    int64_t scratch_per;
} att_job;

/* items are (token, head) pairs */
HOT static void att_rows(void *ctx, int64_t r0, int64_t r1, int thread) {
    att_job *J = ctx;
    float *sc = J->scratch + thread * J->scratch_per;
    int group = J->Hq / J->Hkv;
    for (int64_t r = r0; r < r1; r++) {
        int t = (int)(r / J->Hq), h = (int)(r % J->Hq), kvh = h / group;
        const float *qh = J->q + r * J->D;
        float *oh = J->out + r * J->D;
        float mx = -INFINITY;
        int lo = 0, n = 0; /* visible keys are [lo, n): kpos ascending, window behind the query */
        while (n < J->S && J->kpos[n] <= J->qpos[t]) n++;
        if (J->window > 0)
            while (lo < n && J->qpos[t] - J->kpos[lo] >= J->window) lo++;
        for (int s = lo; s < n; s++) {
            sc[s] = dot(qh, J->k + ((int64_t)s * J->Hkv + kvh) * J->D, J->D) * J->scale;
            mx = sc[s] > mx ? sc[s] : mx;
        }
        double sum = 0;
        for (int s = lo; s < n; s++) sum += sc[s] = expf(sc[s] - mx);
        memset(oh, 0, sizeof(float) * (size_t)J->D);
        for (int s = lo; s < n; s++) axpy(oh, J->v + ((int64_t)s * J->Hkv + kvh) * J->D, (float)(sc[s] / sum), J->D);
    }
}

void cpu_attention(threadpool *pool, float *scratch, int64_t scratch_per, const float *q, const float *k,
                   const float *v, float *out, const int32_t *qpos, const int32_t *kpos, int T, int S, int Hq, int Hkv,
                   int D, float scale, int window) {
    att_job J = {q, k, v, out, qpos, kpos, T, S, Hq, Hkv, D, scale, window, scratch, scratch_per};
    pool_run(pool, (int64_t)T * Hq, 1, att_rows, &J);
}
