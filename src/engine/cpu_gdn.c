/* cpu_gdn: the CPU backend's Gated DeltaNet and attention kernels — the same math as ref_gdn_step,
 * ref_gdn_chunk and ref_attention (ops_ref.c), arranged for speed: every inner loop runs along a
 * contiguous row (axpy form, which the compiler vectorizes), heads run in parallel on the thread pool, and
 * hot loops are compiled for AVX-512, AVX2 and baseline x86-64 with run-time selection (target_clones).
 * Tests hold them to the references (tests/engine/test_cpu_ops.c). */
#include "engine/cpu_ops.h"

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

HOT static void chunk_head(float *restrict S, const float *q, const float *k, const float *v, const float *g,
                           const float *beta, float *o, int c, int64_t qk_stride, int64_t v_stride, int64_t gb_stride,
                           int Dk, int Dv, float *scratch, int chunk) {
    float *U = scratch, *Vp = U + (int64_t)chunk * Dv, *W = Vp + (int64_t)chunk * Dv;
    float *gam = W + (int64_t)chunk * Dk, *Lm = gam + chunk;
    float acc = 0;
    for (int i = 0; i < c; i++) gam[i] = (acc += g[i * gb_stride]);
    /* U and W by forward substitution through (I + L) */
    for (int i = 0; i < c; i++) {
        const float *ki = k + i * qk_stride;
        float bi = beta[i * gb_stride], bgi = bi * expf(gam[i]);
        float *Ui = U + (int64_t)i * Dv, *Wi = W + (int64_t)i * Dk;
        for (int b = 0; b < Dv; b++) Ui[b] = bi * v[i * v_stride + b];
        for (int a = 0; a < Dk; a++) Wi[a] = bgi * ki[a];
        for (int j = 0; j < i; j++) {
            float l = bi * dot(ki, k + j * qk_stride, Dk) * expf(gam[i] - gam[j]);
            Lm[i * chunk + j] = l;
            axpy(Ui, U + (int64_t)j * Dv, -l, Dv);
            axpy(Wi, W + (int64_t)j * Dk, -l, Dk);
        }
    }
    /* V' = U - W S */
    for (int i = 0; i < c; i++) {
        float *Vi = Vp + (int64_t)i * Dv;
        memcpy(Vi, U + (int64_t)i * Dv, sizeof(float) * (size_t)Dv);
        for (int a = 0; a < Dk; a++) axpy(Vi, S + (int64_t)a * Dv, -W[(int64_t)i * Dk + a], Dv);
    }
    /* outputs: exp(gam_i) S^T q_i + sum_{j<=i} (q_i . k_j) exp(gam_i - gam_j) V'_j */
    for (int i = 0; i < c; i++) {
        const float *qi = q + i * qk_stride;
        float *oi = o + i * v_stride;
        memset(oi, 0, sizeof(float) * (size_t)Dv);
        for (int a = 0; a < Dk; a++) axpy(oi, S + (int64_t)a * Dv, qi[a], Dv);
        scal(oi, expf(gam[i]), Dv);
        for (int j = 0; j <= i; j++)
            axpy(oi, Vp + (int64_t)j * Dv, dot(qi, k + j * qk_stride, Dk) * expf(gam[i] - gam[j]), Dv);
    }
    /* S <- exp(gam_last) S + sum_j exp(gam_last - gam_j) k_j V'_j^T */
    float last = gam[c - 1];
    for (int a = 0; a < Dk; a++) {
        float *Sa = S + (int64_t)a * Dv;
        scal(Sa, expf(last), Dv);
        for (int j = 0; j < c; j++) axpy(Sa, Vp + (int64_t)j * Dv, expf(last - gam[j]) * k[j * qk_stride + a], Dv);
    }
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
    return (int64_t)n_threads * ref_gdn_chunk_scratch(chunk, Dk, Dv);
}

void cpu_gdn(threadpool *pool, float *scratch, float *S, const float *q, const float *k, const float *v,
             const float *g, const float *beta, float *o, int T, int Hk, int Hv, int Dk, int Dv, int chunk,
             enum gdn_head_map map) {
    gdn_job J = {S, q, k, v, g, beta, o, T, Hk, Hv, Dk, Dv, chunk, map, scratch, ref_gdn_chunk_scratch(chunk, Dk, Dv)};
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
