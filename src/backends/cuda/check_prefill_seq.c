/* check_prefill_seq: conformance cases of the sequence-mixing prefill kernels: flash attention
 * (kernels/flash_attn_prefill.cu) against ref_attention, and the chunked Gated DeltaNet
 * (kernels/gdn_chunk.cu) against the step form ref_gdn_step. Error models at each case below. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/check_prefill.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/kernels.h"
#include "base/fp16.h"
#include "engine/ops_ref.h"

/* ---- flash attention ----
 * Inputs: q N(0,1) (the kernel rounds it to f16, so the reference gets the same f16 values), k/v f16 of
 * N(0,1). Error model per output row (query t, head h), in units of max|v|:
 *   - probabilities enter P.V as f16: relative 2^-11 each, at most 2^-11 of the output;
 *   - scores are f32 sums of D exact f16 products: error <= D 2^-23 scale sum_d |q_d k_d| =: es (nats),
 *     which moves each probability by a factor exp(+-es), the output by at most 2 es;
 *   - the f32 accumulation of sum_s p_s v_s and of the row sum: <= n_visible 2^-23 each;
 *   - exp2f: a few ulp, below the rest.
 *   tol = max|v| (2^-11 + 2 es + 2 n_visible 2^-23), doubled for the slack of bounds applied to a product.
 * max_err is reported in units of that tol (tol = 1). Bench cases check 8 sampled query rows. */

typedef struct attn_ctx {
    const float *q;
    const uint16_t *k, *v;
    float *out;
    int T, S, Hq, Hkv, D, pos0, window;
    float scale;
} attn_ctx;

static int attn_launch(void *vctx, int i, cudaStream_t s) {
    attn_ctx *c = vctx;
    (void)i;
    return cuda_flash_attn_prefill(c->q, c->k, c->v, c->out, c->T, c->S, c->Hq, c->Hkv, c->D, c->pos0, c->window,
                                   c->scale, s)
               ? ERR_IO
               : 0;
}

static int64_t attn_visible(int64_t qp, int S, int window) {
    int64_t hi = qp < S - 1 ? qp : S - 1, lo = window > 0 ? qp - window + 1 : 0;
    if (lo < 0) lo = 0;
    return hi >= lo ? hi - lo + 1 : 0;
}

int pf_attn_case(int D, int Hq, int Hkv, int T, int pos0, int window, bool big, uint64_t seed, bool bench,
                 cuda_check_result *res, err *e) {
    if (big && !bench && T > 128) T = 128;
    const int S = pos0 + T;
    const size_t nq = (size_t)T * Hq * D, nkv = (size_t)S * Hkv * D;
    rng r;
    rng_seed(&r, seed);
    float *q = malloc(sizeof(float) * nq), *out = malloc(sizeof(float) * nq), *kf = malloc(sizeof(float) * nkv);
    float *vf = malloc(sizeof(float) * nkv), *qr = malloc(sizeof(float) * (size_t)Hq * D);
    float *oref = malloc(sizeof(float) * (size_t)Hq * D), *scores = malloc(sizeof(float) * (size_t)S);
    uint16_t *kh = malloc(sizeof(uint16_t) * nkv), *vh = malloc(sizeof(uint16_t) * nkv);
    int32_t *kpos = malloc(sizeof(int32_t) * (size_t)S);
    attn_ctx c = {.T = T, .S = S, .Hq = Hq, .Hkv = Hkv, .D = D, .pos0 = pos0, .window = window,
                  .scale = 1.0f / sqrtf((float)D)};
    int rc = 0;
    if (!q || !out || !kf || !vf || !qr || !oref || !scores || !kh || !vh || !kpos) {
        rc = err_set(e, ERR_NOMEM, "host buffers");
        goto done;
    }
    pf_normal(&r, q, (int64_t)nq, 1.0f);
    float vmax = 0;
    for (size_t i = 0; i < nkv; i++) {
        kh[i] = fp16_from_f32(rng_normal(&r));
        vh[i] = fp16_from_f32(rng_normal(&r));
        kf[i] = fp16_to_f32(kh[i]);
        vf[i] = fp16_to_f32(vh[i]);
        if (fabsf(vf[i]) > vmax) vmax = fabsf(vf[i]);
    }
    for (int s = 0; s < S; s++) kpos[s] = s;
    rc = cu_upload((void **)&c.q, q, sizeof(float) * nq, e);
    if (!rc) rc = cu_upload((void **)&c.k, kh, sizeof(uint16_t) * nkv, e);
    if (!rc) rc = cu_upload((void **)&c.v, vh, sizeof(uint16_t) * nkv, e);
    if (!rc) rc = cu_alloc((void **)&c.out, sizeof(float) * nq, e);
    if (!rc) rc = pf_kerr(attn_launch(&c, 0, 0) ? CUDA_KERR_ARGS : 0, "cuda_flash_attn_prefill", e);
    if (!rc) rc = cu_download(out, c.out, sizeof(float) * nq, e);
    if (rc) goto done;

    double worst = 0, worst_abs = 0;
    const int rows = big ? 8 : T;
    for (int ri = 0; ri < rows; ri++) {
        int t = big ? (ri == 0 ? 0 : ri == 1 ? T - 1 : (int)(rng_u64(&r) % (uint64_t)T)) : ri;
        int32_t qp = pos0 + t;
        for (size_t i = 0; i < (size_t)Hq * D; i++) qr[i] = fp16_to_f32(fp16_from_f32(q[(size_t)t * Hq * D + i]));
        ref_attention(qr, kf, vf, oref, &qp, kpos, 1, S, Hq, Hkv, D, c.scale, window, scores);
        const int64_t nvis = attn_visible(qp, S, window);
        for (int h = 0; h < Hq; h++) {
            const float *qh = qr + (size_t)h * D;
            double es = 0; /* the largest sum_d |q_d k_d| over the visible keys, as a score error */
            for (int s = 0; s < S; s++) {
                if (s > qp || (window > 0 && qp - s >= window)) continue;
                const float *ks = kf + ((size_t)s * Hkv + h / (Hq / Hkv)) * D;
                double m = 0;
                for (int d = 0; d < D; d++) m += fabs((double)qh[d] * ks[d]);
                if (m > es) es = m;
            }
            es *= D * 0x1p-23 * c.scale;
            const double tol = 2.0 * vmax * (0x1p-11 + 2 * es + 2.0 * (double)nvis * 0x1p-23);
            for (int d = 0; d < D; d++) {
                double err_abs = fabs((double)out[((size_t)t * Hq + h) * D + d] - oref[(size_t)h * D + d]);
                if (err_abs / tol > worst) worst = err_abs / tol;
                if (err_abs > worst_abs) worst_abs = err_abs;
            }
        }
    }
    res->max_err = worst;
    res->tol = 1.0;
    snprintf(res->detail, sizeof res->detail, "%d rows checked; abs err %.2g (max|v| %.2f)", rows, worst_abs, vmax);
    if (bench && big) {
        double flop = 0;
        for (int t = 0; t < T; t++) flop += 4.0 * (double)attn_visible(pos0 + t, S, window) * Hq * D;
        rc = cu_time(attn_launch, &c, 1, &res->us, e);
        if (!rc) res->tflops = flop / (res->us * 1e6);
    }
done:
    cu_free((void *)c.q), cu_free((void *)c.k), cu_free((void *)c.v), cu_free(c.out);
    free(q), free(out), free(kf), free(vf), free(qr), free(oref), free(scores), free(kh), free(vh), free(kpos);
    return rc;
}

/* ---- chunked Gated DeltaNet ----
 * Inputs as the model gives them: q, k L2-normalised per head (q times Dk^-1/2), v N(0,1), log-gates g
 * uniform in (-0.7, 0] (decays 0.5..1, including ~0), beta uniform in (0.05, 0.95), a random initial state
 * (N(0, 0.1)): nothing zero. The reference is the step form ref_gdn_step token by token, per checked head
 * (all heads in small cases, the first and last in bench cases). The chunked form is the same recurrence
 * regrouped, so the two differ by float rounding amplified by the triangular solve; the CPU's own chunked
 * form (ref_gdn_chunk, same chunk 64) is measured beside it on the same inputs and shown in the detail.
 * Tolerance: 1e-4 relative to max|o| for the outputs and to max|S| for the final state: the CPU's
 * chunked-vs-step differences over 20 seeds of these inputs (T = 200, 500, 4096) were at most 1.5e-6
 * relative (docs/cuda-prefill.md), and the GPU's other summation orders get a ~65x margin. */

enum { GDN_DIM = 128 };
#define GDN_TOL 1e-4

typedef struct gdn_ctx {
    float *S, *S0, *q, *k, *v, *g, *beta, *o, *scratch;
    int T, Hk, Hv;
    enum gdn_head_map map;
} gdn_ctx;

static int gdn_launch(void *vctx, int i, cudaStream_t s) {
    gdn_ctx *c = vctx;
    (void)i;
    /* the state is updated in place: each timed run starts from the same initial state */
    if (cudaMemcpyAsync(c->S, c->S0, sizeof(float) * (size_t)c->Hv * GDN_DIM * GDN_DIM, cudaMemcpyDeviceToDevice, s))
        return ERR_IO;
    return cuda_gdn_chunk(c->S, c->q, c->k, c->v, c->g, c->beta, c->o, c->T, c->Hk, c->Hv, GDN_DIM, GDN_DIM, c->map,
                          c->scratch, s)
               ? ERR_IO
               : 0;
}

static void l2_rows(float *x, int64_t rows, int D, float scale) {
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0;
        for (int d = 0; d < D; d++) ss += (double)x[r * D + d] * x[r * D + d];
        float inv = scale / (float)sqrt(ss + 1e-6);
        for (int d = 0; d < D; d++) x[r * D + d] *= inv;
    }
}

static double max_abs(const float *x, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
    return m;
}

int pf_gdn_case(int Hk, int Hv, int T, bool grouped, bool big, uint64_t seed, bool bench, cuda_check_result *res,
                err *e) {
    if (big && !bench && T > 256) T = 256;
    const int D = GDN_DIM;
    const size_t nqk = (size_t)T * Hk * D, nv = (size_t)T * Hv * D, ns = (size_t)Hv * D * D;
    const enum gdn_head_map map = grouped ? GDN_HEADS_GROUPED : GDN_HEADS_TILED;
    rng r;
    rng_seed(&r, seed);
    float *q = malloc(sizeof(float) * nqk), *k = malloc(sizeof(float) * nqk), *v = malloc(sizeof(float) * nv);
    float *g = malloc(sizeof(float) * (size_t)T * Hv), *beta = malloc(sizeof(float) * (size_t)T * Hv);
    float *S0 = malloc(sizeof(float) * ns), *S = malloc(sizeof(float) * ns), *o = malloc(sizeof(float) * nv);
    /* one head's sequences for the references: q, k, v, g, beta, outputs of step and chunk forms */
    float *hq = malloc(sizeof(float) * (size_t)T * D), *hk = malloc(sizeof(float) * (size_t)T * D);
    float *hv = malloc(sizeof(float) * (size_t)T * D), *hg = malloc(sizeof(float) * (size_t)T);
    float *hb = malloc(sizeof(float) * (size_t)T), *os = malloc(sizeof(float) * (size_t)T * D);
    float *oc = malloc(sizeof(float) * (size_t)T * D), *Ss = malloc(sizeof(float) * (size_t)D * D);
    float *Sc = malloc(sizeof(float) * (size_t)D * D);
    float *scr = malloc(sizeof(float) * (size_t)ref_gdn_chunk_scratch(64, D, D));
    gdn_ctx c = {.T = T, .Hk = Hk, .Hv = Hv, .map = map};
    int rc = 0;
    if (!q || !k || !v || !g || !beta || !S0 || !S || !o || !hq || !hk || !hv || !hg || !hb || !os || !oc || !Ss ||
        !Sc || !scr) {
        rc = err_set(e, ERR_NOMEM, "host buffers");
        goto done;
    }
    pf_normal(&r, q, (int64_t)nqk, 1.0f);
    pf_normal(&r, k, (int64_t)nqk, 1.0f);
    l2_rows(q, (int64_t)T * Hk, D, 1.0f / sqrtf((float)D));
    l2_rows(k, (int64_t)T * Hk, D, 1.0f);
    pf_normal(&r, v, (int64_t)nv, 1.0f);
    for (int64_t i = 0; i < (int64_t)T * Hv; i++) {
        g[i] = -rng_uniform(&r, 0.0f, 0.7f);
        beta[i] = rng_uniform(&r, 0.05f, 0.95f);
    }
    pf_normal(&r, S0, (int64_t)ns, 0.1f);
    rc = cu_upload((void **)&c.q, q, sizeof(float) * nqk, e);
    if (!rc) rc = cu_upload((void **)&c.k, k, sizeof(float) * nqk, e);
    if (!rc) rc = cu_upload((void **)&c.v, v, sizeof(float) * nv, e);
    if (!rc) rc = cu_upload((void **)&c.g, g, sizeof(float) * (size_t)T * Hv, e);
    if (!rc) rc = cu_upload((void **)&c.beta, beta, sizeof(float) * (size_t)T * Hv, e);
    if (!rc) rc = cu_upload((void **)&c.S0, S0, sizeof(float) * ns, e);
    if (!rc) rc = cu_alloc((void **)&c.S, sizeof(float) * ns, e);
    if (!rc) rc = cu_alloc((void **)&c.o, sizeof(float) * nv, e);
    if (!rc) rc = cu_alloc((void **)&c.scratch, sizeof(float) * (size_t)cuda_gdn_chunk_scratch(T, Hv), e);
    if (!rc) rc = pf_kerr(gdn_launch(&c, 0, 0) ? CUDA_KERR_ARGS : 0, "cuda_gdn_chunk", e);
    if (!rc) rc = cu_download(o, c.o, sizeof(float) * nv, e);
    if (!rc) rc = cu_download(S, c.S, sizeof(float) * ns, e);
    if (rc) goto done;

    double worst = 0, cpu_chunk = 0, abs_o = 0, abs_s = 0;
    const int nheads = big ? 2 : Hv;
    for (int hi = 0; hi < nheads; hi++) {
        const int j = big ? (hi == 0 ? 0 : Hv - 1) : hi, kh = gdn_key_head(j, Hk, Hv, map);
        for (int t = 0; t < T; t++) {
            memcpy(hq + (size_t)t * D, q + ((size_t)t * Hk + kh) * D, sizeof(float) * D);
            memcpy(hk + (size_t)t * D, k + ((size_t)t * Hk + kh) * D, sizeof(float) * D);
            memcpy(hv + (size_t)t * D, v + ((size_t)t * Hv + j) * D, sizeof(float) * D);
            hg[t] = g[(size_t)t * Hv + j];
            hb[t] = beta[(size_t)t * Hv + j];
        }
        memcpy(Ss, S0 + (size_t)j * D * D, sizeof(float) * D * D);
        memcpy(Sc, Ss, sizeof(float) * D * D);
        for (int t = 0; t < T; t++)
            ref_gdn_step(Ss, hq + (size_t)t * D, hk + (size_t)t * D, hv + (size_t)t * D, hg + t, hb + t,
                         os + (size_t)t * D, 1, 1, D, D, GDN_HEADS_TILED);
        ref_gdn_chunk(Sc, hq, hk, hv, hg, hb, oc, T, 1, 1, D, D, 64, GDN_HEADS_TILED, scr);
        const double mo = max_abs(os, (int64_t)T * D), ms = max_abs(Ss, (int64_t)D * D);
        for (int t = 0; t < T; t++)
            for (int d = 0; d < D; d++) {
                double dg = fabs((double)o[((size_t)t * Hv + j) * D + d] - os[(size_t)t * D + d]);
                double dc = fabs((double)oc[(size_t)t * D + d] - os[(size_t)t * D + d]);
                worst = fmax(worst, dg / mo), abs_o = fmax(abs_o, dg), cpu_chunk = fmax(cpu_chunk, dc / mo);
            }
        for (int i = 0; i < D * D; i++) {
            double dg = fabs((double)S[(size_t)j * D * D + i] - Ss[i]);
            double dc = fabs((double)Sc[i] - Ss[i]);
            worst = fmax(worst, dg / ms), abs_s = fmax(abs_s, dg), cpu_chunk = fmax(cpu_chunk, dc / ms);
        }
    }
    res->max_err = worst;
    res->tol = GDN_TOL;
    snprintf(res->detail, sizeof res->detail, "%d heads vs step form; abs err o %.2g S %.2g; CPU chunked form %.2g",
             nheads, abs_o, abs_s, cpu_chunk);
    if (bench && big) rc = cu_time(gdn_launch, &c, 1, &res->us, e);
done:
    cu_free(c.q), cu_free(c.k), cu_free(c.v), cu_free(c.g), cu_free(c.beta), cu_free(c.S0), cu_free(c.S);
    cu_free(c.o), cu_free(c.scratch);
    free(q), free(k), free(v), free(g), free(beta), free(S0), free(S), free(o), free(hq), free(hk), free(hv);
    free(hg), free(hb), free(os), free(oc), free(Ss), free(Sc), free(scr);
    return rc;
}
