/* The CPU backend's fast kernels against their naive references (ops_ref.c) on fresh random inputs with
 * awkward sizes, 1 and 3 threads: cpu_gdn (step and chunked) and cpu_attention (with and without a
 * sliding window). Tolerance: 1e-5 of the output range (they differ only in float summation order).
 * The window itself is pinned against plain attention over only the keys it should see. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "check.h"
#include "backends/cpu/cpu_ops.h"

static float max_rel(const float *a, const float *b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= num)) num = d;
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return (float)(num / (den > 0 ? den : 1));
}

static float *randn(rng *r, int64_t n, float s) {
    float *x = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = s * rng_normal(r);
    return x;
}

static void check_gdn(threadpool *pool, int T, int Hk, int Hv, int Dk, int Dv) {
    rng r;
    rng_seed(&r, (uint64_t)(T * 7 + Dk));
    int64_t nqk = (int64_t)T * Hk * Dk, nv = (int64_t)T * Hv * Dv, nS = (int64_t)Hv * Dk * Dv;
    float *q = randn(&r, nqk, 1), *k = randn(&r, nqk, 1), *v = randn(&r, nv, 1);
    float *g = randn(&r, (int64_t)T * Hv, 1), *beta = randn(&r, (int64_t)T * Hv, 1);
    for (int i = 0; i < T * Hv; i++) {
        g[i] = -log1pf(expf(g[i]));
        beta[i] = 1 / (1 + expf(-beta[i]));
    }
    ref_l2_norm(q, T, Hk, Dk, 1e-6f, 1 / sqrtf((float)Dk));
    ref_l2_norm(k, T, Hk, Dk, 1e-6f, 1);
    float *S1 = randn(&r, nS, 0.2f), *S2 = malloc(sizeof(float) * (size_t)nS);
    memcpy(S2, S1, sizeof(float) * (size_t)nS);
    float *o1 = malloc(sizeof(float) * (size_t)nv), *o2 = malloc(sizeof(float) * (size_t)nv);
    float *rs = malloc(sizeof(float) * (size_t)ref_gdn_chunk_scratch(64, Dk, Dv));
    float *cs = malloc(sizeof(float) * (size_t)cpu_gdn_scratch(pool_n_threads(pool), 64, Dk, Dv));
    if (T == 1) ref_gdn_step(S1, q, k, v, g, beta, o1, Hk, Hv, Dk, Dv, GDN_HEADS_TILED);
    else ref_gdn_chunk(S1, q, k, v, g, beta, o1, T, Hk, Hv, Dk, Dv, 64, GDN_HEADS_TILED, rs);
    cpu_gdn(pool, cs, S2, q, k, v, g, beta, o2, T, Hk, Hv, Dk, Dv, 64, GDN_HEADS_TILED);
    float eo = max_rel(o2, o1, nv), es = max_rel(S2, S1, nS);
    printf("cpu_gdn T=%-3d Hk=%d Hv=%d Dk=%d Dv=%d threads=%d: out %.1e state %.1e\n", T, Hk, Hv, Dk, Dv,
           pool_n_threads(pool), eo, es);
    CHECKF(eo < 1e-5f && es < 1e-5f, "cpu_gdn T=%d: %g %g", T, eo, es);
    free(q), free(k), free(v), free(g), free(beta), free(S1), free(S2), free(o1), free(o2), free(rs), free(cs);
}

static void check_attention(threadpool *pool, int T, int S, int Hq, int Hkv, int D, int window) {
    rng r;
    rng_seed(&r, (uint64_t)(T + S));
    float *q = randn(&r, (int64_t)T * Hq * D, 1), *k = randn(&r, (int64_t)S * Hkv * D, 1);
    float *v = randn(&r, (int64_t)S * Hkv * D, 1);
    float *o1 = malloc(sizeof(float) * (size_t)T * Hq * D), *o2 = malloc(sizeof(float) * (size_t)T * Hq * D);
    int32_t *qpos = malloc(sizeof(int32_t) * (size_t)T), *kpos = malloc(sizeof(int32_t) * (size_t)S);
    for (int s = 0; s < S; s++) kpos[s] = s;
    for (int t = 0; t < T; t++) qpos[t] = S - T + t;
    float *sc = malloc(sizeof(float) * (size_t)S);
    float *cs = malloc(sizeof(float) * (size_t)cpu_attention_scratch(pool_n_threads(pool), D));
    ref_attention(q, k, v, o1, qpos, kpos, T, S, Hq, Hkv, D, 1 / sqrtf((float)D), window, sc);
    cpu_attention(pool, cs, q, k, v, QT_F32, QT_F32, o2, qpos, kpos, T, S, Hq, Hkv, D, 1 / sqrtf((float)D), window);
    float e = max_rel(o2, o1, (int64_t)T * Hq * D);
    printf("cpu_attention T=%d S=%d Hq=%d Hkv=%d D=%d window=%d: %.1e\n", T, S, Hq, Hkv, D, window, e);
    CHECKF(e < 1e-5f, "cpu_attention window %d: %g", window, e);
    if (window > 0) {
        /* the last query sees exactly the keys at positions qpos - window + 1 .. qpos */
        int t = T - 1, first = qpos[t] - window + 1 > 0 ? qpos[t] - window + 1 : 0, n = qpos[t] + 1 - first;
        ref_attention(q + (int64_t)t * Hq * D, k + (int64_t)first * Hkv * D, v + (int64_t)first * Hkv * D, o2,
                      qpos + t, kpos + first, 1, n, Hq, Hkv, D, 1 / sqrtf((float)D), ATTN_NO_WINDOW, sc);
        float ew = max_rel(o2, o1 + (int64_t)t * Hq * D, (int64_t)Hq * D);
        CHECKF(ew < 1e-6f, "ref_attention window %d differs from attention over the window's keys: %g", window, ew);
    }
    free(q), free(k), free(v), free(o1), free(o2), free(qpos), free(kpos), free(sc), free(cs);
}

/* the elementwise kernels (cpu_elementwise.c) against plain-loop references */
static void check_elementwise(threadpool *pool) {
    rng r;
    rng_seed(&r, 4242);
    int64_t n = 10007;
    float *g = randn(&r, n, 4), *u = randn(&r, n, 1), *y1 = malloc(sizeof(float) * n), *y2 = malloc(sizeof(float) * n);
    g[0] = -100.0f; /* exp saturation on both sides */
    g[1] = 100.0f;
    for (int64_t i = 0; i < n; i++) y1[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
    cpu_silu_mul(pool, g, u, y2, n);
    float e1 = max_rel(y2, y1, n);
    for (int64_t i = 0; i < n; i++) y1[i] = u[i] / (1.0f + expf(-g[i]));
    memcpy(y2, u, sizeof(float) * n);
    cpu_sigmoid_mul(pool, y2, g, n);
    float e2 = max_rel(y2, y1, n);
    ref_geglu(g, u, y1, n);
    cpu_geglu(pool, g, u, y2, n);
    float e5 = max_rel(y2, y1, n);
    /* rms norm: 37 rows of 300 (a tail after the 16-wide sums) */
    float *w = randn(&r, 300, 1);
    ref_rms_norm(u, w, y1, 33, 300, 1e-6f);
    cpu_rms_norm_rows(pool, u, w, y2, 33, 300, 1e-6f);
    float e3 = max_rel(y2, y1, 33 * 300);
    /* conv1d: 150 channels (a partial 64-block), K = 4, sequences of 1, 2 and 37 tokens, state carried */
    enum { CH = 150, K = 4 };
    float *cw = randn(&r, CH * K, 0.5f), *s1 = randn(&r, (K - 1) * CH, 1), *s2 = malloc(sizeof(float) * (K - 1) * CH);
    memcpy(s2, s1, sizeof(float) * (K - 1) * CH);
    float e4 = 0;
    int lens[] = {1, 2, 37};
    for (int q = 0; q < 3; q++) {
        float *x = randn(&r, (int64_t)lens[q] * CH, 1);
        ref_conv1d_silu(x, s1, cw, y1, lens[q], CH, K);
        CHECK(cpu_conv1d_silu(pool, x, s2, cw, y2, lens[q], CH, K) == 0);
        float e = max_rel(y2, y1, (int64_t)lens[q] * CH), es = max_rel(s2, s1, (K - 1) * CH);
        e4 = e > e4 ? e : e4;
        CHECKF(es == 0, "conv state differs after %d tokens", lens[q]);
        free(x);
    }
    /* rope: bit-exact with the reference, both modes, a partial rotation, per-pair factors */
    {
        enum { RT = 21, RH = 5, RD = 64 };
        float *x1 = randn(&r, RT * RH * RD, 1), *x2 = malloc(sizeof(float) * RT * RH * RD), *fac = randn(&r, 24, 0.1f);
        int32_t pos[RT];
        for (int t = 0; t < RT; t++) pos[t] = 1000 + 37 * t;
        for (int i = 0; i < 24; i++) fac[i] += 1.0f;
        rope_params rps[] = {{ROPE_NORM, 64, 10000.0f, 1.0f}, {ROPE_NEOX, 48, 1e6f, 0.25f}};
        for (int q = 0; q < 2; q++) {
            memcpy(x2, x1, sizeof(float) * RT * RH * RD);
            float *x3 = malloc(sizeof(float) * RT * RH * RD);
            memcpy(x3, x1, sizeof(float) * RT * RH * RD);
            ref_rope(x2, pos, RT, RH, RD, &rps[q], q ? fac : NULL);
            cpu_rope(pool, x3, pos, RT, RH, RD, &rps[q], q ? fac : NULL);
            CHECKF(memcmp(x2, x3, sizeof(float) * RT * RH * RD) == 0, "cpu_rope mode %d differs from ref_rope", q);
            free(x3);
        }
        free(x1), free(x2), free(fac);
    }
    printf("elementwise threads=%d: silu_mul %.1e sigmoid_mul %.1e geglu %.1e rms_norm %.1e conv1d %.1e\n",
           pool_n_threads(pool), e1, e2, e5, e3, e4);
    CHECKF(e1 < 1e-6f && e2 < 1e-6f && e3 < 1e-6f && e4 < 1e-6f && e5 < 1e-6f, "elementwise: %g %g %g %g %g", e1,
           e2, e3, e4, e5);
    free(g), free(u), free(y1), free(y2), free(w), free(cw), free(s1), free(s2);
}

int main(void) {
    int threads[] = {1, 3};
    for (int i = 0; i < 2; i++) {
        threadpool *p = pool_new(threads[i]);
        check_gdn(p, 1, 2, 6, 60, 36);
        check_gdn(p, 63, 2, 6, 60, 36);
        check_gdn(p, 130, 3, 3, 32, 48);
        check_gdn(p, 200, 2, 4, 128, 128); /* the real head size, blocks without tails */
        check_attention(p, 1, 37, 6, 2, 60, ATTN_NO_WINDOW);
        check_attention(p, 19, 19, 4, 4, 64, ATTN_NO_WINDOW);
        check_attention(p, 5, 70, 8, 1, 36, ATTN_NO_WINDOW);
        check_attention(p, 1, 37, 6, 2, 60, 7);
        check_attention(p, 19, 19, 4, 4, 64, 5);
        check_attention(p, 23, 70, 8, 1, 36, 16);
        /* several query blocks (32) and key blocks (128) with tails; a prompt after a cached prefix */
        check_attention(p, 200, 300, 4, 1, 256, ATTN_NO_WINDOW);
        check_attention(p, 200, 300, 4, 1, 256, 129);
        check_attention(p, 97, 97, 6, 3, 64, ATTN_NO_WINDOW);
        check_elementwise(p);
        pool_free(p);
    }
    return check_report("test_cpu_ops");
}
