/* cpu_gdn: the CPU backend's Gated DeltaNet kernels — the same math as ref_gdn_step and ref_gdn_chunk
 * (ops_ref.c), arranged for speed: every inner loop runs along a contiguous row (axpy form, which the
 * compiler vectorizes) or is a small matrix product (cpu_blas.h), heads run in parallel on the thread
 * pool, and hot loops are compiled for AVX-512, AVX2 and baseline x86-64 with run-time selection.
 * Tests hold them to the references (tests/engine/test_cpu_ops.c). */
#include "backends/cpu/cpu_blas.h"
#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/cpu_vexp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* Heads [j0, j1), each through all T tokens in order: a span of T tokens gives the bits of T one-token
 * steps (a speculative verification then equals decoding its tokens one by one). */
static void step_heads(void *ctx, int64_t j0, int64_t j1, int thread) {
    gdn_job *J = ctx;
    float *u = J->scratch + thread * J->scratch_per;
    const int64_t qk_stride = (int64_t)J->Hk * J->Dk, v_stride = (int64_t)J->Hv * J->Dv;
    for (int64_t j = j0; j < j1; j++) {
        int hk = gdn_key_head((int)j, J->Hk, J->Hv, J->map);
        for (int t = 0; t < J->T; t++)
            step_head(J->S + j * J->Dk * J->Dv, J->q + t * qk_stride + (int64_t)hk * J->Dk,
                      J->k + t * qk_stride + (int64_t)hk * J->Dk, J->v + t * v_stride + j * J->Dv,
                      J->g[(int64_t)t * J->Hv + j], J->beta[(int64_t)t * J->Hv + j], J->o + t * v_stride + j * J->Dv,
                      J->Dk, J->Dv, u);
    }
}

/* ---------------------------------------------------------------- chunked form (see ops_ref.c) */

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
    transpose(k, qk_stride, c, Dk, Kt);
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
    /* a head's results do not depend on the thread (scratch is rewritten per head and chunk) */
    if (T < GDN_STEP_MAX_T) pool_run(pool, Hv, 1, step_heads, &J);
    else pool_run_dynamic(pool, Hv, 1, chunk_heads, &J);
}
