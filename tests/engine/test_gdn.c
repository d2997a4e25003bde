/* Gated DeltaNet reference: the chunked form equals the recurrent (step) form on random inputs, for
 * lengths around the chunk size (1, 63, 64, 65, 130), both head maps, a nonzero initial state and
 * awkward head dims (Dk 60, Dv 36). Also: conv1d with state over split sequences equals one pass. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "check.h"
#include "engine/ops_ref.h"

static float max_rel(const float *a, const float *b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (d > num) num = d;
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return (float)(num / (den > 0 ? den : 1));
}

static void fill(rng *r, float *x, int64_t n, float s) {
    for (int64_t i = 0; i < n; i++) x[i] = s * rng_normal(r);
}

static void check_chunk_vs_step(int T, int Hk, int Hv, int Dk, int Dv, int chunk, enum gdn_head_map map) {
    rng r;
    rng_seed(&r, (uint64_t)(T * 1000 + Hv * 10 + map));
    int64_t nqk = (int64_t)T * Hk * Dk, nv = (int64_t)T * Hv * Dv, nS = (int64_t)Hv * Dk * Dv;
    float *q = malloc(sizeof(float) * nqk), *k = malloc(sizeof(float) * nqk), *v = malloc(sizeof(float) * nv);
    float *g = malloc(sizeof(float) * T * Hv), *beta = malloc(sizeof(float) * T * Hv);
    float *S1 = malloc(sizeof(float) * nS), *S2 = malloc(sizeof(float) * nS);
    float *o1 = malloc(sizeof(float) * nv), *o2 = malloc(sizeof(float) * nv);
    float *scratch = malloc(sizeof(float) * ref_gdn_chunk_scratch(chunk, Dk, Dv));
    fill(&r, q, nqk, 1);
    fill(&r, k, nqk, 1);
    fill(&r, v, nv, 1);
    ref_l2_norm(q, T, Hk, Dk, 1e-6f, 1.0f / sqrtf((float)Dk));
    ref_l2_norm(k, T, Hk, Dk, 1e-6f, 1.0f);
    for (int i = 0; i < T * Hv; i++) {
        float a = rng_normal(&r);
        g[i] = -expf(0.5f * rng_normal(&r)) * log1pf(expf(a)); /* -exp(A_log) * softplus(a + dt) */
        beta[i] = 1.0f / (1.0f + expf(-2.0f * rng_normal(&r)));
    }
    fill(&r, S1, nS, 0.3f);
    memcpy(S2, S1, sizeof(float) * nS);
    for (int t = 0; t < T; t++)
        ref_gdn_step(S1, q + (int64_t)t * Hk * Dk, k + (int64_t)t * Hk * Dk, v + (int64_t)t * Hv * Dv,
                     g + t * Hv, beta + t * Hv, o1 + (int64_t)t * Hv * Dv, Hk, Hv, Dk, Dv, map);
    ref_gdn_chunk(S2, q, k, v, g, beta, o2, T, Hk, Hv, Dk, Dv, chunk, map, scratch);
    float eo = max_rel(o2, o1, nv), es = max_rel(S2, S1, nS);
    CHECKF(eo < 2e-5f && es < 2e-5f, "T=%d Hk=%d Hv=%d Dk=%d Dv=%d chunk=%d map=%d: out err %g state err %g",
           T, Hk, Hv, Dk, Dv, chunk, map, eo, es);
    printf("gdn chunk(%d) vs step T=%-3d Hk=%d Hv=%d Dk=%d Dv=%d map=%s: max rel err out %.2e state %.2e\n",
           chunk, T, Hk, Hv, Dk, Dv, map == GDN_HEADS_TILED ? "tiled" : "grouped", eo, es);
    free(q); free(k); free(v); free(g); free(beta); free(S1); free(S2); free(o1); free(o2); free(scratch);
}

static void check_conv_split(void) {
    enum { T = 37, CH = 20, K = 4 };
    rng r;
    rng_seed(&r, 7);
    float x[T * CH], w[CH * K], st1[(K - 1) * CH], st2[(K - 1) * CH], y1[T * CH], y2[T * CH];
    fill(&r, x, T * CH, 1);
    fill(&r, w, CH * K, 0.5f);
    fill(&r, st1, (K - 1) * CH, 1);
    memcpy(st2, st1, sizeof st1);
    ref_conv1d_silu(x, st1, w, y1, T, CH, K);
    /* the same sequence in pieces of 1, 2, 5, 29 tokens */
    int pieces[] = {1, 2, 5, 29}, t0 = 0;
    for (int i = 0; i < 4; i++) {
        ref_conv1d_silu(x + t0 * CH, st2, w, y2 + t0 * CH, pieces[i], CH, K);
        t0 += pieces[i];
    }
    CHECK(t0 == T);
    CHECKF(memcmp(y1, y2, sizeof y1) == 0 && memcmp(st1, st2, sizeof st1) == 0,
           "conv1d in pieces differs from one pass");
    /* first output by hand: w[ch][K-1] * x0 + sum_j w[ch][j] * state[j+1 ...] */
    rng_seed(&r, 7);
    fill(&r, x, T * CH, 1);
    fill(&r, w, CH * K, 0.5f);
    fill(&r, st1, (K - 1) * CH, 1);
    float acc = w[K - 1] * x[0];
    for (int j = 0; j < K - 1; j++) acc += w[j] * st1[j * CH];
    CHECKF(fabsf(y1[0] - acc / (1 + expf(-acc))) < 1e-6f, "conv1d first output %g vs %g", y1[0],
           acc / (1 + expf(-acc)));
}

int main(void) {
    int Ts[] = {1, 63, 64, 65, 130};
    for (int i = 0; i < 5; i++) check_chunk_vs_step(Ts[i], 2, 4, 60, 36, 64, GDN_HEADS_TILED);
    check_chunk_vs_step(130, 2, 6, 32, 32, 64, GDN_HEADS_GROUPED);
    check_chunk_vs_step(100, 3, 3, 16, 16, 16, GDN_HEADS_TILED);
    check_conv_split();
    return check_report("test_gdn");
}
